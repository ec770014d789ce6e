"""GaussianBlur, LabelGaussianBlur (FFCV-SSL's module path; defined in ssl.py)."""
from .ssl import GaussianBlur, LabelGaussianBlur  # noqa: F401

__all__ = ["GaussianBlur", "LabelGaussianBlur"]
