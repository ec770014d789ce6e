"""FFCV-SSL's ffcv.transforms.resized_crop: RandomResizedCrop in its decoder
form, LabelRandomResizedCrop, CenterCrop, CornerCrop, PadRGBImageDecoder,
and the crop generators (row, column, height, width) its decoders take,
for decoders and operations of your own.

The crop generators are plain functions numba can compile (as
``Compiler.compile`` does); the random one draws from numpy's global
generator, as FFCV-SSL's does. The loader's decoders draw their crops in Go
with keyed randomness, by the same rules. Imported lazily by the package:
LabelRandomResizedCrop extends a decoder of ffcv_go.fields, which itself
imports from this package."""
import numpy as np

from ..fields.rgb_image import PadRGBImageDecoder, RandomResizedCropRGBImageDecoder
from ..pipeline.allocation_query import AllocationQuery
from ..pipeline.state import State
from .image import RandomResizedCrop
from .ssl import CenterCrop, CornerCrop
from .utils.fast_crop import get_random_crop

__all__ = ["RandomResizedCrop", "LabelRandomResizedCrop", "CenterCrop", "CornerCrop", "PadRGBImageDecoder",
           "get_random_crop", "get_center_crop", "get_top_left_crop", "get_top_right_crop",
           "get_bottom_left_crop", "get_bottom_right_crop"]


class LabelRandomResizedCrop(RandomResizedCropRGBImageDecoder):
    """FFCV-SSL's LabelRandomResizedCrop: a decoder of the image field that
    outputs, as int32 (6,), (width, height, top, left, crop height, crop
    width) of the crop ``RandomResizedCrop(output_size, scale=scale,
    ratio=ratio, seed=seed, second_seed=second_seed)`` takes from each
    image. It reads only the images' metadata; give it a view of its own
    over the image field (custom_field_mapper)."""

    def __init__(self, output_size, seed, scale, ratio, second_seed=None):
        super().__init__(output_size, scale, ratio, seed=seed, second_seed=second_seed)

    def declare_state_and_memory(self, previous_state):
        shape, dtype = (6,), np.dtype("<i4")
        return State(previous_state.jit_mode, previous_state.device, shape, dtype), AllocationQuery(shape, dtype)

    def _spec(self):
        return dict(super()._spec(), op="label_rrc")


def get_center_crop(height, width, _, ratio, seed=None, second_seed=None):
    """The centred square of side int(ratio * min(height, width)); the
    seeds are unused (FFCV-SSL's generator signature)."""
    c = int(ratio * min(height, width))
    return (height - c) // 2, (width - c) // 2, c, c


def get_top_left_crop(height, width, _, ratio, seed=None, second_seed=None):
    """The top-left square of side int(ratio * min(height, width)) (row 0:
    FFCV-SSL's function of this name returns the bottom-left one)."""
    c = int(ratio * min(height, width))
    return 0, 0, c, c


def get_top_right_crop(height, width, _, ratio, seed=None, second_seed=None):
    """The top-right square of side int(ratio * min(height, width))."""
    c = int(ratio * min(height, width))
    return 0, width - c, c, c


def get_bottom_left_crop(height, width, _, ratio, seed=None, second_seed=None):
    """The bottom-left square of side int(ratio * min(height, width))."""
    c = int(ratio * min(height, width))
    return height - c, 0, c, c


def get_bottom_right_crop(height, width, _, ratio, seed=None, second_seed=None):
    """The bottom-right square of side int(ratio * min(height, width))."""
    c = int(ratio * min(height, width))
    return height - c, width - c, c, c
