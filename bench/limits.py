"""Runs a command with less memory and slower storage than the machine has,
through cgroup v1 controllers created (as root) for the run and removed after.

- memory: ``memory.limit_in_bytes`` of a child of this process's own memory
  cgroup, so the page cache the command fills is bounded too: a file larger
  than the limit cannot stay cached, as on a machine with less RAM;
- storage: ``blkio.throttle.read_bps_device`` (and optionally
  ``read_iops_device``) on the block device holding a path, as a slower
  disk or network volume would be.

Used by the storage-bound test of the doctor and bench/doctor_storage.py:

    with Limits(memory=600 << 20, read_bps=50e6, path="data.beton") as lim:
        subprocess.run(cmd, preexec_fn=lim.enter)

``Limits.unavailable()`` says why this machine cannot (not root, no cgroup v1
memory or blkio hierarchy, the path on no block device) or returns None.
"""
import os
import time

MEMORY_ROOT = "/sys/fs/cgroup/memory"
BLKIO_ROOT = "/sys/fs/cgroup/blkio"


def _own_cgroup(controller):
    """This process's cgroup path in a v1 hierarchy (e.g. "/user.slice")."""
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            if controller in controllers.split(","):
                return path
    return None


def block_device(path):
    """"major:minor" of the block device holding path (a partition's whole
    disk, which is what blkio throttles), or None."""
    dev = os.stat(path).st_dev
    major, minor = os.major(dev), os.minor(dev)
    sys_dev = f"/sys/dev/block/{major}:{minor}"
    if not os.path.exists(sys_dev):
        return None
    if os.path.exists(os.path.join(sys_dev, "partition")):
        with open(os.path.join(sys_dev, "..", "dev")) as f:
            return f.read().strip()
    return f"{major}:{minor}"


class Limits:
    """cgroup v1 memory and blkio limits for the processes that enter()."""

    def __init__(self, memory=None, read_bps=None, read_iops=None, path=None, name=None):
        if (read_bps or read_iops) and path is None:
            raise ValueError("read_bps/read_iops need the path whose device to throttle")
        self.memory, self.read_bps, self.read_iops, self.path = memory, read_bps, read_iops, path
        self.name = name or f"ffcv-go-limits-{os.getpid()}-{time.monotonic_ns() % 10**9}"
        self.dirs = []

    @staticmethod
    def unavailable(path=None, memory=True, blkio=False):
        """Why limits cannot be set here, or None."""
        if os.geteuid() != 0:
            return "creating cgroups needs root"
        if memory and (not os.path.isdir(MEMORY_ROOT) or _own_cgroup("memory") is None):
            return f"no cgroup v1 memory hierarchy at {MEMORY_ROOT}"
        if blkio:
            if not os.path.isdir(BLKIO_ROOT) or _own_cgroup("blkio") is None:
                return f"no cgroup v1 blkio hierarchy at {BLKIO_ROOT}"
            if path is not None and block_device(path) is None:
                return f"{path} is on no block device (tmpfs, overlay?): reads cannot be throttled"
        return None

    def __enter__(self):
        try:
            if self.memory is not None:
                d = self._make(MEMORY_ROOT, "memory")
                self._write(d, "memory.limit_in_bytes", int(self.memory))
                if os.path.exists(os.path.join(d, "memory.memsw.limit_in_bytes")):
                    self._write(d, "memory.memsw.limit_in_bytes", int(self.memory))  # no swap either
            if self.read_bps or self.read_iops:
                d = self._make(BLKIO_ROOT, "blkio")
                dev = block_device(self.path)
                if dev is None:
                    raise OSError(f"{self.path} is on no block device")
                if self.read_bps:
                    self._write(d, "blkio.throttle.read_bps_device", f"{dev} {int(self.read_bps)}")
                if self.read_iops:
                    self._write(d, "blkio.throttle.read_iops_device", f"{dev} {int(self.read_iops)}")
        except BaseException:
            self.__exit__()
            raise
        return self

    def _make(self, root, controller):
        d = os.path.join(root, _own_cgroup(controller).lstrip("/"), self.name)
        os.mkdir(d)
        self.dirs.append(d)
        return d

    @staticmethod
    def _write(d, name, value):
        with open(os.path.join(d, name), "w") as f:
            f.write(str(value))

    def enter(self):
        """Moves the calling process into the limits (a subprocess's preexec_fn)."""
        for d in self.dirs:
            with open(os.path.join(d, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))

    def peak_memory(self):
        """The memory cgroup's peak usage so far (bytes), or None."""
        for d in self.dirs:
            p = os.path.join(d, "memory.max_usage_in_bytes")
            if os.path.exists(p):
                with open(p) as f:
                    return int(f.read())
        return None

    def __exit__(self, *exc):
        # A cgroup can go once its processes have exited; the kernel may take
        # a moment to let go of an exited one.
        for d in reversed(self.dirs):
            for _ in range(50):
                try:
                    os.rmdir(d)
                    break
                except OSError:
                    time.sleep(0.1)
        self.dirs = []
