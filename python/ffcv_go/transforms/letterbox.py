"""YOLO's LetterBox (Ultralytics' ultralytics.data.augment.LetterBox, run in
Go): first in a pipeline it is the decoder (LetterBoxRGBImageDecoder, whole
images of any size); later it letterboxes decoded images of one size.
LabelLetterBox reports what it does to each image (ratio_pad)."""
import numpy as np

from ._base import replace_state
from .image import _RandomImage, _as_named

__all__ = ["LetterBox", "LabelLetterBox"]


class LetterBox(_RandomImage):
    """Resize, aspect kept, and pad to new_shape (an int or (rows, cols)) as
    Ultralytics' LetterBox: ratio r = min(rows / h, cols / w), at most 1
    with scaleup=False; cv2.resize INTER_LINEAR pixels to (round(w r),
    round(h r)); padding with fill split left = round(dw / 2 - 0.1), right =
    round(dw / 2 + 0.1) (top and bottom alike), or all right and below with
    center=False; scale_fill stretches to new_shape instead. auto=True is
    refused: it gives each image its own shape. rect=True (with the
    loader's batch_size and order=OrderOption.RECT) gives each batch of
    aspect-sorted images its own shape, as Ultralytics' rect batches: see
    LetterBoxRGBImageDecoder; it opens the pipeline. Boxes, points and
    masks that follow the image follow it."""

    def __init__(self, new_shape=(640, 640), auto=False, scale_fill=False, scaleup=True, center=True, stride=32,
                 fill=114, rect=False, batch_size=None, pad=0.5):
        super().__init__()
        from ..fields.rgb_image import LetterBoxRGBImageDecoder
        # The decoder checks and keeps the arguments; the transform is its
        # spec under another op name.
        self._decoder_form = _as_named(self, lambda: LetterBoxRGBImageDecoder(
            new_shape, auto, scale_fill, scaleup, center, stride, fill, rect, batch_size, pad))
        d = self._decoder_form
        self.new_shape, self.auto, self.scale_fill, self.scaleup = d.new_shape, d.auto, d.scale_fill, d.scaleup
        self.center, self.stride, self.fill = d.center, d.stride, d.fill
        self.rect, self.batch_size, self.pad = d.rect, d.batch_size, d.pad
        if not self.rect:
            self._check()

    def _as_decoder(self):
        return self._decoder_form

    def declare_state_and_memory(self, previous_state):
        if previous_state.shape is not None and len(previous_state.shape) == 3 and previous_state.shape[2] != 3:
            raise ValueError(f"LetterBox needs RGB images, got shape {previous_state.shape}")
        return replace_state(previous_state, shape=(*self.new_shape, 3), dtype=np.dtype("u1")), None

    def _spec(self):
        return {"op": "letterbox", **self._decoder_form._args()}


def __getattr__(name):
    # LabelLetterBox is a decoder of ffcv_go.fields, which imports this
    # package while it loads: imported on first use.
    if name == "LabelLetterBox":
        from ..fields.rgb_image import LabelLetterBox
        return LabelLetterBox
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
