"""LabelRandomResizedCrop (FFCV-SSL's module path), with CenterCrop and
CornerCrop (defined in ssl.py). Imported lazily by the package: it extends
a decoder of ffcv_go.fields, which itself imports from this package."""
import numpy as np

from ..fields.rgb_image import RandomResizedCropRGBImageDecoder
from ..pipeline.allocation_query import AllocationQuery
from ..pipeline.state import State
from .image import _seed_arg
from .ssl import CenterCrop, CornerCrop  # noqa: F401

__all__ = ["LabelRandomResizedCrop", "CenterCrop", "CornerCrop"]


class LabelRandomResizedCrop(RandomResizedCropRGBImageDecoder):
    """FFCV-SSL's LabelRandomResizedCrop: a decoder of the image field that
    outputs, as int32 (6,), (width, height, top, left, crop height, crop
    width) of the crop RandomResizedCropRGBImageDecoder(output_size, scale,
    ratio, seed=seed) takes from each image. It reads only the images'
    metadata; it needs a second pipeline over the image field."""

    def __init__(self, output_size, seed=None, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3)):
        super().__init__(output_size, scale, ratio)
        if seed is None:
            raise ValueError("LabelRandomResizedCrop needs the seed given to the decoder it reports on")
        self.seed = _seed_arg(seed)

    def declare_state_and_memory(self, previous_state):
        shape, dtype = (6,), np.dtype("<i4")
        return State(previous_state.jit_mode, previous_state.device, shape, dtype), AllocationQuery(shape, dtype)

    def _go_spec(self, previous_state=None):
        return dict(super()._go_spec(previous_state), op="label_rrc")
