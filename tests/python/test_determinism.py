"""Determinism across worker counts, resumption with state_dict, OS vs process cache."""
import pickle

import numpy as np
import pytest

from conftest import PAGED_N, check_paged_batch, collect, ids, same_batches, sample_pages

from ffcv_go import Loader
from ffcv_go.loader import OrderOption

ORDERS = [OrderOption.SEQUENTIAL, OrderOption.RANDOM, OrderOption.QUASI_RANDOM]


@pytest.mark.parametrize("order", ORDERS, ids=lambda o: o.name)
def test_same_batches_for_any_worker_count(paged_file, order):
    runs = []
    for workers in (1, 2, 4):
        loader = Loader(paged_file, batch_size=24, num_workers=workers, order=order, seed=17, drop_last=False)
        runs.append([collect(loader) for _ in range(2)])
    for epochs in runs[1:]:
        for a, b in zip(runs[0], epochs):
            assert same_batches(a, b)
    for blob, index in runs[0][0]:
        check_paged_batch(blob, index)
    assert sorted(ids(runs[0][0], 1).tolist()) == list(range(PAGED_N))
    if order is not OrderOption.SEQUENTIAL:
        assert not np.array_equal(ids(runs[0][0], 1), ids(runs[0][1], 1))


@pytest.mark.parametrize("order", ORDERS, ids=lambda o: o.name)
@pytest.mark.parametrize("k", [0, 1, 6, 13])
def test_resume_from_state_dict(index_file, order, k):
    kw = dict(batch_size=8, num_workers=2, order=order, seed=5, drop_last=False)
    ref = Loader(index_file, **kw)
    full = collect(ref)
    assert len(full) == 13
    a = Loader(index_file, **kw)
    it = iter(a)
    head = [next(it) for _ in range(k)]
    state = pickle.loads(pickle.dumps(a.state_dict()))
    del it, head
    b = Loader(index_file, **kw)
    b.load_state_dict(state)
    if k == len(full):
        # Saved after the epoch's last batch: resume with the next epoch,
        # not with an empty remainder of the finished one.
        assert (state["epoch"], state["batch"]) == (1, 0)
        assert same_batches(collect(b), collect(ref))
        return
    rest = collect(b)
    assert same_batches(rest, full[k:])
    # Afterwards b continues with epoch 1, exactly as the reference does.
    assert same_batches(collect(b), collect(ref))


def test_resume_in_a_later_epoch(index_file):
    kw = dict(batch_size=10, num_workers=2, order=OrderOption.RANDOM, seed=8, drop_last=True)
    ref = Loader(index_file, **kw)
    epochs = [collect(ref) for _ in range(3)]
    a = Loader(index_file, **kw)
    collect(a)
    collect(a)
    it = iter(a)
    next(it), next(it), next(it)
    state = a.state_dict()
    b = Loader(index_file, **kw)
    b.load_state_dict(state)
    assert same_batches(collect(b), epochs[2][3:])


def test_state_dict_between_epochs(index_file):
    kw = dict(batch_size=10, num_workers=1, order=OrderOption.RANDOM, seed=3, drop_last=False)
    a = Loader(index_file, **kw)
    collect(a)
    state = a.state_dict()
    b = Loader(index_file, **kw)
    b.load_state_dict(state)
    want = np.random.default_rng(3 + 1).permutation(103)
    assert ids(collect(b)).tolist() == want.tolist()


def test_state_dict_with_other_seed_is_refused(index_file):
    a = Loader(index_file, batch_size=10, num_workers=1, order=OrderOption.RANDOM, seed=1)
    b = Loader(index_file, batch_size=10, num_workers=1, order=OrderOption.RANDOM, seed=2)
    with pytest.raises(ValueError, match="seed"):
        b.load_state_dict(a.state_dict())


# ---- OS cache vs process cache ---------------------------------------------------------------

@pytest.mark.parametrize("order", ORDERS, ids=lambda o: o.name)
def test_process_cache_gives_same_data(paged_file, order):
    kw = dict(batch_size=16, num_workers=2, order=order, seed=23, drop_last=False)
    os_run = [collect(Loader(paged_file, os_cache=True, **kw))]
    for cap in (0, 3):
        loader = Loader(paged_file, os_cache=False, max_resident_pages=cap, **kw)
        got = collect(loader)
        assert same_batches(got, os_run[0]), f"max_resident_pages={cap}"
        if cap:
            assert 1 <= loader.stats["peak_resident_pages"] <= cap
    for blob, index in os_run[0]:
        check_paged_batch(blob, index)


def test_process_cache_quasi_random_stays_local(paged_file, capsys):
    n_pages = len(set(sample_pages(paged_file).tolist()))
    bs = 2
    kw = dict(batch_size=bs, num_workers=2, seed=1, drop_last=False, pipelines={"blob": None}, os_cache=False)
    quasi = Loader(paged_file, order=OrderOption.QUASI_RANDOM, **kw)
    for _ in range(2):
        collect(quasi)
    st = quasi.stats
    with capsys.disabled():
        print(f"\n[QUASI_RANDOM process cache, batch_size={bs}, {n_pages} pages] stats: {st}")
    # About 2 x batch_size pages are open at a time (plus read-ahead); each page is read once per epoch.
    assert 1 <= st["peak_resident_pages"] <= 2 * bs + 4 < n_pages
    assert st["pages_read"] == 2 * n_pages
    rnd = Loader(paged_file, order=OrderOption.RANDOM, **kw)
    collect(rnd)
    assert rnd.stats["peak_resident_pages"] > 2 * bs + 4


def test_process_cache_bounded_reads(paged_file):
    n_pages = len(set(sample_pages(paged_file).tolist()))
    kw = dict(batch_size=2, num_workers=2, seed=1, drop_last=False, pipelines={"blob": None}, os_cache=False,
              max_resident_pages=8)
    quasi = Loader(paged_file, order=OrderOption.QUASI_RANDOM, **kw)
    rnd = Loader(paged_file, order=OrderOption.RANDOM, **kw)
    seq = Loader(paged_file, order=OrderOption.SEQUENTIAL, **kw)
    for loader in (quasi, rnd, seq):
        assert sorted(ids(collect(loader)).tolist()) == list(range(PAGED_N))
        assert loader.stats["peak_resident_pages"] <= 8
    assert seq.stats["pages_read"] == n_pages
    assert quasi.stats["pages_read"] <= n_pages + 2
    assert rnd.stats["pages_read"] > 3 * n_pages


def test_process_cache_reads_the_opened_file(tmp_path):
    from ffcv_go.fields import BytesField, IntField
    from conftest import FnDataset, write
    path = tmp_path / "swap.beton"
    version = lambda v: FnDataset(40, lambda i: (np.full(100_000, (i + v) % 256, np.uint8), i))  # noqa: E731
    write(path, {"b": BytesField(), "i": IntField()}, version(0))
    loaders = {c: Loader(path, batch_size=8, num_workers=2, os_cache=c, drop_last=False) for c in (True, False)}
    write(path, {"b": BytesField(), "i": IntField()}, version(7))  # replaced (renamed over) while open
    for cache, loader in loaders.items():
        blob = np.concatenate([b[0] for b in collect(loader)])
        assert blob[:, 0].tolist() == [i % 256 for i in range(40)], f"os_cache={cache}"
