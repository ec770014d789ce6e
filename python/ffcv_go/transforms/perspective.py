"""RandomPerspective (Ultralytics YOLO's) and LabelRandomPerspective, which
reports what it drew."""
import numbers

from ._base import replace_state
from .image import _RandomImage, _seed_arg, _seeded
from .ssl import _Label


def _border(border):
    """A number or a (rows, columns) pair, as YOLO's border: pixels added
    (negative: removed) above and below, left and right."""
    if isinstance(border, numbers.Number) and not isinstance(border, bool):
        return [int(border), int(border)]
    if isinstance(border, (tuple, list)) and len(border) == 2:
        return [int(border[0]), int(border[1])]
    raise TypeError(f"RandomPerspective: border must be a number or a (rows, columns) pair, got {border!r}")


class RandomPerspective(_RandomImage):
    """Ultralytics YOLO's RandomPerspective on uint8 images: draws
    perspective in U(-perspective, perspective) about y and x, an angle in
    U(-degrees, degrees), a scale in U(1 - scale, 1 + scale), shears in
    U(-shear, shear) degrees and a translation in U(0.5 - translate,
    0.5 + translate) of the output's size, composes YOLO's matrix
    M = T @ S @ R @ P @ C (float32) and warps the image onto an output
    border[0] rows larger above and below and border[1] columns left and
    right (negative: smaller), as cv2.warpAffine (perspective 0) or
    cv2.warpPerspective, bilinear, fill outside (one value per channel or
    one for all; YOLO's 114 grey by default).

    Boxes, keypoints and masks that follow the image go where its pixels
    went; YOLO's box filter is RaggedDecoder(wh_thr=2, area_thr=0.1,
    ar_thr=100). seed pairs it with a LabelRandomPerspective."""

    def __init__(self, degrees=0.0, translate=0.1, scale=0.5, shear=0.0, perspective=0.0, border=(0, 0),
                 fill=114, seed=None):
        super().__init__()
        self.degrees, self.translate, self.scale = float(degrees), float(translate), float(scale)
        self.shear, self.perspective = float(shear), float(perspective)
        self.border = _border(border)
        if isinstance(fill, numbers.Number) and not isinstance(fill, bool):
            fill = [fill]
        self.fill = [int(v) for v in fill]
        self.seed = _seed_arg(seed)
        self._check()

    def declare_state_and_memory(self, previous_state):
        h, w, c = previous_state.shape
        return replace_state(previous_state, shape=(h + 2 * self.border[0], w + 2 * self.border[1], c)), None

    def _spec(self):
        return _seeded({"op": "random_perspective", "degrees": self.degrees, "translate": self.translate,
                        "scale": self.scale, "shear": self.shear, "perspective": self.perspective,
                        "border": list(self.border), "fill": list(self.fill)}, self.seed)


class LabelRandomPerspective(_Label):
    """Appends the 8 values RandomPerspective drew, in the order Ultralytics'
    RandomPerspective.affine_transform draws them: perspective about y and
    about x, angle (degrees), scale, shear x and y (degrees), translation x
    and y (fractions of the output's width and height). With the image's
    size they give the matrix: fed to YOLO's own affine_transform as its
    random.uniform results, in order, they make the matrix this sample was
    warped with."""

    _n = 8

    def __init__(self, degrees=0.0, translate=0.1, scale=0.5, shear=0.0, perspective=0.0, border=(0, 0),
                 fill=114, seed=None):
        super().__init__()
        self._reports(lambda: RandomPerspective(degrees, translate, scale, shear, perspective, border, fill,
                                                seed=seed))
