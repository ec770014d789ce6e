"""Self-supervised and policy augmentation stacks: ffcv_go against DataLoader +
torchvision v2 with the same operations, in one run, on real photos.

Stacks (torchvision's parameters; ffcv_go's ops are its Go versions):

  simclr   RandomResizedCrop(224, scale 0.08-1) + flip + ColorJitter(0.4, 0.4,
           0.4, 0.1) at p=0.8 + grayscale p=0.2 + Gaussian blur (23, sigma
           0.1-2) at p=0.5 + normalise to float32: 1 view and 2 views.
  dino     DINO's multi-crop: 2 views at 224 (scale 0.4-1) + 8 at 96 (scale
           0.05-0.4), each flip + jitter (0.4, 0.4, 0.2, 0.1) p=0.8 +
           grayscale p=0.2 + blur (global 1.0 / 0.1 with solarize 0.2; local
           0.5) + normalise; against one 224 view of the global stack.
  randaug  RandomResizedCrop(224) + flip + RandAugment(2, 9), uint8; against
           RandomResizedCrop(224) + flip alone.

Reported per configuration: img/s (images, not views) and the loader's CPU
ms per image (the process's CPU time over the steady epochs: ffcv_go's
workers are threads of this process; DataLoader's is its workers' and the
main process's, from /proc), and the ratios the targets name:

  (a) simclr 2 views / 1 view CPU per image   <= 1.35
  (b) dino 2x224 + 8x96 / one 224 view        <= 2.5
  (c) randaug / RRC + flip                    <= 1.4
  (and, for reference, RRC + flip with 2 views against 1: decode sharing alone)
  every stack: ffcv_go img/s >= 4x DataLoader's

    PYTHONPATH=python .venv/bin/python bench/ssl.py --data bench/data/imagenet-like --num-images 2000

(bench/ssl.py runs this module.)

Markdown to bench/results/ssl.md.
"""
import argparse
import datetime
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

import numpy as np  # noqa: E402
import torch  # noqa: E402


from harness import TreeMonitor, cpu_count, git_rev, image_folder, log, machine_info  # noqa: E402

MEAN = np.array([0.485, 0.456, 0.406]) * 255
STD = np.array([0.229, 0.224, 0.225]) * 255


# ---- the stacks, in both libraries ----------------------------------------------

def _ours(res, scale, jitter, blur_p, solarize_p=0.0, normalize=True, randaug=None, jitter_p=0.8, gray_p=0.2):
    from ffcv_go.transforms import (GaussianBlur, NormalizeImage, RandAugment, RandomColorJitter,
                                    RandomGrayscale, RandomHorizontalFlip, RandomResizedCrop,
                                    RandomSolarization, ToTensor, ToTorchImage)
    ops = [RandomResizedCrop((res, res), scale=scale), RandomHorizontalFlip()]
    if randaug:
        ops.append(RandAugment(*randaug))
    if jitter:
        ops += [RandomColorJitter(jitter_p, *jitter), RandomGrayscale(gray_p)]
    if blur_p:
        ops.append(GaussianBlur(blur_p, kernel_size=_kernel(res), sigma=(0.1, 2.0)))
    if solarize_p:
        ops.append(RandomSolarization(solarize_p, threshold=128))
    ops += [ToTensor(), ToTorchImage()]
    if normalize:
        ops.append(NormalizeImage(MEAN, STD, np.float32))
    return ops


def _theirs(res, scale, jitter, blur_p, solarize_p=0.0, normalize=True, randaug=None, jitter_p=0.8, gray_p=0.2):
    from torchvision.transforms import v2
    ops = [v2.PILToTensor(), v2.RandomResizedCrop((res, res), scale=scale, antialias=True),
           v2.RandomHorizontalFlip()]
    if randaug:
        ops.append(v2.RandAugment(*randaug))
    if jitter:
        ops += [v2.RandomApply([v2.ColorJitter(*jitter)], p=jitter_p), v2.RandomGrayscale(gray_p)]
    if blur_p:
        ops.append(v2.RandomApply([v2.GaussianBlur(_kernel(res), (0.1, 2.0))], p=blur_p))
    if solarize_p:
        ops.append(v2.RandomSolarize(128, p=solarize_p))
    if normalize:
        ops += [v2.ToDtype(torch.float32, scale=True), v2.Normalize(list(MEAN / 255), list(STD / 255))]
    return v2.Compose(ops)


def _kernel(res):
    return max(3, int(0.1 * res) // 2 * 2 + 1)


SIMCLR = dict(scale=(0.08, 1.0), jitter=(0.4, 0.4, 0.4, 0.1), blur_p=0.5)


def stacks(res, local_res, n_local):
    """{name: [view kwargs, ...]}: the configurations, each a list of views."""
    g1 = dict(res=res, scale=(0.4, 1.0), jitter=(0.4, 0.4, 0.2, 0.1), blur_p=1.0)
    g2 = dict(res=res, scale=(0.4, 1.0), jitter=(0.4, 0.4, 0.2, 0.1), blur_p=0.1, solarize_p=0.2)
    loc = dict(res=local_res, scale=(0.05, 0.4), jitter=(0.4, 0.4, 0.2, 0.1), blur_p=0.5)
    return {
        "simclr_1view": [dict(res=res, **SIMCLR)],
        "simclr_2views": [dict(res=res, **SIMCLR)] * 2,
        "dino_1x224": [g1],
        "dino_2x224_8x96": [g1, g2] + [loc] * n_local,
        "rrc_flip": [dict(res=res, scale=(0.08, 1.0), jitter=None, blur_p=0, normalize=False)],
        "rrc_flip_2views": [dict(res=res, scale=(0.08, 1.0), jitter=None, blur_p=0, normalize=False)] * 2,
        "rrc_flip_randaug": [dict(res=res, scale=(0.08, 1.0), jitter=None, blur_p=0, normalize=False,
                                  randaug=(2, 9))],
    }


# ---- runs ----------------------------------------------------------------------------

def ffcv_go_loader(beton, views, batch_size, workers):
    from ffcv_go import Loader
    from ffcv_go.loader import OrderOption
    names = [f"view_{i}" for i in range(len(views))]
    pipelines = {"image": None, "label": None}
    pipelines.update({n: _ours(**v) for n, v in zip(names, views)})
    return Loader(beton, batch_size=batch_size, num_workers=workers, order=OrderOption.RANDOM, seed=0,
                  pipelines=pipelines, custom_field_mapper={n: "image" for n in names})


class _Views:
    """A torchvision dataset transform giving every view of one image."""

    def __init__(self, views):
        self.transforms = [_theirs(**v) for v in views]

    def __call__(self, img):
        return tuple(t(img) for t in self.transforms)


def dataloader(root, views, batch_size, workers, limit):
    import torchvision
    ds = torchvision.datasets.ImageFolder(root, transform=_Views(views))
    if limit and limit < len(ds):
        ds = torch.utils.data.Subset(ds, np.random.default_rng(0).permutation(len(ds))[:limit].tolist())
    return torch.utils.data.DataLoader(ds, batch_size=batch_size, shuffle=True, num_workers=workers,
                                       persistent_workers=True, drop_last=True, prefetch_factor=4)


def timed_epochs(loader, epochs, mon, views_of):
    """img/s and CPU ms per image of each epoch; the first also pays warm-up."""
    out = []
    for e in range(epochs):
        mark = mon.mark()
        t0, n = time.perf_counter(), 0
        for batch in loader:
            views = views_of(batch)
            n += views[0].shape[0]
        dt = time.perf_counter() - t0
        use = mon.since(mark)
        out.append({"images": n, "img_per_s": n / dt, "cpu_ms_per_img": 1000 * use["cpu_s"] / max(1, n)})
        log(f"    epoch {e}: {n} images, {n / dt:.0f} img/s, {out[-1]['cpu_ms_per_img']:.2f} CPU ms/img")
    steady = out[1:] or out
    return {"img_per_s": max(x["img_per_s"] for x in steady),
            "cpu_ms_per_img": min(x["cpu_ms_per_img"] for x in steady), "epochs": out}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default=os.path.join(HERE, "data", "imagenet-like"))
    p.add_argument("--num-images", type=int, default=2000, help="images made if --data does not exist")
    p.add_argument("--beton", default=None, help="default: <data>_ssl.beton")
    p.add_argument("--res", type=int, default=224)
    p.add_argument("--local-res", type=int, default=96)
    p.add_argument("--local-views", type=int, default=8)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--workers", type=int, default=cpu_count())
    p.add_argument("--epochs", type=int, default=3, help="ffcv_go epochs per configuration (the first is warm-up)")
    p.add_argument("--dl-images", type=int, default=640, help="images DataLoader runs per epoch (it is slow)")
    p.add_argument("--dl-epochs", type=int, default=2)
    p.add_argument("--only", nargs="*", help="configurations to run (default: all)")
    p.add_argument("--out", default=os.path.join(HERE, "results", "ssl.md"))
    args = p.parse_args(argv)

    root, n = image_folder(args.data, args.num_images)
    beton = args.beton or root.rstrip("/") + "_ssl.beton"
    if not os.path.exists(beton):
        from ffcv_go import DatasetWriter
        from ffcv_go.fields import IntField, RGBImageField
        log(f"writing {beton}")
        DatasetWriter(beton, {"image": RGBImageField(write_mode="jpg", max_resolution=512), "label": IntField()},
                      num_workers=args.workers).from_image_folder(root)
    mon = TreeMonitor()
    configs = stacks(args.res, args.local_res, args.local_views)
    results = {}
    for name, views in configs.items():
        if args.only and name not in args.only:
            continue
        log(f"{name}: {len(views)} view(s)")
        log("  ffcv_go")
        loader = ffcv_go_loader(beton, views, args.batch_size, args.workers)
        ours = timed_epochs(loader, args.epochs, mon, lambda b: b)
        loader.close()
        log("  DataLoader + torchvision v2")
        dl = dataloader(root, views, args.batch_size, args.workers, args.dl_images)
        theirs = timed_epochs(dl, args.dl_epochs, mon, lambda b: b[0])
        del dl
        results[name] = {"views": len(views), "ffcv_go": ours, "dataloader": theirs}

    def ratio(a, b, key="cpu_ms_per_img"):
        if a in results and b in results:
            return results[a]["ffcv_go"][key] / results[b]["ffcv_go"][key]
        return None

    targets = [("(a) SimCLR 2 views / 1 view, CPU per image", ratio("simclr_2views", "simclr_1view"), 1.35),
               ("(b) DINO 2x224 + 8x96 / one 224 view, CPU per image", ratio("dino_2x224_8x96", "dino_1x224"), 2.5),
               ("(c) RRC + flip + RandAugment(2, 9) / RRC + flip, CPU per image",
                ratio("rrc_flip_randaug", "rrc_flip"), 1.4),
               ("RRC + flip, 2 views / 1 view, CPU per image (decode sharing alone)",
                ratio("rrc_flip_2views", "rrc_flip"), None)]
    m = machine_info()
    lines = [f"# SSL and policy stacks: ffcv_go vs DataLoader + torchvision v2",
             "",
             f"{datetime.date.today()}, {m['cores']} cores ({m['cpu']}), load before {m['load_before']}, "
             f"git {git_rev()}, {n} images from {root}, batch {args.batch_size}, {args.workers} workers each.",
             "",
             "| configuration | views | ffcv_go img/s | ffcv_go CPU ms/img | DataLoader img/s | DataLoader CPU ms/img "
             "| ffcv_go / DataLoader |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for name, r in results.items():
        o, d = r["ffcv_go"], r["dataloader"]
        lines.append(f"| {name} | {r['views']} | {o['img_per_s']:.0f} | {o['cpu_ms_per_img']:.2f} | "
                     f"{d['img_per_s']:.1f} | {d['cpu_ms_per_img']:.1f} | {o['img_per_s'] / d['img_per_s']:.1f}× |")
    lines += ["", "| target | measured | goal |", "|---|---:|---:|"]
    for label, value, goal in targets:
        if value is not None:
            met = "–" if goal is None else f"≤ {goal}× {'(met)' if value <= goal else '(missed)'}"
            lines.append(f"| {label} | {value:.2f}× | {met} |")
    md = "\n".join(lines) + "\n"
    print(md)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(md)
    with open(os.path.splitext(args.out)[0] + ".json", "w") as f:
        json.dump({"machine": m, "results": results}, f, indent=1)
    log(f"table: {args.out}")


if __name__ == "__main__":
    main()
