#!/usr/bin/env python3
"""The loader's images/s alone, no model, on a machine's cores: a .beton's
JPEGs repeated into a larger file (stored as they are, not re-encoded), so
that a small bundle of photos still makes epochs long enough to time, then
`python -m ffcv_go bench` on it (RandomResizedCrop 224 + flip, batch 256)
for each --workers.

    python bench/loader_rate.py --data build/gpu-data/photos-256.beton --samples 32768 --workers 16 8

Prints each epoch's rate as `ffcv_go bench` does; the first epoch includes
starting the workers.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

from ffcv_go import DatasetWriter
from ffcv_go.fields import IntField, RGBImageField
from ffcv_go.reader import Reader


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True, help=".beton with an image field (JPEG) named image")
    p.add_argument("--samples", type=int, default=32768, help="samples in the repeated file")
    p.add_argument("--workers", type=int, nargs="+", default=[os.cpu_count() or 1])
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--dir", default=None, help="where the repeated file goes (default: a temporary folder)")
    a = p.parse_args(argv)
    with Reader(a.data) as r:
        jpegs = [bytes(r.read(i, "image")) for i in range(r.num_samples)]
    with tempfile.TemporaryDirectory(dir=a.dir) as tmp:
        out = os.path.join(tmp, "repeated.beton")
        t = time.perf_counter()
        DatasetWriter(out, {"image": RGBImageField(write_mode="jpg"), "label": IntField()}, progress=False,
                      num_workers=max(a.workers)).from_indexed_dataset(
            [(jpegs[i % len(jpegs)], i % 10) for i in range(a.samples)])
        print(f"{a.samples} samples ({len(jpegs)} photos repeated), {os.path.getsize(out) / 2**20:.0f} MiB, written "
              f"in {time.perf_counter() - t:.1f} s", flush=True)
        for w in a.workers:
            print(f"--- workers {w}", flush=True)
            subprocess.run([sys.executable, "-m", "ffcv_go", "bench", out, "--workers", str(w),
                            "--epochs", str(a.epochs)], check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
