"""Where the CPU time of the loader's per-image work goes.

Runs the Go benchmark BenchmarkRRCStages (core/jpeg/profile_test.go) on the
photos of an ImageFolder: RandomResizedCrop to 224x224 with a random flip,
from the JPEG bytes, on one thread, timed with the thread's CPU clock per
stage (Huffman decode, IDCT + upsampling + colour conversion, resize with
the flip fused). It runs every resize kernel (the scalar Go code, the
SSE2 and the AVX2 C kernels: FFCV_GO_SIMD=off|sse2|auto) in turn, so one run shows
the before and after, and prints a Markdown table. There is no copy stage:
the loader writes the resize's output straight into the batch.

    python bench/profile_rrc.py [--data bench/data/imagenet-like] [--images 4000]

Add --cpuprofile FILE for a Go CPU profile of the first AVX2 run
(go tool pprof -top core/jpeg/jpeg.test FILE).
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
STAGES = ["huffman-µs/img", "idct+colour-µs/img", "resize-µs/img", "total-µs/img", "img/s/core"]
KERNELS = [("Go (scalar)", "off"), ("C, SSE2", "sse2"), ("C, AVX2", "")]


def run(data, images, simd, cpuprofile=None):
    env = dict(os.environ, FFCV_GO_SIMD=simd)
    if data:
        env["FFCV_GO_PHOTOS"] = data
    cmd = ["go", "test", "./core/jpeg", "-run", "^$", "-bench", "^BenchmarkRRCStages$", "-cpu", "1",
           "-count", "1", "-benchtime", f"{images}x"]
    if cpuprofile:
        cmd += ["-cpuprofile", cpuprofile, "-o", os.path.join(ROOT, "core", "jpeg", "jpeg.test")]
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"profile_rrc: {' '.join(cmd)} failed:\n{out.stdout}\n{out.stderr}")
    line = next((l for l in out.stdout.splitlines() if l.startswith("BenchmarkRRCStages")), None)
    if line is None:
        sys.exit(f"profile_rrc: no benchmark line in:\n{out.stdout}")
    return {unit: float(v) for v, unit in re.findall(r"([\d.]+) (\S+/\S+)", line)}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=os.path.join(HERE, "data", "imagenet-like"),
                   help="folder of JPEGs (default bench/data/imagenet-like; the Go test photo if missing)")
    p.add_argument("--images", type=int, default=4000, help="images per kernel, over all rounds (default 4000)")
    p.add_argument("--rounds", type=int, default=4, help="rounds in which the kernels take turns (default 4)")
    p.add_argument("--cpuprofile", default=None, help="also write a Go CPU profile of the AVX2 run here")
    a = p.parse_args(argv)
    data = a.data if os.path.isdir(a.data) else None
    if data is None:
        print(f"profile_rrc: {a.data} missing; profiling the Go test photo", file=sys.stderr)
    # The kernels take turns, round after round, and each stage's median is
    # kept: on a shared VM the speed drifts over a minute by 10% or more,
    # which would otherwise favour whichever kernel ran first.
    runs = {name: [] for name, _ in KERNELS}
    per_round = max(1, a.images // a.rounds)
    for r in range(a.rounds):
        for name, simd in KERNELS:
            prof = a.cpuprofile if simd == "" and r == 0 else None
            runs[name].append(run(data, per_round, simd, prof))
            print(f"round {r}, {name}: {runs[name][-1]}", file=sys.stderr, flush=True)
    rows = {name: {k: statistics.median(x[k] for x in rs) for k in rs[0]} for name, rs in runs.items()}
    src = data or "the Go test photo (400x300)"
    print(f"CPU µs per image on one thread, RRC 224 + flip from {src}, {a.images} images per kernel "
          f"in {a.rounds} interleaved rounds, median per stage (BenchmarkRRCStages):\n")
    print("| stage | " + " | ".join(n for n, _ in KERNELS) + " |")
    print("|---" * (len(KERNELS) + 1) + "|")
    for s in STAGES:
        label = s.replace("-µs/img", "").replace("img/s/core", "images/s per core")
        fmt = "{:.0f}" if s == "img/s/core" else "{:.1f}"
        print(f"| {label} | " + " | ".join(fmt.format(rows[n].get(s, float('nan'))) for n, _ in KERNELS) + " |")


if __name__ == "__main__":
    main()
