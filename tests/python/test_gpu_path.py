"""The GPU path's threading and ordering, checked without a GPU.

No CUDA device exists here, so ``torch.cuda``, the CUDA runtime calls the
loader makes (``_lib.cudart()``) and host-to-device copies are replaced by a
recording stand-in that keeps to the calls the code makes: which thread
resolves the device and copies, which stream waits for which event, and in
what order closing stops threads, waits for copies, unregisters slots and
frees memory. ``make test-gpu`` runs the same paths on a real GPU.
"""
import contextlib
import threading
import warnings

import numpy as np
import pytest
import torch

from conftest import write

from ffcv_go import Loader, _lib
from ffcv_go.fields import IntField, NDArrayField
from ffcv_go.fields.decoders import IntDecoder, NDArrayDecoder
from ffcv_go.loader import OrderOption
from ffcv_go.transforms import Squeeze, ToDevice, ToTensor

N = 48


@pytest.fixture(scope="module")
def arrays(tmp_path_factory):
    """48 samples: a (64,) uint8 array (all equal to the id mod 251) and the id."""
    return write(tmp_path_factory.mktemp("gpu") / "arrays.beton",
                 {"x": NDArrayField(np.dtype("uint8"), (64,)), "id": IntField()},
                 [(np.full(64, i % 251, dtype=np.uint8), i) for i in range(N)])


class _Stream:
    def __init__(self, cuda, device, name):
        self.cuda, self.device, self.name = cuda, device, name

    def wait_event(self, event):
        self.cuda.log("wait_event", stream=self, event=event)

    def wait_stream(self, other):
        self.cuda.log("wait_stream", stream=self, other=other)

    def __repr__(self):
        return f"<stream {self.name}>"


class _Event:
    def __init__(self, cuda):
        self.cuda, self.stream, self.synced = cuda, None, False
        self.done = False

    def record(self, stream=None):
        self.stream = stream or self.cuda.current_stream()
        self.cuda.log("record", event=self, stream=self.stream)

    def query(self):
        return self.done

    def synchronize(self):
        self.synced = self.done = True
        self.cuda.log("synchronize", event=self)


class _Runtime:
    """The loader's CUDA runtime calls, recorded; register_status: what
    cudaHostRegister returns."""

    def __init__(self, cuda, register_status=0):
        self.cuda, self.register_status = cuda, register_status
        self.last_error = 0

    def host_register(self, ptr, size):
        self.cuda.log("register", ptr=ptr, device=self.cuda.current_device())
        self.last_error = self.register_status
        return self.register_status

    def host_unregister(self, ptr):
        self.cuda.log("unregister", ptr=ptr)
        return 0

    def get_last_error(self):
        self.cuda.log("get_last_error")
        err, self.last_error = self.last_error, 0
        return err

    def error_string(self, code):
        return f"cudaError {code}"


class FakeCuda:
    """torch.cuda as far as the loader uses it, with a current device and a
    current stream per thread, and copies that stay on the CPU but are
    recorded with the device, stream and thread they were issued from."""

    def __init__(self):
        self.events = []
        self._lock = threading.Lock()
        self._local = threading.local()
        self.default = {}

    def log(self, what, **kw):
        with self._lock:
            self.events.append(dict(kw, what=what, thread=threading.current_thread().name))

    def of(self, what):
        return [e for e in self.events if e["what"] == what]

    # torch.cuda
    def is_available(self):
        return True

    def device_count(self):
        return 4

    def init(self):
        pass

    def current_device(self):
        return getattr(self._local, "device", 0)

    def set_device(self, device):
        index = device.index if isinstance(device, torch.device) else int(device)
        self.log("set_device", device=index)
        self._local.device = index

    @contextlib.contextmanager
    def device(self, device):
        old = self.current_device()
        self._local.device = device.index if isinstance(device, torch.device) else int(device)
        try:
            yield
        finally:
            self._local.device = old

    def Stream(self, device=None):  # noqa: N802 - torch's name
        return _Stream(self, device, f"side{len(self.of('stream')) + 1}")

    @contextlib.contextmanager
    def stream(self, s):
        old = getattr(self._local, "stream", None)
        self._local.stream = s
        try:
            yield
        finally:
            self._local.stream = old

    def current_stream(self, device=None):
        s = getattr(self._local, "stream", None)
        if s is None:
            d = self.current_device() if device is None else device.index
            s = self.default.setdefault(d, _Stream(self, d, f"default{d}"))
        return s

    def Event(self):  # noqa: N802
        return _Event(self)


@pytest.fixture
def fake_cuda(monkeypatch):
    cuda = FakeCuda()
    for name in ("is_available", "device_count", "init", "current_device", "set_device", "device", "Stream", "stream",
                 "current_stream", "Event"):
        monkeypatch.setattr(torch.cuda, name, getattr(cuda, name))
    runtime = _Runtime(cuda)
    monkeypatch.setattr(_lib, "cudart", lambda: runtime)
    cuda.runtime = runtime

    real_to, real_empty = torch.Tensor.to, torch.empty

    def to(self, *args, **kw):
        target = args[0] if args else kw.get("device")
        if isinstance(target, (str, torch.device)) and torch.device(target).type == "cuda":
            cuda.log("copy", device=torch.device(target), ptr=self.data_ptr(),
                     non_blocking=kw.get("non_blocking", False), stream=cuda.current_stream())
            return self.clone()
        return real_to(self, *args, **kw)

    def empty(*args, pin_memory=False, **kw):
        if pin_memory:
            cuda.log("pinned_alloc")
        return real_empty(*args, **kw)

    monkeypatch.setattr(torch.Tensor, "to", to)
    monkeypatch.setattr(torch.Tensor, "record_stream", lambda self, s: cuda.log("record_stream", stream=s))
    monkeypatch.setattr(torch, "empty", empty)
    return cuda


def _loader(path, device="cuda", **kw):
    return Loader(path, batch_size=8, num_workers=2, order=OrderOption.SEQUENTIAL,
                  pipelines={"x": [NDArrayDecoder(), ToTensor(), ToDevice(device, non_blocking=True)],
                             "id": [IntDecoder(), ToTensor(), Squeeze()]}, **kw)


def test_device_is_the_training_threads_and_the_stage_thread_uses_it(arrays, fake_cuda):
    torch.cuda.set_device(3)  # as torchrun's rank 3 does before training
    loader = _loader(arrays)
    got = [(x.clone(), i.clone()) for x, i in loader]
    assert len(got) == N // 8
    for x, i in got:
        assert torch.equal(x, (i % 251).to(torch.uint8)[:, None].expand(-1, 64))
    copies = fake_cuda.of("copy")
    assert len(copies) == N // 8
    assert {c["device"] for c in copies} == {torch.device("cuda", 3)}
    assert all(c["thread"] == "ffcv_go-stages" and c["non_blocking"] for c in copies)
    stage = [e["device"] for e in fake_cuda.of("set_device") if e["thread"] == "ffcv_go-stages"]
    assert stage and set(stage) == {3}, "the stage thread never made the training thread's device current"
    regs = fake_cuda.of("register")
    assert regs and {r["device"] for r in regs} == {3}, "slots registered under another device than the batches'"
    # An explicit index is kept, whatever device is current.
    n = len(copies)
    for _ in _loader(arrays, device="cuda:1"):
        pass
    assert {c["device"] for c in fake_cuda.of("copy")[n:]} == {torch.device("cuda", 1)}


def test_training_stream_waits_for_each_batch(arrays, fake_cuda):
    mine = torch.cuda.Stream(torch.device("cuda", 0))
    loader = _loader(arrays)
    with torch.cuda.stream(mine):
        for x, _ in loader:
            # At hand-over the stream current on this thread waited for the
            # event recorded after this batch's copy, on the copy's stream.
            waits = [e for e in fake_cuda.of("wait_event") if e["thread"] == threading.current_thread().name]
            assert waits and waits[-1]["stream"] is mine
            event = waits[-1]["event"]
            copy = [c for c in fake_cuda.of("copy") if c["stream"] is event.stream]
            assert copy, "the event was not recorded on the stream the copy ran on"
            assert event.stream is not mine and event.stream.name.startswith("side")
    assert len([e for e in fake_cuda.of("wait_event") if e["stream"] is mine]) == N // 8


def test_close_stops_threads_then_waits_for_copies_then_unregisters_then_frees(arrays, fake_cuda, monkeypatch):
    closed = []
    real_close = _lib.close
    monkeypatch.setattr(_lib, "close", lambda h: (closed.append((h, len(fake_cuda.events))), real_close(h)))
    loader = _loader(arrays, batches_ahead=2)
    it = iter(loader)
    next(it)
    next(it)  # batches queued ahead, copies "in flight" (their events not done)
    stage = [t for t in threading.enumerate() if t.name == "ffcv_go-stages"]
    assert stage
    build = loader._build.handle
    loader.close()
    ev = fake_cuda.events
    unreg = [k for k, e in enumerate(ev) if e["what"] == "unregister"]
    assert unreg, "pinned slots were not unregistered"
    assert not any(t.is_alive() for t in stage), "stage thread still running after close"
    syncs = [k for k, e in enumerate(ev) if e["what"] == "synchronize"]
    recorded = [e["event"] for e in ev if e["what"] == "record"]
    assert all(e.done for e in recorded), "a copy in flight was not waited for"
    assert syncs and max(syncs) < min(unreg), "slots unregistered before the copies from them were waited for"
    assert {e["ptr"] for e in ev if e["what"] == "unregister"} == {e["ptr"] for e in ev if e["what"] == "register"}
    freed = [n for h, n in closed if h == build]
    assert freed and freed[0] > max(unreg), "the Go loader was freed before its slots were unregistered"
    n = len(fake_cuda.of("register"))
    with pytest.raises(ValueError, match="the loader was closed during this epoch"):
        next(it)
    assert len(fake_cuda.of("register")) == n, "a slot was registered after close"


def test_register_failure_is_read_back_and_warned(arrays, fake_cuda):
    fake_cuda.runtime.register_status = 2  # cudaErrorMemoryAllocation
    loader = _loader(arrays)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        batches = [x.clone() for x, _ in loader]
    assert len(batches) == N // 8
    assert any("page-locking" in str(w.message) and "cudaError 2" in str(w.message) for w in caught)
    kinds = [e["what"] for e in fake_cuda.events if e["what"] in ("register", "get_last_error")]
    # every failed register is followed by reading the error back; a slot
    # that failed is not tried again every batch
    assert kinds and all(kinds[k + 1] == "get_last_error" for k, w in enumerate(kinds) if w == "register")
    assert fake_cuda.runtime.last_error == 0, "the failed call's error was left behind for a later kernel"
    loader.close()
    assert not fake_cuda.of("unregister"), "a slot that failed to register was unregistered"


def test_buffers_made_for_a_gpu_batch_are_pinned(arrays, fake_cuda):
    # A torch module between the decoder and ToDevice: the batch it makes is
    # a new buffer (not a slot); before the copy it must be pinned memory.
    loader = Loader(arrays, batch_size=8, num_workers=1,
                    pipelines={"x": [NDArrayDecoder(), _AddOne(), ToTensor(), ToDevice("cuda")], "id": None})
    for _ in loader:
        pass
    assert len(fake_cuda.of("pinned_alloc")) >= N // 8


from ffcv_go.pipeline.allocation_query import AllocationQuery  # noqa: E402
from ffcv_go.pipeline.operation import Operation  # noqa: E402


class _AddOne(Operation):
    def generate_code(self):
        def add_one(x, dst):
            dst[:] = x + 1
            return dst
        return add_one

    def declare_state_and_memory(self, previous_state):
        return previous_state, AllocationQuery(previous_state.shape, previous_state.dtype)
