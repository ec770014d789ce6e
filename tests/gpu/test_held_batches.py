"""GPU batches held by the consumer stay intact while the loader runs on:
200 steps, a ring of the last 20 batches, each compared with the CPU copy
taken when it arrived and with the CPU loader's batch. Then close in the
middle of an epoch leaves CUDA usable."""
import contextlib

import pytest
import torch

from conftest import has_cuda, needs_cuda
from ffcv_go import Loader
from ffcv_go.fields.decoders import CenterCropRGBImageDecoder, IntDecoder
from ffcv_go.loader import OrderOption
from ffcv_go.transforms import Squeeze, ToDevice, ToTensor, ToTorchImage

STEPS = 200
RING = 20
BATCH = 32
RES = 96


def make_loader(path, device=None):
    to = [ToDevice(device, non_blocking=True)] if device is not None else []
    return Loader(path, batch_size=BATCH, num_workers=4, order=OrderOption.RANDOM, seed=0, drop_last=True,
                  batches_ahead=3,
                  pipelines={"image": [CenterCropRGBImageDecoder((RES, RES), ratio=224 / 256), ToTensor(), *to,
                                       ToTorchImage()],
                             "label": [IntDecoder(), ToTensor(), Squeeze(), *to]})


def epochs(loader):
    while True:
        yield from loader


@pytest.mark.cpu_ok
@pytest.mark.parametrize("stream", ["default", "side"])
def test_held_batches_stay_intact(photos, target, stream):
    if stream == "side":
        needs_cuda("a side stream")
    cpu_loader, device_loader = make_loader(photos), make_loader(photos, target)
    assert len(cpu_loader) > 0, "the dataset holds less than one batch"
    work = torch.randn(1024, 1024, device=target)
    side = None
    if stream == "side":
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())  # work was made on the default stream
    ring = []  # (step, images, labels on the device, their CPU copies at arrival)
    with torch.cuda.stream(side) if side is not None else contextlib.nullcontext():
        # Both loaders draw the same order epoch after epoch (seed + epoch).
        for step, (images, labels), (ref_images, ref_labels) in zip(range(STEPS), epochs(device_loader),
                                                                    epochs(cpu_loader)):
            assert images.device.type == target and labels.device == images.device
            arrived = (images.cpu(), labels.cpu())  # waits for this stream's work only
            assert torch.equal(arrived[0], ref_images), f"step {step}: images differ from the CPU loader's"
            assert torch.equal(arrived[1], ref_labels), f"step {step}: labels differ from the CPU loader's"
            ring.append((step, images, labels, arrived))
            # GPU work that keeps the stream busy and allocates, so that freed
            # memory is reused while the ring still holds its batches
            for _ in range(4):
                work = torch.tanh(work @ work * 1e-3)
            scratch = torch.empty(images.numel() * 2, dtype=torch.uint8, device=target).fill_(step % 251)
            del scratch
            if len(ring) > RING:
                check(ring.pop(0), step)
            if step % 10 == 9:
                for held in ring:
                    check(held, step)
        for held in ring:
            check(held, STEPS)
    device_loader.close()
    cpu_loader.close()
    if has_cuda():
        torch.cuda.synchronize()


def check(held, now):
    step, images, labels, (images0, labels0) = held
    assert torch.equal(images.cpu(), images0), f"images of step {step} changed by step {now}"
    assert torch.equal(labels.cpu(), labels0), f"labels of step {step} changed by step {now}"


@pytest.mark.cpu_ok
def test_close_mid_epoch_leaves_cuda_usable(photos, target):
    for _ in range(3):
        loader = make_loader(photos, target)
        it = iter(loader)
        held = [next(it) for _ in range(min(3, len(loader)))]
        loader.close()  # as Lightning does with an old loader, mid-epoch
        del it
        for images, labels in held:
            assert images.float().mean().item() >= 0
    x = torch.ones(1000, device=target)
    assert (x @ x).item() == 1000.0
    if has_cuda():
        torch.cuda.synchronize()
        # nothing left behind by register/unregister: a fresh kernel launch reports no error
        torch.cuda.current_stream().synchronize()
