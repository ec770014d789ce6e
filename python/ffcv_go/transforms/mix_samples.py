"""Operations that blend a sample with other samples of the file (YOLO's
MixUp), unlike ImageMixup and LabelMixup, which mix the images of a batch."""
from ..pipeline.operation import _check_spec, _seed_arg
from .image import _RandomImage, _seeded
from .ssl import _Label

__all__ = ["MixUp", "LabelMixUp", "CopyPaste"]


class MixUp(_RandomImage):
    """YOLO's MixUp (Ultralytics' ``MixUp(dataset, pre_transform, p)``): with
    probability p, each image is blended with a partner drawn uniformly from
    the file and run through the same built-in operations before this one,
    with its own draws (a second mosaic, warped its own way), as
    ``own * r + partner * (1 - r)`` truncated to uint8, r ~ Beta(32, 32).
    Boxes, labels and keypoints that follow the image get both samples'
    rows, the sample's first. It needs the image decoder and built-in
    operations before it (no Python stage between); one per pipeline. seed
    pairs it with a LabelMixUp."""

    def __init__(self, p=0.0, seed=None):
        super().__init__()
        self.p, self.seed = float(p), _seed_arg(seed)
        self._check()

    def _spec(self):
        return _seeded({"op": "yolo_mixup", "p": self.p}, self.seed)


class LabelMixUp(_Label):
    """Appends (applied, partner, r) of ``MixUp(p, seed)``: applied 1 or 0,
    the partner's sample index (exact below 2**24 samples) and the ratio of
    the sample's own image, (0, 0, 0) where it did not apply."""

    _n = 3

    def __init__(self, p=0.0, seed=None):
        super().__init__()
        self._reports(lambda: MixUp(p, seed=seed))


class CopyPaste(_RandomImage):
    """YOLO's CopyPaste (Ultralytics' ``CopyPaste(p, mode="flip")``), for
    segment datasets, after the mosaic and before its perspective: every
    instance the image shows (a mosaic's tiles included) is flipped left to
    right across the image; those whose flipped box covers less than 0.30 of
    every shown box's area are candidates, and the ``round(p * n)`` that
    overlap least (Python's round, half to even) are pasted: the flipped
    image's pixels inside their flipped polygons. Nothing is drawn at
    random. ``boxes`` and ``polygons`` name the file's boxes and polygon
    fields. Outputs that follow the image get each pasted instance's rows
    (box, label, polygon) after the shown ones, through the mirrored map.
    It needs the image decoder and built-in operations before it (no Python
    stage between)."""

    def __init__(self, p=0.5, boxes="boxes", polygons="polygons"):
        super().__init__()
        self.p = float(p)
        if not isinstance(boxes, str) or not isinstance(polygons, str):
            raise TypeError(f"CopyPaste: boxes and polygons name fields of the file, got {boxes!r}, {polygons!r}")
        self.boxes, self.polygons = boxes, polygons
        # The loader gives the fields' indices and the operations before it.
        _check_spec(self, {**self._spec(), "boxes": 0, "polygons": 0, "geometry": {"image": 0, "ops": []}})

    def _spec(self):
        return {"op": "copy_paste", "p": self.p, "boxes": self.boxes, "polygons": self.polygons}
