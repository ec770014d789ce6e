"""YOLO (Ultralytics layout) datasets converted to .beton: a tiny dataset
made from real photos, whose labels are known in pixels, read back exactly."""
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
import make_dataset  # noqa: E402

from ffcv_go import DatasetWriter, Loader  # noqa: E402
from ffcv_go.pipeline import PipelineSpec  # noqa: E402
from ffcv_go.detection import YoloDataset  # noqa: E402
from ffcv_go.reader import Reader  # noqa: E402
from _target_truth import inside  # noqa: E402
from ffcv_go.fields.decoders import PolygonMaskDecoder, RaggedDecoder, SimpleRGBImageDecoder  # noqa: E402

W, H = 64, 32  # powers of two: pixel coordinates / size are exact in the label text


@pytest.fixture(scope="module")
def photos():
    found = make_dataset.find_photos()[:4]
    if not found:
        pytest.skip("no photos installed (Debian wallpaper packages)")
    return found


def _photo(src, dst):
    from PIL import Image
    with Image.open(src) as im:
        im.convert("RGB").resize((W, H)).save(dst, quality=90)


def _pixels(jpeg):
    import io
    from PIL import Image
    with Image.open(io.BytesIO(jpeg)) as im:
        return np.asarray(im.convert("RGB"))


def _box_line(cls, box):
    x0, y0, x1, y1 = box
    return f"{cls} {(x0 + x1) / 2 / W!r} {(y0 + y1) / 2 / H!r} {(x1 - x0) / W!r} {(y1 - y0) / H!r}"


def _points(xy):
    return " ".join(f"{float(x) / W!r} {float(y) / H!r}" for x, y in xy)


def _dataset(root, photos, labels, yaml_extra="", split_dir="train"):
    """A YOLO dataset under root: images/<split_dir>/<name>.jpg from photos,
    labels/<split_dir>/<name>.txt from labels (None: no label file)."""
    (root / "images" / split_dir).mkdir(parents=True, exist_ok=True)
    (root / "labels" / split_dir).mkdir(parents=True, exist_ok=True)
    for k, (name, text) in enumerate(labels.items()):
        _photo(photos[k % len(photos)], root / "images" / split_dir / f"{name}.jpg")
        if text is not None:
            (root / "labels" / split_dir / f"{name}.txt").write_text(text)
    y = root / "data.yaml"
    y.write_text(f"path: .\ntrain: images/{split_dir}\nval: images/{split_dir}\n"
                 f"names:\n  0: person\n  1: car\n  2: dog\n{yaml_extra}")
    return y


def _load(path, **pipelines):
    loader = Loader(path, batch_size=16, num_workers=1, drop_last=False,
                    pipelines={"image": [SimpleRGBImageDecoder()], **pipelines})
    return next(iter(loader))


def _rows(r, i):
    return r.data[i, :int(r.counts[i])].numpy()


def test_detect(tmp_path, photos):
    truth = {"a": [(0, (8, 4, 24, 20)), (2, (32, 0, 64, 32))], "b": [(1, (0, 8, 16, 24))]}
    labels = {name: "\n".join(_box_line(c, b) for c, b in objs) + "\n" for name, objs in truth.items()}
    labels["b"] += "2 " + _points([(40, 2), (60, 2), (48, 30)]) + "\n"  # a polygon: its bounding box
    truth["b"].append((2, (40, 2, 60, 30)))
    labels["c"] = None  # no label file: background
    labels["d"] = ""  # empty: background
    ds = YoloDataset(_dataset(tmp_path, photos, labels), split="train")
    assert (len(ds), ds.missing_labels, ds.backgrounds, ds.names) == (4, 1, 2, ["person", "car", "dog"])
    out = tmp_path / "det.beton"
    report = DatasetWriter(str(out), ds.fields(), num_workers=2, progress=False).from_indexed_dataset(ds)
    assert report.samples == 4 and report.skipped == 0
    img, boxes, lab = _load(out, boxes=[RaggedDecoder(min_size=0, min_area=0)],
                            labels=[RaggedDecoder()])
    assert tuple(img.shape[1:3]) == (H, W)
    r = Reader(str(out))
    for i, it in enumerate(ds.items):  # the JPEGs' coefficients kept: their pixels, restart markers spliced in
        stored, source = bytes(r.read(i, "image")), Path(it["image"]).read_bytes()
        assert stored != source and b"\xff\xdd" in stored and b"\xff\xdd" not in source
        np.testing.assert_array_equal(_pixels(stored), _pixels(source))
    for i, name in enumerate("abcd"):
        objs = truth.get(name, [])
        want = np.asarray([b for _, b in objs], np.float32).reshape(-1, 4)
        np.testing.assert_array_equal(_rows(boxes, i), want)
        np.testing.assert_array_equal(_rows(lab, i), [c for c, _ in objs])


def test_kept_sources(tmp_path, photos):
    """keep_source_jpeg=True keeps the files byte for byte; the default
    ("coefficients") codes a 4:2:0 JPEG, baseline or progressive, again as
    one scan with restart markers, and keeps a 4:4:4 one, which it cannot
    take, byte for byte. Every one decodes to the file's pixels."""
    ds = YoloDataset(_dataset(tmp_path, photos, {"a": "0 0.5 0.5 0.2 0.2\n", "b": "", "c": ""}), split="train")
    from PIL import Image
    with Image.open(ds.items[1]["image"]) as im:
        im.save(ds.items[1]["image"], quality=90, progressive=True)
    with Image.open(ds.items[2]["image"]) as im:
        im.save(ds.items[2]["image"], quality=90, subsampling=0)
    for keep, spliced in ((True, [False, False, False]), ("coefficients", [True, True, False])):
        out = tmp_path / f"{keep}.beton"
        DatasetWriter(str(out), ds.fields(keep_source_jpeg=keep), num_workers=1, progress=False).from_indexed_dataset(ds)
        r = Reader(str(out))
        for i, it in enumerate(ds.items):
            stored, source = bytes(r.read(i, "image")), Path(it["image"]).read_bytes()
            assert (stored != source) == spliced[i], (keep, i)
            np.testing.assert_array_equal(_pixels(stored), _pixels(source))
    with pytest.raises(ValueError, match="keep_source_jpeg 'pixels' must be False, True or 'coefficients'"):
        ds.fields(keep_source_jpeg="pixels")


def test_segment(tmp_path, photos):
    polys = {"a": [(1, [(4, 2), (30, 6), (12, 28)]), (0, [(40, 4), (60, 4), (60, 20), (40, 20)])],
             "b": [(2, [(0, 0), (63.5, 0), (63.5, 31.5), (0, 31.5)]), (0, [(20, 8), (28, 8), (24, 16)])]}
    labels = {n: "".join(f"{c} {_points(p)}\n" for c, p in objs) for n, objs in polys.items()}
    labels["c"] = ""
    ds = YoloDataset(_dataset(tmp_path, photos, labels), split="val", task="segment", segment_points=16)
    out = tmp_path / "seg.beton"
    DatasetWriter(str(out), ds.fields(), num_workers=2, progress=False).from_indexed_dataset(ds)
    _, boxes, lab, got, mask = _load(out, boxes=[RaggedDecoder(min_size=0, min_area=0)],
                                     labels=[RaggedDecoder()], polygons=[RaggedDecoder()],
                                     mask=PipelineSpec("polygons", decoder=PolygonMaskDecoder(ratio=1)))
    assert got.data.shape[2:] == (16, 2)
    for i, name in enumerate("abc"):
        objs = polys.get(name, [])
        want = np.zeros((H, W), np.uint8)
        for k, (_, p) in enumerate(objs):
            pts = _rows(got, i)[k]
            # Resampled in Go: every vertex kept, the outline unchanged.
            assert all(np.abs(pts - v).sum(1).min() < 1e-4 for v in np.asarray(p, np.float32))
            want[inside(p, W, H)] = k + 1  # later objects here are the smaller: on top
        np.testing.assert_array_equal(mask[i].numpy(), want)
        bounds = [(min(x for x, _ in p), min(y for _, y in p), max(x for x, _ in p), max(y for _, y in p))
                  for _, p in objs]
        np.testing.assert_array_equal(_rows(boxes, i), np.asarray(bounds, np.float32).reshape(-1, 4))
        np.testing.assert_array_equal(_rows(lab, i), [c for c, _ in objs])
    assert mask[0].numpy().max() == 2 and (mask[2].numpy() == 0).all()
    assert (mask[1].numpy() == 2).sum() > 0  # the small object painted over the large one


def test_pose(tmp_path, photos):
    # kpt_shape [2, 3]: x, y, visibility; flip_idx swaps the two points.
    objs = [(0, (8, 4, 24, 20), [(10, 6, 2), (20, 16, 1)]), (0, (32, 0, 64, 32), [(0, 0, 0), (48, 8, 2)])]
    line = [_box_line(c, b) + " " + " ".join(f"{x / W!r} {y / H!r} {v}" for x, y, v in k) for c, b, k in objs]
    ds = YoloDataset(_dataset(tmp_path, photos, {"a": "\n".join(line)}, "kpt_shape: [2, 3]\nflip_idx: [1, 0]\n"),
                     task="pose")
    assert ds.flip_indices == (1, 0)
    out = tmp_path / "pose.beton"
    DatasetWriter(str(out), ds.fields(), num_workers=2, progress=False).from_indexed_dataset(ds)
    _, boxes, lab, kpts = _load(out, boxes=[RaggedDecoder(min_size=0, min_area=0)],
                                labels=[RaggedDecoder()], keypoints=[RaggedDecoder(flip_indices=ds.flip_indices)])
    np.testing.assert_array_equal(_rows(boxes, 0), np.asarray([b for _, b, _ in objs], np.float32))
    np.testing.assert_array_equal(_rows(kpts, 0), np.asarray([k for _, _, k in objs], np.float32))
    np.testing.assert_array_equal(_rows(lab, 0), [0, 0])


def test_image_list_split(tmp_path, photos):
    y = _dataset(tmp_path, photos, {"a": _box_line(1, (8, 4, 24, 20)), "b": _box_line(0, (0, 0, 64, 32))})
    (tmp_path / "list.txt").write_text("./images/train/b.jpg\n\nimages/train/a.jpg\n")
    y.write_text(y.read_text().replace("val: images/train", "val: list.txt"))
    ds = YoloDataset(y, split="val")
    assert [Path(it["image"]).name for it in ds.items] == ["a.jpg", "b.jpg"]
    np.testing.assert_array_equal(ds[0][1], [[8, 4, 24, 20]])
    with pytest.raises(ValueError, match='no "test" split'):
        YoloDataset(y, split="test")


BAD = {
    "columns": ("0 0.5 0.5 0.25", "4 columns"),
    "class": ("3 0.5 0.5 0.25 0.25", "class id 3 is not one of the 3 names"),
    "range": ("0 0.5 1.2 0.25 0.25", "coordinate 1.2 is outside"),
    "polygon": ("0 0.1 0.1 0.5 0.5", "a polygon of 2 points"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_label_names_file_and_line(tmp_path, photos, case):
    line, what = BAD[case]
    task = "segment" if case == "polygon" else "detect"
    good = _box_line(1, (8, 4, 24, 20)) if task == "detect" else "1 " + _points([(4, 2), (30, 6), (12, 28)])
    y = _dataset(tmp_path, photos, {"a": good, "bad": good + "\n\n" + line + "\n", "c": good})
    bad = tmp_path / "labels" / "train" / "bad.txt"
    ds = YoloDataset(y, task=task)
    fields = ds.fields()
    with pytest.raises(ValueError, match=rf"dataset item 1, field 'boxes': {bad}: line 3: .*{what}"):
        DatasetWriter(str(tmp_path / "raise.beton"), fields, num_workers=2, progress=False).from_indexed_dataset(ds)
    # Fetched in processes too: a refused label travels back as such.
    for pool in (None, "process"):
        with pytest.warns(UserWarning):
            report = DatasetWriter(str(tmp_path / "skip.beton"), fields, num_workers=2,
                                   progress=False).from_indexed_dataset(ds, errors="skip", pool=pool)
        assert (report.samples, report.skipped) == (2, 1)
        (p,) = report.problems
        assert p["shard"] == str(bad) and p["key"] == 1 and f"{bad}: line 3: " in p["reason"] and what in p["reason"]
    out = _load(tmp_path / "skip.beton", boxes=[RaggedDecoder(min_size=0, min_area=0)],
                **{name: [RaggedDecoder()] for name in list(fields)[2:]})
    assert out[1].counts.tolist() == [1, 1]


def test_label_without_image(tmp_path, photos):
    y = _dataset(tmp_path, photos, {"a": _box_line(1, (8, 4, 24, 20))})
    orphan = tmp_path / "labels" / "train" / "gone.txt"
    orphan.write_text(_box_line(0, (0, 0, 8, 8)))
    with pytest.raises(ValueError, match=rf"{orphan}: a label file without its image"):
        YoloDataset(y)
    ds = YoloDataset(y, errors="skip")
    assert ds.orphan_labels == [str(orphan)] and len(ds) == 1


def test_bad_yaml(tmp_path, photos):
    y = _dataset(tmp_path, photos, {"a": ""})
    with pytest.raises(ValueError, match="pose needs kpt_shape"):
        YoloDataset(y, task="pose")
    y.write_text("train: images/train\nnames:\n  0: a\n  2: c\n")
    with pytest.raises(ValueError, match=rf"{y}: names: class id 2"):
        YoloDataset(y)


def test_guide_snippet_runs(tmp_path, photos, monkeypatch):
    """The guide's snippet, on a dataset named as it names it."""
    import re
    guide = (Path(__file__).parents[2] / "docs/guides/detection.md").read_text()
    section = guide[guide.index("## Converting a YOLO dataset"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    y = _dataset(tmp_path, photos, {"a": _box_line(1, (8, 4, 24, 20)), "b": None})
    y.rename(tmp_path / "coco8.yaml")
    monkeypatch.chdir(tmp_path)
    env = {}
    exec(compile(code.replace('DatasetWriter("train.beton", ds.fields())',
                              'DatasetWriter("train.beton", ds.fields(), progress=False)'), "guide", "exec"), env)
    assert env["report"].samples == 2 and env["ds"].missing_labels == 1


def test_unreadable_image_is_skipped(tmp_path, photos):
    y = _dataset(tmp_path, photos, {"a": _box_line(1, (8, 4, 24, 20)), "b": _box_line(0, (0, 0, 8, 8))})
    broken = tmp_path / "images" / "train" / "b.jpg"
    broken.write_bytes(b"not a JPEG")
    ds = YoloDataset(y)
    with pytest.raises(ValueError, match=rf"dataset item 1, field 'boxes': {broken}: not a readable image"):
        DatasetWriter(str(tmp_path / "r.beton"), ds.fields(), progress=False).from_indexed_dataset(ds)
    with pytest.warns(UserWarning):
        report = DatasetWriter(str(tmp_path / "s.beton"), ds.fields(), progress=False).from_indexed_dataset(
            ds, errors="skip")
    assert (report.samples, report.skipped, report.problems[0]["shard"]) == (1, 1, str(broken))


def test_pose_flip_idx_swaps_points(tmp_path, photos):
    from ffcv_go.transforms import RandomHorizontalFlip
    kp = [(10, 6, 2), (20, 16, 1)]
    line = _box_line(0, (8, 4, 24, 20)) + " " + " ".join(f"{x / W!r} {y / H!r} {v}" for x, y, v in kp)
    ds = YoloDataset(_dataset(tmp_path, photos, {"a": line}, "kpt_shape: [2, 3]\nflip_idx: [1, 0]\n"), task="pose")
    out = tmp_path / "pose.beton"
    DatasetWriter(str(out), ds.fields(), progress=False).from_indexed_dataset(ds)
    loader = Loader(out, batch_size=1, num_workers=1, drop_last=False,
                    pipelines={"image": [SimpleRGBImageDecoder(), RandomHorizontalFlip(1.0)],
                               "boxes": [RaggedDecoder(min_size=0, min_area=0)], "labels": [RaggedDecoder()],
                               "keypoints": [RaggedDecoder(flip_indices=ds.flip_indices)]})
    _, boxes, _, kpts = next(iter(loader))
    np.testing.assert_array_equal(_rows(boxes, 0), [[W - 24, 4, W - 8, 20]])
    np.testing.assert_array_equal(_rows(kpts, 0), [[(W - 20, 16, 1), (W - 10, 6, 2)]])


def test_exif_turned_image_is_refused(tmp_path, photos):
    """Ultralytics reads labels on the image turned upright by its EXIF
    orientation; the writer stores pixels as they are: refused, not wrong."""
    from PIL import Image
    y = _dataset(tmp_path, photos, {"a": _box_line(1, (8, 4, 24, 20)), "b": _box_line(0, (0, 0, 8, 8))})
    turned = tmp_path / "images" / "train" / "b.jpg"
    with Image.open(turned) as im:
        exif = im.getexif()
        exif[0x0112] = 6
        im.save(turned, exif=exif)
    ds = YoloDataset(y)
    assert "EXIF orientation 6" in ds.items[1]["error"] and not ds.items[0].get("error")
    with pytest.warns(UserWarning):
        report = DatasetWriter(str(tmp_path / "s.beton"), ds.fields(), progress=False).from_indexed_dataset(
            ds, errors="skip")
    assert (report.samples, report.problems[0]["shard"]) == (1, str(turned))
