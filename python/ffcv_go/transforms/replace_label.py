"""ReplaceLabel (FFCV's module path; defined in image.py)."""
from .image import ReplaceLabel  # noqa: F401

__all__ = ["ReplaceLabel"]
