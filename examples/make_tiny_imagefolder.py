#!/usr/bin/env python3
"""Builds a tiny ImageFolder (root/<class>/<n>.jpg) of real photos for trying
train_imagenet.py without ImageNet.

    python examples/make_tiny_imagefolder.py /tmp/tiny --classes 2 --per-class 20

The photos are the desktop wallpapers of Debian's mate-backgrounds and
lomiri-wallpapers-* packages (/usr/share/backgrounds, /usr/share/wallpapers):
each class gets its own source photos, and each image is a random crop of one
of them (random size and aspect ratio, longer side --min-side..--max-side
pixels), saved as JPEG.
"""
import argparse
import sys
from pathlib import Path

import numpy as np
from PIL import Image

PHOTO_DIRS = ["/usr/share/backgrounds", "/usr/share/wallpapers"]


def find_photos(dirs=PHOTO_DIRS):
    photos = []
    for d in dirs:
        d = Path(d)
        if d.is_dir():
            photos += sorted(p for p in d.rglob("*") if p.suffix.lower() in (".jpg", ".jpeg") and p.is_file())
    return photos


def _open_small(path, target):
    """The photo decoded at a reduced scale (JPEG draft mode), longer side >= target."""
    img = Image.open(path)
    img.draft("RGB", (max(target, img.width // 8), max(target, img.height // 8)))
    img = img.convert("RGB")
    scale = target / max(img.size)
    if scale < 1:
        img = img.resize((max(1, round(img.width * scale)), max(1, round(img.height * scale))), Image.BILINEAR)
    return img


def make_tiny_imagefolder(root, num_classes=2, per_class=20, min_side=96, max_side=200, seed=0):
    """Writes num_classes * per_class JPEG crops under root; returns the root."""
    photos = find_photos()
    if len(photos) < num_classes:
        raise SystemExit(f"need at least {num_classes} photos in {PHOTO_DIRS}, found {len(photos)} "
                         "(install mate-backgrounds or lomiri-wallpapers-*)")
    rng = np.random.default_rng(seed)
    root = Path(root)
    # Class c owns photos c, c + num_classes, ...; at most 4 per class to keep it quick.
    owners = [photos[c::num_classes][:4] for c in range(num_classes)]
    for c, srcs in enumerate(owners):
        cdir = root / f"class_{c:03d}"
        cdir.mkdir(parents=True, exist_ok=True)
        sources = [_open_small(p, 2 * max_side) for p in srcs]
        for k in range(per_class):
            src = sources[k % len(sources)]
            side = int(rng.integers(min_side, max_side + 1))
            aspect = float(np.exp(rng.uniform(np.log(3 / 4), np.log(4 / 3))))
            w = min(src.width, max(1, round(side * min(1.0, aspect))))
            h = min(src.height, max(1, round(side * min(1.0, 1 / aspect))))
            left = int(rng.integers(0, src.width - w + 1))
            top = int(rng.integers(0, src.height - h + 1))
            src.crop((left, top, left + w, top + h)).save(cdir / f"{k:05d}.jpg", quality=90)
    return root


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("root")
    p.add_argument("--classes", type=int, default=2)
    p.add_argument("--per-class", type=int, default=20)
    p.add_argument("--min-side", type=int, default=96)
    p.add_argument("--max-side", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    root = make_tiny_imagefolder(a.root, a.classes, a.per_class, a.min_side, a.max_side, a.seed)
    print(f"wrote {a.classes * a.per_class} images in {a.classes} classes under {root}")


if __name__ == "__main__":
    main()
    sys.exit(0)
