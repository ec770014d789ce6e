"""Loader: batches of torch tensors from a .beton file (FFCV's ffcv.loader.Loader)."""
import ctypes
import enum
import json
import os
import threading
import warnings
import weakref

import numpy as np
import torch

from .. import _lib
from ..fields.base import Field
from ..pipeline import PipelineSpec
from ..pipeline.operation import Operation
from ..pipeline.state import State, initial_state
from ..reader import Reader
from ..traversal_order import TraversalOrder, Sequential, Random, QuasiRandom
from ..transforms._base import BatchContext, Transform, numpy_dtype
from ..transforms.image import NormalizeImage
from ..transforms.ops import ToTensor, ToTorchImage, ToDevice, ModuleWrapper


class OrderOption(enum.Enum):
    SEQUENTIAL = Sequential
    RANDOM = Random
    QUASI_RANDOM = QuasiRandom


ORDER_TYPE = OrderOption
ORDER_MAP = {o: o.value for o in OrderOption}


def _cpu_count():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def _default_workers(distributed):
    """Worker threads when num_workers is left at its default (< 1 or None).

    One process: every core in the affinity mask (FFCV's rule). Several loader
    processes on one node (distributed=True, or LOCAL_WORLD_SIZE set as torchrun
    and Composer's launcher do): each takes its share, cores // local world size,
    at least 1, so that 8 ranks on a node do not run 8 x cores threads. The local
    world size is LOCAL_WORLD_SIZE, else (distributed, single node assumed) the
    world size.
    """
    cores = _cpu_count()
    local = os.environ.get("LOCAL_WORLD_SIZE")
    if local is not None and local.strip():
        try:
            procs = int(local)
        except ValueError:
            procs = 0
        if procs < 1:
            raise ValueError(f"LOCAL_WORLD_SIZE={local!r} is not a positive integer")
    elif distributed:
        procs = _dist_info(True)[1]
    else:
        return cores
    return max(1, cores // procs)


def _dist_info(distributed):
    if not distributed:
        return 0, 1
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        return int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    raise RuntimeError("distributed=True needs torch.distributed initialised or RANK/WORLD_SIZE set")


class _Stage:
    """A Python-side stage of one output: a built-in transform, a custom op,
    or (decoder=True) a custom decoder reading the samples itself."""

    def __init__(self, op, state, index, decoder=None):
        self.op, self.index = op, index
        self.decoder = decoder  # (metadata column, storage state) for decoders
        if isinstance(op, Transform):
            self.kind = "builtin"
            self.state, _ = op.declare_state_and_memory(state)
            self.query = None
        else:
            self.kind = "custom"
            self.state, self.query = op.declare_state_and_memory(state)
            from ..pipeline.compiler import Compiler
            code = op.generate_code()
            self.with_indices = bool(getattr(code, "with_indices", False))
            self.code = Compiler.compile(code)
        self.jit_in = state.jit_mode

    def run(self, x, ctx):
        if self.kind == "builtin":
            return self.op._apply(x, ctx)
        if self.decoder is not None:
            indices = ctx.indices.numpy()
            out = self.code(indices, self._alloc(len(indices)), *self.decoder)
            return torch.from_numpy(np.asarray(out))
        inp = x.numpy() if self.jit_in and isinstance(x, torch.Tensor) else x
        dst = self._alloc(len(x))
        args = (inp, dst, ctx.indices.numpy()) if self.with_indices else (inp, dst)
        out = self.code(*args)
        if self.state.jit_mode or isinstance(out, np.ndarray):
            out = torch.from_numpy(np.asarray(out))
        return out

    def _alloc(self, n):
        q = self.query
        if q is None:
            return None
        if isinstance(q, (list, tuple)):
            return [self._one(x, n) for x in q]
        return self._one(q, n)

    @staticmethod
    def _one(q, n):
        if isinstance(q.dtype, torch.dtype) or (q.device is not None and torch.device(q.device).type != "cpu"):
            from ..transforms._base import torch_dtype
            return torch.empty((n, *q.shape), dtype=torch_dtype(q.dtype), device=q.device or "cpu")
        return np.empty((n, *q.shape), dtype=np.dtype(q.dtype))


class Loader:
    """Iterates over a .beton file in batches of torch tensors.

    Same arguments and semantics as FFCV 1.0's Loader; every ``iter()`` starts
    the next epoch. Batches stay valid as long as you hold them. Extra
    arguments: on_error ('raise' or 'skip' bad samples), max_resident_pages
    (process cache bound), max_batch_memory (bytes of batches you may hold).
    num_workers < 1 (the default): the process's cores, split between the
    loader processes of a node when distributed (see ``_default_workers``).
    """

    def __init__(self, fname, batch_size, num_workers=-1, os_cache=True, order=OrderOption.SEQUENTIAL,
                 distributed=False, seed=None, indices=None, pipelines={}, custom_fields={},
                 drop_last=True, batches_ahead=3, recompile=False, order_kwargs={},
                 on_error="raise", max_resident_pages=0, max_batch_memory=0):
        self.fname = os.fspath(fname)
        if not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
            raise ValueError(f"batch_size {batch_size!r} must be a positive integer")
        if batches_ahead < 0:
            raise ValueError(f"batches_ahead {batches_ahead} must be >= 0")
        if on_error not in ("raise", "skip"):
            raise ValueError(f"on_error {on_error!r} must be 'raise' or 'skip'")
        self.batch_size = int(batch_size)
        self.num_workers = _default_workers(distributed) if num_workers is None or num_workers < 1 else int(num_workers)
        self.os_cache = bool(os_cache)
        self.distributed = bool(distributed)
        self.drop_last = bool(drop_last)
        self.batches_ahead = int(batches_ahead)
        self.recompile = recompile
        self.order_kwargs = dict(order_kwargs)
        self.custom_fields = dict(custom_fields)
        self.on_error = on_error
        self._max_resident_pages = int(max_resident_pages)
        self._max_batch_memory = int(max_batch_memory)
        self._pipelines_arg = pipelines
        self._order_arg = order
        self.rank, self.world_size = _dist_info(self.distributed)

        self.reader = Reader(self.fname, custom_handlers=self.custom_fields)
        n = self.reader.num_samples
        self._all_samples = indices is None
        self._indices = None
        if indices is not None:
            idx = np.asarray(indices).reshape(-1)
            if idx.size and (not np.issubdtype(idx.dtype, np.integer) or idx.min() < 0 or idx.max() >= n):
                raise ValueError(f"indices must be sample ids in [0, {n})")
            self._indices = idx.astype(np.uint64)

        order_cls = order.value if isinstance(order, OrderOption) else order
        if not (isinstance(order_cls, type) and issubclass(order_cls, TraversalOrder)):
            raise ValueError(f"order {order!r} must be an OrderOption or a TraversalOrder subclass")
        if seed is None:
            if self.distributed and order_cls is Random:
                warnings.warn("distributed RANDOM order without a seed: using seed 0 so ranks agree")
                seed = 0
            else:
                seed = int(np.random.randint(0, 2**31 - 1))
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ValueError(f"seed {seed!r} must be a non-negative integer (as numpy's default_rng needs)")
        self.seed = int(seed)
        self._order_cls = order_cls
        self.traversal_order = order_cls(self)

        self._outputs, self._field_names = self._plan_outputs(pipelines)
        self._create()
        self.next_epoch = 0
        self._resume_batch = 0
        self._current = None

    @property
    def indices(self):
        """The samples this loader draws from (built on first use for huge files)."""
        if self._indices is None:
            self._indices = np.arange(self.reader.num_samples, dtype=np.uint64)
        return self._indices

    # ---- building -------------------------------------------------------------

    def _plan_outputs(self, pipelines):
        """[(field index, name, [ops])] in file order, then PipelineSpec extras."""
        names = self.reader.field_names
        outputs = []
        for i, name in enumerate(names):
            if name in pipelines and pipelines[name] is None:
                continue
            ops = pipelines.get(name)
            if isinstance(ops, PipelineSpec):
                continue
            outputs.append((i, name, self._with_decoder(name, list(ops) if ops is not None else None)))
        for out_name, spec in pipelines.items():
            if isinstance(spec, PipelineSpec):
                if spec.source not in names:
                    raise ValueError(f"PipelineSpec {out_name!r}: no field {spec.source!r} in {self.fname}")
                ops = ([spec.decoder] if spec.decoder is not None else []) + list(spec.transforms)
                outputs.append((names.index(spec.source), out_name, self._with_decoder(spec.source, ops)))
            elif out_name not in names:
                raise ValueError(f"pipelines names {out_name!r}, which is not a field of {self.fname} "
                                 f"(fields: {', '.join(names)})")
        return outputs, names

    def _with_decoder(self, name, ops):
        field = self.reader.handlers[name]
        if ops is None:
            ops = [ToTensor()]
        if ops and isinstance(ops[0], Operation) and _is_decoder(ops[0], field):
            return ops
        return [field.get_decoder_class()()] + ops

    def _create(self):
        spec_outputs = []
        self._stages = []
        metadata = self.reader.metadata
        for k, (fidx, name, ops) in enumerate(self._outputs):
            field = self.reader.handlers[self.reader.field_names[fidx]]
            go_ops, python_ops = self._split(ops, field, metadata[f"f{fidx}"])
            if go_ops:
                spec_outputs.append({"field": fidx, "ops": go_ops})
            self._stages.append((fidx, name, len(spec_outputs) - 1 if go_ops else None, python_ops))
        spec = {
            "path": self.fname, "batch_size": self.batch_size, "num_workers": self.num_workers,
            "batches_ahead": self.batches_ahead, "drop_last": self.drop_last, "seed": self.seed,
            "order": self._order_cls._go_name if hasattr(self._order_cls, "_go_name") and self._order_cls._go_name
            else "sequential",
            "rank": self.rank, "world": self.world_size, "os_cache": self.os_cache,
            "max_resident_pages": self._max_resident_pages,
            "quasi_window": int(self.order_kwargs.get("window_pages", 0)),
            "skip_errors": self.on_error == "skip", "max_batch_memory": self._max_batch_memory,
            "custom": self._custom_layouts(), "outputs": spec_outputs,
        }
        if self._all_samples:
            ptr, n = None, 0  # the Go side enumerates them itself
        else:
            idx = np.ascontiguousarray(self.indices, dtype=np.uint64)
            ptr, n = idx.ctypes.data_as(ctypes.POINTER(ctypes.c_uint64)), idx.size
        handle = _lib.call("ffcv_loader_create", json.dumps(spec).encode(), ptr, n, context=self.fname)
        self._handle = handle
        self._pinned = _Pinned()
        self._finalizer = weakref.finalize(self, _close_loader, handle, self._pinned)
        info = _lib.call_json("ffcv_loader_info", handle)
        self._length = info["length"]
        self._go_outputs = info["outputs"] or []  # none when every field is decoded in Python or dropped
        # Python-side stages, starting from the Go part's output, or from a
        # custom decoder where Go has no part.
        self._py = []
        for fidx, name, go, ops in self._stages:
            stages = []
            if go is None:
                st = _Stage(ops[0], initial_state(), 0,
                            decoder=(metadata[f"f{fidx}"], self.reader._buffer))
                stages.append(st)
                state, ops = st.state, ops[1:]
            else:
                o = info["outputs"][go]
                state = State(jit_mode=True, device=torch.device("cpu"), shape=tuple(o["shape"]),
                              dtype=np.dtype(o["dtype"]))
            for j, op in enumerate(ops, start=len(stages)):
                if isinstance(op, torch.nn.Module):
                    op = ModuleWrapper(op)
                if isinstance(op, Operation) and not isinstance(op, Transform):
                    op.accept_field(self.reader.handlers[self.reader.field_names[fidx]])
                st = _Stage(op, state, j)
                stages.append(st)
                state = st.state
            self._py.append((go, stages))

    def _split(self, ops, field, metadata):
        """Splits a pipeline into the ops fused in Go (their specs) and the ops
        run in Python afterwards. No-op markers (ToTensor, and ToTorchImage
        before a Go-run NormalizeImage) are stepped over so more of the
        pipeline runs in Go; they are applied in Python after it, in order."""
        state = initial_state()
        go_ops, deferred = [], []
        i = 0
        while i < len(ops):
            op = ops[i]
            if isinstance(op, torch.nn.Module) or not isinstance(op, Operation):
                break
            op.accept_field(field)
            # Only custom code reads memory itself; building the compiled
            # reader (numba) for built-ins would only slow Loader() down.
            op.accept_globals(metadata, None if _builtin(op) else self._memory_read)
            nxt = ops[i + 1] if i + 1 < len(ops) else None
            if go_ops and (isinstance(op, ToTensor) or _cpu_device(op) or (
                    isinstance(op, ToTorchImage) and isinstance(nxt, NormalizeImage) and nxt._go_spec(state))):
                deferred.append(op)
                i += 1
                continue
            go = op._go_spec(state)
            if go is None:
                break
            state, _ = op.declare_state_and_memory(state)
            go_ops.append(go)
            i += 1
            # Batch operations end the Go part unless more batch operations follow.
            if getattr(op, "_batch", False) and not getattr(nxt, "_batch", False):
                break
        return go_ops, deferred + list(ops[i:])

    def _custom_layouts(self):
        out = {}
        for name, h in self.reader.handlers.items():
            if type(h).TYPE_ID == 255 or name in self.custom_fields:
                mt = np.dtype(h.metadata_type)
                out[name] = [mt.itemsize, mt.alignment]
        return out or None

    @property
    def _memory_read(self):
        """FFCV's memory_read(address, storage_state) for custom operations:
        the allocation starting at address (storage_state: the file's map)."""
        if getattr(self, "_reader_fn", None) is None:
            from ..memory_managers import OSCacheManager
            self._reader_fn = OSCacheManager(self.reader).compile_reader()
        return self._reader_fn

    def _go_order(self, epoch):
        n = _lib.call("ffcv_loader_order", self._handle, epoch, None, 0)
        out = np.empty(n, dtype=np.uint64)
        _lib.call("ffcv_loader_order", self._handle, epoch, out.ctypes.data_as(ctypes.POINTER(ctypes.c_uint64)), n)
        return out

    # ---- iterating --------------------------------------------------------------

    def __len__(self):
        return self._length

    def __iter__(self):
        epoch, start = self.next_epoch, self._resume_batch
        self.next_epoch += 1
        self._resume_batch = 0
        order, per_rank = None, 1
        if not hasattr(self._order_cls, "_go_name"):
            order = np.asarray(self.traversal_order.sample_order(epoch), dtype=np.uint64)
        elif self._order_cls is Random and self.distributed:
            order, per_rank = self.traversal_order._torch_order(epoch), 0
        elif self._order_cls is Random and self.seed + epoch >= 2**64:
            # Beyond the Go side's uint64 seeds: numpy takes any integer.
            order = np.random.default_rng(self.seed + epoch).permutation(self.indices)
        it = _EpochIterator(self, epoch, start, order, per_rank)
        self._current = weakref.ref(it)
        return it

    def state_dict(self):
        """Where to resume: the epoch and the next batch within it."""
        it = self._current() if self._current is not None else None
        if it is not None and not it.finished:
            epoch, batch = it.epoch, it.batch
        else:
            epoch, batch = self.next_epoch, self._resume_batch
        if batch >= len(self):  # after an epoch's last batch: the next epoch, not an empty one
            epoch, batch = epoch + 1, 0
        return {"epoch": epoch, "batch": batch, "seed": self.seed}

    def load_state_dict(self, state):
        """The next iter() resumes exactly at the saved batch."""
        if int(state.get("seed", self.seed)) != self.seed:
            raise ValueError(f"state was saved with seed {state['seed']}, this loader has seed {self.seed}")
        self.next_epoch = int(state["epoch"])
        self._resume_batch = int(state["batch"])
        if self._resume_batch >= len(self):
            self.next_epoch, self._resume_batch = self.next_epoch + 1, 0
        self._current = None

    @property
    def stats(self):
        """Counters: samples_skipped, peak_resident_pages, pages_read, slots, slots_grown."""
        return _lib.call_json("ffcv_loader_stats", self._handle)

    def filter(self, field_name, condition):
        """A new Loader over the samples whose decoded field_name satisfies condition."""
        if field_name not in self.reader.field_names:
            raise ValueError(f"no field {field_name!r} in {self.fname}")
        pipes = {n: None for n in self.reader.field_names if n != field_name}
        if self._pipelines_arg.get(field_name) is not None:
            pipes[field_name] = self._pipelines_arg[field_name]  # else the default pipeline
        scan = Loader(self.fname, batch_size=max(1, min(1024, self.batch_size)), num_workers=self.num_workers,
                      order=OrderOption.SEQUENTIAL, indices=self.indices, pipelines=pipes,
                      custom_fields=self.custom_fields, drop_last=False)
        keep = []
        for batch in scan:
            values, ids = batch[0], scan._last_ids
            for v, i in zip(values, ids.tolist()):
                if condition(v):
                    keep.append(i)
        return Loader(self.fname, self.batch_size, num_workers=self.num_workers, os_cache=self.os_cache,
                      order=self._order_arg, distributed=self.distributed, seed=self.seed,
                      indices=np.array(keep, dtype=np.int64), pipelines=self._pipelines_arg,
                      custom_fields=self.custom_fields, drop_last=self.drop_last,
                      batches_ahead=self.batches_ahead, order_kwargs=self.order_kwargs, on_error=self.on_error)

    def close(self):
        """Stops every iterator and frees the loader; batches you hold stay valid."""
        self._finalizer()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _cpu_device(op):
    """ToDevice('cpu') changes nothing for CPU batches: a no-op marker."""
    return isinstance(op, ToDevice) and op.device.type == "cpu"


def _builtin(op):
    from ..fields import decoders, rgb_image
    return isinstance(op, (Transform, decoders._Decoder, rgb_image._ImageDecoder))


def _is_decoder(op, field):
    from ..fields import decoders
    from ..fields import rgb_image
    return isinstance(op, (decoders._Decoder, rgb_image._ImageDecoder)) or isinstance(op, field.get_decoder_class())


class _EpochIterator:
    """One epoch. Its number is fixed by iter(loader); the Go side starts on
    the first next(), so an iterator made only to test iterability (as
    Lightning does) costs no decoding."""

    def __init__(self, loader, epoch, start, order, per_rank):
        self.loader, self.epoch, self.batch = loader, epoch, start
        self.finished = False
        self._order = None if order is None else np.ascontiguousarray(order, dtype=np.uint64)
        self._per_rank = per_rank
        self._handle = None
        self._finalizer = None
        self._nout = len(loader._go_outputs) + 1
        self._buf = (_lib.DLManagedTensorPtr * self._nout)()
        # Threads may share an iterator: one next() at a time, so the epoch
        # starts once and no two calls share self._buf (a tensor wrapped twice
        # would be freed twice).
        self._lock = threading.Lock()

    def _start(self):
        order = self._order
        n = 0 if order is None else len(order)
        ptr = None if order is None else order.ctypes.data_as(ctypes.POINTER(ctypes.c_uint64))
        self._handle = _lib.call("ffcv_loader_start", self.loader._handle, self.epoch, self.batch, ptr, n,
                                 self._per_rank, context=self.loader.fname)
        self._finalizer = weakref.finalize(self, _close_quietly, self._handle)
        self._order = None

    def __iter__(self):
        return self

    def __len__(self):
        return len(self.loader) - self.batch

    def __next__(self):
        with self._lock:
            return self._next()

    def _next(self):
        if self.finished:
            raise StopIteration
        if self._handle is None:
            self._start()
        try:
            n = _lib.call("ffcv_iter_next", self._handle, self._buf, self._nout, context=self.loader.fname)
        except BaseException:
            self.batch += 1
            raise
        if n == 0:
            self.close()
            raise StopIteration
        tensors = [_lib.tensor_from_dlpack(self._buf[k]) for k in range(n)]
        ids = tensors.pop()
        self.loader._last_ids = ids
        outputs = []
        loader = self.loader
        for k, (go, stages) in enumerate(loader._py):
            x, pin = None, None
            if go is not None:
                x = tensors[go]
                pin = _pinner(loader._pinned, x.data_ptr(), loader._go_outputs[go]["slot_bytes"])
            for st in stages:
                x = st.run(x, BatchContext(ids, loader.seed, self.epoch, self.batch, (k, st.index), pin))
            outputs.append(x)
        self.batch += 1
        return tuple(outputs)

    def close(self):
        self.finished = True
        if self._finalizer is not None:
            self._finalizer()


class _Pinned:
    """Slot buffers page-locked with cudaHostRegister, unregistered before the
    loader (and so the memory) goes away."""

    def __init__(self):
        self.ptrs = set()

    def pin(self, ptr, size):
        if ptr in self.ptrs or not size:
            return
        err = torch.cuda.cudart().cudaHostRegister(ptr, size, 0)
        if int(err) == 0:
            self.ptrs.add(ptr)

    def unpin_all(self):
        if self.ptrs:
            rt = torch.cuda.cudart()
            for p in self.ptrs:
                rt.cudaHostUnregister(p)
            self.ptrs.clear()


def _pinner(pinned, base, size):
    def pin(x):
        if x.data_ptr() == base:  # still the loader's memory, not a copy
            pinned.pin(base, size)
    return pin


def _close_loader(handle, pinned):
    try:
        pinned.unpin_all()
    finally:
        _lib.close(handle)


def _close_quietly(handle):
    try:
        _lib.close(handle)
    except Exception:
        pass
