"""Batches copied to the GPU by ToDevice equal the CPU batches, bit for bit,
while the consumer keeps the GPU busy (the check of FFCV's test_cuda
nonblocking test, with exact checksums instead of a tolerance)."""
import contextlib

import numpy as np
import pytest
import torch

from conftest import has_cuda, needs_cuda, write
from ffcv_go import Loader
from ffcv_go.fields import IntField, NDArrayField
from ffcv_go.fields.decoders import IntDecoder, NDArrayDecoder
from ffcv_go.loader import OrderOption
from ffcv_go.transforms import Squeeze, ToDevice, ToTensor

SIZE = 20_000
BATCH = 128
N = 1024


def sample(i):
    rng = np.random.default_rng(i)
    return rng.random(SIZE) > 0.5, rng.random(SIZE, dtype=np.float32), i


@pytest.fixture(scope="module")
def arrays(tmp_path_factory):
    fields = {"mask": NDArrayField(np.dtype("bool"), (SIZE,)),
              "targets": NDArrayField(np.dtype("float32"), (SIZE,)), "idx": IntField()}
    return write(tmp_path_factory.mktemp("arrays") / "arrays.beton", fields, N, sample)


def loader(path, device=None, non_blocking=True):
    to = [ToDevice(device, non_blocking=non_blocking)] if device is not None else []
    return Loader(path, batch_size=BATCH, num_workers=4, order=OrderOption.RANDOM, seed=0, drop_last=False,
                  pipelines={"mask": [NDArrayDecoder(), ToTensor(), *to],
                             "targets": [NDArrayDecoder(), ToTensor(), *to],
                             "idx": [IntDecoder(), ToTensor(), Squeeze(), *to]})


def checksums(mask, targets, idx):
    """Per sample: the number of set mask entries, the sum of the float32 bit
    patterns of targets (exact integers on any device), and the index."""
    return torch.stack([mask.to(torch.int64).sum(1), targets.view(torch.int32).to(torch.int64).sum(1),
                        idx.to(torch.int64)], 1)


@pytest.mark.cpu_ok
@pytest.mark.parametrize("stream", ["default", "side"])
@pytest.mark.parametrize("non_blocking", [True, False])
@pytest.mark.parametrize("index", ["", ":0"])
def test_device_batches_equal_cpu_batches(arrays, target, index, non_blocking, stream):
    if target == "cpu":
        if index or stream == "side":
            needs_cuda("a device index or a side stream")
    device = torch.device(target + index)
    reference = [checksums(*b) for b in loader(arrays)]

    weight = torch.randn(SIZE, 64, device=device)
    x = torch.empty(BATCH, SIZE, device=device)
    total = torch.zeros(64, device=device)
    side = None
    if stream == "side":
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())  # weight, x and total were made on the default stream
    got = []
    # Nothing here synchronises with the host: the consumer runs as far ahead
    # as the loader lets it, so a batch used before its copy ends shows up.
    with torch.cuda.stream(side) if side is not None else contextlib.nullcontext():
        for mask, targets, idx in loader(arrays, target + index, non_blocking):
            assert mask.device.type == device.type and targets.device == mask.device == idx.device
            got.append(checksums(mask, targets, idx))
            x[:len(mask)].copy_(mask)
            total += (x[:len(mask)] @ weight).sum(0)
    if has_cuda():
        torch.cuda.synchronize()
    assert len(got) == len(reference)
    for k, (g, r) in enumerate(zip(got, reference)):
        assert torch.equal(g.cpu(), r), f"batch {k} differs from the CPU loader's"

    expected = torch.zeros(64, device=device)
    for b in loader(arrays):
        m = b[0].to(device, torch.float32)
        expected += (m @ weight).sum(0)
    torch.testing.assert_close(total, expected, rtol=1e-5, atol=1e-2)

