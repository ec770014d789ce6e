"""YOLO training batches: ffcv_go against Ultralytics' own dataset and
DataLoader, with cache=False and with cache="ram".

Setting: imgsz 640, batch 16, 2 workers, training mode (Ultralytics'
default augmentation: mosaic, random perspective, HSV, flip), on scenes of
coloured objects pasted over real photos (bench/scenes.py, written as a
YOLO dataset, --height x --width JPEGs) converted with YoloDataset.

  ultralytics      build_yolo_dataset(mode="train") + build_dataloader, as its
                   DetectionTrainer makes them (cache=False)
  ultralytics-ram  the same with cache="ram" (images decoded and resized once,
                   kept in the process)
  ffcv_go          UltralyticsLoader(train=True): the image operations are
                   ffcv_go.integrations.ultralytics.yolo_image_ops, the one
                   place where the YOLO pipeline is defined; num_workers Go
                   threads

Each runs in a fresh process, --rounds times, the order alternating
between rounds; reported, as medians over the rounds: images/s (mean over the epochs
after the first; Ultralytics' first epoch starts its workers), CPU ms per
image of the process tree, and the tree's peak RSS (DataLoader workers
included; for cache="ram" the cache filled when the dataset is made),
and ours ÷ each peer's images/s within each round (min, median, max).
Needs Ultralytics: run it with build/ultralytics-venv/bin/python.

    PYTHONPATH=python build/ultralytics-venv/bin/python bench/yolo.py --images 512
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

os.environ.setdefault("YOLO_OFFLINE", "1")
os.environ.setdefault("YOLO_AUTOINSTALL", "False")

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

LOADERS = ("ffcv_go", "ultralytics", "ultralytics-ram")


def make_data(args):
    """The YOLO dataset (once per size and count) and its .beton."""
    import make_dataset
    import scenes
    root = os.path.join(args.data, f"scenes-{args.images}-{args.width}x{args.height}")
    yaml = os.path.join(root, "data.yaml")
    beton = os.path.join(root, "train.beton")
    if not os.path.exists(beton):
        from ffcv_go import DatasetWriter
        from ffcv_go.detection import YoloDataset
        scenes.write_yolo(root, {"train": range(args.images)}, make_dataset.find_photos(), height=args.height,
                          width=args.width, bg_side=max(args.height, args.width))
        with open(yaml, "a") as f:
            f.write("val: images/train\n")
        ds = YoloDataset(yaml, split="train")
        DatasetWriter(beton + ".part", ds.fields(), progress=False).from_indexed_dataset(ds)
        os.replace(beton + ".part", beton)
    return yaml, beton


def _hyp(args, cache):
    from ultralytics.cfg import get_cfg
    return get_cfg(overrides=dict(imgsz=args.imgsz, batch=args.batch, workers=args.workers, cache=cache,
                                  task="detect", data="data.yaml"))


def make_loader(name, args, yaml, beton):
    if name == "ffcv_go":
        from ffcv_go.integrations.ultralytics import UltralyticsLoader
        return UltralyticsLoader(beton, args.batch, train=True, imgsz=args.imgsz, hyp=_hyp(args, False),
                                 num_workers=args.workers, seed=0)
    from ultralytics.data import build_dataloader, build_yolo_dataset
    from ultralytics.data.utils import check_det_dataset
    cfg = _hyp(args, "ram" if name == "ultralytics-ram" else False)
    data = check_det_dataset(yaml)
    ds = build_yolo_dataset(cfg, data["train"], args.batch, data, mode="train", rect=False, stride=32)
    return build_dataloader(ds, args.batch, args.workers, shuffle=True)


def run_one(name, args):
    """Runs one loader in this process; prints its figures as JSON."""
    import harness
    import ultralytics
    ultralytics.settings.update(sync=False)
    yaml, beton = make_data(args)
    mon = harness.TreeMonitor()
    mark = mon.mark()
    t0 = time.perf_counter()
    loader = make_loader(name, args, yaml, beton)
    made_s = time.perf_counter() - t0
    rates, cpu_ms = [], []
    for epoch in range(args.epochs):
        m = mon.mark() if epoch else None
        peak = mon.peak_rss
        t = time.perf_counter()
        n = 0
        for b in loader:
            n += len(b["img"])
            assert b["img"].shape[1:] == (3, args.imgsz, args.imgsz), b["img"].shape
        dt = time.perf_counter() - t
        rates.append(n / dt)
        if m is not None:
            cpu_ms.append(mon.since(m)["cpu_s"] * 1e3 / n)
        mon.peak_rss = max(mon.peak_rss, peak)  # mark() restarts the peak: keep the run's
    whole = mon.since(mark)
    mon.stop()
    later = rates[1:] or rates
    print(json.dumps({"loader": name, "images_per_s": sum(later) / len(later), "epochs_images_per_s": rates,
                      "cpu_ms_per_image": sum(cpu_ms) / len(cpu_ms) if cpu_ms else None,
                      "peak_rss_mib": whole["peak_rss_mib"], "make_s": made_s}))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--images", type=int, default=256)
    p.add_argument("--width", type=int, default=640)
    p.add_argument("--height", type=int, default=480)
    p.add_argument("--imgsz", type=int, default=640)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--rounds", type=int, default=3, help="runs of every loader, in alternating order")
    p.add_argument("--data", default=os.path.join(HERE, "data", "yolo"))
    p.add_argument("--loaders", default=",".join(LOADERS))
    p.add_argument("--run", choices=LOADERS, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.run:
        return run_one(args.run, args)
    make_data(args)
    names = args.loaders.split(",")
    rounds = []  # per round: loader -> its figures
    for k in range(args.rounds):
        # Rounds alternate the order, so that a drift of the machine's speed
        # favours no loader.
        order = names if k % 2 == 0 else names[::-1]
        results = {}
        for name in order:
            cmd = [sys.executable, os.path.abspath(__file__), "--run", name, "--data", args.data]
            for key in ("images", "width", "height", "imgsz", "batch", "workers", "epochs"):
                cmd += [f"--{key}", str(getattr(args, key))]
            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            results[name] = json.loads(out.strip().splitlines()[-1])
            print(json.dumps(dict(results[name], round=k)), flush=True)
        rounds.append(results)
    print(f"\nimgsz {args.imgsz}, batch {args.batch}, {args.workers} workers, {args.images} images "
          f"{args.width}x{args.height}; medians of {args.rounds} round(s), ours × per round (min, median, max)")
    print(f"{'loader':<16} {'images/s':>9} {'CPU ms/img':>11} {'peak RSS MiB':>13}  ours ×")
    for name in names:
        rs = [r[name] for r in rounds]
        ips = statistics.median(r["images_per_s"] for r in rs)
        cpus = [r["cpu_ms_per_image"] for r in rs if r["cpu_ms_per_image"] is not None]
        cpu = f"{statistics.median(cpus):.1f}" if cpus else ""
        rss = max(r["peak_rss_mib"] for r in rs)
        ratio = ""
        if "ffcv_go" in names and name != "ffcv_go":
            x = sorted(r["ffcv_go"]["images_per_s"] / r[name]["images_per_s"] for r in rounds)
            ratio = f"{x[0]:.2f}, {statistics.median(x):.2f}, {x[-1]:.2f}"
        print(f"{name:<16} {ips:>9.1f} {cpu:>11} {rss:>13.0f}  {ratio}")

if __name__ == "__main__":
    main()
