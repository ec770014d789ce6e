#!/usr/bin/env python3
"""Writes the OpenCV INTER_LINEAR golden files used by golden_test.go,
from the sources gen_golden.py stored (<name>.src, described in
golden.json). Run in a venv with opencv-python-headless and numpy:

    python gen_linear.py
"""
import json
import os

import cv2
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

# (case name, source, dst width, dst height)
CASES = [
    ("lin_rand3_up", "rand3", 160, 100),  # both axes up: the edge rows
    ("lin_rand3_down", "rand3", 40, 25),
    ("lin_rand3_half", "rand3", 48, 30),  # 97 is odd: not the 2x path
    ("lin_grad3_int2", "grad3", 48, 32),  # exactly half: OpenCV's INTER_AREA path
    ("lin_rand1_mixed", "rand1", 150, 20),  # x up, y down; one channel (Go path)
    ("lin_small3_mixed", "small3", 9, 50),
    ("lin_rand4_up", "rand4", 47, 31),  # 4 channels
    ("lin_photo3_up", "photo3", 211, 127),
]


def main():
    with open(os.path.join(HERE, "golden.json")) as f:
        sources = json.load(f)["sources"]
    meta = {"opencv": cv2.__version__, "cases": []}
    for name, s, dw, dh in CASES:
        d = sources[s]
        img = np.fromfile(os.path.join(HERE, s + ".src"), np.uint8).reshape(d["h"], d["w"], d["c"])
        res = cv2.resize(img, (dw, dh), interpolation=cv2.INTER_LINEAR).reshape(dh, dw, d["c"])
        res.tofile(os.path.join(HERE, name + ".out"))
        meta["cases"].append({"name": name, "src": s, "dw": dw, "dh": dh})
    with open(os.path.join(HERE, "golden_linear.json"), "w") as f:
        json.dump(meta, f, indent=1)


if __name__ == "__main__":
    main()
