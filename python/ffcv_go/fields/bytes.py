"""BytesField: a variable-length byte string per sample."""
import numpy as np

from .base import Field, ARG_TYPE, _set_data, _Decoder
from ..pipeline.allocation_query import AllocationQuery
from ..pipeline.compiler import Compiler
from ..pipeline.state import State


class BytesField(Field):
    """Arbitrary bytes (a uint8 array or bytes) per sample."""
    TYPE_ID = 3

    def __init__(self):
        pass

    @property
    def metadata_type(self):
        return np.dtype([("ptr", "<u8"), ("size", "<u8")])

    @staticmethod
    def from_binary(binary):
        return BytesField()

    def to_binary(self):
        return np.zeros(1, dtype=ARG_TYPE)[0]

    def get_decoder_class(self):
        return BytesDecoder

    def _spec(self):
        return {}

    def encode(self, destination, field, malloc):
        field = _as_bytes(field)
        ptr, buffer = malloc(field.size)
        buffer[:] = field
        destination["ptr"] = ptr
        destination["size"] = field.size

    def _value(self, value, v, keep):
        _set_data(v, _as_bytes(value), keep)


def _as_bytes(value):
    """The bytes of value (bytes, or any numpy array, as FFCV stores its
    buffer) as a flat uint8 array."""
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject:
            raise TypeError(f"BytesField needs plain data, got an array of {value.dtype}")
        return np.ascontiguousarray(value).reshape(-1).view(np.uint8)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return np.frombuffer(value, dtype=np.uint8)
    raise TypeError(f"BytesField needs bytes or a numpy array, got {type(value).__name__}")


class BytesDecoder(_Decoder):
    """BytesField / JSONField → uint8 (B, longest sample in the file), zero tail."""
    _go_name = "bytes"

    def _field_classes(self):
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
