"""Builds an ImageNet-like ImageFolder (root/class_xxx/img_yyyyyyy.jpg) from real photos.

The photos come from Debian wallpaper packages (mate-backgrounds,
lomiri-wallpapers-16.04, lomiri-wallpapers-20.04). Each output image is a
random crop of one photo with ImageNet's shape statistics (longer side 250 to
500 px, often exactly 500; aspect ratio in [3/4, 4/3]; mean about 420 x 360),
randomly flipped and colour-jittered so no two images are alike, saved as
JPEG quality 90 with PIL. Image i depends only on (seed, i), so the set is
the same whatever the number of processes.

    python bench/make_dataset.py bench/data/imagenet-like --num-images 10000 --num-classes 10 --seed 0

or from Python: ``make_image_folder(root, n, classes, seed)``.
"""
import argparse
import glob
import json
import os
import re
import sys
import time
import multiprocessing

import numpy as np
from PIL import Image

PHOTO_DIRS = ("/usr/share/backgrounds", "/usr/share/wallpapers", "/usr/share/lomiri", "/usr/share/unity8")
DEBIAN_PACKAGES = ("mate-backgrounds", "lomiri-wallpapers-16.04", "lomiri-wallpapers-20.04")
SOURCE_SIDE = 1000        # photos are downscaled so their longer side is about this
MIN_SOURCE_SIDE = 800     # photos smaller than this are not used
MARKER = ".make_dataset.json"

_SOURCES = None           # per-worker: list of downscaled PIL images


def find_photos(dirs=PHOTO_DIRS):
    """Sorted paths of the JPEG photos under dirs; one file per photo (the
    same wallpaper shipped at several resolutions counts once)."""
    files = []
    for d in dirs:
        files += glob.glob(os.path.join(d, "**", "*"), recursive=True)
    files = sorted(f for f in set(files) if f.lower().endswith((".jpg", ".jpeg")) and os.path.isfile(f))
    seen, out = set(), []
    for f in files:
        key = re.sub(r"[_-]?\d{3,5}x\d{3,5}$", "", os.path.splitext(os.path.basename(f))[0]).lower()
        if key in seen:
            continue
        try:
            with Image.open(f) as im:
                if max(im.size) < MIN_SOURCE_SIDE:
                    continue
        except OSError:
            continue
        seen.add(key)
        out.append(f)
    return out


def _load_source(path):
    """The photo downscaled to SOURCE_SIDE px on its longer side, as (size, RGB bytes)."""
    im = Image.open(path)
    w, h = im.size
    s = min(1.0, SOURCE_SIDE / max(w, h))
    target = (max(1, round(w * s)), max(1, round(h * s)))
    im.draft("RGB", target)  # DCT-domain downscale while decoding: fast
    im = im.convert("RGB")
    if im.size != target:
        im = im.resize(target, Image.BILINEAR)
    return im.size, im.tobytes()


def _set_sources(loaded):
    global _SOURCES
    _SOURCES = [Image.frombytes("RGB", size, data) for size, data in loaded]


def _init_worker(paths):
    if _SOURCES is None:  # not inherited from the parent (no fork)
        _set_sources([_load_source(p) for p in paths])


def image_params(seed, i, num_sources):
    """Everything random about image i: (source, box, size, flip, jitter)."""
    rng = np.random.default_rng([seed, i])
    src = int(rng.integers(num_sources))
    # Longer side: ImageNet has most images at 500 px, the rest mostly smaller.
    longer = 500 if rng.random() < 0.35 else int(rng.integers(250, 501))
    # width / height: ImageNet photos are mostly landscape.
    if rng.random() < 0.75:
        aspect = float(np.exp(rng.uniform(0, np.log(4 / 3))))
    else:
        aspect = float(np.exp(rng.uniform(np.log(3 / 4), 0)))
    if aspect >= 1:
        size = (longer, max(1, round(longer / aspect)))
    else:
        size = (max(1, round(longer * aspect)), longer)
    frac = float(rng.uniform(0.3, 1.0))            # linear fraction of the largest crop that fits
    u = rng.random(2)
    flip = bool(rng.random() < 0.5)
    jitter = np.concatenate([rng.uniform(0.75, 1.25, size=2),    # brightness, contrast
                             rng.uniform(0.9, 1.1, size=3)])      # per-channel colour gains
    return src, aspect, frac, u, size, flip, jitter


def _jitter_lut(jitter, grey=118.0):
    """One 768-entry table doing brightness, contrast (around a mid grey) and
    a colour cast at once: much cheaper than three ImageEnhance blends."""
    b, c = jitter[0], jitter[1]
    v = np.arange(256, dtype=np.float64)
    lut = [np.clip(c * (g * b * v - grey) + grey, 0, 255) for g in jitter[2:5]]
    return np.rint(np.concatenate(lut)).astype(np.uint8).tolist()


def make_image(seed, i):
    """Image i of the set (a PIL image) and the index of the source photo it
    is cut from; the worker's sources must be loaded."""
    src, aspect, frac, u, size, flip, jitter = image_params(seed, i, len(_SOURCES))
    im = _SOURCES[src]
    W, H = im.size
    # The largest box of this aspect in the source, scaled by frac, at a random place.
    bw, bh = (W, W / aspect) if W / aspect <= H else (H * aspect, H)
    bw, bh = bw * frac, bh * frac
    x0, y0 = u[0] * (W - bw), u[1] * (H - bh)
    out = im.resize(size, Image.BILINEAR, box=(x0, y0, x0 + bw, y0 + bh))
    if flip:
        out = out.transpose(Image.FLIP_LEFT_RIGHT)
    return out.point(_jitter_lut(jitter)), src


def _make_one(job):
    root, seed, i, classes = job
    out, _ = make_image(seed, i)
    path = os.path.join(root, f"class_{i % classes:03d}", f"img_{i:07d}.jpg")
    out.save(path, "JPEG", quality=90)
    return out.size


def make_image_folder(root, n, classes=10, seed=0, processes=2, photos=None, verbose=True):
    """Builds (or reuses, when an identical set is there) n images in `classes`
    class folders under root. Returns root."""
    root = os.fspath(root)
    n, classes, seed = int(n), int(classes), int(seed)
    if n < 1 or classes < 1:
        raise ValueError("need at least one image and one class")
    want = {"num_images": n, "num_classes": classes, "seed": seed, "version": 1}
    marker = os.path.join(root, MARKER)
    if os.path.exists(marker):
        with open(marker) as f:
            if json.load(f) == want:
                if verbose:
                    print(f"[make_dataset] reusing {root}: {n} images, {classes} classes, seed {seed}")
                return root
    photos = find_photos() if photos is None else list(photos)
    if not photos:
        raise SystemExit(
            "make_dataset: no photos found under " + ", ".join(PHOTO_DIRS) + ".\n"
            "Install the Debian wallpaper packages, e.g.\n"
            "    sudo apt-get install " + " ".join(DEBIAN_PACKAGES))
    if os.path.exists(marker):
        os.remove(marker)
    # Files from an earlier, different set must go: ImageFolder would list them.
    keep = {os.path.join(root, f"class_{i % classes:03d}", f"img_{i:07d}.jpg") for i in range(n)}
    for f in glob.glob(os.path.join(root, "class_*", "*")):
        if f not in keep:
            os.remove(f)
    for d in glob.glob(os.path.join(root, "class_*")):
        if os.path.isdir(d) and not os.listdir(d):
            os.rmdir(d)
    for c in range(classes):
        os.makedirs(os.path.join(root, f"class_{c:03d}"), exist_ok=True)
    if verbose:
        print(f"[make_dataset] writing {n} JPEGs (quality 90) in {classes} classes to {root} "
              f"from {len(photos)} photos, {processes} processes, seed {seed}", flush=True)
    t0 = time.perf_counter()
    jobs = [(root, seed, i, classes) for i in range(n)]
    sizes = []
    # Decode the photos once, in parallel; fork()ed workers inherit them.
    try:
        ctx = multiprocessing.get_context("fork")
    except ValueError:
        ctx = multiprocessing.get_context()
    if ctx.get_start_method() == "fork":
        with ctx.Pool(processes) as pool:
            _set_sources(pool.map(_load_source, photos, chunksize=1))
    if verbose:
        print(f"[make_dataset]   photos decoded and downscaled in {time.perf_counter() - t0:.1f} s", flush=True)
    with ctx.Pool(processes, initializer=_init_worker, initargs=(photos,)) as pool:
        for k, s in enumerate(pool.imap(_make_one, jobs, chunksize=64)):
            sizes.append(s)
            if verbose and (k + 1) % 2000 == 0:
                print(f"[make_dataset]   {k + 1}/{n} images, {time.perf_counter() - t0:.1f} s", flush=True)
    global _SOURCES
    _SOURCES = None
    dt = time.perf_counter() - t0
    sizes = np.array(sizes)
    with open(marker, "w") as f:
        json.dump(want, f)
    if verbose:
        mb = sum(os.path.getsize(p) for p in keep) / 2**20
        print(f"[make_dataset] done in {dt:.1f} s ({n / dt:.0f} img/s): mean size "
              f"{sizes[:, 0].mean():.0f} x {sizes[:, 1].mean():.0f} (w x h), {mb:.0f} MiB on disk", flush=True)
    return root


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("root", nargs="?", default="bench/data/imagenet-like", help="output ImageFolder root")
    p.add_argument("--num-images", type=int, default=10000)
    p.add_argument("--num-classes", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--processes", type=int, default=2, help="worker processes (default 2)")
    a = p.parse_args(argv)
    make_image_folder(a.root, a.num_images, a.num_classes, a.seed, processes=a.processes)


if __name__ == "__main__":
    sys.exit(main())
