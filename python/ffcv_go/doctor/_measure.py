"""Measuring storage and the loader: cold and warm reads of the file, the
pipeline's rate at a number of workers, where the workers' time goes (by
stage and by operation). Each function runs one bounded measurement and
returns plain dicts; none decides anything."""
import copy
import math
import os
import runpy
import threading
import time

import numpy as np

MiB = 1 << 20

STAGE_LABELS = {"read": "read", "entropy_decode": "entropy decode", "idct_resize": "IDCT + resize", "ops": "ops"}

# Arguments of the Loaders the doctor makes itself: a pipeline file's or
# diagnose's loader_kwargs may not set them.
RESERVED_LOADER_KWARGS = {"fname", "batch_size", "num_workers", "order", "os_cache", "indices", "pipelines", "seed",
                          "trace", "drop_last", "order_kwargs", "max_resident_pages", "distributed"}


# ---- the deadline ----------------------------------------------------------------

class Cut:
    """Closes an epoch iterator at a deadline (a time.perf_counter() value)
    from a timer thread: a next() waiting on storage (the first pages of a
    cold run, a remote page's fetch) returns then instead of when the pages
    come, so no measurement runs past its deadline. ``fired`` says whether
    it did. None: no deadline."""

    def __init__(self, it, deadline):
        self.fired = False
        self.timer = None
        if deadline is not None:
            self.timer = threading.Timer(max(0.0, deadline - time.perf_counter()), self._fire, args=(it,))
            self.timer.daemon = True
            self.timer.start()

    def _fire(self, it):
        self.fired = True
        it.close()

    def cancel(self):
        if self.timer is not None:
            self.timer.cancel()


def close_loader(loader, cut):
    """Closes a loader; one whose epoch was cut waits for the page reads
    then in flight (a slow server's), so it is closed in the background."""
    if cut is not None and cut.fired:
        threading.Thread(target=loader.close, name="ffcv_go-doctor-close", daemon=True).start()
    else:
        loader.close()


# ---- storage ---------------------------------------------------------------------

def drop_from_page_cache(paths):
    """Asks the kernel to drop the files' pages from its cache (clean pages of
    files nobody else holds mapped go), for every process on the machine:
    another job reading the file reads it again from storage. ``diagnose``
    does it only with ``evict=True``, or by default when no other process
    has the file open."""
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def read_ranges(path, ranges, budget):
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


def page_ranges(path, page_size, pages):
    fsize = os.path.getsize(path)
    return [(p * page_size, min(page_size, fsize - p * page_size)) for p in pages if p * page_size < fsize]


def storage_local(path, reader, lay, budget, rng, evict):
    """Page reads, the same pages again (warm), sample-sized reads. With
    evict, each of the first and last from a cold cache (the file dropped
    from the page cache before: keys cold_*); without, from the cache as
    found (keys page_*, sample_*: warm where other jobs keep it cached)."""
    pages = page_ranges(path, reader.page_size, rng.permutation(lay.used_pages)[:64].tolist())
    out = {"kind": "local", "path": path, "evicted": bool(evict)}
    pre = "cold_" if evict else ""
    if evict:
        drop_from_page_cache([path])
    b, dt, k = read_ranges(path, pages, budget * 0.45)
    out.update({f"{pre}page_bytes": b, f"{pre}page_s": dt, f"{pre}page_reads": k,
                f"{pre}page_mb_s": b / dt / 1e6 if dt else None})
    b, dt, _ = read_ranges(path, pages[:k], budget * 0.1)
    out.update(warm_mb_s=b / dt / 1e6 if dt else None)
    if evict:
        drop_from_page_cache([path])
    samples = np.flatnonzero(lay.nbytes > 0)
    pick = rng.choice(samples, size=min(2000, len(samples)), replace=False) if len(samples) else samples
    b, dt, k = read_ranges(path, zip(lay.ptr[pick].tolist(), lay.nbytes[pick].tolist()), budget * 0.45)
    out.update({f"{pre}sample_bytes": b, f"{pre}sample_s": dt, f"{pre}sample_reads": k,
                f"{pre}sample_mb_s": b / dt / 1e6 if dt else None})
    return out


def storage_remote(data, reader, lay, budget, rng):
    """The loader's own reader fetching whole pages (no decoding): one page
    alone first (one request, so that a slow link delivers a page within
    the budget), then up to 16 pages in flight for the rest of it. Each
    run is cut at the budget's end; ``fetch_mb_s`` is the faster of the
    two. When no page arrived in time, ``fetch_mb_s_at_most``: a page's
    bytes over the time waited, an upper bound of the rate."""
    names = reader.field_names
    kinds = {n: type(reader.handlers[n]).__name__ for n in names}
    light = [n for n in names if kinds[n] in ("IntField", "FloatField")]
    out = {"kind": "remote", "path": str(data), "evicted": False}
    if not light:
        out["note"] = "no Int or Float field to load without decoding: fetch rate not measured"
        return out
    end = time.perf_counter() + budget
    used = rng.permutation(lay.used_pages)[:16]
    on_pages = lay.nbytes > 0
    runs = [_fetch(data, names, kinds, light[0], np.flatnonzero((lay.page == used[0]) & on_pages), budget)]
    rest = end - time.perf_counter()
    if not runs[0]["cut"] and len(used) > 1 and rest > 2 * runs[0]["fetch_s"]:
        runs.append(_fetch(data, names, kinds, light[0], np.flatnonzero(np.isin(lay.page, used[1:]) & on_pages),
                           rest))
    best = max(runs, key=lambda r: r["fetch_mb_s"] or 0)
    out.update(best)
    out["fetch_runs"] = runs
    if not best["fetch_mb_s"]:
        out["fetch_mb_s"] = None
        out["fetch_mb_s_at_most"] = reader.page_size / runs[0]["fetch_s"] / 1e6
        out["note"] = (f"no {reader.page_size // MiB} MiB page arrived in {runs[0]['fetch_s']:.1f} s: fetched at most "
                       f"{out['fetch_mb_s_at_most']:,.1f} MB/s")
    return out


def _fetch(data, names, kinds, light, idx, seconds):
    """Loads one number of each sample of idx (their pages fetched whole)
    for at most `seconds` after the loader is open: the bytes fetched, the
    time and whether it was cut."""
    from ..fields.decoders import FloatDecoder, IntDecoder
    from ..loader import Loader, OrderOption
    # A sample's pages are fetched whatever fields are decoded: decode only a number.
    pipes = {n: None for n in names}
    pipes[light] = [IntDecoder() if kinds[light] == "IntField" else FloatDecoder()]
    loader = Loader(data, batch_size=64, num_workers=2, order=OrderOption.QUASI_RANDOM, os_cache=False,
                    indices=idx, drop_last=False, pipelines=pipes, seed=0)
    fetched0 = loader.stats.get("bytes_fetched", 0)  # the open's requests: not page fetches
    t0 = time.perf_counter()
    end = t0 + seconds
    it = iter(loader)
    cut = Cut(it, end)
    try:
        for _ in it:
            if time.perf_counter() > end:
                break
    except RuntimeError:
        if not cut.fired:
            raise
    finally:
        cut.cancel()
    dt = time.perf_counter() - t0
    fetched = loader.stats.get("bytes_fetched", 0) - fetched0
    if not cut.fired:
        it.close()
    close_loader(loader, cut)
    return {"fetch_bytes": fetched, "fetch_s": dt, "fetch_mb_s": fetched / dt / 1e6 if dt and fetched else None,
            "cut": cut.fired}


# ---- the pipeline ----------------------------------------------------------------

def _imagenet_norm(dtype):
    from ..transforms import NormalizeImage
    return NormalizeImage(np.array([0.485, 0.456, 0.406]) * 255, np.array([0.229, 0.224, 0.225]) * 255, dtype)


def builtin_pipeline(kind, reader, res, device, amp):
    """A factory of FFCV's ImageNet pipelines: train (RandomResizedCrop +
    flip) or val (centre crop), normalised on the device."""
    import torch
    from ..fields.decoders import CenterCropRGBImageDecoder, IntDecoder, RandomResizedCropRGBImageDecoder
    from ..transforms import RandomHorizontalFlip, Squeeze, ToDevice, ToTensor, ToTorchImage
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


def pipeline_source(spec):
    """(pipelines, description, loader_kwargs) of diagnose's pipeline
    argument: "train" or "val" as they are; a .py file's ``pipelines`` (a
    dict, or a function returning one) and optional ``loader_kwargs`` (more
    Loader arguments: views' ``custom_field_mapper``, ``custom_fields``,
    ...); a dict or a function as they are. The file runs here, before the
    dataset is opened with its custom fields."""
    kwargs = {}
    if isinstance(spec, str) and spec in ("train", "val"):
        return spec, spec, kwargs
    if isinstance(spec, (str, os.PathLike)):
        path = os.fspath(spec)
        if not path.endswith(".py") or not os.path.isfile(path):
            raise ValueError(f"pipeline {spec!r}: 'train', 'val' or a .py file defining `pipelines`")
        ns = runpy.run_path(path)
        if "pipelines" not in ns:
            raise ValueError(f"{path} defines no `pipelines` (a dict of field name -> operations, "
                             "or a function returning one)")
        spec, desc = ns["pipelines"], path
        kwargs = ns.get("loader_kwargs") or {}
        if not isinstance(kwargs, dict):
            raise ValueError(f"{path}: loader_kwargs must be a dict of Loader arguments, not "
                             f"{type(kwargs).__name__}")
    else:
        desc = "custom"
    if isinstance(spec, dict):
        if not any(v for v in spec.values()):
            raise ValueError("pipelines: no field has operations")
    elif not callable(spec):
        raise ValueError(f"pipeline {spec!r}: 'train', 'val', a .py file, a dict or a function")
    return spec, desc, kwargs


def pipeline_factory(spec, reader, res, device, amp):
    """A function making a fresh pipelines dict for each loader, from
    pipeline_source's pipelines."""
    if isinstance(spec, str):
        return builtin_pipeline(spec, reader, res, device, amp)
    if isinstance(spec, dict):
        # Operations hold state (streams, compiled code): a fresh copy per loader.
        return lambda: copy.deepcopy(spec)
    return spec


def check_loader_kwargs(kwargs):
    """The Loader arguments to pass through: a dict without the ones the
    doctor sets itself."""
    if kwargs is None:
        return {}
    if not isinstance(kwargs, dict):
        raise ValueError(f"loader_kwargs {kwargs!r}: a dict of Loader arguments")
    clash = sorted(set(kwargs) & RESERVED_LOADER_KWARGS)
    if clash:
        raise ValueError(f"loader_kwargs: {', '.join(clash)}: set by the doctor itself (diagnose's own "
                         f"arguments), not through loader_kwargs")
    return dict(kwargs)


def pipeline_facts(pipes):
    """The output size of the image decoder, and the order of ToDevice and
    NormalizeImage (whether normalisation runs on the CPU)."""
    facts = {"output_size": None, "normalize_on_cpu": False, "to_device": None, "random_crop": False}
    for ops in pipes.values():
        if not ops:
            continue
        names = [type(op).__name__ for op in ops]
        for op in ops:
            if getattr(op, "output_size", None) is not None and facts["output_size"] is None:
                facts["output_size"] = tuple(op.output_size)
                facts["random_crop"] = "Random" in type(op).__name__
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

def run_loader(data, make, *, workers, batch_size, order, os_cache, indices, seconds, trace=True,
               order_kwargs=None, max_resident_pages=0, from_start=False, loader_kwargs=None, cut_at=None):
    """Runs the loader for about `seconds` (epochs over indices, as many as
    fit): images/s and CPU per image after the first batch (from_start:
    from the start, the first batch's wait included, as a cold epoch pays
    it), the first batch's time, and with trace the stage and op times.
    cut_at (a time.perf_counter() value): the run ends then whatever it
    waits for (``cut``: True), its first batch included."""
    from ..loader import Loader, OrderOption
    t0, c0 = time.perf_counter(), time.process_time()  # the first batch's time includes making the loader
    loader = Loader(data, batch_size=batch_size, num_workers=workers, order=OrderOption[order.upper()],
                    os_cache=os_cache, indices=indices, drop_last=False, seed=0, pipelines=make(), trace=trace,
                    order_kwargs=order_kwargs or {}, max_resident_pages=max_resident_pages, **(loader_kwargs or {}))
    first = c_first = cut = None
    n = 0
    done = False
    try:
        while not done:
            it = iter(loader)
            cut = Cut(it, cut_at)
            try:
                for batch in it:
                    now = time.perf_counter()
                    if first is None:
                        first, c_first, len_first = now, time.process_time(), _batch_len(batch)
                    else:
                        n += _batch_len(batch)
                    del batch
                    if now - t0 >= seconds and (n > 0 or now - t0 >= 3 * seconds):
                        done = True
                        break
            except RuntimeError:
                if not cut.fired:
                    raise
                done = True  # cut at the deadline, waiting for a batch
            finally:
                cut.cancel()
            if first is None or cut.fired:
                break  # an empty epoch, or the deadline came
        t1, c1 = time.perf_counter(), time.process_time()
        if not cut.fired:
            it.close()  # the epoch's counters (a Mixture's per source) are recorded when its iterator closes
        stats = loader.stats
    finally:
        close_loader(loader, cut)
    first_batch_s = first - t0 if first is not None else None
    if from_start and first is not None:
        n += len_first
        first, c_first = t0, c0
    dt = t1 - first if first is not None else 0.0
    cpu = c1 - c_first if c_first is not None else 0.0
    out = {"workers": workers, "order": order.upper(), "os_cache": bool(os_cache), "images": n, "seconds": dt,
           "img_s": n / dt if n and dt > 0 else 0.0, "cpu_ms_per_image": 1000 * cpu / n if n else None,
           "cores_busy": cpu / dt if dt > 0 else None, "first_batch_s": first_batch_s,
           "pages_read": stats.get("pages_read"), "bytes_fetched": stats.get("bytes_fetched"),
           "run_s": t1 - t0, "cut": bool(cut is not None and cut.fired)}
    last = (stats.get("epochs") or [{}])[-1]
    if last.get("sources") and not out["cut"]:
        out["sources"] = source_stats(last["sources"])
    if stats.get("stages"):
        out["stages"] = stats["stages"]
    if stats.get("ops"):
        out["ops"] = stats["ops"]
    return out


def source_stats(sources):
    """A Mixture's per-source counters of one epoch (an entry's "sources" in
    loader.stats["epochs"]), with the rate of one page read from each
    source's storage (bytes_read / read_ns)."""
    return [{"name": s["name"], "samples": s["samples"], "pages_read": s["pages_read"],
             "bytes_read": s["bytes_read"], "read_ns": s["read_ns"],
             "read_mb_s": s["bytes_read"] / s["read_ns"] * 1e3 if s["read_ns"] else None,
             "requests": s["requests"], "bytes_fetched": s["bytes_fetched"], "retries": s["retries"]}
            for s in sources]


def _batch_len(batch):
    """Samples in a batch: the first output's length (a view's, a tensor's
    or a list's)."""
    first = batch[0] if isinstance(batch, (tuple, list)) else batch
    return len(first)


def stage_times(stages):
    """{stage: ms per image} and their shares, from loader.stats["stages"]."""
    per = {}
    for k in STAGE_LABELS:
        v = (stages or {}).get(k)
        if v and v["count"]:
            per[k] = 1000 * v["seconds"] / v["count"]
    total = sum(per.values())
    return {"ms_per_image": per, "share": {k: v / total for k, v in per.items()} if total else {}}


def op_times(ops):
    """Each operation's time per image and its share of all operations'
    time, costliest first, from loader.stats["ops"]. A decoder (the first
    Go operation of an output) is marked: its time includes reading and
    entropy decoding."""
    rows, seen = [], {}
    for o in ops or []:
        if not o["count"]:
            continue
        first = o["where"] == "go" and seen.get(o["output"]) is None
        if o["where"] == "go":
            seen[o["output"]] = True
        rows.append({"output": o["output"], "op": o["op"], "where": o["where"], "decoder": first,
                     "ms_per_image": 1000 * o["seconds"] / o["count"], "seconds": o["seconds"]})
    total = sum(r["seconds"] for r in rows)
    for r in rows:
        r["share"] = r.pop("seconds") / total if total else 0.0
    return sorted(rows, key=lambda r: -r["share"])


def worker_counts(cores, current):
    counts, k = [], 1
    while k < cores:
        counts.append(k)
        k *= 2
    counts.append(cores)
    if current not in counts:
        counts.append(current)
    return sorted(set(counts))


def warm_target(usable):
    """The bytes the worker scan may read into memory first: a quarter of
    the usable memory, 256 MiB at most."""
    return min(256 * MiB, 0.25 * usable) if usable else 64 * MiB


def warm_subset(path, reader, ds, lay, usable, rng, budget=120.0):
    """The samples the worker scan decodes: those on random pages holding
    up to a quarter of the usable memory (256 MiB at most), or None for the
    whole file when it is smaller. A local file's pages are read once here,
    so that the scan decodes from memory."""
    target = warm_target(usable)
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
        read_ranges(path, page_ranges(path, reader.page_size, want.tolist()), budget=budget)
    return chosen


def warm_files(paths, target):
    """Reads local files whole, in order, into the page cache until target
    bytes are read: the bytes read (the scan over a Mixture's local sources
    then decodes from memory)."""
    total = 0
    for p in paths:
        with open(p, "rb", buffering=0) as f:
            while total < target:
                b = f.read(8 * MiB)
                if not b:
                    break
                total += len(b)
        if total >= target:
            break
    return total


def quasi_window(ds, usable, batch_size, workers):
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
