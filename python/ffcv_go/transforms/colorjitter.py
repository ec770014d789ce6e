"""RandomColorJitter, LabelColorJitter (FFCV-SSL's module path; defined in ssl.py)."""
from .ssl import RandomColorJitter, LabelColorJitter  # noqa: F401

__all__ = ["RandomColorJitter", "LabelColorJitter"]
