"""RandomTranslate (FFCV's module path; defined in image.py) and LabelTranslate
(FFCV-SSL's; defined in ssl.py)."""
from .image import RandomTranslate  # noqa: F401
from .ssl import LabelTranslate  # noqa: F401

__all__ = ["RandomTranslate", "LabelTranslate"]
