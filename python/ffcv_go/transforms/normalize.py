"""NormalizeImage (FFCV's module path; defined in image.py)."""
import numpy as np
import torch

from .image import NormalizeImage  # noqa: F401


def ch_dtype_from_numpy(dtype):
    """The torch dtype of a numpy dtype."""
    return torch.from_numpy(np.zeros((), dtype=dtype)).dtype


__all__ = ["NormalizeImage", "ch_dtype_from_numpy"]
