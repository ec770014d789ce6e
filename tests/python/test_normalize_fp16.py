"""NormalizeImage in float16 on the CPU gives FFCV 1.0's values exactly.

The expected values come from FFCV itself (tests/gpu/make_fixtures.py), for
ImageNet's mean and std and for the values of FFCV's own GPU test; the same
fixture checks the GPU path in tests/gpu.
"""
from pathlib import Path

import numpy as np
import pytest
import torch

from conftest import write
from ffcv_go import Loader
from ffcv_go.fields import IntField, RGBImageField
from ffcv_go.fields.decoders import IntDecoder, SimpleRGBImageDecoder
from ffcv_go.transforms import NormalizeImage, ToTensor, ToTorchImage

FIXTURE = Path(__file__).parents[1] / "gpu" / "fixtures" / "normalize_fp16_ffcv.npz"


@pytest.fixture(scope="module")
def ffcv_fp16():
    with np.load(FIXTURE) as z:
        return {k: z[k] for k in z.files}


@pytest.fixture(scope="module")
def raw_images(tmp_path_factory, ffcv_fp16):
    images = ffcv_fp16["images"]
    path = tmp_path_factory.mktemp("fp16") / "images.beton"
    fields = {"index": IntField(), "image": RGBImageField(write_mode="raw")}
    return write(path, fields, [(i, images[i]) for i in range(len(images))])


PIPELINES = {
    # FFCV's CPU order: normalised by the fused Go program, HWC.
    "numpy": lambda op: [SimpleRGBImageDecoder(), op, ToTensor()],
    # On a CPU tensor after ToTorchImage (NCHW, channels_last).
    "tensor": lambda op: [SimpleRGBImageDecoder(), ToTensor(), ToTorchImage(), op],
}


@pytest.mark.parametrize("values", ["imagenet", "ffcv_test"])
@pytest.mark.parametrize("where", list(PIPELINES))
def test_cpu_float16_equals_ffcv(raw_images, ffcv_fp16, where, values):
    op = NormalizeImage(ffcv_fp16[f"{values}_mean"], ffcv_fp16[f"{values}_std"], np.float16)
    loader = Loader(raw_images, batch_size=len(ffcv_fp16["images"]), num_workers=1, drop_last=False,
                    pipelines={"index": [IntDecoder(), ToTensor()], "image": PIPELINES[where](op)})
    (_, got), = list(loader)
    assert got.dtype == torch.float16
    if got.shape[1] == 3 and got.shape[-1] != 3:
        got = got.permute(0, 2, 3, 1)
    got = got.contiguous().numpy()
    want = ffcv_fp16[f"{values}_expected"]
    assert got.shape == want.shape
    diff = got != want
    assert not diff.any(), f"{diff.sum()} of {diff.size} values differ from FFCV's"
