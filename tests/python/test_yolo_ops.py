"""YOLO's axis-aligned and photometric ops against OpenCV, the library
Ultralytics runs them with, on real photos (crops of Debian wallpapers) of
several sizes: LetterBox against cv2.resize + cv2.copyMakeBorder at
Ultralytics' sizes and padding, RandomHSV against cv2.cvtColor + cv2.LUT at
the gains LabelRandomHSV reports, and the boxes and keypoints that follow
them. OpenCV (opencv-python-headless, requirements-extra.txt) is needed for
the pixel comparisons; the geometry is checked without it."""
import platform
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import write
from ffcv_go import Loader
from ffcv_go.fields import IntField, RaggedArrayField, RGBImageField
from ffcv_go.fields.decoders import CenterCropRGBImageDecoder, IntDecoder, RaggedDecoder
from ffcv_go.loader import OrderOption
from ffcv_go.transforms import LabelLetterBox, LabelRandomHSV, LetterBox, RandomFlip, RandomHSV

# OpenCV's x86-64 wheels are the reference the ops are equal to byte for
# byte (their SIMD block width decides how cvtColor rounds, see
# core/imgproc/hsv.go); elsewhere a pixel may differ by one level.
TOL = 0 if platform.machine().lower() in ("x86_64", "amd64") else 1


def assert_close(got, want, msg=""):
    d = np.abs(got.astype(int) - want.astype(int))
    assert d.max() <= TOL, f"{msg}: {int((d > TOL).sum())} values differ by up to {d.max()}"


SIZES = [(97, 150), (130, 90), (64, 64), (50, 211), (120, 33), (120, 160)]  # (h, w)
N = len(SIZES)


def _cv2():
    return pytest.importorskip("cv2", reason="opencv-python-headless (requirements-extra.txt) is not installed")


def _photos():
    sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
    import make_dataset
    from PIL import Image
    paths = make_dataset.find_photos()[:N]
    if len(paths) < 2:
        pytest.skip("no photos installed (Debian wallpaper packages)")
    out = []
    for i, (h, w) in enumerate(SIZES):
        im = Image.open(paths[i % len(paths)])
        im.draft("RGB", (500, 500))
        im = im.convert("RGB").resize((400, 300))
        x0, y0 = 17 * i, 9 * i
        out.append(np.asarray(im)[y0:y0 + h, x0:x0 + w].copy())
    return out


def _boxes(i, h, w):
    """Three boxes inside image i (xyxy), and each one's left and right
    mid-height points (x, y, visible)."""
    rng = np.random.default_rng(i)
    b = []
    for _ in range(3):
        x0, y0 = rng.uniform(0, w * 0.6), rng.uniform(0, h * 0.6)
        b.append([x0, y0, x0 + rng.uniform(4, w * 0.4), y0 + rng.uniform(4, h * 0.4)])
    b = np.array(b, np.float32)
    ym = (b[:, 1] + b[:, 3]) / 2
    pts = np.stack([np.stack([b[:, 0], ym, np.ones(3)], -1), np.stack([b[:, 2], ym, np.ones(3)], -1)], 1)
    return b, pts.astype(np.float32)


@pytest.fixture(scope="module")
def photos(tmp_path_factory):
    """(path of a raw .beton, the photos, their boxes, their keypoints)."""
    imgs = _photos()
    boxes, points = zip(*[_boxes(i, *im.shape[:2]) for i, im in enumerate(imgs)])
    path = tmp_path_factory.mktemp("yolo_ops") / "photos.beton"
    write(path, {"image": RGBImageField(write_mode="raw"),
                 "boxes": RaggedArrayField(np.float32, (4,), follows="image", coords="xyxy"),
                 "points": RaggedArrayField(np.float32, (2, 3), follows="image", coords="xy"),
                 "label": IntField()},
          [(imgs[i], boxes[i], points[i], i) for i in range(N)])
    return path, imgs, boxes, points


def _ultralytics_letterbox(img, new_shape, scaleup=True, center=True, scale_fill=False, fill=114):
    """What Ultralytics' LetterBox does, written from its documented
    behaviour: the image, ratios and (left, top)."""
    cv2 = _cv2()
    h, w = img.shape[:2]
    r = min(new_shape[0] / h, new_shape[1] / w)
    if not scaleup:
        r = min(r, 1.0)
    ratio = (r, r)
    nw, nh = int(round(w * r)), int(round(h * r))
    dw, dh = new_shape[1] - nw, new_shape[0] - nh
    if scale_fill:
        dw, dh, nw, nh = 0, 0, new_shape[1], new_shape[0]
        ratio = (new_shape[1] / w, new_shape[0] / h)
    if center:
        dw, dh = dw / 2, dh / 2
    if (w, h) != (nw, nh):
        img = cv2.resize(img, (nw, nh), interpolation=cv2.INTER_LINEAR)
    top, bottom = (int(round(dh - 0.1)) if center else 0), int(round(dh + 0.1))
    left, right = (int(round(dw - 0.1)) if center else 0), int(round(dw + 0.1))
    img = cv2.copyMakeBorder(img, top, bottom, left, right, cv2.BORDER_CONSTANT, value=(fill,) * 3)
    return img, ratio, (left, top)


FIELDS = ["image", "boxes", "points", "label"]  # the file's order


def batches(loader, pipes):
    """The loader's batches as dicts: the file's fields with a pipeline, in
    the file's order, then the views."""
    names = [f for f in FIELDS if pipes.get(f) is not None] + list(loader.custom_field_mapper)
    return [dict(zip(names, (x if hasattr(x, "counts") else x.numpy() for x in b))) for b in loader]


LETTERBOXES = [dict(new_shape=(128, 128)), dict(new_shape=(96, 160), scaleup=False),
               dict(new_shape=(100, 75), center=False, fill=0), dict(new_shape=(64, 96), scale_fill=True)]


def _letterbox_batch(path, kw, image_first=True):
    """One batch of every sample: the letterboxed images, LabelLetterBox's
    report, and the boxes and points that follow."""
    ops = [LetterBox(**kw)] if image_first else [SimpleRGBImageDecoder(), LetterBox(**kw)]
    pipes = {"image": ops, "lb": [LabelLetterBox(**kw)],
             "boxes": [RaggedDecoder(follows="image", min_size=0, min_area=0)],
             "points": [RaggedDecoder(follows="image", boxes="boxes")], "label": None}
    loader = Loader(path, batch_size=N, num_workers=2, order=OrderOption.SEQUENTIAL, pipelines=pipes,
                    custom_field_mapper={"lb": "image"})
    (b,) = batches(loader, pipes)
    return b


@pytest.mark.parametrize("kw", LETTERBOXES, ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()))
def test_letterbox_equals_opencv(photos, kw):
    path, imgs, boxes, points = photos
    b = _letterbox_batch(path, kw)
    images, lb = b["image"], b["lb"]
    bx, bcount, pt, pcount = b["boxes"].data.numpy(), b["boxes"].counts, b["points"].data.numpy(), b["points"].counts
    for i, img in enumerate(imgs):
        ref, ratio, (left, top) = _ultralytics_letterbox(img, **kw)
        assert images[i].shape == ref.shape
        assert_close(images[i], ref, f"image {i} {img.shape}")
        np.testing.assert_allclose(lb[i], [*ratio, left, top, img.shape[1], img.shape[0], *ref.shape[:2]], rtol=1e-6)
        # Ultralytics scales labels by its ratio; the pixels move by the
        # resize's own scale round(w r) / w: the two agree within half a pixel.
        want = boxes[i] * np.array([*ratio, *ratio], np.float32) + np.array([left, top, left, top], np.float32)
        want = np.clip(want, 0, [ref.shape[1], ref.shape[0]] * 2)
        assert int(bcount[i]) == len(want)
        np.testing.assert_allclose(bx[i, :len(want)], want, atol=0.5)
        xy = points[i][..., :2] * np.array(ratio, np.float32) + np.array([left, top], np.float32)
        np.testing.assert_allclose(pt[i, :int(pcount[i]), :, :2], xy, atol=0.5)


def test_letterbox_after_a_decoder_is_the_transform(photos):
    """LetterBox later in a pipeline letterboxes the decoded images (of one
    size): OpenCV's pixels, up (60 to 120) and down (60 to 45)."""
    path = photos[0]
    for shape in [(80, 120), (45, 30)]:
        pipes = {"image": [CenterCropRGBImageDecoder((60, 60), 1.0), LetterBox(shape)],
                 "plain": [CenterCropRGBImageDecoder((60, 60), 1.0)], "label": None, "boxes": None, "points": None}
        loader = Loader(path, batch_size=N, num_workers=1, order=OrderOption.SEQUENTIAL, pipelines=pipes,
                        custom_field_mapper={"plain": "image"})
        (b,) = batches(loader, pipes)
        for i in range(N):
            assert_close(b["image"][i], _ultralytics_letterbox(b["plain"][i], shape)[0], f"image {i}")


def test_letterbox_arguments():
    with pytest.raises(ValueError, match="auto=True"):
        LetterBox(64, auto=True)
    with pytest.raises(ValueError, match="fill"):
        LetterBox(64, fill=(1, 2))
    assert LetterBox(64).new_shape == (64, 64)


def _ultralytics_hsv(img, gains):
    """Ultralytics' RandomHSV (8.3.79 on) at the gains (g_h, g_s, g_v), on an
    RGB image (its BGR2HSV of a BGR image is RGB2HSV of the RGB one)."""
    cv2 = _cv2()
    r = np.asarray(gains, np.float64)
    x = np.arange(0, 256, dtype=r.dtype)
    lut_hue = ((x + r[0] * 180) % 180).astype(np.uint8)
    lut_sat = np.clip(x * (r[1] + 1), 0, 255).astype(np.uint8)
    lut_val = np.clip(x * (r[2] + 1), 0, 255).astype(np.uint8)
    lut_sat[0] = 0
    hue, sat, val = cv2.split(cv2.cvtColor(img, cv2.COLOR_RGB2HSV))
    hsv = cv2.merge((cv2.LUT(hue, lut_hue), cv2.LUT(sat, lut_sat), cv2.LUT(val, lut_val)))
    return cv2.cvtColor(hsv, cv2.COLOR_HSV2RGB)


@pytest.mark.parametrize("gains", [(0.015, 0.7, 0.4), (0.5, 0.5, 0.5), (0.0, 0.0, 0.9)])
def test_random_hsv_equals_opencv(photos, gains):
    """Every pixel equal to OpenCV's, at the gains LabelRandomHSV reports,
    on letterboxed images 160 wide (OpenCV converts a row's first 160
    pixels in SIMD blocks) and 75 wide (a block and a scalar tail)."""
    _cv2()
    path, imgs, _, _ = photos
    for shape in [(96, 160), (100, 75)]:
        pipes = {"image": [LetterBox(shape, fill=(30, 200, 90)), RandomHSV(*gains, seed=5)],
                 "plain": [LetterBox(shape, fill=(30, 200, 90))],
                 "label": [IntDecoder(), LabelRandomHSV(*gains, seed=5)], "boxes": None, "points": None}
        loader = Loader(path, batch_size=N, num_workers=2, order=OrderOption.SEQUENTIAL, pipelines=pipes,
                        custom_field_mapper={"plain": "image"}, seed=11)
        (b,) = batches(loader, pipes)
        drawn = b["label"][:, 1:]
        assert np.all(np.abs(drawn) <= np.asarray(gains, np.float32)) and len(np.unique(drawn[:, 2])) > 1
        for i in range(N):
            ref = _ultralytics_hsv(b["plain"][i], drawn[i])
            assert_close(b["image"][i], ref, f"image {i}, gains {drawn[i]}")


def test_random_hsv_zero_gains_change_nothing(photos):
    path, imgs, _, _ = photos
    pipes = {"image": [LetterBox(64), RandomHSV(0, 0, 0)], "plain": [LetterBox(64)], "label": None,
             "boxes": None, "points": None}
    loader = Loader(path, batch_size=N, num_workers=1, order=OrderOption.SEQUENTIAL, pipelines=pipes,
                    custom_field_mapper={"plain": "image"})
    (b,) = batches(loader, pipes)
    np.testing.assert_array_equal(b["image"], b["plain"])


@pytest.mark.parametrize("bad", [dict(hgain=-0.1), dict(sgain=1.5), dict(vgain=float("nan"))])
def test_random_hsv_arguments(bad):
    with pytest.raises(ValueError, match="gain"):
        RandomHSV(**bad)


@pytest.mark.parametrize("direction", ["horizontal", "vertical"])
def test_random_flip_targets(photos, direction):
    """RandomFlip(p=1, direction): boxes mirror with the image; keypoints'
    left and right swap through flip_indices on a left-right flip only, as
    Ultralytics' flip_idx."""
    path, imgs, boxes, points = photos
    kw = dict(new_shape=(96, 96))
    pipes = {"image": [LetterBox(**kw), RandomFlip(1.0, direction)], "plain": [LetterBox(**kw)],
             "boxes": [RaggedDecoder(follows="image", min_size=0, min_area=0)],
             "points": [RaggedDecoder(follows="image", boxes="boxes", flip_indices=[1, 0])],
             "lb": [LabelLetterBox(**kw)], "label": None}
    loader = Loader(path, batch_size=N, num_workers=1, order=OrderOption.SEQUENTIAL, pipelines=pipes,
                    custom_field_mapper={"plain": "image", "lb": "image"})
    (b,) = batches(loader, pipes)
    img, plain, lb = b["image"], b["plain"], b["lb"]
    bx, pt, pc = b["boxes"].data.numpy(), b["points"].data.numpy(), b["points"].counts
    axis = 1 if direction == "horizontal" else 0
    np.testing.assert_array_equal(img, np.flip(plain, axis=1 + axis))
    for i in range(N):
        rx, ry, left, top = lb[i, :4]
        b0 = boxes[i] * [rx, ry, rx, ry] + [left, top, left, top]
        p0 = points[i][..., :2] * [rx, ry] + [left, top]
        if direction == "horizontal":
            want_b = np.stack([96 - b0[:, 2], b0[:, 1], 96 - b0[:, 0], b0[:, 3]], -1)
            want_p = np.stack([96 - p0[:, ::-1, 0], p0[:, ::-1, 1]], -1)  # left and right swapped
        else:
            want_b = np.stack([b0[:, 0], 96 - b0[:, 3], b0[:, 2], 96 - b0[:, 1]], -1)
            want_p = np.stack([p0[..., 0], 96 - p0[..., 1]], -1)
        np.testing.assert_allclose(bx[i, :3], want_b, atol=0.5)
        np.testing.assert_allclose(pt[i, :int(pc[i]), :, :2], want_p, atol=0.5)
    with pytest.raises(ValueError, match="direction"):
        RandomFlip(0.5, "diagonal")


def test_guide_blocks_run(photos):
    """docs/guides/yolo.md's blocks, on the photos (fields image, boxes,
    points, label), one batch of each loader."""
    import re
    guide = (Path(__file__).parents[2] / "docs/guides/yolo.md").read_text()
    ours = [sec for sec in re.split(r"\n(?=## )", guide)
            if sec.startswith(("## LetterBox and rect batches", "## RandomHSV and flips"))]
    assert len(ours) == 2
    env = {}
    for code in re.findall(r"```python\n(.*?)```", "\n".join(ours), re.S):
        code = code.replace('"train.beton"', repr(str(photos[0]))).replace("batch_size=16", f"batch_size={N}")
        if "RECT" in code:
            code = code.replace("32", "2").replace("640", "96").replace('"val.beton"', repr(str(photos[0])))
            exec(compile(code, "yolo.md", "exec"), env)
            assert env["images"].shape[1:3] == (env["rows"], env["cols"])
            continue
        exec(compile(code.replace("for batch in loader:", "for batch in [next(iter(loader))]:"), "yolo.md", "exec"),
             env)
        batch = next(iter(env["loader"]))
        assert batch[0].shape == (N, 640, 640, 3)
    assert env["ratio_pad"].shape == (N, 8)


# ---- torchvision's SSD crop and zoom out -----------------------------------------

def _tv():
    return pytest.importorskip("torchvision.transforms.v2.functional")


def _tv_boxes(boxes, h, w):
    import torch
    from torchvision import tv_tensors
    return tv_tensors.BoundingBoxes(torch.as_tensor(boxes), format="XYXY", canvas_size=(h, w))


@pytest.mark.parametrize("seed", [4, 9])
def test_iou_crop_equals_torchvision(photos, seed):
    """RandomIoUCrop's image is the stored image cropped by torchvision's
    F.crop at the reported (top, left, height, width), resized with
    OpenCV's INTER_AREA (within 1 level); its boxes are torchvision's:
    F.crop's, those whose centre left the crop dropped, then F.resize's."""
    F = _tv()
    cv2 = _cv2()
    import torch
    path, imgs, boxes, _ = photos
    kw = dict(min_scale=0.3, sampler_options=[0.0, 0.1, 0.3, 0.5, 1.0], seed=seed)
    size = (64, 80)
    from ffcv_go.transforms import LabelRandomIoUCrop, RandomIoUCrop
    pipes = {"image": [RandomIoUCrop(size, **kw)], "crop": [LabelRandomIoUCrop(size, **kw)],
             "boxes": [RaggedDecoder(follows="image", min_size=0, min_area=0)], "points": None, "label": None}
    cropped = 0
    for epoch_seed in range(4):
        loader = Loader(path, batch_size=N, num_workers=2, order=OrderOption.SEQUENTIAL, pipelines=pipes,
                        custom_field_mapper={"crop": "image"}, seed=epoch_seed)
        (b,) = batches(loader, pipes)
        for i, img in enumerate(imgs):
            top, left, ch, cw = (int(v) for v in b["crop"][i])
            cropped += (ch, cw) != img.shape[:2]
            crop = F.crop(torch.from_numpy(img).permute(2, 0, 1), top, left, ch, cw).permute(1, 2, 0).numpy()
            ref = cv2.resize(np.ascontiguousarray(crop), size[::-1], interpolation=cv2.INTER_AREA)
            assert np.abs(b["image"][i].astype(int) - ref).max() <= 1, f"image {i}, crop {(top, left, ch, cw)}"
            tb = F.crop(_tv_boxes(boxes[i], *img.shape[:2]), top, left, ch, cw)
            if (ch, cw) != img.shape[:2]:
                c = boxes[i][:, :2] / 2 + boxes[i][:, 2:] / 2
                inside = (left < c[:, 0]) & (c[:, 0] < left + cw) & (top < c[:, 1]) & (c[:, 1] < top + ch)
                from torchvision import tv_tensors
                tb = tv_tensors.wrap(tb[torch.from_numpy(inside)], like=tb)
                assert inside.any()
            tb = F.resize(tb, list(size))
            n = int(b["boxes"].counts[i])
            assert n == len(tb), f"image {i}: {n} boxes kept, torchvision keeps {len(tb)}"
            np.testing.assert_allclose(b["boxes"].data[i, :n].numpy(), tb.numpy(), atol=1e-3)
    assert cropped > N  # most samples of the 4 epochs were cropped


def test_zoom_out_equals_torchvision(photos):
    """RandomZoomOut's canvas is torchvision's F.pad at the reported
    padding, resized with OpenCV's INTER_AREA (within 1 level) and within a
    few levels of torchvision's antialiased resize; its boxes are F.pad's,
    then F.resize's."""
    F = _tv()
    cv2 = _cv2()
    import torch
    from ffcv_go.transforms import LabelRandomZoomOut, RandomZoomOut
    path, imgs, boxes, _ = photos
    kw = dict(fill=(10, 200, 30), side_range=(1.0, 3.0), p=0.8)
    pipes = {"image": [LetterBox(96), RandomZoomOut(**kw, seed=2)], "plain": [LetterBox(96)],
             "lb": [LabelLetterBox(96)], "label": [IntDecoder(), LabelRandomZoomOut(**kw, seed=2)],
             "boxes": [RaggedDecoder(follows="image", min_size=0, min_area=0)], "points": None}
    loader = Loader(path, batch_size=N, num_workers=2, order=OrderOption.SEQUENTIAL, pipelines=pipes,
                    custom_field_mapper={"plain": "image", "lb": "image"}, seed=5)
    (b,) = batches(loader, pipes)
    zoomed, tv_diff = 0, 0
    for i in range(N):
        on, sc, fx, fy = (float(v) for v in b["label"][i, 1:])
        cw, ch = (int(96 * sc), int(96 * sc)) if on else (96, 96)
        left, top = int((cw - 96) * fx), int((ch - 96) * fy)
        zoomed += (cw, ch) != (96, 96)
        pad = [left, top, cw - 96 - left, ch - 96 - top]
        canvas = F.pad(torch.from_numpy(b["plain"][i]).permute(2, 0, 1), pad, fill=list(kw["fill"]))
        hwc = np.ascontiguousarray(canvas.permute(1, 2, 0).numpy())
        ref = cv2.resize(hwc, (96, 96), interpolation=cv2.INTER_AREA)
        assert np.abs(b["image"][i].astype(int) - ref).max() <= 1, f"image {i}, padding {pad}"
        tv_img = F.resize(canvas, [96, 96], antialias=True).permute(1, 2, 0).numpy()
        tv_diff = max(tv_diff, np.abs(b["image"][i].astype(int) - tv_img).mean())
        rx, ry, pl, pt = b["lb"][i, :4]
        lb = boxes[i] * [rx, ry, rx, ry] + [pl, pt, pl, pt]
        tb = F.resize(F.pad(_tv_boxes(lb.astype(np.float32), 96, 96), pad), [96, 96])
        np.testing.assert_allclose(b["boxes"].data[i, :int(b["boxes"].counts[i])].numpy(), tb.numpy(), atol=0.6)
    assert zoomed >= 2 and tv_diff < 4


def test_iou_crop_arguments(photos):
    from ffcv_go.transforms import LabelRandomIoUCrop, RandomIoUCrop
    path = photos[0]
    with pytest.raises(ValueError, match="seed"):
        LabelRandomIoUCrop(64)
    with pytest.raises(ValueError, match="min_scale"):
        RandomIoUCrop(64, min_scale=0)
    with pytest.raises(ValueError, match="must open the pipeline"):
        Loader(path, batch_size=N, num_workers=1, pipelines={
            "image": [LetterBox(64), RandomIoUCrop(64)], "points": None, "label": None})
    with pytest.raises(ValueError, match='no field "bboxes"'):
        Loader(path, batch_size=N, num_workers=1, pipelines={
            "image": [RandomIoUCrop(64, boxes="bboxes")], "points": None, "label": None})


def test_detection_guide_ssd_block_runs(tmp_path):
    """docs/guides/detection.md's SSD block, on scenes of painted objects
    (fields image, boxes, labels as the page writes them)."""
    import re
    sys.path.insert(0, str(Path(__file__).parent))
    from _target_truth import scenes
    sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
    import make_dataset
    photos = make_dataset.find_photos()[:2]
    if not photos:
        pytest.skip("no photos installed (Debian wallpaper packages)")
    ds = scenes.SceneDataset(16, photos)
    path = tmp_path / "train.beton"
    write(path, {"image": RGBImageField(write_mode="jpg"),
                 "boxes": RaggedArrayField(np.float32, (4,), follows="image", coords="xyxy"),
                 "labels": RaggedArrayField(np.int64, (), follows="boxes")},
          [tuple(ds[i][:3]) for i in range(16)])
    guide = (Path(__file__).parents[2] / "docs/guides/detection.md").read_text()
    section = guide[guide.index("### SSD's crop and zoom out"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1).replace('"train.beton"', repr(str(path)))
    env = {"Loader": Loader, "RaggedDecoder": RaggedDecoder}
    exec(compile(code, "detection.md", "exec"), env)
    images, boxes, labels, crop = next(iter(env["loader"]))
    assert images.shape == (16, 300, 300, 3) and crop.shape == (16, 4)
    assert (boxes.counts == labels.counts).all() and int(boxes.counts.sum()) > 0


def _ultralytics_rect_shapes(hw, batch_size, imgsz, stride, pad):
    """Ultralytics' set_rectangle, written from its documented behaviour:
    the order (by aspect h / w) and each batch's (rows, cols)."""
    ar = np.array([h / w for h, w in hw])
    order = np.argsort(ar, kind="stable")
    ar = ar[order]
    shapes = []
    for b in range(0, len(ar), batch_size):
        ari = ar[b:b + batch_size]
        s = [1, 1]
        if ari.max() < 1:
            s = [ari.max(), 1]
        elif ari.min() > 1:
            s = [1, 1 / ari.min()]
        shapes.append(tuple(int(np.ceil(x * imgsz / stride + pad)) * stride for x in s))
    return order, shapes


def test_rect_batches(photos):
    """OrderOption.RECT with LetterBox(rect=True): Ultralytics' order and
    batch shapes; each image letterboxed (long side at most imgsz, no
    upscaling) into its batch's shape at the top-left of the slot, the rest
    filled; boxes follow. Another order is refused."""
    cv2 = _cv2()
    from ffcv_go.transforms import LabelLetterBox
    path, imgs, boxes, _ = photos
    bs, imgsz, stride, pad = 2, 96, 32, 0.5
    kw = dict(new_shape=imgsz, scaleup=False, rect=True, batch_size=bs, stride=stride, pad=pad, fill=7)
    pipes = {"image": [LetterBox(**kw)], "lb": [LabelLetterBox(**kw)], "label": [IntDecoder()],
             "boxes": [RaggedDecoder(follows="image", min_size=0, min_area=0)], "points": None}
    loader = Loader(path, batch_size=bs, num_workers=2, order=OrderOption.RECT, pipelines=pipes,
                    custom_field_mapper={"lb": "image"}, drop_last=False)
    got = batches(loader, pipes)
    order, shapes = _ultralytics_rect_shapes([im.shape[:2] for im in imgs], bs, imgsz, stride, pad)
    side = int(np.ceil(imgsz / stride + pad)) * stride
    assert [int(i) for b in got for i in b["label"].reshape(-1)] == order.tolist()
    for k, b in enumerate(got):
        assert b["image"].shape[1:] == (side, side, 3)
        for j, i in enumerate(b["label"].reshape(-1)):
            img, (rows, cols) = imgs[i], shapes[k]
            assert tuple(b["lb"][j, 6:]) == (rows, cols)
            h, w = img.shape[:2]
            # Ultralytics' load_image first brings the long side to imgsz at most.
            r = min(imgsz / max(h, w), rows / h, cols / w, 1.0)
            nw, nh = round(w * r), round(h * r)
            left, top = round((cols - nw) / 2 - 0.1), round((rows - nh) / 2 - 0.1)
            ref = np.full((rows, cols, 3), 7, np.uint8)
            ref[top:top + nh, left:left + nw] = cv2.resize(img, (nw, nh), interpolation=cv2.INTER_LINEAR)
            ratio = (r, r)
            assert_close(b["image"][j, :rows, :cols], ref, f"image {i}")
            assert (b["image"][j, rows:] == 7).all() and (b["image"][j, :, cols:] == 7).all()
            np.testing.assert_allclose(b["lb"][j, :4], [*ratio, left, top], rtol=1e-6)
            n = int(b["boxes"].counts[j])
            want = boxes[i] * np.float32(ratio[0]) + np.array([left, top, left, top], np.float32)
            np.testing.assert_allclose(b["boxes"].data[j, :n].numpy(), want, atol=0.5)
    wrong = Loader(path, batch_size=bs, num_workers=1, order=OrderOption.SEQUENTIAL, pipelines=pipes,
                   custom_field_mapper={"lb": "image"})
    with pytest.raises(Exception, match="OrderOption.RECT"):
        list(wrong)


def test_letterbox_of_jpeg_images(photos, tmp_path):
    """Stored as JPEG, each image is decoded whole and letterboxed: OpenCV's
    letterbox of the decoded image (PadRGBImageDecoder shows it)."""
    _cv2()
    from ffcv_go.transforms import PadRGBImageDecoder
    _, imgs, _, _ = photos
    path = write(tmp_path / "jpg.beton", {"image": RGBImageField(write_mode="jpg"), "label": IntField()},
                 [(imgs[i], i) for i in range(N)])
    pipes = {"image": [LetterBox((72, 100))], "plain": [PadRGBImageDecoder()], "label": None}
    loader = Loader(path, batch_size=N, num_workers=2, order=OrderOption.SEQUENTIAL, pipelines=pipes,
                    custom_field_mapper={"plain": "image"})
    ((images, plain),) = [(a.numpy(), b.numpy()) for a, b in loader]
    for i, img in enumerate(imgs):
        h, w = img.shape[:2]
        assert_close(images[i], _ultralytics_letterbox(plain[i, :h, :w], (72, 100))[0], f"image {i}")
