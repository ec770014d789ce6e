"""The doctor's measurements alone (ffcv_go.doctor._measure, _model): the
storage reads with and without dropping the file from the page cache, the
loader's time by operation, training steps of real torchvision models
(classification, segmentation, detection), and the loader feeding a model
as training does."""
import time

import numpy as np
import pytest
import torch
import torchvision

from ffcv_go.doctor._measure import builtin_pipeline, op_times, run_loader, storage_local
from ffcv_go.doctor._model import TrainStep, failure, measure_alone, measure_together, resolve_model
from ffcv_go.doctor._probe import Layout
from ffcv_go.fields.decoders import IntDecoder, RandomResizedCropRGBImageDecoder
from ffcv_go.reader import Reader
from ffcv_go.transforms import GaussianBlur, RandomHorizontalFlip, Squeeze, ToTensor, ToTorchImage



@pytest.fixture(autouse=True)
def one_torch_thread():
    """The models' steps on one thread: the loader's workers have the other
    core (two torch threads spin against them on a 2-core machine)."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.mark.parametrize("evict", [True, False])
def test_storage_reads(photo_beton, evict):
    reader = Reader(photo_beton)
    out = storage_local(str(photo_beton), reader, Layout(reader), 0.5, np.random.default_rng(0), evict)
    assert out["evicted"] is evict and out["warm_mb_s"] > 0
    pre = "cold_" if evict else ""
    assert out[f"{pre}page_mb_s"] > 0 and out[f"{pre}sample_mb_s"] > 0 and out[f"{pre}page_reads"] >= 1
    assert not any(k.startswith("cold_") for k in out) if not evict else "page_mb_s" not in out


def blurred(res=128):
    """RandomResizedCrop, flip and a wide Gaussian blur: the blur dominates."""
    return {"image": [RandomResizedCropRGBImageDecoder((res, res)), RandomHorizontalFlip(),
                      GaussianBlur(blur_prob=1.0, kernel_size=31, sigma=(8.0, 8.0)), ToTensor(), ToTorchImage()],
            "label": [IntDecoder(), ToTensor(), Squeeze()]}


def test_loader_time_by_operation(photo_beton):
    run = run_loader(photo_beton, blurred, workers=1, batch_size=8, order="random", os_cache=True, indices=None,
                     seconds=1.0)
    assert run["img_s"] > 0 and run["stages"]["ops"]["count"] > 0
    ops = op_times(run["ops"])
    assert abs(sum(o["share"] for o in ops) - 1) < 1e-9
    assert ops[0]["op"] == "GaussianBlur" and not ops[0]["decoder"], ops
    decoder = next(o for o in ops if o["decoder"])
    assert decoder["op"] == "RandomResizedCropRGBImageDecoder" and decoder["output"] == "image"
    assert [o["op"] for o in ops if o["output"] == "label" and o["where"] == "go"] == ["IntDecoder"]


@pytest.mark.parametrize("ops,want", [
    # the first Go operation of each output is its decoder; Python stages never are
    ([{"output": "a", "op": "Dec", "where": "go", "seconds": 3.0, "count": 10},
      {"output": "a", "op": "Blur", "where": "go", "seconds": 1.0, "count": 10},
      {"output": "b", "op": "IntDecoder", "where": "go", "seconds": 0.0, "count": 10},
      {"output": "a", "op": "Custom", "where": "python", "seconds": 1.0, "count": 10}],
     [("Dec", True, 300.0, 0.6), ("Blur", False, 100.0, 0.2), ("Custom", False, 100.0, 0.2),
      ("IntDecoder", True, 0.0, 0.0)]),
    ([{"output": "a", "op": "Never", "where": "go", "seconds": 0.0, "count": 0}], []),
])
def test_op_times(ops, want):
    got = [(o["op"], o["decoder"], o["ms_per_image"], o["share"]) for o in op_times(ops)]
    assert got == [pytest.approx(w) for w in want]


# ---- models ------------------------------------------------------------------------------

def _detection():
    return torchvision.models.get_model("fasterrcnn_mobilenet_v3_large_fpn", weights=None, weights_backbone=None,
                                        num_classes=3, min_size=64, max_size=64, rpn_pre_nms_top_n_train=64,
                                        rpn_post_nms_top_n_train=64, box_batch_size_per_image=32)


@pytest.mark.parametrize("make,kind", [
    (lambda: torchvision.models.get_model("mobilenet_v3_small", weights=None, num_classes=3), "classification"),
    (lambda: torchvision.models.get_model("lraspp_mobilenet_v3_large", weights=None, weights_backbone=None,
                                          num_classes=4), "segmentation"),
    (_detection, "detection"),
])
def test_train_step_on_real_models(photo_beton, make, kind):
    """One step of each on a loader's batch: its loss is finite and its
    parameters change."""
    m = make()
    step = TrainStep(m, kind, "cpu", False)
    loader_make = builtin_pipeline("train", Reader(photo_beton), 64, "cpu", False)
    from ffcv_go import Loader
    loader = Loader(photo_beton, batch_size=4, num_workers=1, pipelines=loader_make(), drop_last=False)
    batch = next(iter(loader))
    before = [p.detach().clone() for p in m.parameters() if p.requires_grad]
    x, labels = step.inputs(batch)
    assert x.shape == (4, 3, 64, 64) and x.dtype == torch.float32 and labels.dtype == torch.int64
    loss = step(x, labels)
    loader.close()
    assert torch.isfinite(loss) and step.kind == kind
    after = [p for p in m.parameters() if p.requires_grad]
    assert any(not torch.equal(a, b) for a, b in zip(before, after))


def test_named_detection_model_downloads_nothing(monkeypatch):
    def no_download(*a, **k):
        raise AssertionError(f"download of {a[:1]}")
    monkeypatch.setattr(torch.hub, "load_state_dict_from_url", no_download)
    m, name = resolve_model("lraspp_mobilenet_v3_large")
    assert name == "lraspp_mobilenet_v3_large" and type(m).__name__ == "LRASPP"


class Odd(torch.nn.Module):
    """A model whose output the doctor cannot make a loss of."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(1))

    def forward(self, x):
        return {"text": "no tensor here"}


def test_train_step_unknown_output():
    step = TrainStep(Odd(), "odd", "cpu", False)
    with pytest.raises(ValueError, match="cannot make a loss of the model's output"):
        step(torch.zeros(2, 3, 8, 8))


def test_measure_alone_segmentation():
    m = torchvision.models.get_model("lraspp_mobilenet_v3_large", weights=None, weights_backbone=None, num_classes=4)
    out = measure_alone(TrainStep(m, "lraspp", "cpu", False), 2, (32, 32), 0.5)
    assert out["kind"] == "segmentation" and out["steps"] >= 1 and out["img_s"] > 0


@pytest.mark.parametrize("error,oom", [
    (torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"), True),
    (RuntimeError("mat1 and mat2 shapes cannot be multiplied (4x10 and 3x5)"), False),
])
def test_failure(error, oom):
    out = failure("m", error, 256, "cuda:0")
    assert out["out_of_memory"] is oom and type(error).__name__ in out["error"]
    assert ("--batch-size 128" in out.get("advice", "")) is oom


# ---- the loader feeding the model ---------------------------------------------------------------

class Sleepy(torch.nn.Module):
    """A training step of `seconds` whatever the batch."""

    def __init__(self, seconds):
        super().__init__()
        self.seconds = seconds
        self.head = torch.nn.Linear(3, 3)

    def forward(self, x):
        time.sleep(self.seconds)
        return self.head(x.float().mean(dim=(2, 3)))


@pytest.mark.parametrize("seconds,loader_bound", [(0.0, True), (0.2, False)])
def test_together_counts_the_waits(photo_beton, seconds, loader_bound):
    """A blurring loader on one worker feeding a model that costs nothing:
    the training loop mostly waits in next(); feeding a model that sleeps
    0.2 s a step, it hardly does."""
    step = TrainStep(Sleepy(seconds), "sleepy", "cpu", False)
    out = measure_together(photo_beton, blurred, step, workers=1, batch_size=8, order="random", os_cache=True,
                           indices=None, seconds=1.5)
    assert out["steps"] >= 2 and out["images"] == 8 * out["steps"]
    assert 0 <= out["wait_share"] <= 1 and out["wait_s"] <= out["seconds"]
    assert out["device_busy_share"] == pytest.approx(out["step_s"] / out["seconds"])
    if loader_bound:
        assert out["wait_share"] > 0.5, out
    else:
        assert out["wait_share"] < 0.1, out
        assert out["img_s"] < 8 / 0.2 * 1.05
