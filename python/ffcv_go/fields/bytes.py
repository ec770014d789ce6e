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

    def _value(self, value, v, keep):
        if isinstance(value, np.ndarray):
            if value.dtype != np.uint8:
                raise TypeError(f"BytesField needs uint8 data, got an array of {value.dtype}")
            value = np.ascontiguousarray(value).reshape(-1)
        elif not isinstance(value, (bytes, bytearray, memoryview)):
            raise TypeError(f"BytesField needs bytes or a uint8 array, got {type(value).__name__}")
        _set_data(v, value, keep)


from .decoders import BytesDecoder  # noqa: E402,F401  (FFCV's module path)
