"""Transforms (FFCV's ffcv.transforms), plus a few FFCV lacks
(RandomVerticalFlip, RandomGrayscale, RandomSolarization, RandomCrop)."""
from .ops import ToTensor, ToDevice, ToTorchImage, Convert, View, Squeeze, ModuleWrapper
from .image import (RandomHorizontalFlip, RandomVerticalFlip, RandomTranslate, Cutout, RandomBrightness,
                    RandomContrast, RandomSaturation, RandomGrayscale, RandomSolarization, RandomCrop,
                    NormalizeImage, ReplaceLabel, Poison, ImageMixup, LabelMixup, MixupToOneHot,
                    RandomResizedCrop)

__all__ = ["ToTensor", "ToDevice", "ToTorchImage", "Convert", "View", "Squeeze", "ModuleWrapper",
           "RandomHorizontalFlip", "RandomVerticalFlip", "RandomTranslate", "Cutout", "RandomBrightness",
           "RandomContrast", "RandomSaturation", "RandomGrayscale", "RandomSolarization", "RandomCrop",
           "NormalizeImage", "ReplaceLabel", "Poison", "ImageMixup", "LabelMixup", "MixupToOneHot",
           "RandomResizedCrop"]
