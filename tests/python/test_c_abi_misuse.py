"""The C ABI (include/ffcv_go.h) under misuse: bad and closed handles, NULL
pointers, malformed JSON specs, out-of-range indices and wrong call orders each
return an error with a message, in a subprocess that must not crash, and leave
no live objects behind.
"""
import os
import subprocess
import sys

import pytest

from conftest import PYTHONPATH, last_json


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
def paths(*p):  # ffcv_dataset_open takes a JSON list of paths
    return json.dumps([x.decode() if isinstance(x, bytes) else x for x in p]).encode()
expect_fail("open NULL", lib.ffcv_dataset_open, None, None)
expect_fail("open missing", lib.ffcv_dataset_open, paths("/nonexistent/x.beton"), None)
expect_fail("open dir", lib.ffcv_dataset_open, paths(tmp), None)
expect_fail("open bad custom json", lib.ffcv_dataset_open, paths(path), b"{not json")
r = ok("open", lib.ffcv_dataset_open(paths(path), None, err()))
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

# ---- YOLO datasets
for spec in (None, b"[", b"{}", b'{"yaml": "/nonexistent/data.yaml"}', json.dumps({"yaml": path.decode()}).encode()):
    expect_fail(f"yolo_scan {spec}", lib.ffcv_yolo_scan, spec, ctypes.byref(out))

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
