"""FFCV's ffcv.libffcv helpers (and FFCV-SSL's pad), run by the Go library: the same JPEG decoder
and area resizer the loader uses. As in FFCV, they are plain functions that
numba can compile (Compiler.compile), so custom operations' generated code
may call them."""
import os

import numpy as np

from . import _lib

lib = _lib.lib

ctypes_memcopy, ctypes_imdecode, ctypes_resize, ctypes_pad = _lib.libffcv_functions()


def memcpy(source: np.ndarray, dest: np.ndarray):
    """Copies source's bytes into the start of dest (both C-contiguous)."""
    n = source.size * source.itemsize
    if dest.size * dest.itemsize < n:
        raise ValueError("memcpy: the destination is smaller than the source")
    if ctypes_memcopy(source.ctypes.data, dest.ctypes.data, n, 0) < 0:
        raise ValueError("memcpy: bad source or destination")


def read(fileno: int, destination: np.ndarray, offset: int):
    """Reads destination's size in bytes from file descriptor fileno at
    offset into destination; returns the number of bytes read."""
    view = memoryview(destination).cast("B")
    got = 0
    while got < len(view):
        k = os.preadv(fileno, [view[got:]], offset + got)
        if k == 0:
            break
        got += k
    return got


def resize_crop(source, start_row, end_row, start_col, end_col, destination):
    """Area-resizes source[start_row:end_row, start_col:end_col] (H×W×3
    uint8, C-contiguous) into destination (h×w×3 uint8), as OpenCV's
    INTER_AREA."""
    if ctypes_resize(source.ctypes.data, source.shape[0], source.shape[1],
                     start_row, end_row, start_col, end_col,
                     destination.ctypes.data, destination.shape[0], destination.shape[1], 0) < 0:
        raise ValueError("resize_crop: the rows/columns are not inside the source, or a size is not positive")


def pad(source, start_row, end_row, start_col, end_col, destination):
    """Copies source[start_row:end_row, start_col:end_col] (H×W×3 uint8,
    C-contiguous) to the top-left corner of destination (h×w×3 uint8) and
    sets the rest of destination to zero (FFCV-SSL's pad)."""
    if ctypes_pad(source.ctypes.data, source.shape[0], source.shape[1],
                  start_row, end_row, start_col, end_col,
                  destination.ctypes.data, destination.shape[0], destination.shape[1], 0) < 0:
        raise ValueError("pad: the rows/columns are not inside the source, or do not fit the destination")


def imdecode(source: np.ndarray, dst: np.ndarray,
             source_height: int, source_width: int,
             crop_height=None, crop_width=None,
             offset_x=0, offset_y=0, scale_factor_num=1, scale_factor_denom=1,
             enable_crop=False, do_flip=False):
    """Decodes the JPEG bytes in source into dst as RGB: the crop_height ×
    crop_width rectangle at (offset_x, offset_y) when enable_crop, else the
    whole image; scaled by scale_factor_num / scale_factor_denom (sizes
    rounded up); mirrored when do_flip. Returns 0 (FFCV returns TurboJPEG's
    status); a failure raises ValueError."""
    ret = ctypes_imdecode(source.ctypes.data, source.size * source.itemsize, dst.ctypes.data,
                          dst.size * dst.itemsize, source_height, source_width, crop_height, crop_width,
                          offset_x, offset_y, scale_factor_num, scale_factor_denom,
                          1 if enable_crop else 0, 1 if do_flip else 0, 0)
    if ret < 0:
        raise ValueError("imdecode: not a JPEG of source_height x source_width, a crop outside the image, "
                         "or a destination too small for the result")
    return 0


__all__ = ["memcpy", "read", "resize_crop", "pad", "imdecode"]
