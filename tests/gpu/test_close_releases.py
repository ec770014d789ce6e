"""close() leaves nothing behind on the GPU side: no batch-slot page-locking
(cudaHostRegister) survives it, the loader's Go handles are freed, and once
the consumer drops its batches the CUDA memory they held is back to where it
was before the loader existed. Checked mid-epoch (copies still in flight),
after a whole epoch, and with a loader that was never iterated."""
import ctypes
import gc

import pytest
import torch

from conftest import needs_cuda
from ffcv_go import Loader, _lib
from ffcv_go.fields.decoders import IntDecoder, RandomResizedCropRGBImageDecoder
from ffcv_go.loader import OrderOption
from ffcv_go.transforms import Squeeze, ToDevice, ToTensor, ToTorchImage

# cudaPointerGetAttributes' memory types (driver_types.h)
UNREGISTERED, HOST = 0, 1


def memory_type(ptr):
    """What CUDA says a host address is: HOST while it is page-locked,
    UNREGISTERED once it is not (the runtime torch loaded answers). The
    attributes are read into a buffer larger than any CUDA version's
    cudaPointerAttributes: only its first field, the type, is used."""
    rt = _lib.cudart()._rt
    attrs = ctypes.create_string_buffer(256)
    err = rt.cudaPointerGetAttributes(attrs, ctypes.c_void_p(ptr))
    if err != 0:
        rt.cudaGetLastError()
        return UNREGISTERED
    return int.from_bytes(attrs.raw[:4], "little", signed=True)


def make_loader(path):
    return Loader(path, batch_size=64, num_workers=8, order=OrderOption.RANDOM, seed=0, drop_last=True,
                  batches_ahead=3,
                  pipelines={"image": [RandomResizedCropRGBImageDecoder((160, 160)), ToTensor(),
                                       ToDevice("cuda", non_blocking=True), ToTorchImage()],
                             "label": [IntDecoder(), ToTensor(), Squeeze(), ToDevice("cuda", non_blocking=True)]})


def pinned_ptrs(loader):
    return {p for build in loader._builds._set for p in build.pinned.ptrs}


@pytest.mark.parametrize("when", ["mid_epoch", "after_epoch", "never_iterated"])
def test_close_releases_everything(photos, when):
    needs_cuda("page-locked slots and CUDA memory")
    gc.collect()
    torch.cuda.synchronize()
    allocated0 = torch.cuda.memory_allocated()
    live0 = _lib.live_objects()

    loader = make_loader(photos)
    assert len(loader) >= 2, "the dataset holds fewer than two batches"
    held, ptrs = [], set()
    if when != "never_iterated":
        it = iter(loader)
        steps = 2 if when == "mid_epoch" else len(loader)
        for _ in range(steps):
            held.append(next(it))
            ptrs |= pinned_ptrs(loader)
        assert ptrs, "no batch slot was page-locked for ToDevice('cuda', non_blocking=True)"
        assert all(memory_type(p) == HOST for p in pinned_ptrs(loader)), "a recorded slot is not page-locked"
        held_bytes = sum(x.numel() * x.element_size() for batch in held for x in batch)
        assert torch.cuda.memory_allocated() >= allocated0 + held_bytes
    loader.close()
    torch.cuda.synchronize()

    assert not pinned_ptrs(loader), "close() kept page-locked slots"
    still = [hex(p) for p in ptrs if memory_type(p) != UNREGISTERED]
    assert not still, f"slots still page-locked after close(): {still}"
    # The batches already handed out stay valid after close().
    for images, labels in held:
        assert images.is_cuda and images.float().mean().item() >= 0 and labels.is_cuda
    images = labels = None  # the loop's names held the last batch too
    del held
    if when != "never_iterated":
        del it
    del loader
    gc.collect()
    torch.cuda.synchronize()
    assert torch.cuda.memory_allocated() == allocated0, "CUDA memory still held once the batches are dropped"
    assert _lib.live_objects() == live0, "Go handles or batch slots left alive"
