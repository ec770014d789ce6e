"""`make demo`: ImageNet-like photos -> .beton with ffcv_go -> loader benchmark vs torch DataLoader.

Steps (each says what it does):
  1. check that ffcv_go (the Go library) loads;
  2. build, or reuse, 10,000 JPEGs in 10 classes under bench/data/imagenet-like (seed 0);
  3. run bench/harness.py on it: ffcv_go writes the .beton, then ffcv_go, the torch
     DataLoader and FFCV 1.0 (once `make ffcv` has installed it: building FFCV takes minutes
     and needs OpenCV, so the demo does not) each load 2 epochs of 224x224 random-resized
     crops; the table also goes to bench/results/latest.md and bench/results/demo.json;
  4. print a summary.

On a busy 2-core machine the demo took about 1.5 minutes, plus about 45 s the first time
for step 2. Options: --num-images, --res, --epochs, --dataloader-images, --skip-dataloader.
"""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
if os.path.join(REPO, "python") not in sys.path:
    sys.path.insert(0, os.path.join(REPO, "python"))


FFCV_HINT = "to compare with FFCV 1.0, run `make ffcv` (installs it into .venv: a few minutes, needs OpenCV), " \
            "then `make demo` again"


def _ffcv_missing():
    """Why FFCV 1.0 cannot run here (None when it can): the demo does not
    build it."""
    import importlib.util
    if importlib.util.find_spec("ffcv") is None:
        return "it is not installed"
    return None


def step(k, msg):
    print(f"\n=== [{k}/4] {msg}", flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--num-images", type=int, default=10000)
    p.add_argument("--num-classes", type=int, default=10)
    p.add_argument("--res", type=int, default=224)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--dataloader-images", type=int, default=None,
                   help="run the DataLoader epochs over a subset of this many images (faster)")
    p.add_argument("--skip-dataloader", action="store_true")
    a = p.parse_args(argv)
    t_start = time.perf_counter()

    step(1, "checking that the ffcv_go library loads (built by `make build`)")
    try:
        import ffcv_go
    except Exception as e:  # noqa: BLE001
        raise SystemExit(f"demo: cannot import ffcv_go ({type(e).__name__}: {e}); run `make build` first")
    print(f"ffcv_go {ffcv_go.__version__} from {os.path.dirname(ffcv_go.__file__)}")

    root = os.path.join(HERE, "data", "imagenet-like")
    step(2, f"ImageNet-like dataset: {a.num_images} JPEGs, {a.num_classes} classes, seed 0, in {root}")
    from make_dataset import make_image_folder
    t0 = time.perf_counter()
    make_image_folder(root, a.num_images, a.num_classes, seed=0)
    t_data = time.perf_counter() - t0

    ffcv_missing = _ffcv_missing()
    step(3, "benchmark: ffcv_go write + load vs torch DataLoader"
         + (f" (not vs FFCV 1.0: {ffcv_missing}; {FFCV_HINT})" if ffcv_missing else " vs FFCV 1.0"))
    import harness
    hargs = ["--data", root, "--res", str(a.res), "--epochs", str(a.epochs), "--batch-size", str(a.batch_size),
             "--order", "random", "--out-json", os.path.join(HERE, "results", "demo.json")]
    if a.dataloader_images:
        hargs += ["--dataloader-images", str(a.dataloader_images)]
    if a.skip_dataloader:
        hargs += ["--skip-dataloader"]
    r = harness.main(hargs)

    step(4, "summary")
    ours, dl, lim = r["ffcv_go"], r.get("dataloader") or {}, r["limit"]
    w = ours["write"]
    lines = [f"dataset      {r['num_images']} images ({t_data:.0f} s to build or check)",
             f"write        ImageFolder -> .beton in {w['seconds']:.1f} s "
             f"({r['num_images'] / w['seconds']:.0f} img/s, {w['size_mib']:.0f} MiB, via {w['via']})",
             f"ffcv_go      best {ours['best_img_per_s']:.0f} img/s, mean {ours['mean_img_per_s']:.0f} img/s, "
             f"first batch {ours['first_batch_s']:.3f} s, peak RSS {ours['peak_rss_mib']:.0f} MiB",
             f"limit        {lim['cores']} cores x {lim['single_core_img_per_s']:.0f} img/s (one core) = "
             f"{lim['limit_img_per_s']:.0f} img/s; ffcv_go reaches "
             f"{ours['best_img_per_s'] / lim['limit_img_per_s']:.0%} of it"]
    if "best_img_per_s" in dl:
        lines.append(f"DataLoader   best {dl['best_img_per_s']:.0f} img/s, first batch {dl['first_batch_s']:.3f} s, "
                     f"peak RSS {dl['peak_rss_mib']:.0f} MiB (process tree)")
        lines.append(f"ffcv_go / DataLoader: {ours['best_img_per_s'] / dl['best_img_per_s']:.1f}x img/s, "
                     f"{dl['cpu_ms_per_img'] / ours['cpu_ms_per_img']:.1f}x less CPU per image")
    ff = r.get("ffcv") or {}
    if "best_img_per_s" in ff:
        lines.append(f"FFCV 1.0     best {ff['best_img_per_s']:.0f} img/s; ffcv_go / FFCV: "
                     f"{ours['best_img_per_s'] / ff['best_img_per_s']:.2f}x")
    elif ff.get("skipped"):
        lines.append(f"FFCV 1.0     skipped: {ff['skipped']}")
        lines.append(f"             {FFCV_HINT}")
    lines.append(f"load average {r['machine']['load_before']} before, {r['machine']['load_after']} after "
                 f"({r['machine']['cores']} cores; timings on a shared machine vary)")
    lines.append(f"table        {os.path.join(HERE, 'results', 'latest.md')}")
    lines.append(f"total        {time.perf_counter() - t_start:.0f} s")
    print("\n".join(lines), flush=True)


if __name__ == "__main__":
    main()
