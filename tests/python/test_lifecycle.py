"""Lifecycle: holding batches, abandoning and overlapping epochs, several loaders, leaks."""
import gc
import os
import threading

import numpy as np
import pytest

from conftest import N_INDEX, PAGED_N, check_paged_batch, check_resources_back, collect, ids, index_sample, resources, rss_bytes, settle

from ffcv_go import Loader, _lib
from ffcv_go.loader import OrderOption


def check_index_batch(batch, want_ids):
    index, value, vec = (x.numpy() for x in batch)
    assert index[:, 0].tolist() == list(want_ids)
    assert value[:, 0].tolist() == [index_sample(i)[1] for i in want_ids]
    assert np.array_equal(vec, np.stack([index_sample(i)[2] for i in want_ids]))


@pytest.fixture(scope="module")
def warm(index_file, paged_file):
    """Runs the library once with every cache and a few worker counts so the Go
    runtime has its threads before baselines are taken."""
    for workers in (1, 2, 4):
        for os_cache in (True, False):
            for f in (index_file, paged_file):
                collect(Loader(f, batch_size=8, num_workers=workers, os_cache=os_cache, order=OrderOption.RANDOM,
                               seed=1))
    settle()
    gc.freeze()  # everything alive now is long-lived: keeps the many gc.collect() calls below fast
    yield
    gc.unfreeze()


@pytest.fixture
def baseline(warm):
    """Resources before the test; after it they must be back."""
    before = resources()
    yield before
    check_resources_back(before)


@pytest.mark.parametrize("os_cache", [True, False])
def test_hold_every_batch_of_an_epoch(index_file, baseline, os_cache):
    loader = Loader(index_file, batch_size=4, num_workers=2, order=OrderOption.RANDOM, seed=3, os_cache=os_cache,
                    drop_last=False, batches_ahead=2)
    batches = list(loader)  # 26 batches, far more than the slots the loader starts with
    assert len(batches) == 26
    order = np.random.default_rng(3).permutation(N_INDEX).tolist()
    # Run more epochs while holding the first one: nothing may overwrite it.
    second = list(loader)
    for k, b in enumerate(batches):
        check_index_batch(b, order[4 * k:4 * k + 4])
    order1 = np.random.default_rng(4).permutation(N_INDEX).tolist()
    for k, b in enumerate(second):
        check_index_batch(b, order1[4 * k:4 * k + 4])
    assert loader.stats["slots_grown"] > 0
    del batches, second, loader


def test_hold_big_batches(paged_file, baseline):
    loader = Loader(paged_file, batch_size=32, num_workers=2, order=OrderOption.QUASI_RANDOM, seed=2, drop_last=False,
                    os_cache=False)
    batches = list(loader)
    list(loader)  # another epoch through the same slots pool
    for blob, index in batches:
        check_paged_batch(blob, index)
    assert sorted(ids(batches, 1).tolist()) == list(range(PAGED_N))
    del batches, loader


def test_batches_outlive_their_loader(index_file, baseline):
    loader = Loader(index_file, batch_size=10, num_workers=2, drop_last=False)
    batches = list(loader)
    loader.close()
    del loader
    settle()
    for k, b in enumerate(batches):
        check_index_batch(b, range(10 * k, min(10 * k + 10, N_INDEX)))
    del batches


def test_break_mid_epoch_then_new_epoch(index_file, baseline):
    loader = Loader(index_file, batch_size=5, num_workers=2, order=OrderOption.RANDOM, seed=7)
    for k, b in enumerate(loader):
        if k == 2:
            break
    del b
    for epoch in (1, 2):
        order = np.random.default_rng(7 + epoch).permutation(N_INDEX).tolist()
        for k, b in enumerate(loader):
            check_index_batch(b, order[5 * k:5 * k + 5])
        assert k == len(loader) - 1
    del b, loader


def test_new_epoch_while_previous_is_live(index_file, baseline):
    loader = Loader(index_file, batch_size=8, num_workers=2, order=OrderOption.RANDOM, seed=1, drop_last=False)
    orders = [np.random.default_rng(1 + e).permutation(N_INDEX).tolist() for e in range(3)]
    it0 = iter(loader)
    first = next(it0)
    it1 = iter(loader)  # epoch 1 starts before epoch 0 ends
    it2 = iter(loader)  # and epoch 2 too
    got = {0: [first], 1: [], 2: []}
    for k in range(len(loader) - 1):
        for e, it in ((2, it2), (0, it0), (1, it1)):
            got[e].append(next(it))
    got[1].append(next(it1))
    got[2].append(next(it2))
    for it in (it0, it1, it2):
        with pytest.raises(StopIteration):
            next(it)
    for e in range(3):
        assert len(got[e]) == len(loader)
        for k, b in enumerate(got[e]):
            check_index_batch(b, orders[e][8 * k:8 * k + 8])
    del got, first, it0, it1, it2, b, loader


def test_del_loader_while_iterating(index_file, baseline):
    loader = Loader(index_file, batch_size=10, num_workers=2, drop_last=False)
    it = iter(loader)
    first = next(it)
    del loader
    settle()
    rest = list(it)
    check_index_batch(first, range(10))
    for k, b in enumerate(rest, start=1):
        check_index_batch(b, range(10 * k, min(10 * k + 10, N_INDEX)))
    del it, first, rest, b


def test_abandoned_iterators_are_freed(index_file, baseline):
    for _ in range(5):
        loader = Loader(index_file, batch_size=4, num_workers=2, order=OrderOption.QUASI_RANDOM, seed=0)
        it = iter(loader)
        next(it)
        del it, loader
    settle()


def test_close_while_iterating(index_file, baseline):
    loader = Loader(index_file, batch_size=10, num_workers=2)
    it = iter(loader)
    held = next(it)
    loader.close()
    with pytest.raises(Exception):
        for _ in range(20):
            next(it)
    check_index_batch(held, range(10))
    del it, held, loader


def test_several_loaders_and_iterators_on_one_file(index_file, paged_file, baseline):
    loaders = [
        Loader(index_file, batch_size=7, num_workers=2, order=OrderOption.SEQUENTIAL, drop_last=False),
        Loader(index_file, batch_size=5, num_workers=1, order=OrderOption.RANDOM, seed=4, drop_last=False,
               os_cache=False),
        Loader(index_file, batch_size=16, num_workers=3, order=OrderOption.QUASI_RANDOM, seed=4, drop_last=False),
        Loader(paged_file, batch_size=9, num_workers=2, order=OrderOption.RANDOM, seed=4, drop_last=False,
               os_cache=False),
    ]
    iters = [iter(l) for l in loaders] + [iter(loaders[0])]
    outs = [[] for _ in iters]
    active = set(range(len(iters)))
    while active:
        for k in sorted(active):
            try:
                outs[k].append(next(iters[k]))
            except StopIteration:
                active.discard(k)
    assert ids(outs[0]).tolist() == list(range(N_INDEX)) == ids(outs[4]).tolist()
    assert ids(outs[1]).tolist() == np.random.default_rng(4).permutation(N_INDEX).tolist()
    assert sorted(ids(outs[2]).tolist()) == list(range(N_INDEX))
    for k in (0, 1, 2, 4):
        for b in outs[k]:
            check_index_batch(b, b[0].numpy()[:, 0].tolist())
    assert ids(outs[3], 1).tolist() == np.random.default_rng(4).permutation(PAGED_N).tolist()
    for blob, index in outs[3]:
        check_paged_batch(blob, index)
    del loaders, iters, outs


def test_consumers_in_threads(index_file, baseline):
    results, errors = {}, []

    def consume(k):
        try:
            loader = Loader(index_file, batch_size=6, num_workers=2, order=OrderOption.RANDOM, seed=k, drop_last=False)
            results[k] = [ids(collect(loader)) for _ in range(3)]
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)
    threads = [threading.Thread(target=consume, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    for k in range(3):
        for e in range(3):
            assert results[k][e].tolist() == np.random.default_rng(k + e).permutation(N_INDEX).tolist()


def test_leak_over_many_epochs(index_file, baseline, capsys):
    loader = Loader(index_file, batch_size=8, num_workers=2, order=OrderOption.RANDOM, seed=0, drop_last=False,
                    os_cache=False)
    for _ in range(5):
        collect(loader)
    settle()
    rss0, live0 = rss_bytes(), _lib.live_objects()
    for epoch in range(5, 55):
        got = ids(collect(loader))
        assert got.tolist() == np.random.default_rng(epoch).permutation(N_INDEX).tolist()
    settle()
    rss1, live1 = rss_bytes(), _lib.live_objects()
    with capsys.disabled():
        print(f"\n[leak test] RSS after 5 epochs {rss0 / 2**20:.1f} MiB, after 55 {rss1 / 2**20:.1f} MiB; "
              f"live objects {live0} -> {live1}")
    assert live1 == live0
    assert rss1 - rss0 < 32 * 2**20
    del loader


def test_fds_closed_with_process_cache(index_file, baseline):
    loader = Loader(index_file, batch_size=8, num_workers=2, os_cache=False)
    fds = len(os.listdir("/proc/self/fd"))  # the loader's readers keep their files open
    it = iter(loader)
    next(it)
    del it
    settle()
    assert len(os.listdir("/proc/self/fd")) == fds
    del loader


def test_no_read_ahead(index_file, baseline):
    loader = Loader(index_file, batch_size=4, num_workers=2, batches_ahead=0, drop_last=False,
                    order=OrderOption.RANDOM, seed=6)
    held = list(loader)
    order = np.random.default_rng(6).permutation(N_INDEX).tolist()
    for k, b in enumerate(held):
        check_index_batch(b, order[4 * k:4 * k + 4])
    del held, loader


def test_max_batch_memory_is_enforced(index_file, baseline):
    # Each batch of 4 needs 4 x (8 + 8 + 12 + 8 ids) bytes; allow a handful of batches only.
    loader = Loader(index_file, batch_size=4, num_workers=2, drop_last=False, max_batch_memory=1500)
    with pytest.raises(Exception, match="max_batch_memory"):
        list(loader)  # holds every batch: over the limit
    # Not holding them is fine.
    n = 0
    for b in loader:
        check_index_batch(b, range(4 * n, min(4 * n + 4, N_INDEX)))
        n += 1
    assert n == len(loader) == 26
    del loader, b


def test_views_of_batches_keep_their_memory(index_file, baseline):
    loader = Loader(index_file, batch_size=6, num_workers=2, order=OrderOption.RANDOM, seed=12, drop_last=False)
    views = []
    for index, value, vec in loader:
        # Only views survive the loop: a numpy view of the ids and a strided torch view of vec.
        views.append((index.numpy()[:, 0], vec[::2]))
    for _ in range(3):
        collect(loader)  # the slots of freed batches get reused meanwhile
    settle()
    order = np.random.default_rng(12).permutation(N_INDEX).tolist()
    for k, (idx, vec2) in enumerate(views):
        want = order[6 * k:6 * k + 6]
        assert idx.tolist() == want
        assert np.array_equal(vec2.numpy(), np.stack([index_sample(i)[2] for i in want[::2]]))
    del views


def test_closed_loader_refuses_new_epochs(index_file, baseline):
    loader = Loader(index_file, batch_size=10, num_workers=1)
    loader.close()
    with pytest.raises(Exception):
        next(iter(loader))
    del loader
