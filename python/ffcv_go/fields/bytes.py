"""BytesField: a variable-length byte string per sample."""
import numpy as np

from .base import Field, ARG_TYPE, _set_data


class BytesField(Field):
    """Arbitrary bytes (a uint8 array or bytes) per sample."""
    TYPE_ID = 3

    @property
    def metadata_type(self):
        return np.dtype([("ptr", "<u8"), ("size", "<u8")])

    @staticmethod
    def from_binary(binary):
        return BytesField()

    def to_binary(self):
        return np.zeros(1, dtype=ARG_TYPE)[0]

    def get_decoder_class(self):
        from .decoders import BytesDecoder
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


from .decoders import BytesDecoder  # noqa: E402,F401  (FFCV's module path)
