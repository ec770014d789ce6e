"""torchvision.transforms.v2's SSD augmentations, run in Go, resized to a
fixed output so batches can hold them: RandomIoUCrop (the decoder: it draws
its crop around the stored boxes) and RandomZoomOut, with their Label*
reports of the parameters drawn."""
import numbers

from ._base import replace_state
from .image import _RandomImage, _as_named, _seed_arg, _seeded
from .ssl import _Label

__all__ = ["RandomIoUCrop", "RandomZoomOut", "LabelRandomZoomOut", "LabelRandomIoUCrop"]


class RandomIoUCrop(_RandomImage):
    """torchvision's RandomIoUCrop, resized to output_size; it opens the
    pipeline, where it is RandomIoUCropRGBImageDecoder (see there): it reads
    the stored boxes (the file's field named by ``boxes``) to draw its
    crop, so it cannot follow other operations."""

    def __init__(self, output_size, min_scale=0.3, max_scale=1.0, min_aspect_ratio=0.5, max_aspect_ratio=2.0,
                 sampler_options=None, trials=40, boxes="boxes", seed=None):
        super().__init__()
        from ..fields.rgb_image import RandomIoUCropRGBImageDecoder
        self._decoder_form = _as_named(self, lambda: RandomIoUCropRGBImageDecoder(
            output_size, min_scale, max_scale, min_aspect_ratio, max_aspect_ratio, sampler_options, trials, boxes,
            seed))
        for k in ("output_size", "min_scale", "max_scale", "min_aspect_ratio", "max_aspect_ratio",
                  "sampler_options", "trials", "boxes", "seed"):
            setattr(self, k, getattr(self._decoder_form, k))

    def _as_decoder(self):
        return self._decoder_form

    def declare_state_and_memory(self, previous_state):
        raise ValueError("RandomIoUCrop draws its crop around the sample's stored boxes, so it must open the "
                         "pipeline (as its decoder); put RandomZoomOut and the other operations after it")

    def _spec(self):
        return self._decoder_form._go_spec()


class RandomZoomOut(_RandomImage):
    """torchvision's RandomZoomOut, with probability p: a canvas r times the
    image's size (r from side_range; int(w r) by int(h r)) filled with fill,
    the image at a random place on it; then the canvas resized (OpenCV's
    INTER_AREA) to size, (rows, cols), by default the image's own. seed
    pairs it with a LabelRandomZoomOut."""

    def __init__(self, fill=0, side_range=(1.0, 4.0), p=0.5, size=None, seed=None):
        super().__init__()
        self.fill = [int(fill)] if isinstance(fill, numbers.Number) else [int(v) for v in fill]
        self.side_range = (float(side_range[0]), float(side_range[1]))
        self.p = float(p)
        self.size = None if size is None else ((int(size), int(size)) if isinstance(size, numbers.Number)
                                               else (int(size[0]), int(size[1])))
        self.seed = _seed_arg(seed)
        self._check()

    def declare_state_and_memory(self, previous_state):
        if self.size is None:
            return previous_state, None
        return replace_state(previous_state, shape=(*self.size, previous_state.shape[2])), None

    def _spec(self):
        spec = {"op": "zoom_out", "fill": self.fill, "side_range": list(self.side_range), "p": self.p}
        if self.size is not None:
            spec["size"] = list(self.size)
        return _seeded(spec, self.seed)


class LabelRandomZoomOut(_Label):
    """Appends what RandomZoomOut(fill, side_range, p, size, seed) drew:
    (zoomed out: 1 or 0, s, fx, fy), float32 values the op used exactly.
    For an input of w by h the canvas is int(w s) by int(h s) and the image
    at left = int((int(w s) - w) fx), top = int((int(h s) - h) fy):
    torchvision's padding (left, top, width - w - left, height - h - top)."""

    _n = 4

    def __init__(self, fill=0, side_range=(1.0, 4.0), p=0.5, size=None, seed=None):
        super().__init__()
        self._reports(lambda: RandomZoomOut(fill, side_range, p, size, seed=seed))


def __getattr__(name):
    # LabelRandomIoUCrop is a decoder of ffcv_go.fields, which imports this
    # package while it loads: imported on first use.
    if name == "LabelRandomIoUCrop":
        from ..fields.rgb_image import LabelRandomIoUCrop
        return LabelRandomIoUCrop
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
