"""Two ranks under torchrun: after torch.cuda.set_device(LOCAL_RANK), every
batch of ToDevice('cuda') (no index) lands on cuda:LOCAL_RANK, and a rank
makes no CUDA context on another rank's GPU."""
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from conftest import has_cuda

WORKER = Path(__file__).parent / "rank_worker.py"


def torchrun(beton, mode, backend, outdir):
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
           str(WORKER), str(beton), mode, backend, str(outdir)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"torchrun exited {proc.returncode}:\n{out[-6000:]}"
    files = sorted(Path(outdir).glob("rank*.json"))
    assert [f.name for f in files] == ["rank0.json", "rank1.json"], f"expected a result per rank:\n{out[-6000:]}"
    results = [json.loads(f.read_text()) for f in files]
    for r in results:
        assert r["num_wrong"] == 0, f"rank {r['rank']}: batches not on {r['expected']}: {r['wrong']}"
        assert r["batches"] > 0 and r["total_finite"], r
    assert results[0]["batches"] == results[1]["batches"], results
    return results


def test_each_rank_on_its_own_gpu(photos, tmp_path):
    if torch.cuda.device_count() < 2:
        pytest.skip(f"needs 2 GPUs, this machine has {torch.cuda.device_count()}: "
                    "test_two_ranks_share_one_gpu runs instead")
    results = torchrun(photos, "own", "nccl", tmp_path)
    for r in results:
        assert r["expected"] == f"cuda:{r['local_rank']}"
        if r["pid_on_gpus"] is None:
            print(f"rank {r['rank']}: nvidia-smi shows no process here; CUDA contexts not checked")
        else:
            assert r["pid_on_gpus"] == [r["own_gpu"]], \
                f"rank {r['rank']} holds CUDA contexts on {r['pid_on_gpus']}, expected only {r['own_gpu']}"


def test_two_ranks_share_one_gpu(photos, tmp_path):
    results = torchrun(photos, "shared", "gloo", tmp_path)
    assert all(r["expected"] == "cuda:0" for r in results)


@pytest.mark.cpu_ok
def test_two_ranks_dry_run(photos, tmp_path):
    if has_cuda():
        pytest.skip("the CPU dry run of the worker; the CUDA tests above ran")
    torchrun(photos, "cpu", "gloo", tmp_path)
