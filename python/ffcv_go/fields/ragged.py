"""RaggedArrayField: a variable number of rows per sample (boxes, labels,
keypoints), and its decoder, which can follow an image's crops and flips."""
import json
from typing import NamedTuple

import numpy as np

from .base import Field, ARG_TYPE, _set_data, _Decoder
from ..pipeline.allocation_query import AllocationQuery
from ..pipeline.operation import _check_spec
from ..pipeline.state import State

_COORDS = (None, "xyxy", "xy", "polygon")


def _target_args(args):
    raw = np.zeros(1024, dtype=np.uint8)
    b = json.dumps({k: v for k, v in args.items() if v}, separators=(",", ":")).encode()
    raw[:len(b)] = np.frombuffer(b, dtype=np.uint8)
    return raw.view(ARG_TYPE)[0]


def _parse_target_args(binary):
    raw = np.ascontiguousarray(binary).view(np.uint8).reshape(-1).tobytes() if isinstance(binary, np.ndarray) \
        else bytes(binary)
    return json.loads(raw.split(b"\0", 1)[0] or b"{}")


class RaggedArrayField(Field):
    """An (N, *row_shape) array of one dtype per sample; N may differ
    between samples and may be 0.

    follows names the RGBImageField the rows belong to. With coords='xyxy'
    (row_shape (4,): boxes x0, y0, x1, y1) or coords='xy' (the first two
    values of each point's last axis, e.g. keypoints (K, 3) as x, y,
    visibility) or coords='polygon' (row_shape (K, 2): one instance's
    outline as K x, y vertices, a segment) the values are pixel coordinates
    of the image as handed to the writer: they must lie inside it, and the
    writer scales them with the image's max_resolution. Rows without coordinates (labels) may name
    the boxes field they go with; the loader then drops their rows with the
    boxes. FFCV cannot read files with this field (type id 100).
    """
    TYPE_ID = 100

    def __init__(self, dtype, row_shape=(), follows=None, coords=None):
        self.dtype = np.dtype(dtype)
        self.row_shape = tuple(int(s) for s in row_shape)
        if self.dtype.fields is not None or self.dtype.hasobject or self.dtype.itemsize == 0:
            raise TypeError(f"RaggedArrayField: dtype {self.dtype} is not a fixed-size scalar type")
        if any(s <= 0 for s in self.row_shape) or len(self.row_shape) > 31:
            raise ValueError(f"RaggedArrayField: row_shape {self.row_shape} must have positive dimensions")
        if coords not in _COORDS:
            raise ValueError(f"RaggedArrayField: coords {coords!r} must be 'xyxy', 'xy', 'polygon' or None")
        if coords is not None:
            if self.dtype not in (np.dtype("<f4"), np.dtype("<f8")):
                raise TypeError(f"RaggedArrayField: coordinates need float32 or float64, not {self.dtype}")
            if coords == "xyxy" and self.row_shape != (4,):
                raise ValueError(f"RaggedArrayField: xyxy boxes need row_shape (4,), not {self.row_shape}")
            if coords == "polygon" and (len(self.row_shape) != 2 or self.row_shape[1] != 2 or self.row_shape[0] < 3):
                raise ValueError(f"RaggedArrayField: polygons need row_shape (K, 2) of K >= 3 points, "
                                 f"not {self.row_shape}")
            if coords == "xy" and (not self.row_shape or self.row_shape[-1] < 2):
                raise ValueError(f"RaggedArrayField: xy points need a last axis of at least 2, not {self.row_shape}")
            if not follows:
                raise ValueError("RaggedArrayField: coordinates need follows= the image field they belong to")
        self.follows = follows or None
        self.coords = coords

    @property
    def metadata_type(self):
        return np.dtype([("ptr", "<u8"), ("rows", "<u8")], align=True)

    @staticmethod
    def from_binary(binary):
        a = _parse_target_args(binary)
        return RaggedArrayField(np.dtype(a["dtype"]), a.get("row_shape", ()), a.get("follows"), a.get("coords"))

    def to_binary(self):
        return _target_args({"dtype": self.dtype.str, "row_shape": list(self.row_shape),
                             "follows": self.follows, "coords": self.coords})

    def get_decoder_class(self):
        return RaggedDecoder

    def _spec(self):
        return {"shape": list(self.row_shape), "dtype": self.dtype.str, "follows": self.follows or "",
                "coords": self.coords or ""}

    def _check_follows(self, name, fields):
        if self.follows is None:
            return
        other = fields.get(self.follows)
        if self.coords is not None and type(other).__name__ != "RGBImageField":
            raise ValueError(f"field {name!r} follows {self.follows!r}, which is not an RGBImageField of this writer")
        if self.coords is None and not (isinstance(other, RaggedArrayField) and other.coords == "xyxy"):
            raise ValueError(f"field {name!r} follows {self.follows!r}, which is not a RaggedArrayField of "
                             "xyxy boxes of this writer")

    def _value(self, value, v, keep):
        _set_data(v, self._checked(value), keep)

    def _checked(self, value):
        if hasattr(value, "detach") and hasattr(value, "numpy"):  # a torch tensor
            value = value.detach().cpu().numpy()
        if isinstance(value, (list, tuple)) and len(value) == 0:
            value = np.zeros((0, *self.row_shape), dtype=self.dtype)
        if not isinstance(value, np.ndarray):
            raise TypeError(f"RaggedArrayField needs a numpy array of shape (N, {', '.join(map(str, self.row_shape))}), "
                            f"got {type(value).__name__}")
        if value.dtype != self.dtype:
            raise TypeError(f"RaggedArrayField of {self.dtype} got an array of {value.dtype}")
        if value.ndim != 1 + len(self.row_shape) or tuple(value.shape[1:]) != self.row_shape:
            raise ValueError(f"RaggedArrayField of row shape {self.row_shape} got an array of shape {value.shape} "
                             f"(want (N, {', '.join(map(str, self.row_shape))}))")
        if self.coords is not None and not np.isfinite(value).all():
            raise ValueError("RaggedArrayField: coordinates must be finite")
        return value


class Ragged(NamedTuple):
    """A batch of ragged rows: ``data`` (B, max_rows, *row_shape), zero past
    each sample's ``counts`` (B,) int64 rows. Both are views of one batch
    buffer."""
    data: "object"
    counts: "object"


class RaggedDecoder(_Decoder):
    """RaggedArrayField → ``Ragged(data, counts)``: rows zero-padded to
    max_rows (default: the most rows of any sample in the file; samples
    with more kept rows keep their first max_rows).

    follows names a loader output (default: the field's own ``follows``
    when the loader has an output of that name). For boxes or points
    (coords fields) it is the image output: they go through exactly the
    crop, flips, shifts and warps the image's decoder and transforms drew
    for the sample, and boxes are clipped to the visible part of the image and
    dropped when that part is narrower or shorter than min_size, smaller
    than min_area (output pixels²) or less than min_visibility of the whole
    box. wh_thr, area_thr and ar_thr are YOLO's candidate filter
    (Ultralytics' ``box_candidates``; 0 leaves each out): the kept part is
    wider and taller than wh_thr pixels, its area more than area_thr of the
    box's area as it enters the last warp (clipped by what came before, a
    mosaic's canvas) times that warp's scale² (a ``RandomPerspective``'s
    scale; rotation, shear and perspective not counted), and
    max(w / h, h / w) under ar_thr. YOLO's training uses wh_thr=2,
    area_thr=0.1, ar_thr=100. Under a rotation, shear or perspective a box
    becomes the bounds of its four mapped corners. For other rows (labels)
    it is the boxes output: the rows of the boxes it keeps are kept.

    Points (coords='xy') go with a boxes output row for row -- one
    instance's keypoints per box, as in COCO -- and are dropped with their
    box. ``boxes`` names that output; 'auto' (the default) picks the one
    boxes output that follows the same image when every sample has as many
    rows in both fields; None keeps every row. ``flip_indices`` reorders
    the points of a row when the image is mirrored left to right (a
    horizontal flip; an even number of them cancel out): point
    ``flip_indices[k]`` takes place k, so left and right keypoints swap.
    For COCO's 17 person keypoints it is
    ``ffcv_go.detection.COCO_PERSON_KEYPOINT_FLIP``.

    Polygons (coords='polygon') go with their boxes output like points.
    Each point is mapped; an axis-aligned step (crop, flip, a mosaic's
    tile) clamps the points to what it shows, and a rotation, shear or
    perspective keeps the points that land on the image, takes their box
    and clamps every point to it, as Ultralytics clips segments.
    ``polygons`` (on the boxes output) names the polygon field of the
    file whose outlines the boxes bound: under a map that is not
    axis-aligned each box becomes its polygon's box so computed
    (Ultralytics' segment2box) instead of the bounds of its mapped corners,
    which grow with the rotation; every output that goes with these boxes
    keeps the same rows. With segments YOLO's candidate filter uses
    area_thr=0.01 instead of 0.1 (the threshold stays yours to give)."""
    _go_name = "ragged"

    def __init__(self, follows="auto", max_rows=None, min_size=1.0, min_area=1.0, min_visibility=0.0,
                 boxes="auto", flip_indices=None, wh_thr=0.0, area_thr=0.0, ar_thr=0.0, polygons=None):
        super().__init__()
        self.follows = follows
        self.max_rows = None if max_rows is None else int(max_rows)
        self.filter = {"min_size": float(min_size), "min_area": float(min_area),
                       "min_visibility": float(min_visibility), "wh_thr": float(wh_thr),
                       "area_thr": float(area_thr), "ar_thr": float(ar_thr)}
        _check_spec(self, {"op": "ragged", "max_rows": self.max_rows or 0, **self.filter})
        if boxes is not None and not isinstance(boxes, str):
            raise TypeError(f"RaggedDecoder: boxes names a loader output, got {boxes!r}")
        self.boxes = boxes
        self.flip_indices = None if flip_indices is None else [int(k) for k in flip_indices]
        if polygons is not None and not isinstance(polygons, str):
            raise TypeError(f"RaggedDecoder: polygons names a polygon field of the file, got {polygons!r}")
        self.polygons = polygons

    def _field_classes(self):
        return (RaggedArrayField,)

    def _rows(self):
        if self.max_rows is not None:
            return self.max_rows
        rows = self.metadata["rows"] if self.metadata is not None else np.zeros(0)
        return int(rows.max()) if len(rows) else 0

    def _out_bytes(self):
        f = self.field
        row = f.dtype.itemsize * int(np.prod(f.row_shape))
        return (8 + self._rows() * row + 7) // 8 * 8

    def declare_state_and_memory(self, previous_state):
        shape = (self._out_bytes(),)
        return (State(previous_state.jit_mode, previous_state.device, shape, np.dtype("u1")),
                AllocationQuery(shape, np.dtype("u1")))

    def _go_spec(self, previous_state=None):
        return {"op": "ragged", "max_rows": self._rows()}

    def _split(self, x):
        """The batch's (B, bytes) uint8 tensor as Ragged views."""
        f = self.field
        counts = x[:, :8].view(_torch_dtype(np.dtype("<i8"))).reshape(-1)
        rows = self._rows()
        nbytes = rows * f.dtype.itemsize * int(np.prod(f.row_shape))
        data = x[:, 8:8 + nbytes].view(_torch_dtype(f.dtype)).reshape(x.shape[0], rows, *f.row_shape)
        return Ragged(data, counts)

    def generate_code(self):
        raise NotImplementedError("RaggedDecoder runs in the Go core only")


def _torch_dtype(dt):
    from .._dtypes import torch_dtype
    return torch_dtype(dt)


class PolygonMaskDecoder(_Decoder):
    """A polygon RaggedArrayField (coords='polygon') → (B, H // ratio,
    W // ratio) instance maps, H x W the size of the image output it
    follows: Ultralytics' segment masks with ``overlap_mask=True`` at
    ``ratio=4`` (its mask_ratio). The polygons go through the image's
    geometry as ``RaggedDecoder`` takes them (the same rows, kept with the
    same boxes output, in the same order, mosaic tiles included), and are
    rasterized in Go: a pixel is covered where its centre lies inside the
    polygon (even-odd rule). The value is j + 1 on the pixels of row j of
    the boxes output, 0 for background; larger polygons are painted first,
    so a small object over a large one stays on top. The dtype is uint8,
    or int32 when max_rows (the boxes output's) exceeds 255.

    Ultralytics also paints largest first, but then reorders its boxes and
    classes by area so that value k + 1 is its k-th box; here the rows keep
    their order and the values name them, which is the pairing its loss
    reads (mask value == box index + 1)."""
    _go_name = "polygon_mask"

    def __init__(self, follows="auto", ratio=4, boxes="auto"):
        super().__init__()
        self.follows = follows
        self.ratio = int(ratio)
        if self.ratio < 1:
            raise ValueError(f"PolygonMaskDecoder: ratio {ratio!r} must be at least 1")
        if boxes is None or not isinstance(boxes, str):
            raise TypeError(f"PolygonMaskDecoder: boxes names the boxes output the polygons go with, got {boxes!r}")
        self.boxes = boxes
        self.polygons = None

    def _field_classes(self):
        return (RaggedArrayField,)

    def declare_state_and_memory(self, previous_state):
        shape = (0, 0)  # the Go program gives the size of the followed output
        return (State(previous_state.jit_mode, previous_state.device, shape, np.dtype("u1")),
                AllocationQuery(shape, np.dtype("u1")))

    def _go_spec(self, previous_state=None):
        return {"op": "polygon_mask", "ratio": self.ratio}

    def generate_code(self):
        raise NotImplementedError("PolygonMaskDecoder runs in the Go core only")
