"""Loader(Mixture([Source(...), ...])): several datasets by weight in one
Loader (core/mixture, order.Mix). Three sources that differ as real ones
do: other field names (renamed), an extra field (dropped), shards with
larger pages; one of them served over HTTP. Every epoch must hold exactly
each source's number of samples, no sample repeated before its source is
exhausted; state_dict must resume mid-epoch exactly, at the same and at
other world and batch sizes; bad input must fail clearly and lose
nothing."""
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import FnDataset, check_paged_batch, ids, paged_blob, write

from ffcv_go import Loader
from ffcv_go.fields import BytesField, IntField, RGBImageField
from ffcv_go.fields.decoders import IntDecoder, RandomResizedCropRGBImageDecoder
from ffcv_go.loader import Mixture, OrderOption, Source
from ffcv_go.reader import Reader
from ffcv_go.transforms import RandomHorizontalFlip, ToTensor

SIZES = {"a": 40, "b": 30, "c": 20}
FIRST = {"a": 0, "b": 1000, "c": 2000}  # the "id" field of each source's first sample
SEED = 5


def image(i):
    rng = np.random.default_rng(i)
    h, w = 20 + i % 7, 24 + i % 5
    return rng.integers(0, 256, (h, w, 3), dtype=np.uint8)


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    """a: image, label, id. b: img, target, id and caption (stored names that
    the mixture renames and drops). c: two shards on 4 MiB pages."""
    d = tmp_path_factory.mktemp("mixture")
    img = lambda: RGBImageField(write_mode="jpg", jpeg_quality=90)  # noqa: E731
    a = write(d / "a.beton", {"image": img(), "label": IntField(), "id": IntField()},
              FnDataset(40, lambda i: (image(i), i % 3, i)))
    b = write(d / "b.beton", {"img": img(), "target": IntField(), "id": IntField(), "caption": BytesField()},
              FnDataset(30, lambda i: (image(1000 + i), i % 3, 1000 + i, b"x" * (i + 1))))
    for k in range(2):
        write(d / f"c-{k}.beton", {"image": img(), "label": IntField(), "id": IntField()},
              FnDataset(10, lambda i, k=k: (image(2000 + 10 * k + i), 1, 2000 + 10 * k + i)), page_size=4 << 20)
    return {"a": str(a), "b": str(b), "c": str(d / "c-*.beton"), "dir": d}


def src_b(path, **kw):
    return Source(path, rename={"img": "image", "target": "label"}, drop=["caption"], name="b", **kw)


def mixture(s, wa=None, wb=None, wc=None, **kw):
    return Mixture([Source(s["a"], name="a", **(wa or {})), src_b(s["b"], **(wb or {})),
                    Source(s["c"], name="c", **(wc or {}))], **kw)


PROPORTIONS = dict(wa={"proportion": 0.6}, wb={"proportion": 0.3}, wc={"proportion": 0.1})


def pipelines(size=16):
    return {"image": [RandomResizedCropRGBImageDecoder((size, size)), RandomHorizontalFlip(), ToTensor()],
            "label": None}


def make(m, batch_size=8, **kw):
    kw.setdefault("num_workers", 2)
    kw.setdefault("seed", SEED)
    kw.setdefault("pipelines", pipelines())
    return Loader(m, batch_size=batch_size, **kw)


def source_of(i):
    return "a" if i < 1000 else "b" if i < 2000 else "c"


def epoch_ids(loader):
    """The id of every sample of the next epoch, in order."""
    return ids(list(loader), col=-1)


# ---- what an epoch holds ----------------------------------------------------------------

@pytest.mark.parametrize("order", [o for o in OrderOption if o not in (OrderOption.BUCKETED, OrderOption.RECT)])
def test_every_epoch_takes_exact_counts(sources, order):
    """0.6 / 0.3 / 0.1 of an epoch of 90 samples: 54, 27 and 9 every epoch,
    reported by Loader.sources and counted in stats; a downsampled source
    repeats no sample until all of its samples have been read."""
    loader = make(mixture(sources, **PROPORTIONS), order=order, drop_last=False)
    want = {"a": 54, "b": 27, "c": 9}
    assert [(s["name"], s["samples"], s["per_epoch"]) for s in loader.sources] == \
        [("a", 40, 54), ("b", 30, 27), ("c", 20, 9)]
    assert len(loader) == -(-90 // 8)
    seen = {k: [] for k in SIZES}
    for epoch in range(3):
        got = epoch_ids(loader)
        for k in SIZES:
            mine = [i for i in got if source_of(i) == k]
            assert len(mine) == want[k], (epoch, k)
            assert all(FIRST[k] <= i < FIRST[k] + SIZES[k] for i in mine)
            seen[k] += mine
        assert [s["samples"] for s in loader.stats["epochs"][-1]["sources"]] == [54, 27, 9]
    for k in ("b", "c"):  # 3 epochs of 27 of 30 and of 9 of 20: passes without replacement
        counts = np.bincount(np.array(seen[k]) - FIRST[k], minlength=SIZES[k])
        total = 3 * want[k]
        assert counts.min() == total // SIZES[k] and counts.max() <= -(-total // SIZES[k]), counts
    assert [s["name"] for s in loader.stats["sources"]] == ["a", "b", "c"]


def test_litdata_weights_and_streaming_proportions_agree(sources):
    """weights=[6, 3, 1] (normalized) is the same mixture as proportions
    0.6 / 0.3 / 0.1: same takes, same epochs."""
    a = make(mixture(sources, **PROPORTIONS), order=OrderOption.RANDOM)
    b = make(mixture(sources, weights=[6, 3, 1]), order=OrderOption.RANDOM)
    assert [s["per_epoch"] for s in a.sources] == [s["per_epoch"] for s in b.sources]
    assert np.array_equal(epoch_ids(a), epoch_ids(b))


def test_absolute_weights_and_source_field(sources):
    """repeat=2, choose=7, and a source read once; the source_field output
    says each sample's source."""
    m = mixture(sources, wa={"repeat": 2}, wb={"choose": 7}, source_field="source")
    loader = make(m, order=OrderOption.RANDOM, drop_last=False,
                  pipelines=dict(pipelines(), source=[IntDecoder(), ToTensor()]))
    assert [s["per_epoch"] for s in loader.sources] == [80, 7, 20]
    batches = list(loader)
    src, sample = ids(batches, col=-1), ids(batches, col=-2)
    assert np.array_equal(src, [{"a": 0, "b": 1, "c": 2}[source_of(i)] for i in sample])
    assert np.bincount(src).tolist() == [80, 7, 20]
    # Upsampled: every sample of a twice per epoch.
    assert np.bincount(sample[src == 0]).tolist() == [2] * 40


def test_sequential_concatenates_the_sources(sources):
    loader = make(mixture(sources), order=OrderOption.SEQUENTIAL, drop_last=False)
    want = list(range(40)) + list(range(1000, 1030)) + list(range(2000, 2020))
    assert epoch_ids(loader).tolist() == want


def test_random_mixes_the_sources(sources):
    got = epoch_ids(make(mixture(sources, **PROPORTIONS), order=OrderOption.RANDOM))
    first = [source_of(i) for i in got[:24]]
    assert len(set(first)) == 3, first


def test_same_epochs_for_any_worker_count(sources):
    def run(workers):
        loader = make(mixture(sources, **PROPORTIONS), order=OrderOption.QUASI_RANDOM, num_workers=workers)
        return [tuple(x.numpy().copy() for x in b) for b in loader]
    one, three = run(1), run(3)
    assert len(one) == len(three)
    assert all(all(np.array_equal(x, y) for x, y in zip(p, q)) for p, q in zip(one, three))


# ---- distributed and resume ---------------------------------------------------------------

def loader_at(monkeypatch, m, rank, world, order, batch_size, drop_last=False):
    monkeypatch.setenv("RANK", str(rank))
    monkeypatch.setenv("WORLD_SIZE", str(world))
    return make(m, batch_size=batch_size, order=order, distributed=world > 1, drop_last=drop_last,
                num_workers=1, pipelines={"image": None, "label": None})


@pytest.mark.parametrize("order", [OrderOption.RANDOM, OrderOption.QUASI_RANDOM])
def test_ranks_share_the_epoch(monkeypatch, sources, order):
    """Three ranks: each its share (DistributedSampler's size), together the
    epoch's samples (and the padding repeats of its head)."""
    m = mixture(sources, **PROPORTIONS)
    whole = epoch_ids(loader_at(monkeypatch, m, 0, 1, order, 8))
    got = []
    for r in range(3):
        mine = epoch_ids(loader_at(monkeypatch, m, r, 3, order, 8))
        assert len(mine) == 30
        got += mine.tolist()
    assert sorted(got) == sorted(whole.tolist())


def test_resume_mid_epoch_exactly(sources):
    """state_dict after 4 batches; a new loader resumed from it gives the
    rest of the epoch, and the next epoch, as an uninterrupted run."""
    m = mixture(sources, **PROPORTIONS)
    full = [tuple(x.numpy().copy() for x in b) for b in make(m, order=OrderOption.RANDOM)]
    first = make(m, order=OrderOption.RANDOM)
    it = iter(first)
    for _ in range(4):
        next(it)
    state = json.loads(json.dumps(first.state_dict()))
    resumed = make(m, order=OrderOption.RANDOM)
    resumed.load_state_dict(state)
    rest = [tuple(x.numpy().copy() for x in b) for b in resumed]
    assert len(rest) == len(full) - 4
    assert all(all(np.array_equal(x, y) for x, y in zip(p, q)) for p, q in zip(rest, full[4:]))


@pytest.mark.parametrize("order", [OrderOption.RANDOM, OrderOption.QUASI_RANDOM])
def test_elastic_resume_at_another_world_and_batch_size(monkeypatch, sources, order):
    """Two ranks at batch 4 take 3 batches each; three ranks at batch 5 take
    the rest: every sample of the epoch read exactly once over both runs, so
    each source's count stays exact; then normal epochs at the new size."""
    m = mixture(sources, wa={"repeat": 1.5}, wb={"choose": 11})  # 60 + 11 + 20 = 91
    epoch = epoch_ids(loader_at(monkeypatch, m, 0, 1, order, 4))
    taken, states = [], []
    for r in range(2):
        loader = loader_at(monkeypatch, m, r, 2, order, 4)
        it = iter(loader)
        taken += ids([next(it) for _ in range(3)], col=-1).tolist()
        states.append(json.loads(json.dumps(loader.state_dict())))
    assert states[0] == states[1]
    rest = []
    for r in range(3):
        loader = loader_at(monkeypatch, m, r, 3, order, 5)
        loader.load_state_dict(states[0])
        rest += epoch_ids(loader).tolist()
        assert len(epoch_ids(loader)) == 31  # the next epoch: 91 over 3 ranks, padded
    assert sorted(taken + rest) == sorted(epoch.tolist())
    counts = {k: sum(source_of(i) == k for i in taken + rest) for k in SIZES}
    assert counts == {"a": 60, "b": 11, "c": 20}


# ---- where the data lives -----------------------------------------------------------------

def test_http_source_gives_the_same_batches(sources):
    """Source b served over HTTP on 127.0.0.1: the same epochs as from disk,
    its requests counted under its name."""
    from test_remote import RangeHandler, serve, stop
    handler = type("Handler", (RangeHandler,), {"root": str(sources["dir"])})
    srv, url = serve(handler)
    try:
        local = make(mixture(sources, **PROPORTIONS), order=OrderOption.QUASI_RANDOM)
        remote = Mixture([Source(sources["a"], name="a", proportion=0.6),
                          src_b(f"{url}/b.beton", proportion=0.3), Source(sources["c"], name="c", proportion=0.1)])
        over_http = make(remote, order=OrderOption.QUASI_RANDOM)
        assert over_http.os_cache is False  # a source without a map: the process cache reads it
        want = [tuple(x.numpy().copy() for x in b) for b in local]
        got = [tuple(x.numpy().copy() for x in b) for b in over_http]
        assert all(all(np.array_equal(x, y) for x, y in zip(p, q)) for p, q in zip(got, want))
        by_source = {s["name"]: s for s in over_http.stats["epochs"][0]["sources"]}
        assert by_source["b"]["requests"] > 0 and by_source["b"]["bytes_fetched"] > 0
        assert all(s["bytes_read"] > 0 and s["read_ns"] > 0 for s in by_source.values())  # per-source read rates
        assert by_source["a"]["requests"] == 0 and by_source["a"]["pages_read"] > 0
    finally:
        stop(srv)


@pytest.fixture(scope="module")
def blobs(tmp_path_factory):
    """Two sources of ~100 KB blobs, ~20 per 2 MiB page: 160 and 120 samples."""
    d = tmp_path_factory.mktemp("mixture_blobs")
    fields = {"blob": BytesField(), "index": IntField()}
    x = write(d / "x.beton", fields, FnDataset(160, lambda i: (paged_blob(i), i)), num_workers=2)
    y = write(d / "y.beton", fields, FnDataset(120, lambda i: (paged_blob(1000 + i), 1000 + i)), num_workers=2)
    return str(x), str(y)


def test_quasi_random_reads_each_page_about_once(blobs):
    """A mixture (x upsampled twice, half of y) many times larger than the
    process cache's bound: QUASI_RANDOM reads each page it needs about once
    per epoch (loader.stats), RANDOM far more often."""
    x, y = blobs
    m = Mixture([Source(x, repeat=2, name="x"), Source(y, choose=60, name="y")])
    reads = {}
    for order in (OrderOption.QUASI_RANDOM, OrderOption.RANDOM):
        loader = Loader(m, batch_size=8, num_workers=2, order=order, seed=3, os_cache=False, max_resident_pages=6,
                        batches_ahead=1, order_kwargs={"window_pages": 2})
        for blob, index in loader:
            check_paged_batch(blob, index)
        order_ids = loader.traversal_order.sample_order(0)
        r = Reader(x)
        pages_x = len(np.unique(r.metadata["f0"]["ptr"] // np.uint64(r.page_size)))
        st = loader.stats
        reads[order] = st["pages_read"]
        assert sum(s["pages_read"] for s in st["epochs"][0]["sources"]) == st["pages_read"]
        assert len(order_ids) == 380
    # x's pages all once, y's about half of them (60 of 120 samples, whole pages).
    assert reads[OrderOption.QUASI_RANDOM] <= pages_x + 6 + 2, reads
    assert reads[OrderOption.RANDOM] > 3 * reads[OrderOption.QUASI_RANDOM], reads


# ---- the rest of the Loader ---------------------------------------------------------------

def test_progressive_resizing_views_and_traces(sources, tmp_path):
    """The decoder's output size changes between epochs; a view of the image
    (custom_field_mapper) comes out beside it; the trace names each sample's
    source and puts page reads on a track per source."""
    dec = RandomResizedCropRGBImageDecoder((16, 16))
    trace = tmp_path / "trace.json"
    loader = make(mixture(sources, **PROPORTIONS), order=OrderOption.QUASI_RANDOM, os_cache=False, trace=str(trace),
                  custom_field_mapper={"small": "image"},
                  pipelines={"image": [dec, ToTensor()], "label": None,
                             "small": [RandomResizedCropRGBImageDecoder((8, 8)), ToTensor()]})
    for size in (16, 24):
        dec.output_size = (size, size)
        shapes = {(tuple(b[0].shape[1:]), tuple(b[2].shape[1:])) for b in loader}
        assert shapes == {((size, size, 3), (8, 8, 3))}
    loader.close()
    events = json.loads(trace.read_text())
    names = {e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    assert {"page reads: a", "page reads: b", "page reads: c"} <= names, names
    sampled = {e["args"].get("source") for e in events if e.get("cat") == "go" and "sample" in e.get("args", {})}
    assert sampled == {"a", "b", "c"}


def test_skip_bad_samples_of_one_source(sources, tmp_path):
    """A corrupt JPEG in source b: on_error='raise' names the file and the
    sample; 'skip' leaves it out, and the per-source counts say so."""
    bad = tmp_path / "b.beton"
    shutil.copy(sources["b"], bad)
    r = Reader(bad)
    ptr, size = int(r.metadata["f0"]["data_ptr"][4]), 0
    sizes = dict(zip(r.alloc_table["ptr"].tolist(), r.alloc_table["size"].tolist()))
    size = sizes[ptr]
    r.close()
    raw = bytearray(bad.read_bytes())
    raw[ptr + size // 3:ptr + size] = bytes(size - size // 3)  # the scan data zeroed: no image
    bad.write_bytes(bytes(raw))
    m = Mixture([Source(sources["a"], name="a"), src_b(str(bad))])
    with pytest.raises(ValueError, match=r"^source 1 \(b\): .*b\.beton: sample 4 \(sample 44 of the mixture of 2 "
                                         r"sources\), field \"image\""):
        list(make(m, order=OrderOption.SEQUENTIAL, drop_last=False))
    loader = make(m, order=OrderOption.SEQUENTIAL, drop_last=False, on_error="skip")
    got = epoch_ids(loader)
    assert 1004 not in got.tolist() and len(got) == 69
    assert loader.stats["samples_skipped"] == 1
    assert [s["samples"] for s in loader.stats["epochs"][0]["sources"]] == [40, 29]


def test_detection_targets_follow_each_source(tmp_path):
    """Boxes, labels and masks of two scene files, one upsampled, through
    crops and flips: every kept box encloses its colour in the image."""
    sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
    import make_dataset
    import scenes
    from test_detection import PIPELINES, _fields, check_loader, targets
    photos = make_dataset.find_photos()[:2]
    if not photos:
        pytest.skip("no photos installed (Debian wallpaper packages)")
    data = scenes.SceneDataset(24, photos)
    one = write(tmp_path / "one.beton", _fields(200), FnDataset(12, lambda i: data[i]))
    two = write(tmp_path / "two.beton", _fields(200), FnDataset(12, lambda i: data[12 + i]))
    loader = Loader(Mixture([Source(one), Source(two, repeat=2)]), batch_size=12, num_workers=2, seed=3,
                    order=OrderOption.QUASI_RANDOM, drop_last=False, pipelines={"image": PIPELINES["rrc+flip"](),
                                                                                **targets()})
    problems, seen = check_loader(loader)
    assert not problems, "\n".join(problems[:10])
    assert seen > 36


def test_integrations_take_a_mixture(sources):
    """Composer's and Lightning's loader builders take a Mixture as they
    take a path; the samples per rank are the mixture's epoch."""
    from ffcv_go.integrations._common import build_loader, samples_per_rank
    m = mixture(sources, **PROPORTIONS)
    loader = build_loader(m, 8, rank=1, world_size=2, pipelines=pipelines(), num_workers=1)
    assert loader.world_size == 2 and samples_per_rank(loader) == 40  # 45 per rank, whole batches of 8
    assert sum(len(b[0]) for b in loader) == 40


def test_pipeline_of_one_source(sources):
    """Source b's own image pipeline (a certain flip) runs on b's samples;
    the others go through the loader's; the tail (ToTensor) is shared."""
    from ffcv_go.fields.decoders import CenterCropRGBImageDecoder

    def loader(own):
        b = src_b(sources["b"], pipelines={"image": [CenterCropRGBImageDecoder((12, 12), 1.0),
                                                      RandomHorizontalFlip(1.0), ToTensor()]} if own else None)
        m = Mixture([Source(sources["a"], name="a"), b])
        return make(m, order=OrderOption.RANDOM, drop_last=False,
                    pipelines={"image": [CenterCropRGBImageDecoder((12, 12), 1.0), ToTensor()], "label": None})
    plain = [tuple(x.numpy().copy() for x in b) for b in loader(False)]
    mixed = [tuple(x.numpy().copy() for x in b) for b in loader(True)]
    flipped = 0
    for (img, sid), (img2, sid2) in zip(plain, mixed):
        assert np.array_equal(sid, sid2)
        for x, y, i in zip(img, img2, sid.reshape(-1)):
            if source_of(i) == "b":
                assert np.array_equal(y, x[:, ::-1]), i
                flipped += 1
            else:
                assert np.array_equal(y, x), i
    assert flipped == 30


@pytest.mark.parametrize("ops,words", [
    (lambda: [RandomResizedCropRGBImageDecoder((8, 8))], "gives \\[8 8 3\\] \\|u1 samples, the loader's pipeline \\[16 16 3\\]"),
    (lambda: [RandomResizedCropRGBImageDecoder((16, 16)), ToTensor(), ToTensor()], "what follows them"),
])
def test_pipeline_of_one_source_rule(sources, ops, words):
    m = Mixture([Source(sources["a"], name="a"), src_b(sources["b"], pipelines={"image": ops()})])
    with pytest.raises(ValueError, match=words):
        make(m)
    with pytest.raises(ValueError, match="other outputs \\(views\\) read too"):
        make(m, custom_field_mapper={"v": "image"}, pipelines=dict(pipelines(), v=pipelines()["image"]))


# ---- bad input ----------------------------------------------------------------------------

@pytest.mark.parametrize("make_source,error,words", [
    (lambda s: Source(s["a"], proportion=-0.5), ValueError, "proportion -0.5 must be a positive number"),
    (lambda s: Source(s["a"], repeat=-1, name="curated"), ValueError, "^Source 'curated': repeat -1 must be"),
    (lambda s: Mixture([s["a"], Source(s["b"], name="web")], weights=[1, -2]), ValueError,
     "^Source 'web': weight -2 must be"),
    (lambda s: Source(s["a"], choose=-1), ValueError, r"choose -1 must be a positive number of samples \(or 0"),
    (lambda s: Source(s["a"], proportion=float("nan")), ValueError, "proportion nan"),
    (lambda s: Source(s["a"], choose=2.5), ValueError, "choose 2.5"),
    (lambda s: Source(s["a"], repeat=2, choose=3), ValueError, "at most one of proportion, repeat and choose"),
    (lambda s: Mixture([s["a"], s["b"]], weights=[1, float("inf")]), ValueError, "weight inf must be a positive number"),
    (lambda s: Mixture([s["a"], s["b"]], weights=[1]), ValueError, "1 weights for 2 sources"),
    (lambda s: Mixture([]), ValueError, "no sources"),
])
def test_bad_weights_fail_where_given(sources, make_source, error, words):
    with pytest.raises(error, match=words):
        make_source(sources)


@pytest.mark.parametrize("build,error,words", [
    (lambda s: mixture(s, wa={"proportion": 0.6}, wb={"proportion": 0.3}, wc={"proportion": 0.2}), ValueError,
     r"the proportions sum to 1.1, not 1"),
    (lambda s: Mixture([Source(s["a"], name="a"), Source(s["b"], name="b")]), ValueError,
     r"source 1 \(b\) has no field \"image\" \(its fields: img, target, id, caption\), which source 0 \(a\) "
     r"has: rename"),
    (lambda s: Mixture([Source(s["a"], name="a"), Source(s["b"], name="b", rename={"img": "image", "caption": "label"},
                                                         drop=["target"])]), ValueError,
     r"^invalid mixture: field \"label\" is BytesField \(stored as \"caption\"\) in source 1 \(b\), IntField in "
     r"source 0 \(a\)$"),
    (lambda s: Mixture([Source(s["a"], name="a"), Source(s["b"], name="b", rename={"img": "image", "target": "label"})]),
     ValueError, r"source 1 \(b\) has a field \"caption\", which source 0 \(a\) does not have"),
    (lambda s: Mixture([Source(s["a"], name="a", rename={"label": "target"}), src_b(s["b"])]), ValueError,
     r"source 1 \(b\) has no field \"target\""),
    (lambda s: Mixture([Source(s["a"]), Source(str(s["dir"] / "missing-*.beton"), name="web")]), FileNotFoundError,
     r"source 1 \(web\): .*missing-\*\.beton.*matches no file"),
    (lambda s: Mixture([Source(s["a"]), Source([s["b"], str(s["dir"] / "gone.beton")], name="web")]),
     FileNotFoundError, r"source 1 \(web\): open .*gone\.beton"),
    (lambda s: Mixture([Source(s["a"]), Source(str(s["dir"] / "empty.beton"), name="empty")]), ValueError,
     r"source 1 \(empty\) has no samples"),
    (lambda s: Mixture([Source(s["a"], name="a")], source_field="label"), ValueError,
     r"source_field \"label\" is also a field"),
])
def test_bad_mixtures_name_the_source(sources, build, error, words):
    write(sources["dir"] / "empty.beton", {"image": RGBImageField(), "label": IntField(), "id": IntField()}, [])
    with pytest.raises(error, match=words):
        make(build(sources))


def test_loader_arguments_a_mixture_does_not_take(sources):
    m = mixture(sources)
    with pytest.raises(ValueError, match="indices select samples of one dataset"):
        make(m, indices=[1, 2])
    from ffcv_go.traversal_order import TraversalOrder

    class Reverse(TraversalOrder):
        def sample_order(self, epoch):
            return np.arange(len(self.indices))[::-1]
    with pytest.raises(ValueError, match="not by a custom TraversalOrder"):
        make(m, order=Reverse)
    with pytest.raises(ValueError, match="filter"):
        make(m).filter("label", lambda v: True)


def test_state_from_another_mixture_is_refused_and_loses_nothing(sources):
    """A state of another mixture (or of one dataset) fails, naming the
    difference, and leaves the loader where it was."""
    mine = make(mixture(sources, **PROPORTIONS), order=OrderOption.RANDOM)
    first = epoch_ids(mine)
    other = make(mixture(sources, wa={"proportion": 0.5}, wb={"proportion": 0.4}, wc={"proportion": 0.1}),
                 order=OrderOption.RANDOM)
    it = iter(other)
    next(it)
    with pytest.raises(ValueError, match=r"another mixture: its source 0 was 'a' with 40 samples, 45 per epoch; "
                                         r"this loader's is 'a' with 40 samples, 54 per epoch"):
        mine.load_state_dict(other.state_dict())
    single = Loader(sources["a"], batch_size=8, seed=SEED, order=OrderOption.RANDOM, pipelines=pipelines())
    with pytest.raises(ValueError, match="saved by a loader of one dataset"):
        mine.load_state_dict(single.state_dict())
    with pytest.raises(ValueError, match="saved by a loader of a Mixture of 3 sources"):
        single.load_state_dict(mine.state_dict())
    # Nothing lost: the loader goes on with its next epoch, as a fresh one does.
    fresh = make(mixture(sources, **PROPORTIONS), order=OrderOption.RANDOM)
    assert np.array_equal(epoch_ids(fresh), first)
    assert np.array_equal(epoch_ids(mine), epoch_ids(fresh))


def test_errors_while_loading_name_the_source(sources, tmp_path):
    """A sample that fails to decode is named by its source, its file and
    its place there, not by the whole Mixture([...])."""
    from ffcv_go import SampleError
    bad = tmp_path / "b.beton"
    raw = bytearray(Path(sources["b"]).read_bytes())
    r = Reader(sources["b"])
    for i in range(SIZES["b"]):  # every JPEG's scan cut short by end-of-image markers
        ptr = int(r.metadata["f0"][i]["data_ptr"])
        raw[ptr + 400:ptr + 600] = b"\xff\xd9" * 100
    bad.write_bytes(raw)
    loader = make(Mixture([Source(sources["a"], name="a"), src_b(str(bad))]), order=OrderOption.SEQUENTIAL,
                  num_workers=1)
    assert loader.fname == "mixture of 2 sources"
    with pytest.raises(SampleError) as e:
        for _ in loader:
            pass
    msg = str(e.value)
    assert msg.startswith(f"source 1 (b): {bad}: sample 0 (sample 40 of the mixture of 2 sources), field "), msg
    assert "Mixture(" not in msg and "Source(" not in msg
