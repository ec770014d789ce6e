"""RandomResizedCrop in FFCV 1.0's form, at FFCV 1.0's module path: the
package's RandomResizedCrop (defined in image.py) with FFCV 1.0's signature,
``RandomResizedCrop(scale, ratio, size)``."""
from . import image


class RandomResizedCrop(image.RandomResizedCrop):
    """FFCV 1.0's RandomResizedCrop(scale, ratio, size): a random crop
    (torchvision's sampling) area-resized to size; first in a pipeline, the
    decoder. ``ffcv_go.transforms.RandomResizedCrop`` takes this form and
    FFCV-SSL's."""

    def __init__(self, scale, ratio, size, seed=None):
        super().__init__(scale, ratio, size, seed=seed)


__all__ = ["RandomResizedCrop"]
