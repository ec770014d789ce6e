"""ModuleWrapper (FFCV's module path; defined in ops.py)."""
from .ops import ModuleWrapper  # noqa: F401

__all__ = ["ModuleWrapper"]
