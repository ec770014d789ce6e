"""One geometry per op: boxes, masks and keypoints follow every geometric
op of the image they belong to -- seeded or not, in the field's own output
or in a view, for any worker count, with photometric ops between them --
against two truths: the painted pixels of the image (tests/python/
_target_truth.py), and torchvision.transforms.v2.functional applied with
the parameters the Label* ops report."""
import numpy as np
import pytest
import torch

from _target_truth import MIN_AREA, MIN_SIZE, check_sample, scenes
from conftest import write
from ffcv_go import Loader
from ffcv_go.detection import COCO_PERSON_KEYPOINT_FLIP, Ragged, to_torchvision_targets
from ffcv_go.fields import IntField, MaskField, RaggedArrayField, RGBImageField
from ffcv_go.fields.decoders import (CenterCropRGBImageDecoder, IntDecoder, MaskDecoder, RaggedDecoder,
                                     RandomResizedCropRGBImageDecoder, ResizePadRGBImageDecoder)
from ffcv_go.transforms import (GaussianBlur, LabelTranslate, RandomColorJitter, RandomErasing,
                                RandomHorizontalFlip, RandomResizedCrop, RandomTranslate, RandomVerticalFlip)
from ffcv_go.transforms.flip import LabelRandomHorizontalFlip
from ffcv_go.transforms.image import RandomCrop
from ffcv_go.transforms.resized_crop import CenterCrop, CornerCrop, LabelRandomResizedCrop, PadRGBImageDecoder

import make_dataset  # noqa: E402  (bench/, on the path through _target_truth)

N = 48


def instance_map(boxes, shape):
    """The (H, W) uint16 map with box k's pixels painted k + 1 (scenes' objects never overlap)."""
    m = np.zeros(shape, np.uint16)
    for k, (x0, y0, x1, y1) in enumerate(boxes.astype(int)):
        m[y0:y1, x0:x1] = k + 1
    return m


def items(ds):
    out = []
    for i in range(len(ds)):
        img, b, l, m = ds[i]
        out.append((img, b, l, m, instance_map(b, m.shape), i))
    return out


def fields(max_resolution):
    return {"image": RGBImageField(write_mode="raw", max_resolution=max_resolution),
            "boxes": RaggedArrayField(np.float32, (4,), follows="image", coords="xyxy"),
            "labels": RaggedArrayField(np.int64, (), follows="boxes"),
            "mask": MaskField("image"),
            "inst": MaskField("image", dtype=np.uint16),
            "idx": IntField()}


@pytest.fixture(scope="module")
def scene_file(tmp_path_factory):
    # Scenes of 120 to 260 pixels a side over real photos, stored at
    # max_resolution 200: boxes and masks of the larger ones are resized
    # with the image before any crop; PadRGBImageDecoder pads the others.
    ds = scenes.SceneDataset(N, make_dataset.find_photos()[:3])
    return write(tmp_path_factory.mktemp("geo") / "scenes.beton", fields(200), items(ds), num_workers=2)


def sd(seed, k):
    """The k-th op's seed in a seeded pipeline (None: unseeded)."""
    return None if seed is None else seed + k


# Every geometric op, each pipeline with photometric ops between geometric
# ones (at settings that keep the objects' colours, which the truth reads:
# the torchvision test below runs them at full strength).
MATRIX = {
    "rrc_decoder+fused_flip": lambda s: [
        RandomResizedCropRGBImageDecoder((96, 128), scale=(0.1, 1.0), seed=sd(s, 1)),
        RandomHorizontalFlip(seed=sd(s, 2))],
    "center_decoder+jitter+flip+vflip": lambda s: [
        CenterCropRGBImageDecoder((112, 112), ratio=0.8), RandomColorJitter(0.0, seed=sd(s, 3)),
        RandomHorizontalFlip(seed=sd(s, 4)), RandomVerticalFlip(seed=sd(s, 5))],
    "resize_pad+blur+flip": lambda s: [
        ResizePadRGBImageDecoder((128, 112), scale=(0.6, 1.0), seed=sd(s, 6)),
        GaussianBlur(1.0, kernel_size=3, sigma=(0.1, 0.4), seed=sd(s, 7)), RandomHorizontalFlip(seed=sd(s, 8))],
    "center+rrc+erasing+translate": lambda s: [
        CenterCropRGBImageDecoder((140, 140), ratio=1.0),
        RandomResizedCrop(scale=(0.3, 1.0), ratio=(0.75, 4 / 3), size=100, seed=sd(s, 9)),
        RandomErasing(0.0, seed=sd(s, 10)), RandomTranslate(padding=16, seed=sd(s, 11))],
    "rrc+random_crop+center_crop": lambda s: [
        RandomResizedCropRGBImageDecoder((120, 120), scale=(0.3, 1.0), seed=sd(s, 12)),
        RandomCrop((100, 90), padding=8, seed=sd(s, 13)), CenterCrop(80, ratio=0.9)],
    "rrc+vflip+corner_crop": lambda s: [
        RandomResizedCropRGBImageDecoder((120, 120), scale=(0.3, 1.0), seed=sd(s, 14)),
        RandomVerticalFlip(seed=sd(s, 15)), CornerCrop(72, ratio=0.8, corner="bottom_right")],
    # FFCV-SSL's decoders: CornerCrop first in a pipeline is one.
    "corner_decoder+flip+translate": lambda s: [
        CornerCrop(96, ratio=0.8, corner="bottom_left"), RandomHorizontalFlip(seed=sd(s, 16)),
        RandomTranslate(padding=10, seed=sd(s, 17))],
    "pad_decoder+flip+vflip": lambda s: [
        PadRGBImageDecoder(), RandomHorizontalFlip(seed=sd(s, 18)), RandomVerticalFlip(seed=sd(s, 19))],
}


def targets(follows, **kw):
    return {"boxes": [RaggedDecoder(follows=follows, min_size=MIN_SIZE, min_area=MIN_AREA, **kw)],
            "labels": [RaggedDecoder()], "mask": [MaskDecoder(follows=follows)],
            "inst": [MaskDecoder(follows=follows, instances="boxes")], "idx": None}


def loader(path, image_ops, view, workers, twin=None, seed=3):
    """The image pipeline as the field's output ("image") or as a view
    ("v"); targets follow it, or `twin` (another output of the same field)."""
    name = "v" if view else "image"
    pipes = {"image": image_ops if not view else None, **targets(twin or name)}
    mapper = {}
    if view:
        pipes["v"] = image_ops
        mapper["v"] = "image"
    return Loader(path, batch_size=16, num_workers=workers, seed=seed, drop_last=False, pipelines=pipes,
                  custom_field_mapper=mapper), name


def named(loader_, batch):
    names = [n for n in ["image", "boxes", "labels", "mask", "inst"] if n in loader_._field_names
             and (n != "image" or loader_._pipelines_arg.get("image") is not None)]
    names += list(loader_.custom_field_mapper)
    return dict(zip(names, batch))


def problems_of(loader_, image_name, epochs=1):
    problems, seen = [], 0
    for _ in range(epochs):
        for batch in loader_:
            b = named(loader_, batch)
            img, boxes, labels, mask, inst = b[image_name], b["boxes"], b["labels"], b["mask"], b["inst"]
            for i in range(len(img)):
                n = int(boxes.counts[i])
                found = check_sample(img[i].numpy(), boxes.data[i, :n].numpy(), labels.data[i, :n].numpy(),
                                     mask[i].numpy())
                # Instance j + 1 lies exactly on the pixels of kept box j's label.
                lab, ids = mask[i].numpy(), inst[i].numpy()
                for j in range(n):
                    if not np.array_equal(ids == j + 1, lab == int(labels.data[i, j])):
                        found.append(f"instance {j + 1} is not the pixels of label {int(labels.data[i, j])}")
                if (ids > n).any():
                    found.append(f"instance ids above the {n} kept boxes")
                problems += [f"sample {int(loader_._last_ids[i])}: {p}" for p in found]
                seen += n
    return problems, seen


@pytest.mark.parametrize("view", [False, True], ids=["output", "view"])
@pytest.mark.parametrize("seeded", [False, True], ids=["unseeded", "seeded"])
@pytest.mark.parametrize("name", list(MATRIX))
def test_targets_follow_every_geometric_op(scene_file, name, seeded, view):
    seed = 9 if seeded else None
    one, image = loader(scene_file, MATRIX[name](seed), view, workers=1)
    problems, seen = problems_of(one, image, epochs=2)
    assert not problems, "\n".join(problems[:10])
    assert seen > N
    # Three workers: the same batches, bit for bit.
    one, _ = loader(scene_file, MATRIX[name](seed), view, workers=1)
    three, _ = loader(scene_file, MATRIX[name](seed), view, workers=3)
    for a, b in zip(one, three):
        for x, y in zip(a, b):
            x, y = (x.data, y.data) if isinstance(x, Ragged) else (x, y)
            assert torch.equal(x, y)


@pytest.mark.parametrize("seeded", [False, True], ids=["unseeded", "seeded"])
@pytest.mark.parametrize("name", list(MATRIX))
def test_a_follower_with_another_key_is_caught(scene_file, name, seeded):
    """The mutation check: targets handed another key (they follow a twin
    view whose draws differ: another view name, or other seeds) fail the
    truth above."""
    seed = 9 if seeded else None
    twin_ops = MATRIX[name](None if seed is None else seed + 100)
    pipes = {"image": MATRIX[name](seed), "twin": twin_ops, **targets("twin")}
    ld = Loader(scene_file, batch_size=16, num_workers=2, seed=3, drop_last=False, pipelines=pipes,
                custom_field_mapper={"twin": "image"})
    problems, _ = problems_of(ld, "image")
    assert len(problems) > 5, name


def test_seeded_crop_keeps_masks_on_their_instances(scene_file):
    """The case users hit: a seeded random-resized crop and a flip. Every
    loaded mask covers its instance's pixels, and the image is the crop
    LabelRandomResizedCrop with the same seed reports."""
    ld = Loader(scene_file, batch_size=16, num_workers=2, seed=0, drop_last=False, pipelines={
        "image": [RandomResizedCropRGBImageDecoder((64, 64), scale=(0.25, 1.0), seed=9), RandomHorizontalFlip()],
        **targets("image"),
        "crop": [LabelRandomResizedCrop((64, 64), seed=9, scale=(0.25, 1.0), ratio=(3 / 4, 4 / 3))],
        "plain": [RandomResizedCropRGBImageDecoder((64, 64), scale=(0.25, 1.0), seed=9)]},
        custom_field_mapper={"crop": "image", "plain": "image"})
    problems, seen = problems_of(ld, "image")
    assert not problems and seen > N // 2, problems[:5]
    for batch in ld:
        b = named(ld, batch)
        for i in range(len(b["crop"])):
            w, h, top, left, ch, cw = b["crop"][i].tolist()
            img = b["image"][i].numpy()
            assert np.array_equal(img, b["plain"][i].numpy()) or np.array_equal(img[:, ::-1], b["plain"][i].numpy())
            assert 0 <= top and top + ch <= h and 0 <= left and left + cw <= w


# ---- torchvision's truth -------------------------------------------------------

def test_targets_match_torchvision_with_the_reported_parameters(tmp_path):
    """Boxes, class maps and instance maps equal torchvision's v2 functional
    ops (resized_crop, horizontal_flip, pad + crop) applied to the stored
    targets with the crop, flip and shift the Label* ops report, with colour
    jitter, blur and erasing at full strength between them. Maps are
    compared with NEAREST_EXACT resizing (the source pixel under each
    output pixel's centre, as the image's own resize aligns); torchvision's
    default for masks, NEAREST, takes the pixel under each output pixel's
    corner, half a pixel off the image."""
    from torchvision import tv_tensors
    from torchvision.transforms import InterpolationMode
    from torchvision.transforms.v2 import functional as F
    ds = scenes.SceneDataset(32, make_dataset.find_photos()[:2], height=180, width=240)
    path = write(tmp_path / "tv.beton", fields(None), items(ds))
    out, pad = (96, 128), 12
    image = [RandomResizedCropRGBImageDecoder(out, scale=(0.2, 1.0), seed=1), RandomColorJitter(1.0, seed=11),
             RandomHorizontalFlip(seed=2), GaussianBlur(1.0, 3, (0.5, 1.5), seed=12),
             RandomTranslate(pad, seed=3), RandomErasing(0.7, seed=13)]
    ld = Loader(path, batch_size=8, num_workers=2, seed=5, drop_last=False, pipelines={
        "image": image, **targets("image"),
        "idx": [IntDecoder(), LabelRandomHorizontalFlip(seed=2), LabelTranslate(pad, seed=3)],
        "crop": [LabelRandomResizedCrop(out, seed=1, scale=(0.2, 1.0), ratio=(3 / 4, 4 / 3))]},
        custom_field_mapper={"crop": "image"})
    checked = dropped = flipped = 0
    for _ in range(2):
        for img, boxes, labels, mask, inst, idx, crop in ld:
            for i in range(len(img)):
                k, flip, ty, tx = idx[i].tolist()  # LabelTranslate: (dy + pad, dx + pad)
                _, b, l, m, im, _ = items_of(ds, int(k))
                w, h, top, left, ch, cw = crop[i].tolist()
                assert (w, h) == (240, 180)
                tb = tv_tensors.BoundingBoxes(torch.from_numpy(b), format="XYXY", canvas_size=(h, w))
                tm = torch.from_numpy(np.stack([m.astype(np.int32), im.astype(np.int32)]))
                tb = F.resized_crop(tb, top, left, ch, cw, list(out))
                tm = F.resized_crop(tm, top, left, ch, cw, list(out), interpolation=InterpolationMode.NEAREST_EXACT)
                if flip:
                    tb, tm = F.horizontal_flip(tb), F.horizontal_flip(tm)
                    flipped += 1
                tb = F.crop(F.pad(tb, [pad] * 4), int(ty), int(tx), *out)
                tm = F.crop(F.pad(tm, [pad] * 4, fill=0), int(ty), int(tx), *out)
                tb = tb.numpy()
                bw, bh = tb[:, 2] - tb[:, 0], tb[:, 3] - tb[:, 1]
                keep = (bw > 0) & (bh > 0) & (bw >= MIN_SIZE) & (bh >= MIN_SIZE) & (bw * bh >= MIN_AREA)
                n = int(boxes.counts[i])
                assert n == int(keep.sum()), int(k)
                np.testing.assert_allclose(boxes.data[i, :n].numpy(), tb[keep], atol=1e-3)
                np.testing.assert_array_equal(labels.data[i, :n].numpy(), l[keep])
                want_mask = tm[0].numpy()
                renumber = np.zeros(len(b) + 1, np.int32)
                renumber[1:][keep] = np.arange(1, n + 1)
                want_inst = renumber[tm[1].numpy()]
                np.testing.assert_array_equal(mask[i].numpy(), want_mask)
                np.testing.assert_array_equal(inst[i].numpy(), want_inst)
                checked += 1
                dropped += int((~keep).sum())
    assert checked == 64 and dropped > 5 and 10 < flipped < 54


def items_of(ds, k):
    img, b, l, m = ds[k]
    return img, b, l, m, instance_map(b, m.shape), k


# ---- keypoints -------------------------------------------------------------------

def keypoint_items(ds):
    """Each object's keypoints: its left and right edge at mid-height (x, y, visible)."""
    out = []
    for i in range(len(ds)):
        img, b, l, _ = ds[i]
        cy = (b[:, 1] + b[:, 3]) / 2
        left = np.stack([b[:, 0] + 0.5, cy, np.full(len(b), 2)], axis=1)
        right = np.stack([b[:, 2] - 0.5, cy, np.full(len(b), 2)], axis=1)
        out.append((img, b, l, np.stack([left, right], axis=1).astype(np.float32)))
    return out


@pytest.fixture(scope="module")
def keypoint_file(tmp_path_factory):
    ds = scenes.SceneDataset(32, make_dataset.find_photos()[:2], height=150, width=200)
    return write(tmp_path_factory.mktemp("kp") / "kp.beton", {
        "image": RGBImageField(write_mode="raw"),
        "boxes": RaggedArrayField(np.float32, (4,), follows="image", coords="xyxy"),
        "labels": RaggedArrayField(np.int64, (), follows="boxes"),
        "points": RaggedArrayField(np.float32, (2, 3), follows="image", coords="xy")}, keypoint_items(ds))


def keypoint_problems(path, **points_kw):
    ld = Loader(path, batch_size=8, num_workers=2, seed=4, pipelines={
        "image": [RandomResizedCropRGBImageDecoder((96, 96), scale=(0.15, 0.6)), RandomHorizontalFlip(),
                  RandomTranslate(8)],
        "boxes": [RaggedDecoder(min_size=4, min_area=40)], "labels": [RaggedDecoder()],
        "points": [RaggedDecoder(**points_kw)]})
    problems, kept, dropped = [], 0, 0
    for _ in range(2):
        for img, boxes, labels, points in ld:
            for i in range(len(img)):
                n = int(boxes.counts[i])
                if int(points.counts[i]) != n:
                    problems.append(f"{int(points.counts[i])} keypoint rows for {n} boxes")
                    continue
                for j in range(n):
                    x0, y0, x1, y1 = boxes.data[i, j].tolist()
                    (lx, ly, lv), (rx, ry, rv) = points.data[i, j].tolist()
                    for x, y, v in ((lx, ly, lv), (rx, ry, rv)):
                        if v and not (x0 - 0.5 <= x <= x1 + 0.5 and y0 - 0.5 <= y <= y1 + 0.5):
                            problems.append(f"point ({x}, {y}) off its box {boxes.data[i, j].tolist()}")
                    if lv and rv and not lx < rx:
                        problems.append(f"left point {lx} is right of the right one {rx}")
                kept += n
                dropped += int(ld.reader.metadata["f1"]["rows"][int(ld._last_ids[i])]) - n
    return problems, kept, dropped


def test_keypoints_follow_their_boxes(keypoint_file):
    problems, kept, dropped = keypoint_problems(keypoint_file, flip_indices=[1, 0])
    assert not problems, problems[:5]
    assert kept > 30 and dropped > 30  # the crops drop many boxes, and the points with them
    # Mutation checks: without pairing, rows drift; without flip_indices, sides swap.
    assert any("keypoint rows" in p for p in keypoint_problems(keypoint_file, boxes=None, flip_indices=[1, 0])[0])
    assert any("right of the right" in p for p in keypoint_problems(keypoint_file)[0])


def test_keypoint_arguments_are_checked(keypoint_file):
    def build(**kw):
        return Loader(keypoint_file, batch_size=4, num_workers=1, pipelines={
            "image": [RandomResizedCropRGBImageDecoder((32, 32))], "boxes": [RaggedDecoder()],
            "labels": [RaggedDecoder()], "points": [RaggedDecoder(**kw)]})
    with pytest.raises(ValueError, match="flip_indices.*permutation"):
        build(flip_indices=[0, 0])
    with pytest.raises(ValueError, match="2 points"):
        build(flip_indices=[0, 1, 2])
    with pytest.raises(ValueError, match='boxes="labels" is not a boxes output'):
        build(boxes="labels")
    assert len(COCO_PERSON_KEYPOINT_FLIP) == 17 and sorted(COCO_PERSON_KEYPOINT_FLIP) == list(range(17))


def test_instance_masks_for_mask_rcnn(scene_file):
    ld = Loader(scene_file, batch_size=16, num_workers=2, seed=1, pipelines={
        "image": [RandomResizedCropRGBImageDecoder((80, 80), scale=(0.2, 1.0))], **targets("image")})
    img, boxes, labels, mask, inst = next(iter(ld))
    t = to_torchvision_targets(boxes, labels, instance_masks=inst)
    for i, d in enumerate(t):
        n = int(boxes.counts[i])
        assert d["masks"].shape == (n, 80, 80) and d["masks"].dtype == torch.uint8
        for j in range(n):
            assert torch.equal(d["masks"][j].bool(), mask[i] == d["labels"][j])
    with pytest.raises(ValueError, match="not both"):
        to_torchvision_targets(boxes, labels, masks=mask, instance_masks=inst)
