"""YOLO's Mosaic checked against painted scenes (bench/scenes.py, over real
photos): within each tile, every kept box encloses exactly its object's
pixels, tiles lie where LabelMosaic's centre and partners put them, and the
batches do not depend on the number of workers."""
import math
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
import make_dataset  # noqa: E402
import scenes  # noqa: E402

from conftest import write  # noqa: E402
from ffcv_go import Loader  # noqa: E402
from ffcv_go.fields import MaskField, RaggedArrayField, RGBImageField  # noqa: E402
from ffcv_go.fields.decoders import LabelMosaic, MaskDecoder, MosaicRGBImageDecoder, RaggedDecoder  # noqa: E402
from ffcv_go.pipeline import PipelineSpec  # noqa: E402
from ffcv_go.reader import Reader  # noqa: E402
from ffcv_go.transforms import LabelMixUp, MixUp  # noqa: E402

from _target_truth import MIN_AREA, MIN_SIZE, check_sample, colour_label  # noqa: E402

N, S, ROWS = 20, 64, 24  # scenes, imgsz, rows kept (4 tiles of at most 6 objects)


@pytest.fixture(scope="module")
def scene_file(tmp_path_factory):
    ds = scenes.SceneDataset(N, make_dataset.find_photos()[:3])
    fields = {"image": RGBImageField(write_mode="raw", max_resolution=160),
              "boxes": RaggedArrayField(np.float32, (4,), follows="image", coords="xyxy"),
              "labels": RaggedArrayField(np.int64, (), follows="boxes"),
              "mask": MaskField("image")}
    return write(tmp_path_factory.mktemp("mosaic") / "scenes.beton", fields, ds)


def _loader(path, workers=2, **kw):
    args = dict(imgsz=S, seed=7, **kw)
    return Loader(path, batch_size=8, num_workers=workers, seed=3, drop_last=False, pipelines={
        "image": [MosaicRGBImageDecoder(**args)],
        "boxes": [RaggedDecoder(max_rows=ROWS, min_size=MIN_SIZE, min_area=MIN_AREA)],
        "labels": [RaggedDecoder(max_rows=ROWS)],
        "mask": None,
        "params": PipelineSpec("image", decoder=LabelMosaic(**args))})


def _fit(w0, h0):
    """Ultralytics' load_image size: the longer side S."""
    r = S / max(w0, h0)
    return (w0, h0) if r == 1 else (min(math.ceil(w0 * r), S), min(math.ceil(h0 * r), S))


def _tiles(params, sample, sizes):
    """The (x0, y0, x1, y1) of each tile of the 2S output, by Ultralytics'
    rules, from what LabelMosaic reports."""
    on, xc, yc, *partners = (int(v) for v in params)
    if not on:
        w, h = _fit(*sizes[sample])
        x, y = S // 2 + (S - w) // 2, S // 2 + (S - h) // 2
        return [(x, y, x + w, y + h)]
    out = []
    for k, j in enumerate([sample] + partners):
        w, h = _fit(*sizes[j])
        x = xc - w if k % 2 == 0 else xc
        y = yc - h if k < 2 else yc
        out.append((max(x, 0), max(y, 0), min(x + w, 2 * S), min(y + h, 2 * S)))
    return out


def _check(loader, sizes, epochs=1):
    problems, seen, tiles_seen = [], 0, set()
    for _ in range(epochs):
        for img, boxes, labels, params in loader:
            ids = loader._last_ids if hasattr(loader, "_last_ids") else None
            for i in range(len(img)):
                sample = int(ids[i]) if ids is not None else None
                n = int(boxes.counts[i])
                b, lab, im = boxes.data[i, :n].numpy(), labels.data[i, :n].numpy(), img[i].numpy()
                tiles = _tiles(params[i].numpy(), sample, sizes)
                tiles_seen.add(len(tiles))
                centres = np.stack([(b[:, 0] + b[:, 2]) / 2, (b[:, 1] + b[:, 3]) / 2], 1)
                placed = np.zeros(n, bool)
                shown = np.zeros(im.shape[:2], bool)
                for x0, y0, x1, y1 in tiles:
                    if x1 <= x0 or y1 <= y0:
                        continue
                    shown[y0:y1, x0:x1] = True
                    inside = (centres[:, 0] > x0) & (centres[:, 0] < x1) & (centres[:, 1] > y0) & (centres[:, 1] < y1)
                    placed |= inside
                    sub = b[inside] - np.array([x0, y0, x0, y0], np.float32)
                    problems += [f"sample {sample}, tile {(x0, y0, x1, y1)}: {p}"
                                 for p in check_sample(im[y0:y1, x0:x1], sub, lab[inside], None)]
                if not placed.all():
                    problems.append(f"sample {sample}: boxes {b[~placed]} in no tile {tiles}")
                if (im[~shown] != 114).any():
                    problems.append(f"sample {sample}: pixels outside the tiles {tiles} are not the fill")
                seen += n
    return problems, seen, tiles_seen


@pytest.fixture(scope="module")
def sizes(scene_file):
    r = Reader(str(scene_file))
    return [(int(w), int(h)) for w, h in zip(r.metadata["f0"]["width"], r.metadata["f0"]["height"])]


def test_boxes_enclose_their_objects_in_every_tile(scene_file, sizes):
    loader = _loader(scene_file, p=0.7)
    problems, seen, tiles = _check(_Ids(loader), sizes, epochs=2)
    assert not problems, "\n".join(problems[:10])
    assert seen > 2 * N * 3 and tiles == {1, 4}  # mosaics and lone samples both seen


def test_jpeg_tiles(tmp_path):
    """JPEG samples: each tile decoded at a reduced DCT scale (or upscaled)
    into its place."""
    ds = scenes.SceneDataset(8, make_dataset.find_photos()[:2])
    path = write(tmp_path / "jpg.beton", {
        "image": RGBImageField(write_mode="jpg", jpeg_quality=95),
        "boxes": RaggedArrayField(np.float32, (4,), follows="image", coords="xyxy"),
        "labels": RaggedArrayField(np.int64, (), follows="boxes"), "mask": MaskField("image")}, ds)
    r = Reader(str(path))
    sizes = [(int(w), int(h)) for w, h in zip(r.metadata["f0"]["width"], r.metadata["f0"]["height"])]
    problems, seen, _ = _check(_Ids(_loader(path)), sizes)
    assert not problems, "\n".join(problems[:10])
    assert seen > 8


def test_same_batches_for_any_worker_count(scene_file):
    one, two = _loader(scene_file, workers=1), _loader(scene_file, workers=2)
    for a, b in zip(one, two):
        for x, y in zip(a, b):
            x, y = (x.data, y.data) if hasattr(x, "counts") else (x, y)
            assert torch.equal(x, y)


def test_close_epoch_turns_it_off(scene_file, sizes):
    loader = _loader(scene_file, close_epoch=1)
    on = [bool(p[0]) for _, _, _, params in loader for p in params]
    off = [bool(p[0]) for _, _, _, params in loader for p in params]
    assert all(on) and not any(off)
    problems, _, tiles = _check(_Ids(loader), sizes)  # epoch 2: every sample alone, letterboxed
    assert not problems and tiles == {1}, "\n".join(problems[:10])


def test_p_set_between_epochs(scene_file):
    """Like a decoder's output_size (progressive resizing), p set between
    epochs takes effect at the next one."""
    dec, label = MosaicRGBImageDecoder(imgsz=S, seed=7), LabelMosaic(imgsz=S, seed=7)
    loader = Loader(scene_file, batch_size=8, num_workers=2, pipelines={
        "image": [dec], "boxes": [RaggedDecoder(max_rows=ROWS)], "labels": [RaggedDecoder(max_rows=ROWS)],
        "mask": None, "params": PipelineSpec("image", decoder=label)})
    assert all(bool(p[0]) for *_, params in loader for p in params)
    dec.p = label.p = 0.0
    assert not any(bool(p[0]) for *_, params in loader for p in params)


def test_refusals(scene_file):
    with pytest.raises(ValueError, match="MosaicRGBImageDecoder: n 3 must be 4 or 9"):
        MosaicRGBImageDecoder(n=3)
    with pytest.raises(ValueError, match="masks cannot follow MosaicRGBImageDecoder"):
        Loader(scene_file, batch_size=4, pipelines={"image": [MosaicRGBImageDecoder(imgsz=S)],
                                                    "boxes": [RaggedDecoder(max_rows=ROWS)],
                                                    "labels": [RaggedDecoder(max_rows=ROWS)], "mask": [MaskDecoder()]})
    with pytest.raises(ValueError, match="give its RaggedDecoder max_rows"):
        Loader(scene_file, batch_size=4, pipelines={"image": [MosaicRGBImageDecoder(imgsz=S)],
                                                    "boxes": [RaggedDecoder()], "labels": None, "mask": None})


class _Ids:
    """Iterates a loader's epoch, giving each batch's sample ids as
    ``_last_ids`` (the tiles' truth needs the sample each output shows)."""

    def __init__(self, loader):
        self.loader = loader

    def __iter__(self):
        order = self.loader.next_traversal_order()
        bs = self.loader.batch_size
        for k, batch in enumerate(self.loader):
            self._last_ids = np.asarray(order[k * bs:(k + 1) * bs])
            yield batch


def test_guide_snippet_runs(scene_file, monkeypatch, tmp_path):
    """docs/guides/yolo.md's Mosaic block, on the scenes, smaller and shorter."""
    import re
    guide = (Path(__file__).parents[2] / "docs/guides/yolo.md").read_text()
    section = guide[guide.index("## Mosaic and MixUp"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    for old, new in {"imgsz=640": f"imgsz={S}", "num_workers=8": "num_workers=2", "epochs, close_mosaic = 100, 10":
                     "epochs, close_mosaic = 2, 1", "        ...": "        seen.append((images.shape, mosaic[:, 0]))",
                     '"labels": [': '"mask": None, "labels": ['}.items():  # the scenes have masks too
        assert old in code
        code = code.replace(old, new)
    (tmp_path / "train.beton").symlink_to(scene_file)
    monkeypatch.chdir(tmp_path)
    env = {"seen": []}
    exec(compile(code, "yolo.md", "exec"), env)
    shapes = {tuple(s) for s, _ in env["seen"]}
    applied = [bool(a.all()) for _, a in env["seen"]]
    assert shapes <= {(16, 2 * S, 2 * S, 3), (N % 16, 2 * S, 2 * S, 3)} and applied[0] and not applied[-1]
    env["loader"].close()


def _local_problems(img, boxes, labels, tol=2.0):
    """Each box against its colour's pixels near it (the check for a mosaic
    whose tiles are unknown: the same colour may show in other tiles)."""
    lab = colour_label(img)
    problems = []
    for b, k in zip(boxes, labels):
        x0, y0 = max(int(b[0]) - 3, 0), max(int(b[1]) - 3, 0)
        x1, y1 = min(int(math.ceil(b[2])) + 3, img.shape[1]), min(int(math.ceil(b[3])) + 3, img.shape[0])
        ys, xs = np.nonzero(lab[y0:y1, x0:x1] == k)
        if not len(xs):
            problems.append(f"box {b} of label {k}: none of its colour's pixels")
            continue
        seen = np.array([xs.min() + x0, ys.min() + y0, xs.max() + 1 + x0, ys.max() + 1 + y0], np.float64)
        if np.abs(seen - b).max() > tol:
            problems.append(f"box {b} of label {k}: its colour's pixels span {seen}")
    return problems


def test_mixup_blends_a_partner_mosaic_and_its_boxes(scene_file):
    """With MixUp after the mosaic, the sample's own mosaic and rows are
    those without it, the image is own * r + partner * (1 - r) where
    LabelMixUp says it applied, and the partner's rows follow the partner
    image recovered from the blend."""
    def loader(mix, workers=2):
        image = [MosaicRGBImageDecoder(imgsz=S, seed=7)] + ([MixUp(0.5, seed=9)] if mix else [])
        params = [LabelMosaic(imgsz=S, seed=7)] + ([LabelMixUp(0.5, seed=9)] if mix else [])
        return Loader(scene_file, batch_size=10, num_workers=workers, seed=3, pipelines={
            "image": image, "boxes": [RaggedDecoder(max_rows=2 * ROWS, min_size=MIN_SIZE, min_area=MIN_AREA)],
            "labels": [RaggedDecoder(max_rows=2 * ROWS)], "mask": None,
            "params": PipelineSpec("image", decoder=params[0], transforms=params[1:])})
    applied, partner_rows, problems = 0, 0, []
    for (ia, ba, la, _), (ib, bb, lb, pb) in zip(loader(False), loader(True)):
        for i in range(len(ia)):
            na, nb = int(ba.counts[i]), int(bb.counts[i])
            on, r = bool(pb[i, 6]), float(pb[i, 8])  # LabelMosaic's 6 values, then LabelMixUp's
            assert torch.equal(bb.data[i, :na], ba.data[i, :na]) and torch.equal(lb.data[i, :na], la.data[i, :na])
            if not on:
                assert nb == na and torch.equal(ia[i], ib[i])
                continue
            applied += 1
            own, mixed = ia[i].numpy().astype(np.float64), ib[i].numpy().astype(np.float64)
            assert 0.3 < r < 0.7 and not np.array_equal(own, mixed)
            partner = np.clip(np.round((mixed + 0.5 - own * r) / (1 - r)), 0, 255).astype(np.uint8)
            partner_rows += nb - na
            problems += _local_problems(partner, bb.data[i, na:nb].numpy(), lb.data[i, na:nb].numpy())
    assert not problems, "\n".join(problems[:10])
    assert 0 < applied < N and partner_rows > applied
    one, two = loader(True, workers=1), loader(True, workers=3)
    for a, b in zip(one, two):
        for x, y in zip(a, b):
            x, y = (x.data, y.data) if hasattr(x, "counts") else (x, y)
            assert torch.equal(x, y)
