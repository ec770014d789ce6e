"""A dropped Loader is freed by reference counting alone.

Every test runs with the cyclic collector off: a Loader left in a reference
cycle (with its batch slots, file map, descriptors and Go workers) would then
stay alive, and the resources it holds would not come back.
"""
import gc
import os
import threading
import time
import weakref

import numpy as np
import pytest
import torch

from conftest import rss_bytes

from ffcv_go import DatasetWriter, Loader, _lib
from ffcv_go.fields import IntField, RGBImageField
from ffcv_go.fields.decoders import IntDecoder, RandomResizedCropRGBImageDecoder
from ffcv_go.loader import OrderOption
from ffcv_go.pipeline.operation import Operation
from ffcv_go.traversal_order import TraversalOrder
from ffcv_go.transforms import NormalizeImage, RandomHorizontalFlip, Squeeze, ToTensor, ToTorchImage

MEAN = np.array([0.485, 0.456, 0.406]) * 255
STD = np.array([0.229, 0.224, 0.225]) * 255


@pytest.fixture(scope="module")
def photos(photo_folder, tmp_path_factory):
    """The 24 real photos of photo_folder as a JPEG .beton (max side 256)."""
    path = tmp_path_factory.mktemp("drop") / "photos.beton"
    DatasetWriter(str(path), {"image": RGBImageField(max_resolution=256), "label": IntField()},
                  num_workers=1, progress=False).from_image_folder(str(photo_folder))
    return str(path)


@pytest.fixture
def no_gc(photos):
    """Warms the library up (Go threads, fds of the runtime), then turns the
    cyclic collector off for the test and yields the resources to return to."""
    for os_cache in (True, False):
        for batch in Loader(photos, batch_size=8, num_workers=2, os_cache=os_cache, pipelines=_pipes()):
            del batch
    gc.collect()
    gc.disable()
    try:
        yield _resources()
    finally:
        gc.enable()
        gc.collect()


def _resources():
    """(live library objects, Python threads, open fds, goroutines), read
    without running the collector."""
    return (_lib.live_objects(), threading.active_count(), len(os.listdir("/proc/self/fd")), _lib.goroutines())


def _check_back(before):
    """Resources return to before: at once for library objects, within a
    moment for threads and goroutines (workers exit just after they signal)."""
    assert _lib.live_objects() == before[0], "a dropped loader's library objects are still alive"
    deadline = time.monotonic() + 5
    while _resources() != before:
        if time.monotonic() > deadline:
            pytest.fail(f"(objects, Python threads, fds, goroutines) {before} -> {_resources()}")
        time.sleep(0.02)


def _pipes(*extra):
    image = [RandomResizedCropRGBImageDecoder((96, 96)), RandomHorizontalFlip(), ToTensor(), ToTorchImage(),
             NormalizeImage(MEAN, STD, np.float32), *extra]
    return {"image": image, "label": [IntDecoder(), ToTensor(), Squeeze()]}


def _loader(path, pipes=None, **kw):
    kw.setdefault("order", OrderOption.QUASI_RANDOM)
    return Loader(path, batch_size=8, num_workers=2, seed=5, pipelines=pipes or _pipes(), **kw)


class _Double(Operation):
    """A custom operation run in Python: doubles uint8 pixels (mod 256)."""

    def generate_code(self):
        def double(images, dst):
            dst[:] = images * 2
            return dst
        return double

    def declare_state_and_memory(self, previous_state):
        from ffcv_go.pipeline.allocation_query import AllocationQuery
        return previous_state, AllocationQuery(previous_state.shape, previous_state.dtype)


class _Fails(Operation):
    """A custom operation whose code raises on the batch holding sample 9."""

    def generate_code(self):
        def run(images, dst, indices):
            for i in indices:
                if i == 9:
                    raise RuntimeError("user code failed")
            dst[:] = images
            return dst
        run.with_indices = True
        return run

    def declare_state_and_memory(self, previous_state):
        from ffcv_go.pipeline.allocation_query import AllocationQuery
        return previous_state, AllocationQuery(previous_state.shape, previous_state.dtype)


class _Reversed(TraversalOrder):
    """A custom order that stores the loader, as FFCV's API invites."""

    def __init__(self, loader):
        super().__init__(loader)
        self.loader = loader

    def sample_order(self, epoch):
        return np.asarray(self.loader.indices)[::-1].copy()


def _python_stage_pipes():
    # A custom op (a Python stage) and then built-in ops (run by Go on its output).
    image = [RandomResizedCropRGBImageDecoder((96, 96)), _Double(), RandomHorizontalFlip(), ToTensor(),
             ToTorchImage(), NormalizeImage(MEAN, STD, np.float32), torch.nn.Identity()]
    return {"image": image, "label": [IntDecoder(), ToTensor(), Squeeze()]}


def _full_epoch(path, os_cache):
    loader = _loader(path, os_cache=os_cache)
    batches = sum(1 for _ in loader)
    assert batches == len(loader) == 3
    return weakref.ref(loader)


def _mid_epoch(path, os_cache):
    loader = _loader(path, os_cache=os_cache)
    it = iter(loader)
    image, label = next(it)
    assert image.shape == (8, 3, 96, 96) and image.dtype == torch.float32
    return weakref.ref(loader)


def _python_stages(path, os_cache):
    loader = _loader(path, _python_stage_pipes(), os_cache=os_cache)
    for image, _ in loader:
        assert image.shape == (8, 3, 96, 96)
    it = iter(loader)
    next(it)  # and one epoch left mid-way with its stage thread running
    return weakref.ref(loader)


def _custom_order(path, os_cache):
    loader = _loader(path, order=_Reversed, os_cache=os_cache, drop_last=False)
    labels = torch.cat([label for _, label in loader])
    assert len(labels) == 24
    return weakref.ref(loader)


def _failing_user_code(path, os_cache):
    loader = _loader(path, {"image": [RandomResizedCropRGBImageDecoder((96, 96)), _Fails()], "label": None},
                     os_cache=os_cache, order=OrderOption.SEQUENTIAL)
    it = iter(loader)
    next(it)
    with pytest.raises(RuntimeError, match="user code failed"):
        next(it)
    next(it)  # the epoch goes on after a failed batch
    return weakref.ref(loader)


CASES = [_full_epoch, _mid_epoch, _python_stages, _custom_order, _failing_user_code]


@pytest.mark.parametrize("os_cache", [True, False], ids=["os_cache", "process_cache"])
@pytest.mark.parametrize("case", CASES, ids=lambda f: f.__name__.strip("_"))
def test_dropped_loader_is_freed_without_the_collector(photos, no_gc, case, os_cache):
    ref = case(photos, os_cache)
    assert ref() is None, "the dropped loader is kept alive by a reference cycle"
    _check_back(no_gc)


def test_held_batch_outlives_its_dropped_loader(photos, no_gc):
    loader = _loader(photos, order=OrderOption.SEQUENTIAL)
    image, label = next(iter(loader))
    want = image.clone()
    ref = weakref.ref(loader)
    del loader
    assert ref() is None
    # Another loader reuses memory freely; the held batch must not change.
    for other in _loader(photos, order=OrderOption.RANDOM):
        del other
    assert torch.equal(image, want)
    del image, label
    _check_back(no_gc)


def test_traversal_order_does_not_keep_its_loader(photos):
    loader = _loader(photos)
    order = loader.traversal_order
    assert order.loader is loader
    del loader
    with pytest.raises(ReferenceError, match="QuasiRandom: the Loader this order belonged to has been freed"):
        order.loader


def test_rss_is_bounded_over_make_read_drop_rounds(photos, no_gc):
    """30 rounds of make, read (whole or part of an epoch), drop. Each loader
    holds about 8 MiB of batch memory (slots of 8 x 3 x 96 x 96 float32 and
    uint8 batches); kept alive they would add some 240 MiB, freed they cost
    nothing after the first rounds. The bound: 48 MiB over rounds 5-30.
    The custom operation runs uncompiled: numba never frees the code it
    compiles (about 5 MiB for each new operation), which is not the loader's."""
    from ffcv_go.pipeline.compiler import Compiler
    was = Compiler.is_enabled
    Compiler.set_enabled(False)
    try:
        rss = _make_read_drop_rounds(photos)
    finally:
        Compiler.set_enabled(was)
    _check_back(no_gc)
    assert rss[-1] - rss[4] < 48 << 20, f"RSS grew {(rss[-1] - rss[4]) >> 20} MiB over 25 rounds"


def _make_read_drop_rounds(photos):
    rss = []
    for k in range(30):
        loader = _loader(photos, _python_stage_pipes() if k % 3 == 2 else None, os_cache=bool(k % 2),
                         order=OrderOption.QUASI_RANDOM if k % 2 else OrderOption.RANDOM, batches_ahead=6)
        for n, batch in enumerate(loader):
            del batch
            if k % 4 == 3 and n == 1:
                break  # abandoned mid-epoch
        del loader
        rss.append(rss_bytes())
    return rss
