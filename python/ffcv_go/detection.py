"""Detection and segmentation: targets in a loader's batches, torchvision's
target format, and datasets from COCO annotations or (image, target) items.

Batches: a ``RaggedDecoder`` output is a ``Ragged(data, counts)``: data
(B, max_rows, *row_shape) zero past each sample's counts (B,) rows; a
``MaskDecoder`` output is (B, H, W) at the size of the image it follows.
"""
import json
import os

import numpy as np

from .fields.mask import MaskDecoder, MaskField
from .fields.ragged import Ragged, RaggedArrayField, RaggedDecoder

__all__ = ["Ragged", "to_torchvision_targets", "CocoDetection", "TargetDataset"]


def to_torchvision_targets(boxes, labels, counts=None, masks=None):
    """Per-sample target dicts for torchvision's detection models:
    ``[{"boxes": (n_i, 4) float, "labels": (n_i,) int64[, "masks": ...]}]``.

    boxes and labels are ``Ragged`` batches (or padded tensors with counts
    (B,) given); masks, optional, is the (B, H, W) map batch: each sample's
    is split into one binary mask per box, the pixels equal to its label
    (a class map; for instance maps pass labels holding instance ids)."""
    if isinstance(boxes, Ragged):
        boxes, bcounts = boxes
        counts = bcounts if counts is None else counts
    if isinstance(labels, Ragged):
        labels, lcounts = labels
        counts = lcounts if counts is None else counts
    if counts is None:
        raise ValueError("to_torchvision_targets: counts are needed with padded tensors")
    out = []
    for i, n in enumerate(counts.tolist()):
        t = {"boxes": boxes[i, :n], "labels": labels[i, :n].reshape(n).long()}
        if masks is not None:
            t["masks"] = (masks[i][None] == t["labels"][:, None, None].to(masks.dtype)).to(masks.dtype)
        out.append(t)
    return out


# ---- the loader's side: targets told which output they follow -------------

def _link_targets(outputs, plans, reader):
    """Completes the Go spec of every ragged and mask decoder with the
    geometry it follows (the image output's Go operations, keys included)
    and, for rows that follow boxes, the boxes field and its filter.
    outputs are the loader's (field index, name, ops, view), plans their plans."""
    named = {name: (fidx, ops, plan) for (fidx, name, ops, _), plan in zip(outputs, plans)}

    def handler(fidx):
        return reader.handlers[reader.field_names[fidx]]

    def follows_of(name, dec, field):
        f = dec.follows
        if f == "auto":
            f = field.follows if field.follows in named else None
        if f is not None and f not in named:
            raise ValueError(f'output "{name}" follows "{f}", which is not an output of this loader '
                             f'(outputs: {", ".join(named)})')
        return f

    def geometry(name, image):
        fidx, ops, plan = named[image]
        if type(handler(fidx)).__name__ != "RGBImageField" or plan.go_ops is None:
            raise ValueError(f'output "{name}" follows "{image}", which is not an image output decoded in Go')
        from .pipeline.pipeline import GoTail
        if any(isinstance(s, GoTail) for s in plan.steps):
            raise ValueError(f'output "{name}" follows "{image}", whose built-in operations are split by a Python '
                             'stage: targets follow only the built-in operations right after the image decoder')
        return {"image": fidx, "ops": plan.go_ops}

    for (fidx, name, ops, _), plan in zip(outputs, plans):
        dec = ops[0] if ops else None
        if not isinstance(dec, (RaggedDecoder, MaskDecoder)) or plan.go_ops is None:
            continue
        field = handler(fidx)
        spec = dict(plan.go_ops[0])
        if isinstance(dec, RaggedDecoder):
            plan.finish = dec._split
        target = follows_of(name, dec, field)
        if target is None:
            if isinstance(dec, MaskDecoder):
                raise ValueError(f'output "{name}": a MaskDecoder needs the image output it follows '
                                 f'(follows="...")')
            continue
        tidx, tops, _ = named[target]
        tdec = tops[0] if tops else None
        if isinstance(tdec, RaggedDecoder):
            tfield = handler(tidx)
            if isinstance(dec, MaskDecoder) or field.coords or getattr(tfield, "coords", None) != "xyxy":
                raise ValueError(f'output "{name}" follows "{target}": only rows without coordinates follow '
                                 f'a boxes output (a RaggedArrayField with coords="xyxy")')
            image = follows_of(target, tdec, tfield)
            if image is None:
                continue  # the boxes follow no image: nothing is dropped
            spec.update(geometry=geometry(name, image), boxes=tidx, **tdec.filter)
        else:
            spec["geometry"] = geometry(name, target)
            if isinstance(dec, RaggedDecoder):
                spec.update(dec.filter)
        plan.go_ops[0] = spec


# ---- datasets ---------------------------------------------------------------

class TargetDataset:
    """An indexed dataset of (image, target dict) items — torchvision's
    detection and segmentation datasets, ``tv_tensors`` included — as items
    for ``DatasetWriter.from_indexed_dataset`` with fields (image, boxes,
    labels[, mask]): boxes (N, 4) float32 xyxy in pixels, labels (N,)
    int64, mask (H, W) uint8 (needs ``mask_key``). box_format 'xywh' reads
    COCO-style boxes."""

    def __init__(self, dataset, boxes_key="boxes", labels_key="labels", mask_key=None, box_format="xyxy"):
        if box_format not in ("xyxy", "xywh"):
            raise ValueError(f"box_format {box_format!r} must be 'xyxy' or 'xywh'")
        self.dataset, self.boxes_key, self.labels_key = dataset, boxes_key, labels_key
        self.mask_key, self.box_format = mask_key, box_format

    def __len__(self):
        return len(self.dataset)

    def __getitem__(self, i):
        image, target = self.dataset[i]
        if not isinstance(target, dict):
            raise TypeError(f"item {i}: the target is a {type(target).__name__}, not a dict")
        boxes = np.asarray(_numpy(target.get(self.boxes_key, np.zeros((0, 4)))), dtype=np.float32).reshape(-1, 4)
        if self.box_format == "xywh":
            boxes = np.concatenate([boxes[:, :2], boxes[:, :2] + boxes[:, 2:]], axis=1)
        labels = np.asarray(_numpy(target.get(self.labels_key, np.zeros(0))), dtype=np.int64).reshape(-1)
        if len(labels) != len(boxes):
            raise ValueError(f"item {i}: {len(boxes)} boxes and {len(labels)} labels")
        image = _image(image)
        out = (image, boxes, labels)
        if self.mask_key is not None:
            mask = np.asarray(_numpy(target[self.mask_key]))
            out += (mask.astype(np.uint8) if mask.dtype != np.uint16 else mask,)
        return out


def _numpy(x):
    if hasattr(x, "detach"):
        return x.detach().cpu().numpy()
    return x


def _image(image):
    """A PIL image, array or (C, H, W) tensor as something RGBImageField takes."""
    if hasattr(image, "detach"):
        arr = image.detach().cpu().numpy()
        if arr.ndim == 3 and arr.shape[0] in (1, 3):
            arr = np.ascontiguousarray(arr.transpose(1, 2, 0))
        if arr.dtype != np.uint8:
            arr = (np.clip(arr, 0, 1) * 255).round().astype(np.uint8) if arr.dtype.kind == "f" else arr.astype(np.uint8)
        return arr
    return image


class CocoDetection:
    """COCO annotations (a JSON file) and their image folder as an indexed
    dataset for ``DatasetWriter.from_indexed_dataset`` with fields
    ``fields()``: (image path, boxes (N, 4) float32 xyxy, labels (N,) int64
    category ids[, mask (H, W) class map]). Crowd annotations are left out
    of the boxes. With masks=True, polygons and RLE (compressed or not) are
    rasterized into a class map (uint8, uint16 when a category id is above
    255): 0 is background; later annotations paint over earlier ones.
    Images are read by the writer's Go threads."""

    def __init__(self, annotation_file, image_root, masks=False):
        self.annotation_file = os.fspath(annotation_file)
        self.image_root = os.fspath(image_root)
        self.masks = bool(masks)
        with open(self.annotation_file) as f:
            coco = json.load(f)
        self.images = sorted(coco.get("images", []), key=lambda im: im["id"])
        self.categories = {c["id"]: c.get("name", str(c["id"])) for c in coco.get("categories", [])}
        index = {im["id"]: k for k, im in enumerate(self.images)}
        self.annotations = [[] for _ in self.images]
        for a in coco.get("annotations", []):
            if a.get("image_id") not in index:
                raise ValueError(f"{self.annotation_file}: annotation {a.get('id')} refers to image id "
                                 f"{a.get('image_id')!r}, which is not in its images")
            if self.categories and a.get("category_id") not in self.categories:
                raise ValueError(f"{self.annotation_file}: annotation {a.get('id')} has category id "
                                 f"{a.get('category_id')!r}, which is not in its categories")
            self.annotations[index[a["image_id"]]].append(a)
        top = max(self.categories, default=0)
        self.mask_dtype = np.uint8 if top < 256 else np.uint16

    def fields(self, max_resolution=None, write_mode="jpg", jpeg_quality=90):
        """The writer's fields for this dataset, in item order."""
        from .fields import RGBImageField
        f = {"image": RGBImageField(write_mode=write_mode, max_resolution=max_resolution, jpeg_quality=jpeg_quality),
             "boxes": RaggedArrayField(np.float32, (4,), follows="image", coords="xyxy"),
             "labels": RaggedArrayField(np.int64, (), follows="boxes")}
        if self.masks:
            f["mask"] = MaskField("image", dtype=self.mask_dtype)
        return f

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        from .writer import _ImagePath
        im = self.images[i]
        anns = self.annotations[i]
        w, h = int(im["width"]), int(im["height"])
        boxes, labels = [], []
        for a in anns:
            if a.get("iscrowd", 0):
                continue
            x, y, bw, bh = (float(v) for v in a["bbox"])
            # COCO boxes may poke a little past the image: clip them to it.
            x0, y0 = min(max(x, 0.0), w), min(max(y, 0.0), h)
            x1, y1 = min(max(x + bw, 0.0), w), min(max(y + bh, 0.0), h)
            boxes.append((x0, y0, x1, y1))
            labels.append(int(a["category_id"]))
        out = (_ImagePath(os.path.join(self.image_root, im["file_name"])),
               np.asarray(boxes, dtype=np.float32).reshape(-1, 4), np.asarray(labels, dtype=np.int64))
        if self.masks:
            mask = np.zeros((h, w), dtype=self.mask_dtype)
            for a in anns:
                m = _annotation_mask(a, w, h)
                if m is not None:
                    mask[m] = a["category_id"]
            out += (mask,)
        return out


def _annotation_mask(ann, w, h):
    """A boolean (h, w) mask of a COCO segmentation (polygons or RLE)."""
    seg = ann.get("segmentation")
    if not seg:
        return None
    if isinstance(seg, list):
        m = np.zeros((h, w), dtype=bool)
        for poly in seg:
            m |= rasterize_polygon(np.asarray(poly, dtype=np.float64).reshape(-1, 2), w, h)
        return m
    size = seg.get("size", [h, w])
    if list(size) != [h, w]:
        raise ValueError(f"annotation {ann.get('id')}: RLE of size {size}, its image is {[h, w]}")
    counts = seg["counts"]
    if isinstance(counts, (str, bytes)):
        counts = _rle_string_counts(counts.encode() if isinstance(counts, str) else counts)
    return _rle_decode(counts, h, w)


def rasterize_polygon(points, w, h):
    """The (h, w) boolean mask of a polygon ((n, 2) x, y in pixels): a pixel
    is inside when its centre is (even-odd rule)."""
    m = np.zeros((h, w), dtype=bool)
    if len(points) < 3:
        return m
    x0, y0 = points[:, 0], points[:, 1]
    x1, y1 = np.roll(x0, -1), np.roll(y0, -1)
    for y in range(max(0, int(np.floor(y0.min()))), min(h, int(np.ceil(y0.max())) + 1)):
        cy = y + 0.5
        cross = (y0 <= cy) != (y1 <= cy)
        if not cross.any():
            continue
        xs = np.sort(x0[cross] + (cy - y0[cross]) * (x1[cross] - x0[cross]) / (y1[cross] - y0[cross]))
        for a, b in zip(xs[0::2], xs[1::2]):
            # pixel centres x + 0.5 in [a, b)
            lo, hi = max(0, int(np.ceil(a - 0.5))), min(w, int(np.ceil(b - 0.5)))
            if hi > lo:
                m[y, lo:hi] = True
    return m


def _rle_string_counts(s):
    """COCO's compressed RLE string (pycocotools' rleFrString) as run lengths."""
    counts, p = [], 0
    while p < len(s):
        x, k, more = 0, 0, True
        while more:
            c = s[p] - 48
            x |= (c & 0x1F) << (5 * k)
            more = bool(c & 0x20)
            p += 1
            k += 1
            if not more and (c & 0x10):
                x |= -1 << (5 * k)
        if len(counts) > 2:
            x += counts[-2]
        counts.append(x)
    return counts


def _rle_decode(counts, h, w):
    """Run lengths (alternately 0s and 1s, column-major) as an (h, w) mask."""
    flat = np.zeros(h * w, dtype=bool)
    pos, val = 0, False
    for c in counts:
        if val:
            flat[pos:pos + c] = True
        pos += c
        val = not val
    if pos != h * w:
        raise ValueError(f"RLE covers {pos} pixels, its {h}x{w} image has {h * w}")
    return flat.reshape(w, h).T
