"""Field kinds (FFCV's ffcv.fields)."""
from .base import Field
from .basics import IntField, FloatField
from .bytes import BytesField
from .ndarray import NDArrayField, TorchTensorField
from .json import JSONField
from .rgb_image import RGBImageField

TYPE_ID_HANDLER = {
    0: FloatField, 1: IntField, 2: RGBImageField, 3: BytesField,
    4: NDArrayField, 5: JSONField, 6: TorchTensorField,
}

__all__ = ["Field", "IntField", "FloatField", "BytesField", "NDArrayField", "TorchTensorField",
           "JSONField", "RGBImageField", "TYPE_ID_HANDLER"]
