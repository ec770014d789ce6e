"""num_workers left at its default: one process takes every core it may use;
several loader processes on a node (distributed=True, or LOCAL_WORLD_SIZE set)
take cores // local world size each, at least 1 (no oversubscription)."""
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import printed_results, write, FnDataset

REPO = Path(__file__).resolve().parents[2]
CORES = len(os.sched_getaffinity(0))


@pytest.fixture(scope="module")
def small_file(tmp_path_factory):
    from ffcv_go.fields import IntField
    return write(tmp_path_factory.mktemp("workers") / "ints.beton", {"index": IntField()},
                 FnDataset(40, lambda i: (i,)))


@pytest.fixture
def clean_env(monkeypatch):
    for k in ("LOCAL_WORLD_SIZE", "RANK", "WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(k, raising=False)
    return monkeypatch


def _workers(path, **kw):
    from ffcv_go import Loader
    loader = Loader(str(path), 8, **kw)
    try:
        ids = [int(i) for b in loader for i in b[0].reshape(-1)]  # it runs with that many workers
        assert len(set(ids)) == len(ids) == len(loader) * 8 > 0
        return loader.num_workers
    finally:
        loader.close()


@pytest.mark.parametrize("env, distributed, world, want", [
    ({}, False, 1, CORES),                                   # FFCV's rule: every core
    ({"LOCAL_WORLD_SIZE": "1"}, False, 1, CORES),
    ({"LOCAL_WORLD_SIZE": "2"}, False, 1, max(1, CORES // 2)),
    ({"LOCAL_WORLD_SIZE": "2"}, True, 4, max(1, CORES // 2)),  # 2 nodes x 2: the local count wins
    ({"LOCAL_WORLD_SIZE": "64"}, False, 1, 1),               # at least one
    ({}, True, 3, max(1, CORES // 3)),                       # no LOCAL_WORLD_SIZE: one node of WORLD_SIZE
])
def test_default_workers_share_the_cores(small_file, clean_env, env, distributed, world, want):
    for k, v in env.items():
        clean_env.setenv(k, v)
    if distributed:
        clean_env.setenv("RANK", "0")
        clean_env.setenv("WORLD_SIZE", str(world))
    for default in (-1, 0, None):
        assert _workers(small_file, num_workers=default, distributed=distributed) == want
    # An explicit count is always kept.
    assert _workers(small_file, num_workers=3, distributed=distributed) == 3


def test_bad_local_world_size(small_file, clean_env):
    from ffcv_go import Loader
    for bad in ("abc", "0", "-2"):
        clean_env.setenv("LOCAL_WORLD_SIZE", bad)
        with pytest.raises(ValueError, match="LOCAL_WORLD_SIZE"):
            Loader(str(small_file), 8)
        Loader(str(small_file), 8, num_workers=2).close()  # not consulted with an explicit count


def _env():
    return dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO / "python"),
                                                                    os.environ.get("PYTHONPATH")])))


def test_affinity_mask_is_the_core_count(small_file):
    """The cores counted are those of the process's affinity mask, not the machine's."""
    code = ("import os, sys; from ffcv_go import Loader; "
            "os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}); "
            "os.environ.pop('LOCAL_WORLD_SIZE', None); "
            "print(Loader(sys.argv[1], 8).num_workers)")
    out = subprocess.run([sys.executable, "-c", code, str(small_file)], env=_env(), capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1"]


def test_torchrun_ranks_split_the_cores(small_file, tmp_path):
    """Under torchrun (which sets LOCAL_WORLD_SIZE) with a real gloo process group,
    two ranks on this node each take half of the cores and shard the data."""
    script = tmp_path / "rank.py"
    script.write_text(
        "import json, sys, torch.distributed as dist\n"
        "from ffcv_go import Loader\n"
        "dist.init_process_group('gloo')\n"
        "l = Loader(sys.argv[1], 4, distributed=True, drop_last=False)\n"
        "ids = sorted(int(i) for b in l for i in b[0].reshape(-1))\n"
        "print('RESULT ' + json.dumps({'rank': dist.get_rank(), 'workers': l.num_workers, 'ids': ids}))\n"
        "dist.barrier()\n")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = _env()
    env.pop("LOCAL_WORLD_SIZE", None)
    out = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
                          "--master_addr", "127.0.0.1", "--master_port", str(port), str(script), str(small_file)],
                         env=env, capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-4000:]
    results = sorted(printed_results(out.stdout), key=lambda r: r["rank"])
    assert [r["rank"] for r in results] == [0, 1]
    assert all(r["workers"] == max(1, CORES // 2) for r in results), results
    assert sorted(results[0]["ids"] + results[1]["ids"]) == list(range(40))
