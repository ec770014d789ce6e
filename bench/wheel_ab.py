"""Loader speed of two ffcv_go wheels on this machine, in one run: e.g. the
wheel main ships (glibc of the build machine, libjpeg-turbo shared from the
system) against the manylinux2014 wheel (glibc 2.17, Zig's clang,
libjpeg-turbo linked in statically).

Each wheel is installed into a directory of its own; the same .beton (written
once, by the new wheel) is then loaded by one child process per wheel, the
two alternating for --rounds rounds, so that the drift of a shared machine
falls on both alike. A child warms up one epoch, then times --epochs epochs
of the harness's pipeline (RandomResizedCrop + flip, uint8 NCHW, as
bench/harness.py and bench/peers.py run ffcv_go) and reports CPU ms per image
and img/s. Prints the medians and new/old ratios as Markdown.

Needs an idle machine: on a shared one the ratios mean little.

    make bench-wheel-ab            # old = git main, built here; new = make wheel's
    .venv/bin/python bench/wheel_ab.py --old OLD.whl --new dist/ffcv_go-...-manylinux2014_x86_64.whl \\
        --data bench/data/imagenet-like --num-images 2000
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def child(site, beton, res, batch_size, workers, epochs):
    sys.path.insert(0, HERE)
    from harness import _ffcv_go_pipelines
    sys.path.insert(0, site)  # the wheel's ffcv_go, never the source tree's
    import ffcv_go
    from ffcv_go import Loader
    from ffcv_go.loader import OrderOption
    assert os.path.dirname(os.path.dirname(ffcv_go.__file__)) == site, ffcv_go.__file__
    loader = Loader(beton, batch_size=batch_size, num_workers=workers, os_cache=True, order=OrderOption.RANDOM,
                    seed=0, pipelines=_ffcv_go_pipelines(res), drop_last=True)
    for _ in loader:  # page cache and batch slots warm before timing
        pass
    cpu, ips = [], []
    for _ in range(epochs):
        c0, t0, n = time.process_time(), time.perf_counter(), 0
        for img, _label in loader:
            n += img.shape[0]
        cpu.append((time.process_time() - c0) / n * 1e3)
        ips.append(n / (time.perf_counter() - t0))
    print(json.dumps({"cpu_ms": cpu, "img_s": ips}))


def install(wheel, site):
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--upgrade",
                    "--target", site, wheel], check=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--old", help="the wheel to compare against")
    p.add_argument("--new", help="the wheel under test")
    p.add_argument("--data", default=os.path.join(REPO, "bench/data/imagenet-like"), help="ImageFolder")
    p.add_argument("--num-images", type=int, default=2000, help="images made in --data if it has none")
    p.add_argument("--work", default=os.path.join(REPO, "build/wheel-ab"), help="sites and .beton go here")
    p.add_argument("--rounds", type=int, default=6, help="child runs per wheel, alternating")
    p.add_argument("--epochs", type=int, default=3, help="timed epochs per child run")
    p.add_argument("--res", type=int, default=224)
    p.add_argument("--max-resolution", type=int, default=256, help="of the .beton's images")
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)))
    p.add_argument("--child", nargs=2, metavar=("SITE", "BETON"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        return child(args.child[0], args.child[1], args.res, args.batch_size, args.workers, args.epochs)
    if not args.old or not args.new:
        p.error("--old and --new are required")

    work = os.path.abspath(args.work)
    os.makedirs(work, exist_ok=True)
    sites = {name: os.path.join(work, name) for name in ("old", "new")}
    for name, wheel in (("old", args.old), ("new", args.new)):
        install(wheel, sites[name])
    if not os.path.isdir(args.data) or not os.listdir(args.data):
        sys.path.insert(0, HERE)
        import make_dataset
        make_dataset.make_image_folder(args.data, args.num_images, classes=10, processes=2)
    beton = os.path.join(work, f"ab_{args.max_resolution}.beton")
    write = ("import sys; from ffcv_go import DatasetWriter; from ffcv_go.fields import RGBImageField, IntField; "
             f"DatasetWriter(sys.argv[1], {{'image': RGBImageField(write_mode='jpg', max_resolution={args.max_resolution}, "
             "jpeg_quality=90), 'label': IntField()}, progress=False).from_image_folder(sys.argv[2])")
    subprocess.run([sys.executable, "-c", write, beton, args.data], check=True,
                   env=dict(os.environ, PYTHONPATH=sites["new"]))

    runs = {name: {"cpu_ms": [], "img_s": []} for name in sites}
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "FFCV_GO_LIBRARY")}
    for r in range(args.rounds):
        for name in (("old", "new") if r % 2 == 0 else ("new", "old")):
            proc = subprocess.run([sys.executable, __file__, "--child", sites[name], beton, "--epochs", str(args.epochs),
                                   "--res", str(args.res), "--batch-size", str(args.batch_size),
                                   "--workers", str(args.workers)], capture_output=True, text=True, env=env)
            if proc.returncode != 0:
                sys.exit(f"the {name} wheel's run failed:\n{proc.stderr}")
            res = json.loads(proc.stdout.strip().splitlines()[-1])
            for k in res:
                runs[name][k] += res[k]
            print(f"round {r + 1}/{args.rounds} {name}: {statistics.median(res['img_s']):.0f} img/s, "
                  f"{statistics.median(res['cpu_ms']):.3f} CPU ms/img", flush=True)

    med = {n: {k: statistics.median(v) for k, v in runs[n].items()} for n in runs}
    print(f"\n{args.rounds} alternating rounds x {args.epochs} epochs, RRC {args.res} + flip, batch {args.batch_size}, "
          f"{args.workers} workers, {os.cpu_count()} CPUs")
    print("| wheel | CPU ms per image, median | min | img/s, median | max |")
    print("|---|---:|---:|---:|---:|")
    for name, wheel in (("old", args.old), ("new", args.new)):
        print(f"| {name}: {os.path.basename(wheel)} | {med[name]['cpu_ms']:.3f} | {min(runs[name]['cpu_ms']):.3f} | "
              f"{med[name]['img_s']:.0f} | {max(runs[name]['img_s']):.0f} |")
    print(f"\nnew/old: CPU per image x{med['new']['cpu_ms'] / med['old']['cpu_ms']:.3f}, "
          f"img/s x{med['new']['img_s'] / med['old']['img_s']:.3f} (meaningful only on an idle machine)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
