"""One rank of test_distributed.py, started by torch.distributed.run.

    python -m torch.distributed.run --standalone --nproc_per_node 2 rank_worker.py BETON MODE BACKEND OUTDIR

MODE own: rank r calls torch.cuda.set_device(LOCAL_RANK) and every batch of
ToDevice('cuda') (no index) must be on cuda:LOCAL_RANK. shared: every rank on
cuda:0. cpu: ToDevice('cpu') (a dry run of this script). Writes what it saw
to OUTDIR/rank<RANK>.json; exits 1 when a batch was on another device.
"""
import json
import os
import subprocess
import sys

import numpy as np
import torch
import torch.distributed as dist

from ffcv_go import Loader
from ffcv_go.fields.decoders import IntDecoder, RandomResizedCropRGBImageDecoder
from ffcv_go.loader import OrderOption
from ffcv_go.transforms import NormalizeImage, RandomHorizontalFlip, Squeeze, ToDevice, ToTensor, ToTorchImage

MEAN = np.array([0.485, 0.456, 0.406]) * 255
STD = np.array([0.229, 0.224, 0.225]) * 255


def gpus_holding(pid):
    """UUIDs of the GPUs on which nvidia-smi lists pid, or None when that
    cannot be seen (no nvidia-smi, or another PID namespace)."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,gpu_uuid", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    rows = [[c.strip() for c in line.split(",")] for line in out.splitlines() if "," in line]
    mine = sorted({uuid for p, uuid in rows if p == str(pid)})
    return mine or None


def uuid_of(index):
    u = str(getattr(torch.cuda.get_device_properties(index), "uuid", ""))
    return u if u.startswith("GPU-") else f"GPU-{u}"


def main():
    beton, mode, backend, outdir = sys.argv[1:5]
    local, rank = int(os.environ["LOCAL_RANK"]), int(os.environ["RANK"])
    if mode == "cpu":
        expect, target = torch.device("cpu"), "cpu"
    else:
        index = local if mode == "own" else 0
        torch.cuda.set_device(index)
        expect, target = torch.device("cuda", index), "cuda"  # no index: the current device
    dist.init_process_group(backend)
    fp = np.float16 if target == "cuda" else np.float32
    loader = Loader(beton, batch_size=16, num_workers=2, order=OrderOption.RANDOM, seed=0, distributed=True,
                    drop_last=True,
                    pipelines={"image": [RandomResizedCropRGBImageDecoder((64, 64)), RandomHorizontalFlip(),
                                         ToTensor(), ToDevice(target, non_blocking=True), ToTorchImage(),
                                         NormalizeImage(MEAN, STD, fp)],
                               "label": [IntDecoder(), ToTensor(), Squeeze(), ToDevice(target, non_blocking=True)]})
    wrong, batches, seen = [], 0, torch.zeros((), device=expect, dtype=torch.float64)
    for epoch in range(2):
        for images, labels in loader:
            for name, t in (("image", images), ("label", labels)):
                if t.device != expect:
                    wrong.append(f"epoch {epoch} batch {batches} {name} on {t.device}")
            seen += images.float().sum().double() + labels.sum()
            batches += 1
    total = seen.clone()
    dist.all_reduce(total)  # the collective runs on this rank's device
    result = {"rank": rank, "local_rank": local, "expected": str(expect), "batches": batches,
              "wrong": wrong[:5], "num_wrong": len(wrong), "total_finite": bool(torch.isfinite(total).item())}
    if target == "cuda":
        result["own_gpu"] = uuid_of(expect.index)
        result["pid_on_gpus"] = gpus_holding(os.getpid())
    loader.close()
    dist.barrier()
    dist.destroy_process_group()
    with open(os.path.join(outdir, f"rank{rank}.json"), "w") as f:
        json.dump(result, f)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
