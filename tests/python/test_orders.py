"""Traversal orders: SEQUENTIAL, RANDOM (numpy-exact), QUASI_RANDOM (page locality), custom, distributed."""
import multiprocessing
import time

import numpy as np
import pytest
import torch
from torch.utils.data import DistributedSampler

from conftest import N_INDEX, PAGED_N, collect, ids, sample_pages

from ffcv_go import Loader
from ffcv_go.loader import OrderOption
from ffcv_go.traversal_order.base import TraversalOrder

ORDERS = [OrderOption.SEQUENTIAL, OrderOption.RANDOM, OrderOption.QUASI_RANDOM]


def epoch_ids(loader):
    """Sample ids of one epoch (the loader's first output must be the Int index field)."""
    return ids(collect(loader))


def paged_loader(paged_file, **kw):
    kw.setdefault("num_workers", 2)
    kw.setdefault("drop_last", False)
    return Loader(paged_file, pipelines={"blob": None}, **kw)


# ---- SEQUENTIAL and RANDOM ---------------------------------------------------------------

def test_sequential(index_file):
    loader = Loader(index_file, batch_size=16, num_workers=2, drop_last=False, order=OrderOption.SEQUENTIAL)
    for _ in range(2):
        assert epoch_ids(loader).tolist() == list(range(N_INDEX))


@pytest.mark.parametrize("seed", [0, 1234])
def test_random_is_numpy_permutation(index_file, seed):
    loader = Loader(index_file, batch_size=10, num_workers=2, order=OrderOption.RANDOM, seed=seed, drop_last=False)
    for epoch in range(3):
        want = np.random.default_rng(seed + epoch).permutation(N_INDEX)
        assert epoch_ids(loader).tolist() == want.tolist()


def test_random_largest_seed(index_file):
    seed = 2**63 - 1  # the largest: seed + epoch stays within the Go side's uint64
    loader = Loader(index_file, batch_size=103, num_workers=1, order=OrderOption.RANDOM, seed=seed)
    assert epoch_ids(loader).tolist() == np.random.default_rng(seed).permutation(N_INDEX).tolist()
    assert epoch_ids(loader).tolist() == np.random.default_rng(seed + 1).permutation(N_INDEX).tolist()


@pytest.mark.parametrize("seed", [2**63, 2**64 - 1, 2**70, -1])
def test_seed_out_of_range_is_refused(index_file, seed):
    with pytest.raises(ValueError, match=r"seed .* must be an integer in \[0, 2\*\*63\)"):
        Loader(index_file, batch_size=103, num_workers=1, order=OrderOption.RANDOM, seed=seed)


def test_random_large_seed(index_file):
    seed = 2**40 + 12345
    loader = Loader(index_file, batch_size=103, num_workers=1, order=OrderOption.RANDOM, seed=seed)
    for epoch in range(2):
        assert epoch_ids(loader).tolist() == np.random.default_rng(seed + epoch).permutation(N_INDEX).tolist()


@pytest.mark.parametrize("order", ORDERS, ids=lambda o: o.name)
def test_empty_and_odd_indices(index_file, order):
    for sel, want in (([], []), (np.array([3, 1, 2], dtype=np.int32), [3, 1, 2]), (range(5, 10), list(range(5, 10))),
                      ([4, 4, 9, 4], [4, 4, 9, 4])):
        loader = Loader(index_file, batch_size=2, num_workers=1, indices=sel, drop_last=False, order=order, seed=1)
        assert len(loader) == -(-len(want) // 2)
        got = epoch_ids(loader).tolist()
        if order is OrderOption.RANDOM:
            want = np.random.default_rng(1).permutation(np.asarray(want, dtype=np.int64)).tolist()
        if order is OrderOption.QUASI_RANDOM:
            got, want = sorted(got), sorted(want)
        assert got == want


def test_distributed_more_ranks_than_samples(index_file, monkeypatch):
    sel = [7, 8, 9]
    for order, shuffle in ((OrderOption.SEQUENTIAL, False), (OrderOption.RANDOM, True)):
        loaders = rank_loaders(monkeypatch, 5, lambda: Loader(
            index_file, batch_size=2, num_workers=1, indices=sel, distributed=True, order=order, seed=0,
            drop_last=False))
        for r, loader in enumerate(loaders):
            assert len(loader) == 1
            assert epoch_ids(loader).tolist() == sampler_ids(sel, 5, r, shuffle, seed=0).tolist()


def test_random_with_indices_and_drop_last(index_file):
    sel = np.array([90, 4, 17, 33, 2, 61, 100, 8, 77, 45, 13])
    loader = Loader(index_file, batch_size=4, num_workers=2, order=OrderOption.RANDOM, seed=9, indices=sel)
    assert len(loader) == 2
    for epoch in range(2):
        want = np.random.default_rng(9 + epoch).permutation(sel)[:8]
        assert epoch_ids(loader).tolist() == want.tolist()


def test_random_without_seed_is_random(index_file):
    a = Loader(index_file, batch_size=103, num_workers=1, order=OrderOption.RANDOM)
    b = Loader(index_file, batch_size=103, num_workers=1, order=OrderOption.RANDOM)
    ea, eb = epoch_ids(a), epoch_ids(b)
    assert sorted(ea.tolist()) == list(range(N_INDEX))
    assert ea.tolist() == np.random.default_rng(a.seed).permutation(N_INDEX).tolist()
    assert a.seed != b.seed and not np.array_equal(ea, eb)


# ---- coverage ------------------------------------------------------------------------------

@pytest.mark.parametrize("order", ORDERS, ids=lambda o: o.name)
@pytest.mark.parametrize("subset", [False, True])
def test_coverage_every_epoch(paged_file, order, subset):
    sel = np.arange(PAGED_N)[::3][::-1].copy() if subset else None
    want = sorted(sel.tolist()) if subset else list(range(PAGED_N))
    loader = paged_loader(paged_file, batch_size=7, order=order, seed=5, indices=sel)
    assert len(loader) == -(-len(want) // 7)
    epochs = [epoch_ids(loader) for _ in range(3)]
    for got in epochs:
        assert sorted(got.tolist()) == want
    if order is not OrderOption.SEQUENTIAL:
        assert not np.array_equal(epochs[0], epochs[1]) and not np.array_equal(epochs[1], epochs[2])
    elif subset:
        assert epochs[0].tolist() == sel.tolist()


@pytest.mark.parametrize("order", ORDERS, ids=lambda o: o.name)
def test_coverage_drop_last(paged_file, order):
    loader = paged_loader(paged_file, batch_size=64, order=order, seed=2, drop_last=True)
    got = epoch_ids(loader)
    assert len(loader) == PAGED_N // 64 and len(got) == PAGED_N // 64 * 64
    assert len(set(got.tolist())) == len(got)


# ---- QUASI_RANDOM ---------------------------------------------------------------------------

def max_open_pages(order, pages):
    """The largest number of pages whose first..last use intervals overlap at one point."""
    p = pages[order]
    first, last = {}, {}
    for k, page in enumerate(p.tolist()):
        first.setdefault(page, k)
        last[page] = k
    events = sorted([(f, 1) for f in first.values()] + [(l + 0.5, -1) for l in last.values()])
    cur = best = 0
    for _, d in events:
        cur += d
        best = max(best, cur)
    return best


def test_quasi_random_page_locality(paged_file):
    pages = sample_pages(paged_file)
    n_pages = len(set(pages.tolist()))
    assert n_pages >= 14, "the fixture should span many pages"
    bs = 3
    loader = paged_loader(paged_file, batch_size=bs, order=OrderOption.QUASI_RANDOM, seed=1)
    epochs = [epoch_ids(loader) for _ in range(2)]
    for got in epochs:
        assert sorted(got.tolist()) == list(range(PAGED_N))
        assert max_open_pages(got, pages) <= 2 * bs  # a window of about 2 x batch_size pages
    # RANDOM over the same file touches nearly every page at once: the check above has teeth.
    rnd = epoch_ids(paged_loader(paged_file, batch_size=bs, order=OrderOption.RANDOM, seed=1))
    assert max_open_pages(rnd, pages) >= n_pages - 2


def test_quasi_random_deterministic_per_seed(paged_file):
    a = [epoch_ids(paged_loader(paged_file, batch_size=8, order=OrderOption.QUASI_RANDOM, seed=s, num_workers=w))
         for s, w in ((3, 1), (3, 2), (4, 2))]
    assert np.array_equal(a[0], a[1])
    assert not np.array_equal(a[0], a[2])


def test_quasi_random_with_indices(paged_file):
    pages = sample_pages(paged_file)
    sel = np.arange(0, PAGED_N, 2)
    got = epoch_ids(paged_loader(paged_file, batch_size=4, order=OrderOption.QUASI_RANDOM, seed=8, indices=sel))
    assert sorted(got.tolist()) == sel.tolist()
    assert max_open_pages(got, pages) <= 8


# ---- custom order ---------------------------------------------------------------------------

class RotatedReverse(TraversalOrder):
    def sample_order(self, epoch):
        return np.roll(np.asarray(self.indices)[::-1], epoch)


def test_custom_traversal_order(index_file):
    loader = Loader(index_file, batch_size=10, num_workers=2, order=RotatedReverse, drop_last=False)
    assert isinstance(loader.traversal_order, RotatedReverse)
    for epoch in range(3):
        assert epoch_ids(loader).tolist() == np.roll(np.arange(N_INDEX)[::-1], epoch).tolist()
    sel = [3, 1, 4, 1, 5, 9, 2, 6]
    loader = Loader(index_file, batch_size=3, num_workers=1, order=RotatedReverse, indices=sel, drop_last=True)
    assert epoch_ids(loader).tolist() == sel[::-1][:6]


def test_custom_order_sees_loader_settings(index_file):
    seen = {}

    class Spy(TraversalOrder):
        def sample_order(self, epoch):
            seen.update(seed=self.seed, n=len(self.indices), epoch=epoch, world=self.world_size, rank=self.rank)
            return self.indices
    loader = Loader(index_file, batch_size=50, num_workers=1, order=Spy, seed=77)
    list(loader)
    list(loader)
    assert seen == {"seed": 77, "n": N_INDEX, "epoch": 1, "world": 1, "rank": 0}


# ---- distributed (simulated ranks) -----------------------------------------------------------

def sampler_ids(n_or_indices, world, rank, shuffle, seed=0, epoch=0):
    indices = np.arange(n_or_indices) if np.isscalar(n_or_indices) else np.asarray(n_or_indices)
    s = DistributedSampler(range(len(indices)), num_replicas=world, rank=rank, shuffle=shuffle, seed=seed,
                           drop_last=False)
    s.set_epoch(epoch)
    return indices[list(s)]


def rank_loaders(monkeypatch, world, make):
    out = []
    for r in range(world):
        monkeypatch.setenv("RANK", str(r))
        monkeypatch.setenv("WORLD_SIZE", str(world))
        out.append(make())
    return out


@pytest.mark.parametrize("world", [2, 3, 5])
@pytest.mark.parametrize("subset", [False, True])
def test_distributed_sequential_matches_sampler(index_file, monkeypatch, world, subset):
    sel = np.array([5, 80, 1, 44, 44, 9, 12, 60, 3, 71, 20]) if subset else None
    loaders = rank_loaders(monkeypatch, world, lambda: Loader(
        index_file, batch_size=4, num_workers=2, distributed=True, indices=sel, drop_last=False))
    n = N_INDEX if sel is None else len(sel)
    per = -(-n // world)
    for r, loader in enumerate(loaders):
        assert (loader.rank, loader.world_size) == (r, world)
        assert len(loader) == -(-per // 4)
        want = sampler_ids(n if sel is None else sel, world, r, shuffle=False)
        for _ in range(2):
            assert epoch_ids(loader).tolist() == want.tolist()


@pytest.mark.parametrize("world", [2, 3])
@pytest.mark.parametrize("subset", [False, True])
def test_distributed_random_matches_sampler(index_file, monkeypatch, world, subset):
    sel = np.arange(7, 90, 3) if subset else None
    loaders = rank_loaders(monkeypatch, world, lambda: Loader(
        index_file, batch_size=5, num_workers=2, distributed=True, order=OrderOption.RANDOM, seed=21,
        indices=sel, drop_last=False))
    n = N_INDEX if sel is None else len(sel)
    for epoch in range(3):
        for r, loader in enumerate(loaders):
            want = sampler_ids(n if sel is None else sel, world, r, shuffle=True, seed=21, epoch=epoch)
            assert epoch_ids(loader).tolist() == want.tolist()


def test_distributed_random_drop_last_len(index_file, monkeypatch):
    loaders = rank_loaders(monkeypatch, 4, lambda: Loader(
        index_file, batch_size=5, num_workers=1, distributed=True, order=OrderOption.RANDOM, seed=2))
    # 103 samples over 4 ranks: 26 each (padded), 5 whole batches each.
    for r, loader in enumerate(loaders):
        assert len(loader) == 5
        got = epoch_ids(loader)
        assert got.tolist() == sampler_ids(N_INDEX, 4, r, True, seed=2)[:25].tolist()


def test_distributed_random_without_seed_uses_zero(index_file, monkeypatch):
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.warns(UserWarning):
        loader = Loader(index_file, batch_size=8, num_workers=1, distributed=True, order=OrderOption.RANDOM,
                        drop_last=False)
    assert loader.seed == 0
    assert epoch_ids(loader).tolist() == sampler_ids(N_INDEX, 2, 1, True, seed=0).tolist()


@pytest.mark.parametrize("world", [2, 3])
def test_distributed_quasi_random(paged_file, monkeypatch, world):
    pages = sample_pages(paged_file)
    loaders = rank_loaders(monkeypatch, world, lambda: paged_loader(
        paged_file, batch_size=6, order=OrderOption.QUASI_RANDOM, seed=13, distributed=True))
    per = -(-PAGED_N // world)
    assert len({len(l) for l in loaders}) == 1 and len(loaders[0]) == -(-per // 6)
    for _ in range(2):
        parts = [epoch_ids(l) for l in loaders]
        assert all(len(p) == per for p in parts)
        allids = np.concatenate(parts)
        assert set(allids.tolist()) == set(range(PAGED_N))
        # disjoint up to the padding: only per*world - n samples appear twice
        assert len(allids) - len(set(allids.tolist())) == per * world - PAGED_N
        for p in parts:
            assert len(set(p.tolist())) == len(p)
            assert max_open_pages(p, pages) <= 2 * 6


def test_distributed_needs_rank_info(index_file, monkeypatch):
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    with pytest.raises(RuntimeError, match="distributed"):
        Loader(index_file, batch_size=4, num_workers=1, distributed=True)


# ---- real torch.distributed ------------------------------------------------------------------

def test_torch_distributed_gloo(paged_file, tmp_path):
    import torch.multiprocessing as mp
    import _dist_worker
    world, seed = 2, 3
    # forkserver: children fork from a server that imported torch once (spawn
    # imports it in every child) and load the Go library themselves.
    multiprocessing.set_forkserver_preload(["torch", "torch.distributed", "numpy"])
    ctx = mp.start_processes(_dist_worker.run, args=(world, str(tmp_path / "init"), str(paged_file), str(tmp_path),
                                                     seed), nprocs=world, join=False, start_method="forkserver")
    deadline = time.monotonic() + 120
    while not ctx.join(timeout=1):
        if time.monotonic() > deadline:
            for p in ctx.processes:
                p.kill()
            pytest.fail("distributed workers did not finish within 120 s")
    res = [dict(np.load(tmp_path / f"rank{r}.npz")) for r in range(world)]
    per = -(-PAGED_N // world)
    for r in range(world):
        for epoch in range(2):
            assert res[r][f"sequential_{epoch}"].tolist() == sampler_ids(PAGED_N, world, r, False).tolist()
            assert res[r][f"random_{epoch}"].tolist() == \
                sampler_ids(PAGED_N, world, r, True, seed=seed, epoch=epoch).tolist()
        for name in ("sequential", "random", "quasi"):
            assert res[r][f"{name}_lens"].tolist() == [-(-per // 4)] * world
    for epoch in range(2):
        q = [res[r][f"quasi_{epoch}"] for r in range(world)]
        assert sorted(np.concatenate(q).tolist()) == list(range(PAGED_N))  # 320 is even: no padding
    assert not np.array_equal(res[0]["random_0"], res[0]["random_1"])
