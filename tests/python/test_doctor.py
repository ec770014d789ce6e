"""The bottleneck doctor end to end (``diagnose`` and ``python -m ffcv_go
doctor``) on real files: a heavy pipeline on one worker (CPU), a slow model
(model), a model that costs nothing fed by a slow loader (CPU), a real
torchvision detection model, a model that fails, views through a pipeline
file, a file another process holds (not evicted), and a file larger than
the memory the process may use on slow storage (storage). Its parts alone:
test_doctor_probe.py, test_doctor_measure.py, test_doctor_decide.py,
test_doctor_report.py."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from ffcv_go.doctor import diagnose, usable_cores
from ffcv_go.doctor._decide import LOADER_BOUND_WAIT_SHARE
from ffcv_go.fields.decoders import RandomResizedCropRGBImageDecoder
from ffcv_go.transforms import (NormalizeImage, RandomBrightness, RandomContrast, RandomHorizontalFlip,
                                RandomSaturation, ToTensor, ToTorchImage)

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
from limits import Limits  # noqa: E402

# The verdicts come from measured rates: nothing else may run beside them.
pytestmark = pytest.mark.serial

LOADER_TARGETS = {"Loader", "DatasetWriter", "pipeline"}


@pytest.fixture(scope="module")
def big_photos(tmp_path_factory):
    """1200 samples of 24 real photos (crops of Debian wallpapers) stored at
    800 px, about 80 kB each: a 100 MiB file on 2 MiB pages."""
    import make_dataset
    if not make_dataset.find_photos():
        pytest.skip("no photos installed (Debian wallpaper packages)")
    from doctor_storage import write_photos
    return write_photos(tmp_path_factory.mktemp("doctor") / "photos.beton", 1200)


def heavy_pipeline():
    """RandomResizedCrop 256 with flip and colour jitter, normalised to float32."""
    mean, std = np.array([0.485, 0.456, 0.406]) * 255, np.array([0.229, 0.224, 0.225]) * 255
    return {"image": [RandomResizedCropRGBImageDecoder((256, 256)), RandomHorizontalFlip(),
                      RandomBrightness(0.4, p=1.0), RandomContrast(0.4, p=1.0), RandomSaturation(0.4, p=1.0),
                      ToTensor(), ToTorchImage(), NormalizeImage(mean, std, np.float32)],
            "label": None}


def loader_advice(report):
    return [r for r in report.recommendations if r.target in LOADER_TARGETS]


def test_cpu_bound_heavy_pipeline_on_one_worker(big_photos, tmp_path):
    report = diagnose(big_photos, pipeline=heavy_pipeline(), num_workers=1, batch_size=32, max_seconds=8,
                      progress=False)
    assert report.bottleneck == "cpu", report.format()
    settings = " ".join(r.setting for r in report.recommendations)
    # 800 px stored for 256 px crops: max_resolution at FFCV's ImageNet
    # recipes' margin (from the metadata). More workers only where the scan
    # measured them faster: on a machine whose other jobs hold the other
    # cores it may not (test_doctor_decide checks that case alone).
    assert "max_resolution=544" in settings, report.format()
    workers = [r for r in report.recommendations if "num_workers=" in r.setting]
    assert all(int(r.setting.split("num_workers=")[1].split(")")[0]) > 1 for r in workers), report.format()
    best = max(report.loader["scan"], key=lambda p: p["img_s"])
    if usable_cores() > 1 and best["workers"] > 1 and best["img_s"] > 1.1 * report.loader["current"]["img_s"]:
        assert workers, report.format()
    scan = report.loader["scan"]
    assert [p["workers"] for p in scan][0] == 1 and all(p["img_s"] > 0 for p in scan)
    share = report.loader["stages"]["share"]
    assert abs(sum(share.values()) - 1) < 1e-6 and share["entropy_decode"] > 0.05 and share["ops"] > 0
    # Each operation by name: the decoder, and the jitter ops after it.
    ops = {o["op"]: o for o in report.loader["ops"]}
    assert ops["RandomResizedCropRGBImageDecoder"]["decoder"]
    assert {"RandomBrightness", "RandomContrast", "RandomSaturation", "NormalizeImage"} <= set(ops)
    assert abs(sum(o["share"] for o in ops.values()) - 1) < 1e-6
    assert report.loader["current"]["cpu_ms_per_image"] > 0 and report.loader["first_batch_s"] > 0
    # Nobody else holds the file: it was dropped from the page cache and read cold.
    assert report.storage["evicted"] and report.storage["holders"]["pids"] == []
    assert report.storage["cold_page_mb_s"] > 0 and report.storage["warm_mb_s"] > 0
    assert report.dataset["fits_in_memory"] and report.dataset["images"]["median_width"] == 800
    assert report.first_epoch["schedules"] == [16, 88] and report.dataset["filesystem"]["type"]
    text = report.format()
    assert "bottleneck: CPU" in text and "entropy decode" in text and "RandomSaturation" in text
    json.loads(report.to_json())
    report.plot(tmp_path / "report.png")
    assert (tmp_path / "report.png").read_bytes()[:4] == b"\x89PNG"


class SlowModel(torch.nn.Module):
    """A model whose training step takes `seconds` whatever the batch."""

    def __init__(self, seconds=0.25):
        super().__init__()
        self.seconds = seconds
        self.head = torch.nn.Linear(3, 10)

    def forward(self, x):
        time.sleep(self.seconds)
        return self.head(x.mean(dim=(2, 3)))


def test_model_bound_slow_model(big_photos):
    """Fed by the loader, the training loop hardly waits: the model."""
    report = diagnose(big_photos, pipeline="train", res=160, batch_size=32, model=SlowModel(), max_seconds=8,
                      progress=False)
    assert report.bottleneck == "model", report.format()
    tg = report.together
    assert tg["wait_share"] < LOADER_BOUND_WAIT_SHARE and tg["steps"] >= 2 and tg["img_s"] < 32 / 0.25 * 1.05
    assert report.model["img_s"] < 32 / 0.25 * 1.05 and report.model["kind"] == "classification"
    assert loader_advice(report) == [], report.format()
    assert "Nothing to change in the loader" in report.summary
    assert "waited in next()" in report.format()


def test_loader_bound_free_model(big_photos):
    """A model that costs little, fed by a heavy pipeline on one worker:
    the training loop waits in next() for much of the time: the CPU."""
    report = diagnose(big_photos, pipeline=heavy_pipeline(), num_workers=1, batch_size=16,
                      model=SlowModel(seconds=0.0), max_seconds=6, progress=False)
    tg = report.together
    assert tg["wait_share"] >= LOADER_BOUND_WAIT_SHARE and tg["wait_s"] > 0, report.format()
    assert report.bottleneck == "cpu", report.format()
    assert "the loop waited in next()" in report.summary


@pytest.fixture
def one_torch_thread():
    """The model's steps on one thread: on a 2-core machine, two torch
    threads beside the loader's worker spin against each other and a step
    takes seconds."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def test_detection_model_gets_a_verdict(photo_beton, one_torch_thread):
    """torchvision's Faster R-CNN (outputs: a dict of losses; inputs: images
    and targets), small (64 px inputs, few proposals), trains on the
    loader's batches and gets a verdict."""
    import torchvision
    model = torchvision.models.get_model("fasterrcnn_mobilenet_v3_large_fpn", weights=None, weights_backbone=None,
                                         num_classes=3, min_size=64, max_size=64, rpn_pre_nms_top_n_train=64,
                                         rpn_post_nms_top_n_train=64, box_batch_size_per_image=32)
    report = diagnose(photo_beton, pipeline="train", res=64, batch_size=4, num_workers=1, model=model,
                      max_seconds=6, progress=False)
    assert report.bottleneck in ("model", "cpu"), report.format()
    assert "error" not in report.model, report.model
    assert report.model["kind"] == report.together["kind"] == "detection"
    # photo_beton has no boxes: the report says the targets were made up.
    assert report.together["targets"].startswith("made-up"), report.together
    assert any("trained on made-up targets" in n for n in report.notes), report.notes
    assert report.together["steps"] >= 2 and 0 <= report.together["wait_share"] <= 1
    assert "detection" in report.format()


def small_faster_rcnn(classes):
    import torchvision
    return torchvision.models.get_model("fasterrcnn_mobilenet_v3_large_fpn", weights=None, weights_backbone=None,
                                        num_classes=classes, min_size=64, max_size=64, rpn_pre_nms_top_n_train=64,
                                        rpn_post_nms_top_n_train=64, box_batch_size_per_image=32)


def test_detection_model_trains_on_the_datasets_boxes(tmp_path, one_torch_thread):
    """A pipeline that decodes boxes and labels (bench/scenes.py: coloured
    rectangles over photos, several per image): the model fed by the loader
    trains on those, not on the doctor's one box per image, and the report
    says so."""
    import make_dataset
    import scenes
    from conftest import write
    from ffcv_go.fields import MaskField, RaggedArrayField, RGBImageField
    from ffcv_go.fields.decoders import RaggedDecoder, ResizePadRGBImageDecoder
    if not make_dataset.find_photos():
        pytest.skip("no photos installed (Debian wallpaper packages)")
    fields = {"image": RGBImageField(write_mode="raw", max_resolution=96),
              "boxes": RaggedArrayField(np.float32, (4,), follows="image", coords="xyxy"),
              "labels": RaggedArrayField(np.int64, (), follows="boxes"), "mask": MaskField("image")}
    path = write(tmp_path / "scenes.beton", fields, scenes.SceneDataset(16, make_dataset.find_photos()[:2]))
    pipes = {"image": [ResizePadRGBImageDecoder((64, 64)), ToTensor(), ToTorchImage()],
             "boxes": [RaggedDecoder(min_size=1, min_area=1)], "labels": [RaggedDecoder()], "mask": None}
    model = small_faster_rcnn(classes=8)
    seen = []
    model.register_forward_pre_hook(lambda m, args: seen.append(args[1]))
    report = diagnose(path, pipeline=pipes, res=64, batch_size=4, num_workers=1, model=model, max_seconds=8,
                      progress=False)
    assert "error" not in report.model, report.model
    assert report.together["targets"] == "the dataset's boxes and labels", report.together
    assert "detection targets: the dataset's boxes and labels" in report.format()
    fed = [t for targets in seen for t in targets]
    centre = torch.tensor([[16.0, 16.0, 48.0, 48.0]])
    mine = [t for t in fed if len(t["boxes"]) == 1 and torch.equal(t["boxes"].cpu(), centre)]
    assert len(mine) < len(fed)  # the model alone trains on made-up boxes; fed by the loader, on the scenes'
    assert any(len(t["boxes"]) > 1 for t in fed) and all((t["labels"] >= 1).all() for t in fed)


class OutOfMemory(torch.nn.Module):
    """A model that runs out of GPU memory at its first step (the error
    torch raises)."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(1))

    def forward(self, x):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB")


def test_a_failing_model_leaves_the_report(photo_beton):
    report = diagnose(photo_beton, pipeline="train", res=64, batch_size=8, model=OutOfMemory(), max_seconds=5,
                      progress=False)
    assert report.model["error"].startswith("OutOfMemoryError") and report.model["out_of_memory"]
    assert report.together is None and report.loader["scan"] and report.storage
    # 24 photos decode in well under a second: the loader's verdict alone is
    # "none", whatever the failed model, and nothing is to be rewritten.
    assert report.bottleneck == "none", report.format()
    assert not [r for r in report.recommendations if r.target in LOADER_TARGETS], report.format()
    text = report.format()
    assert "could not train" in text and "--batch-size 4" in text
    json.loads(report.to_json())


HOLD = "import sys; f = open(sys.argv[1], 'rb'); print('ready', flush=True); sys.stdin.read()"


def test_a_file_another_process_holds_is_not_evicted(photo_beton):
    p = subprocess.Popen([sys.executable, "-c", HOLD, str(photo_beton)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "ready"
        report = diagnose(photo_beton, res=64, batch_size=8, max_seconds=5, progress=False)
    finally:
        p.stdin.close()
        p.wait(timeout=30)
    st = report.storage
    assert not st["evicted"] and st["evict"] == "auto" and p.pid in st["holders"]["pids"]
    assert "cold_page_mb_s" not in st and st["page_mb_s"] > 0
    assert f"not evicted: 1 other process ({p.pid}) has the file open" in report.format()


VIEWS = """
from ffcv_go.fields.decoders import IntDecoder, RandomResizedCropRGBImageDecoder
from ffcv_go.transforms import GaussianBlur, RandomHorizontalFlip, ToTensor, ToTorchImage

pipelines = {
    "image": None,  # only its views
    "view_0": [RandomResizedCropRGBImageDecoder((96, 96)), RandomHorizontalFlip(), ToTensor(), ToTorchImage()],
    "view_1": [RandomResizedCropRGBImageDecoder((96, 96)), GaussianBlur(blur_prob=1.0, kernel_size=23),
               ToTensor(), ToTorchImage()],
    "label": [IntDecoder(), ToTensor()],
}
loader_kwargs = {"custom_field_mapper": {"view_0": "image", "view_1": "image"}}
"""


def test_views_from_a_pipeline_file(photo_beton, tmp_path):
    """A pipeline file with views (its loader_kwargs pass
    custom_field_mapper on), through the command line, not evicting: each
    view's operations are named."""
    f = tmp_path / "views.py"
    f.write_text(VIEWS)
    proc = subprocess.run([sys.executable, "-m", "ffcv_go", "doctor", str(photo_beton), "--pipeline", str(f),
                           "--batch-size", "8", "--max-seconds", "5", "--evict", "never", "--epochs", "30", "--json"],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "python")})
    assert proc.returncode == 0, proc.stderr[-3000:]
    r = json.loads(proc.stdout)
    assert r["settings"]["loader_kwargs"] == {"custom_field_mapper": {"view_0": "image", "view_1": "image"}}
    assert r["storage"]["evicted"] is False and r["storage"]["evict"] is False
    assert r["first_epoch"]["schedules"] == [16, 30, 88]
    ops = {(o["output"], o["op"]) for o in r["loader"]["ops"]}
    assert {("view_0", "RandomResizedCropRGBImageDecoder"), ("view_1", "RandomResizedCropRGBImageDecoder"),
            ("view_1", "GaussianBlur"), ("view_0", "RandomHorizontalFlip")} <= ops


def _baseline_anon():
    """Anonymous memory of a Python that has imported torch and ffcv_go's
    loader: what a memory cgroup cannot reclaim from the doctor's process."""
    code = ("import re, torch, ffcv_go.loader, ffcv_go.doctor; "
            "print(re.search(r'RssAnon:\\s+(\\d+) kB', open('/proc/self/status').read()).group(1))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(ROOT / "python")})
    return int(out.stdout.strip()) << 10


def test_storage_bound_file_larger_than_memory(big_photos):
    """Under a memory cgroup leaving about half the file's size beside the
    process, on storage throttled to 30 MB/s: storage, and QUASI_RANDOM with
    the process cache, measured faster from a cold cache."""
    why = Limits.unavailable(str(big_photos), memory=True, blkio=True)
    if why:
        pytest.skip(why)
    size = os.path.getsize(big_photos)
    limit = (_baseline_anon() + size // 2 + (40 << 20)) // 4096 * 4096  # the kernel keeps whole pages
    cmd = [sys.executable, "-m", "ffcv_go", "doctor", str(big_photos), "--json", "--batch-size", "16",
           "--res", "128", "--max-seconds", "14", "--progress"]
    with Limits(memory=limit, read_bps=30e6, path=str(big_photos)) as lim:
        try:
            proc = subprocess.run(cmd, preexec_fn=lim.enter, capture_output=True, text=True, timeout=120,
                                  env={**os.environ, "PYTHONPATH": str(ROOT / "python")})
        except subprocess.TimeoutExpired as e:  # where it was: the progress bar's last phase
            pytest.fail(f"the doctor ran past 120 s: {(e.stderr or b'')[-600:]!r}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    r = json.loads(proc.stdout)
    assert r["machine"]["cgroup_memory_limit"] == limit
    assert not r["dataset"]["fits_in_memory"], r["machine"]
    assert r["bottleneck"] == "storage", (r["summary"], r["loader"].get("cold"))
    first = r["recommendations"][0]["setting"]
    assert "os_cache=False" in first and "QUASI_RANDOM" in first, r["recommendations"]
    cold = {(c["order"], c["os_cache"]): c["img_s"] for c in r["loader"]["cold"]}
    assert cold[("QUASI_RANDOM", False)] > 1.5 * cold[("RANDOM", True)], cold
    # The page reads went through the throttle: tens of MB/s, not the disk's rate.
    assert r["storage"]["cold_page_mb_s"] < 60, r["storage"]


@pytest.mark.parametrize("kwargs,error,match", [
    ({"order": "shuffled"}, ValueError, "order 'shuffled'"),
    ({"evict": "sometimes"}, ValueError, "evict 'sometimes'"),
    ({"epochs": 0}, ValueError, "epochs 0"),
    ({"loader_kwargs": {"batch_size": 3}}, ValueError, "batch_size: set by the doctor"),
    ({"pipeline": "nonexistent.py"}, ValueError, "nonexistent.py"),
    ({"pipeline": "augment"}, ValueError, "'train', 'val'"),
    ({"model": "no_such_model"}, ValueError, "no_such_model"),
    ({"batch_size": 0}, ValueError, "batch_size"),
    ({"max_seconds": 1}, ValueError, "max_seconds"),
    ({"num_workers": 0}, ValueError, "num_workers"),
])
def test_bad_arguments(big_photos, kwargs, error, match):
    with pytest.raises(error, match=match):
        diagnose(big_photos, progress=False, **kwargs)
