#!/usr/bin/env python3
"""Writes the OpenCV INTER_AREA golden files used by golden_test.go.

Run once, in a throwaway venv (pip install opencv-python-headless numpy):

    python gen_golden.py [outdir]

Every source image is stored once as raw interleaved uint8 (<name>.src),
every expected output as <case>.out, and golden.json describes the cases.
Colour images are kept in RGB order; INTER_AREA treats channels
independently, so the order does not matter.
"""
import json
import os
import sys

import cv2
import numpy as np

PHOTO = "/usr/share/backgrounds/mate/nature/Garden.jpg"


def sources():
    rng = np.random.default_rng(20240611)
    src = {
        "rand3": rng.integers(0, 256, (61, 97, 3), dtype=np.uint8),
        "rand1": rng.integers(0, 256, (61, 97, 1), dtype=np.uint8),
        "rand4": rng.integers(0, 256, (24, 30, 4), dtype=np.uint8),
        "small3": rng.integers(0, 256, (17, 23, 3), dtype=np.uint8),
        "small1": rng.integers(0, 256, (9, 13, 1), dtype=np.uint8),
    }
    y, x = np.mgrid[0:64, 0:96].astype(np.float64)
    grad = np.stack([x * 255 / 95, y * 255 / 63, (x + y) * 255 / 158], axis=-1)
    src["grad3"] = np.round(grad).astype(np.uint8)
    photo = cv2.imread(PHOTO, cv2.IMREAD_COLOR)
    if photo is None:
        sys.exit("cannot read " + PHOTO)
    src["photo3"] = np.ascontiguousarray(photo[700:761, 1200:1297, ::-1])
    return src


# (case name, source, dst width, dst height); the comment says which
# OpenCV code path the case exercises.
CASES = [
    ("rand3_half", "rand3", 48, 30),  # fractional (97 is odd)
    ("grad3_int2", "grad3", 48, 32),  # integer 2x2 fast path
    ("grad3_int3x4", "grad3", 32, 16),  # integer 3x4 fast path
    ("rand1_int1x2", "rand1", 97, 30),  # fractional on y only
    ("rand3_frac", "rand3", 40, 25),  # fractional area weights
    ("rand1_frac", "rand1", 33, 29),
    ("grad3_frac", "grad3", 37, 23),
    ("photo3_frac", "photo3", 50, 31),
    ("photo3_int", "photo3", 97, 61),  # identity
    ("rand4_frac", "rand4", 11, 7),  # 4 channels
    ("small3_up", "small3", 61, 40),  # upscale: linear, area coefficients
    ("small1_up", "small1", 40, 30),
    ("photo3_up", "photo3", 150, 100),
    ("rand3_mixed", "rand3", 40, 90),  # x down, y up
    ("small1_mixed", "small1", 40, 5),  # x up, y down
    ("photo3_mixed", "photo3", 130, 50),
    ("photo3_down", "photo3", 64, 60),
]


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    src = sources()
    meta = {"opencv": cv2.__version__, "sources": {}, "cases": []}
    for name, img in src.items():
        h, w, c = img.shape
        img.tofile(os.path.join(out, name + ".src"))
        meta["sources"][name] = {"w": w, "h": h, "c": c}
    for name, s, dw, dh in CASES:
        img = src[s]
        res = cv2.resize(img, (dw, dh), interpolation=cv2.INTER_AREA)
        res = res.reshape(dh, dw, img.shape[2])
        res.tofile(os.path.join(out, name + ".out"))
        meta["cases"].append({"name": name, "src": s, "dw": dw, "dh": dh})
    with open(os.path.join(out, "golden.json"), "w") as f:
        json.dump(meta, f, indent=1)


if __name__ == "__main__":
    main()
