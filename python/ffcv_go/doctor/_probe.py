"""Probing: what the machine gives this process (cores, memory, under its
cgroups), where the file lives (its filesystem, whether other processes
hold it) and how the dataset is laid out. Reads /proc and /sys only; no
measuring."""
import math
import os
import platform

import numpy as np

REMOTE_PREFIXES = ("s3://", "http://", "https://")

# Filesystem types whose reads go over the network (/proc/self/mountinfo).
NETWORK_FILESYSTEMS = {"nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "ceph", "glusterfs", "lustre", "gpfs",
                       "beegfs", "afs", "fuse.sshfs", "fuse.s3fs", "fuse.gcsfuse", "fuse.goofys", "fuse.rclone",
                       "fuse.juicefs", "fuse.mountpoint-s3", "fuse.blobfuse", "fuse.blobfuse2"}


# ---- cgroups ---------------------------------------------------------------------

def _cgroup_paths(proc="/proc/self/cgroup"):
    """{controller: path} of this process's cgroups ("" for v2's)."""
    out = {}
    try:
        with open(proc) as f:
            for line in f:
                _, controllers, path = line.rstrip("\n").split(":", 2)
                for c in controllers.split(",") if controllers else [""]:
                    out[c] = path
    except OSError:
        pass
    return out


def _read_int(path):
    try:
        with open(path) as f:
            v = f.read().strip()
    except OSError:
        return None
    if v == "max":
        return None
    try:
        return int(v.split()[0])
    except ValueError:
        return None


def _read_stat(path):
    out = {}
    try:
        with open(path) as f:
            for line in f:
                k, _, v = line.partition(" ")
                out[k] = int(v)
    except (OSError, ValueError):
        pass
    return out


def usable_cores():
    """Cores this process may use: its affinity mask, bounded by a cgroup CPU quota."""
    from ..utils import _cpu_count
    n = _cpu_count()
    cg = _cgroup_paths()
    quota = None
    if "cpu" in cg:
        base = "/sys/fs/cgroup/cpu" + cg["cpu"]
        q, p = _read_int(base + "/cpu.cfs_quota_us"), _read_int(base + "/cpu.cfs_period_us")
        if q and p and q > 0:
            quota = q / p
    elif "" in cg:
        try:
            with open("/sys/fs/cgroup" + cg[""] + "/cpu.max") as f:
                q, p = f.read().split()
            if q != "max":
                quota = int(q) / int(p)
        except (OSError, ValueError):
            pass
    if quota:
        n = max(1, min(n, math.ceil(quota)))
    return n


def memory_info():
    """Memory this process may use for the page cache or its own: MemTotal
    and MemAvailable, and its cgroup's limit less what the cgroup holds
    that cannot be reclaimed (its anonymous memory)."""
    mem = {}
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                k, _, v = line.partition(":")
                mem[k] = int(v.split()[0]) * 1024
    except OSError:
        pass
    total, available = mem.get("MemTotal"), mem.get("MemAvailable", mem.get("MemFree"))
    limit = anon = None
    cg = _cgroup_paths()
    if "memory" in cg:  # cgroup v1: the limit of the nearest limited ancestor
        stat = _read_stat("/sys/fs/cgroup/memory" + cg["memory"] + "/memory.stat")
        limit = stat.get("hierarchical_memory_limit")
        anon = stat.get("total_rss", stat.get("rss"))
        if limit is not None and total is not None and limit >= total:
            limit = None
    elif "" in cg:  # cgroup v2: walk up to the first memory.max
        path = "/sys/fs/cgroup" + cg[""]
        stat = _read_stat(path + "/memory.stat")
        anon = stat.get("anon")
        while path.startswith("/sys/fs/cgroup") and len(path) > len("/sys/fs/cgroup"):
            v = _read_int(path + "/memory.max")
            if v is not None:
                limit = v if limit is None else min(limit, v)
            path = os.path.dirname(path)
    usable = available
    if limit is not None:
        usable = min(usable if usable is not None else limit, max(0, limit - (anon or 0)))
    return {"total": total, "available": available, "cgroup_limit": limit, "cgroup_anon": anon,
            "usable": usable}


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_info():
    """The report's machine: usable cores, the CPU, memory and the load."""
    mem = memory_info()
    return {"cores": usable_cores(), "cpu": _cpu_model(), "memory_total": mem["total"],
            "memory_available": mem["available"], "cgroup_memory_limit": mem["cgroup_limit"],
            "usable_memory": mem["usable"], "platform": platform.platform(),
            "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None}


# ---- where the file lives ------------------------------------------------------

def filesystem(path, mountinfo="/proc/self/mountinfo"):
    """{"mount", "type", "source", "network"}: the mount holding path (the
    longest mount point above it) and whether its type reads over the
    network; None when /proc/self/mountinfo cannot be read."""
    real = os.path.realpath(path)
    best = None
    try:
        with open(mountinfo) as f:
            for line in f:
                # id parent major:minor root mount-point options [optional...] - type source super-options
                left, _, right = line.partition(" - ")
                fields, rest = left.split(), right.split()
                if len(fields) < 5 or len(rest) < 2:
                    continue
                mount = fields[4].replace("\\040", " ")
                inside = real == mount or real.startswith(mount.rstrip("/") + "/")
                if inside and (best is None or len(mount) >= len(best[0])):
                    best = (mount, rest[0], rest[1])
    except OSError:
        return None
    if best is None:
        return None
    mount, kind, source = best
    return {"mount": mount, "type": kind, "source": source,
            "network": kind in NETWORK_FILESYSTEMS or kind.startswith("nfs")}


def holders(paths, proc="/proc"):
    """Other processes that have any of paths open or mapped: {"pids": [...],
    "unchecked": n}, n the processes whose descriptors and maps this
    process may not read (other users' when not root)."""
    want = {os.path.realpath(p) for p in paths}
    try:
        want_ids = {(st.st_dev, st.st_ino) for st in map(os.stat, want)}
    except OSError:
        return {"pids": [], "unchecked": 0}
    me = os.getpid()
    pids, unchecked = [], 0
    try:
        entries = os.listdir(proc)
    except OSError:
        return {"pids": [], "unchecked": 0}
    for name in entries:
        if not name.isdigit() or int(name) == me:
            continue
        base = os.path.join(proc, name)
        found, readable = False, False
        try:
            fds = os.listdir(os.path.join(base, "fd"))
            readable = True
            for fd in fds:
                try:
                    st = os.stat(os.path.join(base, "fd", fd))
                except OSError:
                    continue
                if (st.st_dev, st.st_ino) in want_ids:
                    found = True
                    break
        except (PermissionError, FileNotFoundError, ProcessLookupError, NotADirectoryError):
            pass
        if not found:
            try:
                with open(os.path.join(base, "maps")) as f:
                    for line in f:
                        readable = True
                        k = line.find("/")
                        if k >= 0 and line[k:].rstrip("\n").removesuffix(" (deleted)") in want:
                            found = True
                            break
            except OSError:
                pass
        if found:
            pids.append(int(name))
        elif not readable:
            unchecked += 1
    return {"pids": sorted(pids), "unchecked": unchecked}


# ---- the dataset ----------------------------------------------------------------

def dataset_info(reader, data):
    """Samples, sizes, pages and the stored image sizes (from the metadata)."""
    remote = any(str(p).startswith(REMOTE_PREFIXES) for p in reader.file_names)
    at = reader.alloc_table
    n = reader.num_samples
    sample_bytes = np.bincount(at["sample_id"].astype(np.int64), weights=at["size"].astype(np.float64),
                               minlength=n) if len(at) else np.zeros(n)
    if remote:
        size = int(at["ptr"].max() + at["size"].max()) if len(at) else 0
    else:
        size = sum(os.path.getsize(p) for p in reader.file_names)
    info = {"path": data, "files": len(reader.file_names),
            "remote": remote, "samples": int(n), "bytes": int(size), "page_size": int(reader.page_size),
            "heap_bytes": int(sample_bytes.sum()), "mean_sample_bytes": float(sample_bytes.mean()) if n else 0.0,
            "images": None, "filesystem": None if remote else filesystem(reader.file_names[0])}
    for i, name in enumerate(reader.field_names):
        if type(reader.handlers[name]).__name__ != "RGBImageField" or not n:
            continue
        col = reader.metadata[f"f{i}"]
        w, h = col["width"].astype(np.int64), col["height"].astype(np.int64)
        info["images"] = {"field": name, "jpeg_fraction": float(np.mean(col["mode"] == 0)),
                          "median_width": int(np.median(w)), "median_height": int(np.median(h)),
                          "median_pixels": float(np.median(w * h)),
                          "p90_longer_side": int(np.percentile(np.maximum(w, h), 90))}
        break
    return info


def source_datasets(reader):
    """A Mixture's sources (its Reader's ``sources``), each as dataset_info
    describes a dataset, opened from its own files (a Reader each, for the
    storage reads: its page size, its pages), with its samples per epoch
    (``per_epoch``) and its share of the epoch: [(info, reader)]."""
    from ..reader import Reader
    total = sum(s["take"] for s in reader.sources) or 1
    out = []
    for s in reader.sources:
        r = Reader(list(s["files"]))
        info = dataset_info(r, s["name"])
        info.update(name=s["name"], file_names=list(s["files"]), per_epoch=int(s["take"]),
                    share=s["take"] / total)
        out.append((info, r))
    return out


class Layout:
    """Where each sample lies: the page and file offset of its first
    allocation, and its bytes (arrays by sample id)."""

    def __init__(self, reader):
        at = reader.alloc_table
        n = reader.num_samples
        self.page = np.zeros(n, dtype=np.int64)
        self.ptr = np.zeros(n, dtype=np.int64)
        self.nbytes = np.zeros(n, dtype=np.int64)
        if len(at):
            order = np.lexsort((at["ptr"], at["sample_id"]))
            sid = at["sample_id"][order].astype(np.int64)
            first = np.unique(sid, return_index=True)[1]
            self.ptr[sid[first]] = at["ptr"][order][first].astype(np.int64)
            self.page[sid[first]] = self.ptr[sid[first]] // reader.page_size
            np.add.at(self.nbytes, sid, at["size"][order].astype(np.int64))
        self.used_pages = np.unique(self.page[self.nbytes > 0])
