"""Detection and segmentation targets checked against a constructed truth:
scenes of coloured rectangles (one pure colour per object) over real
photos squeezed into [64, 191] (bench/scenes.py). After any crop, flip or
shift, each kept box must enclose exactly its colour's pixels and the mask
must give every pixel the label of the colour it shows."""
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
import make_dataset  # noqa: E402
import scenes  # noqa: E402

from conftest import FnDataset, write  # noqa: E402
from ffcv_go import DatasetWriter, Loader  # noqa: E402
from ffcv_go.loader import OrderOption  # noqa: E402
from ffcv_go.detection import CocoDetection, Ragged, TargetDataset, to_torchvision_targets  # noqa: E402
from ffcv_go.fields import IntField, MaskField, RaggedArrayField, RGBImageField  # noqa: E402
from ffcv_go.fields.decoders import (CenterCropRGBImageDecoder, MaskDecoder, RaggedDecoder,  # noqa: E402
                                     RandomResizedCropRGBImageDecoder, ResizePadRGBImageDecoder,
                                     SimpleRGBImageDecoder)
from ffcv_go.pipeline import PipelineSpec  # noqa: E402
from ffcv_go.reader import Reader  # noqa: E402
from ffcv_go.transforms import (RandomBrightness, RandomHorizontalFlip, RandomResizedCrop,  # noqa: E402
                                RandomTranslate, RandomVerticalFlip)
from ffcv_go.transforms.image import RandomCrop  # noqa: E402
from ffcv_go.transforms import (Convert, ModuleWrapper, Photometric, ToDevice, ToTensor,  # noqa: E402
                                ToTorchImage, View)
from ffcv_go.pipeline import AllocationQuery, Operation  # noqa: E402
import torchvision.transforms as tv1  # noqa: E402
import torchvision.transforms.v2 as tv2  # noqa: E402

from _target_truth import MIN_AREA, MIN_SIZE, check_loader, check_sample, colour_label  # noqa: E402

N = 48


def _fields(max_resolution=None):
    return {"image": RGBImageField(write_mode="raw", max_resolution=max_resolution),
            "boxes": RaggedArrayField(np.float32, (4,), follows="image", coords="xyxy"),
            "labels": RaggedArrayField(np.int64, (), follows="boxes"),
            "mask": MaskField("image")}


@pytest.fixture(scope="module")
def dataset():
    return scenes.SceneDataset(N, make_dataset.find_photos()[:3])


@pytest.fixture(scope="module")
def scene_file(dataset, tmp_path_factory):
    # max_resolution 200 downscales most scenes: boxes and masks follow the resize.
    return write(tmp_path_factory.mktemp("det") / "scenes.beton", _fields(200), dataset, num_workers=2)


def targets(**kw):
    return {"boxes": [RaggedDecoder(min_size=MIN_SIZE, min_area=MIN_AREA, **kw)], "labels": [RaggedDecoder()],
            "mask": [MaskDecoder()]}


PIPELINES = {
    "rrc+flip": lambda: [RandomResizedCropRGBImageDecoder((96, 128), scale=(0.1, 1.0)), RandomHorizontalFlip()],
    "center+flip": lambda: [CenterCropRGBImageDecoder((112, 112), ratio=0.8), RandomHorizontalFlip(0.5)],
    "resize_pad+jitter+flip": lambda: [ResizePadRGBImageDecoder((128, 112), scale=(0.6, 1.0)),
                                       RandomHorizontalFlip()],
    # A photometric op is passed over by the targets (p=0 keeps the colours the check reads).
    "center+rrc+vflip+photometric": lambda: [CenterCropRGBImageDecoder((140, 140), ratio=1.0),
                                             RandomResizedCrop(scale=(0.3, 1.0), ratio=(0.75, 4 / 3), size=100),
                                             RandomBrightness(0.2, p=0.0), RandomVerticalFlip(0.5)],
    "rrc+translate+crop": lambda: [RandomResizedCropRGBImageDecoder((120, 120), scale=(0.3, 1.0)),
                                   RandomTranslate(padding=16),
                                   RandomCrop((100, 90), padding=8)],
}


@pytest.mark.parametrize("name", list(PIPELINES))
def test_targets_follow_the_image(scene_file, name):
    loader = Loader(scene_file, batch_size=16, num_workers=2, seed=3, drop_last=False,
                    pipelines={"image": PIPELINES[name](), **targets()})
    for _ in range(2):  # two epochs: other draws
        problems, seen = check_loader(loader)
        assert not problems, "\n".join(problems[:10])
        assert seen > N  # most scenes keep several boxes


def test_targets_through_the_process_cache(scene_file):
    """Labels read their boxes through the loader's cache, also the process cache."""
    loader = Loader(scene_file, batch_size=16, num_workers=2, seed=4, drop_last=False, os_cache=False,
                    order=OrderOption.QUASI_RANDOM, pipelines={"image": PIPELINES["rrc+flip"](), **targets()})
    for _ in range(2):  # two epochs: other draws
        problems, seen = check_loader(loader)
        assert not problems, "\n".join(problems[:10])
        assert seen > N  # most scenes keep several boxes


def test_resize_pad_keeps_every_box(scene_file, dataset):
    """The detection resize crops nothing: every box is kept, scaled by one
    factor per axis, at the top-left corner; the rest is fill."""
    loader = Loader(scene_file, batch_size=N, num_workers=2, pipelines={
        "image": [ResizePadRGBImageDecoder((160, 160), fill=(0, 0, 0))], **targets()})
    img, boxes, labels, mask = next(iter(loader))
    r = Reader(str(scene_file))
    for i in range(N):
        w, h = int(r.metadata["f0"]["width"][i]), int(r.metadata["f0"]["height"][i])
        s = min(160 / w, 160 / h)
        nw, nh = round(w * s), round(h * s)
        assert int(boxes.counts[i]) == int(r.metadata["f1"]["rows"][i])
        stored = np.frombuffer(r.read(i, "boxes"), np.float32).reshape(-1, 4)
        np.testing.assert_allclose(boxes.data[i, :len(stored)].numpy(),
                                   stored * np.array([nw / w, nh / h, nw / w, nh / h]), rtol=1e-5, atol=1e-4)
        assert not img[i, nh:].any() and not img[i, :, nw:].any() and not mask[i, nh:].any()


def test_unscaled_truth(dataset, tmp_path):
    """Whole images of one size: every box and mask is exactly as made."""
    ds = scenes.SceneDataset(12, [], height=150, width=170)
    path = write(tmp_path / "fixed.beton", _fields(), ds)
    loader = Loader(path, batch_size=12, num_workers=1, pipelines={"image": [SimpleRGBImageDecoder()], **targets()})
    img, boxes, labels, mask = next(iter(loader))
    for i in range(12):
        _, b, l, m = ds[i]
        n = int(boxes.counts[i])
        assert n == len(b)
        np.testing.assert_array_equal(boxes.data[i, :n].numpy(), b)
        np.testing.assert_array_equal(labels.data[i, :n].numpy(), l)
        np.testing.assert_array_equal(mask[i].numpy(), m)
        assert not boxes.data[i, n:].any() and not labels.data[i, n:].any()


def test_targets_that_miss_a_flip_or_crop_are_caught(scene_file):
    """The check catches targets that miss the image's flip or crop: they
    follow an output decoded without them."""
    flip = Loader(scene_file, batch_size=16, num_workers=2, seed=1, pipelines={
        "image": [CenterCropRGBImageDecoder((112, 112), ratio=0.9), RandomHorizontalFlip(1.0)],
        "plain": PipelineSpec("image", decoder=CenterCropRGBImageDecoder((112, 112), ratio=0.9)),
        **{k: [type(v[0])(follows="plain", **({} if k != "boxes" else {"min_size": MIN_SIZE, "min_area": MIN_AREA}))]
           for k, v in targets().items() if k != "labels"},
        "labels": [RaggedDecoder(follows="boxes")]})
    problems = []
    for img, boxes, labels, mask, _ in flip:
        for i in range(len(img)):
            n = int(boxes.counts[i])
            problems += check_sample(img[i].numpy(), boxes.data[i, :n].numpy(), labels.data[i, :n].numpy(),
                                     mask[i].numpy())
    assert any("span" in p for p in problems) and any("mask differs" in p for p in problems)

    crop = Loader(scene_file, batch_size=16, num_workers=2, seed=1, pipelines={
        "image": [RandomResizedCropRGBImageDecoder((112, 112))],
        "plain": PipelineSpec("image", decoder=CenterCropRGBImageDecoder((112, 112), ratio=1.0)),
        "boxes": [RaggedDecoder(follows="plain")], "labels": [RaggedDecoder()], "mask": [MaskDecoder(follows="plain")]})
    problems = []
    for img, boxes, labels, mask, _ in crop:
        for i in range(len(img)):
            n = int(boxes.counts[i])
            problems += check_sample(img[i].numpy(), boxes.data[i, :n].numpy(), labels.data[i, :n].numpy(),
                                     mask[i].numpy())
    assert len(problems) > 10


def test_same_batches_for_any_worker_count(scene_file):
    def run(workers):
        loader = Loader(scene_file, batch_size=8, num_workers=workers, seed=5, order=OrderOption.RANDOM,
                        pipelines={"image": PIPELINES["rrc+flip"](), **targets()})
        return [tuple(x.data.clone() if isinstance(x, Ragged) else x.clone() for x in b) for b in loader]
    a, b = run(1), run(3)
    assert all(torch.equal(x, y) for ba, bb in zip(a, b) for x, y in zip(ba, bb))


def test_writer_output_is_the_same_for_any_worker_count(dataset, tmp_path):
    one = write(tmp_path / "one.beton", _fields(180), dataset, num_workers=1)
    four = write(tmp_path / "four.beton", _fields(180), dataset, num_workers=4)
    assert one.read_bytes() == four.read_bytes()


def test_reader_sees_the_fields(scene_file, dataset):
    r = Reader(str(scene_file))
    f = r.handlers
    assert isinstance(f["boxes"], RaggedArrayField) and f["boxes"].coords == "xyxy" and f["boxes"].follows == "image"
    assert f["labels"].follows == "boxes" and f["labels"].dtype == np.int64
    assert isinstance(f["mask"], MaskField) and f["mask"].follows == "image"
    for i in range(5):
        _, b, l, _ = dataset[i]
        assert r.metadata["f1"]["rows"][i] == len(b) == r.metadata["f2"]["rows"][i]
        assert np.array_equal(np.frombuffer(r.read(i, "labels"), np.int64), l)
        # stored in the stored image's pixels: scaled as the image was
        w, h = int(r.metadata["f0"]["width"][i]), int(r.metadata["f0"]["height"][i])
        img, *_ = dataset[i]
        sx, sy = w / img.shape[1], h / img.shape[0]
        stored = np.frombuffer(r.read(i, "boxes"), np.float32).reshape(-1, 4)
        np.testing.assert_allclose(stored, b * np.array([sx, sy, sx, sy], np.float32), rtol=1e-6)
        assert (r.metadata["f3"]["width"][i], r.metadata["f3"]["height"][i]) == (w, h)


def test_max_rows_and_no_geometry(scene_file, dataset):
    loader = Loader(scene_file, batch_size=N, num_workers=1, pipelines={
        "image": None, "mask": None, "boxes": [RaggedDecoder(follows=None, max_rows=2)],
        "labels": [RaggedDecoder(max_rows=2)]})
    boxes, labels = next(iter(loader))
    assert boxes.data.shape == (N, 2, 4) and labels.data.shape == (N, 2)
    for i in range(N):
        _, _, l, _ = dataset[i]
        assert int(labels.counts[i]) == min(2, len(l))
        np.testing.assert_array_equal(labels.data[i, :len(l[:2])].numpy(), l[:2])


def test_torchvision_targets(scene_file):
    loader = Loader(scene_file, batch_size=8, num_workers=1, seed=0,
                    pipelines={"image": [CenterCropRGBImageDecoder((64, 64), 1.0)], **targets()})
    img, boxes, labels, mask = next(iter(loader))
    t = to_torchvision_targets(boxes, labels, masks=mask)
    assert len(t) == 8
    for i, d in enumerate(t):
        n = int(boxes.counts[i])
        assert d["boxes"].shape == (n, 4) and d["labels"].dtype == torch.int64 and d["masks"].shape == (n, 64, 64)
        for j in range(n):
            assert bool(((mask[i] == d["labels"][j]) == d["masks"][j].bool()).all())


BAD = [
    ("box outside its image", lambda img, b, l, m: (img, np.array([[0, 0, img.shape[1] + 5, 10]], np.float32),
                                                    np.array([1]), m), "boxes", "inside its"),
    ("mask of another size", lambda img, b, l, m: (img, b, l, m[:-3]), "mask", "mask is"),
    ("wrong dtype", lambda img, b, l, m: (img, b.astype(np.float64), l, m), "boxes", "float64"),
    ("wrong row shape", lambda img, b, l, m: (img, b.reshape(-1, 2), l, m), "boxes", "row shape"),
]


@pytest.mark.parametrize("name,corrupt,field,words", BAD, ids=[b[0] for b in BAD])
def test_bad_input_names_sample_and_field(tmp_path, name, corrupt, field, words):
    ds = scenes.SceneDataset(6, [], height=60, width=60)
    items = [ds[i] for i in range(6)]
    items[4] = corrupt(*scenes.scene(1, ds.bgs, 60, 60))
    with pytest.raises((ValueError, TypeError)) as e:
        write(tmp_path / "bad.beton", _fields(), items)
    msg = str(e.value)
    assert "4" in msg and field in msg and words in msg, msg


def test_follows_must_name_a_field_of_the_writer(tmp_path):
    for fields, words in [
        ({**_fields(), "boxes": RaggedArrayField(np.float32, (4,), follows="img", coords="xyxy")}, "'img'"),
        ({**_fields(), "labels": RaggedArrayField(np.int64, (), follows="mask")}, "xyxy boxes"),
        ({**_fields(), "mask": MaskField("labels")}, "'labels', which is not an RGBImageField"),
    ]:
        with pytest.raises(ValueError, match=words):
            DatasetWriter(str(tmp_path / "x.beton"), fields)


def _coco(tmp_path, ds, n):
    """A COCO annotation file and image folder for n scenes: polygons, and RLE for every third object."""
    from PIL import Image
    images, anns = [], []
    (tmp_path / "img").mkdir()
    for i in range(n):
        img, boxes, labels, _ = ds[i]
        Image.fromarray(img).save(tmp_path / "img" / f"{i}.png")
        images.append({"id": 100 + i, "file_name": f"{i}.png", "width": img.shape[1], "height": img.shape[0]})
        for j, (b, k) in enumerate(zip(boxes, labels)):
            x0, y0, x1, y1 = (float(v) for v in b)
            a = {"id": len(anns) + 1, "image_id": 100 + i, "category_id": int(k), "iscrowd": 0,
                 "bbox": [x0, y0, x1 - x0, y1 - y0]}
            if j % 3 == 2:
                m = np.zeros(img.shape[:2], np.uint8)
                m[int(y0):int(y1), int(x0):int(x1)] = 1
                flat = m.T.reshape(-1)
                change = np.flatnonzero(np.diff(np.concatenate([[0], flat, [1 - flat[-1]]])))
                runs = np.diff(np.concatenate([[0], change])).tolist()
                a["segmentation"] = {"size": list(img.shape[:2]), "counts": runs}
            else:
                a["segmentation"] = [[x0, y0, x1, y0, x1, y1, x0, y1]]
            anns.append(a)
    cats = [{"id": k + 1, "name": f"c{k}"} for k in range(len(scenes.COLOURS))]
    import json
    path = tmp_path / "ann.json"
    path.write_text(json.dumps({"images": images, "annotations": anns, "categories": cats}))
    return path


def test_coco_conversion(tmp_path):
    ds = scenes.SceneDataset(10, [], height=90, width=110)
    coco = CocoDetection(_coco(tmp_path, ds, 10), tmp_path / "img", masks=True)
    for i in range(10):
        _, b, l, m = ds[i]
        _, cb, cl, cm = coco[i]
        np.testing.assert_array_equal(cb, b)
        np.testing.assert_array_equal(cl, l)
        np.testing.assert_array_equal(cm, m)
    DatasetWriter(str(tmp_path / "coco.beton"), coco.fields(), num_workers=2,
                  progress=False).from_indexed_dataset(coco)
    loader = Loader(tmp_path / "coco.beton", batch_size=10, num_workers=1,
                    pipelines={"image": [SimpleRGBImageDecoder()], **targets()})
    img, boxes, labels, mask = next(iter(loader))
    for i in range(10):
        assert np.array_equal(mask[i].numpy(), ds[i][3])
        assert check_sample(img[i].numpy(), boxes.data[i, :int(boxes.counts[i])].numpy(),
                            labels.data[i, :int(labels.counts[i])].numpy(), mask[i].numpy()) == []


def test_coco_unknown_image_id(tmp_path):
    import json
    path = tmp_path / "ann.json"
    path.write_text(json.dumps({"images": [{"id": 1, "file_name": "a.png", "width": 4, "height": 4}],
                                "annotations": [{"id": 7, "image_id": 2, "category_id": 1, "bbox": [0, 0, 1, 1]}],
                                "categories": [{"id": 1}]}))
    with pytest.raises(ValueError, match="annotation 7 refers to image id 2"):
        CocoDetection(path, tmp_path)


def test_target_dataset_from_torchvision_style_items(tmp_path):
    from torchvision import tv_tensors
    ds = scenes.SceneDataset(6, [], height=64, width=80)

    class Items:
        def __len__(self):
            return 6

        def __getitem__(self, i):
            img, b, l, m = ds[i]
            return (tv_tensors.Image(torch.from_numpy(img).permute(2, 0, 1)),
                    {"boxes": tv_tensors.BoundingBoxes(torch.from_numpy(b), format="XYXY", canvas_size=(64, 80)),
                     "labels": torch.from_numpy(l), "masks": tv_tensors.Mask(torch.from_numpy(m))})

    path = write(tmp_path / "tv.beton", _fields(), TargetDataset(Items(), mask_key="masks"))
    loader = Loader(path, batch_size=6, num_workers=1, pipelines={"image": [SimpleRGBImageDecoder()], **targets()})
    img, boxes, labels, mask = next(iter(loader))
    for i in range(6):
        np.testing.assert_array_equal(img[i].numpy(), ds[i][0])
        np.testing.assert_array_equal(mask[i].numpy(), ds[i][3])
        np.testing.assert_array_equal(boxes.data[i, :int(boxes.counts[i])].numpy(), ds[i][1])


def test_keypoints_follow_the_image(tmp_path):
    """Each object's centre as a keypoint (x, y, visibility): after crops,
    flips and shifts it sits on its object's colour while visible."""
    ds = scenes.SceneDataset(32, [])

    def item(i):
        img, b, l, _ = ds[i]
        centres = np.concatenate([(b[:, :2] + b[:, 2:]) / 2, np.ones((len(b), 1), np.float32)], axis=1)
        return img, centres.reshape(-1, 1, 3).astype(np.float32), l

    fields = {"image": RGBImageField(write_mode="raw", max_resolution=180),
              "points": RaggedArrayField(np.float32, (1, 3), follows="image", coords="xy"),
              "labels": RaggedArrayField(np.int64, ())}
    path = write(tmp_path / "kp.beton", fields, [item(i) for i in range(32)], num_workers=2)
    loader = Loader(path, batch_size=8, num_workers=2, seed=2, pipelines={
        "image": [RandomResizedCropRGBImageDecoder((96, 96), scale=(0.3, 1.0)), RandomHorizontalFlip(),
                  RandomTranslate(padding=10)],
        "points": [RaggedDecoder()], "labels": [RaggedDecoder()]})
    visible = hidden = 0
    for img, points, labels in loader:
        for i in range(len(img)):
            lab = colour_label(img[i].numpy())
            n = int(points.counts[i])
            assert n == int(labels.counts[i])
            for (x, y, v), k in zip(points.data[i, :n, 0].tolist(), labels.data[i, :n].tolist()):
                inside = 0 <= x < 96 and 0 <= y < 96
                if v:
                    assert inside and lab[int(y), int(x)] == k, (x, y, k)
                    visible += 1
                else:
                    assert not inside or lab[int(y), int(x)] != k
                    hidden += 1
    assert visible > 40 and hidden > 0


def test_every_pool_writes_the_same_file(dataset, tmp_path):
    digests = set()
    for pool, workers in [(None, None), ("process", 2), ("thread", 3)]:
        p = tmp_path / f"{pool}.beton"
        DatasetWriter(str(p), _fields(150), num_workers=3, progress=False).from_indexed_dataset(
            dataset, pool=pool, pool_workers=workers, chunksize=5)
        digests.add(p.read_bytes())
    assert len(digests) == 1


def test_verify_decodes_masks(scene_file):
    assert Reader(str(scene_file)).verify() == []


def test_unfollowable_pipelines_are_refused(scene_file):
    from ffcv_go.transforms import ImageMixup
    with pytest.raises(ValueError, match="operation ImageMixup: it mixes images"):
        Loader(scene_file, batch_size=4, num_workers=1, pipelines={
            "image": [RandomResizedCropRGBImageDecoder((64, 64)), ImageMixup(0.2, True)], **targets()})
    with pytest.raises(ValueError, match='follows "photo", which is not an output'):
        Loader(scene_file, batch_size=4, num_workers=1, pipelines={
            "image": [RandomResizedCropRGBImageDecoder((64, 64))], **targets(), "mask": [MaskDecoder(follows="photo")]})


@pytest.mark.parametrize("flip", [False, True])
def test_drops_exactly_the_boxes_below_threshold(tmp_path, flip):
    """A centre crop at the stored size (no resampling) with or without a
    certain flip: the expected boxes, clips and drops are computed here
    from the crop rectangle, and must match to float precision."""
    ds = scenes.SceneDataset(40, [], height=150, width=190)
    path = write(tmp_path / "c.beton", _fields(), ds)
    c = int(0.6 * 150)
    top, left = (150 - c) // 2, (190 - c) // 2
    image = [CenterCropRGBImageDecoder((c, c), ratio=0.6)] + ([RandomHorizontalFlip(1.0)] if flip else [])
    min_size, min_area = 5.0, 60.0
    loader = Loader(path, batch_size=40, num_workers=2, pipelines={
        "image": image, "boxes": [RaggedDecoder(min_size=min_size, min_area=min_area)],
        "labels": [RaggedDecoder()], "mask": None})
    img, boxes, labels = next(iter(loader))
    dropped = 0
    for i in range(40):
        _, b, l, _ = ds[i]
        x = np.clip(b - np.array([left, top, left, top], np.float32), 0, c)
        w, h = x[:, 2] - x[:, 0], x[:, 3] - x[:, 1]
        keep = (w >= min_size) & (h >= min_size) & (w * h >= min_area) & (w > 0) & (h > 0)
        x = x[keep]
        if flip:
            x = np.stack([c - x[:, 2], x[:, 1], c - x[:, 0], x[:, 3]], axis=1)
        n = int(boxes.counts[i])
        assert n == keep.sum(), i
        np.testing.assert_allclose(boxes.data[i, :n].numpy(), x, atol=1e-4)
        np.testing.assert_array_equal(labels.data[i, :n].numpy(), l[keep])
        dropped += int((~keep).sum())
    assert dropped > 5


def test_targets_follow_a_view(scene_file):
    """Boxes and masks follow a view of the image (custom_field_mapper): the
    view's own draws, not those of the field's output."""
    views = {"a": PIPELINES["rrc+flip"](), "b": PIPELINES["rrc+flip"]()}
    loader = Loader(scene_file, batch_size=16, num_workers=2, seed=3, drop_last=False,
                    pipelines={"image": None, **views,
                               "boxes": [RaggedDecoder(follows="b", min_size=MIN_SIZE, min_area=MIN_AREA)],
                               "labels": [RaggedDecoder()], "mask": [MaskDecoder(follows="b")]},
                    custom_field_mapper={"a": "image", "b": "image"})
    problems, seen, differ = [], 0, 0
    for boxes, labels, mask, a, b in loader:
        for i in range(len(b)):
            n = int(boxes.counts[i])
            problems += check_sample(b[i].numpy(), boxes.data[i, :n].numpy(), labels.data[i, :n].numpy(),
                                     mask[i].numpy())
            seen += n
            differ += not torch.equal(a[i], b[i])
    assert not problems, "\n".join(problems[:10])
    assert seen > N and differ > N // 2


# ---- conversion against pycocotools and torchvision's targets -----------------------

@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # pycocotools' numpy 2 copy= warning
def test_polygons_rasterize_as_pycocotools():
    from pycocotools import mask as coco_mask
    from ffcv_go.detection import rasterize_polygon
    rng = np.random.default_rng(0)
    for _ in range(300):
        h, w = (int(v) for v in rng.integers(5, 90, 2))
        pts = rng.uniform([-3, -3], [w + 3, h + 3], (int(rng.integers(3, 9)), 2)).round(int(rng.integers(0, 3)))
        want = coco_mask.decode(coco_mask.frPyObjects([pts.reshape(-1).tolist()], h, w)[0]).astype(bool)
        np.testing.assert_array_equal(rasterize_polygon(pts, w, h), want)


def _crowd_coco(tmp_path, n=6, size=(70, 90)):
    """COCO annotations with overlapping polygons, uncompressed and compressed
    RLE, and crowd regions (compressed RLE, as COCO writes them)."""
    import json
    from PIL import Image
    from pycocotools import mask as coco_mask
    rng = np.random.default_rng(7)
    h, w = size
    (tmp_path / "img").mkdir()
    images, anns = [], []
    for i in range(n):
        Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)).save(tmp_path / "img" / f"{i}.png")
        images.append({"id": i + 1, "file_name": f"{i}.png", "width": w, "height": h})
        for j in range(int(rng.integers(1, 6))):
            crowd = j == 2
            x0, y0 = rng.uniform(-2, w - 10), rng.uniform(-2, h - 10)
            x1, y1 = x0 + rng.uniform(5, 40), y0 + rng.uniform(5, 30)
            poly = [x0, y0, x1, y0 + 3, x1 - 2, y1, x0 + 1, y1 - 4]
            a = {"id": len(anns) + 1, "image_id": i + 1, "category_id": int(rng.integers(1, 5)),
                 "iscrowd": int(crowd), "bbox": [x0, y0, x1 - x0, y1 - y0]}
            if crowd or j == 3:
                rle = coco_mask.merge(coco_mask.frPyObjects([poly], h, w))
                a["segmentation"] = {"size": [h, w], "counts": rle["counts"].decode()}
            else:
                a["segmentation"] = [poly]
            anns.append(a)
    path = tmp_path / "ann.json"
    path.write_text(json.dumps({"images": images, "annotations": anns,
                                "categories": [{"id": k, "name": f"c{k}"} for k in range(1, 5)]}))
    return path


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # pycocotools' numpy 2 copy= warning
def test_coco_masks_match_pycocotools(tmp_path):
    """The class map paints every object with its category as pycocotools
    rasterizes it, crowd regions with crowd_index; the instance map paints
    the non-crowd objects, in box order."""
    from pycocotools.coco import COCO
    ann = _crowd_coco(tmp_path)
    coco = COCO(str(ann))
    classes = CocoDetection(ann, tmp_path / "img", masks=True)
    instances = CocoDetection(ann, tmp_path / "img", masks="instances")
    assert classes.mask_dtype == np.uint8 and instances.mask_dtype == np.uint16
    crowds = 0
    for i, im in enumerate(classes.images):
        anns = coco.loadAnns(coco.getAnnIds(imgIds=im["id"]))
        want_class = np.zeros((im["height"], im["width"]), np.uint8)
        want_inst = np.zeros_like(want_class, dtype=np.uint16)
        k = 0
        for a in anns:
            m = coco.annToMask(a).astype(bool)
            if a["iscrowd"]:
                want_class[m] = 255
                crowds += 1
            else:
                want_class[m] = a["category_id"]
                k += 1
                want_inst[m] = k
        _, boxes, labels, cmap = classes[i]
        _, _, _, imap = instances[i]
        np.testing.assert_array_equal(cmap, want_class)
        np.testing.assert_array_equal(imap, want_inst)
        assert len(boxes) == len(labels) == k  # crowd regions have no box
        assert (boxes >= 0).all() and (boxes[:, 2] <= im["width"]).all() and (boxes[:, 3] <= im["height"]).all()
    assert crowds > 0
    with pytest.raises(ValueError, match="crowd_index 3 is a category id"):
        CocoDetection(ann, tmp_path / "img", masks=True, crowd_index=3)


def test_coco_instance_masks_through_the_loader(tmp_path):
    """Per-box masks from the instance map, after a flip, are each box's
    own object as pycocotools rasterizes it (later objects over earlier)."""
    ann = _crowd_coco(tmp_path)
    coco = CocoDetection(ann, tmp_path / "img", masks="instances")
    DatasetWriter(str(tmp_path / "c.beton"), coco.fields(write_mode="raw"), progress=False).from_indexed_dataset(coco)
    loader = Loader(tmp_path / "c.beton", batch_size=len(coco), num_workers=1, pipelines={
        "image": [SimpleRGBImageDecoder(), RandomHorizontalFlip(1.0)],
        "boxes": [RaggedDecoder(min_size=0, min_area=0)], "labels": [RaggedDecoder()],
        "mask": [MaskDecoder(instances="boxes")]})
    img, boxes, labels, inst = next(iter(loader))
    for i, t in enumerate(to_torchvision_targets(boxes, labels, instance_masks=inst)):
        imap = coco[i][3][:, ::-1]
        kept = int(boxes.counts[i])
        assert kept == len(coco[i][1]) and t["masks"].shape[0] == kept
        for j in range(kept):
            np.testing.assert_array_equal(t["masks"][j].numpy(), (imap == j + 1).astype(np.uint8))


def test_target_dataset_reads_what_torchvision_gives(tmp_path):
    """(N, H, W) object masks, as class or instance maps; the boxes' own
    format; boxes clipped to the image; label maps never wrapped."""
    from torchvision import tv_tensors
    ds = scenes.SceneDataset(6, [], height=64, width=80)

    def tv_item(i, fmt):
        img, b, l, m = ds[i]
        objects = np.stack([m == k for k in l]) if len(l) else np.zeros((0, 64, 80), bool)
        xyxy = b.copy()
        xyxy[:, 2] += 3  # poking past the right edge: clipped back
        if fmt == "XYWH":
            raw = np.concatenate([xyxy[:, :2], xyxy[:, 2:] - xyxy[:, :2]], axis=1)
        elif fmt == "CXCYWH":
            raw = np.concatenate([(xyxy[:, :2] + xyxy[:, 2:]) / 2, xyxy[:, 2:] - xyxy[:, :2]], axis=1)
        else:
            raw = xyxy
        boxes = tv_tensors.BoundingBoxes(torch.from_numpy(raw), format=fmt, canvas_size=(64, 80))
        return (tv_tensors.Image(torch.from_numpy(img).permute(2, 0, 1)),
                {"boxes": boxes, "labels": torch.from_numpy(l), "masks": tv_tensors.Mask(torch.from_numpy(objects))})

    for fmt in ["XYXY", "XYWH", "CXCYWH"]:
        items = [tv_item(i, fmt) for i in range(6)]
        classes, instances = TargetDataset(items, mask_key="masks"), TargetDataset(items, mask_key="masks",
                                                                                    instance_masks=True)
        for i in range(6):
            _, b, l, m = ds[i]
            img, cb, cl, cm = classes[i]
            want = b.copy()
            want[:, 2] = np.minimum(want[:, 2] + 3, 80)
            np.testing.assert_allclose(cb, want, atol=1e-4)
            np.testing.assert_array_equal(cm, m)
            np.testing.assert_array_equal(instances[i][3], sum((m == k) * (j + 1) for j, k in enumerate(l))
                                          if len(l) else np.zeros((64, 80)))
    # Labels above 255: a uint8 field refuses them, a uint16 field keeps them.
    big = [(np.zeros((8, 8, 3), np.uint8), {"boxes": np.array([[0, 0, 4, 4]], np.float32), "labels": np.array([300]),
                                            "masks": np.full((1, 8, 8), True)})]
    fields = {**_fields(), "mask": MaskField("image")}
    with pytest.raises(ValueError, match="outside 0..255: use MaskField\\(dtype=np.uint16\\)"):
        write(tmp_path / "big8.beton", fields, TargetDataset(big, mask_key="masks"))
    path = write(tmp_path / "big16.beton", {**_fields(), "mask": MaskField("image", np.uint16)},
                 TargetDataset(big, mask_key="masks"))
    _, _, _, mask = next(iter(Loader(path, batch_size=1, num_workers=1, pipelines={
        "image": [SimpleRGBImageDecoder()], **targets()})))
    assert mask.numpy().dtype == np.uint16 and int(mask.numpy().max()) == 300


# ---- Python stages after the geometry the targets follow ----------------------------------------

class _Invert(Operation):
    """A custom operation (numpy, FFCV's protocol): 255 - x. It moves no
    pixel, but nothing tells the loader so unless it is wrapped in Photometric."""

    def declare_state_and_memory(self, previous_state):
        return previous_state, AllocationQuery(previous_state.shape, previous_state.dtype)

    def generate_code(self):
        def code(inp, dst):
            dst[:len(inp)] = 255 - inp
            return dst[:len(inp)]
        return code


def _small(size=48):
    """A followed image: a centre crop, then the tensor layout ops."""
    return [CenterCropRGBImageDecoder((size, size), 1.0), ToTensor(), ToTorchImage()]


@pytest.mark.parametrize("stage, words", [
    (lambda: tv1.Resize(24), "operation 3 (Resize)"),
    (lambda: tv2.RandomHorizontalFlip(1.0), "operation 3 (RandomHorizontalFlip)"),
    (lambda: tv2.Compose([tv2.ColorJitter(0.2), tv2.RandomResizedCrop(24)]), "(Compose with RandomResizedCrop)"),
    (lambda: torch.nn.Sequential(tv1.Normalize([0.5] * 3, [0.2] * 3), tv1.CenterCrop(20)),
     "(Sequential with CenterCrop)"),
    (lambda: ModuleWrapper(lambda x: x.flip(-1)), "operation 3 (<lambda>)"),
    (lambda: type("MyNormalize", (tv2.Normalize,), {})([0.5] * 3, [0.2] * 3), "(MyNormalize)"),  # may do more
    (lambda: View(torch.int16), "operation 3 (View)"),  # two bytes a value: the pixels shift
])
def test_python_stages_that_may_move_pixels_are_refused(scene_file, stage, words):
    """A torch transform after the Go ops of an image that targets follow
    would move its pixels and leave the boxes behind: the Loader refuses it
    when it is built, naming the stage and the output that follows."""
    with pytest.raises(ValueError, match='output "boxes" follows "image", whose operation 3 ') as e:
        Loader(scene_file, batch_size=4, num_workers=1, pipelines={"image": _small() + [stage()], **targets()})
    assert words in str(e.value) and "Photometric(...)" in str(e.value)


def test_custom_operations_before_the_layout_ops_are_refused(scene_file):
    with pytest.raises(ValueError, match=r'output "boxes" follows "image", whose operation 1 \(_Invert\)'):
        Loader(scene_file, batch_size=4, num_workers=1, pipelines={
            "image": [CenterCropRGBImageDecoder((48, 48), 1.0), _Invert(), ToTensor()], **targets()})


@pytest.mark.parametrize("how", ["mask", "view", "pipeline_spec"])
def test_every_follower_refuses_a_stage_that_may_move_pixels(scene_file, how):
    """The same rule for a mask alone, and for targets following a
    custom_field_mapper view or a PipelineSpec output."""
    moved = _small() + [tv2.Resize(24)]
    kw = {}
    if how == "mask":
        pipelines = {"image": moved, "boxes": None, "labels": None, "mask": [MaskDecoder()]}
        want = 'output "mask" follows "image"'
    elif how == "view":
        pipelines = {"image": _small(), "b": moved, "boxes": [RaggedDecoder(follows="b")], "labels": None,
                     "mask": None}
        kw = {"custom_field_mapper": {"b": "image"}}
        want = 'output "boxes" follows "b"'
    else:
        pipelines = {"image": _small(), "b": PipelineSpec("image", moved[0], moved[1:]),
                     "boxes": None, "labels": None, "mask": [MaskDecoder(follows="b")]}
        want = 'output "mask" follows "b"'
    with pytest.raises(ValueError, match=want + r", whose operation 3 \(Resize\)"):
        Loader(scene_file, batch_size=4, num_workers=1, pipelines=pipelines, **kw)


def test_photometric_stages_are_followed(scene_file):
    """torchvision's photometric transforms, ffcv_go's tensor ops and code
    wrapped in Photometric pass: the boxes are those of the image without
    them, and each stage ran."""
    def batches(extra, size=48):
        loader = Loader(scene_file, batch_size=8, num_workers=1, seed=5, pipelines={
            "image": _small(size) + extra, **targets()})
        return next(iter(loader))

    img, boxes, labels, mask = batches([])
    cases = [
        ([tv2.ToDtype(torch.float32, scale=True), tv2.Normalize([0.5] * 3, [0.25] * 3)],
         lambda x: ((x.float() / 255) - 0.5) / 0.25),
        ([tv1.ConvertImageDtype(torch.float32), tv1.Grayscale(3)], None),
        ([tv2.Compose([tv2.RandomApply([tv2.ColorJitter(0.4, 0.4)], p=0.8), tv2.RandomGrayscale(0.2),
                       tv2.GaussianBlur(3)]), torch.nn.Sequential(tv1.RandomInvert(0.5), torch.nn.Identity())], None),
        ([Photometric(lambda x: 255 - x)], lambda x: 255 - x),
        ([Photometric(tv1.Compose([tv1.RandomInvert(1.0), lambda x: x.float()]))], lambda x: (255 - x).float()),
        ([Convert(torch.float16), ToDevice("cpu")], lambda x: x.half()),
        ([View(torch.int8)], lambda x: x.view(torch.int8)),
    ]
    for extra, expect in cases:
        img2, boxes2, labels2, mask2 = batches(extra)
        assert torch.equal(boxes2.data, boxes.data) and torch.equal(boxes2.counts, boxes.counts)
        assert torch.equal(mask2, mask) and img2.shape[-2:] == img.shape[-2:]
        if expect is not None:
            assert torch.allclose(img2.float(), expect(img).float(), atol=1e-3)
    # A custom operation of the user's wrapped in Photometric runs as itself.
    loader = Loader(scene_file, batch_size=8, num_workers=1, seed=5, pipelines={
        "image": [CenterCropRGBImageDecoder((48, 48), 1.0), Photometric(_Invert()), ToTensor(), ToTorchImage()],
        **targets()})
    img2, boxes2, _, _ = next(iter(loader))
    assert torch.equal(img2, 255 - img) and torch.equal(boxes2.data, boxes.data)


def test_photometric_refuses_what_it_cannot_mark():
    with pytest.raises(TypeError, match="RandomHorizontalFlip is built in"):
        Photometric(RandomHorizontalFlip())
    with pytest.raises(TypeError, match="wraps a callable or an Operation"):
        Photometric(3)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # pycocotools' numpy 2 copy= warning
def test_target_dataset_through_torchvisions_coco_wrapper(tmp_path):
    """torchvision's CocoDetection through its real v2 wrapper, masks asked
    for: an image without annotations (COCO has about a thousand) comes
    with no boxes, labels or masks at all; it is written with an empty map.
    A dataset's own errors name the item."""
    import json
    from PIL import Image
    from torchvision.datasets import CocoDetection as TVCoco, wrap_dataset_for_transforms_v2
    ds = scenes.SceneDataset(4, [], height=60, width=80)
    ann = _coco(tmp_path, ds, 4)
    doc = json.loads(ann.read_text())
    Image.fromarray(np.full((60, 80, 3), 128, np.uint8)).save(tmp_path / "img" / "empty.png")
    for x in doc["images"]:  # the image without annotations comes third (torchvision sorts by id)
        x["id"] += x["id"] >= 102
    for a in doc["annotations"]:
        a["image_id"] += a["image_id"] >= 102
    doc["images"].insert(2, {"id": 102, "file_name": "empty.png", "width": 80, "height": 60})
    ann.write_text(json.dumps(doc))
    tv = wrap_dataset_for_transforms_v2(TVCoco(str(tmp_path / "img"), str(ann)),
                                        target_keys={"boxes", "labels", "masks"})
    assert "masks" not in tv[2][1]  # what the wrapper gives an image without annotations
    items = TargetDataset(tv, mask_key="masks")
    fields = {**_fields(), "mask": MaskField("image")}
    path = write(tmp_path / "coco.beton", fields, items)
    loader = Loader(path, batch_size=5, num_workers=1, order=OrderOption.SEQUENTIAL, pipelines={
        "image": [SimpleRGBImageDecoder()], **targets()})
    _, boxes, labels, mask = next(iter(loader))
    assert int(boxes.counts[2]) == int(labels.counts[2]) == 0
    assert not mask[2].numpy().any()
    for i, k in ((0, 0), (1, 1), (3, 2), (4, 3)):
        assert int(boxes.counts[i]) == len(ds[k][1])
        np.testing.assert_array_equal(mask[i].numpy(), items[i][3])
    assert sum(mask[i].numpy().any() for i in range(5)) > 1

    class Broken:
        def __len__(self):
            return 3

        def __getitem__(self, i):
            if i == 2:
                return {}["masks"]
            return tv[i]
    with pytest.raises(KeyError, match="dataset item 2: no key 'masks'"):
        write(tmp_path / "broken.beton", fields, TargetDataset(Broken(), mask_key="masks"))
    with pytest.raises(KeyError, match="dataset item 2: no key 'masks'"):
        DatasetWriter(str(tmp_path / "b2.beton"), {"x": IntField()}, progress=False).from_indexed_dataset(
            FnDataset(3, lambda i: i if i < 2 else {}["masks"]), pool=None)


def _one_step(model, images, targets):
    """One SGD step in training mode: the losses, and whether every trained
    parameter that got a gradient moved."""
    model.train()
    before = {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.01)
    losses = model(images, targets)
    loss = sum(losses.values())
    opt.zero_grad()
    loss.backward()
    opt.step()
    moved = [n for n, p in model.named_parameters() if p.grad is not None and not torch.equal(p.detach(), before[n])]
    return losses, moved


def test_to_torchvision_images_layouts():
    """NHWC uint8 (the loader's), ToTorchImage's NCHW view and numpy: the
    same (3, H, W) float32 images in [0, 1]."""
    from ffcv_go.detection import to_torchvision_images
    nhwc = torch.randint(0, 256, (2, 5, 7, 3), dtype=torch.uint8)
    for batch in (nhwc, nhwc.permute(0, 3, 1, 2), nhwc.numpy()):
        out = to_torchvision_images(batch)
        assert len(out) == 2 and all(x.shape == (3, 5, 7) and x.dtype == torch.float32 for x in out)
        torch.testing.assert_close(out[1], nhwc[1].permute(2, 0, 1).float() / 255)
    with pytest.raises(ValueError, match="shape"):
        to_torchvision_images(nhwc[0])


def test_a_torchvision_faster_rcnn_trains_on_a_batch(scene_file, dataset):
    """The loader's batch -> to_torchvision_images + to_torchvision_targets
    -> one training step of torchvision's Faster R-CNN: finite losses, and
    the weights move."""
    from torchvision.models.detection import fasterrcnn_mobilenet_v3_large_320_fpn
    from ffcv_go.detection import to_torchvision_images
    torch.manual_seed(0)
    num_classes = 1 + max(int(dataset[i][2].max(initial=0)) for i in range(4))
    model = fasterrcnn_mobilenet_v3_large_320_fpn(weights=None, weights_backbone=None, num_classes=num_classes,
                                                  min_size=96, max_size=96)
    loader = Loader(scene_file, batch_size=2, num_workers=1, order=OrderOption.SEQUENTIAL, pipelines={
        "image": [ResizePadRGBImageDecoder((96, 96)), RandomHorizontalFlip()], **targets(), "mask": None})
    images, boxes, labels = next(iter(loader))
    assert images.shape == (2, 96, 96, 3) and images.dtype == torch.uint8
    losses, moved = _one_step(model, to_torchvision_images(images), to_torchvision_targets(boxes, labels))
    assert set(losses) >= {"loss_classifier", "loss_box_reg", "loss_objectness", "loss_rpn_box_reg"}
    assert all(torch.isfinite(v) for v in losses.values()), losses
    assert moved


def test_a_torchvision_mask_rcnn_trains_on_a_batch(tmp_path):
    """Mask R-CNN: per-box masks from an instance map decoded with
    MaskDecoder(instances="boxes"), after ToTorchImage."""
    from torchvision.models.detection import maskrcnn_resnet50_fpn
    from ffcv_go.detection import to_torchvision_images
    from ffcv_go.transforms import ToTensor, ToTorchImage
    torch.manual_seed(0)
    ann = _crowd_coco(tmp_path, n=2)
    coco = CocoDetection(ann, tmp_path / "img", masks="instances")
    DatasetWriter(str(tmp_path / "c.beton"), coco.fields(write_mode="raw"), progress=False).from_indexed_dataset(coco)
    loader = Loader(tmp_path / "c.beton", batch_size=2, num_workers=1, pipelines={
        "image": [SimpleRGBImageDecoder(), RandomHorizontalFlip(), ToTensor(), ToTorchImage()],
        "boxes": [RaggedDecoder(min_size=1, min_area=1)], "labels": [RaggedDecoder()],
        "mask": [MaskDecoder(instances="boxes")]})
    images, boxes, labels, inst = next(iter(loader))
    model = maskrcnn_resnet50_fpn(weights=None, weights_backbone=None, num_classes=5, min_size=64, max_size=96)
    targets = to_torchvision_targets(boxes, labels, instance_masks=inst)
    assert targets[0]["masks"].shape[1:] == (70, 90)
    losses, moved = _one_step(model, to_torchvision_images(images), targets)
    assert "loss_mask" in losses and all(torch.isfinite(v) for v in losses.values()), losses
    assert moved
