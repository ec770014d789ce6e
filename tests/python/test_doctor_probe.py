"""The doctor's probes (ffcv_go.doctor._probe) on this machine: memory and
cores under its cgroups, the filesystem a file is on, and the other
processes that hold a file open or mapped."""
import os
import subprocess
import sys

import pytest

from ffcv_go.doctor import memory_info, usable_cores
from ffcv_go.doctor._probe import filesystem, holders


def test_memory_info_reads_this_machine():
    m = memory_info()
    assert m["total"] > 0 and 0 < m["usable"] <= m["total"]


def test_usable_cores():
    assert 1 <= usable_cores() <= len(os.sched_getaffinity(0))


MOUNTINFO = """\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
40 22 0:40 / /data rw,relatime shared:20 - nfs4 server:/export rw,vers=4.2
41 40 8:17 / /data/local rw shared:21 - xfs /dev/sdb1 rw
42 22 0:41 / /mnt/with\\040space rw - fuse.sshfs host:/x rw
43 22 0:42 / /datasets rw - tmpfs tmpfs rw
"""


@pytest.mark.parametrize("path,mount,kind,network", [
    ("/home/u/train.beton", "/", "ext4", False),
    ("/data/imagenet/train.beton", "/data", "nfs4", True),
    ("/data/local/train.beton", "/data/local", "xfs", False),  # the longest mount point holds it
    ("/datax/train.beton", "/", "ext4", False),  # a prefix of a name is not a parent
    ("/mnt/with space/train.beton", "/mnt/with space", "fuse.sshfs", True),
    ("/datasets", "/datasets", "tmpfs", False),
])
def test_filesystem(tmp_path, path, mount, kind, network):
    info = tmp_path / "mountinfo"
    info.write_text(MOUNTINFO)
    fs = filesystem(path, mountinfo=str(info))
    assert (fs["mount"], fs["type"], fs["network"]) == (mount, kind, network)


def test_filesystem_of_a_real_file(tmp_path):
    f = tmp_path / "x"
    f.write_bytes(b"x")
    fs = filesystem(str(f))
    assert fs["type"] and str(f).startswith(fs["mount"])


HOLD = r"""
import ctypes, mmap, os, sys
path, how = sys.argv[1], sys.argv[2]
fd = os.open(path, os.O_RDONLY)
if how == "mapped":  # the map stays, the descriptor goes (Python's mmap would keep a copy of it)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    addr = libc.mmap(None, os.fstat(fd).st_size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
    assert addr not in (None, ctypes.c_void_p(-1).value), ctypes.get_errno()
    os.close(fd)
print("ready", flush=True)
sys.stdin.read()
"""


@pytest.mark.parametrize("how", ["open", "mapped"])
def test_holders_sees_other_processes(tmp_path, how):
    f = tmp_path / "data.beton"
    f.write_bytes(os.urandom(1 << 16))
    other = tmp_path / "other.beton"
    other.write_bytes(b"y" * 4096)
    with open(f, "rb"):  # this process's own descriptors do not count
        assert holders([str(f)])["pids"] == []
    p = subprocess.Popen([sys.executable, "-c", HOLD, str(f), how], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    try:
        assert p.stdout.readline().strip() == "ready"
        assert p.pid in holders([str(f)])["pids"]
        assert p.pid in holders([str(other), str(f)])["pids"]
        assert p.pid not in holders([str(other)])["pids"]
    finally:
        p.stdin.close()
        p.wait(timeout=30)
    assert p.pid not in holders([str(f)])["pids"]


def test_holders_of_a_missing_file(tmp_path):
    assert holders([str(tmp_path / "none")]) == {"pids": [], "unchecked": 0}
