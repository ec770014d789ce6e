"""Transforms (FFCV's ffcv.transforms), plus a few FFCV lacks
(RandomVerticalFlip, RandomGrayscale, RandomSolarization, RandomCrop)."""
from .ops import ToTensor, ToDevice, ToTorchImage, Convert, View, Squeeze, ModuleWrapper
from .image import (RandomHorizontalFlip, RandomVerticalFlip, RandomTranslate, Cutout, RandomBrightness,
                    RandomContrast, RandomSaturation, RandomGrayscale, RandomSolarization, RandomCrop,
                    NormalizeImage, ReplaceLabel, Poison, ImageMixup, LabelMixup, MixupToOneHot,
                    RandomResizedCrop)
from .ssl import (RandomColorJitter, GaussianBlur, RandomErasing, Rotate, CenterCrop, CornerCrop, LabelColorJitter,
                  LabelGrayscale, LabelSolarization, LabelGaussianBlur, LabelRotate, LabelTranslate)
from .auto_augment import RandAugment, TrivialAugmentWide, AutoAugment, AugMix, AugmentOp

__all__ = ["ToTensor", "ToDevice", "ToTorchImage", "Convert", "View", "Squeeze", "ModuleWrapper",
           "RandomHorizontalFlip", "RandomVerticalFlip", "RandomTranslate", "Cutout", "RandomBrightness",
           "RandomContrast", "RandomSaturation", "RandomGrayscale", "RandomSolarization", "RandomCrop",
           "NormalizeImage", "ReplaceLabel", "Poison", "ImageMixup", "LabelMixup", "MixupToOneHot",
           "RandomResizedCrop",
           "RandomColorJitter", "GaussianBlur", "RandomErasing", "Rotate", "CenterCrop", "CornerCrop",
           "LabelColorJitter", "LabelGrayscale", "LabelSolarization", "LabelGaussianBlur", "LabelRotate",
           "LabelTranslate",
           "RandAugment", "TrivialAugmentWide", "AutoAugment", "AugMix", "AugmentOp"]
