"""What tracing costs the loader: img/s and CPU per image of one pipeline
with Loader(trace=None), trace=True (stage times only) and trace=FILE (every
span), and optionally with the build before tracing existed (--baseline REV:
the tree of REV is built with `make build` in a temporary directory).

Every configuration runs in its own process, one epoch after a warm-up epoch,
over a file in the page cache; the configurations alternate round after
round, so a machine whose speed drifts (a shared VM) affects them alike, and
the table gives each one's median over the rounds and its ratio to
trace=None.

    PYTHONPATH=python .venv/bin/python bench/trace_overhead.py --images 3000 --rounds 5 --baseline 198757d

Writes bench/results/trace_overhead.md.
"""
import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

CHILD = r"""
import json, sys, time
from ffcv_go import Loader
from ffcv_go.loader import OrderOption
from ffcv_go.fields.decoders import RandomResizedCropRGBImageDecoder
from ffcv_go.transforms import RandomHorizontalFlip, ToTensor, ToTorchImage
path, trace, workers, bs, res = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
kw = {} if trace == "baseline" else {"trace": {"off": None, "stages": True}.get(trace, trace)}
loader = Loader(path, batch_size=bs, num_workers=workers, order=OrderOption.RANDOM, seed=0,
                pipelines={"image": [RandomResizedCropRGBImageDecoder((res, res)), RandomHorizontalFlip(),
                                     ToTensor(), ToTorchImage()], "label": None}, **kw)
for _ in loader:  # warm-up epoch: page cache, threads, allocations
    pass
t, c, n = time.perf_counter(), time.process_time(), 0
for (x,) in loader:
    n += len(x)
dt, cpu = time.perf_counter() - t, time.process_time() - c
loader.close()
print("RESULT " + json.dumps({"img_s": n / dt, "cpu_ms": 1000 * cpu / n}))
"""


def run_child(python_dir, beton, trace, args):
    env = {**os.environ, "PYTHONPATH": python_dir}
    out = subprocess.run([sys.executable, "-c", CHILD, beton, trace, str(args.workers), str(args.batch_size),
                          str(args.res)], env=env, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise RuntimeError(f"{trace}: {out.stderr[-2000:]}")
    line = next(x for x in out.stdout.splitlines() if x.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


def build_baseline(rev, where):
    """The tree of rev (git archive: the repository is only read) with its
    library built; returns its python/ dir."""
    os.makedirs(where)
    archive = subprocess.run(["git", "-C", ROOT, "archive", rev], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", where], input=archive, check=True)
    subprocess.run(["make", "-C", where, "build"], check=True, capture_output=True)
    return os.path.join(where, "python")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default=os.path.join(HERE, "data", "imagenet-like"), help="ImageFolder to write from")
    p.add_argument("--images", type=int, default=3000)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)))
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--res", type=int, default=224)
    p.add_argument("--baseline", default=None, metavar="REV", help="also time the build of this git revision")
    p.add_argument("--out", default=os.path.join(HERE, "results", "trace_overhead.md"))
    a = p.parse_args(argv)

    sys.path.insert(0, HERE)
    import make_dataset
    from ffcv_go import DatasetWriter
    from ffcv_go.fields import IntField, RGBImageField
    tmp = tempfile.mkdtemp(prefix="trace_overhead-")
    try:
        folder = make_dataset.make_image_folder(a.data + f"-{a.images}", a.images, classes=10, seed=0)
        beton = os.path.join(tmp, "photos.beton")
        DatasetWriter(beton, {"image": RGBImageField(write_mode="jpg"), "label": IntField()},
                      progress=False).from_image_folder(folder)
        trace_file = os.path.join(tmp, "trace.json")
        configs = [("off", os.path.join(ROOT, "python")), ("stages", os.path.join(ROOT, "python")),
                   (trace_file, os.path.join(ROOT, "python"))]
        if a.baseline:
            print(f"building {a.baseline} ...", flush=True)
            configs.insert(0, ("baseline", build_baseline(a.baseline, os.path.join(tmp, "baseline"))))
        names = {"baseline": f"build {a.baseline} (no tracing code)", "off": "trace=None",
                 "stages": "trace=True (stage times)", trace_file: "trace=FILE (every span)"}
        results = {c: [] for c, _ in configs}
        load0 = os.getloadavg()[0]
        t0 = time.time()
        for r in range(a.rounds):
            order = configs if r % 2 == 0 else configs[::-1]
            for trace, pydir in order:
                results[trace].append(run_child(pydir, beton, trace, a))
            print(f"round {r + 1}/{a.rounds}: " + ", ".join(
                f"{names[c].split(' (')[0]} {results[c][-1]['img_s']:.0f}" for c, _ in configs), flush=True)
        base = statistics.median(x["img_s"] for x in results["off"])
        base_cpu = statistics.median(x["cpu_ms"] for x in results["off"])
        lines = ["# Loader tracing overhead\n",
                 f"{datetime.date.today()}, {platform.node()}: {os.cpu_count()} CPUs "
                 f"({open('/proc/cpuinfo').read().split('model name')[1].split(':')[1].splitlines()[0].strip()}), "
                 f"load average {load0:.1f} at the start, {time.time() - t0:.0f} s. "
                 f"{a.images} photos, RandomResizedCrop {a.res} + flip, batch {a.batch_size}, "
                 f"{a.workers} workers, one epoch after a warm-up epoch, {a.rounds} rounds alternating.\n",
                 "| configuration | img/s (median) | min - max | vs trace=None | CPU ms/img (median) | vs trace=None |",
                 "|---|---:|---:|---:|---:|---:|"]
        for trace, _ in configs:
            xs = [x["img_s"] for x in results[trace]]
            cs = [x["cpu_ms"] for x in results[trace]]
            m, mc = statistics.median(xs), statistics.median(cs)
            lines.append(f"| {names[trace]} | {m:,.0f} | {min(xs):,.0f} - {max(xs):,.0f} | "
                         f"{100 * (m / base - 1):+.1f}% | {mc:.3f} | {100 * (mc / base_cpu - 1):+.1f}% |")
        text = "\n".join(lines) + "\n"
        os.makedirs(os.path.dirname(a.out), exist_ok=True)
        with open(a.out, "w") as f:
            f.write(text)
        print(text)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
