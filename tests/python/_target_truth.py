"""The truth that targets must match: scenes of coloured rectangles (one
pure colour per object, bench/scenes.py) over real photos squeezed into
[64, 191]. After any crop, flip or shift, each kept box must enclose
exactly its colour's pixels, and a mask must give every pixel the label of
the colour it shows."""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
import scenes  # noqa: E402

from ffcv_go.detection import Ragged  # noqa: E402

MIN_SIZE, MIN_AREA = 3.0, 9.0


def colour_label(img):
    """Per pixel: the label of the object colour it shows (k + 1), 0 for
    background, -1 for a blend of both (a resampled edge)."""
    img = img.astype(np.int16)
    out = np.full(img.shape[:2], -1, np.int16)
    bg = ((img >= scenes.BG_LO - 2) & (img <= scenes.BG_HI + 2)).all(axis=2)
    out[bg] = 0
    for k, c in enumerate(scenes.COLOURS):
        out[(np.abs(img - c) <= 24).all(axis=2)] = k + 1
    return out


def check_sample(img, boxes, labels, mask, tol=2.0):
    """Problems of one output sample against the truth its pixels show ([] if none)."""
    problems = []
    lab = colour_label(img)
    for b, k in zip(boxes, labels):
        ys, xs = np.nonzero(lab == k)
        if len(xs) == 0:
            problems.append(f"box {b} of label {k}: none of its colour's pixels are visible")
            continue
        seen = np.array([xs.min(), ys.min(), xs.max() + 1, ys.max() + 1], np.float64)
        if np.abs(seen - b).max() > tol:
            problems.append(f"box {b} of label {k}: its colour's pixels span {seen}")
    kept = set(int(k) for k in labels)
    for k in range(1, len(scenes.COLOURS) + 1):
        ys, xs = np.nonzero(lab == k)
        if k in kept or not len(xs):
            continue
        w, h = np.ptp(xs) + 1, np.ptp(ys) + 1
        if min(w, h) >= MIN_SIZE + 2 * tol and (w - 2 * tol) * (h - 2 * tol) >= MIN_AREA:
            problems.append(f"label {k}: {w}x{h} pixels visible, but its box was dropped")
    if mask is not None:
        # Resampling blends a pixel or two either side of an edge (more where
        # the crop is upscaled): only pixels whose neighbourhood shows one
        # class are sure. Next to the border an edge just outside the crop
        # may blend into a colour that passes for background: not sure.
        sure = lab >= 0
        pad = np.pad(lab, 2, constant_values=-2)
        for dy in range(5):
            for dx in range(5):
                sure &= pad[dy:dy + lab.shape[0], dx:dx + lab.shape[1]] == lab
        bad = sure & (mask.astype(np.int16) != lab)
        if bad.any():
            problems.append(f"mask differs from the pixels' colours at {int(bad.sum())} of {int(sure.sum())} pixels")
    return problems


def check_loader(loader):
    problems, seen = [], 0
    for img, boxes, labels, mask in loader:
        assert isinstance(boxes, Ragged) and bool((boxes.counts == labels.counts).all())
        for i in range(len(img)):
            n = int(boxes.counts[i])
            p = check_sample(img[i].numpy(), boxes.data[i, :n].numpy(), labels.data[i, :n].numpy(),
                             None if mask is None else mask[i].numpy())
            problems += [f"sample {int(loader._last_ids[i]) if hasattr(loader, '_last_ids') else i}: {x}" for x in p]
            seen += n
    return problems, seen


def inside(xy, w, h):
    """Pixels whose centres lie inside polygon xy (even-odd): the reference
    rasterization of polygon targets."""
    px, py = np.meshgrid(np.arange(w) + 0.5, np.arange(h) + 0.5)
    out = np.zeros((h, w), bool)
    x, y = np.asarray(xy, np.float64).T
    for i in range(len(x)):
        j = (i + 1) % len(x)
        crosses = (y[i] <= py) != (y[j] <= py)
        with np.errstate(divide="ignore", invalid="ignore"):
            xc = x[i] + (py - y[i]) * (x[j] - x[i]) / (y[j] - y[i])
        out ^= crosses & (px < xc)
    return out
