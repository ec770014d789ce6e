"""RandomBrightness, RandomContrast, RandomSaturation (FFCV's module path; defined in image.py)."""
from .image import RandomBrightness, RandomContrast, RandomSaturation  # noqa: F401

__all__ = ["RandomBrightness", "RandomContrast", "RandomSaturation"]
