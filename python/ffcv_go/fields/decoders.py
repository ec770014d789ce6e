"""Decoders (FFCV's ffcv.fields.decoders): each is defined with its field,
as in FFCV, and re-exported here."""
from .base import _Decoder  # noqa: F401  (the base of the scalar/array/bytes decoders)
from .basics import IntDecoder, FloatDecoder
from .bytes import BytesDecoder
from .ndarray import NDArrayDecoder
from .rgb_image import (SimpleRGBImageDecoder, ResizedCropRGBImageDecoder, RandomResizedCropRGBImageDecoder,
                        CenterCropRGBImageDecoder, PadRGBImageDecoder, ResizePadRGBImageDecoder,
                        LetterBoxRGBImageDecoder, RandomIoUCropRGBImageDecoder, MosaicRGBImageDecoder,
                        LabelMosaic)
from .ragged import PolygonMaskDecoder, RaggedDecoder
from .mask import MaskDecoder
from .text import TokenDecoder, CaptionDecoder, Tokens
from .video_decoders import RandomClipDecoder, ClipDecoder
from .audio_decoders import AudioDecoder, RandomAudioCropDecoder, Audio

__all__ = ["IntDecoder", "FloatDecoder", "NDArrayDecoder", "BytesDecoder", "SimpleRGBImageDecoder",
           "ResizedCropRGBImageDecoder", "RandomResizedCropRGBImageDecoder", "CenterCropRGBImageDecoder",
           "PadRGBImageDecoder", "ResizePadRGBImageDecoder", "LetterBoxRGBImageDecoder",
           "RandomIoUCropRGBImageDecoder", "MosaicRGBImageDecoder", "LabelMosaic", "RaggedDecoder",
           "PolygonMaskDecoder", "MaskDecoder", "TokenDecoder", "CaptionDecoder", "Tokens", "RandomClipDecoder",
           "ClipDecoder",
           "AudioDecoder", "RandomAudioCropDecoder", "Audio"]
