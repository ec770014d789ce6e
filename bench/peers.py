"""ffcv_go against its peers on one workload: RandomResizedCrop 224 (scale
0.08-1, ratio 3/4-4/3) + random horizontal flip, uint8 NCHW batches of 256,
from an ImageFolder of JPEG photos (bench/make_dataset.py).

Each peer's pipeline is written the way its own documentation recommends:

- ffcv_go and FFCV 1.0: a .beton, RandomResizedCropRGBImageDecoder +
  RandomHorizontalFlip + ToTensor + ToTorchImage;
- torch DataLoader: torchvision ImageFolder with RandomResizedCrop,
  RandomHorizontalFlip, PILToTensor in worker processes;
- SPDL: a spdl.pipeline with thread-level concurrency; each image is demuxed,
  then decoded by FFmpeg with a crop/scale(area)/hflip filter graph, and the
  frames of a batch are converted into one buffer (spdl.io.convert_frames);
- NVIDIA DALI, CPU mode (device_id=None): readers.file + decoders.image_random_crop
  + resize + crop_mirror_normalize(uint8, CHW, mirror=coin_flip).

By default the .beton keeps the photos' size (max_resolution 0: the fair
setting, every system decodes the same pixels); --max-resolution 256 is the
demo's setting. One table (img/s of the best epoch, CPU ms per image of the
process tree, time to the first batch, peak RSS of the process tree, and for
ffcv_go and FFCV the write time), to stdout and bench/results/peers.md, and a
bar chart to bench/results/peers.png. `make bench-peers` installs SPDL, DALI
and matplotlib into .venv and runs this.

    PYTHONPATH=python .venv/bin/python bench/peers.py --data bench/data/imagenet-like --num-images 5000
"""
import argparse
import gc
import glob
import os
import sys
import time
from types import SimpleNamespace

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import harness  # noqa: E402
from harness import MiB, TreeMonitor, check_batch, cpu_count, log, run_epochs  # noqa: E402

SYSTEMS = ["ffcv_go", "dataloader", "ffcv", "spdl", "dali"]
NAMES = {"ffcv_go": "ffcv_go", "dataloader": "DataLoader", "ffcv": "FFCV 1.0", "spdl": "SPDL", "dali": "DALI (CPU)"}
SCALE, RATIO = (0.08, 1.0), (3 / 4, 4 / 3)


def list_images(root):
    """(path, label) of an ImageFolder, labels by sorted class folder."""
    classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    out = []
    for label, c in enumerate(classes):
        for p in sorted(glob.glob(os.path.join(root, c, "*"))):
            if p.lower().endswith((".jpg", ".jpeg")):
                out.append((p, label))
    return out


def rrc_box(rng, w, h):
    """torchvision's RandomResizedCrop.get_params: (left, top, width, height)."""
    area = w * h
    log_ratio = np.log(RATIO)
    for _ in range(10):
        target = area * rng.uniform(*SCALE)
        aspect = np.exp(rng.uniform(*log_ratio))
        cw, ch = int(round(np.sqrt(target * aspect))), int(round(np.sqrt(target / aspect)))
        if 0 < cw <= w and 0 < ch <= h:
            return int(rng.integers(0, w - cw + 1)), int(rng.integers(0, h - ch + 1)), cw, ch
    in_ratio = w / h
    if in_ratio < RATIO[0]:
        cw, ch = w, int(round(w / RATIO[0]))
    elif in_ratio > RATIO[1]:
        cw, ch = int(round(h * RATIO[1])), h
    else:
        cw, ch = w, h
    return (w - cw) // 2, (h - ch) // 2, cw, ch


class SPDLLoader:
    """SPDL's recommended image pipeline (spdl.pipeline + spdl.io), one
    iterator per epoch: yields (uint8 NCHW, int64 labels)."""

    def __init__(self, files, batch_size, workers, res, seed):
        self.files, self.bs, self.workers, self.res, self.seed = files, batch_size, workers, res, seed
        self.epoch = 0

    def __iter__(self):
        import spdl.io
        import torch
        from spdl.pipeline import PipelineBuilder
        order = np.random.default_rng([self.seed, self.epoch]).permutation(len(self.files))
        self.epoch += 1
        n = len(order) // self.bs * self.bs  # drop_last
        res = self.res

        def decode(i):
            path, label = self.files[i]
            rng = np.random.default_rng([self.seed, self.epoch, int(i)])
            packets = spdl.io.demux_image(path)
            x, y, cw, ch = rrc_box(rng, packets.codec.width, packets.codec.height)
            flip = ",hflip" if rng.random() < 0.5 else ""
            desc = f"crop={cw}:{ch}:{x}:{y},scale={res}:{res}:flags=area{flip},format=rgb24"
            return spdl.io.decode_packets(packets, filter_desc=desc), label

        def collate(items):
            frames, labels = zip(*items)
            images = spdl.io.to_torch(spdl.io.convert_frames(list(frames)))  # (N, H, W, C)
            return images.permute(0, 3, 1, 2), torch.tensor(labels, dtype=torch.int64)

        pipeline = (PipelineBuilder()
                    .add_source(order[:n].tolist())
                    .pipe(decode, concurrency=self.workers)
                    .aggregate(self.bs)
                    .pipe(collate)
                    .add_sink(4)
                    .build(num_threads=self.workers))
        with pipeline.auto_stop():
            yield from pipeline.get_iterator(timeout=600)


class DALILoader:
    """DALI's CPU pipeline (device_id=None), as in its ImageNet examples."""

    def __init__(self, root, batch_size, workers, res, seed):
        from nvidia.dali import fn, pipeline_def, types
        from nvidia.dali.plugin.pytorch import DALIGenericIterator, LastBatchPolicy

        @pipeline_def(batch_size=batch_size, num_threads=workers, device_id=None, seed=seed)
        def pipe():
            jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, name="reader")
            images = fn.decoders.image_random_crop(jpegs, device="cpu", output_type=types.RGB,
                                                   random_area=list(SCALE), random_aspect_ratio=list(RATIO))
            images = fn.resize(images, resize_x=res, resize_y=res)
            images = fn.crop_mirror_normalize(images, dtype=types.UINT8, output_layout="CHW",
                                              mirror=fn.random.coin_flip(probability=0.5))
            return images, labels

        p = pipe()
        p.build()
        self.it = DALIGenericIterator([p], ["images", "labels"], reader_name="reader",
                                      last_batch_policy=LastBatchPolicy.DROP, auto_reset=True)

    def __iter__(self):
        for batch in self.it:
            b = batch[0]
            yield b["images"], b["labels"].reshape(-1).long()


def run_peer(name, make, args, mon):
    log(f"{NAMES[name]}: {args.epochs} epochs")
    loader, out = run_epochs(make, args.epochs, mon, args.res)
    del loader
    gc.collect()
    log(f"  first batch after {out['first_batch_s']:.3f} s; best {out['best_img_per_s']:.0f} img/s, "
        f"{out['cpu_ms_per_img']:.2f} CPU ms/image")
    return out


def run_system(name, args, root, files, beton_dir, mon):
    hargs = SimpleNamespace(**vars(args))
    hargs.max_resolution = args.max_resolution or None  # FFCV: None keeps the size
    if name == "ffcv_go":
        hargs.write_via, hargs.reuse_beton = "folder", False
        return harness.run_ffcv_go(hargs, root, os.path.join(beton_dir, "ffcv_go.beton"), mon)
    if name == "ffcv":
        return harness.run_ffcv(hargs, root, os.path.join(beton_dir, "ffcv.beton"), mon)
    if name == "dataloader":
        hargs.dataloader_images = None
        return harness.run_dataloader(hargs, root, mon)
    if name == "spdl":
        import spdl.io  # noqa: F401  (fails here, reported as skipped, when SPDL is missing)
        return run_peer(name, lambda: SPDLLoader(files, args.batch_size, args.workers, args.res, args.seed),
                        args, mon)
    if name == "dali":
        import nvidia.dali  # noqa: F401
        return run_peer(name, lambda: DALILoader(root, args.batch_size, args.workers, args.res, args.seed),
                        args, mon)
    raise ValueError(name)


def table(r, args):
    rows = [("img/s (best epoch)", "best_img_per_s", "{:.0f}"), ("CPU ms per image", "cpu_ms_per_img", "{:.2f}"),
            ("CPU ms per image, best epoch", "best_cpu_ms_per_img", "{:.2f}"),
            ("first batch (s)", "first_batch_s", "{:.3f}"), ("peak RSS (MiB)", "peak_rss_mib", "{:.0f}")]
    present = [s for s in args.systems if "skipped" not in r[s]]
    head = "| metric | " + " | ".join(NAMES[s] for s in args.systems) + " | ffcv_go ÷ best peer |"
    lines = [head, "|---" * (len(args.systems) + 2) + "|"]
    for label, key, fmt in rows:
        vals = {s: r[s].get(key) for s in present}
        cells = [fmt.format(vals[s]) if vals.get(s) is not None else "–" for s in args.systems]
        peers = [v for s, v in vals.items() if s != "ffcv_go" and v]
        ours = vals.get("ffcv_go")
        best = (max(peers) if key == "best_img_per_s" else min(peers)) if peers else None
        ratio = f"{ours / best:.2f}×" if ours and best else "–"
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {ratio} |")
    w = {s: r[s].get("write", {}).get("seconds") for s in ("ffcv_go", "ffcv") if s in present}
    if w:
        cells = [f"{w[s]:.1f}" if w.get(s) else "–" for s in args.systems]
        ratio = f"{w['ffcv'] / w['ffcv_go']:.2f}× faster" if w.get("ffcv") and w.get("ffcv_go") else "–"
        lines.append("| write .beton (s) | " + " | ".join(cells) + f" | {ratio} |")
    notes = [f"- {NAMES[s]}: skipped ({r[s]['skipped']})" for s in args.systems if "skipped" in r[s]]
    m = r["machine"]
    cap = (f"{r['num_images']} JPEGs from {args.data}; RRC {args.res}² + flip, uint8 NCHW, batch {args.batch_size}, "
           f"{args.workers} workers, {args.epochs} epochs; .beton max_resolution "
           f"{args.max_resolution or 'none (fair: photos not shrunk)'}. Machine: {m['cores']} cores ({m.get('cpu', '?')}), "
           f"load {m['load_before']} before / {m.get('load_after', '?')} after.")
    return "\n".join([cap, "", *lines, *notes]) + "\n"


def chart(r, args, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("no matplotlib: no chart")
        return None
    present = [s for s in args.systems if "skipped" not in r[s]]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for ax, (key, title) in zip(axes, [("best_img_per_s", "images / s (higher is better)"),
                                       ("cpu_ms_per_img", "CPU ms / image (lower is better)"),
                                       ("first_batch_s", "first batch, s (lower is better)")]):
        vals = [r[s][key] for s in present]
        bars = ax.bar([NAMES[s] for s in present], vals,
                      color=["#d62728" if s == "ffcv_go" else "#7f7f7f" for s in present])
        ax.bar_label(bars, fmt="%.4g", fontsize=8)
        ax.set_title(title, fontsize=10)
        ax.tick_params(axis="x", labelrotation=30, labelsize=8)
    fig.suptitle(f"RRC {args.res} + flip, batch {args.batch_size}, {args.workers} workers, "
                 f"max_resolution {args.max_resolution or 'none'}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=os.path.join(HERE, "data", "imagenet-like"))
    p.add_argument("--num-images", type=int, default=5000, help="build --data with this many images if missing")
    p.add_argument("--num-classes", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--res", type=int, default=224)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--workers", type=int, default=cpu_count())
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--max-resolution", type=int, default=0, help=".beton max_resolution; 0 (default) keeps the size")
    p.add_argument("--os-cache", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--order", default="random", choices=["random", "quasi_random"])
    p.add_argument("--prefetch", type=int, default=2, help="DataLoader prefetch_factor")
    p.add_argument("--systems", default=",".join(SYSTEMS), help=f"comma-separated subset of {','.join(SYSTEMS)}")
    p.add_argument("--out", default=os.path.join(HERE, "results", "peers"), help="writes OUT.md and OUT.png")
    a = p.parse_args(argv)
    a.systems = [s.strip() for s in a.systems.split(",") if s.strip()]
    for s in a.systems:
        if s not in SYSTEMS:
            p.error(f"unknown system {s!r}")
    return a


def main(argv=None):
    args = parse_args(argv)
    root = os.path.abspath(args.data)
    if not os.path.isdir(root):
        from make_dataset import make_image_folder
        make_image_folder(root, args.num_images, args.num_classes, args.seed)
    files = list_images(root)
    beton_dir = os.path.join(HERE, "data", f"peers_{os.path.basename(root.rstrip('/'))}_{args.max_resolution}")
    os.makedirs(beton_dir, exist_ok=True)
    import torch  # noqa: F401  (before the first mark, as every system needs it)
    machine = harness.machine_info()
    r = {"machine": machine, "num_images": len(files)}
    mon = TreeMonitor()
    try:
        for s in args.systems:
            try:
                r[s] = run_system(s, args, root, files, beton_dir, mon)
            except Exception as e:  # noqa: BLE001 - a missing peer must not cost the others' numbers
                log(f"{NAMES[s]}: skipped: {type(e).__name__}: {e}")
                r[s] = {"skipped": f"{type(e).__name__}: {e}"}
            gc.collect()
            time.sleep(1)
    finally:
        mon.stop()
    machine["load_after"] = "%.2f %.2f %.2f" % os.getloadavg()
    md = table(r, args)
    print()
    print(md, flush=True)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out + ".md", "w") as f:
        f.write(md)
    png = chart(r, args, args.out + ".png")
    log(f"table: {args.out}.md" + (f", chart: {png}" if png else ""))
    return r


if __name__ == "__main__":
    main()
