"""Soak: Loaders made, read and dropped round after round, as a notebook or a
hyperparameter sweep does; ffcv_go beside FFCV 1.0 in the same loop.

Each library runs in a process of its own with Python's collector on its
default. Round k makes a Loader over the same .beton (RandomResizedCrop 160 +
flip + NormalizeImage to float32, batch 128, QUASI_RANDOM, os_cache
alternating every four rounds) and ends it one of four ways:

  k % 4 == 0   a full epoch, then the name is dropped
  k % 4 == 1   two batches, then loader and iterator are dropped mid-epoch
  k % 4 == 2   a full epoch, then close() (FFCV: close() where it has one)
  k % 4 == 3   one batch held across the drop and released after it

After every round the process's RSS, open files and threads are recorded. A
side whose RSS passes --max-rss-gib stops there (FFCV 1.0 keeps every
dropped loader's memory, files and threads: FFCV #345), so that it cannot
take the machine down. Output: a table (markdown) and a plot (PNG) of the
three against the round.

    PYTHONPATH=python .venv/bin/python bench/soak_loaders.py --rounds 200
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
MiB = 1 << 20
MEAN = np.array([0.485, 0.456, 0.406]) * 255
STD = np.array([0.229, 0.224, 0.225]) * 255


def usage():
    """(RSS MiB, open files, OS threads) of this process."""
    with open("/proc/self/statm") as f:
        rss = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / MiB
    return rss, len(os.listdir("/proc/self/fd")), len(os.listdir("/proc/self/task"))


def soak(lib, beton, rounds, batch_size, workers, res, max_rss_mib):
    """Runs the rounds with lib ('ffcv_go' or 'ffcv'); returns one record per round."""
    if lib == "ffcv_go":
        sys.path.insert(0, os.path.join(REPO, "python"))
        from ffcv_go.fields.decoders import IntDecoder, RandomResizedCropRGBImageDecoder
        from ffcv_go.loader import Loader, OrderOption
        from ffcv_go.transforms import NormalizeImage, RandomHorizontalFlip, Squeeze, ToTensor, ToTorchImage
    else:
        from ffcv.fields.decoders import IntDecoder, RandomResizedCropRGBImageDecoder
        from ffcv.loader import Loader, OrderOption
        from ffcv.transforms import NormalizeImage, RandomHorizontalFlip, Squeeze, ToTensor, ToTorchImage

    def make(k):
        # Normalised on the CPU before ToTensor, as FFCV needs it there (after
        # ToTorchImage, FFCV 1.0.2's stage grouping never returns).
        pipes = {"image": [RandomResizedCropRGBImageDecoder((res, res)), RandomHorizontalFlip(),
                           NormalizeImage(MEAN, STD, np.float32), ToTensor(), ToTorchImage()],
                 "label": [IntDecoder(), ToTensor(), Squeeze()]}
        return Loader(beton, batch_size=batch_size, num_workers=workers, order=OrderOption.QUASI_RANDOM,
                      os_cache=(k // 4) % 2 == 0, seed=k, drop_last=True, pipelines=pipes)

    records = []
    t0 = time.perf_counter()
    for k in range(rounds):
        loader = make(k)
        held = None
        if k % 4 == 1:
            it = iter(loader)
            next(it)
            next(it)
            del it
        elif k % 4 == 3:
            held = next(iter(loader))
        else:
            for batch in loader:
                del batch
            if k % 4 == 2 and hasattr(loader, "close"):
                loader.close()
        del loader
        held = None  # noqa: F841 - released after the loader
        rss, files, threads = usage()
        records.append({"round": k + 1, "seconds": time.perf_counter() - t0, "rss_mib": rss, "files": files,
                        "threads": threads})
        print(json.dumps(records[-1]), file=sys.stderr, flush=True)
        if rss > max_rss_mib:
            print(f"[soak] {lib}: RSS {rss / 1024:.1f} GiB after round {k + 1}: stopped", file=sys.stderr, flush=True)
            break
    return records


def run_side(lib, args):
    """Runs one library's soak in a fresh process; its records, or None."""
    cmd = [sys.executable, __file__, "--side", lib, "--beton", args.beton, "--rounds", str(args.rounds),
           "--batch-size", str(args.batch_size), "--workers", str(args.workers), "--res", str(args.res),
           "--max-rss-gib", str(args.max_rss_gib)]
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
    print(f"[soak] {lib}: {args.rounds} rounds", flush=True)
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, text=True)
    if p.returncode != 0:
        print(f"[soak] {lib} failed (exit {p.returncode})", flush=True)
        return None
    return json.loads(p.stdout)


def make_beton(args):
    """The photo .beton both sides read (written by ffcv_go; FFCV reads it too)."""
    if os.path.exists(args.beton):
        return
    from harness import image_folder
    sys.path.insert(0, os.path.join(REPO, "python"))
    from ffcv_go import DatasetWriter
    from ffcv_go.fields import IntField, RGBImageField
    root, n = image_folder(args.data, args.num_images)
    print(f"[soak] writing {n} photos from {root} -> {args.beton}", flush=True)
    DatasetWriter(args.beton, {"image": RGBImageField(write_mode="jpg", max_resolution=args.max_resolution),
                               "label": IntField()}, progress=False).from_image_folder(root)


def report(results, args, out):
    from harness import machine_info
    m = machine_info()
    date = datetime.date.today().isoformat()
    libs = [k for k, v in results.items() if v]
    marks = sorted({1, 10, 25, 50, 100, 150, args.rounds} & set(range(1, args.rounds + 1)))
    marks = sorted(set(marks) | {len(results[lib]) for lib in libs})
    lines = [f"Soak of {args.rounds} make-read-drop rounds ({m['cores']} cores, {m['cpu']}, {date}); "
             f"RandomResizedCrop {args.res} + flip + normalize (float32), batch {args.batch_size}, "
             f"{args.workers} workers, QUASI_RANDOM, os_cache alternating.", "",
             "| round | " + " | ".join(f"{lib} RSS MiB | {lib} files | {lib} threads" for lib in libs) + " |",
             "|---:|" + "---:|---:|---:|" * len(libs)]
    for r in marks:
        row = [str(r)]
        for lib in libs:
            if r > len(results[lib]):
                row += ["stopped"] * 3
                continue
            rec = results[lib][r - 1]
            row += [f"{rec['rss_mib']:.0f}", str(rec["files"]), str(rec["threads"])]
        lines.append("| " + " | ".join(row) + " |")
    row = ["max"]
    for lib in libs:
        recs = results[lib]
        row += [f"{max(r['rss_mib'] for r in recs):.0f}", str(max(r["files"] for r in recs)),
                str(max(r["threads"] for r in recs))]
    lines.append("| " + " | ".join(row) + " |")
    md = "\n".join(lines) + "\n"
    print(md)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "soak.md"), "w") as f:
        f.write(md)
    with open(os.path.join(out, "soak.json"), "w") as f:
        json.dump({"machine": m, "date": date, "args": vars(args), "results": results}, f)

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for lib in libs:
        recs = results[lib]
        x = [r["round"] for r in recs]
        for ax, key in zip(axes, ("rss_mib", "files", "threads")):
            ax.plot(x, [r[key] for r in recs], label=lib)
    for ax, title in zip(axes, ("RSS (MiB)", "open files", "threads")):
        ax.set_title(title)
        ax.set_xlabel("round")
        ax.grid(alpha=0.3)
    axes[0].legend()
    fig.suptitle(f"Loaders made, read and dropped: {m['cores']} cores, {m['cpu']}, {date}", fontsize=9)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "soak.png"), dpi=110)
    print(f"[soak] {os.path.join(out, 'soak.md')}, {os.path.join(out, 'soak.png')}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default=os.path.join(HERE, "data", "soak-photos"))
    p.add_argument("--num-images", type=int, default=1500)
    p.add_argument("--max-resolution", type=int, default=512)
    p.add_argument("--beton", default=os.path.join(HERE, "data", "soak-photos.beton"))
    p.add_argument("--rounds", type=int, default=200)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--res", type=int, default=160)
    p.add_argument("--libs", default="ffcv_go,ffcv")
    p.add_argument("--max-rss-gib", type=float, default=12.0, help="a side stops when its RSS passes this")
    p.add_argument("--out", default=os.path.join(HERE, "results"))
    p.add_argument("--side", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.side:
        json.dump(soak(args.side, args.beton, args.rounds, args.batch_size, args.workers, args.res,
                       args.max_rss_gib * 1024), sys.stdout)
        return
    make_beton(args)
    results = {lib: run_side(lib, args) for lib in args.libs.split(",")}
    report(results, args, args.out)


if __name__ == "__main__":
    main()
