"""The .beton layout as numpy dtypes (FFCV's ffcv.types). The format is
parsed in Go (core/beton); these describe it for code that reads it by hand."""
from typing import List

import numpy as np

from .fields import (Field, FloatField, IntField, RGBImageField, BytesField, NDArrayField, JSONField,
                     TorchTensorField, RaggedArrayField, MaskField, TextField, VideoField, AudioField)

CURRENT_VERSION = 2

HeaderType = np.dtype([
    ("version", "<u2"),
    ("num_fields", "<u2"),
    ("page_size", "<u4"),
    ("num_samples", "<u8"),
    ("alloc_table_ptr", "<u8"),
], align=True)

ALLOC_TABLE_TYPE = np.dtype([
    ("sample_id", "<u8"),
    ("ptr", "<u8"),
    ("size", "<u8"),
])

FieldDescType = np.dtype([
    ("type_id", "<u1"),
    ("name", ("<u1", 16)),
    ("arguments", ("<u1", (1024,))),
], align=True)

TYPE_ID_HANDLER = {
    255: None,
    0: FloatField,
    1: IntField,
    2: RGBImageField,
    3: BytesField,
    4: NDArrayField,
    5: JSONField,
    6: TorchTensorField,
    # ffcv_go's own (FFCV cannot read them)
    100: RaggedArrayField,
    101: MaskField,
    102: TextField,
    103: VideoField,
    104: AudioField,
}


def get_handlers(field_descriptors):
    """One Field per FieldDescType row (None for custom fields)."""
    handlers = []
    for desc in field_descriptors:
        cls = TYPE_ID_HANDLER[int(desc["type_id"])]
        handlers.append(None if cls is None else cls.from_binary(desc["arguments"]))
    return handlers


def get_metadata_type(handlers: List[Field]) -> np.dtype:
    """The dtype of one metadata row for these fields."""
    return np.dtype([("", h.metadata_type) for h in handlers], align=True)
