"""Loader(trace=...): the Chrome/Perfetto trace, the stage times in
loader.stats, and the training loop's waits."""
import json
import re
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch

from ffcv_go import Loader, _lib
from ffcv_go.fields.decoders import RandomResizedCropRGBImageDecoder
from ffcv_go.loader import OrderOption
from ffcv_go.pipeline.operation import Operation
from ffcv_go.transforms import Convert, RandomHorizontalFlip, ToTensor, ToTorchImage

HEADER = (Path(__file__).resolve().parents[2] / "include" / "ffcv_go.h").read_text()


class AddOne(Operation):
    """A custom (Python) operation, so the trace has a Python stage."""

    def generate_code(self):
        def add(images, dst):
            dst[:] = images + 1
            return dst
        return add

    def declare_state_and_memory(self, previous_state):
        from ffcv_go.pipeline.allocation_query import AllocationQuery
        return previous_state, AllocationQuery(previous_state.shape, previous_state.dtype)


def pipelines(custom=False):
    image = [RandomResizedCropRGBImageDecoder((64, 64)), RandomHorizontalFlip()]
    if custom:
        image.append(AddOne())
    return {"image": image + [ToTensor(), ToTorchImage(), Convert(torch.float16)], "label": None}


def run(path, trace, custom=False, epochs=1):
    loader = Loader(path, batch_size=8, num_workers=2, order=OrderOption.RANDOM, seed=3,
                    pipelines=pipelines(custom), trace=trace)
    out = [x.clone() for _ in range(epochs) for (x,) in loader]
    stats = loader.stats
    loader.close()
    return out, stats


def test_stage_constants_match_header():
    defines = dict(re.findall(r"#define (FFCV_(?:STAGE|TRACK)_\w+)\s+\(?(-?\d+)\)?", HEADER))
    stages = {int(v): k for k, v in defines.items() if k.startswith("FFCV_STAGE_")}
    assert sorted(stages) == list(range(len(_lib.STAGES)))
    for value, name in stages.items():
        assert f'#define {name} {value} /* "{_lib.STAGES[value]}"' in re.sub(r" +", " ", HEADER), name
    assert int(defines["FFCV_TRACK_PAGES"]) == _lib.TRACK_PAGES
    assert int(defines["FFCV_TRACK_BATCH"]) == _lib.TRACK_BATCH


def test_trace_file(photo_beton, tmp_path):
    path = tmp_path / "trace.json"
    plain, _ = run(photo_beton, None, custom=True)
    t0 = time.monotonic_ns() / 1000
    traced, stats = run(photo_beton, str(path), custom=True, epochs=2)
    t1 = time.monotonic_ns() / 1000
    assert all(torch.equal(a, b) for a, b in zip(plain, traced[:len(plain)])), "tracing changed the batches"
    events = json.loads(path.read_text())  # valid JSON once the loader is closed
    spans = [e for e in events if e["ph"] == "X"]
    names = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
    by = Counter((e["cat"], e["name"]) for e in spans)
    n = 2 * 24  # two epochs of 24 photos (3 batches each)
    for stage in ("read", "entropy_decode", "idct_resize", "ops"):
        assert by[("go", stage)] == n, (stage, by)
    assert by[("training loop", "wait for batch")] == 6
    assert by[("loader", "wait for Go")] == 6
    assert by[("python stage", "AddOne")] == 6
    workers = {names[e["tid"]] for e in spans if e["cat"] == "go"}
    assert workers == {"go worker 0", "go worker 1"}
    assert sorted({e["args"]["sample"] for e in spans if e["cat"] == "go"}) == list(range(24))
    # One clock: every span lies within the run, Go's and Python's alike.
    assert all(t0 <= e["ts"] and e["ts"] + e["dur"] <= t1 for e in spans)
    # A sample's stages follow each other on its worker's track.
    first = sorted((e for e in spans if e["cat"] == "go" and e["args"]["sample"] == 5), key=lambda e: e["ts"])[:4]
    assert [e["name"] for e in first] == ["read", "entropy_decode", "idct_resize", "ops"]
    assert all(abs(a["ts"] + a["dur"] - b["ts"]) < 0.01 for a, b in zip(first, first[1:]))
    assert stats["stages"]["entropy_decode"]["count"] == n and stats["stages"]["idct_resize"]["seconds"] > 0


def test_trace_process_cache_pages(photo_beton, tmp_path):
    path = tmp_path / "trace.json"
    loader = Loader(photo_beton, batch_size=8, num_workers=2, order=OrderOption.QUASI_RANDOM, os_cache=False,
                    pipelines=pipelines(), trace=str(path))
    for _ in loader:
        pass
    pages = loader.stats["pages_read"]
    loader.close()
    spans = [e for e in json.loads(path.read_text()) if e["ph"] == "X" and e["name"] == "page_read"]
    assert pages >= 1 and len(spans) == pages


def test_stats_only_and_off(photo_beton, tmp_path):
    _, stats = run(photo_beton, True)
    assert set(stats["stages"]) == {"read", "entropy_decode", "idct_resize", "ops"}
    assert all(v["count"] == 24 and v["seconds"] >= 0 for v in stats["stages"].values())
    assert stats["waits"] == 3 and stats["wait_seconds"] > 0
    _, stats = run(photo_beton, None)
    assert "stages" not in stats and stats["waits"] == 3
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("trace,error,match", [
    (7, ValueError, "trace=7"),
    ("", ValueError, "empty path"),
    ("/nonexistent/dir/trace.json", FileNotFoundError, "no directory"),
])
def test_bad_trace_argument(photo_beton, trace, error, match):
    with pytest.raises(error, match=match):
        Loader(photo_beton, batch_size=8, pipelines=pipelines(), trace=trace)


def test_go_spans_through_lib(photo_beton):
    loader = Loader(photo_beton, batch_size=8, num_workers=1, pipelines=pipelines(), trace=True)
    for _ in loader:
        pass
    spans = _lib.loader_trace(loader._build.handle)  # "stages" mode keeps none
    assert len(spans) == 0 and spans.dtype.itemsize == 32
    loader.close()
    assert np.dtype(_lib._trace_dtype()).names == ("start_ns", "dur_ns", "arg", "track", "stage")


def test_spans_are_written_off_the_training_thread(photo_beton, tmp_path, monkeypatch):
    """The training loop hands its spans to the tracer's writer thread, which
    writes them (and Go's) and records each write as a span of its own."""
    import threading

    from ffcv_go import _trace
    monkeypatch.setattr(_trace, "FLUSH_EVERY", 2)  # a write every second batch
    path = tmp_path / "trace.json"
    _, stats = run(photo_beton, str(path), epochs=2)  # 6 batches
    events = json.loads(path.read_text())
    names = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
    spans = [e for e in events if e["ph"] == "X"]
    waits = [e for e in spans if e["name"] == "wait for batch"]
    writes = [e for e in spans if e["name"] == "write trace"]
    assert len(waits) == 6
    training = {e["tid"] for e in waits}
    assert training == {threading.get_native_id()}
    # Writes at batches 2, 4, 6 and the end of each epoch, one more at close
    # (queued writes never run on the training thread).
    assert len(writes) >= 3 and all(e["cat"] == "trace" for e in writes)
    assert {names[e["tid"]] for e in writes} == {"ffcv_go trace writer"}
    assert not training & {e["tid"] for e in writes}
    assert sum(e["args"]["go_spans"] for e in writes) == 2 * 24 * 4  # every Go span, written once
    assert sum(1 for e in spans if e["cat"] == "go") == 2 * 24 * 4
    assert not [t for t in threading.enumerate() if t.name == "ffcv_go trace writer"], "the writer outlived close()"


def test_op_times_name_each_operation(photo_beton):
    """trace=True times each operation: Go's per sample, named as in the
    pipeline, and Python stages; the costliest one stands out."""
    from ffcv_go.transforms import GaussianBlur
    image = [RandomResizedCropRGBImageDecoder((64, 64)), RandomHorizontalFlip(),
             GaussianBlur(blur_prob=1.0, kernel_size=31, sigma=(8.0, 8.0)), AddOne(),
             ToTensor(), ToTorchImage(), Convert(torch.float16)]
    loader = Loader(photo_beton, batch_size=8, num_workers=2, order=OrderOption.RANDOM, seed=3,
                    pipelines={"image": image, "label": None}, trace=True)
    for _ in range(2):
        for _ in loader:
            pass
    ops = loader.stats["ops"]
    loader.close()
    go = {o["op"]: o for o in ops if o["where"] == "go"}
    assert list(go) == ["RandomResizedCropRGBImageDecoder", "RandomHorizontalFlip", "GaussianBlur"]
    assert go["GaussianBlur"]["go_op"] != "GaussianBlur" and all(o["output"] == "image" for o in ops)
    assert all(o["count"] == 2 * 24 for o in go.values())
    assert go["GaussianBlur"]["seconds"] > 5 * go["RandomHorizontalFlip"]["seconds"]
    py = [o for o in ops if o["where"] == "python"]
    assert [o["op"] for o in py if o["op"] == "AddOne"] == ["AddOne"]
    assert next(o for o in py if o["op"] == "AddOne")["count"] == 2 * 24
    _, stats = run(photo_beton, None)
    assert "ops" not in stats
