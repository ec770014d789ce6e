"""Ultralytics YOLO on .beton files (ffcv_go.integrations.ultralytics):
our batches against those of Ultralytics' own YOLODataset and collate on
the same YOLO dataset (scenes of painted objects over real photos), and
its trainers training on our loader, offline on the CPU.

Ultralytics is not in .venv: this file runs under build/ultralytics-venv's
python (make ultralytics-venv; make test-python runs it there) and is
skipped elsewhere. It also runs the snippet of docs/guides/yolo.md."""
import math
import os
import re
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

# Before Ultralytics is imported: no network, its settings in a folder of ours.
os.environ["YOLO_OFFLINE"] = "1"
os.environ["YOLO_AUTOINSTALL"] = "False"
os.environ.setdefault("YOLO_CONFIG_DIR", tempfile.mkdtemp(prefix="ultralytics-config-"))
ultralytics = pytest.importorskip("ultralytics", reason="runs under build/ultralytics-venv's python "
                                                        "(make ultralytics-venv)")
# No analytics, and none of the logging integrations it would start because .venv has
# their packages (Ray Tune's, TensorBoard's, MLflow's ...).
ultralytics.settings.update(sync=False, raytune=False, tensorboard=False, mlflow=False, clearml=False, comet=False,
                            dvc=False, wandb=False)

REPO = Path(__file__).parents[2]
sys.path.insert(0, str(REPO / "bench"))
import make_dataset  # noqa: E402
import scenes  # noqa: E402

import torch  # noqa: E402
from ffcv_go import DatasetWriter  # noqa: E402
from ffcv_go.detection import YoloDataset  # noqa: E402
from ffcv_go.integrations.ultralytics import (UltralyticsLoader, beton_trainer,  # noqa: E402
                                              to_ultralytics_batch, write_data_yaml, yolo_image_ops)
from ffcv_go.fields.decoders import SimpleRGBImageDecoder  # noqa: E402

SIDE = 64  # images of imgsz x imgsz: Ultralytics' validation letterbox leaves them as they are


@pytest.fixture(scope="module")
def photos():
    return make_dataset.find_photos()[:4]


@pytest.fixture(scope="module")
def made(photos, tmp_path_factory):
    """made(task): a dataset of SIDE x SIDE images for task and its .beton
    files, made once: (folder, YAML, the train split's YoloDataset)."""
    cache = {}

    def get(task):
        if task not in cache:
            root = tmp_path_factory.mktemp(task)
            cache[task] = (root, *_dataset(root, photos, task))
        return cache[task]
    return get


@pytest.fixture(scope="module")
def wide(photos, tmp_path_factory):
    """A detect dataset of 48 x 80 images and its .beton files: (folder, YAML)."""
    root = tmp_path_factory.mktemp("wide")
    return root, _dataset(root, photos, "detect", size=(48, 80))[0]


def _dataset(root, photos, task, n=8, size=(SIDE, SIDE)):
    yaml = scenes.write_yolo(str(root), {"train": range(0, n), "val": range(100, 100 + n // 2)}, photos,
                             height=size[0], width=size[1], task=task)
    for split in ("train", "val"):
        ds = YoloDataset(yaml, split=split, task=task)
        DatasetWriter(str(root / f"{split}.beton"), ds.fields(), progress=False).from_indexed_dataset(ds)
    return yaml, ds


def _theirs(yaml, task, batch):
    """Ultralytics' own validation batches (augmentation off) of the train split."""
    from ultralytics.cfg import get_cfg
    from ultralytics.data import build_dataloader, build_yolo_dataset
    from ultralytics.data.utils import check_det_dataset
    data = check_det_dataset(yaml)
    cfg = get_cfg(overrides=dict(imgsz=SIDE, task=task, data=yaml))
    ds = build_yolo_dataset(cfg, data["train"], batch, data, mode="val", rect=False, stride=32)
    return list(build_dataloader(ds, batch, 0, shuffle=False))


def _canonical(b):
    """Each object's row order by (image, class): Ultralytics sorts a
    segment sample's objects by area, ours keep the file's order (a scene
    has each class once)."""
    key = b["batch_idx"] * 100 + b["cls"][:, 0]
    return torch.argsort(key)


@pytest.mark.parametrize("task", ["detect", "segment", "pose"])
def test_batches_are_ultralytics(made, task):
    root, yaml, _ = made(task)
    theirs = _theirs(yaml, task, 4)
    flip = [0, 1] if task == "pose" else None
    ours = list(UltralyticsLoader(root / "train.beton", 4, task=task, imgsz=SIDE, num_workers=1,
                                  flip_idx=flip))
    assert len(ours) == len(theirs) == 2
    objects = 0
    for a, b in zip(ours, theirs):
        assert sorted(a) == sorted(b)
        for k in ("img", "cls", "bboxes", "batch_idx") + (("masks", "sem_masks") if task == "segment" else ()) + \
                (("keypoints",) if task == "pose" else ()):
            assert a[k].dtype == b[k].dtype or k == "masks", k  # theirs: float32 once a batch has a background
        assert a["img"].shape == b["img"].shape == (4, 3, SIDE, SIDE)
        assert (a["img"].int() - b["img"].int()).abs().float().mean() < 1.0  # the same JPEGs, another decoder
        ia, ib = _canonical(a), _canonical(b)
        assert len(ia) == len(ib) > 0
        objects += len(ia)
        torch.testing.assert_close(a["batch_idx"][ia], b["batch_idx"][ib], rtol=0, atol=0)
        torch.testing.assert_close(a["cls"][ia], b["cls"][ib], rtol=0, atol=0)
        torch.testing.assert_close(a["bboxes"][ia], b["bboxes"][ib], rtol=0, atol=1e-5)
        assert a["ori_shape"] == a["resized_shape"] == b["ori_shape"] == ((SIDE, SIDE),) * 4
        assert a["ratio_pad"] == b["ratio_pad"]
        if task == "pose":
            torch.testing.assert_close(a["keypoints"][ia], b["keypoints"][ib], rtol=0, atol=1e-5)
        if task == "segment":
            assert a["masks"].shape == b["masks"].shape == a["sem_masks"].shape == (4, SIDE // 4, SIDE // 4)
            covered = (a["masks"] > 0) & (b["masks"] > 0)  # elsewhere theirs holds any class: the loss ignores it
            assert (a["sem_masks"][covered] == b["sem_masks"][covered]).float().mean() > 0.95
            assert (a["sem_masks"][a["masks"] == 0] == 0).all()
            # Object j of an image is mask value j + 1 in each: inside its box (by more than a
            # small pixel) every small pixel is its own, outside it none.
            q = SIDE // 4
            c = torch.arange(q) + 0.5
            for i in range(4):
                ra = [int(j) for j in ia if a["batch_idx"][j] == i]
                rb = [int(j) for j in ib if b["batch_idx"][j] == i]
                fa, fb = min(ra, default=0), min(rb, default=0)  # the image's first row
                for ja, jb in zip(ra, rb):
                    cx, cy, w, h = (a["bboxes"][ja] * q).tolist()
                    inx, iny = (c > cx - w / 2 + 1) & (c < cx + w / 2 - 1), (c > cy - h / 2 + 1) & (c < cy + h / 2 - 1)
                    onx = (c > cx - w / 2 - 1) & (c < cx + w / 2 + 1)
                    ony = (c > cy - h / 2 - 1) & (c < cy + h / 2 + 1)
                    inside, near = iny[:, None] & inx[None, :], ony[:, None] & onx[None, :]
                    for m in (a["masks"][i] == ja - fa + 1, b["masks"][i] == jb - fb + 1):
                        assert m[inside].all() and not m[~near].any(), (i, ja)
    assert objects > 10


def test_batch_of_a_plain_loader(wide):
    """to_ultralytics_batch on any loader's batch: boxes normalized by the
    loaded image's size; the boxes and labels must agree in rows."""
    from ffcv_go import Loader
    from ffcv_go.fields.decoders import RaggedDecoder
    (root, _), (h, w) = wide, (48, 80)
    loader = Loader(root / "train.beton", batch_size=8, num_workers=1,
                    pipelines={"image": [SimpleRGBImageDecoder()], "boxes": [RaggedDecoder(min_size=0, min_area=0)],
                               "labels": [RaggedDecoder()]})
    img, boxes, labels = next(iter(loader))
    b = to_ultralytics_batch(img, boxes, labels)
    n = int(boxes.counts.sum())
    assert b["bboxes"].shape == (n, 4) and b["cls"].shape == (n, 1) and b["img"].shape == (8, 3, h, w)
    assert b["ori_shape"] == b["resized_shape"] == ((h, w),) * 8
    first = boxes.data[1, 0].float() / torch.tensor([w, h, w, h])  # sample 0 has no objects (i % 7 == 0)
    torch.testing.assert_close(b["bboxes"][0], torch.stack([(first[0] + first[2]) / 2, (first[1] + first[3]) / 2,
                                                            first[2] - first[0], first[3] - first[1]]))
    assert b["batch_idx"].tolist() == np.repeat(np.arange(8), boxes.counts.numpy()).tolist()
    with pytest.raises(ValueError, match="another number of rows"):
        to_ultralytics_batch(img, boxes, type(labels)(labels.data, labels.counts.flip(0)))


def test_dataset_labels_are_ultralytics(wide):
    """The loader's dataset.labels (Ultralytics' label plots, class weights,
    max_det check) hold what Ultralytics' own dataset reads from the files."""
    from ultralytics.cfg import get_cfg
    from ultralytics.data import build_yolo_dataset
    from ultralytics.data.utils import check_det_dataset
    root, yaml = wide
    data = check_det_dataset(yaml)
    theirs = build_yolo_dataset(get_cfg(overrides=dict(imgsz=SIDE, data=yaml)), data["train"], 4, data,
                                mode="val", stride=32).labels
    ours = UltralyticsLoader(root / "train.beton", 4).dataset.labels
    assert len(ours) == len(theirs) == 8
    for a, b in zip(ours, theirs):
        assert a["shape"] == b["shape"] and a["cls"].dtype == b["cls"].dtype == np.float32
        np.testing.assert_array_equal(a["cls"], b["cls"])
        np.testing.assert_allclose(a["bboxes"], b["bboxes"], atol=1e-5)


def test_close_mosaic_rebuilds_the_pipeline(wide):
    """The trainer's close_mosaic: dataset.close_mosaic() then reset()
    builds the loader again with image_ops(..., mosaic=False), at the next
    epoch (its random draws go on, not restart)."""
    calls = []

    def ops(train, imgsz, hyp, mosaic):
        calls.append((train, imgsz, mosaic))
        return yolo_image_ops(train, imgsz, hyp, mosaic)
    loader = UltralyticsLoader(wide[0] / "train.beton", 4, train=True, imgsz=32, image_ops=ops, num_workers=1)
    assert sum(len(b["img"]) for b in loader) == 8
    loader.dataset.close_mosaic(hyp=None)
    loader.reset()
    assert calls == [(True, 32, True), (True, 32, False)] and loader._loader.next_epoch == 1
    assert sum(len(b["img"]) for b in loader) == 8


def test_cutmix_follows_hyp(wide):
    """hyp.cutmix adds CutMix after MixUp, as Ultralytics orders them, off
    with the mosaic; its batches load, boxes inside the image."""
    from types import SimpleNamespace
    from ffcv_go.transforms import CutMix, MixUp
    hyp = SimpleNamespace(mixup=0.5, cutmix=1.0)
    names = [type(op).__name__ for op in yolo_image_ops(True, 32, hyp, True)]
    assert names[2:4] == ["MixUp", "CutMix"], names
    assert not any(isinstance(op, (MixUp, CutMix)) for op in yolo_image_ops(True, 32, hyp, False))
    loader = UltralyticsLoader(wide[0] / "train.beton", 4, train=True, imgsz=32, hyp=hyp, num_workers=1)
    seen = 0
    for b in loader:
        seen += len(b["img"])
        assert ((b["bboxes"] >= 0) & (b["bboxes"] <= 1)).all()
    assert seen == 8


def test_cutmix_on_segments(made):
    """For segments CutMix reads the polygons (hyp.task 'segment'): each
    image's masks number no more instances than it has boxes."""
    from types import SimpleNamespace
    hyp = SimpleNamespace(cutmix=1.0, task="segment")
    loader = UltralyticsLoader(made("segment")[0] / "train.beton", 4, task="segment", train=True, imgsz=32, hyp=hyp,
                               num_workers=1)
    ops = loader.image_ops(True, 32, hyp, True)
    assert any(type(op).__name__ == "CutMix" and op.polygons == "polygons" for op in ops)
    for b in loader:
        assert len(b["cls"]) == len(b["bboxes"]) == len(b["batch_idx"])
        for i in range(len(b["img"])):
            assert int(b["masks"][i].max()) <= int((b["batch_idx"] == i).sum())


def test_refuses_a_beton_without_its_fields(wide):
    with pytest.raises(ValueError, match=r"train.beton: a segment .beton needs the fields .*it has no polygons"):
        UltralyticsLoader(wide[0] / "train.beton", 4, task="segment")


def _guide_snippet():
    guide = (REPO / "docs/guides/yolo.md").read_text()
    section = guide[guide.index("## Training with Ultralytics"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_guide_trains_detection_on_a_beton(tmp_path, photos, monkeypatch):
    """The guide's snippet as written, one epoch at imgsz 64 on 8 images:
    Ultralytics' DetectionTrainer trains on our loader (finite losses) and
    validates on it, offline on the CPU."""
    scenes.write_yolo(str(tmp_path), {"train": range(0, 8), "val": range(100, 104)}, photos, height=48, width=80)
    monkeypatch.chdir(tmp_path)
    code = _guide_snippet()
    for old, new in [("ds.fields())", "ds.fields(), progress=False)"), ("epochs=3", "epochs=1"),
                     ("imgsz=640", "imgsz=64"), ("batch=16", "batch=4"), ("workers=4", "workers=1"),
                     ("plots=False)", f"plots=False, project={str(tmp_path / 'runs')!r}, verbose=False)")]:
        assert old in code, old
        code = code.replace(old, new)
    env = {}
    exec(compile(code, "yolo.md", "exec"), env)
    trainer = env["model"].trainer
    assert type(trainer).__name__ == "BetonDetectionTrainer"
    assert len(trainer.train_loader.dataset) == 8 and len(trainer.test_loader.dataset) == 4
    losses = {k: float(v) for k, v in trainer.tloss.items()}
    assert losses and all(math.isfinite(v) for v in losses.values()), losses
    assert "metrics/mAP50(B)" in trainer.metrics


@pytest.mark.parametrize("task", ["segment", "pose"])
def test_segment_and_pose_trainers(made, tmp_path, task):
    from ultralytics.models.yolo.pose import PoseTrainer
    from ultralytics.models.yolo.segment import SegmentationTrainer
    root, _, ds = made(task)
    data = write_data_yaml(root / "beton.yaml", "train.beton", "val.beton", names=ds.names,
                           kpt_shape=ds.kpt_shape, flip_idx=ds.flip_indices)
    base = SegmentationTrainer if task == "segment" else PoseTrainer
    trainer = beton_trainer(base)(overrides=dict(model=f"yolov8n-{'seg' if task == 'segment' else 'pose'}.yaml",
                                                 data=str(data), epochs=1, imgsz=SIDE, batch=4, workers=1,
                                                 device="cpu", amp=False, plots=False, val=False,
                                                 project=str(tmp_path / "runs"), verbose=False))
    trainer.train()
    losses = {k: float(v) for k, v in trainer.tloss.items()}
    assert len(losses) >= 4 and all(math.isfinite(v) for v in losses.values()), losses
