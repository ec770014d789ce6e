"""``diagnose``: runs the probes and measurements within the time budget,
then hands the report to ``decide``."""
import json
import os
import sys
import time

import numpy as np

from . import _measure as measure
from . import _model
from ._decide import FITS_IN_MEMORY_SHARE, decide
from ._probe import Layout, dataset_info, holders, machine_info, memory_info
from ._report import Report

# Shares of max_seconds for each phase. The worker scan gets what the
# others leave: less when cold runs (the file does not fit) or a model
# (alone, then fed by the loader) need their time.
STORAGE_SHARE = 0.1
SCAN_SHARE = 0.45
COLD_SHARE = 0.15  # each of the (at most two) runs from a cold cache
MODEL_ALONE_SHARE = 0.08
TOGETHER_SHARE = 0.22


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


def _plain(v):
    """v as JSON can hold it (anything else by its repr)."""
    return json.loads(json.dumps(v, default=repr))


def diagnose(data, pipeline="train", *, res=224, batch_size=256, num_workers=None, order="random",
             os_cache=True, model=None, device="cpu", amp=False, max_seconds=40.0, progress=True, seed=0,
             evict="auto", loader_kwargs=None, epochs=None):
    """Measures storage, the loader and optionally the model (alone, and
    fed by the loader as in training) on this machine and this dataset, and
    returns a ``Report`` naming the bottleneck with the settings that fix it.

    Args:
        data: a .beton file (or shards, or an s3:// or http(s):// URL).
        pipeline: "train" (RandomResizedCrop + flip), "val" (centre crop),
            a .py file defining ``pipelines`` (and optionally
            ``loader_kwargs``), or a pipelines dict (output name ->
            operations) or a function returning one.
        res: the crop size of the "train" and "val" pipelines.
        batch_size: of the loader and the model.
        num_workers: the setting to diagnose (None: the Loader's default,
            the usable cores); the doctor measures 1, 2, 4, ... cores anyway.
        order: the order to diagnose: "random", "quasi_random" or "sequential".
        os_cache: the cache to diagnose.
        model: None, a torchvision model name, a .py file defining
            ``model``, an ``nn.Module`` or a function returning one.
            Classifiers, segmentation models (dict outputs) and
            torchvision's detection models train on the loader's batches;
            a model that fails to (out of memory, an error) gets a note and
            the rest of the report stands.
        device: where the model trains (and where "train" and "val" normalise).
        amp: train the model with mixed precision.
        max_seconds: the time the measurements may take, about.
        progress: a progress bar on stderr.
        evict: drop the file from the page cache to read it cold: "auto"
            (only when no other process has it open or mapped), True or
            False. Dropping it makes every process on the machine read it
            again from storage.
        loader_kwargs: more Loader arguments for every loader the doctor
            makes, as training passes them: ``custom_field_mapper`` for
            views, ``custom_fields``, ``batches_ahead``, ...
        epochs: the training schedule's epochs, for the first epoch's
            share of it (its share of 16 and 88 epochs is given anyway).
    """
    from ..reader import Reader
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
    if evict not in ("auto", True, False):
        raise ValueError(f"evict {evict!r}: 'auto', True or False")
    if epochs is not None and (not isinstance(epochs, int) or epochs < 1):
        raise ValueError(f"epochs {epochs!r} must be a positive integer or None")
    extra = measure.check_loader_kwargs(loader_kwargs)
    import torch
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {device!r}: CUDA is not available here")
    rng = np.random.default_rng(seed)
    deadline = t_start + max_seconds
    resolved = _model.resolve_model(model) if model is not None else None  # a bad name fails before measuring

    def left(share):
        return max(0.5, min(share * max_seconds, deadline - time.perf_counter()))

    spec, pipe_desc, file_kwargs = measure.pipeline_source(pipeline)
    kwargs = {**measure.check_loader_kwargs(file_kwargs), **extra}
    custom = kwargs.get("custom_fields", {})
    reader = Reader(data, custom_handlers=custom)
    ds = dataset_info(reader, data)
    if not ds["samples"]:
        raise ValueError(f"{data}: the dataset has no samples")
    make = measure.pipeline_factory(spec, reader, res, device, amp)
    facts = measure.pipeline_facts(make())
    if ds["remote"]:
        os_cache = False  # remote files always go through the process cache
    machine = machine_info()
    cores = machine["cores"]
    current = num_workers or cores
    usable = machine["usable_memory"] or 0
    ds["fits_in_memory"] = (not ds["remote"]) and ds["bytes"] <= FITS_IN_MEMORY_SHARE * usable
    counts = measure.worker_counts(cores, current)
    cold_needed = ds["remote"] or not ds["fits_in_memory"]
    steps = 2 + len(counts) + (2 if cold_needed else 0) + (2 if model is not None else 0)
    bar = _Progress(steps, progress)
    settings = {"pipeline": pipe_desc, "res": res, "batch_size": batch_size, "num_workers": current,
                "order": order, "os_cache": bool(os_cache), "device": str(dev), "amp": bool(amp),
                "model": None if resolved is None else resolved[1], "max_seconds": max_seconds,
                "evict": evict, "epochs": epochs, "loader_kwargs": _plain(kwargs)}
    # The decoding scan and the storage reads use one file: the dataset's,
    # or its first shard (shards share their fields and encoding).
    one = data if ds["files"] == 1 else reader.file_names[0]
    one_reader = reader if ds["files"] == 1 else Reader(one, custom_handlers=custom)
    lay = Layout(one_reader)
    held = None if ds["remote"] else holders(reader.file_names)
    evicting = not ds["remote"] and (evict is True or (evict == "auto" and not held["pids"]))
    report = Report(data=str(data), settings=settings, machine=machine, dataset=ds, storage={},
                    loader={"pipeline_facts": {k: (list(v) if isinstance(v, tuple) else v) for k, v in facts.items()}})
    try:
        bar.phase("storage: reads")
        if ds["remote"]:
            report.storage = measure.storage_remote(one, one_reader, lay, left(STORAGE_SHARE), rng)
        else:
            report.storage = measure.storage_local(one, one_reader, lay, left(STORAGE_SHARE), rng, evicting)
            report.storage.update(evict=evict, holders=held)
        bar.done()

        bar.phase("loader: reading samples into memory")
        indices = measure.warm_subset(one, one_reader, ds, lay, usable, rng)
        report.loader["subset_samples"] = one_reader.num_samples if indices is None else int(len(indices))
        bar.done()

        scan = []
        scan_share = SCAN_SHARE - (0.1 if cold_needed else 0) - (0.15 if model is not None else 0)
        per_point = left(scan_share) / len(counts)
        for w in counts:
            bar.phase(f"loader: {w} worker{'s' if w != 1 else ''}")
            scan.append(measure.run_loader(one, make, workers=w, batch_size=batch_size, order=order,
                                           os_cache=os_cache, indices=indices, seconds=max(1.0, per_point),
                                           loader_kwargs=kwargs))
            bar.done()
        report.loader["scan"] = scan
        cur = next(p for p in scan if p["workers"] == current)
        best = max(scan, key=lambda p: p["img_s"])
        if not best["img_s"]:
            raise RuntimeError(f"{data}: the loader delivered no batches in {max(1.0, per_point):.0f} s with "
                               f"this pipeline")
        report.loader["current"] = {k: v for k, v in cur.items() if k not in ("stages", "ops")}
        report.loader["best"] = {k: v for k, v in best.items() if k not in ("stages", "ops")}
        report.loader["first_batch_s"] = cur["first_batch_s"]
        report.loader["stages"] = measure.stage_times(cur.get("stages"))
        report.loader["ops"] = measure.op_times(cur.get("ops"))

        if cold_needed:
            _cold_runs(report, data, make, reader, ds, usable, batch_size, order, os_cache, current, evicting,
                       kwargs, left, bar)

        if resolved is not None:
            _model_phase(report, resolved, make, one, indices, facts, res, device, amp, batch_size, order,
                         os_cache, current, kwargs, left, bar)
    finally:
        bar.close()
    report.elapsed_s = time.perf_counter() - t_start
    return decide(report)


def _cold_runs(report, data, make, reader, ds, usable, batch_size, order, os_cache, current, evicting, kwargs,
               left, bar):
    """The loader from a cold cache (the whole file, from its start) with
    the order and cache to diagnose, and with QUASI_RANDOM and the process
    cache sized to the memory left."""
    # Memory left now that the loaders have run (their slots and the Go heap stay).
    room = min(usable, memory_info()["usable"] or usable)
    report.loader["quasi_window"] = measure.quasi_window(ds, room, batch_size, current)
    configs = [(order, bool(os_cache))]
    if (order, bool(os_cache)) != ("quasi_random", False):
        configs.append(("quasi_random", False))
    cold = []
    for o, c in configs:
        bar.phase(f"loader from cold: {o.upper()}, os_cache={c}")
        if evicting:
            measure.drop_from_page_cache(reader.file_names)
        kw = {}
        q = report.loader["quasi_window"]
        if o == "quasi_random" and not c and q:
            kw = {"order_kwargs": {"window_pages": q["window_pages"]}, "max_resident_pages": q["max_resident_pages"]}
        cold.append(measure.run_loader(data, make, workers=current, batch_size=batch_size, order=o, os_cache=c,
                                       indices=None, seconds=max(2.0, left(COLD_SHARE)), trace=False,
                                       from_start=True, loader_kwargs=kwargs, **kw))
        bar.done()
    bar.done(2 - len(configs))
    report.loader["cold"] = cold


def _model_phase(report, resolved, make, one, indices, facts, res, device, amp, batch_size, order, os_cache,
                 current, kwargs, left, bar):
    """The model alone, then fed by the loader. Whatever fails here (out
    of memory, a model the doctor cannot train) becomes the model entry's
    error: the rest of the report stands."""
    m, name = resolved
    alone = step = failed = None
    try:
        bar.phase("model: training steps")
        step = _model.TrainStep(m, name, device, amp)
        size = facts["output_size"] or (res, res)
        alone = _model.measure_alone(step, batch_size, size, max(1.0, left(MODEL_ALONE_SHARE)))
        report.model = alone
        bar.done()
        bar.phase("model fed by the loader")
        report.together = _model.measure_together(one, make, step, workers=current, batch_size=batch_size,
                                                  order=order, os_cache=os_cache, indices=indices,
                                                  seconds=max(1.0, left(TOGETHER_SHARE)), loader_kwargs=kwargs)
        bar.done()
    except Exception as e:  # noqa: BLE001 - any failure of the user's model is reported, not raised
        failed = _model.failure(name, e, batch_size, device)
    if failed is not None:  # out of the except block: its traceback no longer holds the step's tensors
        report.model = {**(alone or {}), **failed}
        report.together = None
        step = None  # the model's optimizer state and cached targets go with it, before the cache is emptied
        _model.free_device(device)
