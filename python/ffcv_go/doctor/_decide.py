"""Deciding: the bottleneck, the settings that fix it and the first
epoch's cost, from a report's measurements. Pure: it reads the report's
dicts and writes its verdict; it measures nothing, so every rule can be
tested on made-up measurements. Every threshold is named here."""
import math
import os

from ._report import Recommendation, gib, mb, op_name, pct, rate, ratio, workers

MiB = 1 << 20

# The file fits in memory when it takes at most this share of the memory
# the process may use (the rest: the training process and other pages).
FITS_IN_MEMORY_SHARE = 0.8
# Storage limits the loader when, from a cold cache, it delivers less than
# this share of the rate it decodes at from memory.
STORAGE_BOUND_SHARE = 0.8
# With a model: training is loader-bound when the training loop waited in
# next() for at least this share of the time the loader fed the model.
# Below it, the model is the limit: a few percent are the loop's own
# overhead and the batches' hand-over, not a slow loader.
LOADER_BOUND_WAIT_SHARE = 0.10
# More workers are recommended when they measured this much faster; fewer
# (more often noise than a real effect) only with a wider margin.
MORE_WORKERS_GAIN = 1.1
FEWER_WORKERS_GAIN = 1.25
# Fewer workers that still deliver this multiple of the training rate
# would leave cores to the training process.
WORKERS_HEADROOM = 1.2
# Without a model, an epoch (of a file that fits in memory) shorter than
# this leaves nothing to tune.
TRIVIAL_EPOCH_S = 1.0
# The machine was busy when its load average exceeded this share of the cores.
BUSY_LOAD_SHARE = 0.5
# An operation after the decoder taking at least this share of the
# operations' time is named as the one to make cheaper.
DOMINANT_OP_SHARE = 0.3
# A first epoch from a cold cache is flagged when what it adds is at least
# this share of the shortest schedule.
FIRST_EPOCH_FLAG_SHARE = 0.05
# Schedules the first epoch's share is given for: FFCV's ImageNet
# configurations (github.com/libffcv/ffcv-imagenet, rn18_configs and
# rn50_configs) train for 16 to 88 epochs.
SCHEDULES = (16, 88)
# The requests a remote file has in flight by default
# (FFCV_GO_REMOTE_IN_FLIGHT, docs/guides/remote.md): more are recommended for
# a remote source that limits a mixture and has more pages than that.
REMOTE_IN_FLIGHT_DEFAULT = 16
# For a Mixture limited by a source's storage, QUASI_RANDOM with the process
# cache is recommended when it measured this much faster from a cold cache.
QUASI_RANDOM_GAIN = 1.1
# FFCV's ImageNet recipes (the ffcv-imagenet README and configurations)
# store the images at most 400 px (ResNet-18) or 500 px (ResNet-50) on the
# longer side, and train on crops of 160 to 192 px (progressive resizing).
# The smallest margin, 400 px for 192 px crops, scales a recommended
# max_resolution with the crop.
RECIPE_MAX_RESOLUTION = 400
RECIPE_TRAIN_RES = 192
# max_resolution is recommended when the rewritten images would keep at
# most this share of the stored pixels.
MAX_RES_KEEP_PIXELS = 0.5
# Measuring may take this much longer than max_seconds (opening the files,
# the batch in flight at a deadline, closing the loaders) before the report
# says where the extra time went.
OVERRUN_NOTE_S = 2.0


def fits_in_memory(nbytes, usable):
    """Whether nbytes of files stay in the page cache beside the process
    that may use usable bytes."""
    return nbytes <= FITS_IN_MEMORY_SHARE * usable


def decide(report):
    """Names the bottleneck and fills the recommendations, the notes and
    ``first_epoch`` of a report whose measurements are in (kept apart from
    measuring, so it can be tested alone)."""
    s, ld, ds, mem = report.settings, report.loader, report.dataset, report.machine
    recs, notes = [], []
    cur = ld["current"]
    cpu_rate = cur["img_s"]
    sample_bytes = ds["mean_sample_bytes"] or 1.0
    cold = {(c["order"], c["os_cache"]): c for c in ld.get("cold", [])}
    cold_cur = cold.get((s["order"].upper(), s["os_cache"]))
    fits = ds["fits_in_memory"]
    loader_rate, limit = cpu_rate, "cpu"
    # A Mixture: the source whose storage allows the slowest epoch at its
    # share, among those read from storage every epoch, limits it when that
    # epoch rate is below the decoding rate's bound. Its cold runs decide
    # only where no such rate was measured: they also hold the decoding of
    # every source and each epoch's start.
    slow = None
    if report.storage.get("sources") is not None:
        steady = [x for x in source_rates(report) if x["every_epoch"] and x.get("epoch_img_s")]
        slow = min(steady, key=lambda x: x["epoch_img_s"]) if steady else None
    if slow is not None:
        if slow["epoch_img_s"] < STORAGE_BOUND_SHARE * cpu_rate:
            loader_rate, limit = slow["epoch_img_s"], "storage"
    elif cold_cur is not None and (not fits or ds["remote"]) and cold_cur["img_s"] < STORAGE_BOUND_SHARE * cpu_rate:
        loader_rate, limit = cold_cur["img_s"], "storage"
    model = report.model or {}
    failed = bool(model.get("error"))
    tg = None if failed else report.together
    epoch_s = ds.get("epoch_samples", ds["samples"]) / max(loader_rate, 1e-9)

    if tg is not None:
        waited = tg["wait_share"] >= LOADER_BOUND_WAIT_SHARE
        if _gpu_timed(tg):
            # On a GPU the loop also waits in next() while the GPU computes: the
            # next batch's copy needs a slot the GPU may still be reading. The
            # GPU's own busy share says whether data kept it waiting.
            waited = waited and tg["device_busy_share"] < 1 - LOADER_BOUND_WAIT_SHARE
        storage_short = limit == "storage" and loader_rate < STORAGE_BOUND_SHARE * tg["img_s"]
        verdict = limit if waited or storage_short else "model"
    elif (failed or not model) and fits and not ds["remote"] and epoch_s < TRIVIAL_EPOCH_S:
        verdict = "none"  # a model that could not train leaves the loader's verdict
    else:
        verdict = limit
    report.bottleneck = verdict

    if verdict == "model":
        report.summary = _model_summary(tg)
        if tg["device"].startswith("cuda") and not tg["amp"]:
            recs.append(Recommendation("torch.autocast('cuda', dtype=torch.float16) (--amp)", "model",
                                       "mixed precision usually raises a GPU's training rate the most; "
                                       "measure it with --amp"))
        need = next((p for p in ld["scan"] if p["img_s"] >= WORKERS_HEADROOM * tg["img_s"]), None)
        if need is not None and need["workers"] < cur["workers"]:
            notes.append(f"{workers(need['workers'])} already deliver{'s' if need['workers'] == 1 else ''} "
                         f"{rate(need['img_s'])} img/s, {ratio(need['img_s'] / tg['img_s'])} the training "
                         f"rate: fewer workers would leave cores to the training process")
    elif verdict == "none":
        report.summary = (f"nothing to tune at this scale: an epoch of the {ds['samples']:,} samples takes "
                          f"{epoch_s:.2f} s at {rate(loader_rate)} img/s and the file fits in memory. "
                          "Run the doctor on the full dataset, with --model to measure it with training.")
    elif verdict == "storage" and report.storage.get("sources") is not None:
        report.storage["limiting_source"] = slow["name"] if slow is not None else None
        _mixture_storage_recs(report, recs, notes, slow, cold, cold_cur, cpu_rate)
    elif verdict == "storage":
        _storage_recs(report, recs, notes, cold, cold_cur, cpu_rate, sample_bytes, mem)
    else:
        _cpu_recs(report, recs, notes)
    if verdict in ("storage", "cpu") and tg is not None:
        dev = "the GPU" if tg["device"].startswith("cuda") else "the training thread"
        report.summary += (f" Training with the model, the loop waited in next() {pct(tg['wait_share'])} of the "
                           f"time ({tg['wait_s']:.2f} s of {tg['seconds']:.2f} s) and {dev} was busy "
                           f"{pct(tg['device_busy_share'])}: {rate(tg['img_s'])} img/s.")
    if failed and model.get("skipped"):
        notes.append(f"the model {model.get('name')} was not measured: max_seconds ({s.get('max_seconds')} s) was "
                     f"spent before its turn (give more with --max-seconds); the verdict is the loader's alone")
    elif failed:
        notes.append(f"the model {model.get('name')} could not train ({model['error']}): the verdict is the "
                     f"loader's alone" + (f"; {model['advice']}" if model.get("advice") else ""))
    if tg is not None and (tg.get("targets") or "").startswith("made-up"):
        notes.append("the detection model trained on made-up targets, one box per image (its centre half): the "
                     "pipeline decodes no boxes. With the dataset's boxes (RaggedDecoder outputs in the pipeline) "
                     "it trains on those, and its steps cost what they cost in training")
    if tg is not None and tg["device"] == "cpu":
        threads = tg.get("torch_threads")
        notes.append(f"the model trained on the CPU beside the loader's {workers(tg['workers'])}"
                     + (f" with {threads} torch thread{'s' if threads != 1 else ''}" if threads else "")
                     + f" on {report.machine['cores']} usable cores: they share the cores, so the scan's rates "
                       "(the loader alone) are higher than what training gets")
    if model.get("from_warmup"):
        notes.append(f"one training step took {model['seconds']:.1f} s: the model's rate alone is from that first "
                     "step (warm-up included), so it is a lower bound")
    fe = first_epoch(report, tg["img_s"] if tg is not None else loader_rate)
    report.first_epoch = fe
    if fe is not None:
        _first_epoch_advice(report, fe, recs, notes)
    inmem = ld.get("in_memory_share")
    if ld.get("scan_sources") is not None and (inmem is None or inmem < 1):
        notes.append(("every source is remote: the worker scan's rates include fetching their pages"
                      if inmem is None else
                      f"{pct(inmem)} of the local sources' bytes fit in the memory the worker scan reads them into "
                      f"first: its rates may include reads from storage") + ", a lower bound of the decoding rate")
    over = _overrun(report)
    if over:
        notes.append(over)
    load = report.machine.get("load_average")
    if load and load[0] > BUSY_LOAD_SHARE * report.machine["cores"]:
        notes.append(f"other processes were using the CPU (load average {load[0]:.1f} on {report.machine['cores']} "
                     f"cores when measuring started): the rates are lower and noisier than on an idle machine")
    report.recommendations, report.notes = recs, notes
    return report


def _overrun(report):
    """Where the time went when measuring took more than OVERRUN_NOTE_S
    beyond max_seconds, and which measurements were cut or skipped at the
    deadline; None when neither."""
    limit = report.settings.get("max_seconds")
    phases = report.phases or []
    cut = [p["phase"] for p in phases if p.get("cut")]
    skipped = [f"{p['phase']} ({p['skipped']})" for p in phases if p.get("skipped")]
    parts = []
    if limit and report.elapsed_s > limit + OVERRUN_NOTE_S:
        over = sorted((p for p in phases if p.get("seconds") is not None),
                      key=lambda p: -(p["seconds"] - (p.get("budget_s") or 0)))[:3]
        parts.append(f"measuring took {report.elapsed_s:.0f} s, {report.elapsed_s - limit:.0f} s over max_seconds "
                     f"({limit:g} s): " + ", ".join(
                         f"{p['phase']} {p['seconds']:.1f} s" + (f" of its {p['budget_s']:.1f} s" if p.get("budget_s")
                                                                 else "") for p in over))
    if cut:
        parts.append("cut at their deadline (their rates are from what came in time): "
                     + ", ".join(cut))
    if skipped:
        parts.append("skipped: " + ", ".join(skipped))
    return "; ".join(parts) if parts else None


def _gpu_timed(tg):
    return tg.get("device_busy_from") == "CUDA events"


def _model_summary(tg):
    dev = "the GPU" if tg["device"].startswith("cuda") else "the training thread"
    if _gpu_timed(tg) and tg["wait_share"] >= LOADER_BOUND_WAIT_SHARE:
        return (f"with the loader feeding the model, {dev} was busy {pct(tg['device_busy_share'])} of the time "
                f"(CUDA events): training waits for the model, not for data ({rate(tg['img_s'])} img/s). The "
                f"training loop's {pct(tg['wait_share'])} in next() ({tg['wait_s']:.2f} s of {tg['seconds']:.2f} s) "
                "is the GPU's own time: the next batch's copy waits for a batch slot the GPU is still reading. "
                "Nothing to change in the loader.")
    return (f"with the loader feeding the model, the training loop waited in next() {pct(tg['wait_share'])} of "
            f"the time ({tg['wait_s']:.2f} s of {tg['seconds']:.2f} s, under {pct(LOADER_BOUND_WAIT_SHARE)}) "
            f"and {dev} was busy {pct(tg['device_busy_share'])}: training waits for the model, not for data "
            f"({rate(tg['img_s'])} img/s). Nothing to change in the loader.")


def first_epoch(report, train_rate):
    """What reading the file from a cold cache adds to the first epoch of a
    file that fits in memory (later epochs read it from the page cache),
    and its share of each schedule; None where every epoch reads from
    storage (the file does not fit, or is remote: the verdict covers it).
    The first epoch reads at the rate its cache reads cold: sample-sized
    reads through the OS cache for RANDOM, whole pages otherwise. For a
    Mixture, its local sources when they fit in memory together, each at
    its own storage's rate (remote sources are read every epoch)."""
    ds, st, s = report.dataset, report.storage, report.settings
    if st.get("sources") is not None:
        parts = [x for x in st["sources"] if not x["remote"]]
        if not parts or not ds.get("local_fits_in_memory"):
            return None
    elif ds["remote"] or not ds["fits_in_memory"]:
        return None
    else:
        parts = [dict(st, filesystem=ds.get("filesystem"), bytes=ds["bytes"], heap_bytes=ds["heap_bytes"])]
    fss = [x.get("filesystem") or {} for x in parts]
    epochs = s.get("epochs")
    schedules = sorted({int(epochs)} | set(SCHEDULES)) if epochs else list(SCHEDULES)
    out = {"network": any(fs.get("network") for fs in fss),
           "filesystem": ", ".join(dict.fromkeys(fs.get("type") for fs in fss if fs.get("type"))) or None,
           "schedules": schedules, "extra_s": None, "flagged": False}
    if st.get("sources") is not None:
        out["files"] = [f for x in parts for f in x["file_names"]]
    samples_via_os = s["os_cache"] and s["order"].upper() == "RANDOM"
    key = "cold_sample_mb_s" if samples_via_os else "cold_page_mb_s"
    read_s = nbytes = 0.0
    for x in parts:
        cold_rate = x.get(key) or (x.get("cold_page_mb_s") if samples_via_os else None)
        if not cold_rate or train_rate <= 0:
            return out  # not measured: the file was not dropped from the page cache
        # A source an epoch takes less than once of is read that much.
        part = min(1.0, x["per_epoch"] / x["samples"]) if x.get("per_epoch") and x.get("samples") else 1.0
        b = part * (x["heap_bytes"] if key == "cold_sample_mb_s" and x.get("heap_bytes") else x["bytes"])
        read_s += b / (cold_rate * 1e6)
        nbytes += b
    warm = ds.get("epoch_samples", ds["samples"]) / train_rate
    cold_epoch = max(warm, read_s)
    extra = cold_epoch - warm
    share = {str(e): extra / (e * warm + extra) for e in schedules}
    shortest = str(int(epochs)) if epochs else str(min(SCHEDULES))
    out.update(read_mb_s=nbytes / read_s / 1e6 if read_s else None,
               read_as="sample-sized reads" if key == "cold_sample_mb_s" else "whole pages",
               read_bytes=nbytes, warm_epoch_s=warm, cold_epoch_s=cold_epoch, extra_s=extra, schedule_share=share,
               flagged=share[shortest] >= FIRST_EPOCH_FLAG_SHARE)
    return out


def _first_epoch_advice(report, fe, recs, notes):
    ds = report.dataset
    where = f"{fe['filesystem']} (network) storage" if fe["network"] else "storage"
    if fe["extra_s"] is None:
        if fe["network"]:
            notes.append(f"the file is on {where}: the first epoch reads it from there, and short schedules pay "
                         f"that in full; its cold reads were not measured (the page cache was not evicted)")
        return
    if not fe["flagged"]:
        return
    shares = ", ".join(f"{pct(v)} of {k} epochs" for k, v in fe["schedule_share"].items())
    if fe.get("files"):
        files = fe["files"]
        path = " ".join(files[:4]) + (" ..." if len(files) > 4 else "")
        what = f"the mixture's local sources ({gib(fe['read_bytes'])} of them an epoch reads)"
    else:
        path = ds["path"] if isinstance(ds["path"], str) else "FILE"
        what = f"the file ({gib(ds['bytes'])})"
    recs.append(Recommendation(
        f"cat {path} > /dev/null  # before training (or copy the file to a local disk)", "storage",
        f"the first epoch reads {what} from a cold cache on {where} at "
        f"{fe['read_mb_s']:,.0f} MB/s ({fe['read_as']}): about {fe['cold_epoch_s']:.0f} s against "
        f"{fe['warm_epoch_s']:.0f} s for a warm epoch, +{fe['extra_s']:.0f} s: {shares} of training (FFCV's ImageNet "
        f"schedules run {SCHEDULES[0]} to {SCHEDULES[-1]} epochs). Later epochs read it from memory; one "
        f"sequential read beforehand, started while the job sets up, streams it at the storage's best rate"))


def _storage_recs(report, recs, notes, cold, cold_cur, cpu_rate, sample_bytes, mem):
    s, ds, st, ld = report.settings, report.dataset, report.storage, report.loader
    usable = mem.get("usable_memory")
    ps = ds["page_size"]
    where = (f"the file ({gib(ds['bytes'])}) is larger than the memory this process may use "
             f"({gib(usable)})" if not ds["remote"] else "every page comes over the network")
    report.summary = (f"{where}, so pages are read again and again; from a cold cache the loader "
                      f"delivers {rate(cold_cur['img_s'])} img/s with order={s['order'].upper()}, "
                      f"os_cache={s['os_cache']}, against {rate(cpu_rate)} img/s decoding from memory.")
    quasi = cold.get(("QUASI_RANDOM", False))
    rates = []
    if st.get("cold_page_mb_s"):
        rates.append(f"whole {ps // MiB} MiB pages read cold at {st['cold_page_mb_s']:,.0f} MB/s "
                     f"(= {st['cold_page_mb_s'] * 1e6 / sample_bytes:,.0f} img/s of {mb(sample_bytes)} samples)")
    if st.get("cold_sample_mb_s"):
        rates.append(f"sample-sized random reads at {st['cold_sample_mb_s']:,.0f} MB/s "
                     f"(= {st['cold_sample_mb_s'] * 1e6 / sample_bytes:,.0f} img/s)")
    quasi_rec = _quasi_rec(report, quasi, cold_cur, rates)
    if quasi_rec is not None:
        recs.append(quasi_rec)
    best_cold = max([c["img_s"] for c in cold.values()] + [0])
    big = _max_resolution(report)
    if best_cold < STORAGE_BOUND_SHARE * cpu_rate:
        if big is not None:
            recs.append(big)
        need = cpu_rate * sample_bytes / 1e6
        notes.append(f"to keep the workers busy the storage must deliver about {need:,.0f} MB/s "
                     f"({rate(cpu_rate)} img/s x {mb(sample_bytes)}): more memory (the file is "
                     f"{gib(ds['bytes'])}) or faster storage would remove the limit")
    if not st.get("evicted", True) and not ds["remote"]:
        notes.append("the file was not dropped from the page cache (another process has it open, or --evict "
                     "never): the cold runs started from the cache as found")


def _quasi_rec(report, quasi, cold_cur, rates):
    """QUASI_RANDOM with the process cache, sized to the memory, unless
    that is the setting diagnosed; with its rate from a cold cache."""
    s, ld, ps = report.settings, report.loader, report.dataset["page_size"]
    if (s["order"].upper(), s["os_cache"]) == ("QUASI_RANDOM", False):
        return None
    window = ld.get("quasi_window")
    setting = "os_cache=False, order=OrderOption.QUASI_RANDOM"
    if window:
        setting += f", order_kwargs={{'window_pages': {window['window_pages']}}}, " \
                   f"max_resident_pages={window['max_resident_pages']}"
    why = ("QUASI_RANDOM visits the samples of a few pages at a time and the process cache reads each page once "
           "per epoch")
    if quasi is not None and cold_cur is not None:
        why += (f": measured from a cold cache, {rate(quasi['img_s'])} img/s against "
                f"{rate(cold_cur['img_s'])} img/s now ({quasi['img_s'] / max(cold_cur['img_s'], 1e-9):.1f}x)")
    if rates:
        why += "; " + ", ".join(rates)
    if window:
        why += (f"; {window['max_resident_pages']} resident pages of {ps // MiB} MiB "
                f"({gib(window['max_resident_pages'] * ps)}) keep the process cache within a third of the "
                f"usable memory")
    return Recommendation(f"Loader(..., {setting})", "Loader", why)


# ---- a Mixture ----------------------------------------------------------------------

def source_rates(report):
    """Each source of a Mixture's storage with what its storage allows:
    ``mb_s`` and ``img_s`` (its samples per second: at its mean sample
    size for sample-sized reads, at its pages' bytes per sample for whole
    pages), from reads of the kind the loader makes of it (pages fetched for
    a remote source; for a local one, sample-sized reads for RANDOM through
    the OS cache, whole pages otherwise, cold where it was dropped from the
    page cache); ``epoch_img_s``, img_s over its share of the epoch: the
    epoch rate the mixture can reach while that source keeps up (a source
    that gives 10% of the samples at a tenth of the speed allows what the
    whole epoch at full speed does); ``every_epoch``, whether every epoch
    reads it from storage (remote, or the local sources together do not
    fit in memory). Returns the sources, these keys added."""
    s, ds = report.settings, report.dataset
    samples_via_os = s["os_cache"] and s["order"].upper() == "RANDOM"
    fits = ds.get("local_fits_in_memory", ds["fits_in_memory"])
    for x in report.storage["sources"]:
        if x["remote"]:
            mb_s, how = x.get("fetch_mb_s"), "pages fetched"
            if not mb_s and x.get("fetch_mb_s_at_most"):
                # No page arrived in its time: its rate is at most this, and
                # may limit at that bound already.
                mb_s, how = x["fetch_mb_s_at_most"], "pages fetched; an upper bound: no page arrived in time"
        else:
            pre, when = ("cold_", " cold") if x.get("evicted") else ("", ", as found in the page cache")
            kind = "sample" if samples_via_os and x.get(f"{pre}sample_mb_s") else "page"
            mb_s = x.get(f"{pre}{kind}_mb_s")
            how = ("sample-sized reads" if kind == "sample" else "whole pages read") + when
        per = x["mean_sample_bytes"] if "sample-sized" in how else x.get("page_bytes_per_sample") or \
            x["mean_sample_bytes"]
        img = mb_s * 1e6 / max(per, 1.0) if mb_s else None
        x.update(mb_s=mb_s, read_as=how, img_s=img, epoch_img_s=img / x["share"] if img and x["share"] else None,
                 every_epoch=bool(x["remote"] or not fits), at_most="upper bound" in how)
    return report.storage["sources"]


def cold_words(c, s, slow=None):
    """The cold run of the setting diagnosed, in words that relate it to
    the storage rates beside it: a short run from a cold cache starts with
    whole pages read (or fetched) before any of their samples, so its rate
    is mostly that wait, not the epoch's steady rate."""
    if c is None:
        return ""
    how = f"order={s['order'].upper()}, os_cache={s['os_cache']}"
    run = c.get("run_s") or c.get("seconds") or 0.0
    if not c.get("img_s"):
        return (f" From a cold cache ({how}) no batch came in the {run:.1f} s the run had: its first pages had not "
                f"arrived.")
    text = f" From a cold cache the loader delivered {rate(c['img_s'])} img/s with {how}"
    first = c.get("first_batch_s")
    if first is not None and run and first >= 0.25 * run:
        text += (f", in a run of {run:.1f} s whose first batch came after {first:.1f} s: a short run from a cold "
                 f"cache is mostly the wait for the first pages (read or fetched whole before any of their samples), "
                 f"so this is a cold start's rate, not an epoch's")
    if slow is not None and slow.get("epoch_img_s"):
        text += (f"; the epoch rate {slow['name']!r} allows once its pages stream is {rate(slow['epoch_img_s'])} img/s "
                 f"(its own {rate(slow['img_s'])} img/s over its {pct(slow['share'])} of the epoch)")
    return text + "."


def _source_where(x):
    if x["remote"]:
        return f"remote, {x['path']}"
    fs = x.get("filesystem") or {}
    return f"{fs.get('type', 'a local file')} at {fs.get('mount', '?')}" + (", network" if fs.get("network") else "")


def _mixture_storage_recs(report, recs, notes, slow, cold, cold_cur, cpu_rate):
    """The storage verdict of a Mixture: the source that limits it (slow,
    the lowest epoch_img_s of the sources read every epoch) and its fix."""
    s, ds = report.settings, report.dataset
    now = cold_words(cold_cur, s, slow)
    quasi_cold = cold.get(("QUASI_RANDOM", False))
    quasi = _quasi_rec(report, quasi_cold, cold_cur, [])
    if quasi_cold is not None and cold_cur is not None and quasi_cold["img_s"] < QUASI_RANDOM_GAIN * cold_cur["img_s"]:
        quasi = None  # measured no faster here
    if slow is None:
        where = ("its local sources (together " + gib(ds["local_bytes"]) + ") are larger than the memory this "
                 "process may use" if not ds.get("local_fits_in_memory") else "remote sources are fetched")
        report.summary = (f"{where}, so their pages are read from storage every epoch, and the loader falls short "
                          f"of the {rate(cpu_rate)} img/s it decodes from memory; no source's storage rate was "
                          f"measured to name the one that limits.{now}")
        if quasi is not None:
            recs.append(quasi)
        return
    report.summary = (f"source {slow['name']!r} limits the mixture: it makes {pct(slow['share'])} of every epoch, and "
                      f"its storage ({_source_where(slow)}) delivers {'at most ' if slow.get('at_most') else ''}"
                      f"{rate(slow['img_s'])} img/s of its samples "
                      f"({slow['mb_s']:,.1f} MB/s, {slow['read_as']}), so an epoch can go no faster than "
                      f"{rate(slow['epoch_img_s'])} img/s, against {rate(cpu_rate)} img/s decoding from memory.{now}")
    per_sample = slow["mb_s"] * 1e6 / slow["img_s"]
    need = cpu_rate * slow["share"] * per_sample / 1e6
    fs = slow.get("filesystem") or {}
    if slow["remote"] or fs.get("network"):
        recs.append(_local_copy(report, slow, need, cpu_rate, per_sample))
        inflight = _in_flight(slow, cold_cur) if slow["remote"] else None
        if inflight is not None:
            recs.append(inflight)
        if quasi is not None:
            recs.append(quasi)
    else:
        if quasi is not None:
            recs.append(quasi)
        notes.append(f"to keep the workers busy, {slow['name']!r} must deliver about {need:,.1f} MB/s "
                     f"({rate(cpu_rate)} img/s x {pct(slow['share'])} x {mb(per_sample)}): more memory (the local "
                     f"sources are {gib(ds['local_bytes'])}) or faster storage would remove the limit")
    others = [x for x in report.storage["sources"] if x is not slow and x["every_epoch"] and x.get("epoch_img_s")
              and x["epoch_img_s"] < STORAGE_BOUND_SHARE * cpu_rate]
    if others:
        notes.append("also below the decoding rate at their shares: " + ", ".join(
            f"{x['name']!r} ({rate(x['epoch_img_s'])} img/s)" for x in sorted(others, key=lambda x: x["epoch_img_s"])))
    notes.append(f"a lower weight for {slow['name']!r} (now {pct(slow['share'])} of every epoch) would lift the limit "
                 f"too, but changes what the model trains on")
    if any(not x["remote"] and not x.get("evicted", True) for x in report.storage["sources"]):
        notes.append("some local sources were not dropped from the page cache (another process has them open, or "
                     "--evict never): their rates were measured from the cache as found")


def _local_copy(report, x, need, cpu_rate, per_sample):
    """A local copy of a remote (or network-mounted) source: the command and
    the Source to give instead."""
    ds, usable = report.dataset, report.machine.get("usable_memory")
    files = x["file_names"]
    base = files[0].rstrip("/").rsplit("/", 1)[-1].split("?")[0]
    if len(files) == 1:
        local = f"LOCAL_DISK/{base}"
        cmd = (f"aws s3 cp {files[0]} {local}" if files[0].startswith("s3://") else
               f"curl -o {local} {files[0]}" if x["remote"] else f"cp {files[0]} {local}")
    else:
        local = f"LOCAL_DISK/{x['name']}/"
        prefix = files[0][:len(os.path.commonprefix(files))].rsplit("/", 1)[0] + "/"
        cmd = (f"aws s3 cp --recursive {prefix} {local}" if files[0].startswith("s3://") else
               f"wget -P {local} {' '.join(files[:2])}{' ...' if len(files) > 2 else ''}" if x["remote"] else
               f"cp {' '.join(files[:2])}{' ...' if len(files) > 2 else ''} {local}")
    src = "over the network" if x["remote"] else f"from {(x.get('filesystem') or {}).get('type')} network storage"
    why = (f"its pages come {src} every epoch at {x['mb_s']:,.1f} MB/s ({x['read_as']})"
           + ("; the loader keeps no remote page from one epoch to the next" if x["remote"] else "")
           + f". At {pct(x['share'])} of the epoch it must deliver about {need:,.1f} MB/s to keep the workers busy "
             f"({rate(cpu_rate)} img/s x {pct(x['share'])} x {mb(per_sample)}). A copy on a local disk "
             f"({gib(x['bytes'])}) reads at the disk's rate")
    if usable:
        together = ds["local_bytes"] + (x["bytes"] if x["remote"] else 0)
        fits = fits_in_memory(together, usable) if x["remote"] else ds.get("local_fits_in_memory")
        if fits:
            why += (f", and from the page cache after the first epoch: with it the local sources take "
                    f"{gib(together)} of the {gib(usable)} this process may use")
        else:
            why += (f"; with it the local sources ({gib(together)}) would not fit in the {gib(usable)} this process "
                    f"may use: read them with QUASI_RANDOM and the process cache")
    return Recommendation(f"Source('{local}', ...)  # {cmd}", "storage", why)


def _in_flight(x, cold_cur):
    """More requests in flight for a remote source with more pages than the
    default allows in flight, from its page requests' mean time in the cold
    run."""
    pages = math.ceil(x["bytes"] / max(x["page_size"], 1))
    got = next((c for c in (cold_cur or {}).get("sources") or [] if c["name"] == x["name"]), None)
    if pages <= REMOTE_IN_FLIGHT_DEFAULT or got is None or not got["pages_read"] or not got["read_ns"]:
        return None
    each = got["read_ns"] / got["pages_read"] / 1e9
    return Recommendation(
        f"FFCV_GO_REMOTE_IN_FLIGHT={2 * REMOTE_IN_FLIGHT_DEFAULT}  # in the environment, before the loader opens "
        f"{x['name']!r}", "storage",
        f"a page request to {x['name']!r} took {each:.2f} s on average ({got['read_mb_s']:,.1f} MB/s each), with at "
        f"most {REMOTE_IN_FLIGHT_DEFAULT} in flight per file; where that time is the server's latency rather than "
        f"its bandwidth, twice as many requests in flight fetch its {pages} pages up to twice as fast")


def _round_up(x, step):
    return int(math.ceil(x / step) * step)


def _max_resolution(report):
    """A max_resolution recommendation when the stored images are much
    larger than the pipeline's crops, with what it changes for the model."""
    ds, ld, facts = report.dataset, report.loader, report.loader.get("pipeline_facts", {})
    im, out = ds.get("images"), facts.get("output_size")
    if not im or not out:
        return None
    side = max(out)
    target = _round_up(side * RECIPE_MAX_RESOLUTION / RECIPE_TRAIN_RES, 16)
    stored_long = max(im["median_width"], im["median_height"])
    keep = (target / stored_long) ** 2
    if keep > MAX_RES_KEEP_PIXELS:
        return None
    share = ld.get("stages", {}).get("share", {})
    dec = share.get("entropy_decode", 0) + share.get("idct_resize", 0)
    why = (f"stored images are {im['median_width']}x{im['median_height']} px (median), {mb(ds['mean_sample_bytes'])} "
           f"each, for {out[1]}x{out[0]} crops")
    if dec:
        why += f"; decoding takes {pct(dec)} of the workers' time"
    why += (f". Rewritten with max_resolution={target} (longer side), an image has about {pct(keep)} of "
            f"the pixels and bytes (estimated): entropy decoding and the file shrink about as much. ")
    recipe = (f"FFCV's ImageNet recipes (github.com/libffcv/ffcv-imagenet) store images at most "
              f"{RECIPE_MAX_RESOLUTION} px (ResNet-18) or 500 px (ResNet-50) on the longer side for training "
              f"crops of 160 to {RECIPE_TRAIN_RES} px; {target} keeps the smallest of those margins "
              f"({RECIPE_MAX_RESOLUTION / RECIPE_TRAIN_RES:.1f}x the crop)")
    if facts.get("random_crop"):
        tight = _round_up(side * 256 / 224, 32)
        why += (f"It changes what the model sees: a random-resized crop scales a part of the stored image (down "
                f"to 8% of its area) to {side} px, so from a smaller stored image small crops are upscaled from "
                f"fewer pixels and lose detail. {recipe}. max_resolution={tight} (the crop x 256/224) would keep "
                f"about {pct((tight / stored_long) ** 2)} of the pixels and decode faster still, at the cost of "
                f"that detail: compare accuracy before going below {target}")
    else:
        why += f"The model then sees the same crops from fewer stored pixels. {recipe}"
    return Recommendation(f"DatasetWriter(..., {{'{im['field']}': RGBImageField(max_resolution={target}, ...)}})"
                          f"  # or ffcv-go convert --max-resolution {target}", "DatasetWriter", why)


def _dominant_op(report):
    """A recommendation naming the operation after the decoder that takes
    the largest share of the operations' time, when it dominates."""
    ops = [o for o in report.loader.get("ops") or [] if not o.get("decoder")]
    if not ops:
        return None
    top = max(ops, key=lambda o: o["share"])
    if top["share"] < DOMINANT_OP_SHARE:
        return None
    where = ("in the loader's Python thread" if top["where"] == "python" else "in the Go workers")
    name = op_name(top, report.loader["ops"])
    return Recommendation(
        f"pipeline: {name}, {top['ms_per_image']:.2f} ms per image", "pipeline",
        f"{name} takes {pct(top['share'])} of the time spent in the pipeline's operations, {where}: the most of "
        f"any operation after the decoder. A cheaper setting of it (a smaller kernel or magnitude, a lower "
        f"probability) or applying it to fewer samples raises the loader's rate the most")


def _cpu_recs(report, recs, notes):
    ld, mem = report.loader, report.machine
    cur, best = ld["current"], ld["best"]
    cores = mem["cores"]
    stages = ld.get("stages", {}).get("ms_per_image", {})
    report.summary = (f"the workers decode {rate(cur['img_s'])} img/s with num_workers={cur['workers']}, "
                      f"{cur['cpu_ms_per_image']:.2f} ms of CPU per image, {cur['cores_busy']:.1f} of "
                      f"{cores} usable cores busy.")
    gain = MORE_WORKERS_GAIN if best["workers"] > cur["workers"] else FEWER_WORKERS_GAIN
    if cur["workers"] > cores:
        recs.append(Recommendation(f"Loader(..., num_workers={cores})", "Loader",
                                   f"{cur['workers']} workers on {cores} usable cores oversubscribe them: "
                                   f"{cores} workers deliver {rate(_at(ld, cores))} img/s against "
                                   f"{rate(cur['img_s'])}"))
    elif best["workers"] != cur["workers"] and best["img_s"] > gain * cur["img_s"]:
        idle = cores - cur["cores_busy"] if cur["cores_busy"] is not None else None
        recs.append(Recommendation(f"Loader(..., num_workers={best['workers']})", "Loader",
                                   f"{rate(best['img_s'])} img/s with {workers(best['workers'])} against "
                                   f"{rate(cur['img_s'])} with {cur['workers']}"
                                   + (f"; {idle:.1f} of {cores} cores are idle now" if idle and idle > 0.3 else "")))
    op = _dominant_op(report)
    if op is not None:
        recs.append(op)
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
        notes.append(f"no setting measured here decodes faster ({cur['cores_busy']:.1f} of {cores} usable cores "
                     f"busy with num_workers={cur['workers']}): this is the machine's rate for this pipeline")


def _at(ld, n):
    return next((p["img_s"] for p in ld["scan"] if p["workers"] == n), None)
