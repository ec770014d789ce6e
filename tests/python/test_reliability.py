"""Reliability: corrupt files, writer and loader faults, the C ABI under misuse,
concurrency and a soak test. Nothing is lost silently, nothing crashes or hangs.

Anything that could crash or hang the interpreter runs in a subprocess with a
timeout, so it shows up as a failed test rather than a dead pytest.
"""
import ctypes
import gc
import json
import os
import resource
import shutil
import signal
import struct
import subprocess
import sys
import textwrap
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import torch

from conftest import FnDataset, MiB, check_resources_back, collect, resources, rss_bytes, settle, write

from ffcv_go import CorruptFileError, DatasetWriter, Loader, SampleError, _lib
from ffcv_go.fields import BytesField, IntField, NDArrayField, RGBImageField
from ffcv_go.fields.decoders import (CenterCropRGBImageDecoder, IntDecoder, RandomResizedCropRGBImageDecoder,
                                     SimpleRGBImageDecoder)
from ffcv_go.loader import OrderOption
from ffcv_go.pipeline.operation import Operation
from ffcv_go.reader import Reader
from ffcv_go.transforms import NormalizeImage, RandomHorizontalFlip, ToTensor, ToTorchImage

ROOT = Path(__file__).resolve().parents[2]
PYTHONPATH = os.pathsep.join([str(ROOT / "python"), str(Path(__file__).parent)])


def run_py(code, timeout=60, **kw):
    """Runs code in a fresh interpreter; a hang past timeout fails the test."""
    env = dict(os.environ, PYTHONPATH=PYTHONPATH, PYTHONFAULTHANDLER="1")
    try:
        return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                              timeout=timeout, env=env, **kw)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"subprocess hung for {timeout} s; output so far:\n{e.stdout}\n{e.stderr}")


def last_json(proc):
    """The JSON object a subprocess printed last, after checking it did not crash."""
    assert proc.returncode == 0, f"exit code {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ---- data -----------------------------------------------------------------------------------

N_JPEG = 48


def noise_image(i, side=300):
    """Incompressible pixels: about 100 KB as a JPEG, so the file spans pages."""
    return np.random.default_rng(i).integers(0, 256, (side, side, 3), dtype=np.uint8)


@pytest.fixture(scope="module")
def jpeg_file(tmp_path_factory):
    """N_JPEG noise JPEGs (image) with their index (label) on several 2 MiB pages."""
    path = tmp_path_factory.mktemp("rel") / "jpeg.beton"
    return write(path, {"image": RGBImageField(write_mode="jpg", jpeg_quality=90), "label": IntField()},
                 FnDataset(N_JPEG, lambda i: (noise_image(i), i)), num_workers=2)


@pytest.fixture(scope="module")
def jpeg_info(jpeg_file):
    """Where each sample's image lives: (metadata offset, row size, page size, ptrs, sizes, file bytes)."""
    r = Reader(jpeg_file)
    ptrs = np.asarray(r.metadata["f0"]["data_ptr"], dtype=np.int64)
    table = {int(p): int(s) for p, s in zip(r.alloc_table["ptr"], r.alloc_table["size"])}
    info = dict(meta=r._info["metadata_offset"], row=r._info["row_size"], page=r.page_size, ptrs=ptrs,
                sizes=np.array([table[int(p)] for p in ptrs]), data=jpeg_file.read_bytes())
    r.close()
    assert len(np.unique(ptrs // info["page"])) >= 2, "the JPEG fixture should span several pages"
    return info


def corrupted(tmp_path, src_bytes, edits, name="bad.beton", cut=None):
    data = bytearray(src_bytes)
    for off, b in edits:
        data[off:off + len(b)] = b
    if cut is not None:
        data = data[:cut]
    out = tmp_path / name
    out.write_bytes(bytes(data))
    return out


def flipped(data, off, n):
    return bytes(b ^ 0xFF for b in data[off:off + n])


def image_col(info, k):
    """File offset of sample k's RGB column {mode u8, width u16, height u16, data_ptr u64}."""
    return info["meta"] + k * info["row"]


def image_loader(path, **kw):
    kw.setdefault("batch_size", 8)
    kw.setdefault("num_workers", 2)
    kw.setdefault("pipelines", {"image": [CenterCropRGBImageDecoder((32, 32), 1.0), ToTensor()]})
    return Loader(path, **kw)


def epoch_ids(loader):
    ids = []
    for img, label in loader:
        assert img.shape[1:] == (32, 32, 3)
        ids += label.view(-1).tolist()
    return ids


def assert_names(exc, path, sample, field):
    msg = str(exc)
    assert str(path) in msg and f"sample {sample}" in msg and repr(field).replace("'", '"') in msg.replace(
        "'", '"'), msg
    assert "internal error" not in msg, msg


# ---- corrupt data -----------------------------------------------------------------------------

def jpeg_corruptions(info):
    """name -> (edits, the bad samples)."""
    ptrs, sizes, data = info["ptrs"], info["sizes"], info["data"]
    k, j = 13, 30
    mid = int(ptrs[j] + sizes[j] // 2)
    page = int(ptrs[40] // info["page"] * info["page"])
    on_page = [i for i in range(N_JPEG) if ptrs[i] // info["page"] == ptrs[40] // info["page"]]
    return {
        "flipped SOI": ([(int(ptrs[k]), flipped(data, int(ptrs[k]), 2))], [k]),
        "flipped scan bytes": ([(mid, flipped(data, mid, 16))], [j]),
        "pointer past EOF": ([(image_col(info, k) + 5, struct.pack("<Q", len(data) + 4096))], [k]),
        "pointer into the table": ([(image_col(info, k) + 5, struct.pack("<Q", info["meta"]))], [k]),
        "zeroed page": ([(page, bytes(info["page"]))], on_page),
        "65535x65535 image": ([(image_col(info, j) + 1, struct.pack("<HH", 0xFFFF, 0xFFFF))], [j]),
    }


CORRUPTIONS = ["flipped SOI", "flipped scan bytes", "pointer past EOF", "pointer into the table", "zeroed page",
               "65535x65535 image"]


@pytest.mark.parametrize("how", CORRUPTIONS)
def test_corrupt_jpeg_sample_raises_naming_it(tmp_path, jpeg_info, how):
    edits, bad = jpeg_corruptions(jpeg_info)[how]
    path = corrupted(tmp_path, jpeg_info["data"], edits)
    loader = image_loader(path, order=OrderOption.SEQUENTIAL, drop_last=False)
    with pytest.raises(ValueError) as info:
        epoch_ids(loader)
    assert isinstance(info.value, (SampleError, CorruptFileError))
    assert_names(info.value, path, min(bad), "image")


def epoch_by_id(loader):
    out = {}
    for img, label in loader:
        out.update({int(i): x.clone() for i, x in zip(label.view(-1), img)})
    return out


DECODERS = {"center": lambda: CenterCropRGBImageDecoder((32, 32), 1.0),
            "rrc": lambda: RandomResizedCropRGBImageDecoder((32, 32))}

@pytest.mark.parametrize("decoder", list(DECODERS))
@pytest.mark.parametrize("how", CORRUPTIONS)
@pytest.mark.parametrize("os_cache", [True, False])
def test_corrupt_samples_skipped(tmp_path, jpeg_file, jpeg_info, how, decoder, os_cache):
    """on_error='skip' leaves the bad samples out and counts them, epoch after
    epoch; every sample delivered equals the clean file's: nothing silently wrong.
    A random crop decodes only the restart intervals under it (the writer puts
    markers in its JPEGs), so damaged scan bytes beside the crop go unseen and
    the sample, whose pixels are right, is delivered; damage under it is
    noticed where an interval no longer ends at its marker."""
    edits, bad = jpeg_corruptions(jpeg_info)[how]
    path = corrupted(tmp_path, jpeg_info["data"], edits)
    kw = dict(order=OrderOption.RANDOM, seed=1, drop_last=False, os_cache=os_cache,
              pipelines={"image": [DECODERS[decoder](), ToTensor()]})
    clean = image_loader(jpeg_file, **kw)
    loader = image_loader(path, on_error="skip", **kw)
    delivered = 0
    for epoch in range(2):  # training continues
        want, got = epoch_by_id(clean), epoch_by_id(loader)
        for i, x in got.items():
            assert torch.equal(x, want[i]), f"{how}: sample {i} differs from the clean file"
        if (how, decoder) == ("flipped scan bytes", "rrc"):
            assert set(range(N_JPEG)) - set(bad) <= set(got), how
        else:
            assert sorted(got) == sorted(set(range(N_JPEG)) - set(bad)), how
        delivered += len(got)
    assert loader.stats["samples_skipped"] == 2 * N_JPEG - delivered


def test_skipped_samples_keep_good_pixels(tmp_path, jpeg_file, jpeg_info):
    edits, bad = jpeg_corruptions(jpeg_info)["flipped scan bytes"]
    path = corrupted(tmp_path, jpeg_info["data"], edits)
    kw = dict(order=OrderOption.SEQUENTIAL, drop_last=False, batch_size=5)
    want = {}
    for img, label in image_loader(jpeg_file, **kw):
        want.update({int(i): x.clone() for i, x in zip(label.view(-1), img)})
    seen = 0
    for img, label in image_loader(path, on_error="skip", **kw):
        for i, x in zip(label.view(-1).tolist(), img):
            assert i not in bad and torch.equal(x, want[i]), i
            seen += 1
    assert seen == N_JPEG - len(bad)


def test_truncated_file(tmp_path, jpeg_info):
    data = jpeg_info["data"]
    for cut in (10, 24 + 100, jpeg_info["meta"] + 7, len(data) // 2, len(data) - 5):
        path = corrupted(tmp_path, data, [], name=f"cut{cut}.beton", cut=cut)
        for open_ in (Reader, image_loader):
            with pytest.raises(CorruptFileError) as info:
                open_(path)
            assert str(path) in str(info.value)


def bytes_file(tmp_path):
    return write(tmp_path / "bytes.beton", {"blob": BytesField(), "label": IntField()},
                 FnDataset(20, lambda i: (np.full(1000 + i, i, dtype=np.uint8), i)))


@pytest.mark.parametrize("size", [2**64 - 1, 2**63, 2**40, 3 * MiB])
def test_bytes_size_overflow(tmp_path, size):
    src = bytes_file(tmp_path)
    r = Reader(src)
    meta, row = r._info["metadata_offset"], r._info["row_size"]
    r.close()
    path = corrupted(tmp_path, src.read_bytes(), [(meta + 7 * row + 8, struct.pack("<Q", size))])
    t0, rss0 = time.monotonic(), rss_bytes()
    loader = Loader(path, batch_size=4, num_workers=2, order=OrderOption.SEQUENTIAL)
    # The bad length must not size every sample's output.
    assert loader._go_outputs[0]["shape"] == [1019]
    with pytest.raises(ValueError) as info:
        list(loader)
    assert_names(info.value, path, 7, "blob")
    loader = Loader(path, batch_size=4, num_workers=2, on_error="skip")
    assert sum(len(b[1]) for b in loader) == 19  # 5 batches of 4, one sample left out
    assert loader.stats["samples_skipped"] == 1
    assert time.monotonic() - t0 < 20 and rss_bytes() - rss0 < 200 * MiB


@pytest.mark.parametrize("shape", [(2**32, 2**32), (2**62, 4), (2**40,)])
def test_ndarray_shape_overflow(tmp_path, shape):
    src = write(tmp_path / "arr.beton", {"arr": NDArrayField(np.float32, (2, 3)), "label": IntField()},
                FnDataset(8, lambda i: (np.full((2, 3), i, np.float32), i)))
    shape_bytes = b"".join(struct.pack("<Q", d) for d in shape)
    path = corrupted(tmp_path, src.read_bytes(), [(24 + 17, shape_bytes)])
    t0, rss0 = time.monotonic(), rss_bytes()
    with pytest.raises(ValueError) as info:
        Loader(path, batch_size=4, num_workers=1)
    assert str(path) in str(info.value) and "arr" in str(info.value)
    assert time.monotonic() - t0 < 10 and rss_bytes() - rss0 < 200 * MiB


def test_raw_image_size_overflow(tmp_path):
    src = write(tmp_path / "raw.beton", {"image": RGBImageField(), "label": IntField()},
                FnDataset(8, lambda i: (np.full((6, 5, 3), i, np.uint8), i)))
    r = Reader(src)
    meta, row = r._info["metadata_offset"], r._info["row_size"]
    r.close()
    path = corrupted(tmp_path, src.read_bytes(), [(meta + 3 * row + 1, struct.pack("<HH", 0xFFFF, 0xFFFF))])
    loader = Loader(path, batch_size=4, num_workers=1, order=OrderOption.SEQUENTIAL,
                    pipelines={"image": [RandomResizedCropRGBImageDecoder((4, 4))]})
    with pytest.raises(ValueError) as info:
        list(loader)
    assert_names(info.value, path, 3, "image")
    with pytest.raises(TypeError):  # SimpleRGBImageDecoder: sizes differ
        Loader(path, batch_size=4, num_workers=1, pipelines={"image": [SimpleRGBImageDecoder()]})


@pytest.mark.parametrize("n", [2**60, 2**64 - 1, 2**40])
def test_header_claiming_huge_sample_count(tmp_path, jpeg_info, n):
    path = corrupted(tmp_path, jpeg_info["data"], [(8, struct.pack("<Q", n))])
    t0, rss0 = time.monotonic(), rss_bytes()
    for open_ in (Reader, image_loader):
        with pytest.raises(CorruptFileError, match="samples|metadata") as info:
            open_(path)
        assert str(path) in str(info.value)
    assert time.monotonic() - t0 < 5 and rss_bytes() - rss0 < 100 * MiB


def test_header_claiming_huge_sample_count_without_fields(tmp_path):
    """No fields, so rows take no bytes: the count must still be checked against the file."""
    path = tmp_path / "nofields.beton"
    path.write_bytes(struct.pack("<HHIQQ", 2, 0, 2 * MiB, 2**60, 24))
    t0, rss0 = time.monotonic(), rss_bytes()
    for open_ in (Reader, lambda p: Loader(p, batch_size=4, num_workers=1)):
        with pytest.raises(CorruptFileError) as info:
            open_(path)
        assert str(path) in str(info.value)
    assert time.monotonic() - t0 < 5 and rss_bytes() - rss0 < 100 * MiB


# ---- writer faults ----------------------------------------------------------------------------

WRITER_SCRIPT = """
import json, os, signal, sys, threading, traceback
import numpy as np
from ffcv_go import DatasetWriter
from ffcv_go.fields import BytesField, IntField
from conftest import FnDataset

out_dir, mode, pool = sys.argv[1], sys.argv[2], (sys.argv[3] if sys.argv[3] != "none" else None)
path = os.path.join(out_dir, "data.beton")
threads0 = threading.active_count()

def item(i):
    if mode == "raise" and i == 70:
        raise RuntimeError("dataset item 70 is broken")
    if mode == "interrupt" and i == 70:
        raise KeyboardInterrupt
    if mode == "kill" and i == 70:  # as the OOM killer would
        os.kill(os.getpid(), signal.SIGKILL)
    if mode == "unpicklable" and i == 70:
        return threading.Lock(), i
    if mode == "slow":
        if i == 0:
            print("fetching", flush=True)
        import time; time.sleep(0.05)
    return np.full(100_000, i % 251, dtype=np.uint8), i

result = {}
try:
    DatasetWriter(path, {"blob": BytesField(), "label": IntField()}, num_workers=2,
                  progress=False).from_indexed_dataset(FnDataset(150, item), pool=pool, pool_workers=2)
    result["error"] = None
except BaseException as e:
    result["error"], result["message"] = type(e).__name__, str(e)
import gc; gc.collect()
result["files"] = sorted(os.listdir(out_dir))
result["threads_left"] = threading.active_count() - threads0
print(json.dumps(result))
"""


def run_writer(tmp_path, mode, pool="none", preamble="", timeout=90):
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    script = tmp_path / "writer.py"
    script.write_text(preamble + WRITER_SCRIPT)
    env = dict(os.environ, PYTHONPATH=PYTHONPATH)
    try:
        proc = subprocess.run([sys.executable, str(script), str(out), mode, pool], capture_output=True, text=True,
                              timeout=timeout, env=env)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"writer hung: {e.stdout}\n{e.stderr}")
    return last_json(proc)


@pytest.mark.parametrize("pool", ["none", "thread", "process"])
def test_writer_dataset_exception(tmp_path, pool):
    res = run_writer(tmp_path, "raise", pool)
    assert res["error"] == "RuntimeError" and "item 70" in res["message"], res
    assert res["files"] == [], res  # no partial file, no temporary file
    assert res["threads_left"] == 0, res


def test_writer_fetch_process_killed(tmp_path):
    """A fetch process that dies (OOM killer) is an error naming its items, not a hang."""
    res = run_writer(tmp_path, "kill", "process")
    assert res["error"] == "RuntimeError", res
    assert "killed by SIGKILL" in res["message"] and "items 0..99" in res["message"], res
    assert res["files"] == [] and res["threads_left"] == 0, res


def test_writer_fetch_process_unpicklable_item(tmp_path):
    res = run_writer(tmp_path, "unpicklable", "process")
    assert res["error"] == "RuntimeError", res
    assert "items 0..99 cannot be sent" in res["message"] and "lock" in res["message"], res
    assert res["files"] == [] and res["threads_left"] == 0, res


def test_writer_ctrl_c_with_fetch_processes(tmp_path):
    """Ctrl-C in a terminal signals the whole process group: the writer stops, its fetch
    processes are gone and no file is left."""
    out = tmp_path / "out"
    out.mkdir()
    script = tmp_path / "writer.py"
    script.write_text(WRITER_SCRIPT)
    proc = subprocess.Popen([sys.executable, str(script), str(out), "slow", "process"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=dict(os.environ, PYTHONPATH=PYTHONPATH),
                            start_new_session=True)
    try:
        assert proc.stdout.readline().strip() == "fetching"
        os.killpg(proc.pid, signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail("Ctrl-C did not stop a writer with fetch processes")
    assert proc.returncode == 0, stderr
    res = json.loads(stdout.strip().splitlines()[-1])
    assert res["error"] == "KeyboardInterrupt" and res["files"] == [], res
    with pytest.raises(ProcessLookupError):  # nothing of the session is left running
        os.killpg(proc.pid, 0)


@pytest.mark.parametrize("pool", ["none", "thread", "process"])
def test_writer_keyboard_interrupt(tmp_path, pool):
    res = run_writer(tmp_path, "interrupt", pool)
    assert res["error"] == "KeyboardInterrupt", res
    assert res["files"] == [] and res["threads_left"] == 0, res


def test_writer_ok_baseline(tmp_path):
    res = run_writer(tmp_path, "ok")
    assert res["error"] is None and res["files"] == ["data.beton"] and res["threads_left"] == 0, res


def test_writer_file_size_limit(tmp_path):
    """RLIMIT_FSIZE at 3 MiB: the 15 MB write fails with an OSError, leaves nothing."""
    preamble = ("import resource, signal\n"
                "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
                "resource.setrlimit(resource.RLIMIT_FSIZE, (3 << 20, 3 << 20))\n")
    res = run_writer(tmp_path, "ok", preamble=preamble)
    assert res["error"] in ("OSError", "ValueError", "RuntimeError") and res["message"], res
    assert "too large" in res["message"].lower() or "file" in res["message"].lower(), res
    assert res["files"] == [] and res["threads_left"] == 0, res


def test_writer_disk_full(tmp_path):
    """A 3 MiB tmpfs (needs root): ENOSPC reaches the caller, nothing is left behind."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    if os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("mounting a tmpfs needs root")
    ok = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mnt)], capture_output=True)
    if ok.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {ok.stderr.decode().strip()}")
    try:
        env = dict(os.environ, PYTHONPATH=PYTHONPATH)
        script = tmp_path / "writer.py"
        script.write_text(WRITER_SCRIPT)
        proc = subprocess.run([sys.executable, str(script), str(mnt), "ok", "none"], capture_output=True, text=True,
                              timeout=90, env=env)
        res = last_json(proc)
        assert res["error"] == "OSError" and "no space" in res["message"].lower(), res
        assert res["files"] == [] and res["threads_left"] == 0, res
        assert not os.listdir(mnt)
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)


# ---- loader faults ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def small_jpeg_file(tmp_path_factory):
    """64 small JPEGs (40x48) with their index."""
    path = tmp_path_factory.mktemp("rel_small") / "small.beton"
    rng = np.random.default_rng(5)
    imgs = [np.clip(rng.normal(128, 40, (40, 48, 3)), 0, 255).astype(np.uint8) for _ in range(64)]
    return write(path, {"image": RGBImageField(write_mode="jpg"), "label": IntField()},
                 FnDataset(64, lambda i: (imgs[i], i)))


@pytest.fixture(scope="module")
def warmed(small_jpeg_file):
    for workers in (1, 2, 4):
        for os_cache in (True, False):
            collect(Loader(small_jpeg_file, batch_size=8, num_workers=workers, os_cache=os_cache))
    settle()


@pytest.fixture
def no_leaks(warmed):
    before = resources()
    yield
    check_resources_back(before)


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
    t0 = time.monotonic()
    try:
        proc = subprocess.run([sys.executable, str(script), str(small_jpeg_file), mode, cache], capture_output=True,
                              text=True, timeout=60, env=env)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"interpreter did not exit: {e.stderr}")
    assert proc.returncode == 0, proc.stderr
    assert time.monotonic() - t0 < 30


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
samples, t0 = [], time.monotonic()
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
elapsed = time.monotonic() - t0
loader.close()
del loader, img, label
gc.collect()
deadline = time.monotonic() + 5  # the workers exit just after they signal the close
while _lib.goroutines() > goroutines_before and time.monotonic() < deadline:
    time.sleep(0.01)
print(json.dumps({"samples": samples, "elapsed": elapsed, "objects_after_close": _lib.live_objects(),
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
    assert res["elapsed"] < 60, res["elapsed"]


# ---- the C ABI under misuse -----------------------------------------------------------------

ABI_SCRIPT = r"""
import ctypes, json, os, sys
from ffcv_go import _lib
lib = _lib.lib
path, tmp = sys.argv[1].encode(), sys.argv[2]
failures, calls = [], [0]

def err():
    return ctypes.byref(ctypes.c_void_p())

def expect_fail(name, fn, *args, with_err=True):
    e = ctypes.c_void_p()
    ret = fn(*args, ctypes.byref(e)) if with_err else fn(*args, None)
    calls[0] += 1
    if ret >= 0:
        failures.append(f"{name}: returned {ret}")
    if with_err:
        if not e.value:
            failures.append(f"{name}: no error message")
        else:
            msg = ctypes.string_at(e.value).decode()
            lib.ffcv_free(e.value)
            if not msg or "internal error" in msg and "unsafe" not in msg and "out of range" not in msg:
                failures.append(f"{name}: message {msg!r}")
    return ret

def ok(name, ret):
    if ret < 0:
        failures.append(f"{name}: failed with {ret}")
    return ret

u64, i64 = ctypes.c_uint64, ctypes.c_int64
vp = ctypes.c_void_p
start_objects = lib.ffcv_live_objects()
lib.ffcv_free(None)
BAD = [0, -1, 7_777_777, 2**62]

# ---- general
for h in BAD:
    expect_fail(f"close {h}", lib.ffcv_close, h)
    expect_fail(f"close {h} no err", lib.ffcv_close, h, with_err=False)

# ---- reader
expect_fail("open NULL", lib.ffcv_reader_open, None, None)
expect_fail("open missing", lib.ffcv_reader_open, b"/nonexistent/x.beton", None)
expect_fail("open dir", lib.ffcv_reader_open, tmp.encode(), None)
expect_fail("open bad custom json", lib.ffcv_reader_open, path, b"{not json")
r = ok("open", lib.ffcv_reader_open(path, None, err()))
out = ctypes.c_void_p()
for h in BAD:
    expect_fail(f"info {h}", lib.ffcv_reader_info, h, ctypes.byref(out))
    expect_fail(f"mmap {h}", lib.ffcv_reader_mmap, h, ctypes.byref(vp()), ctypes.byref(u64()))
    expect_fail(f"read {h}", lib.ffcv_reader_read, h, 0, 0, ctypes.byref(vp()), ctypes.byref(u64()),
                ctypes.byref(vp()), ctypes.byref(u64()))
    expect_fail(f"verify {h}", lib.ffcv_verify, h, 1, ctypes.byref(out))
expect_fail("info NULL out", lib.ffcv_reader_info, r, None)
expect_fail("mmap NULL", lib.ffcv_reader_mmap, r, None, None)
expect_fail("verify NULL out", lib.ffcv_verify, r, 1, None)
for sample, field in [(10**12, 0), (2**64 - 1, 0), (0, -1), (0, 99), (0, 2**31 - 1)]:
    expect_fail(f"read {sample} {field}", lib.ffcv_reader_read, r, sample, field, ctypes.byref(vp()),
                ctypes.byref(u64()), ctypes.byref(vp()), ctypes.byref(u64()))
expect_fail("read NULL outputs", lib.ffcv_reader_read, r, 0, 0, None, None, None, None)

# ---- loader
spec = {"path": path.decode(), "batch_size": 4, "num_workers": 2, "batches_ahead": 1, "drop_last": False,
        "seed": 0, "order": "sequential", "rank": 0, "world": 1, "os_cache": True,
        "outputs": [{"field": 1, "ops": [{"op": "int"}]}]}
def spec_with(**kw):
    s = dict(spec); s.update(kw); return json.dumps(s).encode()
for name, s in [("NULL", None), ("not json", b"{"), ("wrong types", spec_with(batch_size="x")),
                ("missing file", spec_with(path="/nonexistent.beton")), ("no path", spec_with(path="")),
                ("field -1", spec_with(outputs=[{"field": -1, "ops": [{"op": "int"}]}])),
                ("field 99", spec_with(outputs=[{"field": 99, "ops": [{"op": "int"}]}])),
                ("unknown op", spec_with(outputs=[{"field": 1, "ops": [{"op": "nope"}]}])),
                ("wrong decoder", spec_with(outputs=[{"field": 1, "ops": [{"op": "rgb_simple"}]}])),
                ("no decoder", spec_with(outputs=[{"field": 1, "ops": []}])),
                ("batch 0", spec_with(batch_size=0)), ("order", spec_with(order="zigzag")),
                ("rank", spec_with(rank=5, world=2)), ("ahead", spec_with(batches_ahead=-3))]:
    expect_fail(f"loader_create {name}", lib.ffcv_loader_create, s, None, 0)
expect_fail("loader_create NULL indices", lib.ffcv_loader_create, spec_with(), None, 5)
idx = (u64 * 2)(0, 10**9)
expect_fail("loader_create index out of range", lib.ffcv_loader_create, spec_with(), idx, 2)
expect_fail("loader_create huge count", lib.ffcv_loader_create, spec_with(), idx, 2**62)
expect_fail("loader_create on a reader handle", lib.ffcv_loader_info, r, ctypes.byref(out))

L = ok("loader_create", lib.ffcv_loader_create(spec_with(), None, 0, err()))
for h in BAD + [r]:
    expect_fail(f"loader_info {h}", lib.ffcv_loader_info, h, ctypes.byref(out))
    expect_fail(f"loader_order {h}", lib.ffcv_loader_order, h, 0, None, 0)
    expect_fail(f"loader_start {h}", lib.ffcv_loader_start, h, 0, 0, None, 0, 1)
    expect_fail(f"loader_stats {h}", lib.ffcv_loader_stats, h, ctypes.byref(out))
    expect_fail(f"iter_next {h}", lib.ffcv_iter_next, h, (_lib.DLManagedTensorPtr * 4)(), 4)
expect_fail("loader_info NULL", lib.ffcv_loader_info, L, None)
expect_fail("loader_stats NULL", lib.ffcv_loader_stats, L, None)
n = ok("loader_order count", lib.ffcv_loader_order(L, 0, None, 0, err()))
small = (u64 * 1)()
ok("loader_order short buffer", lib.ffcv_loader_order(L, 0, small, 1, err()))
expect_fail("loader_start past end", lib.ffcv_loader_start, L, 0, 10**9, None, 0, 1)
expect_fail("loader_start -1", lib.ffcv_loader_start, L, 0, 2**64 - 1, None, 0, 1)
bad_order = (u64 * 3)(0, 1, 10**6)
expect_fail("loader_start bad order", lib.ffcv_loader_start, L, 0, 0, bad_order, 3, 1)
el_spec = lambda **kw: json.dumps(dict({"epoch": 0, "order": "random", "window": 0, "stages": [
    {"layout": "strided", "world": 2, "batch_size": 4, "drop_last": False, "batches": 1}]}, **kw)).encode()
el_out = (u64 * 4096)()
for h in BAD + [r]:
    expect_fail(f"loader_elastic {h}", lib.ffcv_loader_elastic, h, el_spec(), None, 0, el_out, 4096,
                ctypes.byref(out))
for name, s_ in [("NULL", None), ("not json", b"{"), ("unknown key", el_spec(extra=1)),
                 ("order", el_spec(order="zigzag")), ("layout", el_spec(stages=[{"layout": "rest", "world": 2,
                  "batch_size": 4, "drop_last": False, "batches": 1}])),
                 ("world 0", el_spec(stages=[{"layout": "strided", "world": 0, "batch_size": 4,
                                              "drop_last": False, "batches": 1}])),
                 ("too many batches", el_spec(stages=[{"layout": "strided", "world": 2, "batch_size": 4,
                                                       "drop_last": False, "batches": 10**9}]))]:
    expect_fail(f"loader_elastic {name}", lib.ffcv_loader_elastic, L, s_, None, 0, el_out, 4096, ctypes.byref(out))
expect_fail("loader_elastic short out", lib.ffcv_loader_elastic, L, el_spec(), None, 0, el_out, 1, ctypes.byref(out))
expect_fail("loader_elastic NULL out", lib.ffcv_loader_elastic, L, el_spec(), None, 0, None, 4096, ctypes.byref(out))
expect_fail("loader_elastic NULL info", lib.ffcv_loader_elastic, L, el_spec(), None, 0, el_out, 4096, None)
expect_fail("loader_elastic bad global", lib.ffcv_loader_elastic, L, el_spec(), bad_order, 3, el_out, 4096,
            ctypes.byref(out))
expect_fail("loader_elastic NULL global", lib.ffcv_loader_elastic, L, el_spec(), None, 5, el_out, 4096,
            ctypes.byref(out))

it = ok("loader_start", lib.ffcv_loader_start(L, 0, 0, None, 0, 1, err()))
tensors = (_lib.DLManagedTensorPtr * 4)()
expect_fail("iter_next NULL tensors", lib.ffcv_iter_next, it, None, 4)
expect_fail("iter_next too few", lib.ffcv_iter_next, it, tensors, 1)
expect_fail("iter_next zero", lib.ffcv_iter_next, it, tensors, 0)
expect_fail("iter_next negative", lib.ffcv_iter_next, it, tensors, -5)
expect_fail("iter_next on the loader handle", lib.ffcv_iter_next, L, tensors, 4)
got = ok("iter_next", lib.ffcv_iter_next(it, tensors, 4, err()))
for k in range(got):
    _lib.release_dlpack(tensors[k])
ok("close iterator", lib.ffcv_close(it, err()))
expect_fail("iter_next after close", lib.ffcv_iter_next, it, tensors, 4)
expect_fail("close iterator twice", lib.ffcv_close, it)

# An iterator whose loader is closed under it.
it2 = ok("loader_start 2", lib.ffcv_loader_start(L, 1, 0, None, 0, 1, err()))
got = ok("iter_next 2", lib.ffcv_iter_next(it2, tensors, 4, err()))
ok("close loader", lib.ffcv_close(L, err()))
expect_fail("iter_next after loader close", lib.ffcv_iter_next, it2, tensors, 4)
for k in range(got):  # batches outlive their loader
    _lib.release_dlpack(tensors[k])
ok("close orphan iterator", lib.ffcv_close(it2, err()))
expect_fail("loader_start after close", lib.ffcv_loader_start, L, 0, 0, None, 0, 1)
expect_fail("loader_stats after close", lib.ffcv_loader_stats, L, ctypes.byref(out))
expect_fail("close loader twice", lib.ffcv_close, L)

# ---- writer
wpath = os.path.join(tmp, "w.beton").encode()
wspec = {"num_samples": 2, "page_size": 2 << 20, "num_workers": 1,
         "fields": [{"name": "x", "type_id": 1}, {"name": "b", "type_id": 3}]}
def wspec_with(**kw):
    s = dict(wspec); s.update(kw); return json.dumps(s).encode()
for name, p, s in [("NULL path", None, wspec_with()), ("NULL spec", wpath, None), ("not json", wpath, b"["),
                   ("no fields", wpath, wspec_with(fields=[])),
                   ("type 77", wpath, wspec_with(fields=[{"name": "x", "type_id": 77}])),
                   ("bad dtype", wpath, wspec_with(fields=[{"name": "a", "type_id": 4, "shape": [2], "dtype": "zz"}])),
                   ("long name", wpath, wspec_with(fields=[{"name": "x" * 40, "type_id": 1}])),
                   ("page size", wpath, wspec_with(page_size=12345)),
                   ("no dir", b"/nonexistent/dir/w.beton", wspec_with())]:
    expect_fail(f"writer_create {name}", lib.ffcv_writer_create, p, s)
for h in BAD + [r]:
    expect_fail(f"writer_put {h}", lib.ffcv_writer_put, h, 0, 1, (_lib.Value * 2)())
    expect_fail(f"writer_progress {h}", lib.ffcv_writer_progress, h)
    expect_fail(f"writer_finish {h}", lib.ffcv_writer_finish, h)
    expect_fail(f"writer_abort {h}", lib.ffcv_writer_abort, h)
W = ok("writer_create", lib.ffcv_writer_create(wpath, wspec_with(), err()))
vals = (_lib.Value * 2)()
vals[0].i = 5
vals[1].data, vals[1].len = None, 10
expect_fail("writer_put NULL data", lib.ffcv_writer_put, W, 0, 1, vals, )
expect_fail("writer_put NULL values", lib.ffcv_writer_put, W, 0, 1, None)
expect_fail("writer_put out of order", lib.ffcv_writer_put, W, 1, 1, (_lib.Value * 2)())
expect_fail("writer_put huge count", lib.ffcv_writer_put, W, 0, 2**62, (_lib.Value * 2)())
expect_fail("writer_finish incomplete", lib.ffcv_writer_finish, W)
expect_fail("writer_put after finish", lib.ffcv_writer_put, W, 0, 1, (_lib.Value * 2)())
expect_fail("writer_abort after finish", lib.ffcv_writer_abort, W)
expect_fail("close finished writer", lib.ffcv_close, W)
W2 = ok("writer_create 2", lib.ffcv_writer_create(wpath, wspec_with(), err()))
ok("writer_abort", lib.ffcv_writer_abort(W2, err()))
expect_fail("writer_abort twice", lib.ffcv_writer_abort, W2)
W3 = ok("writer_create 3", lib.ffcv_writer_create(wpath, wspec_with(), err()))
ok("close open writer", lib.ffcv_close(W3, err()))
if os.listdir(tmp) != []:
    failures.append(f"writer left files: {os.listdir(tmp)}")

# ---- image folders
for h in (None, b"/nonexistent/folder", path):
    expect_fail(f"scan_image_folder {h}", lib.ffcv_scan_image_folder, h, ctypes.byref(out))
expect_fail("write_image_folder NULL", lib.ffcv_write_image_folder, None, None, None, None)
expect_fail("write_image_folder missing", lib.ffcv_write_image_folder, b"/nonexistent/folder", wpath, b"{}", None)
expect_fail("write_image_folder bad spec", lib.ffcv_write_image_folder, tmp.encode(), wpath, b"[", None)

# ---- the reader, closed
ok("close reader", lib.ffcv_close(r, err()))
expect_fail("info after close", lib.ffcv_reader_info, r, ctypes.byref(out))
expect_fail("read after close", lib.ffcv_reader_read, r, 0, 0, ctypes.byref(vp()), ctypes.byref(u64()),
            ctypes.byref(vp()), ctypes.byref(u64()))
expect_fail("close reader twice", lib.ffcv_close, r)

end_objects = lib.ffcv_live_objects()
if end_objects != start_objects:
    failures.append(f"live objects {start_objects} -> {end_objects}")
print(json.dumps({"calls": calls[0], "failures": failures}))
"""


def test_c_abi_misuse(tmp_path, small_jpeg_file):
    work = tmp_path / "abi"
    work.mkdir()
    script = tmp_path / "abi.py"
    script.write_text(ABI_SCRIPT)
    env = dict(os.environ, PYTHONPATH=PYTHONPATH)
    try:
        proc = subprocess.run([sys.executable, str(script), str(small_jpeg_file), str(work)], capture_output=True,
                              text=True, timeout=120, env=env)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"ABI misuse hung: {e.stderr}")
    res = last_json(proc)
    assert res["calls"] > 120
    assert res["failures"] == [], "\n".join(res["failures"])


# ---- concurrency --------------------------------------------------------------------------------

def test_four_loaders_and_four_iterators_from_threads(small_jpeg_file, no_leaks):
    def kw():
        return dict(batch_size=8, num_workers=2, order=OrderOption.RANDOM, seed=11,
                    pipelines={"image": [RandomResizedCropRGBImageDecoder((16, 16)), RandomHorizontalFlip(),
                                         ToTensor()]})
    ref_loader = Loader(small_jpeg_file, **kw())
    want = [collect(ref_loader) for _ in range(4)]  # epochs 0..3
    shared = Loader(small_jpeg_file, **kw())
    shared_iters = [iter(shared) for _ in range(4)]  # epochs 0..3 of one loader, at once

    def own(epoch, os_cache):
        loader = Loader(small_jpeg_file, os_cache=os_cache, **kw())
        for _ in range(epoch):
            loader.next_epoch += 1
        out = collect(loader)
        loader.close()
        return epoch, out

    def from_shared(k):
        return k, collect(shared_iters[k])

    with ThreadPoolExecutor(8) as ex:
        futures = [ex.submit(own, e, e % 2 == 0) for e in range(4)] + [ex.submit(from_shared, k) for k in range(4)]
        for f in futures:
            epoch, got = f.result(timeout=120)
            assert len(got) == len(want[epoch])
            for a, b in zip(got, want[epoch]):
                assert all(np.array_equal(x, y) for x, y in zip(a, b)), f"epoch {epoch} differs"
    del shared_iters
    shared.close()
    ref_loader.close()


SHARED_ITER_SCRIPT = """
import json, sys, threading
from ffcv_go import Loader
from ffcv_go.loader import OrderOption
loader = Loader(sys.argv[1], batch_size=2, num_workers=2, order=OrderOption.SEQUENTIAL)
results = []
for _ in range(5):
    it = iter(loader)
    lock, got = threading.Lock(), []

    def pull():
        while True:
            try:
                img, label = next(it)
            except StopIteration:
                return
            with lock:
                got.append(label.view(-1).tolist())

    threads = [threading.Thread(target=pull) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    results.append(sorted(x for b in got for x in b))
print(json.dumps(results))
"""


def test_one_iterator_shared_by_threads(tmp_path, small_jpeg_file):
    """Threads pulling from one iterator get every batch exactly once (this
    used to free tensors twice and abort the interpreter: subprocess)."""
    script = tmp_path / "shared.py"
    script.write_text(SHARED_ITER_SCRIPT)
    env = dict(os.environ, PYTHONPATH=PYTHONPATH)
    try:
        proc = subprocess.run([sys.executable, str(script), str(small_jpeg_file)], capture_output=True, text=True,
                              timeout=120, env=env)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"threads sharing an iterator hung: {e.stderr}")
    for epoch in last_json(proc):
        assert epoch == list(range(64))


WRITE_SCRIPT = """
import sys
import numpy as np
from ffcv_go.fields import BytesField, IntField
from conftest import FnDataset, write
k = int(sys.argv[2])
write(sys.argv[1], {"blob": BytesField(), "label": IntField()},
      FnDataset(300, lambda i: (np.full(20_000 + i, (i * 7 + k) % 256, np.uint8), i * 10 + k)), num_workers=2)
print("written")
"""


def test_two_processes_write_at_once(tmp_path):
    script = tmp_path / "w.py"
    script.write_text(WRITE_SCRIPT)
    env = dict(os.environ, PYTHONPATH=PYTHONPATH)
    paths = [tmp_path / f"p{k}.beton" for k in range(2)]
    procs = [subprocess.Popen([sys.executable, str(script), str(p), str(k)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for k, p in enumerate(paths)]
    for p in procs:
        try:
            out, err = p.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
            pytest.fail("a writer process hung")
        assert p.returncode == 0 and "written" in out, err
    for k, path in enumerate(paths):
        seen = 0
        for blob, label in Loader(path, batch_size=50, num_workers=2, drop_last=False):
            for row, lab in zip(blob.numpy(), label.view(-1).tolist()):
                i = (lab - k) // 10
                assert lab == i * 10 + k
                assert (row[:20_000 + i] == (i * 7 + k) % 256).all() and not row[20_000 + i:].any()
                seen += 1
        assert seen == 300
    assert sorted(os.listdir(tmp_path)) == ["p0.beton", "p1.beton", "w.py"]


# ---- the file changes under a running loader; fork -------------------------------------------

CHANGE_SCRIPT = """
import json, os, shutil, sys
import ffcv_go
from ffcv_go import Loader, _lib
src, path, how, cache = sys.argv[1:5]
shutil.copy(src, path)
loader = Loader(path, batch_size=4, num_workers=2, batches_ahead=1, os_cache=cache == "os")
it = iter(loader)
labels = [int(x) for x in next(it)[1].reshape(-1)]
size = os.path.getsize(path)
if how == "truncate":
    os.truncate(path, 4096)
elif how == "rewrite_in_place":  # same name, same inode, new (shorter) content
    with open(path, "r+b") as f:
        f.truncate(0)
        f.write(os.urandom(size // 3))
elif how == "replace_by_rename":  # a new file takes the name; the map keeps the old one
    tmp = path + ".new"
    with open(tmp, "wb") as f:
        f.write(os.urandom(size))
    os.replace(tmp, path)
error = None
try:
    for _, lab in it:
        labels += [int(x) for x in lab.reshape(-1)]
except Exception as e:
    error = {"type": type(e).__name__, "message": str(e)}
# The epoch is over: the next one fails the same way or runs, and closing is clean.
try:
    for _ in loader:
        pass
except Exception as e:
    pass
del it
loader.close()
# The process is healthy: a loader over an intact copy reads everything.
healthy = sorted(int(x) for _, lab in Loader(src, batch_size=8, num_workers=2) for x in lab.reshape(-1))
print(json.dumps({"labels": labels, "error": error, "healthy": healthy}))
"""


@pytest.mark.parametrize("cache", ["os", "process"])
@pytest.mark.parametrize("how", ["truncate", "rewrite_in_place", "replace_by_rename"])
def test_file_changed_while_iterating(tmp_path, jpeg_file, how, cache):
    """Truncating or rewriting a mapped .beton under a running loader used to
    raise SIGBUS and abort the interpreter: now the sample that faults fails
    with an error naming the file and the sample, and the process goes on."""
    path = tmp_path / "victim.beton"
    script = tmp_path / "change.py"
    script.write_text(CHANGE_SCRIPT)
    env = dict(os.environ, PYTHONPATH=PYTHONPATH, PYTHONFAULTHANDLER="1")
    try:
        proc = subprocess.run([sys.executable, str(script), str(jpeg_file), str(path), how, cache],
                              capture_output=True, text=True, timeout=120, env=env)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"hung: {e.stderr}")
    res = last_json(proc)
    assert res["healthy"] == list(range(N_JPEG)), res
    if how == "replace_by_rename":  # the map still holds the old file: nothing changes
        assert res["error"] is None and res["labels"] == list(range(N_JPEG)), res
        return
    err = res["error"]
    assert err is not None, res
    assert err["type"] in ("CorruptFileError", "SampleError"), err
    assert str(path) in err["message"] and "sample" in err["message"], err
    assert res["labels"] == list(range(len(res["labels"]))), res  # what came before is right
    if how == "truncate" and cache == "os":
        assert "truncated or replaced" in err["message"], err


FORK_SCRIPT = """
import json, os, sys, time
import torch
from ffcv_go import DatasetWriter, Loader
from ffcv_go.fields import IntField
path = sys.argv[1]
loader = Loader(path, batch_size=8, num_workers=2)
it = iter(loader)
first = next(it)  # tensors whose memory the Go side owns
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(r)
    out = {}
    t0 = time.monotonic()
    for name, fn in [("loader", lambda: Loader(path, batch_size=8)),
                     ("iterate", lambda: next(iter(loader))),
                     ("writer", lambda: DatasetWriter(path + ".child", {"x": IntField()}).from_indexed_dataset([(1,)]))]:
        try:
            fn()
            out[name] = "worked"
        except Exception as e:
            out[name] = f"{type(e).__name__}: {e}"
    out["seconds"] = time.monotonic() - t0
    out["sum"] = int(first[1].sum())  # the inherited tensors are readable
    del first  # its deleter must not call into the (absent) Go runtime
    os.write(w, json.dumps(out).encode())
    os.close(w)
    sys.exit(0)  # finalizers of the inherited loader run here
os.close(w)
child = json.loads(os.read(r, 1 << 16).decode() or "{}")
_, status = os.waitpid(pid, 0)
labels = [int(x) for x in first[1].reshape(-1)]
for _, lab in it:
    labels += [int(x) for x in lab.reshape(-1)]
again = sum(len(lab) for _, lab in loader)
loader.close()
print(json.dumps({"child": child, "status": status, "labels": labels, "again": again}))
"""


def test_fork_after_loader(tmp_path, small_jpeg_file):
    """The Go runtime does not survive fork(): a child that uses ffcv_go gets
    an immediate error naming the 'spawn' start method instead of hanging,
    exits cleanly, and the parent keeps working."""
    script = tmp_path / "fork.py"
    script.write_text(FORK_SCRIPT)
    env = dict(os.environ, PYTHONPATH=PYTHONPATH, PYTHONFAULTHANDLER="1")
    try:
        proc = subprocess.run([sys.executable, str(script), str(small_jpeg_file)], capture_output=True, text=True,
                              timeout=60, env=env)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"hung: {e.stderr}")
    res = last_json(proc)
    child = res["child"]
    assert res["status"] == 0, (res, proc.stderr)
    for name in ("loader", "iterate", "writer"):
        assert child[name].startswith("RuntimeError") and "spawn" in child[name], child
    assert child["seconds"] < 5, child
    assert child["sum"] == sum(range(8)), child
    assert res["labels"] == list(range(64)) and res["again"] == 64, res
    assert "Exception ignored" not in proc.stderr, proc.stderr


def test_fork_with_multiprocessing_spawn_works(tmp_path, small_jpeg_file):
    """The start method the error recommends works from a process that has loaders."""
    script = tmp_path / "spawn.py"
    script.write_text(textwrap.dedent(f"""
        import multiprocessing as mp
        from ffcv_go import Loader

        def count(path):
            return sum(len(lab) for _, lab in Loader(path, batch_size=8, num_workers=1))

        if __name__ == "__main__":
            loader = Loader({str(small_jpeg_file)!r}, batch_size=8)
            next(iter(loader))
            with mp.get_context("spawn").Pool(1) as pool:
                print(pool.apply(count, ({str(small_jpeg_file)!r},)))
    """))
    env = dict(os.environ, PYTHONPATH=PYTHONPATH)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "64"
