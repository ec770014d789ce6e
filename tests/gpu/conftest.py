"""The checks that need CUDA: run by `make test-gpu` from the
source tree, or by build/gpu-bundle/run.sh from the wheel on a machine
without Go (docs/guides/gpu.md).

Without a CUDA device every test is skipped with one message. With
FFCV_GO_GPU_TESTS_ON_CPU=1 the tests marked cpu_ok run on the CPU instead:
that checks the test code itself, nothing about CUDA.

Image tests use the .beton named by FFCV_GO_GPU_BETON (fields image, label;
the bundle carries one made from photos), or else a synthetic one written here.
"""
import os
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

from cuda_available import reason as cuda_reason  # noqa: E402

ON_CPU = os.environ.get("FFCV_GO_GPU_TESTS_ON_CPU") == "1"
MEAN = np.array([0.485, 0.456, 0.406]) * 255
STD = np.array([0.229, 0.224, 0.225]) * 255


def pytest_report_header(config):
    import ffcv_go
    lines = [f"ffcv_go {ffcv_go.__version__} from {Path(ffcv_go.__file__).parent}",
             f"torch {torch.__version__}, CUDA build {torch.version.cuda}"]
    if cuda_reason() is None:
        lines += [f"cuda:{i} {torch.cuda.get_device_name(i)}" for i in range(torch.cuda.device_count())]
    elif ON_CPU:
        lines.append("FFCV_GO_GPU_TESTS_ON_CPU=1: cpu_ok tests run on the CPU (checks the tests, not CUDA)")
    return lines


def pytest_collection_modifyitems(config, items):
    why = cuda_reason()
    if why is None:
        return
    for item in items:
        if not (ON_CPU and "cpu_ok" in item.keywords):
            item.add_marker(pytest.mark.skip(reason=why))


def has_cuda():
    return cuda_reason() is None


@pytest.fixture(scope="session")
def target():
    """The ToDevice argument of the tests: 'cuda', or 'cpu' in a CPU dry run."""
    return "cuda" if has_cuda() else "cpu"


def needs_cuda(what):
    """Skips a CPU dry run at a step that only means something with CUDA."""
    if not has_cuda():
        pytest.skip(f"{what} needs CUDA")


class FnDataset:
    def __init__(self, n, fn):
        self.n, self.fn = n, fn

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return self.fn(i)


def write(path, fields, n, fn, page_size=8 << 20):
    from ffcv_go import DatasetWriter
    DatasetWriter(str(path), fields, page_size=page_size, num_workers=2,
                  progress=False).from_indexed_dataset(FnDataset(n, fn))
    return Path(path)


def synthetic_photo(i):
    """A smooth, photo-like uint8 image (JPEG compresses it as it does photos)."""
    rng = np.random.default_rng(i)
    h, w = int(rng.integers(160, 320)), int(rng.integers(160, 320))
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    img = np.empty((h, w, 3), np.float32)
    for c in range(3):
        fy, fx, ph = rng.uniform(0.005, 0.05, 2).tolist() + [rng.uniform(0, 6.3)]
        img[..., c] = 128 + 90 * np.sin(fy * y + fx * x + ph)
    img += rng.normal(0, 8, img.shape)
    return np.clip(img, 0, 255).astype(np.uint8)


@pytest.fixture(scope="session")
def photos(tmp_path_factory):
    """A .beton of JPEG images (image: RGBImageField, label: IntField)."""
    path = os.environ.get("FFCV_GO_GPU_BETON")
    if path:
        if not Path(path).is_file():
            pytest.fail(f"FFCV_GO_GPU_BETON={path} does not exist")
        return Path(path)
    from ffcv_go.fields import IntField, RGBImageField
    out = tmp_path_factory.mktemp("photos") / "synthetic.beton"
    return write(out, {"image": RGBImageField(write_mode="jpg", jpeg_quality=90), "label": IntField()},
                 256, lambda i: (synthetic_photo(i), i % 10))
