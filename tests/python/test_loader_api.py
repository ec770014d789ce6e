"""The Loader's FFCV surface (code, recompile, traversal orders, PipelineSpec
of an operation, shared state) and the Python/Go seam (one open file, one
allocation lookup)."""
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from conftest import FIXTURES, fixture_file, fixture_images, write

from ffcv_go import Loader
from ffcv_go.fields import BytesField, IntField
from ffcv_go.fields.decoders import IntDecoder
from ffcv_go.fields.rgb_image import CenterCropRGBImageDecoder, RandomResizedCropRGBImageDecoder
from ffcv_go.loader import OrderOption
from ffcv_go.memory_managers import OSCacheManager
from ffcv_go.pipeline import PipelineSpec
from ffcv_go.pipeline.allocation_query import AllocationQuery
from ffcv_go.pipeline.operation import Operation
from ffcv_go.reader import Reader
from ffcv_go.traversal_order import TraversalOrder
from ffcv_go.transforms import RandomHorizontalFlip, ToTensor, View

PYTHONPATH = os.path.join(os.path.dirname(__file__), "..", "..", "python")


@pytest.fixture(scope="module")
def images():
    return fixture_file("images_jpg_var")[0]




def test_code_is_kept_unless_recompile(images):
    loader = Loader(images, batch_size=8, pipelines={"image": [CenterCropRGBImageDecoder((16, 16))]})
    iter(loader)
    code = loader.code
    iter(loader)
    assert loader.code is code
    loader.generate_code()
    assert loader.code is not code
    again = Loader(images, batch_size=8, recompile=True, pipelines={"image": [CenterCropRGBImageDecoder((16, 16))]})
    iter(again)
    code = again.code
    iter(again)
    assert again.code is not code
    assert len(list(again)) == 3


def test_traversal_orders(images):
    loader = Loader(images, batch_size=8, order=OrderOption.RANDOM, seed=4, pipelines={"image": None})
    first = loader.first_traversal_order
    assert sorted(first.tolist()) == list(range(30))
    assert first.tolist() == np.random.default_rng(4).permutation(30).tolist()
    list(loader)
    assert loader.next_traversal_order().tolist() == np.random.default_rng(5).permutation(30).tolist()


class EveryOther(TraversalOrder):
    """A custom order taking a keyword and narrowing its own indices."""

    def __init__(self, loader, start=0):
        super().__init__(loader)
        self.indices = np.asarray(self.indices)[start::2]

    def sample_order(self, epoch):
        return self.indices[::-1]


def test_custom_order_gets_order_kwargs_and_its_indices(images):
    loader = Loader(images, batch_size=5, order=EveryOther, order_kwargs={"start": 1}, drop_last=False,
                    pipelines={"image": None, "label": [IntDecoder(), ToTensor()]})
    labels = torch.cat([b[0].view(-1) for b in loader]).tolist()
    want = list(range(29, 0, -2))
    assert labels == [int(fixture_file("images_jpg_var")[1]["label"][i]) for i in want]


def test_default_cache_from_the_environment(images):
    code = ("import sys; from ffcv_go import Loader; "
            "print(Loader(sys.argv[1], batch_size=4, pipelines={'image': None}).os_cache)")
    for env, want in (({}, "True"), ({"FFCV_DEFAULT_CACHE_PROCESS": "1"}, "False")):
        e = dict(os.environ, PYTHONPATH=PYTHONPATH, **env)
        e.pop("FFCV_DEFAULT_CACHE_PROCESS", None) if not env else None
        out = subprocess.run([sys.executable, "-c", code, str(images)], env=e, capture_output=True, text=True)
        assert out.stdout.strip() == want, out.stderr


def test_pipeline_spec_from_an_operation(images):
    flip = RandomHorizontalFlip()
    loader = Loader(images, batch_size=8, seed=1, pipelines={
        "image": [CenterCropRGBImageDecoder((16, 16)), flip, ToTensor()], "label": None,
        "unflipped": PipelineSpec(flip, transforms=[RandomHorizontalFlip(1.0)])})
    n = 0
    for image, again in loader:
        assert torch.equal(image.flip(2), again)
        n += 1
    assert n == 3
    with pytest.raises(ValueError, match="in no pipeline"):
        Loader(images, batch_size=8, pipelines={"x": PipelineSpec(RandomHorizontalFlip())})


class AddShared(Operation):
    """Adds a per-batch value its shared-state code fills (FFCV's protocol)."""

    def declare_state_and_memory(self, previous_state):
        return previous_state, AllocationQuery(previous_state.shape, previous_state.dtype)

    def declare_shared_memory(self, previous_state):
        return AllocationQuery((1,), np.int64)

    def generate_code_for_shared_state(self):
        def init(shared):
            shared[:] = 100
        return init

    def generate_code(self):
        def code(inp, dst, shared):
            dst[:len(inp)] = inp + shared[0, 0]
            return dst[:len(inp)]
        return code


def test_shared_state(images, no_jit):
    loader = Loader(images, batch_size=8, pipelines={"image": None, "label": [IntDecoder(), AddShared(), ToTensor()]})
    labels = fixture_file("images_jpg_var")[1]["label"]
    got = torch.cat([b[0].view(-1) for b in loader]).tolist()
    assert got == [int(v) + 100 for v in labels[:24]]


def test_view_before_to_tensor(images):
    pipelines = {"image": None, "label": [IntDecoder(), View(np.uint64), ToTensor()]}
    if not hasattr(torch, "uint64"):  # torch < 2.3: a clear error instead
        with pytest.raises(ValueError, match=r"torch\.uint64, which torch .* lacks"):
            Loader(images, batch_size=8, pipelines=pipelines)
        pytest.skip(f"torch {torch.__version__} has no uint64 tensors")
    loader = Loader(images, batch_size=8, pipelines=pipelines)
    batch = next(iter(loader))[0]
    assert batch.dtype == torch.uint64 and batch.shape == (8, 1)


def test_loader_maps_the_file_once(images):
    """The Go loader reads through the Reader's map: one mapping of the file
    (a fresh interpreter, so no other test's map is counted)."""
    code = ("import sys; from ffcv_go import Loader; "
            "from ffcv_go.fields.rgb_image import CenterCropRGBImageDecoder; "
            "l = Loader(sys.argv[1], batch_size=8, pipelines={'image': [CenterCropRGBImageDecoder((16, 16))]}); "
            "n = len(list(l)); "
            "print(n, sum(sys.argv[1] in line for line in open('/proc/self/maps')))")
    out = subprocess.run([sys.executable, "-c", code, str(images)], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=PYTHONPATH))
    assert out.stdout.split() == ["3", "1"], out.stdout + out.stderr


def test_one_allocation_lookup(tmp_path):
    """An empty allocation sharing its pointer with the next: Python's
    memory_read and the Go reader resolve it the same way."""
    path = write(tmp_path / "empty.beton", {"blob": BytesField(), "n": IntField()},
                 [(np.zeros(0, np.uint8), 0), (np.arange(7, dtype=np.uint8), 1), (np.zeros(0, np.uint8), 2),
                  (np.arange(3, dtype=np.uint8) + 9, 3)])
    r = Reader(path)
    ptrs = r.metadata["f0"]["ptr"]
    assert ptrs[2] == ptrs[3], "the writer places an empty sample where the next starts"
    read = OSCacheManager(r).compile_reader()
    for i in range(4):
        got = np.asarray(read(ptrs[i], r._buffer))
        stored = r.read(i, "blob")
        want = np.zeros(0, np.uint8) if stored is None else np.asarray(stored)
        if ptrs[i] == ptrs[min(i + 1, 3)] and i < 3:
            want = np.asarray(r.read(i + 1, "blob"))  # the non-empty allocation wins, as in Go
        assert got.tolist() == want.tolist(), i


class TopLeftQuarter(RandomResizedCropRGBImageDecoder):
    """An FFCV-style subclass choosing its own crop."""

    @property
    def get_crop_generator(self):
        def crop(height, width, scale, ratio):
            return 0, 0, height // 2, width // 2
        return crop


@pytest.mark.parametrize("name", ["images_raw_fixed", "images_jpg_var"])
def test_subclass_crop_generator_is_respected(name):
    """The subclass's crop is decoded (in Python, with the Go JPEG decoder and
    resizer); a crop the size of the output is copied pixel for pixel."""
    path, content = fixture_file(name)
    pixels = fixture_images(content) if "pixels_concat" in content else list(content["image"])
    h, w = pixels[0].shape[:2]
    size = (h // 2, w // 2)
    loader = Loader(path, batch_size=5, drop_last=False, pipelines={"image": [TopLeftQuarter(size)], "label": None})
    got = np.concatenate([b[0] for b in loader])  # numpy: no ToTensor after Python decoding, as FFCV
    assert got.shape == (len(pixels), *size, 3)
    for i, px in enumerate(pixels):
        if px.shape[:2] == (h, w):
            want = px[:h // 2, :w // 2]
            if name == "images_raw_fixed":
                assert np.array_equal(got[i], want), i
            else:  # JPEG: the decode may differ from the stored pixels by a little
                assert np.abs(got[i].astype(int) - want.astype(int)).mean() < 8, i


def test_signature_is_ffcv_form():
    """help(), inspect.signature and IDEs show FFCV 1.0's form, its
    parameters in order with their defaults, then ffcv_go's; the docstring
    gives FFCV-SSL's."""
    import inspect
    import pydoc
    from ffcv_go.loader.loader import DEFAULT_OS_CACHE
    params = list(inspect.signature(Loader).parameters.values())
    ffcv = [("fname", inspect.Parameter.empty), ("batch_size", inspect.Parameter.empty), ("num_workers", -1),
            ("os_cache", DEFAULT_OS_CACHE), ("order", OrderOption.SEQUENTIAL), ("distributed", False),
            ("seed", None), ("indices", None), ("pipelines", {}), ("custom_fields", {}), ("drop_last", True),
            ("batches_ahead", 3), ("recompile", False), ("order_kwargs", {})]
    assert [(p.name, p.default) for p in params[:len(ffcv)]] == ffcv
    assert all(p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD for p in params)
    assert {"on_error", "max_resident_pages", "max_batch_memory", "trace", "custom_field_mapper"} <= \
        {p.name for p in params[len(ffcv):]}
    assert "Loader(path, batch_size, order, num_workers=-1" in Loader.__doc__
    assert "Loader(fname, batch_size, num_workers=-1, os_cache=" in pydoc.render_doc(Loader)


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_to_cuda_without_cuda_is_refused_when_the_loader_is_built():
    """Not torch's "invalid argument to exchangeDevice" at the first batch."""
    from ffcv_go.transforms import ToDevice
    path = str(FIXTURES / "scalars.beton")
    for device in ("cuda", "cuda:0", torch.device("cuda", 1)):
        with pytest.raises(ValueError, match=r'output "label": ToDevice: device .*cuda.*: CUDA is not available here'):
            Loader(path, batch_size=4, pipelines={"label": [IntDecoder(), ToTensor(), ToDevice(device)]})
    Loader(path, batch_size=4, pipelines={"label": [IntDecoder(), ToTensor(), ToDevice("cpu")]})
