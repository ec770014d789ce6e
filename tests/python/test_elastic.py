"""Elastic, deterministic resume: a state saved mid-epoch at one world size
continues that epoch at another, every remaining sample once over the new
ranks and nothing already taken seen again; later epochs are normal epochs
at the new world size (core/order/elastic.go, Loader.load_state_dict)."""
import json
import multiprocessing
import time

import numpy as np
import pytest

from conftest import PAGED_N, ids

from ffcv_go import Loader
from ffcv_go.loader import OrderOption
from ffcv_go.traversal_order import TraversalOrder

# BUCKETED and RECT are test_bucketed.py's and test_yolo_ops.py's.
ORDERS = [o for o in OrderOption if o not in (OrderOption.BUCKETED, OrderOption.RECT)]
SEED = 11
EPOCH = 1


def subset():
    """301 of paged_file's 320 samples, shuffled: `indices` (their order is
    SEQUENTIAL's), and a count no world size here divides (padding)."""
    return np.random.default_rng(0).permutation(PAGED_N)[:301]


def loader_at(monkeypatch, path, rank, world, order, batch_size, drop_last, **kw):
    monkeypatch.setenv("RANK", str(rank))
    monkeypatch.setenv("WORLD_SIZE", str(world))
    kw.setdefault("indices", subset())
    return Loader(path, batch_size=batch_size, num_workers=1, order=order, distributed=world > 1, seed=SEED,
                  drop_last=drop_last, pipelines={"blob": None}, **kw)


def take(loader, k):
    """The ids of k batches of the next epoch, and its iterator (the loader's
    state follows the iterator only while the iterator is alive)."""
    it = iter(loader)
    return ids([next(it) for _ in range(k)]), it


def save(monkeypatch, path, order, world, batch_size, drop_last, k, state=None):
    """Every rank takes k batches (of epoch EPOCH, or of the epoch state
    resumes); returns (ids taken by all ranks, the ranks' states)."""
    taken, states = [], []
    for r in range(world):
        loader = loader_at(monkeypatch, path, r, world, order, batch_size, drop_last)
        loader.load_state_dict(state or {"epoch": EPOCH, "batch": 0, "seed": SEED})
        got, it = take(loader, k)
        taken.append(got)
        states.append(json.loads(json.dumps(loader.state_dict())))  # as a checkpoint stores it
    assert all(s == states[0] for s in states), "ranks disagree on the state"
    return np.concatenate(taken), states[0]


def resume(monkeypatch, path, order, world, batch_size, drop_last, state):
    """Each rank's ids for the rest of the epoch, and then of the next epoch
    alongside a fresh loader's (which the next epoch must equal)."""
    rests, nexts = [], []
    for r in range(world):
        loader = loader_at(monkeypatch, path, r, world, order, batch_size, drop_last)
        loader.load_state_dict(state)
        it = iter(loader)
        want_len = len(it)
        rest = list(it)
        assert len(rest) == want_len
        rests.append(ids(rest))
        fresh = loader_at(monkeypatch, path, r, world, order, batch_size, drop_last)
        fresh.load_state_dict({"epoch": EPOCH + 1, "batch": 0, "seed": SEED})
        nexts.append((ids(list(loader)), ids(list(fresh))))
    return rests, nexts


def check_rest(taken, rests, world, batch_size, drop_last, all_ids=None):
    """Nothing repeated, nothing taken seen again; every remaining sample
    once (drop_last: all but fewer than world * batch_size); equal batch
    counts, unless the last step has fewer samples than ranks."""
    all_ids = set(subset().tolist()) if all_ids is None else all_ids
    rest = np.concatenate(rests)
    assert len(set(rest.tolist())) == len(rest), "a sample repeated"
    assert not set(rest.tolist()) & set(taken.tolist()), "a sample taken before the save seen again"
    left = all_ids - set(taken.tolist())
    counts = [len(r) // batch_size if drop_last else -(-len(r) // batch_size) for r in rests]
    if drop_last:
        assert len(left - set(rest.tolist())) < world * batch_size
        assert set(rest.tolist()) <= left and len(set(counts)) == 1
    else:
        assert set(rest.tolist()) == left
        last = len(left) % (world * batch_size)
        if last == 0 or last >= world:
            assert len(set(counts)) == 1, counts
        else:  # the documented exception: ranks past the last step's samples have one batch fewer
            assert counts == [counts[0]] * last + [counts[0] - 1] * (world - last), counts


@pytest.mark.parametrize("order", ORDERS, ids=lambda o: o.name)
@pytest.mark.parametrize("drop_last", [False, True], ids=["keep_last", "drop_last"])
def test_resume_at_other_world_and_batch_sizes(paged_file, monkeypatch, order, drop_last):
    taken, state = save(monkeypatch, paged_file, order, 4, 6, drop_last, 5)
    assert len(taken) == 4 * 5 * 6 and (state["epoch"], state["batch"]) == (EPOCH, 5)
    assert state["elastic"]["stages"][0]["world"] == 4
    # (11 x 8 ranks: 181 left = 2 steps of 88 and 5 samples, fewer than the ranks)
    for world, bs in ((1, 6), (2, 6), (3, 6), (8, 6), (4, 4), (2, 12), (8, 11)):
        rests, nexts = resume(monkeypatch, paged_file, order, world, bs, drop_last, state)
        check_rest(taken, rests, world, bs, drop_last)
        for got, want in nexts:
            assert np.array_equal(got, want), (world, bs)


@pytest.mark.parametrize("order", ORDERS, ids=lambda o: o.name)
def test_resume_twice(paged_file, monkeypatch, order):
    """4 ranks save, 3 resume and save again, 8 resume: each sample once."""
    taken4, state = save(monkeypatch, paged_file, order, 4, 6, False, 3)
    taken3, state = save(monkeypatch, paged_file, order, 3, 5, False, 4, state=state)
    assert [s["layout"] for s in state["elastic"]["stages"]][1:] == ["rest"]
    taken = np.concatenate([taken4, taken3])
    assert len(set(taken.tolist())) == len(taken)
    rests, _ = resume(monkeypatch, paged_file, order, 8, 4, False, state)
    check_rest(taken, rests, 8, 4, False)


@pytest.mark.parametrize("order", ORDERS, ids=lambda o: o.name)
def test_same_sizes_resume_exactly(paged_file, monkeypatch, order):
    """At the saving run's sizes the rest is the uninterrupted run's (padding
    included), from the new state and from the old {epoch, batch, seed} one."""
    _, state = save(monkeypatch, paged_file, order, 4, 6, False, 5)
    old = {k: state[k] for k in ("epoch", "batch", "seed")}
    for r in range(4):
        ref = loader_at(monkeypatch, paged_file, r, 4, order, 6, False)
        ref.load_state_dict({"epoch": EPOCH, "batch": 0, "seed": SEED})
        full = ids(list(ref))
        for st in (state, old):
            loader = loader_at(monkeypatch, paged_file, r, 4, order, 6, False)
            loader.load_state_dict(st)
            assert np.array_equal(ids(list(loader)), full[5 * 6:])


def test_state_between_epochs_starts_a_normal_epoch(paged_file, monkeypatch):
    _, state = save(monkeypatch, paged_file, OrderOption.RANDOM, 4, 6, True, 12)  # 75 per rank: 12 batches
    assert (state["epoch"], state["batch"]) == (EPOCH + 1, 0)
    rests, nexts = resume(monkeypatch, paged_file, OrderOption.RANDOM, 2, 6, True, state)
    fresh = [loader_at(monkeypatch, paged_file, r, 2, OrderOption.RANDOM, 6, True) for r in range(2)]
    for r, loader in enumerate(fresh):
        loader.load_state_dict({"epoch": EPOCH + 1, "batch": 0, "seed": SEED})
        assert np.array_equal(rests[r], ids(list(loader)))


class _Reversed(TraversalOrder):
    def sample_order(self, epoch):
        return np.asarray(self.indices)[::-1][self.rank::self.world_size]


def test_states_that_do_not_fit_are_refused(paged_file, index_file, monkeypatch):
    _, state = save(monkeypatch, paged_file, OrderOption.RANDOM, 4, 6, False, 2)
    with pytest.raises(ValueError, match="samples"):  # another dataset size
        loader_at(monkeypatch, paged_file, 0, 2, OrderOption.RANDOM, 6, False,
                  indices=subset()[:300]).load_state_dict(state)
    _, seq = save(monkeypatch, paged_file, OrderOption.SEQUENTIAL, 4, 6, False, 2)
    with pytest.raises(ValueError, match="does not match"):  # same size, other indices
        loader_at(monkeypatch, paged_file, 0, 2, OrderOption.SEQUENTIAL, 6, False,
                  indices=subset()[::-1]).load_state_dict(seq)
    with pytest.raises(ValueError, match="does not match"):  # even at the same sizes
        loader_at(monkeypatch, paged_file, 0, 4, OrderOption.SEQUENTIAL, 6, False,
                  indices=subset()[::-1]).load_state_dict(seq)
    with pytest.raises(ValueError, match="seed"):
        Loader(paged_file, batch_size=6, num_workers=1, seed=SEED + 1).load_state_dict(state)
    bad = json.loads(json.dumps(state))
    bad["elastic"]["stages"][0]["batches"] = 99
    with pytest.raises(ValueError, match="99 batches"):
        loader_at(monkeypatch, paged_file, 0, 2, OrderOption.RANDOM, 6, False).load_state_dict(bad)
    # A custom order has no global order to rebuild: same sizes only.
    custom = loader_at(monkeypatch, paged_file, 0, 4, _Reversed, 6, False)
    _, it = take(custom, 2)
    cstate = custom.state_dict()
    assert "elastic" not in cstate
    with pytest.raises(ValueError, match="custom order"):
        loader_at(monkeypatch, paged_file, 0, 2, _Reversed, 6, False).load_state_dict(cstate)
    with pytest.raises(ValueError, match="built-in order"):
        loader_at(monkeypatch, paged_file, 0, 2, _Reversed, 6, False).load_state_dict(state)


def test_distributed_quasi_random_without_seed_agrees(paged_file, monkeypatch):
    parts = []
    for r in range(2):
        monkeypatch.setenv("RANK", str(r))
        monkeypatch.setenv("WORLD_SIZE", "2")
        with pytest.warns(UserWarning, match="seed 0"):
            loader = Loader(paged_file, batch_size=8, num_workers=1, order=OrderOption.QUASI_RANDOM,
                            distributed=True, drop_last=False, pipelines={"blob": None})
        assert loader.seed == 0
        parts.append(ids(list(loader)))
    assert sorted(np.concatenate(parts).tolist()) == list(range(PAGED_N))


# ---- real torch.distributed (gloo) processes -------------------------------------------------

def _run_group(world, args, tmp_path, phase):
    import torch.multiprocessing as mp
    import _elastic_worker
    ctx = mp.start_processes(_elastic_worker.run, args=(world, str(tmp_path / f"init_{phase}{world}"), *args),
                             nprocs=world, join=False, start_method="forkserver")
    deadline = time.monotonic() + 120
    while not ctx.join(timeout=1):
        if time.monotonic() > deadline:
            for p in ctx.processes:
                p.kill()
            pytest.fail(f"{phase} at world {world}: workers did not finish within 120 s")
    return [dict(np.load(tmp_path / f"{phase}{world}_rank{r}.npz")) for r in range(world)]


def test_gloo_save_at_4_resume_at_2_8_and_1(paged_file, tmp_path, monkeypatch):
    import _elastic_worker
    # Children fork from a server that has torch imported already (cheap),
    # and load the Go library themselves (it does not survive a fork).
    multiprocessing.set_forkserver_preload(["torch", "torch.distributed", "numpy"])
    np.save(tmp_path / "indices.npy", subset())
    bs, k = 6, 5

    def args(phase):
        return (str(paged_file), str(tmp_path / "indices.npy"), str(tmp_path), phase, bs, k, SEED)

    saved = _run_group(4, args("save"), tmp_path, "save")
    resumed = {world: _run_group(world, args("resume"), tmp_path, "resume") for world in (2, 8)}
    for name in _elastic_worker.ORDERS:
        for drop in (False, True):
            key = f"{name}_{int(drop)}"
            assert all(bool(r[f"{key}_agree"]) for r in saved), key
            taken = np.concatenate([r[f"{key}_taken"] for r in saved])
            assert len(taken) == 4 * k * bs
            state = json.loads((tmp_path / f"state_{key}.json").read_text())
            for world, res in resumed.items():
                rests = [r[f"{key}_rest"] for r in res]
                check_rest(taken, rests, world, bs, drop)
                assert all(bool(r[f"{key}_len_ok"]) for r in res)
                batches = res[0][f"{key}_batches"].tolist()
                assert batches == [len(r) // bs if drop else -(-len(r) // bs) for r in rests]
                if drop:  # drop_last: every rank the same number of batches (DDP lockstep)
                    assert len(set(batches)) == 1, batches
                # The next epoch is the normal one at the new world size.
                assert all(bool(r[f"{key}_next_ok"]) for r in res), (key, world)
            # World 1: this process, not distributed (RANDOM then draws numpy's
            # permutation in later epochs; the saved epoch keeps torch's).
            one = Loader(paged_file, batch_size=bs, num_workers=1, order=OrderOption[name], seed=SEED,
                         indices=subset(), drop_last=drop, pipelines={"blob": None})
            one.load_state_dict(state)
            check_rest(taken, [ids(list(one))], 1, bs, drop)



@pytest.mark.parametrize("order", ORDERS, ids=lambda o: o.name)
def test_resume_across_shards(tmp_path, monkeypatch, order):
    """A sharded dataset is one dataset for elastic resume too: saved at
    world 4, resumed at 3, each of the 153 samples of 3 shards once."""
    from conftest import FnDataset, write
    from ffcv_go.fields import IntField
    sizes = [50, 51, 52]
    paths = [str(write(tmp_path / f"s{k}.beton", {"index": IntField()},
                       FnDataset(n, lambda i, base=sum(sizes[:k]): (base + i,)))) for k, n in enumerate(sizes)]

    def make(rank, world):
        monkeypatch.setenv("RANK", str(rank))
        monkeypatch.setenv("WORLD_SIZE", str(world))
        return Loader(paths, batch_size=4, num_workers=1, order=order, distributed=True, seed=SEED, drop_last=False)

    taken, states, its = [], [], []
    for r in range(4):
        loader = make(r, 4)
        its.append(iter(loader))
        taken.append(ids([next(its[-1]) for _ in range(3)]))
        states.append(json.loads(json.dumps(loader.state_dict())))
    assert all(s == states[0] for s in states)
    rests = []
    for r in range(3):
        loader = make(r, 3)
        loader.load_state_dict(states[0])
        rests.append(ids(list(loader)))
    check_rest(np.concatenate(taken), rests, 3, 4, False, all_ids=set(range(sum(sizes))))
