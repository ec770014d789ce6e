"""The file changes under a running loader (truncated, rewritten in place,
replaced by rename) and fork(): the affected samples fail with an error naming
the file and sample instead of SIGBUS, a forked child that uses ffcv_go gets an
error naming the 'spawn' start method, and the process goes on working.
"""
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import N_JPEG, PYTHONPATH, last_json


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
import json, os, sys
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
    for name, fn in [("loader", lambda: Loader(path, batch_size=8)),
                     ("iterate", lambda: next(iter(loader))),
                     ("writer", lambda: DatasetWriter(path + ".child", {"x": IntField()}).from_indexed_dataset([(1,)]))]:
        try:
            fn()
            out[name] = "worked"
        except Exception as e:
            out[name] = f"{type(e).__name__}: {e}"
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
    an error naming the 'spawn' start method instead of hanging,
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
