"""Field kinds (FFCV's ffcv.fields)."""
from .base import Field
from .basics import IntField, FloatField
from .bytes import BytesField
from .ndarray import NDArrayField, TorchTensorField
from .json import JSONField
from .rgb_image import RGBImageField
from .ragged import RaggedArrayField
from .mask import MaskField
from .text import TextField
from .video import VideoField, Frames
from .audio import AudioField, Waveform

__all__ = ["Field", "IntField", "FloatField", "BytesField", "NDArrayField", "TorchTensorField",
           "JSONField", "RGBImageField", "RaggedArrayField", "MaskField", "TextField",
           "VideoField", "Frames", "AudioField", "Waveform"]
