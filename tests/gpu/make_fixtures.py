#!/usr/bin/env python3
"""Writes tests/gpu/fixtures/normalize_fp16_ffcv.npz from FFCV 1.0 itself.

The GPU machine has no FFCV, so what FFCV's NormalizeImage makes in float16 is
computed here, once, by FFCV's own code on the CPU (its lookup table, applied
by its CPU kernel run as plain Python), and stored beside the tests:

    .venv/bin/python tests/gpu/make_fixtures.py      # needs `import ffcv` (make ffcv)

Contents (HWC layout, as stored in a .beton):
    images              uint8 (N, 16, 16, 3); images 0 and 1 hold every value
                        0..255 in every channel, 2 and 3 are random
    <set>_mean, _std    float64 (3,), as passed to NormalizeImage
    <set>_table         float16 (256, 3), FFCV's lookup table
    <set>_expected      float16 (N, 16, 16, 3), FFCV's output for `images`
    sets                the names of the sets: "imagenet" (ImageNet's mean and
                        std times 255) and "ffcv_test" (means 0, 1, 2 and stds
                        1, 10, 20, the values of FFCV's own GPU test)
    ffcv_version        the FFCV that computed it
"""
import sys
from pathlib import Path

import numpy as np

OUT = Path(__file__).parent / "fixtures" / "normalize_fp16_ffcv.npz"

SETS = {
    "imagenet": (np.array([0.485, 0.456, 0.406]) * 255, np.array([0.229, 0.224, 0.225]) * 255),
    "ffcv_test": (np.array([0, 1, 2], dtype=np.float64), np.array([1, 10, 20], dtype=np.float64)),
}


def input_images():
    ramp = np.arange(256, dtype=np.uint8).reshape(16, 16)
    every = np.repeat(ramp[:, :, None], 3, axis=2)
    # 7 is odd, so p -> 7p + 85c (mod 256) visits every value in each channel.
    p = np.arange(256).reshape(16, 16)
    shifted = np.stack([(7 * p + 85 * c) % 256 for c in range(3)], axis=2).astype(np.uint8)
    rnd = np.random.default_rng(28).integers(0, 256, size=(2, 16, 16, 3), dtype=np.uint8)
    return np.concatenate([every[None], shifted[None], rnd])


def ffcv_normalize(images, mean, std):
    """(FFCV's float16 table, FFCV's CPU kernel applied to images)."""
    from ffcv.pipeline.compiler import Compiler
    from ffcv.transforms import NormalizeImage
    op = NormalizeImage(mean, std, np.float16)
    table = np.array(op.lookup_table).view(np.float16)
    Compiler.set_enabled(False)  # the kernel runs as Python: its loops over range()
    kernel = op.generate_code_cpu()
    result = np.zeros(images.shape, dtype=op.dtype)  # int16: FFCV's storage for float16
    out = kernel(images, result, np.arange(len(images)))
    return table, np.asarray(out).view(np.float16)


def main():
    from importlib.metadata import version
    ffcv_version = version("ffcv")  # ffcv.__version__ says 0.0.3rc1 in 1.0.2
    images = input_images()
    data = {"images": images, "sets": np.array(list(SETS)), "ffcv_version": np.array(ffcv_version)}
    for name, (mean, std) in SETS.items():
        table, expected = ffcv_normalize(images, mean, std)
        # The kernel is a lookup: every output is its channel's table entry.
        assert np.array_equal(expected, table[images, np.arange(3)]), name
        data.update({f"{name}_mean": mean, f"{name}_std": std,
                     f"{name}_table": table, f"{name}_expected": expected})
    OUT.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(OUT, **data)
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes) with FFCV {ffcv_version}")


if __name__ == "__main__":
    sys.exit(main())
