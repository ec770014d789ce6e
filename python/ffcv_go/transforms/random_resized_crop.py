"""RandomResizedCrop (FFCV's module path; defined in image.py)."""
from .image import RandomResizedCrop  # noqa: F401

__all__ = ["RandomResizedCrop"]
