"""IntField and FloatField: scalars stored in the metadata column."""
import numpy as np

from .base import Field, ARG_TYPE, _Decoder
from ..pipeline.allocation_query import AllocationQuery
from ..pipeline.compiler import Compiler
from ..pipeline.state import State


class IntField(Field):
    """A 64-bit signed integer per sample (e.g. a class label)."""
    TYPE_ID = 1

    @property
    def metadata_type(self):
        return np.dtype("<i8")

    @staticmethod
    def from_binary(binary):
        return IntField()

    def to_binary(self):
        return np.zeros(1, dtype=ARG_TYPE)[0]

    def get_decoder_class(self):
        return IntDecoder

    def _spec(self):
        return {}

    def encode(self, destination, field, malloc):
        destination[0] = field

    def _value(self, value, v, keep):
        if isinstance(value, (str, bytes, bytearray)):
            raise TypeError(f"IntField needs an integer, got {type(value).__name__}")
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            try:
                if isinstance(value, np.ndarray) and value.size == 1:
                    value = value.item()
                if isinstance(value, float) and not value.is_integer():
                    raise TypeError
                value = int(value)
            except (TypeError, ValueError):
                raise TypeError(f"IntField needs an integer, got {type(value).__name__}") from None
        if not -2**63 <= value < 2**63:
            raise OverflowError(f"IntField value {value} does not fit in int64")
        v.i = value


class FloatField(Field):
    """A 64-bit float per sample."""
    TYPE_ID = 0

    def __init__(self):
        pass

    @property
    def metadata_type(self):
        return np.dtype("<f8")

    @staticmethod
    def from_binary(binary):
        return FloatField()

    def to_binary(self):
        return np.zeros(1, dtype=ARG_TYPE)[0]

    def get_decoder_class(self):
        return FloatDecoder

    def _spec(self):
        return {}

    def encode(self, destination, field, malloc):
        destination[0] = field

    def _value(self, value, v, keep):
        if isinstance(value, (str, bytes, bytearray)):
            raise TypeError(f"FloatField needs a number, got {type(value).__name__}")
        try:
            v.f = float(value)
        except (TypeError, ValueError):
            raise TypeError(f"FloatField needs a number, got {type(value).__name__}") from None


class BasicDecoder(_Decoder):
    """The base of the scalar decoders (FFCV's): each sample's metadata
    value, as a (B, 1) array of the subclass's ``dtype``."""
    dtype = None

    def declare_state_and_memory(self, previous_state):
        dtype = np.dtype(self.dtype)
        return (State(previous_state.jit_mode, previous_state.device, (1,), dtype),
                AllocationQuery((1,), dtype))

    def generate_code(self):
        my_range = Compiler.get_iterator()

        def decoder(indices, destination, metadata, storage_state):
            for ix in my_range(indices.shape[0]):
                destination[ix] = metadata[indices[ix]]
            return destination[:len(indices)]
        return decoder

    def _go_spec(self, previous_state=None):
        # A subclass of the user's (another dtype) decodes in Python.
        return None if self._go_name is None else super()._go_spec(previous_state)


class IntDecoder(BasicDecoder):
    """IntField → int64 (B, 1)."""
    _go_name = "int"
    dtype = np.dtype("<i8")

    def _field_classes(self):
        return (IntField,)


class FloatDecoder(BasicDecoder):
    """FloatField → float64 (B, 1)."""
    _go_name = "float"
    dtype = np.dtype("<f8")

    def _field_classes(self):
        return (FloatField,)
