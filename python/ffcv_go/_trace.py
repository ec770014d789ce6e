"""What a Loader measures about itself: the training loop's waits for batches
(always), and with ``Loader(trace=...)`` where the workers' time goes.

``trace="run.json"`` writes a Chrome/Perfetto trace (JSON trace-event format,
open it in https://ui.perfetto.dev or chrome://tracing): a track per Go worker
with a span per sample stage (read, entropy decode, IDCT and resize, ops), the
process cache's page reads, batch operations, and on the Python threads the
training loop's waits for batches, the loader's waits for Go, and each Python
stage (custom operations, modules, ``ToDevice`` copies). A writer thread of the
tracer's own writes the spans every 256 batches, at the end of every epoch and when
the loader closes, so the training loop only hands them over; each of its writes is
a span too, on its own track. The file is valid JSON once the loader is closed (a
file cut short still loads in both viewers).
``trace=True`` times the stages, and each operation, for ``loader.stats`` without
writing a file.
For a loader of a Mixture, every sample span names its source ("source" in
its args) and page reads go on one track per source.

Timestamps are CLOCK_MONOTONIC on both sides (Go records its spans on it and
Python's ``time.monotonic_ns`` reads it), so the tracks line up.
"""
import json
import os
import queue
import threading
import time
import warnings
import weakref

import numpy as np

from . import _lib

now = time.monotonic_ns

# Batches between writes of the spans recorded so far, within an epoch.
FLUSH_EVERY = 256

# Trace thread ids of the Go side's tracks: far above Linux thread ids.
_GO_TID = 1 << 30
_TRACK_NAMES = {_lib.TRACK_PAGES: "page reads (process cache)", _lib.TRACK_BATCH: "batch operations"}


class Tracer:
    """One loader's: its waits, and the trace it writes (mode "events"),
    or only the stage totals (mode "stages")."""

    def __init__(self, target):
        if target is None or target is False:
            self.mode, self.path = "off", None
        elif target is True:
            self.mode, self.path = "stages", None
        elif isinstance(target, (str, os.PathLike)):
            self.mode, self.path = "events", os.fspath(target)
            if not self.path:
                raise ValueError("trace: an empty path")
            parent = os.path.dirname(os.path.abspath(self.path))
            if not os.path.isdir(parent):
                raise FileNotFoundError(f"trace: no directory {parent} for {self.path}")
        else:
            raise ValueError(f"trace={target!r}: a file path for a Chrome/Perfetto trace, True for stage "
                             "times in loader.stats only, or None")
        self.spans = self.mode == "events"
        self.timing = self.mode != "off"  # Python stages are timed for stats
        self.wait_ns = 0
        self.waits = 0
        self._events = []  # Python spans not written yet
        self._lock = threading.Lock()
        self._ops = {}  # (output, Python stage) -> [ns, samples]
        self._file = None  # written by the writer thread, then by close()
        self._named = set()  # tids whose thread_name is written
        self._pid = os.getpid()
        self.sources = None  # a Mixture's sources (Reader.sources), set by the Loader
        self._writer = None  # _Writer, started by the first flush
        self._write_error = None

    # ---- recording (cheap: called per batch) ----------------------------------

    def waited(self, t0, it):
        """The training loop's next() on iterator it, which started at t0,
        returned a batch."""
        t1 = now()
        self.wait_ns += t1 - t0
        self.waits += 1
        if self.spans:
            self._span("wait for batch", "training loop", t0, t1, {"epoch": it.epoch, "batch": it.batch - 1})
            if self.waits % FLUSH_EVERY == 0:  # bounds what Go and Python hold within a long epoch
                self.flush(it._build)

    def step(self, st, t0, batch, output, samples):
        """A Python stage (or Go tail) of output's batch of `samples` ran
        from t0 until now."""
        t1 = now()
        op = getattr(st, "op", None)
        name = type(op).__name__ if op is not None else "built-in operations (Go tail)"
        cat = "python stage"
        if name == "ToDevice" and getattr(getattr(op, "device", None), "type", "cpu") != "cpu":
            name, cat = f"ToDevice {op.device} (copy launch)", "gpu copy"
        with self._lock:
            tot = self._ops.setdefault((output, name), [0, 0])
            tot[0] += t1 - t0
            tot[1] += samples
        if self.spans:
            self._span(name, cat, t0, t1, {"batch": batch})

    def fetched(self, t0, batch):
        """The loader's thread waited for Go's batch from t0 until now."""
        if self.spans:
            self._span("wait for Go", "loader", t0, now(), {"batch": batch})

    def _span(self, name, cat, t0, t1, args):
        th = threading.current_thread()
        with self._lock:
            self._events.append((name, cat, threading.get_native_id(), th.name, t0, t1 - t0, args))

    # ---- stats and output -------------------------------------------------------

    def stats(self, go, plans=()):
        """loader.stats: Go's counters, its stage totals in seconds, each
        operation's time (named by plans, the loader's OutputPlans), and the
        waits."""
        stages = go.pop("stages", None)
        if stages:
            go["stages"] = {k: {"seconds": v["ns"] / 1e9, "count": v["count"]} for k, v in stages.items()}
        go_ops = go.pop("ops", None)
        if self.timing:
            go["ops"] = self._op_stats(go_ops or [], plans)
        go["wait_seconds"] = self.wait_ns / 1e9
        go["waits"] = self.waits
        if self.sources is not None:
            for entry in [go] + go.get("epochs", []):
                for src, s in zip(entry.get("sources") or [], self.sources):
                    src["name"] = s["name"]
        return go

    def _op_stats(self, go_ops, plans):
        """Each operation's time: the Go programs' per-sample operations
        (named as in the pipeline, with Go's name as go_op), then the Python
        stages; count is the samples each ran on."""
        by_go = {p.go_index: p for p in plans if getattr(p, "go_index", None) is not None}
        out = []
        for k, ops in enumerate(go_ops):
            plan = by_go.get(k)
            names = getattr(plan, "go_names", [])
            for i, o in enumerate(ops):
                out.append({"output": plan.name if plan is not None else str(k),
                            "op": names[i] if i < len(names) else o["op"], "go_op": o["op"], "where": "go",
                            "seconds": o["ns"] / 1e9, "count": o["count"]})
        with self._lock:
            py = [(k, list(v)) for k, v in self._ops.items()]
        for (output, name), (ns, samples) in py:
            out.append({"output": output, "op": name, "go_op": None, "where": "python", "seconds": ns / 1e9,
                        "count": samples})
        return out

    def flush(self, build):
        """Hands the spans recorded so far, Go's from build (a _Build, or
        None once it is closed) and Python's, to the writer thread, which
        writes them; returns at once."""
        if not self.spans:
            return
        w = self._writer
        if w is None or not w.is_alive():  # not started yet, or gone with a fork
            w = self._writer = _Writer(self)
            w.start()
        w.q.put(build)

    def close(self, build):
        """Waits for the writer, writes what is left and ends the file's
        JSON array."""
        if not self.spans:
            return
        self.flush(build)
        self._writer.stop()
        self.spans = False  # later epochs are not traced: the file is complete
        try:
            self._write(build, record=False)  # the writer's last write is a span too
            if self._file is not None:
                self._file.write("\n]\n")
        except OSError as e:
            self._write_error = self._write_error or e
        finally:
            if self._file is not None:
                self._file.close()
                self._file = None
        if self._write_error is not None:
            warnings.warn(f"ffcv_go: writing the trace {self.path} failed: {self._write_error}", RuntimeWarning,
                          stacklevel=3)

    def _write(self, build, record=True):
        """Writes Go's spans from build and Python's recorded so far (on the
        writer thread, or at close once it has stopped); record: the write
        itself becomes a span."""
        t0 = now()
        go = None
        if build is not None:
            try:
                go = _lib.loader_trace(build.handle)
            except ValueError:  # the build is closed: its spans are gone with it
                go = None
        with self._lock:
            events, self._events = self._events, []
        out = self._open()
        lines = []
        for name, cat, tid, tname, t, dur, args in events:
            self._name(lines, tid, tname)
            lines.append(_event(name, cat, self._pid, tid, t, dur, args))
        n_go = 0 if go is None else len(go)
        if n_go:
            source, tracks = self._sources(go)
            for track in sorted(set(tracks.tolist())):
                self._name(lines, _GO_TID + track, self._track_name(track))
            pid = self._pid
            for (start, dur, arg, _, stage), track, src in zip(go.tolist(), tracks.tolist(), source):
                label = "page" if stage == 4 else "batch" if stage == 5 else "sample"
                lines.append(f'{{"name":"{_lib.STAGES[stage]}","cat":"go","ph":"X","ts":{start / 1000:.3f},'
                             f'"dur":{dur / 1000:.3f},"pid":{pid},"tid":{_GO_TID + track},'
                             f'"args":{{"{label}":{arg}{src}}}}}')
        if lines:
            out.write(",\n" + ",\n".join(lines))
            out.flush()
        if record:
            self._span("write trace", "trace", t0, now(), {"go_spans": n_go, "python_spans": len(events)})

    # A Mixture's page reads go on a track per source, below the Go tracks.
    _SOURCE_PAGES = -16

    def _sources(self, go):
        """Each Go span's track, and the source its args name ('' for none):
        a Mixture's sample spans name their sample's source, and its page
        reads move to their source's track."""
        tracks = go["track"].astype(np.int64)
        if self.sources is None:
            return [""] * len(go), tracks
        arg, stage = go["arg"], go["stage"]
        starts = np.array([s["start"] for s in self.sources], dtype=np.uint64)
        pages = np.array([s["first_page"] for s in self.sources], dtype=np.uint64)
        page = stage == _lib.STAGES.index("page_read")
        sample = ~page & (stage != _lib.STAGES.index("batch_ops"))
        k = np.where(page, np.searchsorted(pages, arg, side="right"), np.searchsorted(starts, arg, side="right")) - 1
        k = np.clip(k, 0, len(self.sources) - 1)
        tracks = np.where(page, self._SOURCE_PAGES - k, tracks)
        names = [",\"source\":" + json.dumps(s["name"]) for s in self.sources]
        return [names[i] if p or q else "" for i, p, q in zip(k.tolist(), page.tolist(), sample.tolist())], tracks

    def _track_name(self, track):
        if self.sources is not None and track <= self._SOURCE_PAGES:
            return f"page reads: {self.sources[self._SOURCE_PAGES - track]['name']}"
        return _TRACK_NAMES.get(track, f"go worker {track}")

    def _open(self):
        if self._file is None:
            self._file = open(self.path, "w")
            self._file.write("[" + json.dumps({"name": "process_name", "ph": "M", "pid": self._pid, "tid": 0,
                                               "args": {"name": "ffcv_go loader"}}))
        return self._file

    def _name(self, lines, tid, name):
        if tid not in self._named:
            self._named.add(tid)
            lines.append(json.dumps({"name": "thread_name", "ph": "M", "pid": self._pid, "tid": tid,
                                     "args": {"name": name}}))


class _Writer(threading.Thread):
    """The thread that writes a Tracer's spans: flush() queues a build (or
    None) and returns. It holds the tracer weakly, so a loader dropped
    without close() lets it end."""

    def __init__(self, tracer):
        super().__init__(name="ffcv_go trace writer", daemon=True)
        self.q = queue.Queue()
        self._tracer = weakref.ref(tracer)

    def run(self):
        while True:
            try:
                build = self.q.get(timeout=1.0)
            except queue.Empty:
                if self._tracer() is None:
                    return
                continue
            try:
                if build is _STOP:
                    return
                tracer = self._tracer()
                if tracer is None:
                    return
                try:
                    tracer._write(build)
                except Exception as e:  # noqa: BLE001 - reported when the loader closes
                    tracer._write_error = tracer._write_error or e
                del tracer, build
            finally:
                self.q.task_done()

    def stop(self):
        """Waits until every queued write is done, then ends the thread."""
        self.q.put(_STOP)
        self.join()


_STOP = object()


def _event(name, cat, pid, tid, t0, dur, args):
    """A complete ("X") event; times in microseconds, as the format has them."""
    return (f'{{"name":{json.dumps(name)},"cat":"{cat}","ph":"X","ts":{t0 / 1000:.3f},"dur":{dur / 1000:.3f},'
            f'"pid":{pid},"tid":{tid},"args":{json.dumps(args)}}}')
