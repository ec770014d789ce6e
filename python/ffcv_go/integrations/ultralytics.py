"""Ultralytics YOLO's trainers and validators on a .beton.

A .beton written from ``ffcv_go.detection.YoloDataset`` (fields ``image``,
``boxes``, ``labels``, and ``polygons`` for segment or ``keypoints`` for pose)
feeds Ultralytics' ``DetectionTrainer``, ``SegmentationTrainer`` and
``PoseTrainer`` (and their validators) in place of their dataset and
DataLoader:

    from ultralytics import YOLO
    from ultralytics.models.yolo.detect import DetectionTrainer
    from ffcv_go.integrations.ultralytics import beton_trainer, write_data_yaml

    write_data_yaml("beton.yaml", "train.beton", "val.beton", names=ds.names)
    YOLO("yolov8n.yaml").train(trainer=beton_trainer(DetectionTrainer), data="beton.yaml", imgsz=640)

Ultralytics is the user's own install: this module never imports it; the
classes it extends are passed in. The data YAML names the .beton files
where Ultralytics' own names image folders, so everything Ultralytics
reads from it (names, ``kpt_shape``, its final validation of ``best.pt``)
works unchanged.

Batches (``to_ultralytics_batch``) are those of Ultralytics' own
``YOLODataset.collate_fn``: ``img`` (B, 3, H, W) uint8, ``cls`` (N, 1),
``bboxes`` (N, 4) xywh normalized to the image, ``batch_idx`` (N,), for
segment ``masks`` at 1/``mask_ratio`` of the image, for pose
``keypoints`` (N, K, 2 or 3) normalized, and ``im_file``,
``ori_shape``, ``resized_shape``, ``ratio_pad`` per image. The images'
operations are ``image_ops(train, imgsz, hyp, mosaic)`` (default
``yolo_image_ops``).
"""
import os

import numpy as np

__all__ = ["to_ultralytics_batch", "yolo_image_ops", "UltralyticsLoader", "beton_trainer", "beton_validator",
           "write_data_yaml"]


def _torch():
    import torch
    return torch


def _tensor(x):
    torch = _torch()
    return x if isinstance(x, torch.Tensor) else torch.from_numpy(np.asarray(x))


def _rows(ragged):
    """(rows of every sample, one after the other, in batch order; counts)."""
    torch = _torch()
    data, counts = _tensor(ragged[0]), _tensor(ragged[1]).long()
    keep = torch.arange(data.shape[1], device=data.device)[None, :] < counts[:, None]
    return data[keep], counts


def to_ultralytics_batch(images, boxes, labels, masks=None, keypoints=None, *, ids=None, im_files=None,
                         mask_ratio=4, overlap_mask=True):
    """One loader batch as Ultralytics' trainers and validators take it
    (``YOLODataset.collate_fn``'s dict).

    images: (B, H, W, 3) uint8 (the loader's, or (B, 3, H, W)); boxes and
    labels: ``Ragged`` outputs (xyxy in the image's pixels, class ids);
    masks: the instance map of the boxes (box j's pixels are j + 1):
    ``PolygonMaskDecoder(ratio=mask_ratio)``'s (B, H/r, W/r), or a
    full-size (B, H, W) one (``MaskDecoder(instances="boxes")``), taken at
    1/mask_ratio; given to segment models: with overlap_mask one
    (B, H/r, W/r) map holding j + 1 where box j shows (Ultralytics'
    ``overlap_mask=True``), otherwise (N, H/r, W/r) 0/1 masks, one per box
    (each box's visible pixels), and ``sem_masks`` (B, H/r, W/r), each
    pixel its object's class; keypoints: a ``Ragged`` of (K, 2 or 3)
    points in pixels, visibility kept.

    ``ori_shape`` and ``resized_shape`` are the loaded image's (H, W) and
    ``ratio_pad`` is ((1, 1), (0, 0)): validation measures boxes in the
    frame of the loaded image, where a map that only scales and shifts
    (letterbox, resize and pad) leaves every IoU, hence mAP, as it is in
    the original image. ids are the batch's sample ids (for ``im_file``:
    ``im_files[id]``, or the id as a string)."""
    torch = _torch()
    img = _tensor(images)
    if img.ndim != 4 or img.dtype != torch.uint8:
        raise ValueError(f"to_ultralytics_batch: images must be a (B, H, W, 3) uint8 batch, "
                         f"got {tuple(img.shape)} {img.dtype}")
    if img.shape[-1] in (1, 3) and img.shape[1] not in (1, 3):
        # A view in torch's channels_last layout, not a copy: the trainers'
        # .float() / 255 keeps the layout, and convolutions take it.
        img = img.permute(0, 3, 1, 2)
    b, _, h, w = img.shape
    xyxy, counts = _rows(boxes)
    if len(counts) != b:
        raise ValueError(f"to_ultralytics_batch: {b} images and {len(counts)} samples of boxes")
    cls, lcounts = _rows(labels)
    if not torch.equal(counts, lcounts):
        raise ValueError("to_ultralytics_batch: boxes and labels have another number of rows in some sample")
    xyxy = xyxy.float().reshape(-1, 4)
    scale = torch.tensor([w, h, w, h], dtype=torch.float32, device=xyxy.device)
    xywh = torch.cat([(xyxy[:, :2] + xyxy[:, 2:]) / 2, xyxy[:, 2:] - xyxy[:, :2]], 1) / scale
    batch_idx = torch.repeat_interleave(torch.arange(b, device=counts.device), counts)
    ids = list(range(b)) if ids is None else [int(i) for i in ids]
    out = {"img": img, "cls": cls.float().reshape(-1, 1), "bboxes": xywh, "batch_idx": batch_idx.float(),
           "im_file": tuple(str(i) if im_files is None else os.fspath(im_files[i]) for i in ids),
           "ori_shape": ((h, w),) * b, "resized_shape": ((h, w),) * b, "ratio_pad": (((1.0, 1.0), (0, 0)),) * b}
    if masks is not None:
        out["masks"], out["sem_masks"] = _small_masks(_tensor(masks), _tensor(labels[0]), counts, mask_ratio,
                                                      overlap_mask, (h, w))
    if keypoints is not None:
        pts, pcounts = _rows(keypoints)
        if not torch.equal(pcounts, counts):
            raise ValueError("to_ultralytics_batch: boxes and keypoints have another number of rows in some sample")
        pts = pts.float().clone()
        pts[..., 0] /= w
        pts[..., 1] /= h
        out["keypoints"] = pts
    return out


def _small_masks(masks, labels, counts, r, overlap, size):
    """Instance maps (B, H, W) at 1/r, each small pixel the map's pixel
    nearest its centre, or maps already (B, H/r, W/r): (masks: with overlap (B, H/r, W/r) ids, else
    (N, H/r, W/r) 0/1, one per box in batch order, float32 as Ultralytics'
    collate makes them of a batch with a background image; sem_masks: (B, H/r, W/r) float32, each
    pixel its object's class, 0 where none)."""
    torch = _torch()
    if masks.ndim != 3:
        raise ValueError(f"to_ultralytics_batch: masks must be a (B, H, W) instance map, got {tuple(masks.shape)}")
    b = masks.shape[0]
    small = masks
    if tuple(masks.shape[1:]) != (size[0] // r, size[1] // r):
        small = masks[:, r // 2::r, r // 2::r][:, :masks.shape[1] // r, :masks.shape[2] // r]
    small = small.to(torch.int64)
    classes = torch.cat([torch.zeros(b, 1), labels.reshape(b, -1).float()], 1)  # id j + 1 -> class of row j
    sem = torch.gather(classes, 1, small.reshape(b, -1).clamp(max=classes.shape[1] - 1)).reshape(small.shape)
    if overlap:
        return small.float(), sem
    ids = torch.cat([torch.arange(1, int(n) + 1) for n in counts.tolist()] or [torch.zeros(0, dtype=torch.int64)])
    owner = torch.repeat_interleave(torch.arange(b), counts.cpu())
    return (small[owner] == ids[:, None, None]).float(), sem


def _hyp(hyp, name, default):
    """The trainer's argument name, else Ultralytics' default."""
    v = getattr(hyp, name, None) if hyp is not None else None
    return float(default if v is None else v)


def yolo_image_ops(train, imgsz, hyp=None, mosaic=True):
    """The image output's operations for Ultralytics' batches: every
    pipeline op here is followed by the boxes, masks and keypoints.

    train: Ultralytics' training augmentation, in its order:
    ``MosaicRGBImageDecoder`` (4 tiles with probability ``hyp.mosaic``;
    once ``mosaic`` is False, after ``close_mosaic``, the image alone,
    letterboxed), for segments ``CopyPaste`` (``hyp.copy_paste``),
    ``RandomPerspective(degrees, translate, scale, shear, perspective)``
    cropping the mosaic's square back to imgsz, ``MixUp``
    (``hyp.mixup``), ``CutMix`` (``hyp.cutmix``; both off with the mosaic,
    as Ultralytics turns them off),
    ``RandomHSV(hsv_h, hsv_s, hsv_v)`` and the up-down and left-right flips
    (``flipud``, ``fliplr``). val: ``LetterBox`` to imgsz x imgsz without
    enlarging, centred, padded with 114. hyp: the trainer's arguments;
    Ultralytics' defaults where hyp is None or lacks one."""
    # YOLO's pipeline is defined here alone: beton_trainer, beton_validator,
    # UltralyticsLoader and bench/yolo.py all take their operations from it.
    from ..fields.decoders import MosaicRGBImageDecoder
    from ..transforms import (CopyPaste, CutMix, LetterBox, MixUp, RandomHorizontalFlip, RandomHSV,
                              RandomPerspective, RandomVerticalFlip)
    imgsz = int(imgsz)
    if not train:
        return [LetterBox((imgsz, imgsz), scaleup=False)]
    h = lambda name, default: _hyp(hyp, name, default)  # noqa: E731
    ops = [MosaicRGBImageDecoder(imgsz=imgsz, n=4, p=h("mosaic", 1.0) if mosaic else 0.0),
           RandomPerspective(degrees=h("degrees", 0.0), translate=h("translate", 0.1), scale=h("scale", 0.5),
                             shear=h("shear", 0.0), perspective=h("perspective", 0.0), border=-(imgsz // 2))]
    if mosaic and h("copy_paste", 0.0) > 0 and getattr(hyp, "task", None) == "segment":
        ops.insert(1, CopyPaste(p=h("copy_paste", 0.0)))  # between the mosaic and its perspective
    if mosaic and h("mixup", 0.0) > 0:
        ops.append(MixUp(p=h("mixup", 0.0)))
    if mosaic and h("cutmix", 0.0) > 0:
        segment = getattr(hyp, "task", None) == "segment"
        ops.append(CutMix(p=h("cutmix", 0.0), polygons="polygons" if segment else None))
    ops.append(RandomHSV(h("hsv_h", 0.015), h("hsv_s", 0.7), h("hsv_v", 0.4)))
    if h("flipud", 0.0) > 0:
        ops.append(RandomVerticalFlip(h("flipud", 0.0)))
    if h("fliplr", 0.5) > 0:
        ops.append(RandomHorizontalFlip(h("fliplr", 0.5)))
    return ops


class _Samples:
    """What Ultralytics reads from a DataLoader's dataset: its length, the
    image files, the labels (its label plots, class weights and max_det
    check) and the mosaic switch (``close_mosaic``)."""

    def __init__(self, loader):
        self._loader = loader
        self._labels = None
        self.mosaic = True

    @property
    def labels(self):
        """Per sample, as stored: {"im_file", "shape" (h, w), "cls" (n, 1),
        "bboxes" (n, 4) xywh normalized, "normalized", "bbox_format"}."""
        if self._labels is None:
            self._labels = self._read_labels()
        return self._labels

    def _read_labels(self):
        from ..fields.decoders import RaggedDecoder
        from ..loader import Loader, OrderOption
        from ..reader import Reader
        loader = self._loader
        meta = Reader(loader.path).metadata[f"f{loader._fields.index('image')}"]
        pipes = {name: None for name in loader._fields}
        pipes.update(boxes=[RaggedDecoder(follows=None)], labels=[RaggedDecoder(follows=None)])
        out, files = [], self.im_files
        with Loader(loader.path, batch_size=256, num_workers=1, order=OrderOption.SEQUENTIAL, drop_last=False,
                    pipelines=pipes) as rows:
            for boxes, labels in rows:
                for (b, n), (c, _) in zip(zip(*boxes), zip(*labels)):
                    i = len(out)
                    h, w = int(meta[i]["height"]), int(meta[i]["width"])
                    xyxy = b[:int(n)].numpy().astype(np.float32).reshape(-1, 4)
                    xywh = np.concatenate([(xyxy[:, :2] + xyxy[:, 2:]) / 2, xyxy[:, 2:] - xyxy[:, :2]], 1)
                    out.append({"im_file": files[i], "shape": (h, w), "normalized": True, "bbox_format": "xywh",
                                "cls": c[:int(n)].numpy().astype(np.float32).reshape(-1, 1),
                                "bboxes": xywh / np.array([w, h, w, h], np.float32)})
        return out

    def __len__(self):
        return self._loader._n

    @property
    def im_files(self):
        n = len(self)
        return [str(i) for i in range(n)] if self._loader.im_files is None else list(self._loader.im_files)

    def close_mosaic(self, hyp=None):
        self.mosaic = False


class UltralyticsLoader:
    """An ffcv_go ``Loader`` over a YOLO .beton that yields Ultralytics'
    batch dicts (``to_ultralytics_batch``) and has what Ultralytics' trainer
    and validators read from their DataLoader (``dataset``, ``batch_size``,
    ``sampler``, ``drop_last``, ``num_workers``, ``reset()``, ``close()``).

    task: 'detect', 'segment' or 'pose'; train: random order (seeded by
    seed and the epoch) and ``image_ops(True, ...)``, otherwise the file's
    order and ``image_ops(False, ...)``. Boxes narrower or shorter than
    min_size pixels after the operations are dropped (Ultralytics' 2).
    flip_idx: the pose points' left-right swap. num_workers: the loader's
    Go threads (< 1: every CPU)."""

    def __init__(self, path, batch_size, *, task="detect", train=False, imgsz=640, hyp=None, num_workers=-1,
                 seed=0, image_ops=None, flip_idx=None, overlap_mask=True, mask_ratio=4, min_size=2.0,
                 im_files=None):
        from ..reader import Reader
        if task not in ("detect", "segment", "pose"):
            raise ValueError(f"UltralyticsLoader: task {task!r} must be 'detect', 'segment' or 'pose'")
        self.path, self.batch_size, self.task, self.train = os.fspath(path), int(batch_size), task, bool(train)
        self.imgsz, self.hyp, self.num_workers, self.seed = imgsz, hyp, int(num_workers), int(seed)
        self.image_ops = image_ops or yolo_image_ops
        self.flip_idx, self.overlap_mask, self.mask_ratio = flip_idx, bool(overlap_mask), int(mask_ratio)
        self.min_size, self.im_files, self.drop_last = float(min_size), im_files, False
        names = Reader(self.path).field_names
        need = ["image", "boxes", "labels"] + {"segment": ["polygons"], "pose": ["keypoints"]}.get(task, [])
        missing = [f for f in need if f not in names]
        if missing:
            raise ValueError(f"{self.path}: a {task} .beton needs the fields {', '.join(need)} "
                             f"(as YoloDataset(task={task!r}).fields() writes them); it has no {', '.join(missing)}")
        self._fields = names
        reader = Reader(self.path)
        self._n = int(reader.num_samples)
        counts = reader.metadata[f"f{names.index('boxes')}"]["rows"]
        self._most_rows = max(int(counts.max()) if len(counts) else 0, 1)
        self.dataset = _Samples(self)
        self.sampler = range(self._n)
        self._loader = self._build(0)

    def _build(self, epoch):
        from ..fields.decoders import MosaicRGBImageDecoder, PolygonMaskDecoder, RaggedDecoder
        from ..loader import Loader, OrderOption
        from ..pipeline import PipelineSpec
        from ..transforms import CutMix, MixUp
        pipes = {name: None for name in self._fields}
        pipes["image"] = list(self.image_ops(self.train, self.imgsz, self.hyp, self.dataset.mosaic))
        segment = self.task == "segment"
        # A mosaic shows 4 samples' rows; MixUp and CutMix add another mosaic's.
        ops = pipes["image"]
        shown = 4 if any(isinstance(op, MosaicRGBImageDecoder) for op in ops) else 1
        shown *= 1 + sum(isinstance(op, (MixUp, CutMix)) for op in ops)  # each partner another mosaic
        rows = self._most_rows * shown
        # Segments: boxes from the warped polygons, as YOLO's segment2box.
        polygons = "polygons" if segment else None
        if self.train:
            # Ultralytics' box_candidates after its RandomPerspective.
            pipes["boxes"] = [RaggedDecoder(max_rows=rows, min_size=0, min_area=0, wh_thr=self.min_size,
                                            area_thr=0.01 if segment else 0.1, ar_thr=100, polygons=polygons)]
        else:
            pipes["boxes"] = [RaggedDecoder(max_rows=rows, min_size=0, min_area=0, polygons=polygons)]
        pipes["labels"] = [RaggedDecoder(max_rows=rows)]
        if segment:
            pipes["mask"] = PipelineSpec("polygons", decoder=PolygonMaskDecoder(ratio=self.mask_ratio))
        if self.task == "pose":
            flip = None if self.flip_idx is None else tuple(int(i) for i in self.flip_idx)
            pipes["keypoints"] = [RaggedDecoder(max_rows=rows, boxes="boxes", flip_indices=flip)]
        loader = Loader(self.path, batch_size=self.batch_size, num_workers=self.num_workers,
                        order=OrderOption.RANDOM if self.train else OrderOption.SEQUENTIAL, seed=self.seed,
                        drop_last=self.drop_last, pipelines=pipes)
        loader.next_epoch = epoch
        self._order = [n for n in pipes if pipes[n] is not None]
        return loader

    def __len__(self):
        return len(self._loader)

    def __iter__(self):
        loader = self._loader
        for out in loader:
            got = dict(zip(self._order, out))
            yield to_ultralytics_batch(got["image"], got["boxes"], got["labels"], got.get("mask"),
                                       got.get("keypoints"), ids=loader._last_ids, im_files=self.im_files,
                                       mask_ratio=self.mask_ratio, overlap_mask=self.overlap_mask)

    def reset(self):
        """Builds the loader again for the next epoch (after ``close_mosaic``
        the image operations are ``image_ops(..., mosaic=False)``)."""
        epoch = self._loader.next_epoch
        self._loader.close()
        self._loader = self._build(epoch)

    def close(self):
        self._loader.close()


def _loader_for(owner, path, batch_size, train):
    """The UltralyticsLoader a beton trainer or validator (owner) uses."""
    path = os.fspath(path[0] if isinstance(path, (list, tuple)) and len(path) == 1 else path)
    if not str(path).endswith(".beton") and not os.path.isfile(path):
        raise ValueError(f"{type(owner).__name__}: the data YAML must name .beton files (write_data_yaml), "
                         f"got {path!r}")
    a, data = owner.args, getattr(owner, "data", None) or {}
    return UltralyticsLoader(path, batch_size, task=a.task, train=train, imgsz=a.imgsz, hyp=a,
                             num_workers=a.workers if a.workers > 0 else -1, seed=a.seed,
                             image_ops=getattr(type(owner), "image_ops", None), flip_idx=data.get("flip_idx"),
                             overlap_mask=getattr(a, "overlap_mask", True), mask_ratio=getattr(a, "mask_ratio", 4))


def beton_trainer(base, image_ops=None):
    """A subclass of the Ultralytics trainer class base (``DetectionTrainer``,
    ``SegmentationTrainer``, ``PoseTrainer``) whose train and validation
    batches come from the .beton files its data YAML names
    (``write_data_yaml``), through ``UltralyticsLoader``. image_ops:
    ``(train, imgsz, hyp, mosaic) -> the image output's operations``
    (default ``yolo_image_ops``). Pass it as ``YOLO(...).train(trainer=...)``
    or make it with ``overrides=`` as the base class. Loader threads are
    the trainer's ``workers`` (0: every CPU); a single process (no DDP)."""
    def get_dataloader(self, dataset_path, batch_size=16, rank=0, mode="train"):
        return _loader_for(self, dataset_path, batch_size, mode == "train")

    def build_dataset(self, img_path, mode="train", batch=None):
        raise NotImplementedError(f"{type(self).__name__} reads .beton files through get_dataloader")

    return type(f"Beton{base.__name__}", (base,), {
        "get_dataloader": get_dataloader, "build_dataset": build_dataset,
        "image_ops": staticmethod(image_ops or yolo_image_ops), "__module__": __name__,
        "__doc__": f"{base.__name__} on .beton files (ffcv_go.integrations.ultralytics.beton_trainer)."})


def beton_validator(base, image_ops=None):
    """A subclass of the Ultralytics validator class base
    (``DetectionValidator``, ...) that reads the split its data YAML names
    from a .beton, for ``YOLO(...).val(validator=..., data="beton.yaml")``."""
    def get_dataloader(self, dataset_path, batch_size):
        return _loader_for(self, dataset_path, batch_size, False)

    return type(f"Beton{base.__name__}", (base,), {
        "get_dataloader": get_dataloader, "image_ops": staticmethod(image_ops or yolo_image_ops),
        "__module__": __name__,
        "__doc__": f"{base.__name__} on a .beton (ffcv_go.integrations.ultralytics.beton_validator)."})


def write_data_yaml(path, train, val, names, kpt_shape=None, flip_idx=None):
    """Writes Ultralytics' data YAML for .beton files: train and val (paths
    relative to the YAML's folder, or absolute), names (a list, or a map of
    class ids 0..n-1), for pose kpt_shape and flip_idx. A ``YoloDataset``
    gives them: ``names=ds.names, kpt_shape=ds.kpt_shape,
    flip_idx=ds.flip_indices``. Returns path."""
    import json
    if isinstance(names, dict):
        if sorted(int(k) for k in names) != list(range(len(names))):
            raise ValueError(f"write_data_yaml: names must map the class ids 0..{len(names) - 1}, got {list(names)}")
        names = [names[k] for k in sorted(names, key=int)]
    lines = [f"train: {json.dumps(os.fspath(train))}", f"val: {json.dumps(os.fspath(val))}",
             f"path: {json.dumps(os.path.dirname(os.path.abspath(path)))}", "names:"]
    lines += [f"  {k}: {json.dumps(str(n))}" for k, n in enumerate(names)]
    if kpt_shape is not None:
        lines.append(f"kpt_shape: {json.dumps([int(v) for v in kpt_shape])}")
    if flip_idx is not None:
        lines.append(f"flip_idx: {json.dumps([int(v) for v in flip_idx])}")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path
