"""NormalizeImage on the GPU: FFCV's float16 values exactly (from the fixture
tests/gpu/make_fixtures.py computed with FFCV 1.0.2), the CPU path's values,
channels_last output, as FFCV's test_gpu_normalization checks."""
from pathlib import Path

import numpy as np
import pytest
import torch

from conftest import MEAN, STD, write
from ffcv_go import Loader
from ffcv_go.fields import IntField, RGBImageField
from ffcv_go.fields.decoders import IntDecoder, SimpleRGBImageDecoder
from ffcv_go.transforms import NormalizeImage, ToDevice, ToTensor, ToTorchImage, View

FIXTURE = Path(__file__).parent / "fixtures" / "normalize_fp16_ffcv.npz"
VALUES = {"imagenet": (MEAN, STD), "ffcv_test": (np.array([0, 1, 2]), np.array([1, 10, 20]))}


@pytest.fixture(scope="module")
def ffcv_fp16():
    with np.load(FIXTURE) as z:
        return {k: z[k] for k in z.files}


@pytest.fixture(scope="module")
def fixture_images(tmp_path_factory, ffcv_fp16):
    images = ffcv_fp16["images"]
    return write(tmp_path_factory.mktemp("fp16") / "fixture.beton",
                 {"index": IntField(), "image": RGBImageField(write_mode="raw")},
                 len(images), lambda i: (i, images[i]))


def random_image(i):
    rng = np.random.default_rng(i)
    return rng.integers(0, 256, size=(25, 30, 3), dtype=np.uint8)


@pytest.fixture(scope="module")
def random_images(tmp_path_factory):
    return write(tmp_path_factory.mktemp("random") / "random.beton",
                 {"index": IntField(), "image": RGBImageField(write_mode="raw")},
                 200, lambda i: (i, random_image(i)))


def normalized(path, batch_size, mean, std, dtype, device):
    """Every image batch of an epoch, normalised on device (None: on the CPU, in FFCV's order)."""
    norm = NormalizeImage(mean, std, dtype)
    if device is None:
        image = [SimpleRGBImageDecoder(), norm, ToTensor(), ToTorchImage()]
    else:
        image = [SimpleRGBImageDecoder(), ToTensor(), ToDevice(device, non_blocking=True), ToTorchImage(), norm]
        if dtype == np.float16:
            image.append(View(torch.float16))  # as FFCV's pipelines end, a no-op here
    loader = Loader(path, batch_size=batch_size, num_workers=2, drop_last=False,
                    pipelines={"index": [IntDecoder(), ToTensor()], "image": image})
    return [b[1] for b in loader]


@pytest.mark.cpu_ok
@pytest.mark.parametrize("values", ["imagenet", "ffcv_test"])
def test_float16_equals_ffcv(fixture_images, ffcv_fp16, target, values):
    mean, std = ffcv_fp16[f"{values}_mean"], ffcv_fp16[f"{values}_std"]
    (got,) = normalized(fixture_images, len(ffcv_fp16["images"]), mean, std, np.float16, target)
    assert got.device.type == target and got.dtype == torch.float16
    assert got.is_contiguous(memory_format=torch.channels_last)
    got = got.permute(0, 2, 3, 1).cpu().numpy()
    want = ffcv_fp16[f"{values}_expected"]
    differ = got != want
    assert not differ.any(), (f"{differ.sum()} of {differ.size} values differ from FFCV {ffcv_fp16['ffcv_version']}'s, "
                              f"by up to {np.abs(got.astype(np.float32) - want.astype(np.float32)).max()}")


@pytest.mark.cpu_ok
@pytest.mark.parametrize("dtype", [np.float16, np.float32])
@pytest.mark.parametrize("values", ["imagenet", "ffcv_test"])
def test_device_equals_cpu(random_images, target, values, dtype):
    mean, std = VALUES[values]
    on_device = normalized(random_images, 16, mean, std, dtype, target)
    on_cpu = normalized(random_images, 16, mean, std, dtype, None)
    assert len(on_device) == len(on_cpu)
    for k, (g, c) in enumerate(zip(on_device, on_cpu)):
        assert g.device.type == target and g.dtype == c.dtype == torch.from_numpy(np.zeros(0, dtype)).dtype
        g = g.cpu()
        if dtype == np.float16:
            assert torch.equal(g, c), f"batch {k}: {(g != c).sum().item()} values differ from the CPU's"
        else:  # one float32 division, correctly rounded on both: allow a rounding step
            torch.testing.assert_close(g, c, rtol=2.4e-7, atol=1e-6)
        # and the formula, at float16's precision (FFCV's own check)
        ref = torch.from_numpy(np.stack([random_image(16 * k + j) for j in range(len(g))])).permute(0, 3, 1, 2)
        ref = (ref.double() - torch.from_numpy(np.asarray(mean, np.float64)).view(1, 3, 1, 1)) \
            / torch.from_numpy(np.asarray(std, np.float64)).view(1, 3, 1, 1)
        torch.testing.assert_close(g.double(), ref, rtol=1e-3, atol=1e-3)
