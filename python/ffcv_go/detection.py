"""Detection and segmentation: targets in a loader's batches, torchvision's
target format, and datasets from COCO annotations or (image, target) items.

Batches: a ``RaggedDecoder`` output is a ``Ragged(data, counts)``: data
(B, max_rows, *row_shape) zero past each sample's counts (B,) rows; a
``MaskDecoder`` output is (B, H, W) at the size of the image it follows.
"""
import inspect
import json
import math
import os

import numpy as np

from .fields.mask import MaskDecoder, MaskField
from .fields.ragged import PolygonMaskDecoder, Ragged, RaggedArrayField, RaggedDecoder
from .utils import _raise_at_item

__all__ = ["Ragged", "to_torchvision_images", "to_torchvision_targets", "CocoDetection", "TargetDataset",
           "YoloDataset", "COCO_PERSON_KEYPOINT_FLIP"]

#: ``RaggedDecoder(flip_indices=)`` for COCO's 17 person keypoints (nose,
#: eyes, ears, shoulders, elbows, wrists, hips, knees, ankles; left before
#: right): a horizontal flip swaps each left point with its right one.
COCO_PERSON_KEYPOINT_FLIP = (0, 2, 1, 4, 3, 6, 5, 8, 7, 10, 9, 12, 11, 14, 13, 16, 15)


def to_torchvision_targets(boxes, labels, counts=None, masks=None, instance_masks=None):
    """Per-sample target dicts for torchvision's detection models:
    ``[{"boxes": (n_i, 4) float, "labels": (n_i,) int64[, "masks": (n_i, H, W) uint8]}]``.

    boxes and labels are ``Ragged`` batches (or padded tensors with counts
    (B,) given). Masks come from one of:

    - ``instance_masks``, a (B, H, W) batch of an instance map decoded with
      ``MaskDecoder(instances=<boxes output>)``: box j's mask is the pixels
      of value j + 1, its own object only (Mask R-CNN's targets);
    - ``masks``, a (B, H, W) class map: box j's mask is every pixel of its
      label, the union of all objects of that class (for semantic maps;
      overlapping objects of one class are not told apart)."""
    if isinstance(boxes, Ragged):
        boxes, bcounts = boxes
        counts = bcounts if counts is None else counts
    if isinstance(labels, Ragged):
        labels, lcounts = labels
        counts = lcounts if counts is None else counts
    if counts is None:
        raise ValueError("to_torchvision_targets: counts are needed with padded tensors")
    if masks is not None and instance_masks is not None:
        raise ValueError("to_torchvision_targets: give masks (a class map) or instance_masks, not both")
    out = []
    for i, n in enumerate(counts.tolist()):
        t = {"boxes": boxes[i, :n], "labels": labels[i, :n].reshape(n).long()}
        if instance_masks is not None:
            ids = _arange_like(instance_masks, n)
            t["masks"] = (instance_masks[i][None] == ids[:, None, None]).to(_torch().uint8)
        elif masks is not None:
            t["masks"] = (masks[i][None] == t["labels"][:, None, None].to(masks.dtype)).to(_torch().uint8)
        out.append(t)
    return out


def to_torchvision_images(images):
    """A batch of images as torchvision's detection models
    (``fasterrcnn_*``, ``maskrcnn_*``, ``retinanet_*``, ...) take them: a
    list of (C, H, W) float32 tensors in [0, 1], on the batch's device.

    images is the loader's (B, H, W, C) uint8 batch, or (B, C, H, W) after
    ``ToTorchImage``; a numpy array is taken too. Float batches are taken as
    already scaled to [0, 1] (the models normalize with ImageNet's mean and
    std themselves: leave ``NormalizeImage`` out)."""
    torch = _torch()
    x = images if isinstance(images, torch.Tensor) else torch.from_numpy(np.asarray(images))
    if x.ndim != 4:
        raise ValueError(f"to_torchvision_images: a (B, H, W, C) or (B, C, H, W) batch, got shape {tuple(x.shape)}")
    if not _channels_first(x):
        x = x.permute(0, 3, 1, 2)
    if x.dtype == torch.uint8:
        x = x.float().div_(255)
    elif x.is_floating_point():
        x = x.float()
    else:
        raise TypeError(f"to_torchvision_images: uint8 or float images, got {x.dtype}")
    return list(x.unbind(0))


def _channels_first(x):
    """Whether a 4-d image batch is (B, C, H, W): ToTorchImage's is, with
    channels innermost in memory (channels_last); the loader's own is
    (B, H, W, C)."""
    c_first, c_last = x.shape[1] in (1, 3, 4), x.shape[-1] in (1, 3, 4)
    if c_first != c_last:
        return c_first
    return x.stride(1) == 1 and x.stride(-1) != 1  # ToTorchImage's permuted view


def _torch():
    import torch
    return torch


def _stage_name(op):
    """A Python stage as the user wrote it: a torch module or function by
    its name (and the member of a container that may move pixels)."""
    from .transforms.ops import ModuleWrapper
    from .transforms.photometric import _pixel_mover
    if type(op) is not ModuleWrapper:
        return type(op).__name__
    bad = _pixel_mover(op.module)
    name = _callable_name(op.module)
    return name if bad is None or bad is op.module else f"{name} with {_callable_name(bad)}"


def _callable_name(fn):
    """A function by its name, anything else by its class's."""
    return fn.__name__ if inspect.isfunction(fn) or inspect.ismethod(fn) else type(fn).__name__


def _arange_like(batch, n):
    """1..n in the dtype and device of batch (an instance map's ids)."""
    torch = _torch()
    return torch.arange(1, n + 1, device=batch.device).to(batch.dtype)


# ---- the loader's side: targets told which output they follow -------------

def _link_targets(outputs, plans, reader):
    """Completes the Go spec of every ragged and mask decoder with the
    geometry it follows (the image output's Go operations, keys and seeds
    included) and, for rows that go with boxes (labels, keypoints, instance
    ids), the boxes field and its filter.
    outputs are the loader's (field index, name, ops, view), plans their plans."""
    named = {name: (fidx, ops, plan) for (fidx, name, ops, _), plan in zip(outputs, plans)}
    _link_pasters(outputs, plans, reader)

    def handler(fidx):
        return reader.handlers[reader.field_names[fidx]]

    def decoder(name):
        ops = named[name][1]
        return ops[0] if ops else None

    def follows_of(name, dec, field):
        f = dec.follows
        if f == "auto":
            f = field.follows if field.follows in named else None
        if f is not None and f not in named:
            raise ValueError(f'output "{name}" follows "{f}", which is not an output of this loader '
                             f'(outputs: {", ".join(named)})')
        return f

    def image_of(name):
        """The image output that the boxes output `name` follows (None: none)."""
        dec, field = decoder(name), handler(named[name][0])
        if not isinstance(dec, RaggedDecoder) or getattr(field, "coords", None) != "xyxy":
            return None
        return follows_of(name, dec, field)

    def geometry(name, image):
        fidx, ops, plan = named[image]
        if type(handler(fidx)).__name__ != "RGBImageField" or plan.go_ops is None:
            raise ValueError(f'output "{name}" follows "{image}", which is not an image output decoded in Go')
        from .pipeline.pipeline import GoTail
        if any(isinstance(s, GoTail) for s in plan.steps):
            raise ValueError(f'output "{name}" follows "{image}", whose built-in operations are split by a Python '
                             'stage: targets follow only the built-in operations right after the image decoder')
        for s in plan.steps:
            if not s.op._keeps_pixels(s.in_state):
                raise ValueError(
                    f'output "{name}" follows "{image}", whose operation {s.index} ({_stage_name(s.op)}) runs in '
                    f'Python and may move its pixels, where "{name}" would not follow them. After the built-in '
                    'operations an image that targets follow takes only photometric stages: ffcv_go\'s tensor '
                    'operations, torchvision\'s photometric transforms, or your code wrapped in '
                    'ffcv_go.transforms.Photometric(...) if it changes pixel values only')
        return {"image": fidx, "ops": plan.go_ops}

    def boxes_for(name, wanted, image, rows=None):
        """The boxes output whose rows `name` (following image; rows per
        sample, None for a mask) goes with: wanted names it, or 'auto' picks
        the only one that follows the same image with as many rows in every
        sample."""
        def same_rows(b):
            return rows is None or np.array_equal(rows, reader.metadata[f"f{named[b][0]}"]["rows"])

        if wanted == "auto":
            found = [b for b in named if b != name and image_of(b) == image and same_rows(b)]
            return found[0] if len(found) == 1 else None
        if wanted not in named or image_of(wanted) is None:
            raise ValueError(f'output "{name}": boxes="{wanted}" is not a boxes output of this loader '
                             f'(a RaggedArrayField with coords="xyxy")')
        if image_of(wanted) != image:
            raise ValueError(f'output "{name}" follows "{image}" and its boxes "{wanted}" follow '
                             f'"{image_of(wanted)}": both must follow the same image output')
        if not same_rows(wanted):
            other = reader.metadata[f"f{named[wanted][0]}"]["rows"]
            bad = int(np.flatnonzero(rows != other)[0]) if len(rows) == len(other) else 0
            raise ValueError(f'output "{name}": its rows cannot go with the boxes of "{wanted}": sample {bad} '
                             'has another number of rows in each field')
        return wanted

    def polygons_of(name, dec):
        """The index of the polygon field dec (a boxes decoder) names, or None."""
        p = getattr(dec, "polygons", None)
        if p is None:
            return None
        names = list(reader.field_names)
        f = reader.handlers.get(p) if p in names else None
        if not isinstance(f, RaggedArrayField) or f.coords != "polygon":
            raise ValueError(f'output "{name}": polygons="{p}" is not a polygon field of this file '
                             f'(a RaggedArrayField with coords="polygon")')
        return names.index(p)

    def with_boxes(spec, boxes):
        spec.update(boxes=named[boxes][0], **decoder(boxes).filter)
        p = polygons_of(boxes, decoder(boxes))
        if p is not None:
            spec["polygons"] = p

    for (fidx, name, ops, _), plan in zip(outputs, plans):
        dec = ops[0] if ops else None
        if not isinstance(dec, (RaggedDecoder, MaskDecoder, PolygonMaskDecoder)) or plan.go_ops is None:
            continue
        field = handler(fidx)
        spec = dict(plan.go_ops[0])
        if isinstance(dec, RaggedDecoder):
            plan.finish = dec._split
            if dec.polygons is not None and field.coords != "xyxy":
                raise ValueError(f'output "{name}": polygons= gives boxes their polygons\' bounds: it belongs on the '
                                 'boxes output (a RaggedArrayField with coords="xyxy"), whose rows the others follow')
        target = follows_of(name, dec, field)
        if target is None:
            if isinstance(dec, PolygonMaskDecoder):
                raise ValueError(f'output "{name}": a PolygonMaskDecoder needs the image output it follows '
                                 f'(follows="...")')
            if isinstance(dec, RaggedDecoder) and dec.polygons is not None:
                raise ValueError(f'output "{name}": polygons give boxes that follow an image output')
            if isinstance(dec, MaskDecoder):
                raise ValueError(f'output "{name}": a MaskDecoder needs the image output it follows '
                                 f'(follows="...")')
            if isinstance(dec, RaggedDecoder) and dec.flip_indices is not None:
                raise ValueError(f'output "{name}": flip_indices need the image output the points follow')
            continue
        tfield = handler(named[target][0])
        if isinstance(decoder(target), RaggedDecoder):
            # Rows that go with a boxes output (labels): its image's geometry and its kept rows.
            if isinstance(dec, (MaskDecoder, PolygonMaskDecoder)) or field.coords or \
                    getattr(tfield, "coords", None) != "xyxy":
                raise ValueError(f'output "{name}" follows "{target}": only rows without coordinates follow '
                                 f'a boxes output (a RaggedArrayField with coords="xyxy"); points follow the '
                                 f'image and name their boxes with boxes="{target}"')
            image = image_of(target)
            if image is None:
                continue  # the boxes follow no image: nothing is dropped
            spec["geometry"] = geometry(name, image)
            with_boxes(spec, target)
        else:
            spec["geometry"] = geometry(name, target)
            if isinstance(dec, MaskDecoder):
                if dec.instances is not None:
                    with_boxes(spec, boxes_for(name, dec.instances, target))
                    spec["instances"] = spec.pop("boxes")
            elif isinstance(dec, PolygonMaskDecoder):
                if field.coords != "polygon":
                    raise ValueError(f'output "{name}": a PolygonMaskDecoder decodes a polygon field '
                                     f'(coords="polygon"), not coords={field.coords!r}')
                rows = reader.metadata[f"f{fidx}"]["rows"]
                boxes = boxes_for(name, dec.boxes, target, rows)
                if boxes is None:
                    raise ValueError(f'output "{name}": give boxes= the boxes output its polygons go with '
                                     f'(none, or several, follow "{target}" with as many rows)')
                with_boxes(spec, boxes)
                spec["max_rows"] = decoder(boxes)._rows()
            elif field.coords == "xyxy":
                spec.update(dec.filter)
                p = polygons_of(name, dec)
                if p is not None:
                    spec["polygons"] = p
            else:
                rows = reader.metadata[f"f{fidx}"]["rows"]
                boxes = None if dec.boxes is None else boxes_for(name, dec.boxes, target, rows)
                if boxes is not None:
                    with_boxes(spec, boxes)
                if dec.flip_indices is not None:
                    spec["flip_indices"] = dec.flip_indices
        geo = spec.get("geometry")
        if isinstance(dec, RaggedDecoder) and dec.max_rows is None and geo and geo["ops"][0].get("op") == "mosaic":
            raise ValueError(f'output "{name}" follows "{target}", whose MosaicRGBImageDecoder gathers the rows of '
                             f'{geo["ops"][0]["n"]} samples: give its RaggedDecoder max_rows (rows past it are '
                             f'dropped), the same for every output that goes with these boxes')
        plan.go_ops[0] = spec


def _link_pasters(outputs, plans, reader):
    """Gives each CopyPaste and CutMix of an image pipeline its fields'
    indices and the Go operations before it (which it replays to find the
    instances)."""
    names = list(reader.field_names)
    cutmixes = {}  # seed -> linked CutMix spec
    for (fidx, name, _, _), plan in zip(outputs, plans):
        for k, spec in enumerate(plan.go_ops or []):
            op = {"copy_paste": "CopyPaste", "cut_mix": "CutMix"}.get(spec.get("op"))
            if op is None or not isinstance(spec.get("boxes"), str):
                continue
            spec = dict(spec)
            for key, coords in (("boxes", "xyxy"), ("polygons", "polygon")):
                if key not in spec:
                    continue
                f = reader.handlers.get(spec[key]) if spec[key] in names else None
                if not isinstance(f, RaggedArrayField) or f.coords != coords:
                    raise ValueError(f'output "{name}": {op}({key}="{spec[key]}"): not a field of this file '
                                     f'with coords="{coords}"')
                spec[key] = names.index(spec[key])
            spec["geometry"] = {"image": fidx, "ops": plan.go_ops[:k]}
            plan.go_ops[k] = spec
            if op == "CutMix" and "seed" in spec:
                cutmixes[spec["seed"]] = spec
    # A LabelCutMix reports the CutMix of an image output with its seed.
    for (_, name, _, _), plan in zip(outputs, plans):
        for k, spec in enumerate(plan.go_ops or []):
            of = spec.get("of") if spec.get("op") == "label" else None
            if not of or of.get("op") != "cut_mix" or not isinstance(of.get("boxes"), str):
                continue
            linked = cutmixes.get(spec.get("seed"))
            if linked is None or any(linked.get(a) != of.get(a) for a in ("p", "beta", "num_areas")):
                raise ValueError(f'output "{name}": LabelCutMix(seed={spec.get("seed")}) reports a CutMix of an '
                                 f'image output with the same arguments and seed: this loader has none')
            plan.go_ops[k] = {**spec, "of": {a: v for a, v in linked.items() if a != "seed"}}


# ---- datasets ---------------------------------------------------------------

class TargetDataset:
    """An indexed dataset of (image, target dict) items -- torchvision's
    detection and segmentation datasets, ``tv_tensors`` included -- as items
    for ``DatasetWriter.from_indexed_dataset`` with fields (image, boxes,
    labels[, mask]): boxes (N, 4) float32 xyxy in pixels, clipped to the
    image; labels (N,) int64; mask (H, W) (needs ``mask_key``).

    Boxes are read in their ``tv_tensors.BoundingBoxes.format`` when they
    carry one, else in ``box_format`` ('xyxy', 'xywh' as COCO, or
    'cxcywh'). The mask is an (H, W) class map, or torchvision's (N, H, W)
    per-object masks: with ``instance_masks=True`` they become an instance
    map (object k painted k + 1, later objects over earlier ones; write it
    to a uint16 ``MaskField`` and decode with ``MaskDecoder(instances=)``),
    otherwise a class map (each object painted with its label). Values are
    never wrapped: a map that does not fit the MaskField's dtype is refused
    when it is written. An item without boxes, labels or masks (torchvision's
    COCO wrapper gives an image without annotations none) has no objects:
    an empty map. Errors name the item's index."""

    def __init__(self, dataset, boxes_key="boxes", labels_key="labels", mask_key=None, box_format="xyxy",
                 instance_masks=False):
        if box_format not in _BOX_FORMATS:
            raise ValueError(f"box_format {box_format!r} must be one of {', '.join(map(repr, _BOX_FORMATS))}")
        self.dataset, self.boxes_key, self.labels_key = dataset, boxes_key, labels_key
        self.mask_key, self.box_format = mask_key, box_format
        self.instance_masks = bool(instance_masks)

    def __len__(self):
        return len(self.dataset)

    def __getitem__(self, i):
        try:
            return self._item(i)
        except Exception as e:  # noqa: BLE001 - re-raised, naming the item
            _raise_at_item(e, i)

    def _item(self, i):
        image, target = self.dataset[i]
        if not isinstance(target, dict):
            raise TypeError(f"item {i}: the target is a {type(target).__name__}, not a dict")
        image = _image(image)
        w, h = _size(image)
        raw = target.get(self.boxes_key, np.zeros((0, 4)))
        fmt = getattr(getattr(raw, "format", None), "name", self.box_format).lower()
        if fmt not in _BOX_FORMATS:
            raise ValueError(f"item {i}: boxes in format {fmt!r}, not one of {', '.join(_BOX_FORMATS)}")
        boxes = np.asarray(_numpy(raw), dtype=np.float64).reshape(-1, 4)
        boxes = _clip_xyxy(_as_xyxy(boxes, fmt), w, h)
        labels = np.asarray(_numpy(target.get(self.labels_key, np.zeros(0))), dtype=np.int64).reshape(-1)
        if len(labels) != len(boxes):
            raise ValueError(f"item {i}: {len(boxes)} boxes and {len(labels)} labels")
        out = (image, boxes.astype(np.float32), labels)
        if self.mask_key is not None:
            if self.mask_key not in target:
                # torchvision's COCO wrapper gives an image without objects no masks: no object masks.
                target = {**target, self.mask_key: np.zeros((0, h, w), bool)}
            mask = np.asarray(_numpy(target[self.mask_key]))
            if mask.ndim == 3:
                if len(mask) != len(boxes):
                    raise ValueError(f"item {i}: {len(mask)} object masks and {len(boxes)} boxes")
                values = np.arange(1, len(mask) + 1) if self.instance_masks else labels
                mask = _paint(mask.astype(bool), values, (h, w))
            elif self.instance_masks:
                raise ValueError(f"item {i}: instance_masks needs (N, H, W) object masks, got shape {mask.shape}")
            if mask.shape != (h, w):
                raise ValueError(f"item {i}: the mask is {mask.shape[1]}x{mask.shape[0]}, its image {w}x{h}")
            out += (mask,)
        return out


_BOX_FORMATS = ("xyxy", "xywh", "cxcywh")


def _as_xyxy(boxes, fmt):
    if fmt == "xywh":
        return np.concatenate([boxes[:, :2], boxes[:, :2] + boxes[:, 2:]], axis=1)
    if fmt == "cxcywh":
        return np.concatenate([boxes[:, :2] - boxes[:, 2:] / 2, boxes[:, :2] + boxes[:, 2:] / 2], axis=1)
    return boxes


def _clip_xyxy(boxes, w, h):
    """Boxes clipped to a w×h image, as COCO's poke a little past it."""
    return np.clip(boxes, 0, [w, h, w, h])


def _paint(masks, values, shape):
    """(N, H, W) boolean masks painted with values into an (H, W) map, later over earlier."""
    top = max([0, *values]) if len(values) else 0
    out = np.zeros(shape, dtype=np.uint8 if top < 256 else np.uint16 if top < 65536 else np.int64)
    for m, v in zip(masks, values):
        out[m] = v
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


def _size(image):
    """(width, height) of an image as _image returns it."""
    if isinstance(image, np.ndarray):
        return image.shape[1], image.shape[0]
    if hasattr(image, "size") and not callable(image.size):
        return tuple(image.size)
    raise TypeError(f"TargetDataset: cannot tell the size of a {type(image).__name__} image")


class CocoDetection:
    """COCO annotations (a JSON file) and their image folder as an indexed
    dataset for ``DatasetWriter.from_indexed_dataset`` with fields
    ``fields()``: (image path, boxes (N, 4) float32 xyxy, labels (N,) int64
    category ids[, mask (H, W)]). Crowd annotations are left out of the
    boxes. Images are read by the writer's Go threads.

    Masks rasterize polygons exactly as pycocotools does, and decode RLE
    (compressed or not):

    - ``masks=True`` (or 'class'): a class map, each object painted with its
      category id over earlier ones, 0 background, crowd regions painted
      ``crowd_index`` (255 by default: the ``ignore_index`` to give the
      loss; it must not be a category id). uint8, uint16 when an id is
      above 255.
    - ``masks='instances'``: a uint16 instance map, the non-crowd object of
      box k painted k + 1 over earlier ones, crowd regions 0; decode it with
      ``MaskDecoder(instances="boxes")`` for Mask R-CNN's per-box masks."""

    def __init__(self, annotation_file, image_root, masks=False, crowd_index=255):
        if masks not in (False, True, "class", "instances"):
            raise ValueError(f"masks {masks!r} must be False, True, 'class' or 'instances'")
        self.annotation_file = os.fspath(annotation_file)
        self.image_root = os.fspath(image_root)
        self.masks = "class" if masks is True else masks
        self.crowd_index = int(crowd_index)
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
        if self.masks == "class" and self.crowd_index in self.categories:
            raise ValueError(f"{self.annotation_file}: crowd_index {self.crowd_index} is a category id; "
                             "give CocoDetection another crowd_index")
        top = max([*self.categories, self.crowd_index if self.masks == "class" else 0], default=0)
        self.mask_dtype = np.uint16 if self.masks == "instances" or top > 255 else np.uint8

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
        objects = [a for a in anns if not a.get("iscrowd", 0)]
        boxes = _clip_xyxy(_as_xyxy(np.asarray([a["bbox"] for a in objects], np.float64).reshape(-1, 4), "xywh"), w, h)
        labels = np.asarray([int(a["category_id"]) for a in objects], dtype=np.int64)
        out = (_ImagePath(os.path.join(self.image_root, im["file_name"])), boxes.astype(np.float32), labels)
        if self.masks:
            mask = np.zeros((h, w), dtype=self.mask_dtype)
            if self.masks == "instances":
                painted = [(a, k + 1) for k, a in enumerate(objects)]
            else:
                painted = [(a, self.crowd_index if a.get("iscrowd", 0) else a["category_id"]) for a in anns]
            for a, value in painted:
                m = _annotation_mask(a, w, h)
                if m is not None:
                    mask[m] = value
            out += (mask,)
        return out


class YoloDataset:
    """A split of a YOLO dataset in the Ultralytics layout (a dataset YAML;
    image folders or image list files; one label file per image, found by
    replacing the image path's last ``/images/`` folder by ``/labels/`` and
    its extension by ``.txt``) as an indexed dataset for
    ``DatasetWriter.from_indexed_dataset`` with fields ``fields()``: (image
    path, boxes (N, 4) float32 xyxy in pixels, labels (N,) int64 class
    ids[, polygons (N, segment_points, 2) float32 in pixels (segment)][,
    keypoints (N, K, D) float32 in pixels, visibility kept (pose)]).

    The YAML and the label files are read by Go threads (num_workers, < 1:
    every CPU) when the dataset is made; images are read by the writer's Go
    threads. task: 'detect' (``cls cx cy w h``; a polygon line gives its
    bounding box, as in Ultralytics), 'segment' (``cls x1 y1 ... xn yn``:
    the box around the polygon, and the polygon resampled in Go to
    ``segment_points`` points (every vertex kept, the new points spread
    along the edges by length; Ultralytics resamples to 1000) as a
    ``RaggedArrayField(coords='polygon')``: decode it with ``RaggedDecoder``,
    give the boxes' decoder ``polygons="polygons"``, and rasterize masks
    with ``PolygonMaskDecoder`` (``ratio=1`` for a full-size instance map,
    ``ratio=4`` for Ultralytics' masks)) or 'pose' (``cls cx
    cy w h`` and ``kpt_shape`` points; ``flip_indices`` is the YAML's
    ``flip_idx`` for ``RaggedDecoder(flip_indices=)``).

    An image without a label file, or with an empty one, has no objects (a
    background image, as in Ultralytics): ``missing_labels`` and
    ``backgrounds`` count them. A bad label file (wrong number of columns,
    a class id outside ``names``, a coordinate outside [0, 1] by more than
    0.01, a polygon of fewer than 3 points), an unreadable image or a JPEG
    whose EXIF orientation turns it (Ultralytics reads its labels on the
    turned image; the writer stores pixels as they are) makes its item a
    value the writer refuses, naming the label file and line or the image:
    ``errors='skip'`` in ``from_indexed_dataset`` leaves it out and lists it
    in the WriteReport, ``errors='raise'`` (its default) fails the write.
    Label files in a split folder's label folders without their image are
    refused here (``errors='raise'``) or listed in ``orphan_labels``."""

    def __init__(self, yaml_path, split="train", task="detect", errors="raise", num_workers=-1,
                 segment_points=1000):
        from . import _lib
        if task not in ("detect", "segment", "pose"):
            raise ValueError(f"task {task!r} must be 'detect', 'segment' or 'pose'")
        if int(segment_points) < 3:
            raise ValueError(f"segment_points {segment_points!r} must be at least 3")
        self.segment_points = int(segment_points)
        if errors not in ("raise", "skip"):
            raise ValueError(f"errors {errors!r} must be 'raise' or 'skip'")
        self.yaml_path, self.split, self.task = os.fspath(yaml_path), split, task
        spec = {"yaml": self.yaml_path, "split": split, "task": task, "num_workers": int(num_workers),
                "segment_points": self.segment_points if task == "segment" else 0}
        scan = _lib.call_json("ffcv_yolo_scan", json.dumps(spec).encode(), context=self.yaml_path)
        self.names = scan["names"]
        self.kpt_shape = tuple(scan["kpt_shape"]) if task == "pose" else None
        self.flip_indices = tuple(scan["flip_idx"]) if scan.get("flip_idx") else None
        self.items = scan["images"]
        self.orphan_labels = scan.get("orphans") or []
        if self.orphan_labels and errors == "raise":
            more = f" and {len(self.orphan_labels) - 1} more" if len(self.orphan_labels) > 1 else ""
            raise ValueError(f"{self.orphan_labels[0]}: a label file without its image{more} "
                             "(give errors='skip' to leave them out)")
        good = [it for it in self.items if not it.get("error")]
        self.missing_labels = sum(1 for it in good if it.get("missing"))
        self.backgrounds = sum(1 for it in good if not it["classes"])

    def fields(self, max_resolution=None, write_mode="jpg", jpeg_quality=90, keep_source_jpeg="coefficients"):
        """The writer's fields for this dataset, in item order. A JPEG that
        needs no resize is kept (keep_source_jpeg): by default its
        coefficients, with restart markers spliced in, which decode to
        exactly the pixels Ultralytics reads from the file and let a mosaic
        tile decode only its visible part; keep_source_jpeg=True keeps the
        bytes."""
        from .fields import RGBImageField
        f = {"image": RGBImageField(write_mode=write_mode, max_resolution=max_resolution, jpeg_quality=jpeg_quality,
                                    keep_source_jpeg=keep_source_jpeg),
             "boxes": RaggedArrayField(np.float32, (4,), follows="image", coords="xyxy"),
             "labels": RaggedArrayField(np.int64, (), follows="boxes")}
        if self.task == "segment":
            f["polygons"] = RaggedArrayField(np.float32, (self.segment_points, 2), follows="image", coords="polygon")
        if self.task == "pose":
            f["keypoints"] = RaggedArrayField(np.float32, self.kpt_shape, follows="image", coords="xy")
        return f

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        from .writer import _ImagePath, _Refused
        it = self.items[i]
        n = 3 if self.task == "detect" else 4
        if it.get("error"):
            # A value the boxes field refuses: errors='skip' leaves the image out and reports it.
            bad = _Refused(ValueError(it["error"]), it["label"] if it["label"] in it["error"] else it["image"])
            return (_ImagePath(it["image"]), bad) + (None,) * (n - 2)
        boxes = np.asarray(it["boxes"], np.float64).reshape(-1, 4).astype(np.float32)
        out = (_ImagePath(it["image"]), boxes, np.asarray(it["classes"], np.int64))
        if self.task == "segment":
            polys = np.asarray(it.get("polygons") or [], np.float64)
            out += (polys.reshape(-1, self.segment_points, 2).astype(np.float32),)
        if self.task == "pose":
            pts = np.asarray(it.get("keypoints") or [], np.float64)
            out += (pts.reshape((-1, *self.kpt_shape)).astype(np.float32),)
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
    """The (h, w) boolean mask of a polygon ((n, 2) x, y in pixels), as
    pycocotools rasterizes COCO's polygons (rleFrPoly): the outline traced
    at 5x resolution, each column filled between its crossings."""
    return _rle_decode(_rle_from_polygon(np.asarray(points, dtype=np.float64).reshape(-1).tolist(), h, w), h, w)


def _rle_from_polygon(xy, h, w):
    """pycocotools' rleFrPoly: run lengths (column-major) of polygon xy (x0, y0, x1, ...)."""
    scale = 5.0
    k = len(xy) // 2
    if k < 3:
        return [h * w]
    # C's (int)(v + .5): truncation toward zero.
    x = [int(scale * xy[2 * j] + .5) for j in range(k)] + [int(scale * xy[0] + .5)]
    y = [int(scale * xy[2 * j + 1] + .5) for j in range(k)] + [int(scale * xy[1] + .5)]
    u, v = [], []  # the outline's points at 5x, densely
    for j in range(k):
        xs, xe, ys, ye = x[j], x[j + 1], y[j], y[j + 1]
        dx, dy = abs(xe - xs), abs(ys - ye)
        flip = (dx >= dy and xs > xe) or (dx < dy and ys > ye)
        if flip:
            xs, xe, ys, ye = xe, xs, ye, ys
        if dx >= dy:
            s = (ye - ys) / dx if dx else 0.0
            for d in range(dx + 1):
                t = dx - d if flip else d
                u.append(t + xs)
                v.append(int(ys + s * t + .5))
        else:
            s = (xe - xs) / dy
            for d in range(dy + 1):
                t = dy - d if flip else d
                v.append(t + ys)
                u.append(int(xs + s * t + .5))
    starts = []  # where a column's run changes, at pixel resolution (column-major offsets)
    for j in range(1, len(u)):
        if u[j] == u[j - 1]:
            continue
        xd = (float(u[j] if u[j] < u[j - 1] else u[j] - 1) + .5) / scale - .5
        if math.floor(xd) != xd or xd < 0 or xd > w - 1:
            continue
        yd = (float(v[j] if v[j] < v[j - 1] else v[j - 1]) + .5) / scale - .5
        yd = min(max(yd, 0.0), float(h))
        starts.append(int(xd) * h + int(math.ceil(yd)))
    starts.append(h * w)
    starts.sort()
    runs, prev = [], 0
    for a in starts:
        runs.append(a - prev)
        prev = a
    counts, j = [runs[0]], 1
    while j < len(runs):  # a zero-length run merges its neighbours
        if runs[j] > 0:
            counts.append(runs[j])
            j += 1
        else:
            j += 1
            if j < len(runs):
                counts[-1] += runs[j]
                j += 1
    return counts


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
