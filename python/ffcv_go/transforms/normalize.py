"""NormalizeImage (FFCV's module path; defined in image.py)."""
from ._base import torch_dtype
from .image import NormalizeImage  # noqa: F401


def ch_dtype_from_numpy(dtype):
    """The torch dtype of a numpy dtype."""
    return torch_dtype(dtype)


__all__ = ["NormalizeImage", "ch_dtype_from_numpy"]
