"""RandomHorizontalFlip (FFCV's module path; defined in image.py)."""
from .image import RandomHorizontalFlip  # noqa: F401

__all__ = ["RandomHorizontalFlip"]
