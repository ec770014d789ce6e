"""ImageMixup, LabelMixup, MixupToOneHot (FFCV's module path; defined in image.py)."""
from .image import ImageMixup, LabelMixup, MixupToOneHot  # noqa: F401

__all__ = ["ImageMixup", "LabelMixup", "MixupToOneHot"]
