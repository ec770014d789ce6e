"""Writer faults: a dataset that raises, a fetch process killed or handed an
unpicklable item, Ctrl-C, a file size limit and a full disk all reach the
caller as an error, leave no partial or temporary file and no threads behind.
Each writer runs in a subprocess, so a hang fails the test instead of pytest.
"""
import json
import os
import shutil
import signal
import subprocess
import sys

import pytest

from conftest import PYTHONPATH, last_json


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
