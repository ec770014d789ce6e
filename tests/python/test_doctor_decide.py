"""The doctor's decision rules alone (ffcv_go.doctor._decide), table-driven
over made-up measurements: verdicts, recommendations, the first epoch from a
cold cache. Nothing is measured here."""
import copy

import pytest

from ffcv_go.doctor import Recommendation, decide
from ffcv_go.doctor._decide import (FIRST_EPOCH_FLAG_SHARE, LOADER_BOUND_WAIT_SHARE, RECIPE_MAX_RESOLUTION,
                                    RECIPE_TRAIN_RES, first_epoch)

from _doctor_cases import BIG, NFS, alone, cold, measured, op, together

LOADER_TARGETS = {"Loader", "DatasetWriter", "pipeline"}
GiB = 1 << 30


CASES = [
    # (name, measurements, verdict, wanted in the settings, unwanted in the settings)
    ("cpu, all cores busy", {}, "cpu", [], ["num_workers", "os_cache", "max_resolution"]),
    ("cpu, one of two workers", {"settings__num_workers": 1, "loader__current": {
        "workers": 1, "img_s": 500.0, "cpu_ms_per_image": 2.0, "cores_busy": 1.0}}, "cpu", ["num_workers=2"], []),
    ("cpu, oversubscribed", {"settings__num_workers": 8, "loader__current": {
        "workers": 8, "img_s": 800.0, "cpu_ms_per_image": 2.5, "cores_busy": 2.0}}, "cpu", ["num_workers=2"], []),
    ("cpu, big stored images", {"dataset__images": BIG}, "cpu", ["max_resolution=480"], ["max_resolution=256"]),
    ("cpu, stored images within the recipes' margin",
     {"dataset__images": dict(BIG, median_width=600, median_height=450)}, "cpu", [], ["max_resolution"]),
    ("cpu, normalised on the CPU for a GPU", {"settings__device": "cuda", "loader__pipeline_facts": {
        "output_size": [224, 224], "normalize_on_cpu": True}}, "cpu", ["ToDevice"], []),
    ("cpu, one operation dominates", {"loader__ops": [op("RandomResizedCropRGBImageDecoder", 0.4, decoder=True),
                                                      op("GaussianBlur", 0.55, 3.1), op("RandomHorizontalFlip", 0.05)]},
     "cpu", ["pipeline: GaussianBlur, 3.10 ms"], ["Flip"]),
    ("cpu, the decoder dominates", {"loader__ops": [op("RandomResizedCropRGBImageDecoder", 0.9, decoder=True),
                                                    op("RandomHorizontalFlip", 0.1)]}, "cpu", [], ["pipeline:"]),
    ("storage", {"dataset__fits_in_memory": False, "loader__cold": cold(90.0, 800.0)}, "storage",
     ["QUASI_RANDOM"], ["num_workers"]),
    ("larger than memory, cold reads keep up", {"dataset__fits_in_memory": False, "loader__cold": cold(900.0, 940.0)},
     "cpu", [], ["os_cache"]),
    # With a model, the loader feeding it decides: the share of the time the
    # training loop waited in next(), with a margin, not the two rates apart.
    ("training waited 2%", {"together": together(0.02), "model": alone(300.0)}, "model", [],
     ["num_workers", "os_cache", "max_resolution", "ToDevice"]),
    ("training waited 2% on a GPU without AMP", {"together": together(0.02, device="cuda")}, "model",
     ["autocast"], ["num_workers"]),
    ("training waited just under the margin", {"together": together(LOADER_BOUND_WAIT_SHARE - 0.01)}, "model", [],
     ["num_workers"]),
    ("training waited just over the margin", {"together": together(LOADER_BOUND_WAIT_SHARE + 0.01)}, "cpu", [], []),
    ("the loader alone 1% faster than the model alone, training waited 25%",
     {"together": together(0.25, img_s=700.0), "model": alone(940.0)}, "cpu", [], []),
    ("the model alone slower than the loader, training waited 40%: contention",
     {"together": together(0.4), "model": alone(600.0), "dataset__images": BIG}, "cpu", ["max_resolution"], []),
    ("training keeps up on warm data, cold storage does not",
     {"together": together(0.01, img_s=400.0), "dataset__fits_in_memory": False, "loader__cold": cold(90.0, 800.0)},
     "storage", ["QUASI_RANDOM"], []),
    ("the model failed: the loader's verdict",
     {"model": {"name": "m", "device": "cuda:0", "error": "OutOfMemoryError: CUDA out of memory",
                "out_of_memory": True, "advice": "try --batch-size 128"}, "together": None}, "cpu", [], []),
    ("an epoch under a second", {"dataset__samples": 500}, "none", [], ["num_workers", "os_cache"]),
]


@pytest.mark.parametrize("name,change,verdict,want,unwanted", CASES, ids=[c[0] for c in CASES])
def test_decide(name, change, verdict, want, unwanted):
    r = decide(measured(**copy.deepcopy(change)))
    assert r.bottleneck == verdict, (name, r.summary)
    settings = " ".join(x.setting for x in r.recommendations)
    for w in want:
        assert w in settings, (name, settings)
    for u in unwanted:
        assert u not in settings, (name, settings)
    assert all(isinstance(x, Recommendation) and x.why for x in r.recommendations)
    assert r.summary
    if verdict == "model":
        assert not [x for x in r.recommendations if x.target in LOADER_TARGETS]
        assert "Nothing to change in the loader" in r.summary and "waited in next()" in r.summary


def test_a_failed_model_is_a_note():
    r = decide(measured(model={"name": "fasterrcnn", "device": "cuda:0", "error": "OutOfMemoryError: CUDA out of "
                                                                                  "memory", "out_of_memory": True,
                               "advice": "try --batch-size 128"}))
    note = next(n for n in r.notes if "could not train" in n)
    assert "fasterrcnn" in note and "OutOfMemoryError" in note and "--batch-size 128" in note


def test_max_resolution_says_what_the_model_loses():
    """For random-resized crops the advice keeps the recipes' smallest
    margin, says the crops lose detail, and gives the faster value with
    its cost; for centre crops it has no such warning."""
    r = decide(measured(dataset__images=BIG))
    rec = next(x for x in r.recommendations if x.target == "DatasetWriter")
    target = -(-224 * RECIPE_MAX_RESOLUTION // RECIPE_TRAIN_RES // 16) * 16
    assert f"max_resolution={target}" in rec.setting and target == 480
    assert "changes what the model sees" in rec.why and "lose detail" in rec.why
    assert "ffcv-imagenet" in rec.why and "400 px" in rec.why and "500 px" in rec.why
    assert "max_resolution=256" in rec.why and "compare accuracy" in rec.why
    assert "about 6% of the pixels" in rec.why  # (480 / 2000)^2
    r = decide(measured(dataset__images=BIG, loader__pipeline_facts={"output_size": [224, 224],
                                                                     "normalize_on_cpu": False, "random_crop": False}))
    rec = next(x for x in r.recommendations if x.target == "DatasetWriter")
    assert "random-resized" not in rec.why and "ffcv-imagenet" in rec.why


def test_busy_machine_note():
    r = decide(measured(machine__load_average=[3.0, 3.0, 3.0]))
    assert any("other processes" in n for n in r.notes)


# ---- the first epoch from a cold cache ------------------------------------------------------

FIRST_EPOCH = [
    # (name, measurements, training img/s, extra seconds, flagged)
    # 4 GiB of samples read at 20 MB/s: 214.7 s; a warm epoch 100,000 / 950 = 105.3 s.
    ("network storage, RANDOM through the OS cache: sample reads",
     {"dataset__filesystem": NFS, "storage__cold_sample_mb_s": 20.0}, 950.0, 4 * GiB / 20e6 - 100_000 / 950, True),
    # QUASI_RANDOM with the process cache reads whole pages: 500 MB/s keeps up.
    ("whole pages keep up", {"settings__order": "quasi_random", "settings__os_cache": False}, 950.0, 0.0, False),
    # The same 500 MB/s of pages with a fast model: 4 GiB in 8.6 s, warm 100,000 / 40,000 = 2.5 s.
    ("whole pages, a fast training loop", {"settings__order": "quasi_random", "settings__os_cache": False},
     40_000.0, 4 * GiB / 500e6 - 2.5, True),
    # ... and a training loop half as fast: +3.6 s is 4.3% of 16 epochs of 5 s, under the flag.
    ("whole pages, a training loop that hides most of it",
     {"settings__order": "quasi_random", "settings__os_cache": False}, 20_000.0, 4 * GiB / 500e6 - 5.0, False),
]


@pytest.mark.parametrize("name,change,train_rate,extra,flagged", FIRST_EPOCH, ids=[c[0] for c in FIRST_EPOCH])
def test_first_epoch(name, change, train_rate, extra, flagged):
    fe = first_epoch(measured(**change), train_rate)
    assert fe["extra_s"] == pytest.approx(extra, rel=1e-6, abs=1e-9), name
    warm = 100_000 / train_rate
    for epochs in (16, 88):
        assert fe["schedule_share"][str(epochs)] == pytest.approx(extra / (epochs * warm + extra), abs=1e-9)
    assert fe["flagged"] == flagged == (fe["schedule_share"]["16"] >= FIRST_EPOCH_FLAG_SHARE)


def test_first_epoch_flag_is_advice():
    r = decide(measured(dataset__filesystem=NFS, storage__cold_sample_mb_s=20.0, settings__epochs=12))
    fe = r.first_epoch
    assert fe["flagged"] and fe["network"] and fe["schedules"] == [12, 16, 88]
    # The schedule given decides the flag: +109 s is 3.4% of 30 epochs of 105 s.
    assert not decide(measured(dataset__filesystem=NFS, storage__cold_sample_mb_s=20.0,
                               settings__epochs=30)).first_epoch["flagged"]
    rec = next(x for x in r.recommendations if x.target == "storage")
    assert rec.setting.startswith("cat x.beton > /dev/null")
    assert "nfs4 (network) storage" in rec.why and "8% of 12 epochs, 6% of 16 epochs, 1% of 88 epochs of training" in rec.why
    assert r.bottleneck == "cpu"  # the steady state is the loader's: the first epoch is extra


@pytest.mark.parametrize("name,change", [
    ("larger than memory: every epoch reads storage", {"dataset__fits_in_memory": False}),
    ("remote", {"dataset__remote": True}),
])
def test_first_epoch_left_to_the_verdict(name, change):
    assert first_epoch(measured(**change), 950.0) is None


def test_first_epoch_unmeasured_on_network_storage():
    """Not evicted: no cold rate, and on network storage a note says so."""
    r = decide(measured(dataset__filesystem=NFS, storage={"kind": "local", "evicted": False, "page_mb_s": 900.0}))
    assert r.first_epoch["extra_s"] is None and not r.first_epoch["flagged"]
    assert any("network" in n and "not measured" in n for n in r.notes)
    assert not [x for x in r.recommendations if x.target == "storage"]
