"""Poison (FFCV's module path; defined in image.py)."""
from .image import Poison  # noqa: F401

__all__ = ["Poison"]
