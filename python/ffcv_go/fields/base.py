"""Field: the base of every field kind a .beton file can hold."""
from abc import ABC, abstractmethod

import numpy as np

from ..pipeline.operation import Operation

ARG_TYPE = np.dtype([("", "<u1", 1024)])  # raw descriptor arguments
# Float, Int, RGBImage, Bytes, NDArray, JSON, TorchTensor; then ours: RaggedArray, Mask, Text, Video, Audio
BUILTIN_TYPE_IDS = (*range(7), 100, 101, 102, 103, 104)


class Field(ABC):
    """One column of a dataset: its type id, metadata column and decoders.

    Built-in fields are encoded by the Go core. A custom field (a subclass not
    known to ffcv_go) is stored with type id 255 and read back when the loader
    or reader gets it through ``custom_fields`` / ``custom_handlers``.
    """

    TYPE_ID = 255

    @property
    @abstractmethod
    def metadata_type(self) -> np.dtype:
        """numpy dtype of this field's metadata column."""

    @staticmethod
    @abstractmethod
    def from_binary(binary: np.ndarray) -> "Field":
        """Rebuilds the field from its 1024 argument bytes."""

    @abstractmethod
    def to_binary(self) -> np.ndarray:
        """The field's 1024 argument bytes."""

    @abstractmethod
    def get_decoder_class(self):
        """The default decoder Operation class."""

    def encode(self, destination, field, malloc):
        """FFCV's encoding protocol, used for custom fields (written with type
        id 255): store ``field`` into ``destination`` (a 1-element array of
        ``metadata_type``); ``ptr, buffer = malloc(size)`` gives heap memory
        to fill and the pointer to store in the metadata. ffcv_go allows one
        malloc per field and sample."""
        raise NotImplementedError(f"{type(self).__name__} does not implement encode()")

    # Used by the writer: a dict of options for the Go encoder.
    def _spec(self) -> dict:
        raise TypeError(f"{type(self).__name__} is a custom field: ffcv_go cannot write it")

    def _value(self, value, v, keep):
        raise TypeError(f"{type(self).__name__} is a custom field: ffcv_go cannot write it")

    # Used by the writer's fetch processes: value in a form that crosses a
    # pipe cheaply (contiguous arrays travel out of band, without pickling
    # copies) and that _value takes the same way.
    def _portable(self, value):
        return value


def _set_data(v, buf, keep):
    """Points writer value v at the bytes of buf; keep holds buf alive until the call."""
    if isinstance(buf, np.ndarray):
        arr = np.ascontiguousarray(buf).reshape(-1).view(np.uint8)
    else:
        arr = np.frombuffer(buf, dtype=np.uint8)
    keep.append(arr)
    v.len = arr.nbytes
    v.data = arr.ctypes.data if arr.nbytes else None


class _Decoder(Operation):
    """The base of the built-in decoders of scalar, array and bytes fields:
    run in Go; generate_code is FFCV's protocol, used to decode a field stored
    as a custom one, or by code that drives decoders by hand."""
    _builtin = _decoder = True
    _go_name = None

    def _field_classes(self):
        """The field kinds this decoder reads (subclasses included)."""
        return ()

    def accept_field(self, field):
        kinds = self._field_classes()
        builtin = isinstance(field, Field) and type(field).TYPE_ID in BUILTIN_TYPE_IDS
        if kinds and builtin and not isinstance(field, kinds):
            raise TypeError(f"{type(self).__name__} cannot decode a {type(field).__name__} "
                            f"(it decodes {' or '.join(k.__name__ for k in kinds)})")
        super().accept_field(field)

    def _go_spec(self, previous_state=None):
        if getattr(getattr(self, "field", None), "_custom_stored", False):
            return None  # a custom (type 255) field: decoded by generate_code in Python
        return {"op": self._go_name}
