"""YOLO's RandomHSV (Ultralytics' ultralytics.data.augment.RandomHSV, run in
Go) and LabelRandomHSV, which reports the gains it drew."""
import math

from .image import _RandomImage, _seed_arg, _seeded
from .ssl import _Label

__all__ = ["RandomHSV", "LabelRandomHSV"]


class RandomHSV(_RandomImage):
    """Ultralytics' RandomHSV (8.3.79 on), on RGB images: gains g drawn
    from U(-1, 1) * (hgain, sgain, vgain); each pixel's OpenCV 8-bit HSV (H
    in [0, 180)) goes through lookup tables -- hue (x + 180 g_h) mod 180,
    saturation and value clip(x (1 + g), 0, 255), truncated -- and back to
    RGB, equal to cv2.cvtColor and cv2.LUT. All gains 0 leaves images
    alone. The defaults are Ultralytics' training defaults (hsv_h, hsv_s,
    hsv_v). Every sample is jittered (Ultralytics has no probability);
    seed pairs it with a LabelRandomHSV."""

    def __init__(self, hgain=0.015, sgain=0.7, vgain=0.4, seed=None):
        super().__init__()
        self.hgain, self.sgain, self.vgain = float(hgain), float(sgain), float(vgain)
        for name in ("hgain", "sgain", "vgain"):
            if not math.isfinite(getattr(self, name)):  # JSON has no NaN: Go would not see it
                raise ValueError(f"RandomHSV: {name} {getattr(self, name)} must be in [0, 1]")
        self.seed = _seed_arg(seed)
        self._check()

    def _spec(self):
        return _seeded({"op": "random_hsv", "hgain": self.hgain, "sgain": self.sgain, "vgain": self.vgain},
                       self.seed)


class LabelRandomHSV(_Label):
    """Appends the gains (g_h, g_s, g_v) RandomHSV(hgain, sgain, vgain,
    seed) drew for the image (without Ultralytics' + 1 on saturation and
    value): its tables are (x + 180 g_h) % 180 and clip(x (1 + g), 0, 255)."""

    _n = 3

    def __init__(self, hgain=0.015, sgain=0.7, vgain=0.4, seed=None):
        super().__init__()
        self._reports(lambda: RandomHSV(hgain, sgain, vgain, seed=seed))
