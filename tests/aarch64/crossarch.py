"""Writes and loads the same photos on x86-64 and on arm64 (under emulation),
with an installed wheel, and compares what each machine made.

    crossarch.py run FOLDER OUT [--full]   # on each machine: OUT/<config>.beton, batches
    crossarch.py compare X86_OUT ARM_OUT   # on the host: the bytes must agree

`run` writes FOLDER (an ImageFolder of JPEG photos) into a JPEG .beton per
writer configuration, then loads each file's fixed-seed epochs through
RandomResizedCrop + RandomHorizontalFlip + NormalizeImage, saving every batch
(images and labels) under OUT. `compare` wants the .beton files byte for
byte equal and every batch equal pixel for pixel; where they are not, it
says which samples differ and by how much.

Only numpy, torch and the installed ffcv_go are needed (Debian's python3
with python3-torch 1.13 on both machines).
"""
import argparse
import hashlib
import json
import os
import platform
import sys
import time

import numpy as np

# Writer configurations: name -> RGBImageField arguments. `quick` runs in
# `make test`; `full` adds the others (make test-aarch64).
WRITERS = {
    # Photos over 256 px are resized (area) and re-encoded from pixels, the
    # others transcoded in the DCT domain; restart markers are on.
    "jpg256": dict(write_mode="jpg", max_resolution=256, jpeg_quality=90),
    # Every image re-encoded from decoded pixels, no resize (full size).
    "jpgpix": dict(write_mode="jpg", jpeg_quality=85, jpeg_transcode=False),
    # The source JPEGs kept as they are where possible, no restart markers.
    "keep": dict(write_mode="jpg", keep_source_jpeg=True, restart_markers=False),
    # Raw pixels (resized): the decoders' output stored as is.
    "raw192": dict(write_mode="raw", max_resolution=192),
}
QUICK = ["jpg256"]
MEAN = np.array([0.485, 0.456, 0.406]) * 255
STD = np.array([0.229, 0.224, 0.225]) * 255


def sha(b):
    return hashlib.sha256(b).hexdigest()


def run(folder, out, full, epochs, simd):
    import torch
    import ffcv_go
    from ffcv_go import DatasetWriter, Loader
    from ffcv_go.fields import IntField, RGBImageField
    from ffcv_go.fields.basics import IntDecoder
    from ffcv_go.fields.rgb_image import RandomResizedCropRGBImageDecoder
    from ffcv_go.loader import OrderOption
    from ffcv_go.transforms import NormalizeImage, RandomHorizontalFlip, ToTensor, ToTorchImage

    os.makedirs(out, exist_ok=True)
    summary = {"machine": platform.machine(), "python": platform.python_version(), "torch": torch.__version__,
               "numpy": np.__version__, "ffcv_go": ffcv_go.__file__, "simd": simd, "writers": {}}
    for name in (WRITERS if full else QUICK):
        path = os.path.join(out, f"{name}.beton")
        t0 = time.perf_counter()
        fields = {"image": RGBImageField(**WRITERS[name]), "label": IntField()}
        DatasetWriter(path, fields, num_workers=2, progress=False).from_image_folder(folder)
        t_write = time.perf_counter() - t0
        with open(path, "rb") as f:
            digest = sha(f.read())
        batches, t0 = [], time.perf_counter()
        loader = Loader(path, batch_size=8, num_workers=2, order=OrderOption.RANDOM, seed=1234, drop_last=False,
                        pipelines={"image": [RandomResizedCropRGBImageDecoder((112, 112)), RandomHorizontalFlip(),
                                             NormalizeImage(MEAN, STD, np.float32), ToTensor(), ToTorchImage()],
                                   "label": [IntDecoder(), ToTensor()]})
        for epoch in range(epochs):  # each pass over the loader is the next epoch
            images, labels = [], []
            for x, y in loader:
                images.append(np.ascontiguousarray(x.numpy()))
                labels.append(y.numpy().reshape(-1).copy())
            images, labels = np.concatenate(images), np.concatenate(labels)
            np.save(os.path.join(out, f"{name}-e{epoch}-images.npy"), images)
            np.save(os.path.join(out, f"{name}-e{epoch}-labels.npy"), labels)
            batches.append({"images": sha(images.tobytes()), "labels": sha(labels.tobytes()),
                            "shape": list(images.shape)})
        summary["writers"][name] = {"beton": digest, "epochs": batches, "write_s": round(t_write, 2),
                                    "load_s": round(time.perf_counter() - t0, 2)}
        print(f"{platform.machine()} {name}: wrote in {t_write:.1f}s, loaded {epochs} epoch(s) in "
              f"{time.perf_counter() - t0:.1f}s", flush=True)
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)


def compare(a_dir, b_dir):
    with open(os.path.join(a_dir, "summary.json")) as f:
        a = json.load(f)
    with open(os.path.join(b_dir, "summary.json")) as f:
        b = json.load(f)
    print(f"{a['machine']} (torch {a['torch']}, numpy {a['numpy']}) against "
          f"{b['machine']} (torch {b['torch']}, numpy {b['numpy']})")
    bad = 0
    for name, wa in a["writers"].items():
        wb = b["writers"].get(name)
        if wb is None:
            print(f"  {name}: missing on {b['machine']}")
            bad += 1
            continue
        same_file = wa["beton"] == wb["beton"]
        if not same_file:
            bad += 1
            fa, fb = (open(os.path.join(d, f"{name}.beton"), "rb").read() for d in (a_dir, b_dir))
            first = next((i for i in range(min(len(fa), len(fb))) if fa[i] != fb[i]), min(len(fa), len(fb)))
            print(f"  {name}.beton DIFFERS: {len(fa)} vs {len(fb)} bytes, first difference at byte {first}")
        for epoch, (ea, eb) in enumerate(zip(wa["epochs"], wb["epochs"])):
            if ea == eb:
                continue
            bad += 1
            ia = np.load(os.path.join(a_dir, f"{name}-e{epoch}-images.npy"))
            ib = np.load(os.path.join(b_dir, f"{name}-e{epoch}-images.npy"))
            la = np.load(os.path.join(a_dir, f"{name}-e{epoch}-labels.npy"))
            lb = np.load(os.path.join(b_dir, f"{name}-e{epoch}-labels.npy"))
            if ia.shape != ib.shape or not np.array_equal(la, lb):
                print(f"  {name} epoch {epoch}: shapes {ia.shape} vs {ib.shape}, labels equal {np.array_equal(la, lb)}")
                continue
            diff = np.abs(ia.astype(np.float64) - ib.astype(np.float64))
            per = diff.reshape(len(diff), -1).max(axis=1)
            levels = diff.max() * STD.max()  # back in 8-bit levels, before NormalizeImage
            print(f"  {name} epoch {epoch}: {int((per > 0).sum())} of {len(per)} samples differ, "
                  f"{int((diff > 0).sum())} values, largest {diff.max():.4g} (up to {levels:.1f} 8-bit levels); "
                  f"samples {np.flatnonzero(per).tolist()[:10]}")
        n = len(wa["epochs"])
        print(f"  {name}: .beton {'identical' if same_file else 'DIFFERENT'} ({wa['beton'][:12]}), "
              f"{sum(ea == eb for ea, eb in zip(wa['epochs'], wb['epochs']))} of {n} epoch(s) equal pixel for pixel; "
              f"{b['machine']} wrote in {wb['write_s']}s, loaded in {wb['load_s']}s")
    return bad


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("folder")
    r.add_argument("out")
    r.add_argument("--full", action="store_true", help="every writer configuration, not just the quick one")
    r.add_argument("--epochs", type=int, default=1)
    c = sub.add_parser("compare")
    c.add_argument("a")
    c.add_argument("b")
    args = p.parse_args()
    if args.cmd == "run":
        run(args.folder, args.out, args.full, args.epochs, os.environ.get("FFCV_GO_SIMD", "default"))
        return 0
    bad = compare(args.a, args.b)
    print("cross-arch: " + ("all equal" if not bad else f"{bad} difference(s)"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
