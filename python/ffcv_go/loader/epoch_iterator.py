"""One epoch of a Loader (FFCV's ffcv.loader.epoch_iterator).

A batch's way: ``_Source.produce`` waits on Go for the next batch
(``ffcv_iter_next``: the per-sample programs ran in Go workers), wraps its
memory as tensors (DLPack), then runs each output's steps after the Go
program: Python stages, and built-in operations that follow them (back into
Go with ``ffcv_tail_run``). When an output has such steps, a loader-owned
thread (``_Pump``) calls produce ``batches_ahead`` batches ahead, so the
training thread only receives finished batches; otherwise ``__next__`` calls
it directly.

On a GPU (an output with ``ToDevice('cuda')``) the thread copies each batch
and runs the operations after the copy on a side stream of its own, one per
batch in flight, and records an event. ``__next__``, on the training thread,
makes the stream current there wait for that event, so the model reads a
batch only after its copy, whichever stream it trains on. The batch's CPU
sources stay alive until their copy is done.
"""
import queue
import threading
import weakref

import numpy as np
import torch

from .. import _lib
from .._trace import now
from ..pipeline.pipeline import GoTail
from ..transforms._base import BatchContext


# Threads that called next() on an iterator (or run its stages); the loader
# lets them leave before the interpreter exits (loader._close_at_exit).
iterating_threads = weakref.WeakSet()


class EpochIterator:
    """One epoch. Its number is fixed by iter(loader); the work starts on the
    first next(), so an iterator made only to test iterability (as Lightning
    does) costs no decoding."""

    def __init__(self, loader, build, epoch, start, order, per_rank, elastic=None):
        self.loader, self.epoch, self.batch = loader, epoch, start
        self.finished = False
        # An elastic resume's rest of the epoch: its own batch count, and what
        # the runs before took (for state_dict).
        self.elastic = elastic
        self._length = loader._batches_in(epoch) if elastic is None else elastic["length"]
        self._build = build
        self._order = None if order is None else np.ascontiguousarray(order, dtype=np.uint64)
        self._per_rank = per_rank
        self._source = None
        self._run = None
        self._finalizer = None
        # Threads may share an iterator: one next() at a time, so the epoch
        # starts once and batches are handed out once each.
        self._lock = threading.Lock()

    def _start(self):
        handle = _lib.loader_start(self._build.handle, self.epoch, self.batch, self._order, self._per_rank,
                                   context=self.loader.fname)
        self._order = None
        build = self._build
        self._source = _Source(build, handle, self.loader.seed, self.epoch, self.batch, self.loader.fname,
                               self.loader.batches_ahead)
        pump = _Pump(self._source, self.loader.batches_ahead) if build.python_steps else None
        self._run = _Run(handle, pump)
        build.runs.add(self._run)  # the build stops it before it unpins and frees memory
        self._finalizer = weakref.finalize(self, self._run.close)

    def __iter__(self):
        return self

    def __len__(self):
        return self._length - self.batch

    def __next__(self):
        t0 = now()
        iterating_threads.add(threading.current_thread())
        with self._lock:
            if self.finished:
                raise StopIteration
            if self._source is None:
                self._start()
            if self._run.closed:
                raise ValueError(f"{self.loader.fname}: the loader was closed during this epoch")
            if self._run.pump is not None:
                item = self._run.pump.get()
            else:
                item = self._source.produce_or_failure()
            if item is None:
                self.close()
                raise StopIteration
            self.batch += 1  # a failed batch counts too: the epoch goes on after it
            if isinstance(item, _Failure):
                error, item = item.error, None
                try:
                    raise error  # its traceback still shows where user code raised
                finally:
                    # This frame holds self (and the loader) and is on the
                    # error's traceback: a local naming the error would make
                    # a cycle that only the cyclic collector frees.
                    error = None
            ids, outputs, handoff = item
            if handoff is not None:
                self._run.hand_over(handoff, outputs)
            self.loader._last_ids = ids
            self.loader._tracer.waited(t0, self)
            return outputs

    def close(self):
        self.finished = True
        if self._finalizer is not None:
            self._finalizer()
            self.loader._tracer.flush(self._build)


class _Failure:
    def __init__(self, error):
        self.error = error


class _Source:
    """Makes the epoch's batches, one per produce(), in order. It holds no
    reference to its EpochIterator, so an abandoned iterator is collected
    (and its thread stopped) even while a thread runs produce."""

    def __init__(self, build, handle, seed, epoch, batch, fname, ahead):
        self.build, self.handle, self.seed, self.epoch, self.batch = build, handle, seed, epoch, batch
        self.fname = fname
        self.slots = _lib.BatchSlots(len(build.go_outputs) + 1)
        self.device = build.cuda_device
        self.streams = None
        if self.device is not None:
            # One side stream per batch in flight (as many as may be queued
            # ahead, one in the consumer's hands, and the one being made).
            self.streams = [torch.cuda.Stream(self.device) for _ in range(max(1, ahead) + 2)]

    def produce_or_failure(self):
        try:
            return self.produce()
        except BaseException as e:  # noqa: B902 - handed to the consumer as is
            self.batch += 1
            return _Failure(e)

    def produce(self):
        """(sample ids, outputs, GPU handoff or None) of the next batch, or
        None at the end."""
        tracer = self.build.tracer if self.build.tracer.timing else None
        t0 = tracer and now()
        tensors = self.slots.next(self.handle, context=self.fname)
        if tensors is None:
            return None
        ids = tensors.pop()
        if tracer:
            tracer.fetched(t0, self.batch)
        if self.device is None:
            outputs = self._steps(tensors, ids, None, tracer)
            handoff = None
        else:
            stream = self.streams[self.batch % len(self.streams)]
            keep = []
            with torch.cuda.device(self.device), torch.cuda.stream(stream):
                outputs = self._steps(tensors, ids, keep, tracer)
                event = torch.cuda.Event()
                event.record(stream)
            handoff = _Handoff(self.device, event, keep)
        self.batch += 1
        return ids, outputs, handoff

    def _steps(self, tensors, ids, keep, tracer):
        """Runs every output's steps after its Go program on one batch."""
        batch, build = self.batch, self.build
        outputs = []
        for k, plan in enumerate(build.plans):
            x, pin = None, None
            if plan.go_index is not None:
                x = tensors[plan.go_index]
                pin = _pinner(build.pinned, x.data_ptr(), build.go_outputs[plan.go_index]["slot_bytes"],
                              self.device)
            for st in plan.steps:
                t0 = tracer and now()
                if isinstance(st, GoTail):
                    x = _run_tail(st, x, self.epoch, batch, ids, plan.pin)
                else:
                    x = st.run(x, BatchContext(ids, self.seed, self.epoch, batch, (k, st.index), pin, keep,
                                               plan.pin))
                if tracer:
                    tracer.step(st, t0, batch, plan.name, len(ids))
            outputs.append(x if plan.finish is None else plan.finish(x))
        return tuple(outputs)


class _Handoff:
    """A batch's GPU work: the event recorded after it on its side stream,
    and the CPU tensors its copies read, kept until the event has passed."""

    def __init__(self, device, event, keep):
        self.device, self.event, self.keep = device, event, keep


def _run_tail(tail, x, epoch, batch, ids, pin):
    """Built-in operations after a Python stage: Go runs them on the batch,
    drawing what its workers would have drawn at these positions."""
    if not isinstance(x, torch.Tensor):
        x = torch.from_numpy(np.asarray(x))
    want = tuple(tail.in_state.shape)
    if x.device.type != "cpu" or tuple(x.shape[1:]) != want or x.dtype != tail.in_dtype:
        raise ValueError(f"{tail.after}: expected a CPU batch of {want} {tail.in_dtype} samples for the "
                         f"built-in operations after it, got {tuple(x.shape)} {x.dtype} on {x.device}")
    x = x.contiguous()
    # Pinned when the batch goes on to a GPU, so that its copy is asynchronous.
    out = torch.empty((len(x), *tail.out_shape), dtype=tail.out_dtype, pin_memory=pin)
    _lib.tail_run(tail.handle, epoch, batch, ids.contiguous(), x, out)
    return out


class _Pump:
    """The loader-owned thread of one epoch: it waits on Go (ctypes releases
    the GIL meanwhile) and runs the Python stages, up to `ahead` batches
    ahead of the training thread."""

    def __init__(self, source, ahead):
        self.queue = queue.Queue(maxsize=max(1, ahead))
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(source,), name="ffcv_go-stages", daemon=True)
        iterating_threads.add(self.thread)
        self.thread.start()

    def _run(self, source):
        if source.device is not None:
            # CUDA's current device is per thread: this one works for the
            # device the training thread chose (as torch's pin-memory thread).
            torch.cuda.set_device(source.device)
        while not self.stop.is_set():
            item = source.produce_or_failure()
            queued = False
            while not self.stop.is_set():
                try:
                    self.queue.put(item, timeout=0.05)
                    queued = True
                    break
                except queue.Full:
                    pass
            if item is None:
                return
            if not queued:
                _wait_copies(item)  # stopped: dropped here, after its copies
            del item

    def get(self):
        while True:
            try:
                return self.queue.get(timeout=0.1)
            except queue.Empty:
                if not self.thread.is_alive() and self.queue.empty():
                    return _Failure(RuntimeError("the loader's stage thread stopped"))

    def close(self):
        self.stop.set()

    def join(self):
        if threading.current_thread() is not self.thread:
            self.thread.join()
        self.drain()

    def drain(self):
        """Takes what was made ahead; its copies are waited for before the
        sources they read go."""
        while True:
            try:
                item = self.queue.get_nowait()
            except queue.Empty:
                return
            _wait_copies(item)


def _wait_copies(item):
    """Waits for the GPU copies of a batch that is being dropped unseen."""
    if isinstance(item, tuple) and item[2] is not None:
        item[2].event.synchronize()


class _Run:
    """A started epoch: its Go iterator, its stage thread, and the copies in
    flight of the batches handed over. close() stops it, once, in the order
    the memory needs: the thread first (closing the Go iterator wakes it if
    it waits there), then the copies still reading batch memory."""

    def __init__(self, handle, pump):
        self.handle, self.pump = handle, pump
        self.inflight = []  # _Handoffs whose copies may still run
        self._lock = threading.Lock()
        self.closed = False

    def hand_over(self, handoff, outputs):
        """On the training thread: its current stream waits for the batch."""
        current = torch.cuda.current_stream(handoff.device)
        current.wait_event(handoff.event)
        for x in outputs:
            if isinstance(x, torch.Tensor) and x.device == handoff.device:
                x.record_stream(current)  # the allocator must wait for the model's use too
        with self._lock:
            self.inflight = [h for h in self.inflight if not h.event.query()]
            self.inflight.append(handoff)

    def close(self):
        with self._lock:
            if self.closed:
                return
            self.closed = True
        if self.pump is not None:
            self.pump.close()
        try:
            _lib.close(self.handle)
        except Exception:
            pass
        if self.pump is not None:
            self.pump.join()
        with self._lock:
            inflight, self.inflight = self.inflight, []
        for h in inflight:
            h.event.synchronize()


def _pinner(pinned, base, size, device):
    def pin(x):
        if x.data_ptr() == base and device is not None:  # still the loader's memory, not a copy
            pinned.pin(base, size, device)
    return pin
