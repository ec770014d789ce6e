"""Squeeze (FFCV's module path; defined in ops.py)."""
from .ops import Squeeze  # noqa: F401

__all__ = ["Squeeze"]
