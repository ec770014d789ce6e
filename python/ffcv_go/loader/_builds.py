"""The Go side of a Loader's epochs: builds, and the batch memory they pin.

A ``_Build`` is one Go loader running every output's per-sample program,
plus a handle per ``GoTail``. Epochs whose plans run the same Go programs
share a build; each iterator keeps its build alive, and the Loader's
``_Builds`` closes them all at ``close()``.
"""
import threading
import warnings
import weakref

import numpy as np
import torch

from .. import _lib
from .._dtypes import torch_dtype
from ..pipeline.pipeline import GoTail


class _Build:
    """The Go side of one epoch's plans: a Go loader running every output's
    per-sample program, and a handle per GoTail. Epochs whose plans run the
    same Go programs share a build; iterators keep theirs alive."""

    def __init__(self, loader, plans, signature):
        self.signature = signature
        outputs = [{"field": p.field, "name": p.name, "ops": p.go_ops, "sources": getattr(p, "source_ops", None)}
                   for p in plans if p.go_ops is not None]
        spec = {
            "reader": loader.reader._mapping.handle,  # the file is opened and mapped once
            "batch_size": loader.batch_size, "num_workers": loader.num_workers,
            "batches_ahead": loader.batches_ahead, "drop_last": loader.drop_last, "seed": loader.seed,
            "order": getattr(loader._order_cls, "_go_name", None) or "sequential",
            "rank": loader.rank, "world": loader.world_size, "os_cache": loader.os_cache,
            "max_resident_pages": loader._max_resident_pages,
            "quasi_window": int(loader.order_kwargs.get("window_pages", 0)),
            "skip_errors": loader.on_error == "skip", "max_batch_memory": loader._max_batch_memory,
            "trace": loader._tracer.mode, "outputs": outputs,
        }
        spec.update(loader._bucketing or {})
        self.tracer = loader._tracer
        # All samples: the Go side enumerates them itself.
        indices = None if loader._all_samples else loader.indices
        self.handle = _lib.loader_create(spec, indices, context=loader.fname)
        self.pinned = _Pinned()
        self.tails = []
        self.runs = weakref.WeakSet()  # started epochs (epoch_iterator._Run) not collected yet
        self._finalizer = weakref.finalize(self, _close_build, self.handle, self.tails, self.pinned, self.runs)
        info = _lib.call_json("ffcv_loader_info", self.handle)
        self.length = info["length"]
        self.layout = info["layout"]
        self.go_outputs = info["outputs"] or []  # none when every field is decoded in Python or dropped
        self.plans = []
        self.adopt(plans, fname=loader.fname)

    def adopt(self, plans, fname=None):
        """Takes plans whose Go part equals this build's, making (first time)
        or reusing the Go handle of each GoTail."""
        tails = [s for p in plans for s in p.steps if isinstance(s, GoTail)]
        old = [s for p in self.plans for s in p.steps if isinstance(s, GoTail)]
        for k, tail in enumerate(tails):
            if k < len(old):
                tail.handle, tail.out_shape, tail.out_dtype = old[k].handle, old[k].out_shape, old[k].out_dtype
            else:
                tail.handle, info = _lib.loader_tail(self.handle, tail.spec(), context=fname)
                self.tails.append(tail.handle)
                tail.out_shape = tuple(info["shape"])
                tail.out_dtype = torch_dtype(np.dtype(info["dtype"]))
            tail.in_dtype = torch_dtype(np.dtype(tail.in_state.dtype))
        n = 0
        for p in plans:  # the Go loader's outputs are the plans with a Go program, in order
            p.go_index = None
            if p.go_ops is not None:
                p.go_index, n = n, n + 1
        self.plans = plans
        # Python stages (custom code, modules, GPU copies, Go tails) run on a
        # thread of their own; views and casts right on the training thread.
        self.python_steps = any(not getattr(s, "light", False) for p in plans for s in p.steps)
        # The GPU the outputs are copied to (resolved on the training thread
        # when the plans were made); buffers made on the way are then pinned.
        devices = set()
        for p in plans:
            targets = [s.op._target for s in p.steps if getattr(getattr(s, "op", None), "_target", None) is not None]
            cuda = [d for d in targets if d.type == "cuda"]
            p.pin = bool(cuda)
            devices.update(cuda)
        if len(devices) > 1:
            raise ValueError(f"outputs go to several GPUs ({', '.join(sorted(map(str, devices)))}); "
                             f"one loader serves one device")
        self.cuda_device = devices.pop() if devices else None

    def close(self):
        self._finalizer()


class _Builds:
    """The loader's builds still in use (by the loader or its iterators)."""

    def __init__(self):
        self.closed = False
        self._set = weakref.WeakSet()

    def add(self, build):
        self._set.add(build)

    def close(self):
        self.closed = True
        for build in list(self._set):
            build.close()


class _Pinned:
    """Slot buffers page-locked with cudaHostRegister, so that copies from
    them are asynchronous; all unregistered before the Go loader (and so the
    memory) goes away. Stage threads pin while close() may run: a lock keeps
    the set whole, and nothing is pinned once it is closed."""

    def __init__(self):
        self.ptrs = set()
        self.failed = set()
        self.closed = False
        self._lock = threading.Lock()

    def pin(self, ptr, size, device):
        with self._lock:
            if self.closed or not size or ptr in self.ptrs or ptr in self.failed:
                return
            rt = _lib.cudart()
            with torch.cuda.device(device):
                err = rt.host_register(ptr, size)
            if err == 0:
                self.ptrs.add(ptr)
                return
            rt.get_last_error()  # read back: it would surface in the next kernel launch
            self.failed.add(ptr)
            warnings.warn(f"ffcv_go: page-locking a {size}-byte batch slot failed ({rt.error_string(err)}): "
                          f"copies from it to {device} are synchronous", RuntimeWarning, stacklevel=2)

    def unpin_all(self):
        with self._lock:
            self.closed = True
            ptrs, self.ptrs = self.ptrs, set()
            if not ptrs:
                return
            rt = _lib.cudart()
            failed = []
            for p in ptrs:
                err = rt.host_unregister(p)
                if err != 0:
                    rt.get_last_error()
                    failed.append(rt.error_string(err))
        if failed:
            warnings.warn(f"ffcv_go: unregistering {len(failed)} batch slot(s) failed ({failed[0]})",
                          RuntimeWarning, stacklevel=2)


def _close_build(handle, tails, pinned, runs):
    """Frees a build in the order its memory needs: stop and join the epochs'
    stage threads and wait for their copies, unregister the pinned slots,
    then release everything to Go."""
    try:
        for run in list(runs):
            run.close()
        pinned.unpin_all()
    finally:
        for t in tails:
            _lib.close(t)
        _lib.close(handle)
