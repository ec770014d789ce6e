"""RandomGrayscale, LabelGrayscale (FFCV-SSL's module path; defined in ssl.py and image.py)."""
from .image import RandomGrayscale  # noqa: F401
from .ssl import LabelGrayscale  # noqa: F401

__all__ = ["RandomGrayscale", "LabelGrayscale"]
