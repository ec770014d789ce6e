"""ToTorchVideo: clip batches in the layout of torchvision's video models."""
import torch

from ._base import Transform, replace_state, torch_dtype


class ToTorchVideo(Transform):
    """(B, T, H, W, C) clips -> (B, C, T, H, W), the layout of torchvision's
    video models (r3d_18, mvit, ...); (B, K, T, H, W, C) (ClipDecoder with
    several clips) -> (B, K, C, T, H, W). A view by default (no copy);
    contiguous=True copies into that layout."""

    _marker = _light = _chw = _same_pixels = True

    def __init__(self, contiguous=False):
        super().__init__()
        self.contiguous = bool(contiguous)

    def declare_state_and_memory(self, previous_state):
        shape = previous_state.shape
        if shape is None or len(shape) not in (4, 5):
            raise ValueError(f"ToTorchVideo needs (T, H, W, C) clips (or (K, T, H, W, C)), got shape {shape}")
        *lead, t, h, w, c = shape
        return replace_state(previous_state, jit_mode=False, shape=(*lead, c, t, h, w),
                             dtype=torch_dtype(previous_state.dtype)), None

    def _apply(self, x, ctx):
        d = x.dim()
        x = x.permute(*range(d - 4), d - 1, d - 4, d - 3, d - 2)
        return x.contiguous() if self.contiguous else x
