"""RandomTranslate (FFCV's module path; defined in image.py)."""
from .image import RandomTranslate  # noqa: F401

__all__ = ["RandomTranslate"]
