"""Operations that blend a sample with other samples of the file (YOLO's
MixUp), unlike ImageMixup and LabelMixup, which mix the images of a batch."""
from ..pipeline.operation import _ArgumentError, _check_spec, _seed_arg
from .image import _RandomImage, _seeded
from .ssl import _Label

__all__ = ["MixUp", "LabelMixUp", "CutMix", "LabelCutMix", "CopyPaste"]


class MixUp(_RandomImage):
    """YOLO's MixUp (Ultralytics' ``MixUp(dataset, pre_transform, p)``): with
    probability p, each image is blended with a partner drawn uniformly from
    the file and run through the same built-in operations before this one,
    with its own draws (a second mosaic, warped its own way), as
    ``own * r + partner * (1 - r)`` truncated to uint8, r ~ Beta(32, 32).
    Boxes, labels and keypoints that follow the image get both samples'
    rows, the sample's first. It needs the image decoder and built-in
    operations before it (no Python stage between). seed pairs it with a
    LabelMixUp."""

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


class CutMix(_RandomImage):
    """YOLO's CutMix (Ultralytics' ``CutMix(dataset, pre_transform, p, beta,
    num_areas)``): with probability p, a partner drawn uniformly from the
    file is run through the same built-in operations before this one, with
    its own draws (as MixUp's), and num_areas rectangles are drawn: lam ~
    Beta(beta, beta), sides ``int(W * sqrt(1 - lam))`` by
    ``int(H * sqrt(1 - lam))`` around a uniform integer centre, clipped to
    the image. Those that overlap none of the sample's shown boxes are
    candidates and one is picked at random; the partner's boxes with at
    least 0.1 of their area inside it (0.01 for segments) join the sample's
    rows, clipped to it, and its pixels become the partner's. Without a
    candidate or such a box nothing changes. ``boxes`` names the file's
    xyxy boxes field; ``polygons``, for segments, its polygon field (the
    boxes are then the warped polygons' bounds, as Ultralytics' segment2box).
    The boxes it sees are those Ultralytics' box_candidates keeps. Outputs that follow the image get the joining
    rows after the sample's (boxes clipped to the area). It needs the image
    decoder and built-in operations before it (no Python stage between).
    seed pairs it with a LabelCutMix."""

    def __init__(self, p=0.0, beta=1.0, num_areas=3, boxes="boxes", polygons=None, seed=None):
        super().__init__()
        self.p, self.beta, self.num_areas = float(p), float(beta), num_areas
        if not isinstance(num_areas, int) or isinstance(num_areas, bool):
            raise TypeError(f"CutMix: num_areas must be an int, got {num_areas!r}")
        if not isinstance(boxes, str) or not (polygons is None or isinstance(polygons, str)):
            raise TypeError(f"CutMix: boxes and polygons name fields of the file, got {boxes!r}, {polygons!r}")
        self.boxes, self.polygons, self.seed = boxes, polygons, _seed_arg(seed)
        # The loader gives the fields' indices and the operations before it.
        fields = {"boxes": 0} if polygons is None else {"boxes": 0, "polygons": 0}
        _check_spec(self, {**self._spec(), **fields, "geometry": {"image": 0, "ops": []}})

    def _spec(self):
        spec = {"op": "cut_mix", "p": self.p, "beta": self.beta, "num_areas": self.num_areas, "boxes": self.boxes}
        if self.polygons is not None:
            spec["polygons"] = self.polygons
        return _seeded(spec, self.seed)


class LabelCutMix(_Label):
    """Appends (applied, partner, x1, y1, x2, y2) of ``CutMix(p, beta,
    num_areas, boxes, polygons, seed)``: applied 1 or 0, the partner's
    sample index (exact below 2**24 samples) and the area whose pixels are
    the partner's, all 0 where nothing changed. It reports the CutMix of
    this loader's image output built with the same arguments and seed (it
    replays that output's operations before it)."""

    _n = 6

    def __init__(self, p=0.0, beta=1.0, num_areas=3, boxes="boxes", polygons=None, seed=None):
        super().__init__()
        try:
            self._of = CutMix(p, beta, num_areas, boxes=boxes, polygons=polygons, seed=seed)
        except _ArgumentError as e:
            raise _ArgumentError(type(self).__name__, e.detail) from None
        self.seed = self._of.seed
        if self.seed is None:
            raise ValueError("LabelCutMix: give it the seed of the CutMix it reports")


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
