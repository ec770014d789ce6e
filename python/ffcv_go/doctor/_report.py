"""Reporting: the report's data (``Report``, ``Recommendation``), and its
three forms: the terminal text, JSON and a figure. Nothing here measures or
decides."""
import json
import os
from dataclasses import asdict, dataclass, field

from ._measure import STAGE_LABELS

MiB = 1 << 20

# Operations below this share of the operations' time are left out of the
# terminal report (layout ops on tensors, for one); JSON has them all.
SHOWN_OP_SHARE = 0.01


@dataclass
class Recommendation:
    """One setting to change: the code to write, what it changes (``target``:
    "Loader", "DatasetWriter", "pipeline", "model" or "storage") and why,
    with the measurements behind it."""
    setting: str
    target: str
    why: str


@dataclass
class Report:
    """What ``diagnose`` measured and decided. ``to_dict()`` is the JSON of
    ``--json``; ``format()`` the terminal report; ``plot(path)`` the figure.

    ``model`` is the model alone (or ``{"error": ...}`` when it could not
    train); ``together`` the loader feeding the model as training does: its
    ``wait_share`` (the time the training loop waited in ``next()``) and
    ``device_busy_share`` decide between the model and the loader.
    ``first_epoch`` is what a first epoch from a cold cache adds to
    ``schedules`` of epochs."""
    data: str
    settings: dict
    machine: dict
    dataset: dict
    storage: dict
    loader: dict
    model: dict = None
    together: dict = None
    first_epoch: dict = None
    bottleneck: str = "none"
    summary: str = ""
    recommendations: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    elapsed_s: float = 0.0
    phases: list = field(default_factory=list)

    def to_dict(self):
        return asdict(self)

    def to_json(self, indent=2):
        return json.dumps(self.to_dict(), indent=indent)

    def format(self):
        return format_text(self)

    def plot(self, path):
        """Writes a PNG of images/s against workers, with the storage rates,
        the model's rate alone and with the loader drawn across."""
        plot(self, path)


# ---- numbers in words -------------------------------------------------------------

def ratio(x):
    return f"{x:.1f}x" if x < 10 else f"{x:,.0f}x"


def rate(x):
    return "-" if x is None else f"{x:,.0f}"


def mb(x):
    return f"{x / 1e6:,.0f} MB" if x >= 1e6 else f"{x / 1e3:,.0f} kB"


def gib(x):
    return "?" if x is None else f"{x / 2**30:.1f} GiB" if x >= 2**30 else f"{x / MiB:.0f} MiB"


def pct(x):
    return f"{100 * x:.0f}%"


def op_name(o, ops):
    """An operation's name, with its output's where several outputs (views)
    have one of that name."""
    outputs = {x["output"] for x in ops if x["op"] == o["op"]}
    return o["op"] + (f" ({o['output']})" if len(outputs) > 1 else "")


def workers(n):
    return f"{n} worker" + ("s" if n != 1 else "")


# ---- the terminal report -----------------------------------------------------------

def format_text(r):
    lines = []
    m, ds, st, ld, s = r.machine, r.dataset, r.storage, r.loader, r.settings
    lines.append(f"ffcv-go doctor: {r.data}")
    cg = f", cgroup limit {gib(m['cgroup_memory_limit'])}" if m.get("cgroup_memory_limit") else ""
    lines.append(f"  machine   {m['cores']} usable cores ({m.get('cpu', '?')}), {gib(m.get('memory_total'))} memory, "
                 f"{gib(m['usable_memory'])} usable{cg}")
    im = ds.get("images")
    imtxt = (f"; images '{im['field']}' {100 * im['jpeg_fraction']:.0f}% JPEG, median "
             f"{im['median_width']}x{im['median_height']}") if im else ""
    if ds.get("sources"):
        lines.append(f"  dataset   a mixture of {len(ds['sources'])} sources: {ds['samples']:,} samples, "
                     f"{ds['epoch_samples']:,} an epoch, {gib(ds['bytes'])}, {mb(ds['mean_sample_bytes'])} per sample "
                     f"of an epoch{imtxt}")
    else:
        lines.append(f"  dataset   {ds['samples']:,} samples, {gib(ds['bytes'])} ({ds['page_size'] // MiB} MiB pages), "
                     f"{mb(ds['mean_sample_bytes'])} per sample{imtxt}")
    lines.append("")
    lines += _storage_lines(r)
    lines.append("")
    lines += _loader_lines(r)
    if r.model or r.together:
        lines.append("")
        lines += _model_lines(r)
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


def mb_s(x):
    """A rate in MB/s, with a decimal below 10."""
    return f"{x:,.1f}" if x < 10 else f"{x:,.0f}"


def _storage_lines(r):
    ds, st, m = r.dataset, r.storage, r.machine
    if st.get("sources") is not None:
        return _mixture_storage_lines(r) + _first_epoch_lines(r)
    sb = ds["mean_sample_bytes"] or 1
    fs = ds.get("filesystem") or {}
    where = f" ({fs['type']} at {fs['mount']}{', network' if fs.get('network') else ''})" if fs else ""
    lines = [f"storage{where}"]
    if st.get("kind") == "remote":
        if st.get("fetch_mb_s"):
            lines.append(f"  fetch               {st['fetch_mb_s']:8,.0f} MB/s = {st['fetch_mb_s'] * 1e6 / sb:9,.0f} img/s")
        elif st.get("note"):
            lines.append(f"  {st['note']}")
    else:
        ps = ds["page_size"] // MiB
        for key, label in (("cold_page_mb_s", f"cold {ps} MiB pages"), ("cold_sample_mb_s", "cold sample reads"),
                           ("page_mb_s", f"{ps} MiB pages"), ("sample_mb_s", "sample reads"),
                           ("warm_mb_s", "warm reads")):
            if st.get(key):
                lines.append(f"  {label:<20}{st[key]:8,.0f} MB/s = {st[key] * 1e6 / sb:9,.0f} img/s")
        if "evicted" in st:
            lines.append("  page cache          " + _eviction(st))
        lines.append(f"  file vs memory      {gib(ds['bytes'])} of {gib(m['usable_memory'])} usable: "
                     f"{'fits' if ds['fits_in_memory'] else 'does not fit (it would need 25% to spare)'}")
    return lines + _first_epoch_lines(r)


def _first_epoch_lines(r):
    fe = r.first_epoch
    if not fe or fe.get("extra_s") is None:
        return []
    shares = ", ".join(f"{pct(v)} of {k} epochs" for k, v in fe["schedule_share"].items())
    return [f"  first epoch         {fe['cold_epoch_s']:.1f} s from a cold cache against "
            f"{fe['warm_epoch_s']:.1f} s warm: +{fe['extra_s']:.1f} s ({shares})"]


def _mixture_storage_lines(r):
    """A Mixture's storage, source by source: where it lives, its share of
    every epoch, its read rates and the epoch rate it allows at its share."""
    ds, st, m = r.dataset, r.storage, r.machine
    lines = [f"storage, by source (a mixture of {len(st['sources'])}; rates in MB/s and in img/s of the source's "
             f"samples)"]
    for x in st["sources"]:
        sb = x["mean_sample_bytes"] or 1
        pb = x.get("page_bytes_per_sample") or sb  # what a whole page carries per sample
        if x["remote"]:
            where = f"remote, {x['path']}"
        else:
            fs = x.get("filesystem") or {}
            where = (f"{fs['type']} at {fs['mount']}{', network' if fs.get('network') else ''}" if fs else "local") \
                + ("; fits in memory" if x["fits_in_memory"] else "; does not fit in memory")
        mark = "  <- limits the mixture" if st.get("limiting_source") == x["name"] else ""
        lines.append(f"  {x['name']}: {pct(x['share'])} of every epoch ({x['per_epoch']:,} samples of its "
                     f"{x['samples']:,}), {gib(x['bytes'])}, {where}{mark}")
        ps = x["page_size"] // MiB
        for key, label in (("fetch_mb_s", "fetch"), ("cold_page_mb_s", f"cold {ps} MiB pages"),
                           ("cold_sample_mb_s", "cold sample reads"), ("page_mb_s", f"{ps} MiB pages"),
                           ("sample_mb_s", "sample reads"), ("warm_mb_s", "warm reads")):
            if x.get(key):
                per = sb if "sample" in key else pb
                lines.append(f"    {label:<18}{mb_s(x[key]):>8} MB/s = {x[key] * 1e6 / per:9,.0f} img/s")
        if x.get("note"):
            lines.append(f"    {x['note']}")
        if x.get("epoch_img_s"):
            when = "read every epoch" if x.get("every_epoch") else "read once, in the first epoch"
            lines.append(f"    at its share      the epoch can reach {x['epoch_img_s']:,.0f} img/s ({x['read_as']}; "
                         f"{when})")
        if not x["remote"] and "evicted" in x:
            lines.append("    page cache        " + _eviction(x))
    if any(not x["remote"] for x in st["sources"]):
        fit = ds.get("local_fits_in_memory")
        lines.append(f"  local sources together: {gib(ds['local_bytes'])} of {gib(m['usable_memory'])} usable: "
                     f"{'fit' if fit else 'do not fit (they would need 25% to spare)'}")
    return lines


def _eviction(st):
    h = st.get("holders") or {}
    others = h.get("pids") or []
    if st["evicted"]:
        why = "--evict always" if st.get("evict") is True else "no other process has the file open"
        return f"the file was dropped from it to read it cold ({why})"
    if st.get("evict") is False:
        return "not evicted (--evict never): reads measured from the cache as found"
    pids = ", ".join(map(str, others[:8])) + (" ..." if len(others) > 8 else "")
    return (f"not evicted: {len(others)} other process{'es' if len(others) != 1 else ''} ({pids}) "
            f"{'have' if len(others) != 1 else 'has'} the file open; reads measured from the cache as found "
            f"(--evict always to drop it anyway)")


def _loader_lines(r):
    ld, s = r.loader, r.settings
    if ld.get("scan_sources") is not None:
        inmem = ld.get("in_memory_share")
        scope = (f"sources {', '.join(ld['scan_sources'])}: {ld.get('subset_samples', 0):,} samples an epoch"
                 + (f", {pct(inmem)} of the local sources' bytes read into memory first" if inmem is not None else ""))
    else:
        scope = f"{ld.get('subset_samples', 0):,} samples in memory"
    lines = [f"loader  ({s['pipeline']} pipeline, batch {s['batch_size']}, order {s['order'].upper()}, "
             f"os_cache={s['os_cache']}; {scope})",
             "  workers     img/s   CPU ms/img   cores busy"]
    for p in ld.get("scan", []):
        mark = "  <- num_workers" if p["workers"] == s["num_workers"] else ""
        lines.append(f"  {p['workers']:7d} {p['img_s']:9,.0f} {p['cpu_ms_per_image'] or 0:12.2f} "
                     f"{p['cores_busy'] or 0:12.1f}{mark}")
    if ld.get("first_batch_s") is not None:
        lines.append(f"  first batch after {ld['first_batch_s']:.2f} s")
    stg = ld.get("stages", {})
    if stg.get("ms_per_image"):
        parts = [f"{STAGE_LABELS[k]} {v:.2f} ms ({pct(stg['share'][k])})" for k, v in stg["ms_per_image"].items()]
        lines.append("  worker time per image: " + ", ".join(parts))
    ops = sorted((o for o in ld.get("ops") or [] if o["share"] >= SHOWN_OP_SHARE), key=lambda o: -o["share"])
    if ops:
        parts = [f"{op_name(o, ld['ops'])}{' [Python]' if o['where'] == 'python' else ''}"
                 f" {o['ms_per_image']:.2f} ms ({pct(o['share'])})" for o in ops[:6]]
        lines.append("  operations per image: " + ", ".join(parts) + (", ..." if len(ops) > 6 else ""))
    for c in ld.get("cold", []):
        run = c.get("run_s")
        first = (f", first batch after {c['first_batch_s']:.1f} s" if c.get("first_batch_s") is not None else
                 ", no batch" if c.get("cut") else "")
        lines.append(f"  from a cold cache, {c['order']}, os_cache={c['os_cache']}: {c['img_s']:,.0f} img/s "
                     f"({c['pages_read'] or 0} pages read by the process cache"
                     + (f"; a run of {run:.1f} s{first}" if run else "")
                     + ("; cut at its deadline" if c.get("cut") else "") + ")")
        if c.get("sources"):
            lines.append("    by source (its last epoch): " + "; ".join(_source_run(x) for x in c["sources"]))
    return lines


def _source_run(x):
    """One source's counters in a loader run of a Mixture."""
    parts = [f"{x['samples']:,} samples", f"{x['pages_read']} page{'s' if x['pages_read'] != 1 else ''} read"]
    if x.get("read_mb_s"):
        parts.append(f"{mb_s(x['read_mb_s'])} MB/s a read")
    if x.get("requests"):
        parts.append(f"{x['requests']} request{'s' if x['requests'] != 1 else ''}, {mb(x['bytes_fetched'])} fetched")
    return f"{x['name']} " + ", ".join(parts)


def _model_lines(r):
    md, tg = r.model or {}, r.together
    name = md.get("name") or (tg or {}).get("name")
    lines = []
    if md.get("error"):
        lines.append(f"model  {name} on {md['device']}: could not train: {md['error']}")
        if md.get("advice"):
            lines.append(f"  {md['advice']}")
        return lines
    if md.get("img_s") is not None:
        kind = f" ({md['kind']})" if md.get("kind") else ""
        lines.append(f"model  {name}{kind} on {md['device']}, batch {md['batch_size']}, "
                     f"{'AMP' if md['amp'] else 'fp32'}: alone {md['steps_s']:.2f} steps/s = {md['img_s']:,.0f} img/s")
    if tg:
        dev = "GPU" if tg["device"].startswith("cuda") else "the training thread"
        lines.append(f"  with the loader ({workers(tg['workers'])}): {tg['img_s']:,.0f} img/s over {tg['steps']} steps; "
                     f"the training loop waited in next() {tg['wait_s']:.2f} s of {tg['seconds']:.2f} s "
                     f"({pct(tg['wait_share'])}); {dev} busy {pct(tg['device_busy_share'])}, idle "
                     f"{pct(1 - tg['device_busy_share'])}")
        if tg.get("targets"):
            lines.append(f"  detection targets: {tg['targets']}")
    return lines


# ---- the figure ---------------------------------------------------------------------

def plot(r, path):
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
                              ("page_mb_s", "storage: page reads (not evicted)", "--"),
                              ("fetch_mb_s", "storage: fetch", "--")):
        if st.get(key):
            lines.append((st[key] * 1e6 / sb, label, style, "C3"))
    for k, x in enumerate(st.get("sources") or []):  # a Mixture: the epoch rate each source allows at its share
        if x.get("epoch_img_s"):
            lines.append((x["epoch_img_s"], f"storage: {x['name']} at {pct(x['share'])} of the epoch",
                          "--" if x.get("every_epoch") else ":", f"C{(3 + k) % 10}"))
    if r.model and r.model.get("img_s"):
        lines.append((r.model["img_s"], f"model alone: {r.model['name']} ({r.model['device']})", "-", "C2"))
    for y, label, style, color in lines:
        ax.axhline(y, linestyle=style, color=color, label=f"{label}: {y:,.0f} img/s")
    pts = []
    for k, c in enumerate(ld.get("cold", [])):
        x = c["workers"] * (1 + 0.04 * (k - 0.5))
        ax.plot([x], [c["img_s"]], "s", color=f"C{4 + k}",
                label=f"loader from cold: {c['order']}, os_cache={c['os_cache']}: {c['img_s']:,.0f} img/s")
        pts.append(c["img_s"])
    tg = r.together
    if tg:
        ax.plot([tg["workers"]], [tg["img_s"]], "D", color="C6", markersize=8,
                label=f"training (loader + model): {tg['img_s']:,.0f} img/s, waited {pct(tg['wait_share'])}")
        pts.append(tg["img_s"])
    ys = [p["img_s"] for p in scan] + pts + [y for y, *_ in lines]
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
    name = f"a mixture of {len(ds['sources'])} sources" if ds.get("sources") else os.path.basename(str(r.data))
    ax.set_title(f"{name} ({fits}): bottleneck {r.bottleneck.upper()}")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2, frameon=False)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
