"""Decoders: the first operation of a field's pipeline (FFCV's ffcv.fields.decoders).

Each runs in Go; ``declare_state_and_memory`` and ``generate_code`` are the
FFCV protocol, kept so code that drives decoders by hand keeps working.
"""
import numpy as np

from ..pipeline.allocation_query import AllocationQuery
from ..pipeline.compiler import Compiler
from ..pipeline.operation import Operation
from ..pipeline.state import State


class _Decoder(Operation):
    _go_name = None

    def _field_classes(self):
        """The field kinds this decoder reads (subclasses included)."""
        return ()

    def accept_field(self, field):
        from .base import Field
        from . import TYPE_ID_HANDLER
        kinds = self._field_classes()
        builtin = isinstance(field, Field) and type(field).TYPE_ID in TYPE_ID_HANDLER
        if kinds and builtin and not isinstance(field, kinds):
            raise TypeError(f"{type(self).__name__} cannot decode a {type(field).__name__} "
                            f"(it decodes {' or '.join(k.__name__ for k in kinds)})")
        super().accept_field(field)

    def _go_spec(self, previous_state=None):
        if getattr(getattr(self, "field", None), "_custom_stored", False):
            return None  # a custom (type 255) field: decoded by generate_code in Python
        return {"op": self._go_name}


class IntDecoder(_Decoder):
    """IntField → int64 (B, 1)."""
    _go_name = "int"

    def _field_classes(self):
        from .basics import IntField
        return (IntField,)

    def declare_state_and_memory(self, previous_state):
        return (State(previous_state.jit_mode, previous_state.device, (1,), np.dtype("<i8")),
                AllocationQuery((1,), np.dtype("<i8")))

    def generate_code(self):
        my_range = Compiler.get_iterator()

        def decoder(indices, destination, metadata, storage_state):
            for ix in my_range(indices.shape[0]):
                destination[ix] = metadata[indices[ix]]
            return destination[:len(indices)]
        return decoder


class FloatDecoder(IntDecoder):
    """FloatField → float64 (B, 1)."""
    _go_name = "float"

    def _field_classes(self):
        from .basics import FloatField
        return (FloatField,)

    def declare_state_and_memory(self, previous_state):
        return (State(previous_state.jit_mode, previous_state.device, (1,), np.dtype("<f8")),
                AllocationQuery((1,), np.dtype("<f8")))


class NDArrayDecoder(_Decoder):
    """NDArrayField / TorchTensorField → (B, *shape) of the field's dtype."""
    _go_name = "ndarray"

    def _field_classes(self):
        from .ndarray import NDArrayField
        return (NDArrayField,)

    def declare_state_and_memory(self, previous_state):
        f = self.field
        return (State(previous_state.jit_mode, previous_state.device, f.shape, f.dtype),
                AllocationQuery(f.shape, f.dtype))

    def generate_code(self):
        my_range = Compiler.get_iterator()
        mem_read = self.memory_read
        dtype, shape = self.field.dtype, self.field.shape

        def decoder(indices, destination, metadata, storage_state):
            for ix in my_range(indices.shape[0]):
                data = mem_read(metadata[indices[ix]], storage_state)
                destination[ix] = data.view(dtype).reshape(shape)
            return destination[:len(indices)]
        return decoder


class BytesDecoder(_Decoder):
    """BytesField / JSONField → uint8 (B, longest sample in the file), zero tail."""
    _go_name = "bytes"

    def _field_classes(self):
        from .bytes import BytesField
        return (BytesField,)

    def declare_state_and_memory(self, previous_state):
        max_size = int(self.metadata["size"].max()) if self.metadata is not None and len(self.metadata) else 0
        return (State(previous_state.jit_mode, previous_state.device, (max_size,), np.dtype("u1")),
                AllocationQuery((max_size,), np.dtype("u1")))

    def generate_code(self):
        my_range = Compiler.get_iterator()
        mem_read = self.memory_read

        def decoder(indices, destination, metadata, storage_state):
            for ix in my_range(indices.shape[0]):
                m = metadata[indices[ix]]
                data = mem_read(m["ptr"], storage_state)
                destination[ix, :data.shape[0]] = data
                destination[ix, data.shape[0]:] = 0
            return destination[:len(indices)]
        return decoder


from .rgb_image import (SimpleRGBImageDecoder, RandomResizedCropRGBImageDecoder,  # noqa: E402
                        CenterCropRGBImageDecoder)

__all__ = ["IntDecoder", "FloatDecoder", "NDArrayDecoder", "BytesDecoder", "SimpleRGBImageDecoder",
           "RandomResizedCropRGBImageDecoder", "CenterCropRGBImageDecoder"]
