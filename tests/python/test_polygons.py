"""Segments (polygon fields) against painted truth: objects of pure colours
painted by their polygons over real photos, written as a YOLO segment
dataset. Polygons follow Mosaic and RandomPerspective onto their objects'
pixels, boxes from polygons hug rotated objects, and the masks at 1/4 are
the followed polygons rasterized."""
import numpy as np
import pytest

from _target_truth import colour_label, inside, scenes
from ffcv_go import DatasetWriter, Loader
from ffcv_go.detection import YoloDataset
from ffcv_go.fields.decoders import (CenterCropRGBImageDecoder, MosaicRGBImageDecoder, PolygonMaskDecoder,
                                     RaggedDecoder)
from ffcv_go.pipeline import PipelineSpec
from ffcv_go.transforms import CopyPaste, RandomPerspective

import make_dataset  # noqa: E402  (bench/, on the path through _target_truth)

N, S, K, ROWS = 12, 96, 200, 40


def shape(rng, cx, cy, r):
    """A convex polygon around (cx, cy): a diamond, a triangle or a hexagon, turned."""
    n = int(rng.choice([3, 4, 6]))
    a0 = rng.uniform(0, np.pi)
    a = a0 + 2 * np.pi * np.arange(n) / n
    return np.stack([cx + r * np.cos(a), cy + r * np.sin(a)], 1)


@pytest.fixture(scope="module")
def seg_file(tmp_path_factory):
    from PIL import Image
    root = tmp_path_factory.mktemp("polygons")
    (root / "images" / "train").mkdir(parents=True)
    (root / "labels" / "train").mkdir(parents=True)
    bgs = scenes.backgrounds(make_dataset.find_photos()[:3])
    for i in range(N):
        rng = np.random.default_rng(50 + i)
        h, w = int(rng.integers(100, 160)), int(rng.integers(100, 160))
        bg = bgs[i % len(bgs)]
        img = bg[(np.arange(h) * bg.shape[0] // h)[:, None], (np.arange(w) * bg.shape[1] // w)[None, :]].copy()
        lines = []
        for k, cell in enumerate(rng.permutation(4)[:3]):  # a 2x2 grid keeps objects apart
            cy, cx = divmod(int(cell), 2)
            r = min(w, h) / 4 * rng.uniform(0.6, 0.9)
            poly = shape(rng, (cx + 0.5) * w / 2, (cy + 0.5) * h / 2, r)
            img[inside(poly, w, h)] = scenes.COLOURS[k]
            lines.append(f"{k} " + " ".join(f"{float(x) / w!r} {float(y) / h!r}" for x, y in poly))
        Image.fromarray(img).save(root / "images" / "train" / f"{i}.png")
        (root / "labels" / "train" / f"{i}.txt").write_text("\n".join(lines) + "\n")
    (root / "data.yaml").write_text("path: .\ntrain: images/train\nval: images/train\n"
                                    "names:\n  0: a\n  1: b\n  2: c\n")
    ds = YoloDataset(root / "data.yaml", task="segment", segment_points=K)
    out = root / "seg.beton"
    DatasetWriter(str(out), ds.fields(write_mode="raw"), num_workers=2, progress=False).from_indexed_dataset(ds)
    return str(out)


def near(m, r=2):
    """Pixels within r px (a (2r+1)² square) of a pixel of m."""
    h, w = m.shape
    m = np.pad(m, r)
    return np.any([m[dy:dy + h, dx:dx + w] for dy in range(2 * r + 1) for dx in range(2 * r + 1)], axis=0)


def rows(r, i):
    return r.data[i, :int(r.counts[i])].numpy()


def test_polygons_follow_mosaic_copy_paste_and_perspective(seg_file):
    loader = Loader(seg_file, batch_size=6, num_workers=1, seed=3, pipelines={
        "image": [MosaicRGBImageDecoder(imgsz=S, seed=1), CopyPaste(p=0.5),
                  RandomPerspective(degrees=25, translate=0.1, scale=0.3, shear=5, border=(-S // 2, -S // 2), seed=2)],
        "boxes": [RaggedDecoder(max_rows=ROWS, polygons="polygons", min_size=0, min_area=0,
                                wh_thr=2, area_thr=0.01, ar_thr=100)],
        "labels": [RaggedDecoder(max_rows=ROWS)],
        "polygons": [RaggedDecoder(max_rows=ROWS)],
        "masks": PipelineSpec("polygons", decoder=PolygonMaskDecoder(ratio=4))})
    problems, checked, far, kept, shrunk = [], 0, 0, 0, [0, 0]
    for epoch in range(2):
        for img, boxes, labels, polys, masks in loader:
            assert tuple(masks.shape[1:]) == (S // 4, S // 4) and masks.dtype.itemsize == 1
            for i in range(len(img)):
                lab = colour_label(img[i].numpy())
                b, c, p = rows(boxes, i), rows(labels, i), rows(polys, i)
                assert len(b) == len(c) == len(p)
                kept += len(b)
                for box, k, pts in zip(b, c, p):
                    # The box is its polygon's bounds (segment2box).
                    if np.abs(np.r_[pts.min(0), pts.max(0)] - box).max() > 1e-3:
                        problems.append(f"box {box} is not the bounds of its polygon")
                    # Within 1 px of its object's pixels (its colour, or its edge blended with the
                    # background by the resizes and the warp), 2 px at an acute tip, whose pixels
                    # the resizes blend away; or clamped, as YOLO clips segments: to the mosaic's
                    # canvas, whose edge borders the fill (114) after the warp, or to the box.
                    obj = (lab == k + 1) | (lab == -1)
                    fill = near((np.abs(img[i].numpy().astype(int) - 114) <= 2).all(2), 3)
                    ok1, ok2 = near(obj, 1) | fill, near(obj, 2) | fill
                    for x, y in pts:
                        if min(abs(x - box[0]), abs(x - box[2]), abs(y - box[1]), abs(y - box[3])) < 1e-3 or \
                                not (1 <= x <= S - 1 and 1 <= y <= S - 1):
                            continue
                        checked += 1
                        far += not ok1[int(y), int(x)]
                        if not ok2[int(y), int(x)]:
                            problems.append(f"point ({x:.1f}, {y:.1f}) of class {k} is not on its object")
                # Masks at 1/4: the kept polygons rasterized, largest first, value = row + 1.
                want = np.zeros((S // 4, S // 4), np.uint8)
                fills = [inside(pts.astype(np.float64) / 4, S // 4, S // 4) for pts in p]
                for j in sorted(range(len(p)), key=lambda j: -fills[j].sum()):
                    want[fills[j]] = j + 1
                bad = int((masks[i].numpy() != want).sum())
                if bad > 2:
                    problems.append(f"mask differs from the rasterized polygons at {bad} pixels")
                # ... and agree with the polygons drawn at full size and shrunk (Ultralytics' way).
                for j, pts in enumerate(p):
                    full = inside(pts.astype(np.float64), S, S).reshape(S // 4, 4, S // 4, 4).mean((1, 3)) > 0.5
                    shrunk[0] += int((fills[j] != full).sum())
                    shrunk[1] += int(full.sum())
    assert not problems, problems[:5]
    assert kept > 2 * N and checked > 1000 and far < 0.01 * checked, (kept, checked, far)
    assert shrunk[0] < 0.1 * shrunk[1], shrunk  # they differ on edge pixels only


def test_boxes_from_polygons_are_tighter_under_rotation(seg_file):
    def load(polygons):
        loader = Loader(seg_file, batch_size=N, num_workers=1, seed=3, pipelines={
            "image": [CenterCropRGBImageDecoder((96, 96), ratio=1.0),
                      RandomPerspective(degrees=45, translate=0, scale=0, seed=4)],
            "boxes": [RaggedDecoder(polygons=polygons, min_size=0, min_area=0)],
            "labels": [RaggedDecoder()], "polygons": None})
        return next(iter(loader))

    img, poly_boxes, labels = load("polygons")
    _, corner_boxes, _ = load(None)
    tighter, total = 0.0, 0.0
    for i in range(N):
        pb, cb = rows(poly_boxes, i), rows(corner_boxes, i)
        assert len(pb) == len(cb)
        lab = colour_label(img[i].numpy())
        h, w = lab.shape
        for a, b, k in zip(pb, cb, rows(labels, i)):
            assert (a[:2] >= b[:2] - 1e-3).all() and (a[2:] <= b[2:] + 1e-3).all()
            area = lambda r: (r[2] - r[0]) * (r[3] - r[1])  # noqa: E731
            tighter += area(b) - area(a)
            total += area(b)
            ys, xs = np.nonzero(lab == k + 1)
            if len(xs) and a[0] > 2 and a[1] > 2 and a[2] < w - 2 and a[3] < h - 2:
                seen = np.array([xs.min(), ys.min(), xs.max() + 1, ys.max() + 1])
                assert np.abs(seen - a).max() <= 2.5, (a, seen)  # its pixels' bounds (tips blend away)
    assert tighter > 0.15 * total


def test_guide_snippet_runs(seg_file, monkeypatch, tmp_path):
    """docs/guides/yolo.md's Segments block, on the painted file, smaller."""
    import re
    from pathlib import Path
    guide = (Path(__file__).parents[2] / "docs/guides/yolo.md").read_text()
    section = guide[guide.index("## Segments"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    for old, new in {"imgsz=640": f"imgsz={S}", "border=(-320, -320)": f"border=({-S // 2}, {-S // 2})",
                     "num_workers=8": "num_workers=1", "batch_size=16": "batch_size=4"}.items():
        assert old in code
        code = code.replace(old, new)
    (tmp_path / "seg.beton").symlink_to(seg_file)
    monkeypatch.chdir(tmp_path)
    env = {}
    exec(compile(code, "yolo.md", "exec"), env)
    images, boxes, labels, polygons, masks = next(iter(env["loader"]))
    assert polygons.data.shape == (4, 400, K, 2) and tuple(masks.shape) == (4, S // 4, S // 4)
    assert int(masks.max()) <= int(boxes.counts.max()) and int(boxes.counts.sum()) > 0
    env["loader"].close()


def test_copy_paste_flips_instances_onto_free_places(seg_file):
    def load(paste):
        image = [CenterCropRGBImageDecoder((S, S), ratio=1.0)] + ([CopyPaste(p=1.0)] if paste else [])
        return next(iter(Loader(seg_file, batch_size=N, num_workers=1, seed=3, pipelines={
            "image": image,
            "boxes": [RaggedDecoder(max_rows=ROWS, polygons="polygons", min_size=0, min_area=0)],
            "labels": [RaggedDecoder(max_rows=ROWS)],
            "polygons": [RaggedDecoder(max_rows=ROWS)]})))

    img0, b0, l0, p0 = load(False)
    img1, b1, l1, p1 = load(True)
    pasted_total = 0
    for i in range(N):
        own, out = rows(b0, i), rows(b1, i)
        n = len(own)
        np.testing.assert_array_equal(out[:n], own)  # the sample's own rows first, unchanged
        np.testing.assert_array_equal(rows(l1, i)[:n], rows(l0, i))
        # Candidates: flipped boxes covering < 0.30 of every box; with p=1 all are pasted, least overlap first.
        flipped = np.stack([S - own[:, 2], own[:, 1], S - own[:, 0], own[:, 3]], 1) if n else own
        lo, hi = np.maximum(flipped[:, None, :2], own[None, :, :2]), np.minimum(flipped[:, None, 2:], own[None, :, 2:])
        iw, ih = np.moveaxis(np.clip(hi - lo, 0, None), 2, 0)
        ioa = iw * ih / ((own[:, 2] - own[:, 0]) * (own[:, 3] - own[:, 1]))[None, :]
        cand = [j for j in np.argsort(ioa.max(1), kind="stable") if (ioa[j] < 0.3).all()]
        assert len(out) == n + len(cand)
        pasted_total += len(cand)
        want_img = img0[i].numpy().copy()
        for q, j in enumerate(cand):
            np.testing.assert_allclose(out[n + q], flipped[j], atol=1e-4)
            assert rows(l1, i)[n + q] == rows(l0, i)[j]
            poly = rows(p1, i)[n + q].astype(np.float64)
            np.testing.assert_allclose(poly, np.stack([S - rows(p0, i)[j][:, 0], rows(p0, i)[j][:, 1]], 1), atol=1e-4)
            m = inside(poly, S, S)
            want_img[m] = img0[i].numpy()[:, ::-1][m]  # the flipped image's pixels inside the flipped polygon
        np.testing.assert_array_equal(img1[i].numpy(), want_img)
    assert pasted_total > N // 2


def test_misplaced_arguments_are_refused(seg_file):
    with pytest.raises(ValueError, match='output "labels": polygons= .* belongs on the boxes output'):
        Loader(seg_file, batch_size=2, pipelines={
            "image": [CenterCropRGBImageDecoder((S, S), ratio=1.0)],
            "boxes": [RaggedDecoder()], "labels": [RaggedDecoder(polygons="polygons")], "polygons": None})
    with pytest.raises(ValueError, match='polygons="labels" is not a polygon field'):
        Loader(seg_file, batch_size=2, pipelines={
            "image": [CenterCropRGBImageDecoder((S, S), ratio=1.0)],
            "boxes": [RaggedDecoder(polygons="labels")], "labels": [RaggedDecoder()], "polygons": None})
    with pytest.raises(ValueError, match="PolygonMaskDecoder decodes a polygon field"):
        Loader(seg_file, batch_size=2, pipelines={
            "image": [CenterCropRGBImageDecoder((S, S), ratio=1.0)],
            "boxes": [PolygonMaskDecoder()], "labels": None, "polygons": None})
    from ffcv_go.transforms import CopyPaste
    with pytest.raises(ValueError, match='CopyPaste\\(polygons="labels"\\)'):
        Loader(seg_file, batch_size=2, pipelines={
            "image": [CenterCropRGBImageDecoder((S, S), ratio=1.0), CopyPaste(polygons="labels")],
            "boxes": None, "labels": None, "polygons": None})
