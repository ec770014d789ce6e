"""The Go augmentation ops against torchvision.transforms.v2.functional on
real photos (crops of Debian wallpapers), with fixed parameters: AugmentOp
for the policies' operations, degenerate ranges (p=1, hue=(h, h), ...) for
the FFCV-SSL transforms, and the Label* transforms to learn what a random
one drew. Each comparison states its tolerance as (largest difference in
levels, fraction of values that differ)."""
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
from ffcv_go.transforms import (AugMix, AugmentOp, AutoAugment, CenterCrop, CornerCrop, GaussianBlur,  # noqa: E402
                                LabelColorJitter, LabelGaussianBlur, LabelGrayscale, LabelRotate,
                                LabelSolarization, LabelTranslate, RandAugment, RandomColorJitter,
                                RandomErasing, RandomGrayscale, RandomSolarization, RandomTranslate, Rotate,
                                TrivialAugmentWide)

H, W, N = 72, 96, 6


def _photos():
    sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
    import make_dataset
    from PIL import Image
    paths = make_dataset.find_photos()[:N]
    if len(paths) < 2:
        pytest.skip("no photos installed (Debian wallpaper packages)")
    out = []
    for i in range(N):
        im = Image.open(paths[i % len(paths)])
        im.draft("RGB", (400, 400))
        im = im.convert("RGB").resize((300, 225))
        x0, y0 = 40 + 23 * i, 30 + 11 * i  # different content when photos repeat
        out.append(np.asarray(im)[y0:y0 + H, x0:x0 + W].copy())
    return np.stack(out)


@pytest.fixture(scope="module")
def photos(tmp_path_factory):
    """(path of a raw .beton, the (N, H, W, 3) uint8 photos in it)."""
    imgs = _photos()
    path = tmp_path_factory.mktemp("aug") / "photos.beton"
    write(path, {"image": RGBImageField(write_mode="raw"), "label": IntField()},
          [(imgs[i], i) for i in range(N)])
    return path, imgs


def run(path, ops, label_ops=None, seed=0, epochs=1):
    """The images (and label outputs) of the first epoch(s) through ops."""
    pipes = {"image": [SimpleRGBImageDecoder(), *ops]}
    if label_ops is not None:
        pipes["label"] = [IntDecoder(), *label_ops]
    loader = Loader(path, batch_size=N, num_workers=1, order=OrderOption.SEQUENTIAL, pipelines=pipes, seed=seed)
    outs = []
    for _ in range(epochs):
        (batch,) = [tuple(x.numpy().copy() for x in b) for b in loader]
        outs.append(batch)
    return outs if epochs > 1 else outs[0]


def chw(imgs):
    return torch.from_numpy(np.ascontiguousarray(imgs)).permute(0, 3, 1, 2)


def hwc(t):
    return t.permute(0, 2, 3, 1).numpy()


def diff(got, want):
    """(largest absolute difference, fraction of values that differ)."""
    d = np.abs(got.astype(np.int16) - want.astype(np.int16))
    return int(d.max()), float((d > 0).mean())


def close(got, want, levels, frac, what=""):
    assert got.shape == want.shape and got.dtype == want.dtype == np.uint8
    m, f = diff(got, want)
    print(f"{what}: max {m}, differing {f:.5f}")
    assert m <= levels and f <= frac, f"{what}: max difference {m} (allowed {levels}), {f:.4%} differ (allowed {frac:.4%})"


def tv_each(imgs, fn):
    return hwc(torch.stack([fn(x) for x in chw(imgs)]))


# AugmentOp name, magnitude, torchvision's call, (levels, fraction) allowed.
def _shear(x, m, axis, interp=InterpolationMode.NEAREST, fill=None):
    s = math.degrees(math.atan(m))
    return tv.affine(x, angle=0.0, translate=[0, 0], scale=1.0, shear=[s, 0.0] if axis == 0 else [0.0, s],
                     interpolation=interp, fill=fill, center=[0, 0])


def _translate(x, m, axis, fill=None):
    t = [int(m), 0] if axis == 0 else [0, int(m)]
    return tv.affine(x, angle=0.0, translate=t, scale=1.0, shear=[0.0, 0.0],
                     interpolation=InterpolationMode.NEAREST, fill=fill)


# Measured on these photos: every case below is bit-exact except blur (1
# level, 0.005% of values). The
# allowances leave room for other photos: a source coordinate on a rounding
# tie may pick the neighbouring pixel, a blend may land on the other side of
# an integer after float32 rounding in another order.
def _torch_grid_fuses():
    """Whether torch's affine grid (torchvision's base_grid.bmm(theta))
    accumulates with a fused multiply-add, as ffcv_go's warps do: MKL picks
    its GEMM kernel by CPU, fused on Intel's, not on AMD's. The probe's
    product 1 + 2**-11 + 2**-24 is only kept by an FMA."""
    base = torch.ones(1, 64, 3)
    base[..., 1] = 1 + 2 ** -12
    theta = torch.zeros(1, 3, 2)
    theta[0, 0, 0], theta[0, 1, 0] = -(1 + 2 ** -11), 1 + 2 ** -12
    return bool(base.bmm(theta)[0, 0, 0] != 0)


# Shears like 0.2 put many source coordinates on rounding ties, which the
# grid's arithmetic decides: with torch's fused grid ffcv_go's nearest warps
# are bit-exact (at most 0.1 % of values differ, from coordinates on the
# edge); where torch does not fuse, ties land on the other pixel (0.5-0.8 %
# of values for a 0.2 shear).
TIES = 0.001 if _torch_grid_fuses() else 0.01
EXACT = (0, 0.0)
GEOM = (255, TIES)
BLEND = (1, 0.001)

CASES = [
    ("Identity", 0.0, lambda x: x, EXACT),
    ("Posterize", 4.0, lambda x: tv.posterize(x, 4), EXACT),
    ("Posterize", 1.0, lambda x: tv.posterize(x, 1), EXACT),
    ("Solarize", 0.5, lambda x: tv.solarize(x, 127.5), EXACT),
    ("Solarize", 0.2, lambda x: tv.solarize(x, 255 * 0.2), EXACT),
    ("AutoContrast", 0.0, tv.autocontrast, EXACT),
    ("Equalize", 0.0, tv.equalize, EXACT),
    ("Invert", 0.0, tv.invert, EXACT),
    ("Brightness", 0.5, lambda x: tv.adjust_brightness(x, 1.5), BLEND),
    ("Brightness", -0.63, lambda x: tv.adjust_brightness(x, 0.37), BLEND),
    ("Color", 0.8, lambda x: tv.adjust_saturation(x, 1.8), BLEND),
    ("Color", -0.45, lambda x: tv.adjust_saturation(x, 0.55), BLEND),
    ("Contrast", 0.7, lambda x: tv.adjust_contrast(x, 1.7), BLEND),
    ("Contrast", -0.9, lambda x: tv.adjust_contrast(x, 0.1), BLEND),
    ("Sharpness", 0.9, lambda x: tv.adjust_sharpness(x, 1.9), BLEND),
    ("Sharpness", -0.75, lambda x: tv.adjust_sharpness(x, 0.25), BLEND),
    ("ShearX", 0.3, lambda x: _shear(x, 0.3, 0), GEOM),
    ("ShearX", -0.21, lambda x: _shear(x, -0.21, 0), GEOM),
    ("ShearY", 0.17, lambda x: _shear(x, 0.17, 1), GEOM),
    # 0.2 puts many source coordinates on rounding ties: torch's order of operations decides them.
    ("ShearX", 0.2, lambda x: _shear(x, 0.2, 0), GEOM),
    ("ShearY", -0.2, lambda x: _shear(x, -0.2, 1), GEOM),
    ("TranslateX", 20.7, lambda x: _translate(x, 20.7, 0), EXACT),
    ("TranslateX", -13.2, lambda x: _translate(x, -13.2, 0), EXACT),
    ("TranslateY", 9.9, lambda x: _translate(x, 9.9, 1), EXACT),
    ("Rotate", 23.5, lambda x: tv.rotate(x, 23.5, interpolation=InterpolationMode.NEAREST), GEOM),
    ("Rotate", -30.0, lambda x: tv.rotate(x, -30.0, interpolation=InterpolationMode.NEAREST), GEOM),
    ("Rotate", 180.0, lambda x: tv.rotate(x, 180.0), EXACT),
]


@pytest.mark.parametrize("name,magnitude,ref,tol", CASES, ids=[f"{c[0]}{c[1]}" for c in CASES])
def test_policy_op_matches_torchvision(photos, name, magnitude, ref, tol):
    path, imgs = photos
    got, _ = run(path, [AugmentOp(name, magnitude)])
    close(got, tv_each(imgs, ref), *tol, what=f"{name} {magnitude}")


BILINEAR = (1, 0.005)


@pytest.mark.parametrize("name,magnitude,fill", [("ShearX", 0.25, None), ("ShearY", -0.3, [10.0, 200.0, 90.0]),
                                                 ("Rotate", 17.0, None), ("Rotate", -41.0, [128.0])])
def test_bilinear_and_fill_match_torchvision(photos, name, magnitude, fill):
    path, imgs = photos
    got, _ = run(path, [AugmentOp(name, magnitude, interpolation=InterpolationMode.BILINEAR, fill=fill)])
    bil = InterpolationMode.BILINEAR
    if name == "Rotate":
        want = tv_each(imgs, lambda x: tv.rotate(x, magnitude, interpolation=bil, fill=fill))
    else:
        want = tv_each(imgs, lambda x: _shear(x, magnitude, 0 if name == "ShearX" else 1, bil, fill))
    close(got, want, *BILINEAR, what=f"bilinear {name} {magnitude} fill {fill}")


def test_nearest_fill_matches_torchvision(photos):
    path, imgs = photos
    got, _ = run(path, [AugmentOp("TranslateX", -30.0, fill=[7, 99, 250])])
    close(got, tv_each(imgs, lambda x: _translate(x, -30.0, 0, fill=[7.0, 99.0, 250.0])), *EXACT, what="fill")


def test_flips_match_torchvision(photos):
    from ffcv_go.transforms import RandomHorizontalFlip, RandomVerticalFlip
    path, imgs = photos
    close(run(path, [RandomHorizontalFlip(1.0)])[0], tv_each(imgs, tv.horizontal_flip), *EXACT, what="flip h")
    close(run(path, [RandomVerticalFlip(1.0)])[0], tv_each(imgs, tv.vertical_flip), *EXACT, what="flip v")


@pytest.mark.parametrize("kw,ref", [
    (dict(brightness=(1.4, 1.4)), lambda x: tv.adjust_brightness(x, 1.4)),
    (dict(contrast=(0.6, 0.6)), lambda x: tv.adjust_contrast(x, 0.6)),
    (dict(saturation=(1.7, 1.7)), lambda x: tv.adjust_saturation(x, 1.7)),
    (dict(hue=(0.1, 0.1)), lambda x: tv.adjust_hue(x, 0.1)),
    (dict(hue=(-0.37, -0.37)), lambda x: tv.adjust_hue(x, -0.37)),
    (dict(hue=(0.5, 0.5)), lambda x: tv.adjust_hue(x, 0.5)),
], ids=["brightness", "contrast", "saturation", "hue0.1", "hue-0.37", "hue0.5"])
def test_color_jitter_component_matches_torchvision(photos, kw, ref):
    path, imgs = photos
    args = dict(jitter_prob=1.0, brightness=0, contrast=0, saturation=0, hue=0)
    args.update(kw)
    got, _ = run(path, [RandomColorJitter(**args)])
    close(got, tv_each(imgs, ref), *BLEND, what=f"jitter {kw}")


def test_color_jitter_label_reports_the_drawn_factors(photos):
    """A random hue with its label: the image is adjust_hue by the reported factor."""
    path, imgs = photos
    args = dict(jitter_prob=1.0, brightness=0, contrast=0, saturation=0, hue=0.4, seed=11)
    got, labels = run(path, [RandomColorJitter(**args)], [LabelColorJitter(**args)])
    assert labels.shape == (N, 5) and labels.dtype == np.float32
    assert np.array_equal(labels[:, 0], np.arange(N))  # the label itself comes first
    assert np.all(labels[:, 1:4] == 1)
    hues = labels[:, 4]
    assert np.all(np.abs(hues) <= 0.4) and len(set(hues.tolist())) == N
    want = np.stack([tv.adjust_hue(chw(imgs[i:i + 1])[0], float(hues[i])).permute(1, 2, 0).numpy()
                     for i in range(N)])
    # The label is float32: a hue factor rounded to float32 shifts few pixels.
    close(got, want, 1, 0.001, what="jitter hue with label")


def test_full_color_jitter_is_deterministic_and_changes_images(photos):
    path, imgs = photos
    a, b = run(path, [RandomColorJitter(1.0, seed=3)], epochs=2)
    again = run(path, [RandomColorJitter(1.0, seed=3)])
    assert np.array_equal(a[0], again[0])
    assert not np.array_equal(a[0], b[0])  # a new epoch draws anew
    assert all(not np.array_equal(a[0][i], imgs[i]) for i in range(N))


@pytest.mark.parametrize("k,sigma", [(5, 1.1), (9, 2.0), (3, 0.4), (23, 5.0)])
def test_gaussian_blur_matches_torchvision(photos, k, sigma):
    path, imgs = photos
    got, _ = run(path, [GaussianBlur(1.0, kernel_size=k, sigma=(sigma, sigma))])
    close(got, tv_each(imgs, lambda x: tv.gaussian_blur(x, [k, k], [sigma, sigma])), 1, 0.001,
          what=f"blur k={k} sigma={sigma}")


def test_gaussian_blur_label_reports_sigma(photos):
    path, imgs = photos
    args = dict(blur_prob=0.5, kernel_size=7, sigma=(0.3, 3.0), seed=5)
    got, labels = run(path, [GaussianBlur(**args)], [LabelGaussianBlur(**args)])
    sig = labels[:, 1]
    assert (sig == 0).any() or (sig > 0).all()
    for i in range(N):
        if sig[i] == 0:
            assert np.array_equal(got[i], imgs[i])
        else:
            assert 0.3 <= sig[i] <= 3.0
            want = tv.gaussian_blur(chw(imgs[i:i + 1])[0], [7, 7], [float(sig[i])] * 2).permute(1, 2, 0).numpy()
            close(got[i], want, 1, 0.001, what=f"blur sigma {sig[i]:.3f}")


def test_rotate_label_reports_angle(photos):
    path, imgs = photos
    args = dict(rotate_prob=0.8, angle=0.6, seed=9)
    got, labels = run(path, [Rotate(**args)], [LabelRotate(**args)])
    ang = labels[:, 1]
    assert (np.abs(ang) <= 0.6).all() and (ang != 0).any()
    for i in range(N):
        want = tv.rotate(chw(imgs[i:i + 1])[0], math.degrees(float(ang[i])),
                         interpolation=InterpolationMode.NEAREST).permute(1, 2, 0).numpy()
        # The angle comes back rounded to float32: a few pixels more may move.
        close(got[i], want, *GEOM, what=f"rotate {ang[i]:.4f} rad")


def test_grayscale_and_solarization_labels_pair_with_their_ops(photos):
    path, imgs = photos
    got, labels = run(path, [RandomGrayscale(0.5, seed=1), RandomSolarization(0.5, 128, seed=2)],
                      [LabelGrayscale(0.5, seed=1), LabelSolarization(0.5, seed=2)])
    assert labels.shape == (N, 3)
    for i in range(N):
        x = imgs[i]
        if labels[i, 1] == 0:  # grey (FFCV-SSL: 0 means converted)
            g = (0.299 * x[..., 0] + 0.587 * x[..., 1] + 0.114 * x[..., 2])
            x = np.repeat(np.clip(g, 0, 255).astype(np.uint8)[..., None], 3, axis=2)
        if labels[i, 2] == 1:
            x = np.where(x >= 128, 255 - x, x)
        assert np.abs(got[i].astype(int) - x.astype(int)).max() <= 1, f"sample {i}, labels {labels[i]}"
    assert len({tuple(r) for r in labels[:, 1:].tolist()}) > 1


def test_translate_label_pairs(photos):
    path, imgs = photos
    got, labels = run(path, [RandomTranslate(10, seed=4)], [LabelTranslate(10, seed=4)])
    for i in range(N):
        # FFCV-SSL's convention: (dy + padding, dx + padding) in [0, 2 * padding].
        ty, tx = int(labels[i, 1]), int(labels[i, 2])
        assert 0 <= ty <= 20 and 0 <= tx <= 20
        dy, dx = ty - 10, tx - 10
        want = np.zeros_like(imgs[i])
        ys, xs = slice(max(0, -dy), min(H, H - dy)), slice(max(0, -dx), min(W, W - dx))
        want[ys, xs] = imgs[i][ys.start + dy:ys.stop + dy, xs.start + dx:xs.stop + dx]
        assert np.array_equal(got[i], want), f"sample {i}, shift {dy, dx}"


def test_random_erasing_erases_one_rectangle(photos):
    path, imgs = photos
    got, _ = run(path, [RandomErasing(1.0, scale=(0.1, 0.1), ratio=(1.0, 1.0), mean=(1, 2, 3))])
    side = round(math.sqrt(H * W * 0.1))
    for i in range(N):
        changed = np.any(got[i] != imgs[i], axis=2)
        filled = np.all(got[i] == (1, 2, 3), axis=2)
        ys, xs = np.nonzero(filled)
        assert ys.max() - ys.min() + 1 == side and xs.max() - xs.min() + 1 == side
        assert filled.sum() == side * side and not (changed & ~filled).any()


def test_center_and_corner_crops_take_the_right_square(photos):
    path, imgs = photos
    side = int(0.75 * H)
    for op, (y, x) in [(CenterCrop(side, 0.75), ((H - side) // 2, (W - side) // 2)),
                       (CornerCrop(side, 0.75, "top_left"), (0, 0)),
                       (CornerCrop(side, 0.75, "top_right"), (0, W - side)),
                       (CornerCrop(side, 0.75, "bottom_left"), (H - side, 0)),
                       (CornerCrop(side, 0.75, "bottom_right"), (H - side, W - side))]:
        got, _ = run(path, [op])
        assert np.array_equal(got, imgs[:, y:y + side, x:x + side]), op._spec()
    got, _ = run(path, [CenterCrop(24, 1.0)])
    assert got.shape == (N, 24, 24, 3)


@pytest.mark.parametrize("policy", [RandAugment(), RandAugment(num_ops=3, magnitude=20),
                                    TrivialAugmentWide(), AutoAugment(), AugMix(), AugMix(all_ops=False,
                                                                                          chain_depth=2)],
                         ids=["ra", "ra3x20", "ta", "aa", "augmix", "augmix-partial"])
def test_policies_are_deterministic_and_change_images(photos, policy):
    path, imgs = photos
    (a, _), (b, _) = run(path, [policy], epochs=2)
    assert a.shape == imgs.shape and a.dtype == np.uint8
    assert np.array_equal(a, run(path, [policy])[0])
    assert not np.array_equal(a, b)
    changed = sum(not np.array_equal(a[i], imgs[i]) for i in range(N))
    assert changed >= N // 2


def test_rand_augment_without_ops_is_identity(photos):
    path, imgs = photos
    assert np.array_equal(run(path, [RandAugment(num_ops=0)])[0], imgs)


def test_augmix_stays_close_to_the_image(photos):
    """The mix is a convex combination of the image and its augmentations,
    so its mean brightness stays near the image's."""
    path, imgs = photos
    got, _ = run(path, [AugMix(severity=1)])
    assert np.abs(got.mean(axis=(1, 2, 3)) - imgs.mean(axis=(1, 2, 3))).max() < 40


@pytest.mark.parametrize("make,arg", [
    (lambda: RandAugment(magnitude=31), "magnitude"),
    (lambda: RandAugment(magnitude=-1), "magnitude"),
    (lambda: RandAugment(magnitude=10, num_magnitude_bins=10), "magnitude"),
    (lambda: RandAugment(num_ops=-1), "num_ops"),
    (lambda: TrivialAugmentWide(num_magnitude_bins=1), "num_magnitude_bins"),
    (lambda: AugMix(severity=11), "severity"),
    (lambda: AugMix(alpha=0), "alpha"),
    (lambda: AutoAugment(policy="cifar100"), "policy"),
    (lambda: RandAugment(interpolation="bicubic"), "interpolation"),
    (lambda: AugmentOp("Posterize", 9), "Posterize"),
    (lambda: AugmentOp("Shear", 0.1), "name"),
    (lambda: RandomColorJitter(hue=0.6), "hue"),
    (lambda: RandomColorJitter(hue=(-0.7, 0.1)), "hue"),
    (lambda: RandomColorJitter(brightness=-1), "brightness"),
    (lambda: GaussianBlur(0.5, kernel_size=4), "kernel_size"),
    (lambda: GaussianBlur(0.5, sigma=(0, 1)), "sigma"),
    (lambda: GaussianBlur(0.5, sigma=-1.0), "sigma"),
    (lambda: RandomErasing(scale=(0.5, 0.1)), "scale"),
    (lambda: CornerCrop(10, 0.8, corner="middle"), "corner"),
    (lambda: LabelColorJitter(), "seed"),
    (lambda: LabelRotate(seed=-3), "seed"),
    (lambda: RandomColorJitter(seed=2 ** 32), "seed"),
    (lambda: RandomGrayscale(seed="1"), "seed"),
])
def test_bad_arguments_name_the_argument(make, arg):
    with pytest.raises(ValueError, match=arg):
        make()


def test_blur_kernel_larger_than_the_image_is_an_error(tmp_path):
    path = write(tmp_path / "small.beton", {"image": RGBImageField(write_mode="raw"), "label": IntField()},
                 [(np.zeros((8, 8, 3), np.uint8), 0)])
    with pytest.raises(Exception, match="kernel_size 19"):
        list(Loader(path, batch_size=1, num_workers=1,
                    pipelines={"image": [SimpleRGBImageDecoder(), GaussianBlur(1.0, kernel_size=19)]}))


def test_label_random_resized_crop_reports_the_decoders_crop(photos):
    """Two loaders with the same seed: one decodes random resized crops, the
    other reports them. An area resize keeps the crop's mean colour."""
    from ffcv_go.fields.decoders import RandomResizedCropRGBImageDecoder
    from ffcv_go.transforms import LabelRandomResizedCrop
    path, imgs = photos

    def first_batch(dec):
        loader = Loader(path, batch_size=N, num_workers=1, order=OrderOption.SEQUENTIAL, seed=3,
                        pipelines={"image": [dec], "label": [IntDecoder()]})
        return next(iter(loader))[0].numpy().copy()

    crops = first_batch(RandomResizedCropRGBImageDecoder((24, 24), scale=(0.05, 0.3), seed=8))
    params = first_batch(LabelRandomResizedCrop((24, 24), seed=8, scale=(0.05, 0.3), ratio=(3 / 4, 4 / 3)))
    assert params.shape == (N, 6) and params.dtype == np.int32
    assert (params[:, 0] == W).all() and (params[:, 1] == H).all()
    for i, (_, _, top, left, ch, cw) in enumerate(params.tolist()):
        assert 0 <= top and top + ch <= H and 0 <= left and left + cw <= W
        region = imgs[i, top:top + ch, left:left + cw].reshape(-1, 3).mean(axis=0)
        assert np.abs(crops[i].reshape(-1, 3).mean(axis=0) - region).max() < 1.5, f"sample {i}"
    other = first_batch(LabelRandomResizedCrop((24, 24), seed=9, scale=(0.05, 0.3), ratio=(3 / 4, 4 / 3)))
    assert not np.array_equal(other, params)


FFCV_SSL_PATHS = {
    "colorjitter": ["RandomColorJitter", "LabelColorJitter"], "grayscale": ["RandomGrayscale", "LabelGrayscale"],
    "solarization": ["RandomSolarization", "LabelSolarization"], "gaussian_blur": ["GaussianBlur", "LabelGaussianBlur"],
    "erasing": ["RandomErasing"], "rotate": ["Rotate"], "translate": ["RandomTranslate", "LabelTranslate"],
    "resized_crop": ["LabelRandomResizedCrop", "CenterCrop", "CornerCrop"],
}


@pytest.mark.parametrize("module", sorted(FFCV_SSL_PATHS))
def test_ffcv_ssl_module_paths(module):
    """FFCV-SSL's imports work with ffcv_go in place of ffcv."""
    import importlib
    import ffcv_go.transforms as T
    mod = importlib.import_module(f"ffcv_go.transforms.{module}")
    for name in FFCV_SSL_PATHS[module]:
        assert getattr(mod, name) is getattr(T, name), f"{module}.{name}"


def _variants(pol, name, img, bins, bin_indices):
    """Every image torchvision's policy pol makes with operation name at the
    given magnitude bins and both signs: (description, CHW tensor)."""
    fn, signed = pol._AUGMENTATION_SPACE[name]
    mags = fn(bins, img.shape[-2], img.shape[-1])
    values = [0.0] if mags is None else [float(mags[i]) for i in bin_indices]
    for m in values:
        for s in ((m, -m) if signed and mags is not None else (m,)):
            yield f"{name} {s:.4g}", pol._apply_image_or_video_transform(
                img, name, s, interpolation=pol.interpolation, fill=pol._fill)


def _best(got, variants):
    """The variant closest to got: (fraction of values that differ, description)."""
    return min((diff(got, v.permute(1, 2, 0).numpy())[1], d) for d, v in variants)


@pytest.mark.parametrize("name,kwargs,bins,pick", [
    ("RandAugment", dict(num_ops=1, magnitude=17), 31, [17]),
    ("TrivialAugmentWide", dict(num_magnitude_bins=4), 4, range(4)),
], ids=["RandAugment", "TrivialAugmentWide"])
def test_policy_outputs_are_torchvision_operations(photos, name, kwargs, bins, pick):
    """Each output is one of the images torchvision's policy can make from
    the input: one of its operations at one of its magnitudes and signs."""
    import ffcv_go.transforms
    from torchvision.transforms import v2
    path, imgs = photos
    ours, pol = getattr(ffcv_go.transforms, name)(**kwargs), getattr(v2, name)(**kwargs)
    chosen = set()
    for epoch in run(path, [ours], epochs=3):
        for i, got in enumerate(epoch[0]):
            img = chw(imgs[i:i + 1])[0]
            frac, what = _best(got, (v for name in pol._AUGMENTATION_SPACE
                                     for v in _variants(pol, name, img, bins, pick)))
            assert frac <= TIES, f"sample {i}: closest torchvision output {what} differs in {frac:.3%}"
            chosen.add(what.split()[0])
    assert len(chosen) >= 5, chosen


@pytest.mark.parametrize("policy", ["imagenet", "cifar10", "svhn"])
def test_auto_augment_outputs_are_policy_steps(photos, policy):
    """Each AutoAugment output is what one of torchvision's sub-policies of
    that policy makes with each of its steps applied or not."""
    from torchvision.transforms import v2
    path, imgs = photos
    pol = v2.AutoAugment(v2.AutoAugmentPolicy(policy))
    for epoch in run(path, [AutoAugment(v2.AutoAugmentPolicy(policy))], epochs=2):
        for i, got in enumerate(epoch[0]):
            img = chw(imgs[i:i + 1])[0]
            outs = []
            for sub in pol._policies:
                stage = [("", img)]
                for name, _, idx in sub:
                    nxt = list(stage)
                    for d, x in stage:
                        nxt += [(f"{d} {v}", y) for v, y in _variants(pol, name, x, 10, [idx or 0])]
                    stage = nxt
                outs += stage
            frac, what = _best(got, outs)
            assert frac <= TIES, f"sample {i}: closest torchvision output{what} differs in {frac:.3%}"


def test_augmix_one_chain_is_a_blend_with_a_torchvision_operation(photos):
    """AugMix with one chain of one operation: the output is
    trunc(m * x + (1 - m) * op(x)) for some weight m and one of torchvision's
    AugMix operations at a severity bin and sign."""
    from torchvision.transforms import v2
    path, imgs = photos
    pol = v2.AugMix(severity=3)
    for epoch in run(path, [AugMix(severity=3, mixture_width=1, chain_depth=1)], epochs=2):
        for i, got in enumerate(epoch[0]):
            img = chw(imgs[i:i + 1])[0]
            x, out = img.permute(1, 2, 0).numpy().astype(np.float64), got.astype(np.float64)
            best = (1.0, "")
            for name in pol._AUGMENTATION_SPACE:
                fn, signed = pol._AUGMENTATION_SPACE[name]
                mags = fn(10, H, W)
                for m in ([0.0] if mags is None else [float(mags[k]) for k in range(3)]):
                    for s in ((m, -m) if signed and mags is not None else (m,)):
                        y = pol._apply_image_or_video_transform(img, name, s, interpolation=pol.interpolation,
                                                                fill=pol._fill).permute(1, 2, 0).numpy()
                        d = x - y
                        w = float(((out + 0.5 - y) * d).sum() / max((d * d).sum(), 1e-9))
                        resid = out - np.floor(np.clip(w, 0, 1) * x + (1 - np.clip(w, 0, 1)) * y)
                        best = min(best, (float((np.abs(resid) > 1).mean()), f"{name} {s:.3g} weight {w:.3f}"))
            assert best[0] <= 0.002, f"sample {i}: closest blend {best[1]} is off by more than a level in {best[0]:.3%}"
