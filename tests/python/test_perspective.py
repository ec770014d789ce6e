"""Targets under maps that are not axis-aligned (RandomPerspective, Rotate,
the policies' shears and rotations), against the painted pixels of scenes
over real photos; and RandomPerspective's pixels replayed from the draws
LabelRandomPerspective reports, with YOLO's matrix and OpenCV's bilinear
warp (cv2 where it is installed, else OpenCV's fixed-point arithmetic
(up to 4.10) in numpy), and against exact bilinear sampling."""
import math

import numpy as np
import pytest

from _target_truth import colour_label, scenes
from conftest import write
from ffcv_go import Loader
from ffcv_go.fields import IntField, MaskField, RaggedArrayField, RGBImageField
from ffcv_go.fields.decoders import CenterCropRGBImageDecoder, IntDecoder, MaskDecoder, RaggedDecoder
from ffcv_go.transforms import AugmentOp, LabelRandomPerspective, RandomPerspective, Rotate

import make_dataset  # noqa: E402  (bench/, on the path through _target_truth)

N = 24
TOL = 2.0


def keypoints(boxes):
    """Per object: its centre and a point 2 pixels inside its top-left corner, visible (2)."""
    x0, y0, x1, y1 = boxes.T
    inset = np.minimum(2.0, np.minimum(x1 - x0, y1 - y0) / 4)
    return np.stack([np.stack([(x0 + x1) / 2, (y0 + y1) / 2, np.full_like(x0, 2)], 1),
                     np.stack([x0 + inset, y0 + inset, np.full_like(x0, 2)], 1)], 1).astype(np.float32)


@pytest.fixture(scope="module")
def scene_file(tmp_path_factory):
    ds = scenes.SceneDataset(N, make_dataset.find_photos()[:2], height=120, width=140)
    rows = []
    for i in range(N):
        img, b, lab, m = ds[i]
        rows.append((img, b, lab, keypoints(b), m, i))
    fields = {"image": RGBImageField(write_mode="raw"),
              "boxes": RaggedArrayField(np.float32, (4,), follows="image", coords="xyxy"),
              "labels": RaggedArrayField(np.int64, (), follows="boxes"),
              "kp": RaggedArrayField(np.float32, (2, 3), follows="image", coords="xy"),
              "mask": MaskField("image"),
              "idx": IntField()}
    return write(tmp_path_factory.mktemp("persp") / "scenes.beton", fields, rows)


def problems_of(img, boxes, labels, kp, mask):
    """What the painted pixels say is wrong with one sample's targets."""
    problems = []
    lab = colour_label(img)
    h, w = lab.shape
    for b, k, pts in zip(boxes, labels, kp):
        ys, xs = np.nonzero(lab == k)
        if not len(xs):
            problems.append(f"box {b} of label {k}: none of its pixels are visible")
            continue
        seen = np.array([xs.min(), ys.min(), xs.max() + 1, ys.max() + 1], np.float64)
        # The box encloses its object's pixels; one that touches no edge of
        # the output is their bounds (the rotated rectangle's corners).
        if (seen[:2] < b[:2] - TOL).any() or (seen[2:] > b[2:] + TOL).any():
            problems.append(f"box {b} of label {k} leaves out its pixels, which span {seen}")
        inner = b[0] > TOL and b[1] > TOL and b[2] < w - TOL and b[3] < h - TOL
        if inner and np.abs(seen - b).max() > TOL:
            problems.append(f"box {b} of label {k} inside the image is not its pixels' bounds {seen}")
        for x, y, v in pts:
            out = not (0 <= x < w and 0 <= y < h)
            if out and v != 0:
                problems.append(f"point ({x}, {y}) of label {k} is outside a {w}x{h} image, visibility {v}")
            if v > 0:
                near = lab[max(int(y) - 2, 0):int(y) + 3, max(int(x) - 2, 0):int(x) + 3]
                if not (near == k).any():
                    problems.append(f"point ({x:.1f}, {y:.1f}) of label {k} is not on its object")
    # Masks: pixels whose 5x5 neighbourhood shows one class carry it.
    sure = lab >= 0
    pad = np.pad(lab, 2, constant_values=-2)
    for dy in range(5):
        for dx in range(5):
            sure &= pad[dy:dy + h, dx:dx + w] == lab
    bad = sure & (mask.astype(np.int16) != lab)
    if bad.sum() > 0:
        problems.append(f"mask differs from the pixels' colours at {int(bad.sum())} of {int(sure.sum())} pixels")
    return problems


CASES = {
    "perspective": lambda: RandomPerspective(degrees=30, translate=0.1, scale=0.3, shear=8, seed=5),
    "perspective_border": lambda: RandomPerspective(degrees=15, translate=0.1, scale=0.2, perspective=0.0008,
                                                    border=(-10, 12), seed=6),
    "rotate": lambda: Rotate(1.0, angle=0.6, interpolation="bilinear", seed=7),
    "shear": lambda: AugmentOp("ShearY", 0.25, interpolation="bilinear"),
    "policy_rotate": lambda: AugmentOp("Rotate", -35, interpolation="bilinear", fill=[100, 100, 100]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_targets_follow_warps(scene_file, case):
    image = [CenterCropRGBImageDecoder((112, 112), ratio=0.95), CASES[case]()]
    loader = Loader(str(scene_file), batch_size=8, num_workers=1, seed=3, pipelines={
        "image": image,
        "boxes": [RaggedDecoder(min_size=3, min_area=9)],
        "labels": [RaggedDecoder()],
        "kp": [RaggedDecoder(boxes="boxes")],
        "mask": [MaskDecoder(fill=0)],
        "idx": None})
    problems, kept, dropped = [], 0, 0
    for img, boxes, labels, kp, mask in loader:
        for i in range(len(img)):
            n = int(boxes.counts[i])
            assert int(kp.counts[i]) == n
            problems += problems_of(img[i].numpy(), boxes.data[i, :n].numpy(), labels.data[i, :n].numpy(),
                                    kp.data[i, :n].numpy(), mask[i].numpy())
            kept += n
            dropped += int((kp.data[i, :n, :, 2] == 0).sum())
    assert not problems, problems[:5]
    assert kept > N  # the check saw boxes
    if case.startswith("perspective"):
        assert dropped > 0  # and points the map sent out of the image


def yolo_matrix(d, w, h, ow, oh):
    """YOLO's M = T @ S @ R @ P @ C (float32 numpy) from its 8 draws."""
    C, P, R, S, T = (np.eye(3, dtype=np.float32) for _ in range(5))
    C[0, 2], C[1, 2] = -w / 2, -h / 2
    P[2, 0], P[2, 1] = d[0], d[1]
    a, s = math.radians(float(d[2])), float(d[3])
    R[:2] = [[s * math.cos(a), s * math.sin(a), 0], [-s * math.sin(a), s * math.cos(a), 0]]
    S[0, 1], S[1, 0] = math.tan(math.radians(float(d[4]))), math.tan(math.radians(float(d[5])))
    T[0, 2], T[1, 2] = float(d[6]) * ow, float(d[7]) * oh
    return T @ S @ R @ P @ C


def cv_warp(src, m, ow, oh, fill, perspective):
    """cv2.warpAffine / cv2.warpPerspective, INTER_LINEAR, constant border:
    the inverse map's coordinates in 1/32 pixel, 15-bit bilinear weights."""
    m = m.astype(np.float64)
    y, x = np.mgrid[0:oh, 0:ow].astype(np.float64)
    if perspective:
        inv = np.linalg.inv(m)
        z = inv[2, 0] * x + inv[2, 1] * y + inv[2, 2]
        z = np.where(z != 0, 32 / np.where(z != 0, z, 1), 0)
        X = np.rint((inv[0, 0] * x + inv[0, 1] * y + inv[0, 2]) * z).astype(np.int64)
        Y = np.rint((inv[1, 0] * x + inv[1, 1] * y + inv[1, 2]) * z).astype(np.int64)
    else:
        a = np.linalg.inv(np.vstack([m[:2], [0, 0, 1]]))[:2]
        X = (np.rint((a[0, 1] * y + a[0, 2]) * 1024) + 16 + np.rint(a[0, 0] * x * 1024)).astype(np.int64) >> 5
        Y = (np.rint((a[1, 1] * y + a[1, 2]) * 1024) + 16 + np.rint(a[1, 0] * x * 1024)).astype(np.int64) >> 5
    sx, sy, fx, fy = X >> 5, Y >> 5, X & 31, Y & 31
    h, w = src.shape[:2]
    padded = np.full((h + 2, w + 2, src.shape[2]), fill, np.int64)
    padded[1:-1, 1:-1] = src

    def at(xx, yy):
        return padded[np.clip(yy, -1, h) + 1, np.clip(xx, -1, w) + 1]

    wts = [((32 - fy) * (32 - fx) * 32), ((32 - fy) * fx * 32), (fy * (32 - fx) * 32), (fy * fx * 32)]
    v = (at(sx, sy) * wts[0][..., None] + at(sx + 1, sy) * wts[1][..., None]
         + at(sx, sy + 1) * wts[2][..., None] + at(sx + 1, sy + 1) * wts[3][..., None])
    return np.clip((v + (1 << 14)) >> 15, 0, 255).astype(np.uint8)


def float_warp(src, m, ow, oh, fill):
    """Bilinear sampling at the exact inverse-mapped pixel centres, fill
    outside (float64)."""
    inv = np.linalg.inv(m.astype(np.float64))
    y, x = np.mgrid[0:oh, 0:ow].astype(np.float64)
    z = inv[2, 0] * x + inv[2, 1] * y + inv[2, 2]
    sx = (inv[0, 0] * x + inv[0, 1] * y + inv[0, 2]) / z
    sy = (inv[1, 0] * x + inv[1, 1] * y + inv[1, 2]) / z
    h, w = src.shape[:2]
    padded = np.empty((h + 2, w + 2, src.shape[2]))
    padded[:] = fill
    padded[1:-1, 1:-1] = src
    x0, y0 = np.floor(sx), np.floor(sy)
    ax, ay = (sx - x0)[..., None], (sy - y0)[..., None]

    def at(xx, yy):
        return padded[np.clip(yy, -1, h).astype(int) + 1, np.clip(xx, -1, w).astype(int) + 1]

    return ((1 - ay) * ((1 - ax) * at(x0, y0) + ax * at(x0 + 1, y0))
            + ay * ((1 - ax) * at(x0, y0 + 1) + ax * at(x0 + 1, y0 + 1)))


@pytest.mark.parametrize("args", [dict(degrees=20, translate=0.1, scale=0.4, shear=6),
                                  dict(degrees=10, translate=0.05, scale=0.2, shear=3, perspective=0.001,
                                       border=(-8, 6), fill=(10, 20, 30))])
def test_replay(scene_file, args):
    size = 96
    loader = Loader(str(scene_file), batch_size=8, num_workers=1, seed=4, pipelines={
        "image": [CenterCropRGBImageDecoder((size, size), ratio=1.0), RandomPerspective(**args, seed=11)],
        "plain": [CenterCropRGBImageDecoder((size, size), ratio=1.0)],
        "idx": [IntDecoder(), LabelRandomPerspective(**args, seed=11)],
        "boxes": None, "labels": None, "kp": None, "mask": None}, custom_field_mapper={"plain": "image"})
    try:
        import cv2
    except ImportError:
        cv2 = None
    # OpenCV up to 4.10 warps with INTER_BITS fixed point, as ours does.
    fixed_point = cv2 is None or tuple(int(v) for v in cv2.__version__.split(".")[:2]) < (4, 11)
    fill = np.array(args.get("fill", (114, 114, 114)))
    bh, bw = args.get("border", (0, 0))
    oh, ow = size + 2 * bh, size + 2 * bw
    persp = bool(args.get("perspective"))
    moved = 0
    for img, idx, plain in loader:
        for i in range(len(img)):
            d = idx[i, 1:].numpy()
            m = yolo_matrix(d, size, size, ow, oh)
            src = plain[i].numpy()
            if cv2 is not None:
                warp = cv2.warpPerspective if persp else cv2.warpAffine
                want = warp(src, m if persp else m[:2], (ow, oh), borderValue=tuple(int(v) for v in fill))
            else:
                want = cv_warp(src, m, ow, oh, fill, persp)
            got = img[i].numpy()
            assert got.shape == (oh, ow, 3)
            diff = np.abs(got.astype(int) - want)
            if fixed_point:
                # The matrix product's float32 rounding (BLAS here, in order
                # in Go) may move a coordinate across a 1/32-pixel step.
                assert diff.max() <= 1 and (diff > 0).mean() < 0.002, (diff.max(), (diff > 0).mean())
            else:
                # OpenCV 4.11 and later interpolate in float32 at unrounded
                # coordinates: up to a 1/64 pixel's worth of an edge apart.
                assert diff.mean() < 0.3 and np.percentile(diff, 99.9) <= 4, (diff.mean(), diff.max())
            # Exact bilinear sampling (float64) differs by the 1/32-pixel
            # rounding of the coordinates: a level or two on average.
            exact = np.abs(got.astype(float) - float_warp(src, m, ow, oh, fill))
            assert exact.mean() < 1.0 and np.percentile(exact, 99) <= 8, (exact.mean(), exact.max())
            moved += int(got.shape != src.shape or not np.array_equal(got, src))
    assert moved > 0


def test_augmix_is_refused(scene_file):
    """AugMix blends chains of differently moved copies: no map follows it."""
    from ffcv_go.transforms import AugMix
    with pytest.raises(ValueError, match="cannot follow the image operation AugMix"):
        Loader(str(scene_file), batch_size=8, num_workers=1, pipelines={
            "image": [CenterCropRGBImageDecoder((64, 64), ratio=1.0), AugMix()],
            "boxes": [RaggedDecoder()], "labels": [RaggedDecoder()], "kp": None, "mask": None, "idx": None})
