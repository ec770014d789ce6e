"""RandomSolarization, LabelSolarization (FFCV-SSL's module path; defined in ssl.py and image.py)."""
from .image import RandomSolarization  # noqa: F401
from .ssl import LabelSolarization  # noqa: F401

__all__ = ["RandomSolarization", "LabelSolarization"]
