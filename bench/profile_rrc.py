"""Where the CPU time of the loader's per-image work goes.

Runs the Go benchmark BenchmarkRRCStages (core/jpeg/profile_test.go) on the
photos of an ImageFolder: RandomResizedCrop to 224x224 with a random flip,
from the JPEG bytes, on one thread, timed with the thread's CPU clock per
stage (Huffman decode, IDCT + upsampling + colour conversion, resize with
the flip fused). It runs every resize kernel (the scalar Go code, the
SSE2 and the AVX2 C kernels: FFCV_GO_SIMD=off|sse2|auto) in turn, so one run shows
the kernels side by side, and prints a Markdown table. There is no copy stage:
the loader writes the resize's output straight into the batch.

    python bench/profile_rrc.py [--data bench/data/imagenet-like] [--images 4000]

Add --cpuprofile FILE for a Go CPU profile of the first AVX2 run
(go tool pprof -top core/jpeg/jpeg.test FILE).

With OpenCV installed (make ffcv), each round also times cv2.resize
(INTER_AREA, one thread) on the very crops the Go benchmark ran, and a second
table sets a single-core limit as a reference: our region decode plus
OpenCV's resize, against our decode + resize.
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


def run(data, images, simd, cpuprofile=None, crops_out=None):
    env = dict(os.environ, FFCV_GO_SIMD=simd)
    if data:
        env["FFCV_GO_PHOTOS"] = data
    if crops_out:
        env["FFCV_GO_CROPS_OUT"] = crops_out
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
    cv = opencv_crops(data)
    cv_runs = []
    for r in range(a.rounds):
        for name, simd in KERNELS:
            prof = a.cpuprofile if simd == "" and r == 0 else None
            runs[name].append(run(data, per_round, simd, prof))
            print(f"round {r}, {name}: {runs[name][-1]}", file=sys.stderr, flush=True)
        if cv:
            cv_runs.append(opencv_resize_us(cv))
            print(f"round {r}, OpenCV: {cv_runs[-1]}", file=sys.stderr, flush=True)
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
    if cv_runs:
        ours = rows[KERNELS[-1][0]]
        decode = ours["huffman-µs/img"] + ours["idct+colour-µs/img"]
        cvr = statistics.median(x["resize"] for x in cv_runs)
        cvf = statistics.median(x["flip"] for x in cv_runs)
        print(f"\nThe single-core limit on the same {len(cv)} crops: our region decode (DCT-scaled; our Huffman decoder, libjpeg's IDCT) "
              f"plus OpenCV {cv_version()} INTER_AREA on one thread (cv2.resize, called from Python: about "
              f"1 µs of each call is the call), median of {len(cv_runs)} rounds:\n")
        print("| µs per image | decode | resize | flip | total | images/s per core |")
        print("|---|---:|---:|---:|---:|---:|")
        print(f"| region decode + OpenCV resize (the limit) | {decode:.1f} | {cvr:.1f} | – | {decode + cvr:.1f} | "
              f"{1e6 / (decode + cvr):.0f} |")
        print(f"| the same + cv2.flip on half the images | {decode:.1f} | {cvr:.1f} | {cvf:.1f} | "
              f"{decode + cvr + cvf:.1f} | {1e6 / (decode + cvr + cvf):.0f} |")
        print(f"| ours: region decode + AVX2 resize, flip fused | {decode:.1f} | {ours['resize-µs/img']:.1f} | 0 | "
              f"{ours['total-µs/img']:.1f} | {1e6 / ours['total-µs/img']:.0f} |")


def cv_version():
    import cv2
    return cv2.__version__


def opencv_crops(data):
    """The Go benchmark's crops as (source view, flip) pairs for cv2.resize:
    views into the photos decoded by OpenCV, pre-shrunk (untimed) to the
    DCT scale our decoder would use; None without OpenCV or photos."""
    try:
        import cv2
        import numpy as np
    except ImportError:
        print("profile_rrc: no OpenCV (make ffcv installs it); skipping the single-core limit", file=sys.stderr)
        return None
    if not data:
        return None
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "crops.tsv")
        run(data, 1, "", crops_out=path)
        lines = open(path).read().splitlines()
    photos, out = {}, []
    for line in lines:
        f, x0, y0, x1, y1, flip, m = line.split("\t")
        x0, y0, x1, y1, m = int(x0), int(y0), int(x1), int(y1), int(m)
        if f not in photos:
            photos[f] = cv2.imdecode(np.fromfile(f, np.uint8), cv2.IMREAD_COLOR)
        src = photos[f][y0:y1, x0:x1]
        if m < 8:
            w, h = -(-(x1 - x0) * m // 8), -(-(y1 - y0) * m // 8)
            src = cv2.resize(src, (w, h), interpolation=cv2.INTER_AREA)
        out.append((src, flip == "true"))
    return out


def opencv_resize_us(crops, size=224):
    """Thread CPU µs per image of cv2.resize (INTER_AREA) over crops, and of
    cv2.flip on the flipped ones, on one OpenCV thread."""
    import time
    import cv2
    import numpy as np
    cv2.setNumThreads(1)
    dst = np.empty((size, size, 3), np.uint8)
    t0 = time.thread_time_ns()
    outs = [cv2.resize(src, (size, size), interpolation=cv2.INTER_AREA) for src, _ in crops]
    t1 = time.thread_time_ns()
    for o, (_, flip) in zip(outs, crops):
        if flip:
            cv2.flip(o, 1, dst=dst)
    t2 = time.thread_time_ns()
    return {"resize": (t1 - t0) / 1e3 / len(crops), "flip": (t2 - t1) / 1e3 / len(crops)}


if __name__ == "__main__":
    main()
