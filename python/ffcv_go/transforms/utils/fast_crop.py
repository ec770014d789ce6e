"""Crop helpers of FFCV's ffcv.transforms.utils.fast_crop, for custom
operations and decoders' crop generators. Plain functions numba can compile.

The Loader's own decoders and RandomResizedCrop sample their crops in Go with
keyed randomness (core/pipeline/rgb); get_random_crop here draws from
numpy's global generator, as FFCV's does, for code that calls it itself."""
import numpy as np

from ...libffcv import resize_crop  # noqa: F401  (FFCV's module path)


def get_random_crop(height, width, scale, ratio, seed=None, second_seed=None):
    """torchvision's RandomResizedCrop sampling: (row, column, height, width)
    of a crop with area fraction in scale and aspect ratio in ratio (log-
    uniform), 10 tries, then the largest centred crop of a valid ratio.

    seed (FFCV-SSL's) seeds numpy's global generator first. second_seed
    (FFCV-SSL's non-overlapping crops): the crop second_seed gives is drawn
    first, then this one inside the largest of the four strips beside it
    (above, below, left, right: the first of the largest), with the same
    sampling relative to the strip; if that crop covers the whole image,
    the whole image (the one case where the two overlap). The loader's
    decoders follow the same rule with their own keyed draws."""
    top, left, rows, cols = 0, 0, height, width  # the region the crop is drawn in
    log_lo, log_hi = np.log(ratio[0]), np.log(ratio[1])
    passes = 1
    if second_seed is not None:
        passes = 2
        np.random.seed(second_seed)
    elif seed is not None:
        np.random.seed(seed)
    i, j, h, w = 0, 0, height, width
    for k in range(passes):
        own = k == passes - 1
        area = rows * cols
        found = False
        for _ in range(10):
            target_area = area * np.random.uniform(scale[0], scale[1])
            aspect = np.exp(np.random.uniform(log_lo, log_hi))
            w = int(round(np.sqrt(target_area * aspect)))
            h = int(round(np.sqrt(target_area / aspect)))
            if 0 < w <= cols and 0 < h <= rows:
                i = top + int(np.random.uniform(0, rows - h + 1))
                j = left + int(np.random.uniform(0, cols - w + 1))
                found = True
                break
        if not found:
            in_ratio = float(cols) / float(rows)
            if in_ratio < min(ratio):
                w = cols
                h = int(round(w / min(ratio)))
            elif in_ratio > max(ratio):
                h = rows
                w = int(round(h * max(ratio)))
            else:
                w = cols
                h = rows
            i, j = top + (rows - h) // 2, left + (cols - w) // 2
        if not own:
            # The largest strip beside the other crop (i, j, h, w).
            above, below = i * width, (height - i - h) * width
            before, after = j * height, (width - j - w) * height
            best = max(above, below, before, after)
            if best == 0:
                return 0, 0, height, width
            if above == best:
                top, left, rows, cols = 0, 0, i, width
            elif below == best:
                top, left, rows, cols = i + h, 0, height - i - h, width
            elif before == best:
                top, left, rows, cols = 0, 0, height, j
            else:
                top, left, rows, cols = 0, j + w, height, width - j - w
            if seed is not None:
                np.random.seed(seed)
    return i, j, h, w


def get_center_crop(height, width, ratio):
    """The centred square of side int(ratio * min(height, width)):
    (row, column, side, side)."""
    c = int(ratio * min(height, width))
    return (height - c) // 2, (width - c) // 2, c, c


__all__ = ["resize_crop", "get_random_crop", "get_center_crop"]
