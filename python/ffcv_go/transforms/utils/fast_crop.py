"""Crop helpers of FFCV's ffcv.transforms.utils.fast_crop, for custom
operations and decoders' crop generators. Plain functions numba can compile.

The Loader's own decoders and RandomResizedCrop sample their crops in Go with
keyed randomness (core/pipeline/rgb); get_random_crop here draws from
numpy's global generator, as FFCV's does, for code that calls it itself."""
import numpy as np

from ...libffcv import resize_crop  # noqa: F401  (FFCV's module path)


def get_random_crop(height, width, scale, ratio):
    """torchvision's RandomResizedCrop sampling: (row, column, height, width)
    of a crop with area fraction in scale and aspect ratio in ratio (log-
    uniform), 10 tries, then the largest centred crop of a valid ratio."""
    area = height * width
    log_ratio = np.log(np.asarray(ratio, dtype=np.float64))
    for _ in range(10):
        target_area = area * np.random.uniform(scale[0], scale[1])
        aspect = np.exp(np.random.uniform(log_ratio[0], log_ratio[1]))
        w = int(round(np.sqrt(target_area * aspect)))
        h = int(round(np.sqrt(target_area / aspect)))
        if 0 < w <= width and 0 < h <= height:
            i = int(np.random.uniform(0, height - h + 1))
            j = int(np.random.uniform(0, width - w + 1))
            return i, j, h, w
    in_ratio = float(width) / float(height)
    if in_ratio < min(ratio):
        w = width
        h = int(round(w / min(ratio)))
    elif in_ratio > max(ratio):
        h = height
        w = int(round(h * max(ratio)))
    else:
        w = width
        h = height
    return (height - h) // 2, (width - w) // 2, h, w


def get_center_crop(height, width, ratio):
    """The centred square of side int(ratio * min(height, width)):
    (row, column, side, side)."""
    c = int(ratio * min(height, width))
    return (height - c) // 2, (width - c) // 2, c, c


__all__ = ["resize_crop", "get_random_crop", "get_center_crop"]
