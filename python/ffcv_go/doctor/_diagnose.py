"""``diagnose``: runs the probes and measurements within the time budget,
then hands the report to ``decide``."""
import json
import os
import runpy
import sys
import time

import numpy as np

from . import _measure as measure
from . import _model
from ._decide import decide, fits_in_memory
from ._probe import Layout, dataset_info, holders, machine_info, memory_info, source_datasets
from ._report import Report

# Shares of max_seconds for each phase. The worker scan gets what the
# others leave: less when cold runs (the file does not fit) or a model
# (alone, then fed by the loader) need their time.
STORAGE_SHARE = 0.1
SCAN_SHARE = 0.45
COLD_SHARE = 0.15  # each of the (at most two) runs from a cold cache
MODEL_ALONE_SHARE = 0.08
TOGETHER_SHARE = 0.22
# A Mixture's sources share the storage phase by their share of the epoch,
# each getting at least this many seconds; a remote source at least this
# share of max_seconds (its first page must arrive to give a rate).
SOURCE_STORAGE_MIN_S = 0.25
REMOTE_STORAGE_SHARE = 0.2
# A run from a cold cache ends at the first batch after its time; it is
# cut (closed while it waits for pages) this much later, or half its time.
COLD_GRACE_S = 1.0
# The loader feeding the model runs at least this many of the model's
# steps (at its rate alone) before it is cut: a warm-up step and two timed.
TOGETHER_MIN_STEPS = 3.5
# A phase that would get less than this (max_seconds is spent) is skipped.
MIN_PHASE_S = 0.5


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
        data: a .beton file (or shards, or an s3:// or http(s):// URL), a
            ``Mixture`` of such datasets, or a .py file defining ``data``
            (either of those). A Mixture's sources are read apart for the
            storage rates (each on its own storage); its loaders read the
            Mixture as training does.
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
        max_seconds: the deadline of the measurements: each phase gets a
            share of it, runs that wait on storage are cut at theirs, phases
            whose turn comes after it are skipped; the report's ``phases``
            (and a note, when it went over) say where the time went.
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
    from ..loader.mixture import Mixture
    from ..reader import Reader
    t_start = time.perf_counter()
    data = _dataset_arg(data)
    mixture = data if isinstance(data, Mixture) else None
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
    from ..transforms.ops import _check_device
    _check_device(device)  # the loader's own sentence
    dev = torch.device(device)
    rng = np.random.default_rng(seed)
    deadline = t_start + max_seconds
    resolved = _model.resolve_model(model) if model is not None else None  # a bad name fails before measuring

    def left(share):
        return max(MIN_PHASE_S, min(share * max_seconds, deadline - time.perf_counter()))

    def phase(name, budget):
        """Records a phase's time against its budget (for the report's
        account of where the time went)."""
        report.phases.append({"phase": name, "budget_s": budget, "start_s": time.perf_counter() - t_start})
        return report.phases[-1]

    def ended(entry, cut=False):
        entry["seconds"] = time.perf_counter() - t_start - entry["start_s"]
        entry["cut"] = bool(entry.get("cut") or cut)

    spec, pipe_desc, file_kwargs = measure.pipeline_source(pipeline)
    kwargs = {**measure.check_loader_kwargs(file_kwargs), **extra}
    custom = kwargs.get("custom_fields", {})
    sources = None
    if mixture is not None:
        if custom:
            raise ValueError("custom_fields: a Mixture joins its sources' files into one dataset, which custom "
                             "fields do not allow")
        reader = Reader._of_mixture(mixture)
        sources = source_datasets(reader)
        ds = _mixture_dataset(reader, mixture, [i for i, _ in sources])
    else:
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
    if sources is not None:
        for info, _ in sources:
            info["fits_in_memory"] = (not info["remote"]) and fits_in_memory(info["bytes"], usable)
        ds["local_fits_in_memory"] = fits_in_memory(ds["local_bytes"], usable)
        ds["fits_in_memory"] = (not ds["remote"]) and ds["local_fits_in_memory"]
    else:
        ds["fits_in_memory"] = (not ds["remote"]) and fits_in_memory(ds["bytes"], usable)
    counts = measure.worker_counts(cores, current)
    cold_needed = ds["remote"] or not ds["fits_in_memory"]
    steps = 2 + len(counts) + (2 if cold_needed else 0) + (2 if model is not None else 0)
    bar = _Progress(steps, progress)
    settings = {"pipeline": pipe_desc, "res": res, "batch_size": batch_size, "num_workers": current,
                "order": order, "os_cache": bool(os_cache), "device": str(dev), "amp": bool(amp),
                "model": None if resolved is None else resolved[1], "max_seconds": max_seconds,
                "evict": evict, "epochs": epochs, "loader_kwargs": _plain(kwargs)}
    report = Report(data=str(data), settings=settings, machine=machine, dataset=ds, storage={},
                    loader={"pipeline_facts": {k: (list(v) if isinstance(v, tuple) else v) for k, v in facts.items()}})
    # Opening the files and the pipeline's first build (remote headers included).
    report.phases.append({"phase": "opening the dataset", "budget_s": None, "start_s": 0.0,
                          "seconds": time.perf_counter() - t_start, "cut": False})
    try:
        bar.phase("storage: reads")
        p = phase("storage", left(STORAGE_SHARE))
        if mixture is not None:
            report.storage, evict_files = _mixture_storage(sources, p["budget_s"], rng, evict, max_seconds)
        else:
            # The decoding scan and the storage reads use one file: the
            # dataset's, or its first shard (shards share their fields and
            # encoding).
            one = data if ds["files"] == 1 else reader.file_names[0]
            one_reader = reader if ds["files"] == 1 else Reader(one, custom_handlers=custom)
            lay = Layout(one_reader)
            held = None if ds["remote"] else holders(reader.file_names)
            evicting = not ds["remote"] and (evict is True or (evict == "auto" and not held["pids"]))
            evict_files = reader.file_names if evicting else []
            if ds["remote"]:
                budget = max(p["budget_s"], REMOTE_STORAGE_SHARE * max_seconds)
                report.storage = measure.storage_remote(one, one_reader, lay, budget, rng)
            else:
                report.storage = measure.storage_local(one, one_reader, lay, p["budget_s"], rng, evicting)
                report.storage.update(evict=evict, holders=held)
        ended(p)
        bar.done()

        bar.phase("loader: reading samples into memory")
        p = phase("reading the scan's samples into memory", None)
        if mixture is not None:
            one, indices = _scan_mixture(report, mixture, [i for i, _ in sources], usable), None
        else:
            indices = measure.warm_subset(one, one_reader, ds, lay, usable, rng,
                                          budget=max(MIN_PHASE_S, deadline - time.perf_counter()))
            report.loader["subset_samples"] = one_reader.num_samples if indices is None else int(len(indices))
        ended(p)
        bar.done()

        scan = []
        scan_share = SCAN_SHARE - (0.1 if cold_needed else 0) - (0.15 if model is not None else 0)
        per_point = left(scan_share) / len(counts)
        p = phase("loader: worker scan", per_point * len(counts))
        for w in counts:
            if w != current and time.perf_counter() + per_point > deadline:
                bar.done()
                continue  # the time is up: the setting diagnosed only
            bar.phase(f"loader: {w} worker{'s' if w != 1 else ''}")
            scan.append(measure.run_loader(one, make, workers=w, batch_size=batch_size, order=order,
                                           os_cache=os_cache, indices=indices, seconds=max(1.0, per_point),
                                           loader_kwargs=kwargs,
                                           cut_at=max(deadline, time.perf_counter() + max(1.0, per_point))))
            p["cut"] = p.get("cut") or scan[-1]["cut"]
            bar.done()
        ended(p)
        report.loader["scan"] = scan
        cur = next(p for p in scan if p["workers"] == current)
        best = max(scan, key=lambda p: p["img_s"])
        if not best["img_s"]:
            raise RuntimeError(f"{data}: the loader delivered no batches in {max(1.0, per_point):.0f} s with "
                               f"this pipeline" + (" (cut at max_seconds)" if cur["cut"] else ""))
        report.loader["current"] = {k: v for k, v in cur.items() if k not in ("stages", "ops")}
        report.loader["best"] = {k: v for k, v in best.items() if k not in ("stages", "ops")}
        report.loader["first_batch_s"] = cur["first_batch_s"]
        report.loader["stages"] = measure.stage_times(cur.get("stages"))
        report.loader["ops"] = measure.op_times(cur.get("ops"))

        if cold_needed:
            _cold_runs(report, data, make, ds, usable, batch_size, order, os_cache, current, evict_files,
                       kwargs, left, bar, deadline, phase, ended)

        if resolved is not None:
            # A Mixture is trained on whole, remote sources included.
            fed, fed_indices = (mixture, None) if mixture is not None else (one, indices)
            _model_phase(report, resolved, make, fed, fed_indices, facts, res, device, amp, batch_size, order,
                         os_cache, current, kwargs, left, bar, deadline, phase, ended)
    finally:
        bar.close()
    report.elapsed_s = time.perf_counter() - t_start
    return decide(report)


def _dataset_arg(data):
    """diagnose's data as the Loader takes it: a Mixture as it is; a .py
    file's ``data``; paths as strings."""
    from ..loader.mixture import Mixture
    if isinstance(data, Mixture):
        return data
    if isinstance(data, (list, tuple)):
        return [os.fspath(d) for d in data]
    path = os.fspath(data)
    if path.endswith(".py"):
        if not os.path.isfile(path):
            raise ValueError(f"{path}: no such file (a .py file defining `data`, a Mixture or a dataset path)")
        ns = runpy.run_path(path)
        if "data" not in ns:
            raise ValueError(f"{path} defines no `data` (a Mixture, or a dataset's path)")
        if isinstance(ns["data"], str) and ns["data"].endswith(".py"):
            raise ValueError(f"{path}: `data` is another .py file; give a Mixture or a dataset's path")
        return _dataset_arg(ns["data"])
    return path


def _mixture_dataset(reader, mixture, infos):
    """The dataset section of a Mixture: its samples (and those of an epoch),
    its sources' bytes, local and in all, and the epoch's mean sample size."""
    ds = dataset_info(reader, repr(mixture))
    per_epoch = sum(i["per_epoch"] for i in infos)
    local = [i for i in infos if not i["remote"]]
    ds.update(path=repr(mixture), sources=[i["name"] for i in infos], epoch_samples=per_epoch,
              remote=any(i["remote"] for i in infos), filesystem=None,
              bytes=sum(i["bytes"] for i in infos), local_bytes=sum(i["bytes"] for i in local),
              heap_bytes=sum(i["heap_bytes"] for i in infos),
              mean_sample_bytes=sum(i["per_epoch"] * i["mean_sample_bytes"] for i in infos) / max(per_epoch, 1))
    return ds


# What storage["sources"] keeps of each source's description.
SOURCE_KEYS = ("name", "share", "per_epoch", "samples", "files", "file_names", "bytes", "heap_bytes", "page_size",
               "mean_sample_bytes", "remote", "filesystem", "fits_in_memory")


def _mixture_storage(sources, budget, rng, evict, max_seconds):
    """Each source's storage read on its own files (local or remote, as one
    dataset's), its time a share of budget by its share of the epoch; local
    sources dropped from the page cache by the evict policy, each on its
    own (auto: not when another process holds one of its files).
    (storage, the local files that may be dropped for the cold runs)."""
    from ..reader import Reader
    entries, evict_files = [], []
    for info, r in sources:
        files = info["file_names"]
        one = files[0]
        one_reader = r if len(files) == 1 else Reader(one)
        lay = Layout(one_reader)
        seconds = max(SOURCE_STORAGE_MIN_S, budget * info["share"])
        if info["remote"]:
            st = measure.storage_remote(one, one_reader, lay, max(seconds, REMOTE_STORAGE_SHARE * max_seconds), rng)
        else:
            held = holders(files)
            evicting = evict is True or (evict == "auto" and not held["pids"])
            st = measure.storage_local(one, one_reader, lay, seconds, rng, evicting)
            st.update(evict=evict, holders=held)
            if evicting:
                evict_files += files
        st.update({k: info[k] for k in SOURCE_KEYS})
        # What a page read or fetch carries per sample (pages' padding included).
        st["page_bytes_per_sample"] = len(lay.used_pages) * one_reader.page_size / max(one_reader.num_samples, 1)
        entries.append(st)
    return {"kind": "mixture", "evict": evict, "sources": entries}, evict_files


def _scan_mixture(report, mixture, infos, usable):
    """The Mixture the worker scan decodes (a Mixture's loaders take no
    indices): its local sources, each with as many samples per epoch as in
    the Mixture, their files read into memory first as far as the scan's
    share of memory allows; remote sources' fetches are the storage's
    measure, not the decoders'. The Mixture itself when all its sources are
    local, or all remote."""
    from ..loader.mixture import Mixture, Source
    local = [(s, i) for s, i in zip(mixture._taken(), infos) if not i["remote"]]
    scanned = [i for _, i in local] or infos
    warmed = measure.warm_files([f for _, i in local for f in i["file_names"]], measure.warm_target(usable))
    local_bytes = sum(i["bytes"] for _, i in local)
    report.loader.update(scan_sources=[i["name"] for i in scanned],
                         subset_samples=sum(i["per_epoch"] for i in scanned),
                         in_memory_share=min(1.0, warmed / local_bytes) if local_bytes else None)
    if not local or len(local) == len(infos):
        return mixture
    side = [Source(s.paths, choose=0, rename=s.rename, drop=s.drop, name=s.name)
            for s in mixture.sources if s not in mixture._taken()]  # for the operations that read them
    return Mixture([Source(s.paths, choose=i["per_epoch"], rename=s.rename, drop=s.drop, pipelines=s.pipelines,
                           name=s.name) for s, i in local] + side, source_field=mixture.source_field)


def _cold_runs(report, data, make, ds, usable, batch_size, order, os_cache, current, evict_files, kwargs,
               left, bar, deadline, phase, ended):
    """The loader from a cold cache (the whole file, or Mixture, from its
    start) with the order and cache to diagnose, and with QUASI_RANDOM and
    the process cache sized to the memory left. evict_files: the local files
    to drop from the page cache first."""
    # Memory left now that the loaders have run (their slots and the Go heap stay).
    room = min(usable, memory_info()["usable"] or usable)
    report.loader["quasi_window"] = measure.quasi_window(ds, room, batch_size, current)
    configs = [(order, bool(os_cache))]
    if (order, bool(os_cache)) != ("quasi_random", False):
        configs.append(("quasi_random", False))
    cold = []
    for o, c in configs:
        if deadline - time.perf_counter() < MIN_PHASE_S or (cold and not cold[0]["images"]):
            # The time is up, or the first run got no batch before its
            # deadline: the pages it asked for still hold the storage.
            why = ("max_seconds was spent" if not cold else
                   "the run before it got no batch in its time, and the pages it asked for still hold the storage")
            report.phases.append({"phase": f"loader from cold: {o.upper()}, os_cache={c}", "budget_s": 0.0,
                                  "skipped": why, "seconds": 0.0, "cut": False})
            continue  # the time is up
        bar.phase(f"loader from cold: {o.upper()}, os_cache={c}")
        seconds = min(max(2.0, left(COLD_SHARE)), deadline - time.perf_counter())
        p = phase(f"loader from cold: {o.upper()}, os_cache={c}", seconds)
        if evict_files:
            measure.drop_from_page_cache(evict_files)
        kw = {}
        q = report.loader["quasi_window"]
        if o == "quasi_random" and not c and q:
            kw = {"order_kwargs": {"window_pages": q["window_pages"]}, "max_resident_pages": q["max_resident_pages"]}
        cold.append(measure.run_loader(data, make, workers=current, batch_size=batch_size, order=o, os_cache=c,
                                       indices=None, seconds=seconds, trace=False, from_start=True,
                                       loader_kwargs=kwargs, cut_at=min(deadline, time.perf_counter() + seconds
                                                                        + max(COLD_GRACE_S, seconds / 2)), **kw))
        ended(p, cold[-1]["cut"])
        bar.done()
    bar.done(2 - len(configs))
    report.loader["cold"] = cold


def _model_phase(report, resolved, make, one, indices, facts, res, device, amp, batch_size, order, os_cache,
                 current, kwargs, left, bar, deadline, phase, ended):
    """The model alone, then fed by the loader. Whatever fails here (out
    of memory, a model the doctor cannot train) becomes the model entry's
    error: the rest of the report stands."""
    m, name = resolved
    alone = step = failed = None
    if deadline - time.perf_counter() < MIN_PHASE_S:
        report.model = {"name": name, "device": str(device), "skipped": True,
                        "error": "not measured: max_seconds was spent before the model's turn"}
        report.phases.append({"phase": "model", "budget_s": 0.0, "skipped": "max_seconds was spent", "seconds": 0.0,
                              "cut": False})
        bar.done(2)
        return
    p = None
    try:
        bar.phase("model: training steps")
        p = phase("model alone", max(1.0, left(MODEL_ALONE_SHARE)))
        step = _model.TrainStep(m, name, device, amp)
        size = facts["output_size"] or (res, res)
        alone = _model.measure_alone(step, batch_size, size, p["budget_s"])
        report.model = alone
        ended(p)
        bar.done()
        bar.phase("model fed by the loader")
        seconds = max(1.0, left(TOGETHER_SHARE))
        p = phase("model fed by the loader", seconds)
        report.together = _model.measure_together(one, make, step, workers=current, batch_size=batch_size,
                                                  order=order, os_cache=os_cache, indices=indices,
                                                  seconds=seconds, loader_kwargs=kwargs,
                                                  cut_at=time.perf_counter() + max(
                                                      deadline - time.perf_counter(), seconds,
                                                      TOGETHER_MIN_STEPS / alone["steps_s"]))
        ended(p, report.together["cut"])
        bar.done()
    except Exception as e:  # noqa: BLE001 - any failure of the user's model is reported, not raised
        if p is not None and "seconds" not in p:
            ended(p, isinstance(e, TimeoutError))
        failed = _model.failure(name, e, batch_size, device)
    if failed is not None:  # out of the except block: its traceback no longer holds the step's tensors
        report.model = {**(alone or {}), **failed}
        report.together = None
        step = None  # the model's optimizer state and cached targets go with it, before the cache is emptied
        _model.free_device(device)
