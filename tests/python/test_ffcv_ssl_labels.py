"""FFCV-SSL's Label* transforms pair with their image transforms as its
programs write them: one dict of arguments, ``Op(**args)`` in the image
pipeline and ``LabelOp(**args)`` in the label's, with a shared seed. For
every pair and every sample, the reported parameters reproduce the pixels
(torchvision's functional ops on the original photo)."""
import math
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from conftest import write

tv = pytest.importorskip("torchvision.transforms.v2.functional")
from torchvision.transforms import InterpolationMode  # noqa: E402

from ffcv_go import Loader  # noqa: E402
from ffcv_go.fields import IntField, RGBImageField  # noqa: E402
from ffcv_go.fields.decoders import IntDecoder, SimpleRGBImageDecoder  # noqa: E402
from ffcv_go.loader import OrderOption  # noqa: E402
from ffcv_go.libffcv import resize_crop  # noqa: E402
from ffcv_go import transforms as T  # noqa: E402

H, W, N = 48, 64, 32


@pytest.fixture(scope="module")
def photos(tmp_path_factory):
    """(path of a raw .beton, the (N, H, W, 3) photos in it): crops of
    Debian wallpapers at different places."""
    sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
    import make_dataset
    from PIL import Image
    paths = make_dataset.find_photos()[:4]
    if not paths:
        pytest.skip("no photos installed (Debian wallpaper packages)")
    big = []
    for p in paths:
        im = Image.open(p)
        im.draft("RGB", (400, 400))
        big.append(np.asarray(im.convert("RGB").resize((320, 240))))
    imgs = []
    for i in range(N):
        y, x = 7 * i % (240 - H), 13 * i % (320 - W)
        imgs.append(big[i % len(big)][y:y + H, x:x + W].copy())
    imgs = np.stack(imgs)
    path = tmp_path_factory.mktemp("labels") / "photos.beton"
    write(path, {"image": RGBImageField(write_mode="raw"), "label": IntField()}, [(imgs[i], i) for i in range(N)])
    return path, imgs


def pairs(path, image_op, label_op, epochs=2):
    """(images, label rows, sample ids) of every sample of `epochs` epochs."""
    loader = Loader(path, batch_size=8, num_workers=2, order=OrderOption.RANDOM, seed=4,
                    pipelines={"image": [SimpleRGBImageDecoder(), image_op], "label": [IntDecoder(), label_op]})
    got, rows = [], []
    for _ in range(epochs):
        for x, y in loader:
            got.append(x.numpy().copy())
            rows.append(y.numpy().copy())
    rows = np.concatenate(rows)
    assert rows.dtype == np.float32
    return np.concatenate(got), rows[:, 1:], rows[:, 0].astype(int)


def chw(x):
    return torch.from_numpy(np.ascontiguousarray(x)).permute(2, 0, 1)


def hwc(t):
    return t.permute(1, 2, 0).numpy()


def diff(a, b):
    d = np.abs(a.astype(int) - b.astype(int))
    return d.max(), (d > 0).mean()


def both_outcomes(applied):
    assert 0 < applied.sum() < len(applied), f"{applied.sum()} of {len(applied)} samples transformed"


def test_flip(photos):
    path, imgs = photos
    args = dict(flip_prob=0.5, seed=21)
    got, p, ids = pairs(path, T.RandomHorizontalFlip(**args), T.LabelRandomHorizontalFlip(**args))
    assert set(p[:, 0].tolist()) <= {0.0, 1.0}
    both_outcomes(p[:, 0] == 1)
    for x, (f,), i in zip(got, p, ids):
        assert np.array_equal(x, imgs[i][:, ::-1] if f == 1 else imgs[i]), (i, f)


def test_grayscale(photos):
    path, imgs = photos
    args = dict(gray_prob=0.4, seed=22)
    got, p, ids = pairs(path, T.RandomGrayscale(**args), T.LabelGrayscale(**args))
    both_outcomes(p[:, 0] == 0)
    for x, (keep,), i in zip(got, p, ids):
        if keep == 1:
            assert np.array_equal(x, imgs[i]), i
        else:  # FFCV-SSL: 0 means turned grey (ITU-R 601 luma in every channel)
            g = imgs[i].astype(float) @ [0.299, 0.587, 0.114]
            assert diff(x, np.repeat(g[..., None], 3, axis=2))[0] <= 1, i


def test_solarization(photos):
    path, imgs = photos
    args = dict(solarization_prob=0.5, threshold=100, seed=23)
    got, p, ids = pairs(path, T.RandomSolarization(**args), T.LabelSolarization(**args))
    both_outcomes(p[:, 0] == 1)
    for x, (s,), i in zip(got, p, ids):
        want = np.where(imgs[i] >= 100, 255 - imgs[i], imgs[i]) if s == 1 else imgs[i]
        assert np.array_equal(x, want), (i, s)


def test_color_jitter(photos):
    """The four factors and, since the order of the adjustments is drawn
    too, one of the 24 orders of torchvision's adjustments with them."""
    path, imgs = photos
    args = dict(jitter_prob=0.6, brightness=0.4, contrast=0.4, saturation=0.3, hue=0.1, seed=24)
    got, p, ids = pairs(path, T.RandomColorJitter(**args), T.LabelColorJitter(**args), epochs=1)
    off = np.all(p == [1, 1, 1, 0], axis=1)
    both_outcomes(~off)
    assert (np.abs(p[~off, :3] - 1) <= [0.4, 0.4, 0.3]).all() and (np.abs(p[~off, 3]) <= 0.1).all()
    adjust = [tv.adjust_brightness, tv.adjust_contrast, tv.adjust_saturation, tv.adjust_hue]

    def closest(x, f, y, left):
        """The smallest (max, fraction) difference over the orders of left
        after y (depth first, each prefix computed once)."""
        if not left:
            return diff(x, hwc(y))
        best = (255, 1.0)
        for k in left:
            best = min(best, closest(x, f, adjust[k](y, float(f[k])), [j for j in left if j != k]))
            if best[0] == 0:
                break
        return best

    for x, f, i in zip(got, p, ids):
        if np.all(f == [1, 1, 1, 0]):
            assert np.array_equal(x, imgs[i]), i
            continue
        best = closest(x, f, chw(imgs[i]), [0, 1, 2, 3])
        # Four uint8 roundings in a row: a level or two may go the other way
        # (up to a few percent of values); another order or other factors
        # differ by many levels.
        assert best[0] <= 2 and best[1] <= 0.05, (i, f.tolist(), best)


def test_gaussian_blur(photos):
    path, imgs = photos
    args = dict(blur_prob=0.5, kernel_size=5, sigma=(0.2, 2.0), seed=25)
    got, p, ids = pairs(path, T.GaussianBlur(**args), T.LabelGaussianBlur(**args))
    both_outcomes(p[:, 0] > 0)
    for x, (s,), i in zip(got, p, ids):
        if s == 0:
            assert np.array_equal(x, imgs[i]), i
        else:
            assert 0.2 <= s <= 2.0
            m, frac = diff(x, hwc(tv.gaussian_blur(chw(imgs[i]), [5, 5], [float(s), float(s)])))
            assert m <= 1 and frac <= 0.01, (i, s, m, frac)


def test_rotate(photos):
    path, imgs = photos
    args = dict(rotate_prob=0.5, angle=0.5, seed=26)
    got, p, ids = pairs(path, T.Rotate(**args), T.LabelRotate(**args))
    both_outcomes(p[:, 0] != 0)
    for x, (a,), i in zip(got, p, ids):
        assert abs(a) <= 0.5
        want = hwc(tv.rotate(chw(imgs[i]), math.degrees(float(a)), interpolation=InterpolationMode.NEAREST))
        # The angle comes back as float32: a few pixels on rounding ties may move.
        assert diff(x, want)[1] <= 0.01, (i, a)


def test_translate(photos):
    """FFCV-SSL's convention: (dy + padding, dx + padding) in [0, 2 * padding];
    output pixel (y, x) is input pixel (y + dy, x + dx), fill outside."""
    path, imgs = photos
    args = dict(padding=6, fill=(9, 80, 200), seed=27)
    got, p, ids = pairs(path, T.RandomTranslate(**args), T.LabelTranslate(**args))
    assert (p >= 0).all() and (p <= 12).all() and (p == np.round(p)).all()
    assert len({tuple(r) for r in p.tolist()}) > 10
    for x, (ty, tx), i in zip(got, p, ids):
        dy, dx = int(ty) - 6, int(tx) - 6
        padded = np.empty((H + 12, W + 12, 3), np.uint8)
        padded[:] = (9, 80, 200)
        padded[6:6 + H, 6:6 + W] = imgs[i]
        assert np.array_equal(x, padded[6 + dy:6 + dy + H, 6 + dx:6 + dx + W]), (i, dy, dx)


def test_random_resized_crop(photos):
    """FFCV-SSL's RandomResizedCrop (the decoder) with LabelRandomResizedCrop
    in a view of its own: the reported crop, area-resized, is the view."""
    path, imgs = photos
    args = dict(output_size=(24, 24), scale=(0.1, 0.9), ratio=(0.5, 2.0), seed=28)
    loader = Loader(path, batch_size=8, num_workers=2, order=OrderOption.RANDOM, seed=4,
                    pipelines={"image": [T.RandomResizedCrop(**args)], "label": None,
                               "crop": [T.LabelRandomResizedCrop(**args)]},
                    custom_field_mapper={"crop": "image"})
    seen = set()
    for x, crop in loader:
        for view, (w, h, top, left, ch, cw), i in zip(x.numpy(), crop.numpy(), loader._last_ids):
            assert (w, h) == (W, H)
            want = np.empty((24, 24, 3), np.uint8)
            resize_crop(imgs[i], top, top + ch, left, left + cw, want)
            assert np.array_equal(view, want), (i, top, left, ch, cw)
            seen.add((top, left, ch, cw))
    assert len(seen) > N // 2
