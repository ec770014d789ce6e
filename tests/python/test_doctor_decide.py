"""The doctor's decision rules alone (ffcv_go.doctor._decide), table-driven
over made-up measurements: verdicts, recommendations, the first epoch from a
cold cache. Nothing is measured here."""
import copy

import pytest

from ffcv_go.doctor import Recommendation, decide
from ffcv_go.doctor._decide import (FIRST_EPOCH_FLAG_SHARE, LOADER_BOUND_WAIT_SHARE, RECIPE_MAX_RESOLUTION,
                                    RECIPE_TRAIN_RES, REMOTE_IN_FLIGHT_DEFAULT, STORAGE_BOUND_SHARE, first_epoch,
                                    source_rates)

from _doctor_cases import BIG, NFS, alone, cold, measured, mixture, op, source, together

LOADER_TARGETS = {"Loader", "DatasetWriter", "pipeline"}
GiB = 1 << 30


def check_recommendations(name, r, want, unwanted):
    """r's recommendations name every setting in want and none in unwanted,
    each with its reason."""
    settings = " ".join(x.setting for x in r.recommendations)
    for w in want:
        assert w in settings, (name, settings)
    for u in unwanted:
        assert u not in settings, (name, settings)
    assert all(isinstance(x, Recommendation) and x.why for x in r.recommendations)


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
    # On a GPU the loop also waits in next() for the GPU itself (ResNet-50 AMP
    # on an H200: 36% in next() while CUDA events had the GPU busy 93%).
    ("on a GPU: 36% in next(), the GPU busy 93%",
     {"together": together(0.36, img_s=5640.0, device="cuda", amp=True, busy=0.93), "model": alone(6045.0)},
     "model", [], ["num_workers"]),
    ("on a GPU: 36% in next(), the GPU busy 60%",
     {"together": together(0.36, img_s=3600.0, device="cuda", amp=True, busy=0.60), "model": alone(6045.0)},
     "cpu", [], []),
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
    # The verdict is the loader's alone: a model that failed does not block "none".
    ("an epoch under a second, the model failed",
     {"dataset__samples": 64, "dataset__images": BIG, "together": None,
      "model": {"name": "m", "device": "cpu", "error": "RuntimeError: forward failed", "out_of_memory": False}},
     "none", [], ["num_workers", "os_cache", "max_resolution"]),
]


@pytest.mark.parametrize("name,change,verdict,want,unwanted", CASES, ids=[c[0] for c in CASES])
def test_decide(name, change, verdict, want, unwanted):
    r = decide(measured(**copy.deepcopy(change)))
    assert r.bottleneck == verdict, (name, r.summary)
    check_recommendations(name, r, want, unwanted)
    assert r.summary
    if verdict == "model":
        assert not [x for x in r.recommendations if x.target in LOADER_TARGETS]
        assert "Nothing to change in the loader" in r.summary and "in next()" in r.summary


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


# ---- a Mixture: the source that limits it, weighted by its share ------------------------------

def local(name, share, img_s=20_000.0, **kw):
    return source(name, share, img_s, **kw)


def web(share, img_s, name="web", **kw):
    return source(name, share, img_s, remote=True, **kw)


# The loader decodes 950 img/s: storage limits below STORAGE_BOUND_SHARE x 950 = 760 img/s of epoch.
MIXTURES = [
    # (name, sources, local sources fit in memory, other measurements, verdict, the source named, wanted
    #  in the settings, unwanted in the settings)
    ("all local, fitting in memory: read once", [local("a", 0.6, 500.0), local("b", 0.4, 300.0)], True, {},
     "cpu", None, [], ["Source("]),
    # 10% of the samples at a tenth of the decoding rate costs what the whole epoch at full speed does.
    ("a remote source at 10% and a tenth of the speed keeps up", [local("a", 0.9), web(0.1, 95.0)], True, {},
     "cpu", None, [], ["Source(", "curl"]),
    ("a remote source at 10% and a twentieth of the speed limits", [local("a", 0.9), web(0.1, 47.5)], True, {},
     "storage", "web", ["Source('LOCAL_DISK/web.beton', ...)  # curl -o LOCAL_DISK/web.beton "
                        "https://data.example.org/web.beton"], ["FFCV_GO_REMOTE_IN_FLIGHT"]),
    # Unweighted, 600 img/s < 760 would be called storage; at half the epoch it allows 1,200 img/s.
    ("a half-share source slower than decoding keeps up", [local("a", 0.5), web(0.5, 600.0)], True, {},
     "cpu", None, [], ["Source("]),
    # The slowest source is not the one with the lowest rate: 5% at 40 img/s allows 800 img/s of epoch,
    # 40% at 280 img/s only 700.
    ("the lowest epoch rate, not the lowest rate, is named",
     [local("a", 0.55), web(0.05, 40.0, name="tiny"), web(0.4, 280.0, name="bulk")], True, {},
     "storage", "bulk", ["bulk.beton"], ["tiny.beton"]),
    ("sharded on S3: a recursive copy",
     [local("a", 0.7), web(0.3, 50.0, name="s3", files=[f"s3://bucket/web/part-{k}.beton" for k in range(3)])],
     True, {}, "storage", "s3", ["aws s3 cp --recursive s3://bucket/web/ LOCAL_DISK/s3/"], []),
    ("a slow network source read once: the first epoch's, not every epoch's",
     [local("a", 0.7), local("nfs", 0.3, 20.0, filesystem=NFS)], True, {}, "cpu", None, ["cat /data/a.beton "
                                                                                        "/data/nfs.beton"], []),
    ("local sources too big for memory: the network one limits",
     [local("a", 0.6), local("nfs", 0.4, 200.0, filesystem=NFS)], False, {}, "storage", "nfs",
     ["Source('LOCAL_DISK/nfs.beton', ...)  # cp /data/nfs.beton", "QUASI_RANDOM"], ["curl"]),
    ("local sources too big for memory on one disk: QUASI_RANDOM", [local("a", 0.5, 900.0), local("b", 0.5, 300.0)],
     False, {}, "storage", "b", ["QUASI_RANDOM"], ["Source("]),
    # With a model at 300 img/s the loop hardly waits: a source allowing 500 img/s of epoch is not the limit.
    ("training waits for the model, not for the slow source", [local("a", 0.9), web(0.1, 50.0)], True,
     {"together": together(0.02)}, "model", None, [], ["Source("]),
    ("training waits for the slow source", [local("a", 0.9), web(0.1, 20.0)], True,
     {"together": together(0.4, img_s=190.0)}, "storage", "web", ["curl -o"], []),
]


@pytest.mark.parametrize("name,sources,fits,change,verdict,named,want,unwanted", MIXTURES,
                         ids=[c[0] for c in MIXTURES])
def test_decide_mixture(name, sources, fits, change, verdict, named, want, unwanted):
    r = decide(mixture(copy.deepcopy(sources), local_fits=fits, **copy.deepcopy(change)))
    assert r.bottleneck == verdict, (name, r.summary)
    assert r.storage.get("limiting_source") == named, name
    if named is not None:
        assert r.summary.startswith(f"source {named!r} limits the mixture"), r.summary
        assert any(named in n and "lower weight" in n for n in r.notes), r.notes
    check_recommendations(name, r, want, unwanted)


@pytest.mark.parametrize("share,img_s,remote,fits,every_epoch", [
    (0.1, 95.0, True, True, True),
    (0.5, 600.0, True, True, True),
    (0.25, 400.0, False, True, False),
    (0.25, 400.0, False, False, True),
])
def test_source_rates_weigh_by_share(share, img_s, remote, fits, every_epoch):
    x = source("s", share, img_s, remote=remote)
    got = source_rates(mixture([local("a", 1 - share), x], local_fits=fits))[1]
    assert got["img_s"] == pytest.approx(img_s) and got["epoch_img_s"] == pytest.approx(img_s / share)
    assert got["every_epoch"] is every_epoch
    assert got["read_as"] == ("pages fetched" if remote else "sample-sized reads cold")  # RANDOM, os_cache=True


def test_source_rates_by_the_loader_reads():
    """QUASI_RANDOM with the process cache reads whole pages, at what a page
    carries per sample (padding included); a source not dropped from the
    page cache is rated as found."""
    x = local("a", 0.5, 1000.0)
    x.update(cold_sample_mb_s=4.0, page_bytes_per_sample=80_000.0)  # pages half full: 40 MB/s = 500 img/s
    y = local("held", 0.5, 1000.0, evicted=False)
    r = mixture([x, y], settings__order="quasi_random", settings__os_cache=False)
    a, held = source_rates(r)
    assert a["read_as"] == "whole pages read cold" and a["img_s"] == pytest.approx(500.0)
    assert held["read_as"] == "whole pages read, as found in the page cache" and held["img_s"] == pytest.approx(1000.0)


def test_remote_source_with_many_pages_gets_more_requests_in_flight():
    """A remote source with more pages than requests in flight, whose page
    requests took 0.8 s each in the cold run: more in flight."""
    big = web(0.5, 100.0, samples=200_000)  # 8 GB: about 950 pages of 8 MiB
    cold_runs = cold(90.0, 95.0)
    for c in cold_runs:
        c["sources"] = [{"name": "a", "samples": 100, "pages_read": 3, "bytes_read": 3 << 23, "read_ns": 30_000_000,
                         "read_mb_s": 838.9, "requests": 0, "bytes_fetched": 0, "retries": 0},
                        {"name": "web", "samples": 100, "pages_read": 5, "bytes_read": 5 << 23,
                         "read_ns": 4_000_000_000, "read_mb_s": 10.5, "requests": 5, "bytes_fetched": 5 << 23,
                         "retries": 0}]
    r = decide(mixture([local("a", 0.5), big], loader__cold=cold_runs))
    assert r.bottleneck == "storage" and r.storage["limiting_source"] == "web"
    rec = next(x for x in r.recommendations if "FFCV_GO_REMOTE_IN_FLIGHT" in x.setting)
    assert f"={2 * REMOTE_IN_FLIGHT_DEFAULT}" in rec.setting and "0.80 s on average" in rec.why
    assert "From a cold cache the loader delivered 90 img/s" in r.summary
    # QUASI_RANDOM measured no faster from a cold cache (95 against 90 img/s): not recommended.
    assert not any("QUASI_RANDOM" in x.setting for x in r.recommendations)


def test_mixture_first_epoch_sums_the_local_sources():
    """The local sources fit: the first epoch reads each at its own cold
    rate; the remote source is read every epoch, not counted here."""
    a = local("a", 0.4, 10_000.0, samples=40_000)  # 1.6 GB at 400 MB/s: 4 s
    n = local("nfs", 0.4, 250.0, samples=40_000, filesystem=NFS)  # 1.6 GB at 10 MB/s: 160 s
    r = mixture([a, n, web(0.2, 20_000.0)])
    fe = first_epoch(r, 950.0)
    warm = 100_000 / 950.0
    assert fe["extra_s"] == pytest.approx(1.6e9 / 400e6 + 1.6e9 / 10e6 - warm)
    assert fe["network"] and fe["filesystem"] == "ext4, nfs4" and fe["files"] == ["/data/a.beton", "/data/nfs.beton"]
    assert fe["read_bytes"] == pytest.approx(3.2e9)
    assert first_epoch(mixture([a, n], local_fits=False), 950.0) is None
    assert first_epoch(mixture([web(1.0, 100.0)]), 950.0) is None


def test_mixture_thresholds_are_the_named_ones():
    """At the bound exactly the source keeps up; just below, it limits."""
    bound = STORAGE_BOUND_SHARE * 950.0
    for epoch_rate, verdict in ((bound * 1.01, "cpu"), (bound * 0.99, "storage")):
        r = decide(mixture([local("a", 0.8), web(0.2, 0.2 * epoch_rate)]))
        assert r.bottleneck == verdict, epoch_rate


@pytest.mark.parametrize("in_memory,note", [
    (1.0, None),
    (0.4, "40% of the local sources' bytes fit in the memory the worker scan reads them into first"),
    (None, "every source is remote: the worker scan's rates include fetching their pages"),
])
def test_mixture_scan_from_storage_is_noted(in_memory, note):
    r = mixture([local("a", 0.5), web(0.5, 20_000.0)])
    r.loader.update(scan_sources=["a"], in_memory_share=in_memory)
    got = [n for n in decide(r).notes if "worker scan" in n]
    assert got == ([] if note is None else [got[0]]) and (note is None or got[0].startswith(note)), got


def test_mixture_source_rates_decide_over_the_cold_runs():
    """A mixture's cold runs (the whole loader, every epoch's start
    included) fall short while every source's storage keeps up at its
    share: the sources' rates decide. Where no source's rate was measured,
    the cold runs do."""
    slow_runs = cold(500.0, 520.0)
    r = decide(mixture([local("a", 0.8), web(0.2, 20_000.0)], loader__cold=slow_runs))
    assert r.bottleneck == "cpu" and "limiting_source" not in r.storage, r.summary
    unmeasured = web(0.2, 20_000.0)
    del unmeasured["fetch_mb_s"]
    r = decide(mixture([local("a", 0.8), unmeasured], loader__cold=slow_runs))
    assert r.bottleneck == "storage" and r.storage["limiting_source"] is None
    assert "no source's storage rate was measured" in r.summary and "delivered 500 img/s" in r.summary


def test_mixture_cold_start_is_told_apart_from_the_epoch_rate():
    """A short cold run whose first batch waited for a slow source's first
    pages delivers far less than the epoch rate that source allows: the
    summary says it is a cold start's rate, with the relation between the
    source's own rate and the epoch's."""
    runs = cold(5.0, 15.0)
    for c in runs:
        c.update(images=32, seconds=6.5, run_s=6.5, first_batch_s=6.0)
    r = decide(mixture([local("a", 0.75), web(0.25, 142.0)], loader__cold=runs))
    assert r.bottleneck == "storage" and r.storage["limiting_source"] == "web", r.summary
    assert "delivered 5 img/s" in r.summary and "first batch came after 6.0 s" in r.summary, r.summary
    assert "a cold start's rate, not an epoch's" in r.summary
    assert "once its pages stream is 568 img/s (its own 142 img/s over its 25% of the epoch)" in r.summary


def test_a_source_with_no_page_in_time_limits_at_its_bound():
    """No page of a remote source arrived in its time: its rate is at most
    a page over that time, and it limits at that bound."""
    slow = web(0.25, 1.0)
    del slow["fetch_mb_s"]
    slow.update(fetch_mb_s=None, fetch_mb_s_at_most=2.0, note="no 8 MiB page arrived in 4.2 s")
    r = decide(mixture([local("a", 0.75), slow]))
    assert r.bottleneck == "storage" and r.storage["limiting_source"] == "web", r.summary
    assert "delivers at most 50 img/s" in r.summary and "an upper bound" in r.summary, r.summary


def test_time_over_max_seconds_is_accounted_for():
    """Measuring took longer than max_seconds: a note names the phases
    that took longest against their budgets, and those cut or skipped."""
    phases = [{"phase": "storage", "budget_s": 2.0, "seconds": 2.1, "cut": False},
              {"phase": "loader from cold: RANDOM, os_cache=True", "budget_s": 3.0, "seconds": 9.5, "cut": True},
              {"phase": "model", "budget_s": 0.0, "seconds": 0.0, "cut": False, "skipped": "max_seconds was spent"}]
    r = decide(measured(settings__max_seconds=10, elapsed_s=16.0, phases=phases))
    note = next(n for n in r.notes if "measuring took" in n)
    assert note.startswith("measuring took 16 s, 6 s over max_seconds (10 s): loader from cold: RANDOM, "
                           "os_cache=True 9.5 s of its 3.0 s"), note
    assert "cut at their deadline" in note and "skipped: model (max_seconds was spent)" in note
    assert not any("measuring took" in n for n in decide(measured(settings__max_seconds=10, elapsed_s=11.0)).notes)
