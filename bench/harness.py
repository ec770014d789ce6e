"""ImageNet-style loading benchmark: ffcv_go vs torch DataLoader vs FFCV 1.0, in one process.

Same pipeline everywhere: random-resized crop to (res, res), random horizontal
flip, uint8 NCHW batches and int64 labels.

  ffcv_go     ImageFolder -> .beton (DatasetWriter.from_image_folder when it
              exists, else from_indexed_dataset over torchvision's ImageFolder),
              then Loader with [RandomResizedCropRGBImageDecoder((res, res)),
              RandomHorizontalFlip(), ToTensor(), ToTorchImage()] and
              [IntDecoder(), ToTensor(), Squeeze()].
  DataLoader  torchvision ImageFolder + RandomResizedCrop + RandomHorizontalFlip
              + PILToTensor, num_workers=workers, persistent workers; it
              decodes the original JPEGs (FFCV's comparison setting).
  FFCV 1.0    the same as ffcv_go through `ffcv`, when `import ffcv` works.

Reported: write time, time to first batch (from the loader's constructor),
img/s of every epoch (from iter()), best and mean, peak RSS and PSS of the
process tree (DataLoader workers included, read from /proc), CPU seconds of
the process tree, and ffcv_go's throughput as a fraction of a limit: cores x
the single-core rate of (region decode + resize), which the harness measures
by running the ffcv_go Loader with num_workers=1 over a subset of the file.

    PYTHONPATH=python .venv/bin/python bench/harness.py --data bench/data/imagenet-like --num-images 10000
"""
import argparse
import datetime
import gc
import json
import os
import platform
import subprocess
import sys
import threading
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
if os.path.join(REPO, "python") not in sys.path:
    sys.path.insert(0, os.path.join(REPO, "python"))

PAGE = os.sysconf("SC_PAGE_SIZE")
TICK = os.sysconf("SC_CLK_TCK")
MiB = 1 << 20


def cpu_count():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def log(msg):
    print(f"[harness {time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ---- a loopback HTTP range server -----------------------------------------------------------

def range_server(root, latency=0.0):
    """A server on 127.0.0.1 of root's files with byte ranges (HTTP/1.1, 206
    responses, a thread per connection), each response held back latency
    seconds; the caller runs its serve_forever. Its port: server_address[1]."""
    import http.server
    from pathlib import Path

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_GET(self):
            path = Path(root) / self.path.lstrip("/")
            if not path.is_file():
                self.send_error(404)
                return
            size = path.stat().st_size
            a, b = self.headers.get("Range", f"bytes=0-{size - 1}")[len("bytes="):].split("-")
            a, b = int(a), min(int(b), size - 1)
            if latency:
                time.sleep(latency)
            with open(path, "rb") as f:
                f.seek(a)
                data = f.read(b - a + 1)
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {a}-{b}/{size}")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    return srv


# ---- process-tree memory and CPU from /proc ----------------------------------------------------


def _children(pid):
    out = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/children") as f:
                    out += [int(x) for x in f.read().split()]
            except OSError:
                pass
    except OSError:
        pass
    return out


def process_tree(root=None):
    """root and all its descendants (live ones)."""
    root = os.getpid() if root is None else root
    pids, todo = [], [root]
    while todo:
        p = todo.pop()
        pids.append(p)
        todo += _children(p)
    return pids


def _rss(pid):
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * PAGE
    except (OSError, IndexError, ValueError):
        return 0


def _pss(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, IndexError, ValueError):
        pass
    return 0


def _cpu_ticks(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            s = f.read()
        fields = s[s.rindex(")") + 2:].split()
        return int(fields[11]) + int(fields[12])  # utime + stime
    except (OSError, IndexError, ValueError):
        return None


class TreeMonitor:
    """Samples the RSS (every interval) and PSS (every pss_every samples) of the
    process tree, and the CPU time of each process, in a background thread."""

    def __init__(self, interval=0.05, pss_every=10):
        self.interval, self.pss_every = interval, pss_every
        self.lock = threading.Lock()
        self.cpu = {}          # pid -> latest utime+stime ticks
        self.peak_rss = self.peak_pss = 0
        self._stop = threading.Event()
        self._k = 0
        self._sample()
        self.thread = threading.Thread(target=self._run, name="tree-monitor", daemon=True)
        self.thread.start()

    def _sample(self):
        pids = process_tree()
        rss = sum(_rss(p) for p in pids)
        pss = sum(_pss(p) for p in pids) if self._k % self.pss_every == 0 else 0
        self._k += 1
        with self.lock:
            for p in pids:
                t = _cpu_ticks(p)
                if t is not None:
                    self.cpu[p] = t
            self.peak_rss = max(self.peak_rss, rss)
            self.peak_pss = max(self.peak_pss, pss)
        return rss

    def _run(self):
        while not self._stop.wait(self.interval):
            self._sample()

    def mark(self):
        """Starts a phase: resets the peaks; returns its starting point."""
        rss = self._sample()
        pss = sum(_pss(p) for p in process_tree())
        with self.lock:
            self.peak_rss, self.peak_pss = rss, pss
            return {"cpu": dict(self.cpu), "rss": rss, "pss": pss, "t": time.perf_counter()}

    def since(self, mark):
        """What the tree used since mark: peak RSS/PSS (MiB) and CPU seconds."""
        self._sample()
        with self.lock:
            cpu = sum(t - mark["cpu"].get(p, 0) for p, t in self.cpu.items())
            return {"peak_rss_mib": self.peak_rss / MiB, "peak_pss_mib": max(self.peak_pss, mark["pss"]) / MiB,
                    "start_rss_mib": mark["rss"] / MiB, "cpu_s": cpu / TICK,
                    "wall_s": time.perf_counter() - mark["t"]}

    def stop(self):
        self._stop.set()
        self.thread.join()


# ---- the three loaders ---------------------------------------------------------------------------


def run_epochs(make_loader, epochs, mon, res):
    """Constructs the loader, runs epochs; returns timings."""
    out = {"epochs": []}
    mark = mon.mark()
    t_create = time.perf_counter()
    loader = make_loader()
    out["construct_s"] = time.perf_counter() - t_create
    for e in range(epochs):
        emark = mon.mark() if e else mark
        t0 = time.perf_counter()
        n = 0
        for images, labels in loader:
            if n == 0:
                now = time.perf_counter()
                if e == 0:
                    out["first_batch_s"] = now - t_create
                check_batch(images, labels, res)
            n += images.shape[0]
        dt = time.perf_counter() - t0
        use = mon.since(emark)
        out["epochs"].append({"images": n, "seconds": dt, "img_per_s": n / dt, "cpu_s": use["cpu_s"],
                              "peak_rss_mib": use["peak_rss_mib"]})
        log(f"  epoch {e}: {n} images in {dt:.2f} s = {n / dt:.0f} img/s "
            f"(process tree CPU {use['cpu_s']:.1f} s)")
    use = mon.since(mark)
    out.update(peak_rss_mib=use["peak_rss_mib"], peak_pss_mib=use["peak_pss_mib"],
               start_rss_mib=use["start_rss_mib"], cpu_s=use["cpu_s"])
    rates = [x["img_per_s"] for x in out["epochs"]]
    out["best_img_per_s"], out["mean_img_per_s"] = max(rates), float(np.mean(rates))
    out["images_per_epoch"] = out["epochs"][0]["images"]
    out["cpu_ms_per_img"] = 1000 * sum(x["cpu_s"] for x in out["epochs"]) / max(1, sum(
        x["images"] for x in out["epochs"]))
    # Steady state: the first epoch also pays for warm-up (page and buffer
    # first touches, FFCV's compilation).
    out["best_cpu_ms_per_img"] = min(1000 * x["cpu_s"] / max(1, x["images"]) for x in out["epochs"])
    return loader, out


def check_batch(images, labels, res):
    import torch
    if tuple(images.shape[1:]) != (3, res, res) or images.dtype != torch.uint8:
        raise AssertionError(f"image batch {tuple(images.shape)} {images.dtype}, expected (B, 3, {res}, {res}) uint8")
    if labels.dtype != torch.int64 or labels.ndim != 1 or labels.shape[0] != images.shape[0]:
        raise AssertionError(f"label batch {tuple(labels.shape)} {labels.dtype}, expected (B,) int64")


def _ffcv_go_pipelines(res):
    from ffcv_go.fields.decoders import RandomResizedCropRGBImageDecoder, IntDecoder
    from ffcv_go.transforms import RandomHorizontalFlip, ToTensor, ToTorchImage, Squeeze
    return {"image": [RandomResizedCropRGBImageDecoder((res, res)), RandomHorizontalFlip(), ToTensor(),
                      ToTorchImage()],
            "label": [IntDecoder(), ToTensor(), Squeeze()]}


def write_ffcv_go(args, root, beton, mon):
    from ffcv_go.writer import DatasetWriter
    from ffcv_go.fields import RGBImageField, IntField

    def writer():
        return DatasetWriter(beton, {"image": RGBImageField(write_mode="jpg", max_resolution=args.max_resolution,
                                                           jpeg_quality=90),
                                     "label": IntField()}, num_workers=args.workers, progress=False)

    mark = mon.mark()
    t0 = time.perf_counter()
    via, note = None, ""
    if args.write_via in ("auto", "folder") and hasattr(DatasetWriter, "from_image_folder"):
        try:
            writer().from_image_folder(root)
            via = "from_image_folder"
        except Exception as e:  # noqa: BLE001 - reported, then the fallback runs
            if args.write_via == "folder":
                raise
            note = f"from_image_folder failed ({type(e).__name__}: {e}); used from_indexed_dataset"
            log("  " + note)
            t0 = time.perf_counter()
    elif args.write_via == "folder":
        raise SystemExit("--write-via folder: this ffcv_go has no DatasetWriter.from_image_folder")
    if via is None:
        import torchvision
        ds = torchvision.datasets.ImageFolder(root)  # items: (PIL RGB image, label)
        writer().from_indexed_dataset(ds, pool="thread", pool_workers=args.workers)
        via = "from_indexed_dataset(PIL, thread pool)"
    dt = time.perf_counter() - t0
    use = mon.since(mark)
    return {"seconds": dt, "via": via, "note": note, "size_mib": os.path.getsize(beton) / MiB,
            "peak_rss_mib": use["peak_rss_mib"], "cpu_s": use["cpu_s"]}


def run_ffcv_go(args, root, beton, mon):
    from ffcv_go.loader import Loader, OrderOption
    log(f"ffcv_go: writing {root} -> {beton} (jpg, max_resolution {args.max_resolution}, quality 90, "
        f"{args.workers} threads)")
    res = {}
    if args.reuse_beton and os.path.exists(beton):
        res["write"] = {"seconds": None, "via": "reused", "note": "", "size_mib": os.path.getsize(beton) / MiB}
    else:
        res["write"] = write_ffcv_go(args, root, beton, mon)
        log(f"  written in {res['write']['seconds']:.1f} s via {res['write']['via']}, "
            f"{res['write']['size_mib']:.0f} MiB")
    order = OrderOption[args.order.upper()]
    log(f"ffcv_go: Loader(batch_size={args.batch_size}, num_workers={args.workers}, os_cache={args.os_cache}, "
        f"order={args.order}), {args.epochs} epochs at {args.res}x{args.res}")

    def make():
        return Loader(beton, batch_size=args.batch_size, num_workers=args.workers, os_cache=args.os_cache,
                      order=order, seed=args.seed, pipelines=_ffcv_go_pipelines(args.res), drop_last=True)
    loader, out = run_epochs(make, args.epochs, mon, args.res)
    loader.close()
    del loader
    gc.collect()
    res.update(out)
    log(f"  first batch after {out['first_batch_s']:.3f} s; best {out['best_img_per_s']:.0f} img/s")
    return res


def measure_limit(args, beton, mon):
    """Single-core rate of the decode (region decode + resize + flip) on this
    file: the ffcv_go Loader with num_workers=1 over an evenly spread subset."""
    from ffcv_go.loader import Loader, OrderOption
    from ffcv_go.reader import Reader
    n = Reader(beton).num_samples
    k = min(n, args.limit_images)
    idx = np.linspace(0, n - 1, k).round().astype(np.int64)
    bs = min(args.batch_size, 128)
    log(f"limit: ffcv_go Loader with num_workers=1 over {k} of {n} images (batch {bs})")
    loader = Loader(beton, batch_size=bs, num_workers=1, os_cache=args.os_cache, order=OrderOption.SEQUENTIAL,
                    seed=args.seed, indices=idx, pipelines=_ffcv_go_pipelines(args.res), drop_last=False,
                    batches_ahead=1)
    mark = mon.mark()
    it = iter(loader)
    next(it)  # warm-up: thread start, first pages
    t0 = time.perf_counter()
    m = sum(b[0].shape[0] for b in it)
    dt = time.perf_counter() - t0
    use = mon.since(mark)
    loader.close()
    rate = m / dt
    cores = cpu_count()
    log(f"  {m} images in {dt:.2f} s = {rate:.0f} img/s on one core (CPU {use['cpu_s']:.2f} s); "
        f"limit = {cores} x {rate:.0f} = {cores * rate:.0f} img/s")
    return {"images": m, "seconds": dt, "single_core_img_per_s": rate, "cores": cores, "limit_img_per_s": cores * rate,
            "cpu_s": use["cpu_s"],
            "single_core_img_per_cpu_s": m / use["cpu_s"] if use["cpu_s"] > 0 else None}


def run_dataloader(args, root, mon):
    import torch
    import torchvision
    from torchvision import transforms as T
    tf = T.Compose([T.RandomResizedCrop(args.res, antialias=True), T.RandomHorizontalFlip(), T.PILToTensor()])
    ds = torchvision.datasets.ImageFolder(root, transform=tf)
    note = ""
    if args.dataloader_images and args.dataloader_images < len(ds):
        sub = np.random.default_rng(args.seed).choice(len(ds), args.dataloader_images, replace=False)
        ds = torch.utils.data.Subset(ds, np.sort(sub).tolist())
        note = f"DataLoader epochs use a random subset of {len(ds)} images (--dataloader-images)"
    log(f"DataLoader: ImageFolder({root}) {len(ds)} images, batch_size={args.batch_size}, "
        f"num_workers={args.workers}, persistent_workers, prefetch_factor={args.prefetch}, "
        f"shuffle={args.order != 'sequential'}")
    g = torch.Generator()
    g.manual_seed(args.seed)

    def make():
        kw = {}
        if args.workers > 0:
            kw = {"persistent_workers": True, "prefetch_factor": args.prefetch}
        return torch.utils.data.DataLoader(ds, batch_size=args.batch_size, shuffle=args.order != "sequential",
                                           num_workers=args.workers, drop_last=True, generator=g, **kw)
    loader, out = run_epochs(make, args.epochs, mon, args.res)
    it = getattr(loader, "_iterator", None)
    if it is not None:
        it._shutdown_workers()
    del loader, it
    gc.collect()
    out["note"] = note
    log(f"  first batch after {out['first_batch_s']:.3f} s; best {out['best_img_per_s']:.0f} img/s")
    return out


def run_ffcv(args, root, beton, mon):
    try:
        import ffcv  # noqa: F401
        from ffcv.writer import DatasetWriter
        from ffcv.fields import RGBImageField, IntField
        from ffcv.loader import Loader, OrderOption
        from ffcv.fields.decoders import RandomResizedCropRGBImageDecoder, IntDecoder
        from ffcv.transforms import RandomHorizontalFlip, ToTensor, ToTorchImage, Squeeze
    except Exception as e:  # noqa: BLE001
        log(f"FFCV 1.0: skipped (import ffcv failed: {type(e).__name__}: {e}; `make ffcv` installs it)")
        return {"skipped": f"`import ffcv` failed ({type(e).__name__}: {e}); `make ffcv` installs it"}
    import torchvision
    log(f"FFCV 1.0: writing {root} -> {beton}")
    mark = mon.mark()
    t0 = time.perf_counter()
    w = DatasetWriter(beton, {"image": RGBImageField(write_mode="jpg", max_resolution=args.max_resolution,
                                                    jpeg_quality=90),
                              "label": IntField()}, num_workers=args.workers)
    w.from_indexed_dataset(torchvision.datasets.ImageFolder(root))
    use = mon.since(mark)
    res = {"write": {"seconds": time.perf_counter() - t0, "via": "DatasetWriter.from_indexed_dataset",
                     "size_mib": os.path.getsize(beton) / MiB, "peak_rss_mib": use["peak_rss_mib"],
                     "cpu_s": use["cpu_s"]}}
    log(f"  written in {res['write']['seconds']:.1f} s")

    def make():
        return Loader(beton, batch_size=args.batch_size, num_workers=args.workers, os_cache=args.os_cache,
                      order=OrderOption[args.order.upper()], seed=args.seed, drop_last=True,
                      pipelines={"image": [RandomResizedCropRGBImageDecoder((args.res, args.res)),
                                           RandomHorizontalFlip(), ToTensor(), ToTorchImage()],
                                 "label": [IntDecoder(), ToTensor(), Squeeze()]})
    loader, out = run_epochs(make, args.epochs, mon, args.res)
    del loader
    gc.collect()
    res.update(out)
    log(f"  first batch after {out['first_batch_s']:.3f} s; best {out['best_img_per_s']:.0f} img/s")
    return res


# ---- report --------------------------------------------------------------------------------------


def _f(x, fmt="{:.0f}"):
    return "–" if x is None else fmt.format(x)


def _ratio(a, b, fmt="{:.2f}×"):
    if a is None or b is None or not b:
        return "–"
    return fmt.format(a / b)


def make_table(r):
    ours, dl, ff = r["ffcv_go"], r.get("dataloader"), r.get("ffcv")
    dl = dl if dl and "skipped" not in dl else None
    ffok = ff if ff and "skipped" not in ff else None
    epochs = max(len(x["epochs"]) for x in (ours, dl or ours, ffok or ours))
    rows = []

    def row(name, key, fmt="{:.0f}", better=""):
        a, b, c = key(ours), key(dl) if dl else None, key(ffok) if ffok else None
        rows.append(f"| {name} | {_f(a, fmt)} | {_f(b, fmt)} | {_f(c, fmt)} | {_ratio(a, b)} | {_ratio(a, c)} "
                    f"| {better} |")

    w = lambda x: (x.get("write") or {}).get("seconds")  # noqa: E731
    row("write ImageFolder → .beton (s)", w, "{:.1f}", "lower is better")
    row(".beton size (MiB)", lambda x: (x.get("write") or {}).get("size_mib"), "{:.0f}")
    row("time to first batch (s)", lambda x: x["first_batch_s"], "{:.3f}", "lower is better")
    for e in range(epochs):
        row(f"epoch {e} (img/s)", lambda x, e=e: x["epochs"][e]["img_per_s"] if e < len(x["epochs"]) else None,
            "{:.0f}", "higher is better")
    row("**best epoch (img/s)**", lambda x: x["best_img_per_s"], "**{:.0f}**", "higher is better")
    row("mean epoch (img/s)", lambda x: x["mean_img_per_s"], "{:.0f}", "higher is better")
    row("images per epoch", lambda x: x["images_per_epoch"], "{:.0f}")
    row("CPU ms per image (process tree)", lambda x: x["cpu_ms_per_img"], "{:.2f}", "lower is better")
    row("CPU ms per image, best epoch", lambda x: x.get("best_cpu_ms_per_img"), "{:.2f}", "lower is better")
    row("img per CPU-second (process tree)", lambda x: 1000 / x["cpu_ms_per_img"] if x["cpu_ms_per_img"] else None,
        "{:.0f}", "higher is better")
    row("peak RSS, process tree (MiB)", lambda x: x["peak_rss_mib"], "{:.0f}", "lower is better")
    row("peak PSS, process tree (MiB)", lambda x: x["peak_pss_mib"], "{:.0f}", "lower is better")
    row("peak RSS above the idle process (MiB)", lambda x: x["peak_rss_mib"] - x["start_rss_mib"], "{:.0f}",
        "lower is better")
    lim = r["limit"]
    frac = lambda x: x["best_img_per_s"] / lim["limit_img_per_s"]  # noqa: E731
    row("best img/s as a fraction of the limit", frac, "{:.0%}", "higher is better")

    a = r["args"]
    head = [f"## ffcv_go vs torch DataLoader vs FFCV 1.0 — {r['when']}", "",
            f"{r['num_images']} images from `{a['data']}`, {a['res']}×{a['res']} random-resized crops + flip, "
            f"uint8 NCHW; batch {a['batch_size']}, {a['workers']} workers, order {a['order']}, "
            f"os_cache {a['os_cache']}, .beton max_resolution {a['max_resolution']} (JPEG q90), {a['epochs']} epochs. "
            f"Machine: {r['machine']['cores']} cores ({r['machine']['cpu']}), load average "
            f"{r['machine']['load_before']} before / {r['machine']['load_after']} after.", "",
            "| metric | ffcv_go | DataLoader | FFCV 1.0 | ours/DataLoader | ours/FFCV | note |",
            "|---|---:|---:|---:|---:|---:|---|"]
    notes = ["", "Limit: " + (
        f"ffcv_go Loader with num_workers=1 over {lim['images']} images: "
        f"{lim['single_core_img_per_s']:.0f} img/s on one core "
        f"({_f(lim.get('single_core_img_per_cpu_s'))} img per CPU-second) × {lim['cores']} cores = "
        f"**{lim['limit_img_per_s']:.0f} img/s**; ffcv_go's best epoch reaches "
        f"**{frac(ours):.0%}** of it."),
        f"ffcv_go wrote via {ours['write']['via']}." + (f" {ours['write']['note']}" if ours['write'].get('note') else "")]
    if dl and dl.get("note"):
        notes.append(dl["note"] + "; its img/s are comparable, its times per epoch are not.")
    if r.get("dataloader", {}).get("skipped"):
        notes.append(f"DataLoader: skipped ({r['dataloader']['skipped']}).")
    if ff and "skipped" in ff:
        notes.append(f"FFCV 1.0: skipped — {ff['skipped']}.")
    notes.append("Timings are wall-clock on a shared machine; epochs are timed from iter() to the last batch, "
                 "the first batch from the loader's constructor. DataLoader decodes the original JPEGs "
                 "(as in FFCV's comparisons); ffcv_go and FFCV read the .beton (images ≤ max_resolution). "
                 "Ratios are ours ÷ theirs: above 1 is better for img/s, below 1 for times and memory.")
    return "\n".join(head + rows + notes) + "\n"


def machine_info():
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"cores": cpu_count(), "cpu": cpu, "load_before": "%.2f %.2f %.2f" % os.getloadavg()}


def git_rev():
    try:
        return subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              timeout=5).stdout.strip()
    except Exception:  # noqa: BLE001
        return ""


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default=os.path.join(HERE, "data", "imagenet-like"),
                   help="ImageFolder root (built with make_dataset.py when missing and --num-images is given)")
    p.add_argument("--num-images", type=int, default=None, help="build --data with this many images if missing")
    p.add_argument("--num-classes", type=int, default=10, help="classes when building --data (default 10)")
    p.add_argument("--seed", type=int, default=0, help="dataset and loader seed (default 0)")
    p.add_argument("--res", type=int, default=224, help="output resolution (default 224)")
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--workers", type=int, default=cpu_count(), help="loader workers (default: cores)")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--os-cache", action=argparse.BooleanOptionalAction, default=True,
                   help="ffcv_go/FFCV os_cache (default on)")
    p.add_argument("--order", choices=["sequential", "random", "quasi_random"], default="random",
                   help="traversal order (DataLoader shuffles unless sequential)")
    p.add_argument("--max-resolution", type=int, default=256, help=".beton max_resolution (default 256)")
    p.add_argument("--beton", default=None, help="ffcv_go output file (default bench/data/<data>_<maxres>.beton)")
    p.add_argument("--reuse-beton", action="store_true", help="skip writing when the .beton exists")
    p.add_argument("--write-via", choices=["auto", "folder", "indexed"], default="auto",
                   help="ffcv_go writer path: from_image_folder, from_indexed_dataset, or auto (the first if present)")
    p.add_argument("--skip-dataloader", action="store_true", help="do not run the torch DataLoader baseline")
    p.add_argument("--skip-ffcv", action="store_true", help="do not run FFCV 1.0 even if importable")
    p.add_argument("--dataloader-images", type=int, default=None,
                   help="DataLoader epochs over a random subset of this many images (to save time)")
    p.add_argument("--prefetch", type=int, default=2, help="DataLoader prefetch_factor (default 2)")
    p.add_argument("--limit-images", type=int, default=2048,
                   help="images for the single-core limit measurement (default 2048)")
    p.add_argument("--out-json", default=None, help="also write all numbers as JSON here")
    p.add_argument("--out-md", default=os.path.join(HERE, "results", "latest.md"),
                   help="Markdown table (default bench/results/latest.md)")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    root = os.path.abspath(args.data)
    if not os.path.isdir(root):
        if not args.num_images:
            raise SystemExit(f"harness: {root} does not exist; pass --num-images N to build it with make_dataset.py")
        from make_dataset import make_image_folder
        log(f"building {root}: {args.num_images} images, {args.num_classes} classes, seed {args.seed}")
        make_image_folder(root, args.num_images, args.num_classes, args.seed)
    os.makedirs(os.path.join(HERE, "data"), exist_ok=True)
    base = os.path.basename(root.rstrip("/"))
    beton = args.beton or os.path.join(HERE, "data", f"{base}_{args.max_resolution}.beton")
    if args.workers < 1:
        args.workers = cpu_count()

    import torch  # noqa: F401  (imported before the baseline RSS is taken, as all three need it)
    import ffcv_go
    machine = machine_info()
    log(f"{machine['cores']} cores, load average {machine['load_before']}; ffcv_go {ffcv_go.__version__}, "
        f"torch {torch.__version__}")
    mon = TreeMonitor()
    r = {"when": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"), "git": git_rev(), "args": vars(args),
         "machine": machine}
    try:
        r["ffcv_go"] = run_ffcv_go(args, root, beton, mon)
        r["num_images"] = sum(1 for _ in _iter_images(root))
        r["limit"] = measure_limit(args, beton, mon)
        if args.skip_dataloader:
            r["dataloader"] = {"skipped": "--skip-dataloader"}
        else:
            r["dataloader"] = run_dataloader(args, root, mon)
        if args.skip_ffcv:
            r["ffcv"] = {"skipped": "--skip-ffcv"}
        else:
            try:
                r["ffcv"] = run_ffcv(args, root, beton.replace(".beton", ".ffcv.beton"), mon)
            except Exception as e:  # noqa: BLE001 - the others' numbers are still worth a table
                log(f"FFCV 1.0 failed: {type(e).__name__}: {e}")
                r["ffcv"] = {"skipped": f"it failed ({type(e).__name__}: {e})"}
    finally:
        mon.stop()
    machine["load_after"] = "%.2f %.2f %.2f" % os.getloadavg()
    table = make_table(r)
    r["table_md"] = table
    print()
    print(table, flush=True)
    if args.out_md:
        os.makedirs(os.path.dirname(os.path.abspath(args.out_md)), exist_ok=True)
        with open(args.out_md, "w") as f:
            f.write(table)
        log(f"table written to {args.out_md}")
    if args.out_json:
        os.makedirs(os.path.dirname(os.path.abspath(args.out_json)) or ".", exist_ok=True)
        with open(args.out_json, "w") as f:
            json.dump(r, f, indent=1, default=str)
        log(f"numbers written to {args.out_json}")
    return r


def write_table(lines, path):
    """Prints a Markdown table (lines) and writes it to path."""
    md = "\n".join(lines) + "\n"
    print()
    print(md)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(md)
    log(f"table: {path}")


def image_folder(data, num_images, classes=10):
    """The ImageFolder at data (built with num_images photos if missing) and
    its number of images."""
    root = os.path.abspath(data)
    if not os.path.isdir(root):
        from make_dataset import make_image_folder
        make_image_folder(root, num_images, classes, 0)
    return root, sum(1 for _ in _iter_images(root))


def _iter_images(root):
    for d in sorted(os.listdir(root)):
        p = os.path.join(root, d)
        if os.path.isdir(p):
            for f in os.listdir(p):
                if f.lower().endswith((".jpg", ".jpeg", ".png")):
                    yield f


if __name__ == "__main__":
    main()
