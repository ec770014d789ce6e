"""The bottleneck doctor's verdicts on constructed cases: a heavy pipeline on
one worker (CPU), a slow model (model), a file larger than the memory the
process may use on slow storage (storage), and its decision rules alone."""
import copy
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from ffcv_go.doctor import Recommendation, Report, decide, diagnose, memory_info, usable_cores
from ffcv_go.fields.decoders import RandomResizedCropRGBImageDecoder
from ffcv_go.transforms import (NormalizeImage, RandomBrightness, RandomContrast, RandomHorizontalFlip,
                                RandomSaturation, ToTensor, ToTorchImage)

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
from limits import Limits  # noqa: E402

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
    # 800 px stored for 256 px crops: max_resolution (from the metadata). More
    # workers only where the scan measured them faster: on a machine whose
    # other jobs hold the other cores it may not (the decision rules' test
    # checks that case alone).
    assert "max_resolution=320" in settings, report.format()
    workers = [r for r in report.recommendations if "num_workers=" in r.setting]
    assert all(int(r.setting.split("num_workers=")[1].split(")")[0]) > 1 for r in workers), report.format()
    best = max(report.loader["scan"], key=lambda p: p["img_s"])
    if usable_cores() > 1 and best["workers"] > 1 and best["img_s"] > 1.1 * report.loader["current"]["img_s"]:
        assert workers, report.format()
    scan = report.loader["scan"]
    assert [p["workers"] for p in scan][0] == 1 and all(p["img_s"] > 0 for p in scan)
    share = report.loader["stages"]["share"]
    assert abs(sum(share.values()) - 1) < 1e-6 and share["entropy_decode"] > 0.05 and share["ops"] > 0
    assert report.loader["current"]["cpu_ms_per_image"] > 0 and report.loader["first_batch_s"] > 0
    assert report.storage["cold_page_mb_s"] > 0 and report.storage["warm_mb_s"] > 0
    assert report.dataset["fits_in_memory"] and report.dataset["images"]["median_width"] == 800
    text = report.format()
    assert "bottleneck: CPU" in text and "entropy decode" in text
    json.loads(report.to_json())
    report.plot(tmp_path / "report.png")
    assert (tmp_path / "report.png").read_bytes()[:4] == b"\x89PNG"


class SlowModel(torch.nn.Module):
    """A model whose training step takes 0.25 s whatever the batch."""

    def __init__(self):
        super().__init__()
        self.head = torch.nn.Linear(3, 10)

    def forward(self, x):
        time.sleep(0.25)
        return self.head(x.mean(dim=(2, 3)))


def test_model_bound_slow_model(big_photos):
    report = diagnose(big_photos, pipeline="train", res=160, batch_size=32, model=SlowModel(), max_seconds=8,
                      progress=False)
    assert report.bottleneck == "model", report.format()
    assert report.model["img_s"] < 32 / 0.25 * 1.05
    assert report.model["img_s"] < report.loader["current"]["img_s"]
    assert loader_advice(report) == [], report.format()
    assert "Nothing to change in the loader" in report.summary


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


# ---- the decision rules alone, on made-up measurements ---------------------------------------

def _report(**over):
    scan = [{"workers": 1, "img_s": 500.0, "cpu_ms_per_image": 2.0, "cores_busy": 1.0},
            {"workers": 2, "img_s": 950.0, "cpu_ms_per_image": 2.1, "cores_busy": 2.0}]
    r = Report(data="x.beton",
               settings={"pipeline": "train", "res": 224, "batch_size": 256, "num_workers": 2, "order": "random",
                         "os_cache": True, "device": "cpu", "amp": False},
               machine={"cores": 2, "usable_memory": 8 << 30, "load_average": [0.1, 0.1, 0.1]},
               dataset={"samples": 100_000, "bytes": 4 << 30, "page_size": 8 << 20, "remote": False,
                        "mean_sample_bytes": 40_000.0, "fits_in_memory": True,
                        "images": {"field": "image", "median_width": 400, "median_height": 300,
                                   "jpeg_fraction": 1.0}},
               storage={"kind": "local", "cold_page_mb_s": 500.0, "cold_sample_mb_s": 100.0, "warm_mb_s": 5000.0},
               loader={"scan": scan, "current": scan[1], "best": scan[1],
                       "pipeline_facts": {"output_size": [224, 224], "normalize_on_cpu": False},
                       "stages": {"ms_per_image": {}, "share": {}}})
    for k, v in over.items():
        obj, _, key = k.partition("__")
        getattr(r, obj)[key] = v
    return r


def _cold(random_rate, quasi_rate):
    return [{"workers": 2, "order": "RANDOM", "os_cache": True, "img_s": random_rate, "pages_read": 0},
            {"workers": 2, "order": "QUASI_RANDOM", "os_cache": False, "img_s": quasi_rate, "pages_read": 10}]


@pytest.mark.parametrize("name,change,verdict,want,unwanted", [
    ("cpu, all cores busy", {}, "cpu", [], ["num_workers", "os_cache"]),
    ("cpu, one of two workers", {"settings__num_workers": 1, "loader__current": {
        "workers": 1, "img_s": 500.0, "cpu_ms_per_image": 2.0, "cores_busy": 1.0}}, "cpu", ["num_workers=2"], []),
    ("cpu, oversubscribed", {"settings__num_workers": 8, "loader__current": {
        "workers": 8, "img_s": 800.0, "cpu_ms_per_image": 2.5, "cores_busy": 2.0}}, "cpu", ["num_workers=2"], []),
    ("cpu, big stored images", {"dataset__images": {"field": "image", "median_width": 2000, "median_height": 1500,
                                                    "jpeg_fraction": 1.0}}, "cpu", ["max_resolution=256"], []),
    ("cpu, normalised on the CPU for a GPU", {"settings__device": "cuda", "loader__pipeline_facts": {
        "output_size": [224, 224], "normalize_on_cpu": True}}, "cpu", ["ToDevice"], []),
    ("storage", {"dataset__fits_in_memory": False, "loader__cold": _cold(90.0, 800.0)}, "storage",
     ["QUASI_RANDOM"], ["num_workers"]),
    ("larger than memory, cold reads keep up", {"dataset__fits_in_memory": False,
                                                 "loader__cold": _cold(900.0, 940.0)}, "cpu", [], ["os_cache"]),
    ("model slower than the loader", {"model": {"name": "m", "device": "cuda", "amp": False, "img_s": 300.0}},
     "model", ["autocast"], ["num_workers", "os_cache", "max_resolution", "ToDevice"]),
    ("model faster than the loader", {"model": {"name": "m", "device": "cpu", "amp": False, "img_s": 3000.0}},
     "cpu", [], []),
    ("an epoch under a second", {"dataset__samples": 500}, "none", [], ["num_workers", "os_cache"]),
])
def test_decide(name, change, verdict, want, unwanted):
    change = copy.deepcopy(change)
    model = change.pop("model", None)
    r = _report(**change)
    r.model = model
    decide(r)
    assert r.bottleneck == verdict, (name, r.summary)
    settings = " ".join(x.setting for x in r.recommendations)
    for w in want:
        assert w in settings, (name, settings)
    for u in unwanted:
        assert u not in settings, (name, settings)
    assert all(isinstance(x, Recommendation) and x.why for x in r.recommendations)


def test_decide_notes_a_busy_machine():
    r = decide(_report(machine__load_average=[3.0, 3.0, 3.0]))
    assert any("other processes" in n for n in r.notes)


def test_memory_info_reads_this_machine():
    m = memory_info()
    assert m["total"] > 0 and 0 < m["usable"] <= m["total"]


@pytest.mark.parametrize("kwargs,error,match", [
    ({"order": "shuffled"}, ValueError, "order 'shuffled'"),
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
