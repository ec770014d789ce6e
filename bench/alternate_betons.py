"""Loader CPU per image on several .beton files, epochs alternating in one process.

On a shared VM the machine's speed drifts by a fifth within minutes, more than
most changes to the loader. Alternating epochs of each file in one process
(same build, same page cache, same drift) compares the files fairly: e.g. one
written with restart markers against one without (RGBImageField(
restart_markers=False) or an older writer). RRC 224 + flip, uint8, batch 256,
as bench/peers.py runs ffcv_go.

    PYTHONPATH=python .venv/bin/python bench/alternate_betons.py a.beton b.beton --epochs 12
"""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from harness import _ffcv_go_pipelines, cpu_count  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("betons", nargs="+")
    p.add_argument("--epochs", type=int, default=12, help="timed epochs per file")
    p.add_argument("--res", type=int, default=224)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--workers", type=int, default=cpu_count())
    args = p.parse_args(argv)
    from ffcv_go import Loader
    from ffcv_go.loader import OrderOption
    loaders = [Loader(b, batch_size=args.batch_size, num_workers=args.workers, os_cache=True,
                      order=OrderOption.RANDOM, seed=0, pipelines=_ffcv_go_pipelines(args.res), drop_last=True)
               for b in args.betons]
    for loader in loaders:  # page cache and batch slots warm before timing
        for _ in loader:
            pass
    runs = {b: [] for b in args.betons}
    for _ in range(args.epochs):
        for b, loader in zip(args.betons, loaders):
            c0, t0, n = time.process_time(), time.perf_counter(), 0
            for img, _label in loader:
                n += img.shape[0]
            runs[b].append(((time.process_time() - c0) / n * 1e3, n / (time.perf_counter() - t0)))
    print("| .beton | CPU ms per image, min | median | img/s, max | median |")
    print("|---|---:|---:|---:|---:|")
    for b in args.betons:
        cpu = sorted(r[0] for r in runs[b])
        ips = sorted(r[1] for r in runs[b])
        print(f"| {b} | {cpu[0]:.3f} | {cpu[len(cpu) // 2]:.3f} | {ips[-1]:.0f} | {ips[len(ips) // 2]:.0f} |")


if __name__ == "__main__":
    main()
