"""Generate the golden files the core/order tests compare against.

Run from the repository root with the project venv:

    .venv/bin/python core/order/testdata/gen_golden.py

It writes rng.json, random.json and distribute.json next to this script.
The outputs come from numpy (SeedSequence, PCG64, Generator.permutation)
and torch (randperm, DistributedSampler), the libraries FFCV 1.0 uses.
"""

import hashlib
import json
import os

import numpy as np
import torch
from torch.utils.data import DistributedSampler

HERE = os.path.dirname(os.path.abspath(__file__))

SEEDS = [0, 1, 42, 2**32 - 1, 2**32, 12345678901234567, 2**63 + 5, 2**64 - 1]
SIZES = [0, 1, 2, 3, 10, 100, 1000, 100000, 1000003]
FULL_MAX = 100  # store whole permutations up to this size, digests beyond
EDGE = 50  # elements kept from each end when only a digest is stored
GOLDEN = 0x9E3779B97F4A7C15


def make_indices(kind, n):
    """Index arrays the Go test rebuilds from the same formulas."""
    i = np.arange(n, dtype=np.uint64)
    if kind == "range":  # what FFCV passes when no subset is given
        return np.arange(n, dtype=np.int64)
    if kind == "spread":  # arbitrary uint64 ids, many above 2**63
        return i * np.uint64(GOLDEN) + np.uint64(12345)
    if kind == "dup":  # repeated ids
        return (np.arange(n, dtype=np.int64) * 7) % (n // 2 + 1)
    raise ValueError(kind)


def as_u64(a):
    return np.asarray(a).astype(np.uint64)


def digest(a):
    return hashlib.sha256(as_u64(a).astype("<u8").tobytes()).hexdigest()


def ints(a):
    return [int(x) for x in as_u64(a)]


def gen_rng():
    cases = []
    for seed in SEEDS:
        bitgen = np.random.PCG64(seed)
        cases.append(
            {
                "seed": seed,
                "state": ints(np.random.SeedSequence(seed).generate_state(4, np.uint64)),
                "raw": ints(bitgen.random_raw(8)),
            }
        )
    return {"cases": cases}


def gen_random():
    cases = []
    for kind in ["range", "spread", "dup"]:
        for n in SIZES:
            for seed in SEEDS:
                out = np.random.default_rng(seed).permutation(make_indices(kind, n))
                case = {"kind": kind, "n": n, "seed": seed, "sha256": digest(out)}
                if n <= FULL_MAX:
                    case["full"] = ints(out)
                else:
                    case["head"] = ints(out[:EDGE])
                    case["tail"] = ints(out[-EDGE:])
                cases.append(case)
    return {"cases": cases}


def gen_distribute():
    cases = []
    for n in [0, 1, 2, 3, 5, 7, 10, 17, 100]:
        for world in [1, 2, 3, 4, 8]:
            for shuffle, kind, seed, epoch in [
                (False, "range", 0, 0),
                (False, "spread", 0, 0),
                (True, "range", 0, 0),
                (True, "spread", 7, 3),
            ]:
                indices = ints(make_indices(kind, n))
                if shuffle:
                    g = torch.Generator().manual_seed(seed + epoch)
                    perm = torch.randperm(n, generator=g).tolist()
                else:
                    perm = list(range(n))
                ranks = []
                for rank in range(world):
                    s = DistributedSampler(
                        range(n),
                        num_replicas=world,
                        rank=rank,
                        shuffle=shuffle,
                        seed=seed,
                        drop_last=False,
                    )
                    s.set_epoch(epoch)
                    # FFCV indexes its indices with the sampler's positions.
                    ranks.append([indices[p] for p in s])
                cases.append(
                    {
                        "kind": kind,
                        "n": n,
                        "world": world,
                        "shuffle": shuffle,
                        "seed": seed,
                        "epoch": epoch,
                        "order": [indices[p] for p in perm],
                        "ranks": ranks,
                    }
                )
    return {"cases": cases}


def write(name, obj):
    with open(os.path.join(HERE, name), "w") as f:
        json.dump(obj, f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    write("rng.json", gen_rng())
    write("random.json", gen_random())
    write("distribute.json", gen_distribute())
