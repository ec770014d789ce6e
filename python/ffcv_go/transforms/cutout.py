"""Cutout (FFCV's module path; defined in image.py)."""
from .image import Cutout  # noqa: F401

__all__ = ["Cutout"]
