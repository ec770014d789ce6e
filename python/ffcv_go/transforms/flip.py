"""RandomHorizontalFlip and LabelRandomHorizontalFlip (FFCV-SSL's module
path; defined in image.py and ssl.py), and YOLO's RandomFlip."""
from .image import RandomHorizontalFlip, RandomVerticalFlip
from .ssl import LabelRandomHorizontalFlip  # noqa: F401

__all__ = ["RandomHorizontalFlip", "LabelRandomHorizontalFlip", "RandomFlip"]


def RandomFlip(p=0.5, direction="horizontal", seed=None):
    """Ultralytics' RandomFlip(p, direction): a RandomHorizontalFlip or a
    RandomVerticalFlip with probability p. Its flip_idx (pose keypoints'
    left/right swap) belongs to the keypoints' decoder here:
    ``RaggedDecoder(follows=..., flip_indices=flip_idx)`` swaps the points
    of every left-right flip of the image it follows, and none of an
    up-down one, as Ultralytics does."""
    if direction == "horizontal":
        return RandomHorizontalFlip(p, seed=seed)
    if direction == "vertical":
        return RandomVerticalFlip(p, seed=seed)
    raise ValueError(f"RandomFlip: direction must be 'horizontal' or 'vertical', got {direction!r}")
