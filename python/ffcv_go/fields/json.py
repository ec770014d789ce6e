"""JSONField: any JSON-serialisable object per sample, stored as bytes."""
import json as _json

import numpy as np

from .bytes import BytesField
from .base import _set_data


class JSONField(BytesField):
    """Stores json.dumps(value) plus a NUL; decodes as bytes (see unpack)."""
    TYPE_ID = 5

    @staticmethod
    def from_binary(binary):
        return JSONField()

    def encode(self, destination, field, malloc):
        # json.dumps + the NUL separator, as bytes.
        super().encode(destination, np.frombuffer((_json.dumps(field) + "\0").encode("utf-8"), dtype=np.uint8), malloc)

    def _value(self, value, v, keep):
        _set_data(v, _json.dumps(value).encode("utf-8"), keep)

    @staticmethod
    def unpack(batch):
        """Turns a decoded (B, max_len) uint8 batch back into a list of Python
        objects, or one decoded sample (max_len,) into its object."""
        batch = batch.numpy() if hasattr(batch, "numpy") else np.asarray(batch)
        single = batch.ndim == 1
        out = []
        for row in ([batch] if single else batch):
            raw = row.tobytes()
            end = raw.find(b"\x00")
            out.append(_json.loads(raw[:end if end >= 0 else len(raw)].decode("utf-8")))
        return out[0] if single else out
