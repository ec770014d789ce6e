"""Loader faults: a custom transform that raises, a consumer that breaks out or
drops its iterator, a loader closed under a running iterator, interpreter exit
and SIGINT mid-epoch, and a 200-epoch soak. The epoch goes on or stops cleanly;
nothing leaks, crashes or hangs (the risky cases run in a subprocess).
"""
import gc
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from conftest import MiB, PYTHONPATH, collect, last_json

from ffcv_go import Loader
from ffcv_go.fields.decoders import IntDecoder
from ffcv_go.loader import OrderOption
from ffcv_go.pipeline.operation import Operation
from ffcv_go.transforms import ToTensor



class Boom(Operation):
    """A custom operation whose code raises on the batch holding label 16
    (plain Python, or numba-compiled when numba is installed)."""

    def declare_state_and_memory(self, previous_state):
        return previous_state, None

    def generate_code(self):
        def code(inp, dst):
            if inp.min() <= 16 and inp.max() >= 16:
                raise ValueError("boom in a custom transform")
            return inp
        return code


def test_exception_in_custom_transform(small_jpeg_file, no_leaks):
    loader = Loader(small_jpeg_file, batch_size=8, num_workers=2,
                    pipelines={"label": [IntDecoder(), Boom(), ToTensor()]})
    for epoch in range(2):
        it = iter(loader)
        next(it), next(it)
        with pytest.raises(ValueError, match="boom"):
            next(it)
        # The epoch goes on after the failed batch.
        assert [b[1][0, 0].item() for b in it] == [24, 32, 40, 48, 56]
    del it
    loader.close()


@pytest.mark.parametrize("os_cache", [True, False])
def test_consumer_breaks_out(small_jpeg_file, no_leaks, os_cache):
    loader = Loader(small_jpeg_file, batch_size=4, num_workers=4, os_cache=os_cache, batches_ahead=4)
    for _ in range(5):
        for k, batch in enumerate(loader):
            if k == 2:
                break
    del batch
    assert len(collect(loader)) == 16


def test_del_live_iterator(small_jpeg_file, no_leaks):
    loader = Loader(small_jpeg_file, batch_size=4, num_workers=4, order=OrderOption.RANDOM)
    for _ in range(5):
        it = iter(loader)
        held = next(it)
        del it
        gc.collect()
        assert held[0].shape == (4, 40, 48, 3)  # a batch outlives its iterator
        del held
    loader.close()


def test_loader_closed_under_a_running_iterator(small_jpeg_file, no_leaks):
    loader = Loader(small_jpeg_file, batch_size=4, num_workers=2)
    it = iter(loader)
    first = next(it)
    loader.close()
    with pytest.raises(Exception):
        for _ in it:
            pass
    assert first[1].view(-1).tolist() == [0, 1, 2, 3]


EXIT_SCRIPT = """
import sys, threading, time
import torch
from ffcv_go import Loader
from ffcv_go.loader import OrderOption
loader = Loader(sys.argv[1], batch_size=2, num_workers=4, order=OrderOption.RANDOM, batches_ahead=8,
                os_cache=sys.argv[3] == "os")
mode = sys.argv[2]
if mode == "main":
    it = iter(loader)
    held = next(it)
elif mode == "thread":
    def spin():
        while True:
            for b in loader:
                pass
    threading.Thread(target=spin, daemon=True).start()
    time.sleep(0.5)
elif mode == "exit_in_loop":
    for k, b in enumerate(loader):
        if k == 3:
            sys.exit(0)
print("exiting")
"""


@pytest.mark.parametrize("mode", ["main", "thread", "exit_in_loop"])
@pytest.mark.parametrize("cache", ["os", "process"])
def test_interpreter_exit_with_running_iterator(tmp_path, small_jpeg_file, mode, cache):
    script = tmp_path / "exit.py"
    script.write_text(EXIT_SCRIPT)
    env = dict(os.environ, PYTHONPATH=PYTHONPATH)
    try:
        proc = subprocess.run([sys.executable, str(script), str(small_jpeg_file), mode, cache], capture_output=True,
                              text=True, timeout=60, env=env)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"interpreter did not exit: {e.stderr}")
    assert proc.returncode == 0, proc.stderr


def test_sigint_while_iterating(tmp_path, small_jpeg_file):
    script = tmp_path / "sigint.py"
    script.write_text(textwrap.dedent("""
        import sys
        from ffcv_go import Loader
        loader = Loader(sys.argv[1], batch_size=4, num_workers=2)
        print("ready", flush=True)
        while True:
            for b in loader:
                pass
    """))
    env = dict(os.environ, PYTHONPATH=PYTHONPATH)
    proc = subprocess.Popen([sys.executable, str(script), str(small_jpeg_file)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("SIGINT did not stop a process iterating a loader")
    assert "KeyboardInterrupt" in err and "Fatal" not in err and "panic" not in err, err



INTERRUPTED_EXPORT_SCRIPT = """
import sys
import torch.utils.dlpack
from conftest import settle
from ffcv_go import Loader, _lib
taken = torch.utils.dlpack.from_dlpack
calls = 0

def from_dlpack(capsule):
    global calls
    t = taken(capsule)  # torch owns the batch from here
    calls += 1
    if calls == int(sys.argv[2]):
        raise KeyboardInterrupt  # Ctrl-C landing inside torch's wrapper, after it took the capsule
    return t

torch.utils.dlpack.from_dlpack = from_dlpack
loader = Loader(sys.argv[1], batch_size=4, num_workers=2)
try:
    for batch in loader:
        pass
except KeyboardInterrupt:
    print("interrupted", flush=True)
batch = None  # the last batch received is ours to drop
loader.close()
del loader
settle()
print("live", _lib.live_objects(), flush=True)
"""


@pytest.mark.parametrize("call", [1, 2, 5])  # the image, the label, a later batch's image
def test_ctrl_c_after_torch_took_a_batch_frees_it_once(tmp_path, small_jpeg_file, call):
    """A glibc "double free" once aborted a process given SIGINT while iterating: the
    exporter released a tensor torch already owned. Each is now released exactly once."""
    script = tmp_path / "interrupted.py"
    script.write_text(INTERRUPTED_EXPORT_SCRIPT)
    env = dict(os.environ, PYTHONPATH=PYTHONPATH)
    proc = subprocess.run([sys.executable, str(script), str(small_jpeg_file), str(call)], capture_output=True,
                          text=True, timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:2] == ["interrupted", "live 0"], (proc.stdout, proc.stderr)

SOAK_SCRIPT = """
import gc, json, os, sys, threading, time
import numpy as np
import torch
from conftest import rss_bytes
from ffcv_go import Loader, _lib
from ffcv_go.loader import OrderOption
from ffcv_go.fields.decoders import IntDecoder, RandomResizedCropRGBImageDecoder
from ffcv_go.pipeline.operation import Operation
from ffcv_go.transforms import NormalizeImage, RandomHorizontalFlip, ToTensor, ToTorchImage


class AddOne(Operation):
    def declare_state_and_memory(self, previous_state):
        return previous_state, None

    def generate_code(self):
        def code(inp, dst):
            return inp + 1
        return code


goroutines_before = _lib.goroutines()
loader = Loader(sys.argv[1], batch_size=16, num_workers=2, order=OrderOption.QUASI_RANDOM, seed=3,
                os_cache=sys.argv[2] == "os", pipelines={
                    "image": [RandomResizedCropRGBImageDecoder((24, 24)), RandomHorizontalFlip(), ToTensor(),
                              ToTorchImage(), NormalizeImage(np.array([120.0] * 3), np.array([60.0] * 3),
                                                             np.float16)],
                    "label": [IntDecoder(), AddOne(), ToTensor()]})
samples = []
for epoch in range(200):
    labels = []
    for img, label in loader:
        assert img.shape == (16, 3, 24, 24) and img.dtype == torch.float16
        labels += label.view(-1).tolist()
    assert sorted(labels) == list(range(1, 65)), labels
    if epoch % 10 == 9:
        gc.collect()
        samples.append((rss_bytes(), len(os.listdir("/proc/self/fd")), len(os.listdir("/proc/self/task")),
                        _lib.live_objects(), threading.active_count()))
loader.close()
del loader, img, label
gc.collect()
deadline = time.monotonic() + 5  # the workers exit just after they signal the close
while _lib.goroutines() > goroutines_before and time.monotonic() < deadline:
    time.sleep(0.01)
print(json.dumps({"samples": samples, "objects_after_close": _lib.live_objects(),
                  "goroutines": [goroutines_before, _lib.goroutines()]}))
"""


@pytest.mark.parametrize("cache", ["os", "process"])
def test_soak_many_epochs(tmp_path, small_jpeg_file, cache):
    """200 epochs in a fresh interpreter: memory, fds and threads stay flat after warm-up."""
    script = tmp_path / "soak.py"
    script.write_text(SOAK_SCRIPT)
    env = dict(os.environ, PYTHONPATH=PYTHONPATH)
    try:
        proc = subprocess.run([sys.executable, str(script), str(small_jpeg_file), cache], capture_output=True,
                              text=True, timeout=120, env=env)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"soak hung: {e.stderr}")
    res = last_json(proc)
    samples = res["samples"]
    base = samples[1]  # after 20 epochs of warm-up
    for rss, fds, threads, objs, pythreads in samples[2:]:
        assert rss - base[0] < 32 * MiB, [s[0] // MiB for s in samples]
        assert fds == base[1], [s[1] for s in samples]
        # The Go runtime keeps the OS threads it made for blocking calls; their
        # number levels off a little above the warm-up count.
        assert threads <= base[2] + 4, [s[2] for s in samples]
        assert objs == base[3] and pythreads == base[4], samples
    assert res["objects_after_close"] == 0, res
    assert res["goroutines"][1] == res["goroutines"][0], res["goroutines"]
