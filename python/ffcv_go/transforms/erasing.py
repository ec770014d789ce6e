"""RandomErasing (FFCV-SSL's module path; defined in ssl.py)."""
from .ssl import RandomErasing  # noqa: F401

__all__ = ["RandomErasing"]
