"""DatasetWriter: turns an indexed dataset into a .beton file.

Python only fetches samples (optionally with a thread or process pool); the
Go core encodes them in parallel and packs pages in index order, so the file
is the same whatever the number of workers, and it appears atomically.
"""
import json
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from . import _lib
from .fields.base import Field

MiB = 1 << 20


def _progress(total, enabled=True):
    try:
        from tqdm.auto import tqdm
    except ImportError:
        tqdm = None
    if tqdm is None or not enabled:
        return None
    return tqdm(total=total, unit="sample", smoothing=0.1)


class DatasetWriter:
    """Writes samples with the given fields (name -> Field, in order) to fname.

    page_size: heap page size (a power of two, 2 MiB to < 4 GiB).
    num_workers: Go encoder threads (< 1: every CPU).
    """

    def __init__(self, fname, fields, page_size=8 * MiB, num_workers=-1, progress=True):
        if not isinstance(fields, dict) or not fields:
            raise ValueError("fields must be a non-empty dict of name -> Field")
        for name, f in fields.items():
            if not isinstance(name, str) or not name.isascii() or len(name.encode()) > 16 or not name:
                raise ValueError(f"field name {name!r} must be 1 to 16 ASCII characters")
            if not isinstance(f, Field):
                raise TypeError(f"field {name!r}: {f!r} is not a Field instance")
        self.fname = os.fspath(fname)
        self.fields = dict(fields)
        self.page_size = int(page_size)
        if self.page_size < 2 * MiB or self.page_size >= 4 << 30 or self.page_size & (self.page_size - 1):
            raise ValueError(f"page_size {page_size} must be a power of two, at least 2 MiB and below 4 GiB")
        self.num_workers = int(num_workers)
        self.progress = progress
        self._specs = []
        for name, f in self.fields.items():
            spec = {"name": name, "type_id": f.TYPE_ID}
            spec.update(f._spec())
            self._specs.append(spec)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def from_indexed_dataset(self, dataset, indices=None, chunksize=100, shuffle_indices=False,
                             pool="auto", pool_workers=None):
        """Writes dataset[i] for i in indices (all by default) as samples 0, 1, ...

        Each item must be a tuple with one value per field. Items are fetched
        in parallel (pool_workers of them, default: every CPU) and written in
        index order, so the file is the same for any pool and worker count:

        - pool='auto' (default): items that take under 0.1 ms each are
          fetched on this thread; slower ones in forked processes (FFCV's
          choice, right for Python-heavy datasets), or threads where fork is
          unavailable;
        - pool='process' / 'thread' / None: processes, threads (best when
          items release the GIL: file reads, decoders) or this thread.

        A torchvision ImageFolder (any DatasetFolder with its default loader
        and no transforms) written to (RGBImageField, IntField) skips Python
        entirely: its file paths go to the Go encoder, which reads and
        decodes the images in its own threads (DCT-scaled when
        max_resolution is at least 2x smaller than a JPEG).
        """
        if indices is None:
            indices = np.arange(len(dataset))
        indices = np.asarray(indices, dtype=np.int64).reshape(-1)
        if shuffle_indices:
            indices = indices.copy()
            np.random.shuffle(indices)
        items = _path_items(dataset, indices, self.fields)
        if items is None:
            workers = int(pool_workers) if pool_workers else _cpu_count()
            items = _fetch(dataset, indices, chunksize, pool, workers)
        try:
            self._write(len(indices), items, indices)
        finally:
            items.close()  # stops the pool now, also on errors

    def from_image_folder(self, root):
        """Writes an ImageFolder tree (class folders of images; labels by sorted
        folder name) with no Python per image: files are read, decoded,
        resized and encoded by Go threads. The writer's fields must be
        (image: RGBImageField, label: IntField); returns the class names."""
        kinds = [type(f).__name__ for f in self.fields.values()]
        if kinds != ["RGBImageField", "IntField"] or list(self.fields) != ["image", "label"]:
            raise ValueError("from_image_folder writes fields {'image': RGBImageField(...), 'label': IntField()}; "
                             f"this writer has {dict(zip(self.fields, kinds))}")
        return _write_image_folder(self, root, self.fields["image"], self.progress)["classes"]

    def from_webdataset(self, *args, **kwargs):
        raise NotImplementedError("from_webdataset is not supported by ffcv_go")

    def _write(self, n, items, source_ids):
        spec = {"num_samples": int(n), "page_size": self.page_size, "num_workers": self.num_workers,
                "fields": self._specs}
        handle = _lib.call("ffcv_writer_create", self.fname.encode(), json.dumps(spec).encode(),
                           context=self.fname)
        bar = _progress(n, self.progress)
        nf = len(self._specs)
        fields = list(self.fields.items())
        done = False
        try:
            pos = 0
            chunk, keep = [], []
            for item in items:
                if not isinstance(item, (tuple, list)):
                    item = (item,)
                if len(item) != nf:
                    raise ValueError(f"dataset item {source_ids[pos]} has {len(item)} values; "
                                     f"the writer has {nf} fields ({', '.join(self.fields)})")
                vals = (_lib.Value * nf)()
                for k, ((name, f), value) in enumerate(zip(fields, item)):
                    try:
                        f._value(value, vals[k], keep)
                    except (TypeError, ValueError, OverflowError) as e:
                        raise type(e)(f"dataset item {source_ids[pos]}, field {name!r}: {e}") from None
                chunk.append(vals)
                pos += 1
                if len(chunk) >= 64:
                    self._put(handle, pos - len(chunk), chunk)
                    chunk, keep = [], []
                    if bar is not None:
                        bar.update(64)
            if pos != n:
                raise ValueError(f"dataset gave {pos} items, expected {n}")
            if chunk:
                self._put(handle, pos - len(chunk), chunk)
                if bar is not None:
                    bar.update(len(chunk))
            done = True
            _lib.call("ffcv_writer_finish", handle, context=self.fname)
        except BaseException:
            if not done:
                _lib.call("ffcv_writer_abort", handle)
            raise
        finally:
            if bar is not None:
                bar.close()

    def _put(self, handle, first, chunk):
        nf = len(self._specs)
        flat = (_lib.Value * (nf * len(chunk)))()
        for k, vals in enumerate(chunk):
            for j in range(nf):
                flat[k * nf + j] = vals[j]
        _lib.call("ffcv_writer_put", handle, first, len(chunk), flat, context=self.fname)


def _cpu_count():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def _path_items(dataset, indices, fields):
    """(path, label) items for a torchvision DatasetFolder whose items are
    exactly its files loaded by the default loader, written to fields
    (RGBImageField, IntField); None for anything else."""
    kinds = [type(f).__name__ for f in fields.values()]
    samples = getattr(dataset, "samples", None)
    if kinds != ["RGBImageField", "IntField"] or not isinstance(samples, list) or len(samples) != len(dataset):
        return None
    try:
        from torchvision.datasets import folder
    except ImportError:
        return None
    if (not isinstance(dataset, folder.DatasetFolder)
            or type(dataset).__getitem__ is not folder.DatasetFolder.__getitem__
            or getattr(dataset, "loader", None) not in (folder.default_loader, folder.pil_loader)
            or getattr(dataset, "transform", None) is not None
            or getattr(dataset, "target_transform", None) is not None):
        return None
    if folder.default_loader is getattr(dataset, "loader", None):
        from torchvision import get_image_backend
        if get_image_backend() != "PIL":
            return None
    return ((_ImagePath(samples[i][0]), samples[i][1]) for i in indices)


class _ImagePath(os.PathLike):
    """An image file for the Go encoder to read."""
    __slots__ = ("path",)

    def __init__(self, path):
        self.path = os.fspath(path)

    def __fspath__(self):
        return self.path


def _get_chunk(dataset, idx):
    return [dataset[i] for i in idx]


_DATASET = None  # the dataset, in a fetch process (inherited through fork)


def _init_process(dataset):
    global _DATASET
    _DATASET = dataset
    # The Go runtime's SIGTERM handler is inherited but its threads are not:
    # run in a forked child it can block forever. Pool.terminate() sends
    # SIGTERM, so let the kernel handle it.
    import signal
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _get_chunk_in_process(idx):
    return _get_chunk(_DATASET, idx)


def _fetch(dataset, indices, chunksize, pool, workers):
    """Yields dataset[i] for i in indices, in order (see from_indexed_dataset
    for pool). At most 4 chunks per worker are in flight, so memory stays
    bounded when the encoder is the slower side."""
    if pool not in ("auto", "process", "thread", None):
        raise ValueError(f"pool {pool!r} must be 'auto', 'process', 'thread' or None")
    indices = [int(i) for i in indices]
    start = 0
    if pool == "auto":
        # Time a few items here: cheap ones are not worth a pool.
        import time
        t0 = time.perf_counter()
        while start < len(indices) and start < 32 and time.perf_counter() - t0 < 0.2:
            yield dataset[indices[start]]
            start += 1
        per_item = (time.perf_counter() - t0) / max(start, 1)
        if start == len(indices) or per_item < 1e-4 or workers < 2:
            pool = None
        else:
            import multiprocessing
            pool = "process" if "fork" in multiprocessing.get_all_start_methods() else "thread"
    if pool is None:
        for i in indices[start:]:
            yield dataset[i]
        return
    chunksize = max(1, int(chunksize))
    if pool == "thread":
        chunksize = min(chunksize, 16)  # threads share the work finer
    chunks = [indices[k:k + chunksize] for k in range(start, len(indices), chunksize)]
    depth = 4 * max(1, workers)
    from collections import deque
    pending = deque()
    if pool == "process":
        # Forked here, at most 32 items in: before the first chunk of 64 reaches
        # the Go writer, so no Go thread is inside C code (libjpeg) at fork time.
        import multiprocessing
        ctx = multiprocessing.get_context("fork")
        ex = ctx.Pool(workers, initializer=_init_process, initargs=(dataset,))
        submit = lambda idx: ex.apply_async(_get_chunk_in_process, (idx,))  # noqa: E731
        result = lambda r: r.get()  # noqa: E731
    else:
        ex = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ffcv_go-fetch")
        submit = lambda idx: ex.submit(_get_chunk, dataset, idx)  # noqa: E731
        result = lambda r: r.result()  # noqa: E731
    finished = False
    try:
        for idx in chunks:
            pending.append(submit(idx))
            if len(pending) >= depth:
                yield from result(pending.popleft())
        while pending:
            yield from result(pending.popleft())
        finished = True
    finally:
        if pool == "process":
            if finished:
                ex.close()  # workers exit on their own
            else:
                ex.terminate()
            ex.join()
        else:
            for f in pending:
                f.cancel()
            ex.shutdown(wait=True)


def _write_image_folder(writer, root, image_field, progress):
    """Runs the Go ImageFolder writer in a thread, polling its progress."""
    import ctypes
    import threading
    root = os.fspath(root)
    listing = _lib.call_json("ffcv_scan_image_folder", root.encode(), context=root)
    n = len(listing["files"])
    spec = {"page_size": writer.page_size, "num_workers": writer.num_workers, "image": image_field._spec()}
    counter = ctypes.c_int64(0)
    result = {}

    def run():
        try:
            _lib.call("ffcv_write_image_folder", root.encode(), writer.fname.encode(), json.dumps(spec).encode(),
                      ctypes.byref(counter), context=root)
        except BaseException as e:  # re-raised in the caller's thread
            result["error"] = e

    t = threading.Thread(target=run, name="ffcv_go-image-folder", daemon=True)
    t.start()
    bar = _progress(n, progress)
    try:
        while t.is_alive():
            t.join(0.1)
            if bar is not None:
                bar.update(counter.value - bar.n)
    finally:
        if bar is not None:
            bar.close()
    if "error" in result:
        raise result["error"]
    return listing
