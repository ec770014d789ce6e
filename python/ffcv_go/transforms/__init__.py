"""Transforms (FFCV's ffcv.transforms), plus a few FFCV lacks
(RandomVerticalFlip, RandomGrayscale, RandomSolarization, RandomCrop)."""
from .ops import ToTensor, ToDevice, ToTorchImage, Convert, View, Squeeze, ModuleWrapper
from .image import (RandomHorizontalFlip, RandomVerticalFlip, RandomTranslate, Cutout, RandomBrightness,
                    RandomContrast, RandomSaturation, RandomGrayscale, RandomSolarization, RandomCrop,
                    NormalizeImage, ReplaceLabel, Poison, ImageMixup, LabelMixup, MixupToOneHot,
                    RandomResizedCrop)
from .ssl import (RandomColorJitter, GaussianBlur, RandomErasing, Rotate, CenterCrop, CornerCrop, LabelColorJitter,
                  LabelGrayscale, LabelSolarization, LabelGaussianBlur, LabelRotate, LabelTranslate,
                  LabelRandomHorizontalFlip)
from .perspective import RandomPerspective, LabelRandomPerspective
from .auto_augment import RandAugment, TrivialAugmentWide, AutoAugment, AugMix, AugmentOp
from .video import ToTorchVideo
from .photometric import Photometric
from .mix_samples import CopyPaste, CutMix, LabelCutMix, MixUp, LabelMixUp
from .audio import (MonoMix, Resample, Gain, SpeedPerturbation, AddNoise, MelSpectrogram, WhisperLogMel,
                    TimeMasking, FrequencyMasking)
from .letterbox import LetterBox
from .hsv import RandomHSV, LabelRandomHSV
from .flip import RandomFlip
from .ssd import RandomIoUCrop, RandomZoomOut, LabelRandomZoomOut

__all__ = ["ToTensor", "ToDevice", "ToTorchImage", "Convert", "View", "Squeeze", "ModuleWrapper",
           "RandomHorizontalFlip", "RandomVerticalFlip", "RandomTranslate", "Cutout", "RandomBrightness",
           "RandomContrast", "RandomSaturation", "RandomGrayscale", "RandomSolarization", "RandomCrop",
           "NormalizeImage", "ReplaceLabel", "Poison", "ImageMixup", "LabelMixup", "MixupToOneHot",
           "RandomResizedCrop",
           "RandomColorJitter", "GaussianBlur", "RandomErasing", "Rotate", "CenterCrop", "CornerCrop",
           "LabelColorJitter", "LabelGrayscale", "LabelSolarization", "LabelGaussianBlur", "LabelRotate",
           "LabelTranslate", "LabelRandomHorizontalFlip", "LabelRandomResizedCrop", "PadRGBImageDecoder",
           "RandAugment", "TrivialAugmentWide", "AutoAugment", "AugMix", "AugmentOp", "ToTorchVideo", "Photometric",
           "MixUp", "LabelMixUp", "CutMix", "LabelCutMix", "CopyPaste", "RandomPerspective", "LabelRandomPerspective",
           "MonoMix", "Resample", "Gain", "SpeedPerturbation", "AddNoise", "MelSpectrogram", "WhisperLogMel",
           "TimeMasking", "FrequencyMasking",
           "LetterBox", "LabelLetterBox", "RandomHSV", "LabelRandomHSV", "RandomFlip",
           "RandomIoUCrop", "LabelRandomIoUCrop", "RandomZoomOut", "LabelRandomZoomOut"]


def __getattr__(name):
    # LabelRandomResizedCrop, PadRGBImageDecoder, LabelLetterBox and
    # LabelRandomIoUCrop are decoders of ffcv_go.fields, which imports this
    # package while it loads: they are imported on first use.
    if name in ("LabelRandomResizedCrop", "PadRGBImageDecoder"):
        from . import resized_crop
        return getattr(resized_crop, name)
    if name in ("LabelLetterBox", "LabelRandomIoUCrop"):
        from ..fields import rgb_image
        return getattr(rgb_image, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
