"""RandomHorizontalFlip and LabelRandomHorizontalFlip (FFCV-SSL's module
path; defined in image.py and ssl.py)."""
from .image import RandomHorizontalFlip  # noqa: F401
from .ssl import LabelRandomHorizontalFlip  # noqa: F401

__all__ = ["RandomHorizontalFlip", "LabelRandomHorizontalFlip"]
