"""Rotate, LabelRotate (FFCV-SSL's module path; defined in ssl.py)."""
from .ssl import Rotate, LabelRotate  # noqa: F401

__all__ = ["Rotate", "LabelRotate"]
