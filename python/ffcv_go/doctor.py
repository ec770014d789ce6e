"""The bottleneck doctor: measures where training from a .beton file would
wait on this machine, names the bottleneck and gives the settings that fix it.

    python -m ffcv_go doctor train.beton --model resnet50 --device cuda --amp

or from Python::

    from ffcv_go.doctor import diagnose
    report = diagnose("train.beton", model="resnet18", device="cuda")
    print(report.format())
    report.bottleneck        # "storage", "cpu", "model" or "none"
    report.recommendations   # [Recommendation(setting=..., target=..., why=...)]

What it measures, each phase bounded so that the whole run stays within
``max_seconds``:

- **storage**: the file's pages read after dropping them from the page cache
  (``posix_fadvise(POSIX_FADV_DONTNEED)``), whole pages in random order (what
  the process cache reads) and sample-sized reads at random (what random
  access through the OS cache costs); the same pages read again (warm); the
  file's size against the memory this process may use (``/proc/meminfo`` and
  its cgroup's limit). For s3:// and http(s):// files, the rate the loader's
  own reader fetches pages at.
- **loader**: images per second, CPU time per image and cores busy for the
  pipeline at 1, 2, 4, ... workers up to the usable cores, on a part of the
  file read into the page cache first, so that these are decoding rates; the
  time to the first batch; where the workers' time goes (read, entropy
  decode, IDCT and resize, operations) from the Go side's stage timers. When
  the file does not fit in memory, the loader again from a cold cache with
  the given order and cache and with ``QUASI_RANDOM`` and the process cache.
- **model** (optional): training steps per second on synthetic inputs already
  on the device.

It then names the stage that limits training: the model when it is slower
than the loader, otherwise the loader's limit, storage when cold reads hold
it below its decoding rate, else the CPU; "none" when there is nothing to
limit at this scale (an epoch of the whole file takes under a second).
"""
import json
import math
import os
import platform
import sys
import time
from dataclasses import asdict, dataclass, field

import numpy as np

STAGE_LABELS = {"read": "read", "entropy_decode": "entropy decode", "idct_resize": "IDCT + resize", "ops": "ops"}
REMOTE_PREFIXES = ("s3://", "http://", "https://")
MiB = 1 << 20


@dataclass
class Recommendation:
    """One setting to change: the code to write, what it changes (``target``:
    "Loader", "DatasetWriter", "pipeline" or "model") and why, with the
    measurements behind it."""
    setting: str
    target: str
    why: str


@dataclass
class Report:
    """What ``diagnose`` measured and decided. ``to_dict()`` is the JSON of
    ``--json``; ``format()`` the terminal report; ``plot(path)`` the figure."""
    data: str
    settings: dict
    machine: dict
    dataset: dict
    storage: dict
    loader: dict
    model: dict = None
    bottleneck: str = "none"
    summary: str = ""
    recommendations: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    elapsed_s: float = 0.0

    def to_dict(self):
        return asdict(self)

    def to_json(self, indent=2):
        return json.dumps(self.to_dict(), indent=indent)

    def format(self):
        return _format(self)

    def plot(self, path):
        """Writes a PNG of images/s against workers, with the storage rates
        and the model's rate drawn across."""
        _plot(self, path)


# ---- the machine -------------------------------------------------------------

def _cgroup_paths():
    """{controller: path} of this process's cgroups ("" for v2's)."""
    out = {}
    try:
        with open("/proc/self/cgroup") as f:
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
    from .utils import _cpu_count
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


# ---- the dataset ----------------------------------------------------------------

def _dataset_info(reader, data):
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
            "images": None}
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


class _Layout:
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


# ---- storage ---------------------------------------------------------------------

def drop_from_page_cache(paths):
    """Asks the kernel to drop the files' pages from its cache (clean pages of
    files nobody else holds mapped go)."""
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def _read_ranges(path, ranges, budget):
    """Reads (offset, size) ranges in order until budget seconds have passed:
    (bytes, seconds, reads)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)  # no read-ahead beyond each read
        t0 = time.perf_counter()
        total = reads = 0
        for off, size in ranges:
            total += len(os.pread(fd, int(size), int(off)))
            reads += 1
            if time.perf_counter() - t0 > budget:
                break
        return total, time.perf_counter() - t0, reads
    finally:
        os.close(fd)


def _page_ranges(path, page_size, pages):
    fsize = os.path.getsize(path)
    return [(p * page_size, min(page_size, fsize - p * page_size)) for p in pages if p * page_size < fsize]


def _storage_local(path, reader, lay, budget, rng):
    """Cold page reads, the same pages warm, cold sample-sized reads."""
    page_ranges = _page_ranges(path, reader.page_size, rng.permutation(lay.used_pages)[:64].tolist())
    out = {"kind": "local", "path": path}
    drop_from_page_cache([path])
    b, dt, k = _read_ranges(path, page_ranges, budget * 0.45)
    out.update(cold_page_bytes=b, cold_page_s=dt, cold_page_reads=k, cold_page_mb_s=b / dt / 1e6 if dt else None)
    b, dt, _ = _read_ranges(path, page_ranges[:k], budget * 0.1)
    out.update(warm_mb_s=b / dt / 1e6 if dt else None)
    drop_from_page_cache([path])
    samples = np.flatnonzero(lay.nbytes > 0)
    pick = rng.choice(samples, size=min(2000, len(samples)), replace=False) if len(samples) else samples
    b, dt, k = _read_ranges(path, zip(lay.ptr[pick].tolist(), lay.nbytes[pick].tolist()), budget * 0.45)
    out.update(cold_sample_bytes=b, cold_sample_s=dt, cold_sample_reads=k,
               cold_sample_mb_s=b / dt / 1e6 if dt else None)
    return out


def _storage_remote(data, reader, lay, budget, rng):
    """The loader's own reader fetching whole pages (no decoding)."""
    from .fields.decoders import FloatDecoder, IntDecoder
    from .loader import Loader, OrderOption
    names = reader.field_names
    kinds = {n: type(reader.handlers[n]).__name__ for n in names}
    light = [n for n in names if kinds[n] in ("IntField", "FloatField")]
    out = {"kind": "remote", "path": str(data)}
    if not light:
        out["note"] = "no Int or Float field to load without decoding: fetch rate not measured"
        return out
    # A sample's pages are fetched whatever fields are decoded: decode only a number.
    pipes = {n: None for n in names}
    pipes[light[0]] = [IntDecoder() if kinds[light[0]] == "IntField" else FloatDecoder()]
    used = rng.permutation(lay.used_pages)[:16]
    idx = np.flatnonzero(np.isin(lay.page, used) & (lay.nbytes > 0))
    t0 = time.perf_counter()
    loader = Loader(data, batch_size=256, num_workers=2, order=OrderOption.QUASI_RANDOM, os_cache=False,
                    indices=idx, drop_last=False, pipelines=pipes, seed=0)
    for _ in loader:
        if time.perf_counter() - t0 > budget:
            break
    dt = time.perf_counter() - t0
    fetched = loader.stats.get("bytes_fetched", 0)
    loader.close()
    out.update(fetch_bytes=fetched, fetch_s=dt, fetch_mb_s=fetched / dt / 1e6 if dt else None)
    return out


# ---- the pipeline ----------------------------------------------------------------

def _imagenet_norm(dtype):
    from .transforms import NormalizeImage
    return NormalizeImage(np.array([0.485, 0.456, 0.406]) * 255, np.array([0.229, 0.224, 0.225]) * 255, dtype)


def _builtin_pipeline(kind, reader, res, device, amp):
    """A factory of FFCV's ImageNet pipelines: train (RandomResizedCrop +
    flip) or val (centre crop), normalised on the device."""
    import torch
    from .fields.decoders import CenterCropRGBImageDecoder, IntDecoder, RandomResizedCropRGBImageDecoder
    from .transforms import RandomHorizontalFlip, Squeeze, ToDevice, ToTensor, ToTorchImage
    names = reader.field_names
    kinds = {n: type(reader.handlers[n]).__name__ for n in names}
    image = next((n for n in names if kinds[n] == "RGBImageField"), None)
    if image is None:
        raise ValueError(f"pipeline {kind!r} needs an RGBImageField; the file has {kinds}: "
                         "give a pipeline file (--pipeline FILE.py)")
    label = next((n for n in names if kinds[n] == "IntField"), None)
    dev = torch.device(device)
    dtype = np.float16 if amp else np.float32

    def make():
        if kind == "train":
            ops = [RandomResizedCropRGBImageDecoder((res, res)), RandomHorizontalFlip()]
        else:
            ops = [CenterCropRGBImageDecoder((res, res), ratio=224 / 256)]
        ops += [ToTensor()]
        if dev.type != "cpu":
            ops += [ToDevice(dev, non_blocking=True)]
        ops += [ToTorchImage(), _imagenet_norm(dtype)]
        pipes = {n: None for n in names}
        pipes[image] = ops
        if label is not None:
            pipes[label] = [IntDecoder(), ToTensor(), Squeeze()] + ([ToDevice(dev, non_blocking=True)]
                                                                    if dev.type != "cpu" else [])
        return pipes
    return make


def _load_pipeline(spec, reader, res, device, amp):
    """(factory, description): "train", "val", a .py file defining
    ``pipelines`` (a dict, or a function returning one), a dict or a function."""
    if isinstance(spec, str) and spec in ("train", "val"):
        return _builtin_pipeline(spec, reader, res, device, amp), spec
    if isinstance(spec, (str, os.PathLike)):
        path = os.fspath(spec)
        if not path.endswith(".py") or not os.path.isfile(path):
            raise ValueError(f"pipeline {spec!r}: 'train', 'val' or a .py file defining `pipelines`")
        import runpy
        ns = runpy.run_path(path)
        if "pipelines" not in ns:
            raise ValueError(f"{path} defines no `pipelines` (a dict of field name -> operations, "
                             "or a function returning one)")
        spec, desc = ns["pipelines"], path
    else:
        desc = "custom"
    if isinstance(spec, dict):
        if not any(v for v in spec.values()):
            raise ValueError("pipelines: no field has operations")
        import copy
        # Operations hold state (streams, compiled code): a fresh copy per loader.
        return (lambda: copy.deepcopy(spec)), desc
    if callable(spec):
        return spec, desc
    raise ValueError(f"pipeline {spec!r}: 'train', 'val', a .py file, a dict or a function")


def _pipeline_facts(pipes):
    """The output size of the image decoder, and the order of ToDevice and
    NormalizeImage (whether normalisation runs on the CPU)."""
    facts = {"output_size": None, "normalize_on_cpu": False, "to_device": None}
    for ops in pipes.values():
        if not ops:
            continue
        names = [type(op).__name__ for op in ops]
        for op in ops:
            if getattr(op, "output_size", None) is not None and facts["output_size"] is None:
                facts["output_size"] = tuple(op.output_size)
        dev = next((op.device for op in ops if type(op).__name__ == "ToDevice"), None)
        if dev is not None and getattr(dev, "type", "cpu") != "cpu":
            facts["to_device"] = str(dev)
        if "NormalizeImage" in names:
            k = names.index("NormalizeImage")
            before = [op for op in ops[:k] if type(op).__name__ == "ToDevice"
                      and getattr(op.device, "type", "cpu") != "cpu"]
            facts["normalize_on_cpu"] = not before
    return facts


# ---- the loader ------------------------------------------------------------------

def _run_loader(data, make, *, workers, batch_size, order, os_cache, indices, seconds, trace=True,
                order_kwargs=None, max_resident_pages=0, from_start=False):
    """Runs the loader for about `seconds` (epochs over indices, as many as
    fit): images/s and CPU per image after the first batch (from_start:
    from the start, the first batch's wait included, as a cold epoch pays
    it), and the first batch's time."""
    from .loader import Loader, OrderOption
    t0, c0 = time.perf_counter(), time.process_time()  # the first batch's time includes making the loader
    loader = Loader(data, batch_size=batch_size, num_workers=workers, order=OrderOption[order.upper()],
                    os_cache=os_cache, indices=indices, drop_last=False, seed=0, pipelines=make(), trace=trace,
                    order_kwargs=order_kwargs or {}, max_resident_pages=max_resident_pages)
    first = c_first = None
    n = 0
    done = False
    try:
        while not done:
            for batch in loader:
                now = time.perf_counter()
                if first is None:
                    first, c_first, len_first = now, time.process_time(), len(batch[0])
                else:
                    n += len(batch[0])
                del batch
                if now - t0 >= seconds and (n > 0 or now - t0 >= 3 * seconds):
                    done = True
                    break
            if first is None:
                break  # an empty epoch
        t1, c1 = time.perf_counter(), time.process_time()
        stats = loader.stats
    finally:
        loader.close()
    if from_start and first is not None:
        n += len_first
        first, c_first = t0, c0
    dt = t1 - first if first is not None else 0.0
    cpu = c1 - c_first if c_first is not None else 0.0
    out = {"workers": workers, "order": order.upper(), "os_cache": bool(os_cache), "images": n, "seconds": dt,
           "img_s": n / dt if n and dt > 0 else 0.0, "cpu_ms_per_image": 1000 * cpu / n if n else None,
           "cores_busy": cpu / dt if dt > 0 else None, "first_batch_s": (first - t0) if first else None,
           "pages_read": stats.get("pages_read"), "bytes_fetched": stats.get("bytes_fetched")}
    if stats.get("stages"):
        out["stages"] = stats["stages"]
    return out


def _stage_times(stages):
    """{stage: ms per image} and their shares, from loader.stats["stages"]."""
    per = {}
    for k in STAGE_LABELS:
        v = (stages or {}).get(k)
        if v and v["count"]:
            per[k] = 1000 * v["seconds"] / v["count"]
    total = sum(per.values())
    return {"ms_per_image": per, "share": {k: v / total for k, v in per.items()} if total else {}}


def _worker_counts(cores, current):
    counts, k = [], 1
    while k < cores:
        counts.append(k)
        k *= 2
    counts.append(cores)
    if current not in counts:
        counts.append(current)
    return sorted(set(counts))


# ---- the model -------------------------------------------------------------------

def _resolve_model(model):
    import torch
    if isinstance(model, torch.nn.Module):
        return model, type(model).__name__
    if isinstance(model, str):
        if model.endswith(".py"):
            import runpy
            ns = runpy.run_path(model)
            obj = ns.get("model")
            if obj is None:
                raise ValueError(f"{model} defines no `model` (an nn.Module or a function returning one)")
            m = obj() if callable(obj) and not isinstance(obj, torch.nn.Module) else obj
            return m, model
        try:
            import torchvision
        except ImportError as e:
            raise ValueError(f"model {model!r}: torchvision is needed for named models") from e
        try:
            return torchvision.models.get_model(model, weights=None), model
        except ValueError as e:
            raise ValueError(f"model {model!r}: not a torchvision model name nor a .py file ({e})") from e
    if callable(model):
        m = model()
        if not isinstance(m, torch.nn.Module):
            raise ValueError(f"model(): returned a {type(m).__name__}, not an nn.Module")
        return m, getattr(model, "__name__", "model")
    raise ValueError(f"model {model!r}: a torchvision name, a .py file, an nn.Module or a function")


def _measure_model(m, name, device, amp, batch_size, size, seconds):
    """Training steps per second of module m (forward, backward, SGD step)
    on random inputs already on the device."""
    import torch
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("device cuda: no CUDA device here")
    m = m.to(dev).train()
    x = torch.randn(batch_size, 3, *size, device=dev)
    if dev.type == "cuda":
        m = m.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    params = [p for p in m.parameters() if p.requires_grad]
    opt = torch.optim.SGD(params, lr=1e-3) if params else None
    amp_dtype = torch.float16 if dev.type == "cuda" else torch.bfloat16
    targets = None

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)

    def step():
        nonlocal targets
        with torch.autocast(device_type=dev.type, dtype=amp_dtype, enabled=amp):
            out = m(x)
        if out.ndim == 2 and targets is None:
            targets = torch.randint(0, out.shape[1], (out.shape[0],), device=dev)
        loss = torch.nn.functional.cross_entropy(out.float(), targets) if out.ndim == 2 else out.float().mean()
        if opt is not None and loss.requires_grad:
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()

    t = time.perf_counter()
    step()  # warm-up: allocation, cuDNN's choice of algorithms
    sync()
    warm = time.perf_counter() - t
    if warm >= seconds / 2:
        steps, dt = 1, warm  # a slow model: the warm-up step is the estimate (pessimistic)
    else:
        steps, t0 = 0, time.perf_counter()
        while True:
            step()
            steps += 1
            sync()
            dt = time.perf_counter() - t0
            if dt >= seconds:
                break
    return {"name": name, "device": str(dev), "amp": bool(amp), "batch_size": batch_size,
            "input": [3, *size], "steps": steps, "seconds": dt, "steps_s": steps / dt,
            "img_s": steps * batch_size / dt, "warmup_s": warm, "from_warmup": steps == 1 and dt == warm}


# ---- deciding ----------------------------------------------------------------------

def _ratio(x):
    return f"{x:.1f}x" if x < 10 else f"{x:,.0f}x"


def _fmt_rate(x):
    return "-" if x is None else f"{x:,.0f}"


def _mb(x):
    return f"{x / 1e6:,.0f} MB" if x >= 1e6 else f"{x / 1e3:,.0f} kB"


def _gib(x):
    return "?" if x is None else f"{x / 2**30:.1f} GiB" if x >= 2**30 else f"{x / MiB:.0f} MiB"


def decide(report):
    """Names the bottleneck and fills the recommendations of a report whose
    measurements are in (kept apart from measuring, so it can be tested
    alone)."""
    s, ld, ds, mem = report.settings, report.loader, report.dataset, report.machine
    recs, notes = [], []
    cur = ld["current"]
    cpu_rate = cur["img_s"]
    sample_bytes = ds["mean_sample_bytes"] or 1.0
    cold = {(c["order"], c["os_cache"]): c for c in ld.get("cold", [])}
    cold_cur = cold.get((s["order"].upper(), s["os_cache"]))
    fits = ds["fits_in_memory"]
    loader_rate, limit = cpu_rate, "cpu"
    if cold_cur is not None and (not fits or ds["remote"]):
        if cold_cur["img_s"] < 0.8 * cpu_rate:
            loader_rate, limit = cold_cur["img_s"], "storage"
    model = report.model
    model_rate = model["img_s"] if model else None
    epoch_s = ds["samples"] / max(loader_rate, 1e-9)

    if model_rate is not None and model_rate <= loader_rate:
        report.bottleneck = "model"
        report.summary = (f"the model trains at {_fmt_rate(model_rate)} img/s; the loader delivers "
                          f"{_fmt_rate(loader_rate)} img/s ({_ratio(loader_rate / model_rate)} that): training "
                          f"waits for the model, not for data. Nothing to change in the loader.")
        if model["device"].startswith("cuda") and not model["amp"]:
            recs.append(Recommendation("torch.autocast('cuda', dtype=torch.float16) (--amp)", "model",
                                       "mixed precision usually raises a GPU's training rate the most; "
                                       "measure it with --amp"))
        need = next((p for p in ld["scan"] if p["img_s"] >= 1.2 * model_rate), None)
        if need is not None and need["workers"] < cur["workers"]:
            notes.append(f"{_workers(need['workers'])} already deliver{'s' if need['workers'] == 1 else ''} "
                         f"{_fmt_rate(need['img_s'])} img/s, {_ratio(need['img_s'] / model_rate)} the model's "
                         f"rate: fewer workers would leave cores to the training process")
    elif model_rate is None and fits and not ds["remote"] and epoch_s < 1.0:
        report.bottleneck = "none"
        report.summary = (f"nothing to tune at this scale: an epoch of the {ds['samples']:,} samples takes "
                          f"{epoch_s:.2f} s at {_fmt_rate(loader_rate)} img/s and the file fits in memory. "
                          "Run the doctor on the full dataset, with --model to compare with training.")
    elif limit == "storage":
        report.bottleneck = "storage"
        _storage_recs(report, recs, notes, cold, cold_cur, cpu_rate, sample_bytes, mem)
    else:
        report.bottleneck = "cpu"
        _cpu_recs(report, recs, notes, model_rate)
    if report.bottleneck in ("storage", "cpu") and model_rate is not None:
        report.summary += (f" The model could train at {_fmt_rate(model_rate)} img/s: "
                           f"{_ratio(model_rate / max(loader_rate, 1e-9))} what the loader delivers.")
    if model is not None and model["device"] == "cpu":
        notes.append("the model and the loader share this machine's cores: training together, each runs below "
                     "the rate it reached alone")
    if model is not None and model.get("from_warmup"):
        notes.append(f"one training step took {model['seconds']:.1f} s: the model's rate is from that first "
                     "step (warm-up included), so it is a lower bound")
    load = report.machine.get("load_average")
    if load and load[0] > 0.5 * report.machine["cores"]:
        notes.append(f"other processes were using the CPU (load average {load[0]:.1f} on {report.machine['cores']} "
                     f"cores when measuring started): the rates are lower and noisier than on an idle machine")
    report.recommendations, report.notes = recs, notes
    return report


def _storage_recs(report, recs, notes, cold, cold_cur, cpu_rate, sample_bytes, mem):
    s, ds, st, ld = report.settings, report.dataset, report.storage, report.loader
    usable = mem.get("usable_memory")
    ps = ds["page_size"]
    where = (f"the file ({_gib(ds['bytes'])}) is larger than the memory this process may use "
             f"({_gib(usable)})" if not ds["remote"] else "every page comes over the network")
    report.summary = (f"{where}, so pages are read again and again; from a cold cache the loader "
                      f"delivers {_fmt_rate(cold_cur['img_s'])} img/s with order={s['order'].upper()}, "
                      f"os_cache={s['os_cache']}, against {_fmt_rate(cpu_rate)} img/s decoding from memory.")
    quasi = cold.get(("QUASI_RANDOM", False))
    rates = []
    if st.get("cold_page_mb_s"):
        rates.append(f"whole {ps // MiB} MiB pages read cold at {st['cold_page_mb_s']:,.0f} MB/s "
                     f"(= {st['cold_page_mb_s'] * 1e6 / sample_bytes:,.0f} img/s of {_mb(sample_bytes)} samples)")
    if st.get("cold_sample_mb_s"):
        rates.append(f"sample-sized random reads at {st['cold_sample_mb_s']:,.0f} MB/s "
                     f"(= {st['cold_sample_mb_s'] * 1e6 / sample_bytes:,.0f} img/s)")
    if (s["order"].upper(), s["os_cache"]) != ("QUASI_RANDOM", False):
        window = ld.get("quasi_window")
        setting = "os_cache=False, order=OrderOption.QUASI_RANDOM"
        if window:
            setting += f", order_kwargs={{'window_pages': {window['window_pages']}}}, " \
                       f"max_resident_pages={window['max_resident_pages']}"
        why = "QUASI_RANDOM visits the samples of a few pages at a time and the process cache reads each page once per epoch"
        if quasi is not None:
            why += (f": measured from a cold cache, {_fmt_rate(quasi['img_s'])} img/s against "
                    f"{_fmt_rate(cold_cur['img_s'])} img/s now ({quasi['img_s'] / max(cold_cur['img_s'], 1e-9):.1f}x)")
        if rates:
            why += "; " + ", ".join(rates)
        if window:
            why += (f"; {window['max_resident_pages']} resident pages of {ps // MiB} MiB "
                    f"({_gib(window['max_resident_pages'] * ps)}) keep the process cache within a third of the "
                    f"usable memory")
        recs.append(Recommendation(f"Loader(..., {setting})", "Loader", why))
    best_cold = max([c["img_s"] for c in cold.values()] + [0])
    big = _max_resolution(report)
    if best_cold < 0.8 * cpu_rate:
        if big is not None:
            recs.append(big)
        need = cpu_rate * sample_bytes / 1e6
        notes.append(f"to keep the workers busy the storage must deliver about {need:,.0f} MB/s "
                     f"({_fmt_rate(cpu_rate)} img/s x {_mb(sample_bytes)}): more memory (the file is "
                     f"{_gib(ds['bytes'])}) or faster storage would remove the limit")


def _max_resolution(report):
    """A max_resolution recommendation when stored images are much larger
    than the pipeline's crops."""
    ds, ld, facts = report.dataset, report.loader, report.loader.get("pipeline_facts", {})
    im, out = ds.get("images"), facts.get("output_size")
    if not im or not out:
        return None
    side = max(out)
    target = int(math.ceil(side * 256 / 224 / 32) * 32)
    stored_long = max(im["median_width"], im["median_height"])
    if stored_long < 2 * target:
        return None
    scale = (target / stored_long) ** 2
    share = ld.get("stages", {}).get("share", {})
    dec = share.get("entropy_decode", 0) + share.get("idct_resize", 0)
    why = (f"stored images are {im['median_width']}x{im['median_height']} px (median), {_mb(ds['mean_sample_bytes'])} "
           f"each, for {out[1]}x{out[0]} crops")
    if dec:
        why += f"; decoding takes {100 * dec:.0f}% of the workers' time"
    why += (f". Rewritten with max_resolution={target} (longer side), an image has about {100 * scale:.0f}% of "
            f"the pixels and bytes (estimated): entropy decoding and the file shrink about as much")
    return Recommendation(f"DatasetWriter(..., {{'{im['field']}': RGBImageField(max_resolution={target}, ...)}})"
                          f"  # or ffcv-go convert --max-resolution {target}", "DatasetWriter", why)


def _cpu_recs(report, recs, notes, model_rate):
    ld, mem = report.loader, report.machine
    cur, best = ld["current"], ld["best"]
    cores = mem["cores"]
    stages = ld.get("stages", {}).get("ms_per_image", {})
    report.summary = (f"the workers decode {_fmt_rate(cur['img_s'])} img/s with num_workers={cur['workers']}, "
                      f"{cur['cpu_ms_per_image']:.2f} ms of CPU per image, {cur['cores_busy']:.1f} of "
                      f"{cores} usable cores busy.")
    if cur["workers"] > cores:
        recs.append(Recommendation(f"Loader(..., num_workers={cores})", "Loader",
                                   f"{cur['workers']} workers on {cores} usable cores oversubscribe them: "
                                   f"{cores} workers deliver {_fmt_rate(_at(ld, cores))} img/s against "
                                   f"{_fmt_rate(cur['img_s'])}"))
    elif best["workers"] != cur["workers"] and best["img_s"] > (1.1 if best["workers"] > cur["workers"] else 1.25) \
            * cur["img_s"]:
        # Fewer workers doing better is more often noise than a real effect: ask for a clear margin.
        idle = cores - cur["cores_busy"] if cur["cores_busy"] is not None else None
        recs.append(Recommendation(f"Loader(..., num_workers={best['workers']})", "Loader",
                                   f"{_fmt_rate(best['img_s'])} img/s with {_workers(best['workers'])} against "
                                   f"{_fmt_rate(cur['img_s'])} with {cur['workers']}"
                                   + (f"; {idle:.1f} of {cores} cores are idle now" if idle and idle > 0.3 else "")))
    big = _max_resolution(report)
    if big is not None:
        recs.append(big)
    facts = ld.get("pipeline_facts", {})
    dev = report.settings.get("device", "cpu")
    if dev.startswith("cuda") and facts.get("normalize_on_cpu"):
        ops = stages.get("ops")
        recs.append(Recommendation(
            f"pipeline: [..., ToTensor(), ToDevice(torch.device('{dev}'), non_blocking=True), ToTorchImage(), "
            f"NormalizeImage(mean, std, np.float16)]", "pipeline",
            "NormalizeImage before ToDevice runs on the CPU and ships 2 or 4 bytes per pixel instead of 1"
            + (f"; the workers' operations take {ops:.2f} ms per image" if ops else "")
            + ": after ToDevice it runs on the GPU"))
    if not recs:
        notes.append(f"every usable core is busy decoding ({cur['cores_busy']:.1f} of {cores}) and no setting "
                     f"measured here does better: this is the machine's rate for this pipeline")


def _workers(n):
    return f"{n} worker" + ("s" if n != 1 else "")


def _at(ld, workers):
    return next((p["img_s"] for p in ld["scan"] if p["workers"] == workers), None)


# ---- measuring -----------------------------------------------------------------------

class _Progress:
    def __init__(self, total, enabled):
        self.bar = None
        if enabled:
            try:
                from tqdm import tqdm
                self.bar = tqdm(total=total, desc="doctor", unit="step", file=sys.stderr, leave=False,
                                bar_format="{desc:<34} {bar} {n_fmt}/{total_fmt} [{elapsed}]")
            except ImportError:
                self.bar = None

    def phase(self, text):
        if self.bar is not None:
            self.bar.set_description_str(text)

    def done(self, k=1):
        if self.bar is not None:
            self.bar.update(k)

    def close(self):
        if self.bar is not None:
            self.bar.close()


def diagnose(data, pipeline="train", *, res=224, batch_size=256, num_workers=None, order="random",
             os_cache=True, model=None, device="cpu", amp=False, max_seconds=40.0, progress=True, seed=0):
    """Measures storage, the loader and optionally the model on this machine
    and this dataset, and returns a ``Report`` naming the bottleneck with
    the settings that fix it.

    Args:
        data: a .beton file (or shards, or an s3:// or http(s):// URL).
        pipeline: "train" (RandomResizedCrop + flip), "val" (centre crop),
            a .py file defining ``pipelines``, or a pipelines dict (field
            name -> operations) or a function returning one.
        res: the crop size of the "train" and "val" pipelines.
        batch_size: of the loader and the model.
        num_workers: the setting to diagnose (None: the Loader's default,
            the usable cores); the doctor measures 1, 2, 4, ... cores anyway.
        order: the order to diagnose: "random", "quasi_random" or "sequential".
        os_cache: the cache to diagnose.
        model: None, a torchvision model name, a .py file defining
            ``model``, an ``nn.Module`` or a function returning one.
        device: where the model trains (and where "train" and "val" normalise).
        amp: train the model with mixed precision.
        max_seconds: the time the measurements may take, about.
        progress: a progress bar on stderr.
    """
    from .reader import Reader
    t_start = time.perf_counter()
    data = [os.fspath(d) for d in data] if isinstance(data, (list, tuple)) else os.fspath(data)
    order = str(order).lower()
    if order not in ("random", "quasi_random", "sequential"):
        raise ValueError(f"order {order!r}: 'random', 'quasi_random' or 'sequential'")
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size {batch_size!r} must be a positive integer")
    if not isinstance(res, int) or res < 8:
        raise ValueError(f"res {res!r} must be an integer of at least 8")
    if not (isinstance(max_seconds, (int, float)) and max_seconds >= 5):
        raise ValueError(f"max_seconds {max_seconds!r} must be at least 5")
    if num_workers is not None and (not isinstance(num_workers, int) or num_workers < 1):
        raise ValueError(f"num_workers {num_workers!r} must be a positive integer or None")
    import torch
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {device!r}: CUDA is not available here")
    rng = np.random.default_rng(seed)
    deadline = t_start + max_seconds
    resolved = _resolve_model(model) if model is not None else None  # a bad name fails before measuring

    def left(share):
        return max(0.5, min(share * max_seconds, deadline - time.perf_counter()))

    reader = Reader(data)
    ds = _dataset_info(reader, data)
    if not ds["samples"]:
        raise ValueError(f"{data}: the dataset has no samples")
    make, pipe_desc = _load_pipeline(pipeline, reader, res, device, amp)
    facts = _pipeline_facts(make())
    if ds["remote"]:
        os_cache = False  # remote files always go through the process cache
    cores = usable_cores()
    current = num_workers or cores
    mem = memory_info()
    machine = {"cores": cores, "cpu": _cpu_model(), "memory_total": mem["total"],
               "memory_available": mem["available"], "cgroup_memory_limit": mem["cgroup_limit"],
               "usable_memory": mem["usable"], "platform": platform.platform(),
               "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None}
    usable = mem["usable"] or 0
    ds["fits_in_memory"] = (not ds["remote"]) and ds["bytes"] <= 0.8 * usable
    counts = _worker_counts(cores, current)
    cold_needed = ds["remote"] or not ds["fits_in_memory"]
    steps = 2 + len(counts) + (2 if cold_needed else 0) + (1 if model is not None else 0)
    bar = _Progress(steps, progress)
    settings = {"pipeline": pipe_desc, "res": res, "batch_size": batch_size, "num_workers": current,
                "order": order, "os_cache": bool(os_cache), "device": str(dev), "amp": bool(amp),
                "model": None if resolved is None else resolved[1],
                "max_seconds": max_seconds}
    # The decoding scan and the storage reads use one file: the dataset's,
    # or its first shard (shards share their fields and encoding).
    one = data if ds["files"] == 1 else reader.file_names[0]
    one_reader = reader if ds["files"] == 1 else Reader(one)
    lay = _Layout(one_reader)
    report = Report(data=str(data), settings=settings, machine=machine, dataset=ds, storage={},
                    loader={"pipeline_facts": {k: (list(v) if isinstance(v, tuple) else v) for k, v in facts.items()}})
    try:
        bar.phase("storage: cold and warm reads")
        if ds["remote"]:
            report.storage = _storage_remote(one, one_reader, lay, left(0.1), rng)
        else:
            report.storage = _storage_local(one, one_reader, lay, left(0.1), rng)
        bar.done()

        bar.phase("loader: reading samples into memory")
        indices = _warm_subset(one, one_reader, ds, lay, usable, rng)
        report.loader["subset_samples"] = one_reader.num_samples if indices is None else int(len(indices))
        bar.done()

        scan = []
        per_point = left(0.35 if cold_needed else 0.5) / len(counts)
        for w in counts:
            bar.phase(f"loader: {_workers(w)}")
            scan.append(_run_loader(one, make, workers=w, batch_size=batch_size, order=order,
                                    os_cache=os_cache, indices=indices, seconds=max(1.0, per_point)))
            bar.done()
        report.loader["scan"] = scan
        cur = next(p for p in scan if p["workers"] == current)
        best = max(scan, key=lambda p: p["img_s"])
        if not best["img_s"]:
            raise RuntimeError(f"{data}: the loader delivered no batches in {max(1.0, per_point):.0f} s with "
                               f"this pipeline")
        report.loader["current"] = {k: v for k, v in cur.items() if k != "stages"}
        report.loader["best"] = {k: v for k, v in best.items() if k != "stages"}
        report.loader["first_batch_s"] = cur["first_batch_s"]
        report.loader["stages"] = _stage_times(cur.get("stages"))

        if cold_needed:
            # Memory left now that the loaders have run (their slots and the Go heap stay).
            room = min(usable, memory_info()["usable"] or usable)
            report.loader["quasi_window"] = _quasi_window(ds, room, batch_size, current)
            configs = [(order, bool(os_cache))]
            if (order, bool(os_cache)) != ("quasi_random", False):
                configs.append(("quasi_random", False))
            cold = []
            for o, c in configs:
                bar.phase(f"loader from cold: {o.upper()}, os_cache={c}")
                if not ds["remote"]:
                    drop_from_page_cache(reader.file_names)
                kw = {}
                q = report.loader["quasi_window"]
                if o == "quasi_random" and not c and q:
                    kw = {"order_kwargs": {"window_pages": q["window_pages"]},
                          "max_resident_pages": q["max_resident_pages"]}
                cold.append(_run_loader(data, make, workers=current, batch_size=batch_size, order=o, os_cache=c,
                                        indices=None, seconds=max(2.0, left(0.15)), trace=False, from_start=True,
                                        **kw))
                bar.done()
            bar.done(2 - len(configs))
            report.loader["cold"] = cold

        if model is not None:
            bar.phase("model: training steps")
            size = facts["output_size"] or (res, res)
            report.model = _measure_model(*resolved, device, amp, batch_size, size, max(1.0, left(0.15)))
            bar.done()
    finally:
        bar.close()
    report.elapsed_s = time.perf_counter() - t_start
    return decide(report)


def _warm_subset(path, reader, ds, lay, usable, rng):
    """The samples the worker scan decodes: those on random pages holding
    up to a quarter of the usable memory (256 MiB at most), or None for the
    whole file when it is smaller. A local file's pages are read once here,
    so that the scan decodes from memory."""
    target = min(256 * MiB, 0.25 * usable) if usable else 64 * MiB
    if ds["remote"]:
        target = min(target, 32 * MiB)
    chosen = None
    if int(lay.nbytes.sum()) > target or ds["remote"]:
        per_page = np.bincount(lay.page, weights=lay.nbytes)
        total, keep = 0.0, []
        for p in rng.permutation(np.flatnonzero(per_page > 0)).tolist():
            keep.append(p)
            total += per_page[p]
            if total >= target:
                break
        chosen = np.flatnonzero(np.isin(lay.page, keep) & (lay.nbytes > 0))
    if not ds["remote"]:
        want = lay.used_pages if chosen is None else np.unique(lay.page[chosen])
        _read_ranges(path, _page_ranges(path, reader.page_size, want.tolist()), budget=120.0)
    return chosen


def _quasi_window(ds, usable, batch_size, workers):
    """QUASI_RANDOM's window and the process cache's bound for a third of
    the usable memory (the rest stays for the training process and the page
    cache the cache's reads pass through), when its defaults (2 x batch size
    pages, plus read-ahead) would not fit; None when they do."""
    ps = ds["page_size"]
    pages = max(1, math.ceil(ds["bytes"] / ps))
    default = 2 * workers + 4 * 4 + min(2 * batch_size, pages)
    room = int(usable / 3 // ps) if usable else default
    if default <= room:
        return None
    resident = max(3, room)
    return {"window_pages": max(1, resident - 2), "max_resident_pages": resident,
            "default_resident_pages": default}


# ---- the terminal report and the figure ---------------------------------------------------

def _format(r):
    lines = []
    m, ds, st, ld, s = r.machine, r.dataset, r.storage, r.loader, r.settings
    lines.append(f"ffcv-go doctor: {r.data}")
    cg = f", cgroup limit {_gib(m['cgroup_memory_limit'])}" if m.get("cgroup_memory_limit") else ""
    lines.append(f"  machine   {m['cores']} usable cores ({m['cpu']}), {_gib(m['memory_total'])} memory, "
                 f"{_gib(m['usable_memory'])} usable{cg}")
    im = ds.get("images")
    imtxt = (f"; images '{im['field']}' {100 * im['jpeg_fraction']:.0f}% JPEG, median "
             f"{im['median_width']}x{im['median_height']}") if im else ""
    lines.append(f"  dataset   {ds['samples']:,} samples, {_gib(ds['bytes'])} ({ds['page_size'] // MiB} MiB pages), "
                 f"{_mb(ds['mean_sample_bytes'])} per sample{imtxt}")
    lines.append("")
    lines.append("storage")
    sb = ds["mean_sample_bytes"] or 1
    if st.get("kind") == "remote":
        if st.get("fetch_mb_s"):
            lines.append(f"  fetch               {st['fetch_mb_s']:8,.0f} MB/s = {st['fetch_mb_s'] * 1e6 / sb:9,.0f} img/s")
        elif st.get("note"):
            lines.append(f"  {st['note']}")
    else:
        for key, label in (("cold_page_mb_s", f"cold {ds['page_size'] // MiB} MiB pages"),
                           ("cold_sample_mb_s", "cold sample reads"), ("warm_mb_s", "warm reads")):
            if st.get(key):
                lines.append(f"  {label:<20}{st[key]:8,.0f} MB/s = {st[key] * 1e6 / sb:9,.0f} img/s")
        lines.append(f"  file vs memory      {_gib(ds['bytes'])} of {_gib(m['usable_memory'])} usable: "
                     f"{'fits' if ds['fits_in_memory'] else 'does not fit (it would need 25% to spare)'}")
    lines.append("")
    lines.append(f"loader  ({s['pipeline']} pipeline, batch {s['batch_size']}, order {s['order'].upper()}, "
                 f"os_cache={s['os_cache']}; {ld.get('subset_samples', 0):,} samples in memory)")
    lines.append("  workers     img/s   CPU ms/img   cores busy")
    for p in ld.get("scan", []):
        mark = "  <- num_workers" if p["workers"] == s["num_workers"] else ""
        lines.append(f"  {p['workers']:7d} {p['img_s']:9,.0f} {p['cpu_ms_per_image'] or 0:12.2f} "
                     f"{p['cores_busy'] or 0:12.1f}{mark}")
    if ld.get("first_batch_s") is not None:
        lines.append(f"  first batch after {ld['first_batch_s']:.2f} s")
    stg = ld.get("stages", {})
    if stg.get("ms_per_image"):
        parts = [f"{STAGE_LABELS[k]} {v:.2f} ms ({100 * stg['share'][k]:.0f}%)" for k, v in stg["ms_per_image"].items()]
        lines.append("  worker time per image: " + ", ".join(parts))
    for c in ld.get("cold", []):
        lines.append(f"  from a cold cache, {c['order']}, os_cache={c['os_cache']}: {c['img_s']:,.0f} img/s "
                     f"({c['pages_read'] or 0} pages read by the process cache)")
    if r.model:
        md = r.model
        lines.append("")
        lines.append(f"model  {md['name']} on {md['device']}, batch {md['batch_size']}, "
                     f"{'AMP' if md['amp'] else 'fp32'}: {md['steps_s']:.2f} steps/s = {md['img_s']:,.0f} img/s")
    lines.append("")
    lines.append(f"bottleneck: {r.bottleneck.upper()}: {r.summary}")
    if r.recommendations:
        lines.append("recommendations:")
        for k, rec in enumerate(r.recommendations, 1):
            lines.append(f"  {k}. {rec.setting}")
            lines.append(f"     {rec.why}")
    for n in r.notes:
        lines.append(f"note: {n}")
    lines.append(f"(measured in {r.elapsed_s:.0f} s)")
    return "\n".join(lines)


def _plot(r, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    ld, st, ds = r.loader, r.storage, r.dataset
    sb = ds["mean_sample_bytes"] or 1
    fig, ax = plt.subplots(figsize=(7.5, 5.5), dpi=120)
    scan = ld.get("scan", [])
    xs = [p["workers"] for p in scan]
    ax.plot(xs, [p["img_s"] for p in scan], "o-", color="C0", label="loader, data in memory")
    lines = []
    for key, label, style in (("cold_page_mb_s", "storage: cold page reads", "--"),
                              ("cold_sample_mb_s", "storage: cold random sample reads", ":"),
                              ("fetch_mb_s", "storage: fetch", "--")):
        if st.get(key):
            lines.append((st[key] * 1e6 / sb, label, style, "C3"))
    if r.model:
        lines.append((r.model["img_s"], f"model: {r.model['name']} ({r.model['device']})", "-", "C2"))
    for y, label, style, color in lines:
        ax.axhline(y, linestyle=style, color=color, label=f"{label}: {y:,.0f} img/s")
    for k, c in enumerate(ld.get("cold", [])):
        x = c["workers"] * (1 + 0.04 * (k - 0.5))
        ax.plot([x], [c["img_s"]], "s", color=f"C{4 + k}",
                label=f"loader from cold: {c['order']}, os_cache={c['os_cache']}: {c['img_s']:,.0f} img/s")
    ys = [p["img_s"] for p in scan] + [c["img_s"] for c in ld.get("cold", [])] + [y for y, *_ in lines]
    ys = [y for y in ys if y > 0] or [1]
    ax.set_yscale("log")  # storage, decoding and models differ by orders of magnitude
    ax.set_ylim(min(ys) / 2, max(ys) * 4)
    for p in scan:
        ax.annotate(f"{p['img_s']:,.0f}", (p["workers"], p["img_s"]), textcoords="offset points", xytext=(0, 6),
                    ha="center", fontsize=7)
    ax.set_xlabel("loader workers")
    ax.set_ylabel("images / s")
    ax.set_xticks(xs)
    fits = "fits in memory" if ds.get("fits_in_memory") else "larger than memory" if not ds.get("remote") else "remote"
    ax.set_title(f"{os.path.basename(str(r.data))} ({fits}): bottleneck {r.bottleneck.upper()}")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2, frameon=False)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
