"""The doctor's storage-bound case as a benchmark: a .beton larger than the
memory its loader may use. ffcv_go with each order and cache (RANDOM and
QUASI_RANDOM x os_cache True and False) against FFCV 1.0 with each of the
same settings, every run in a memory cgroup (v1) leaving each library the
same room for data, from a cold page cache, in one invocation. The doctor
runs first under ffcv_go's limit; its verdict and its recommended settings
are in the table, and its process-cache bound is what the ffcv_go
os_cache=False runs use.

Each library's limit is its own anonymous memory (its peak over the same
two epochs without a limit) plus a third of the file: whatever the library,
a third of the file fits beside it. (One limit for both would leave ffcv_go
the difference of their own memory on top, about 1.1 GB here: the file would
have to be several GB to be larger than memory for both; --memory-mib sets
one limit for every run.) --read-mbps also
throttles reads (blkio), for a slower disk than this machine's.

Each run reads two epochs (each stopped after --epoch-seconds) and reports
the second, whose reads are as cold as the first's once the file is larger
than the room for it; FFCV's first epoch also compiles its pipeline.

    PYTHONPATH=python .venv/bin/python bench/doctor_storage.py --images 12000

The .beton holds crops of the Debian wallpaper photos (make_dataset.py's
sources) at 800 px, about 80 kB each: 12,000 of them make a 1 GB file.

Needs root and cgroup v1 (see bench/limits.py). Writes
bench/results/doctor_storage.md.
"""
import argparse
import datetime
import io
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from limits import Limits  # noqa: E402

CHILD = r"""
import json, os, re, sys, time
lib, path, order, os_cache, workers, bs, res, epochs, seconds, window, resident = sys.argv[1:12]
workers, bs, res, epochs, window, resident = map(int, (workers, bs, res, epochs, window, resident))
seconds, os_cache = float(seconds), os_cache == "1"
if lib == "ffcv_go":
    from ffcv_go import Loader
    from ffcv_go.loader import OrderOption
    from ffcv_go.fields.decoders import IntDecoder, RandomResizedCropRGBImageDecoder
    from ffcv_go.transforms import RandomHorizontalFlip, ToTensor, ToTorchImage
    extra = {"order_kwargs": {"window_pages": window}, "max_resident_pages": resident} if resident else {}
else:
    from ffcv.loader import Loader, OrderOption
    from ffcv.fields.decoders import IntDecoder, RandomResizedCropRGBImageDecoder
    from ffcv.transforms import RandomHorizontalFlip, ToTensor, ToTorchImage
    extra = {}
loader = Loader(path, batch_size=bs, num_workers=workers, order=OrderOption[order], os_cache=os_cache, seed=0,
                drop_last=False, pipelines={"image": [RandomResizedCropRGBImageDecoder((res, res)),
                                                      RandomHorizontalFlip(), ToTensor(), ToTorchImage()],
                                            "label": [IntDecoder(), ToTensor()]}, **extra)
out = {"epochs": []}
for e in range(epochs):
    t, n = time.perf_counter(), 0
    for batch in loader:
        n += len(batch[0])
        if time.perf_counter() - t > seconds:
            break
    out["epochs"].append({"images": n, "seconds": time.perf_counter() - t})
out["img_s"] = out["epochs"][-1]["images"] / out["epochs"][-1]["seconds"]
out["anon"] = int(re.search(r"RssAnon:\s+(\d+)", open("/proc/self/status").read()).group(1)) << 10
if lib == "ffcv_go":
    out["pages_read"] = loader.stats["pages_read"]
print("RESULT " + json.dumps(out), flush=True)
os._exit(0)  # FFCV's threads may hold the interpreter at exit
"""


def write_photos(path, n, side=800, page_size=2 << 20, distinct=24, seed=0, names=("image", "label")):
    """A .beton of n samples (image: JPEG, label: int, by `names`) cycling
    through `distinct` crops of the installed wallpaper photos, their longer
    side `side` px, quality 90."""
    import numpy as np
    from PIL import Image
    import make_dataset
    from ffcv_go import DatasetWriter
    from ffcv_go.fields import IntField, RGBImageField
    photos = make_dataset.find_photos()
    if not photos:
        raise SystemExit("no photos installed: apt-get install " + " ".join(make_dataset.DEBIAN_PACKAGES))
    rng = np.random.default_rng(seed)
    blobs = []
    while len(blobs) < distinct:
        im = Image.open(photos[len(blobs) % len(photos)])
        im.draft("RGB", (side + side // 4, side + side // 4))
        im = im.convert("RGB")
        w, h = im.size
        cw, ch = int(w * 0.8), int(h * 0.8)
        x, y = int(rng.integers(0, w - cw + 1)), int(rng.integers(0, h - ch + 1))
        crop = im.crop((x, y, x + cw, y + ch))
        crop.thumbnail((side, side))
        b = io.BytesIO()
        crop.save(b, "JPEG", quality=90)
        blobs.append(b.getvalue())

    class Photos:
        def __len__(self):
            return n

        def __getitem__(self, i):
            return blobs[i % len(blobs)], i % 10

    DatasetWriter(str(path), {names[0]: RGBImageField(write_mode="jpg"), names[1]: IntField()},
                  page_size=page_size, progress=False).from_indexed_dataset(Photos())
    return path


def peak_anon(cmd, env):
    """Runs cmd and samples its anonymous memory: (peak bytes, stdout)."""
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    peak = 0
    while proc.poll() is None:
        try:
            with open(f"/proc/{proc.pid}/status") as f:
                peak = max(peak, int(re.search(r"RssAnon:\s+(\d+)", f.read()).group(1)) << 10)
        except (OSError, AttributeError):
            pass
        time.sleep(0.02)
    return peak, proc.stdout.read()


def child(lib, path, order, os_cache, a, window=0, resident=0, limits=None, timeout=900):
    """Runs one configuration (in limits, when given): its result dict, or
    {"error": ...}."""
    cmd = child_cmd(lib, path, order, os_cache, a, window, resident)
    env = {**os.environ, "PYTHONPATH": os.path.join(ROOT, "python")}
    t = time.perf_counter()
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout,
                           preexec_fn=limits.enter if limits else None)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}
    m = re.search(r"^RESULT (.*)$", p.stdout, re.M)
    if m:
        return {**json.loads(m.group(1)), "wall_s": time.perf_counter() - t}
    if p.returncode == -9:
        return {"error": "killed by the memory limit (OOM)"}
    tail = (p.stderr.strip().splitlines() or ["?"])[-1]
    return {"error": f"exit {p.returncode}: {tail[:160]}"}


def child_cmd(lib, path, order, os_cache, a, window=0, resident=0, epochs=2):
    return [sys.executable, "-c", CHILD, lib, path, order, "1" if os_cache else "0", str(a.workers),
            str(a.batch_size), str(a.res), str(epochs), str(a.epoch_seconds), str(window), str(resident)]


def drop(path):
    fd = os.open(path, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--images", type=int, default=12000, help="samples in the .beton (about 80 kB each)")
    p.add_argument("--page-mib", type=int, default=2, help="page size of the .beton")
    p.add_argument("--memory-mib", type=int, default=None, help="the memory limit (default: see above)")
    p.add_argument("--read-mbps", type=float, default=None, help="throttle reads to this many MB/s")
    p.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)))
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--res", type=int, default=160)
    p.add_argument("--epoch-seconds", type=float, default=8.0, help="stop each epoch after this long")
    p.add_argument("--out", default=os.path.join(HERE, "results", "doctor_storage.md"))
    a = p.parse_args(argv)
    why = Limits.unavailable(HERE, memory=True, blkio=bool(a.read_mbps))
    if why:
        sys.exit(f"doctor_storage: {why}")
    t0 = time.time()
    load0 = os.getloadavg()[0]
    data = os.path.join(HERE, "data")
    os.makedirs(data, exist_ok=True)  # on the disk, not a tmpfs: reads must reach storage
    tmp = tempfile.mkdtemp(prefix="doctor_storage-", dir=data)
    beton = write_photos(os.path.join(tmp, "photos.beton"), a.images, page_size=a.page_mib << 20)
    size = os.path.getsize(beton)
    print(f"{beton}: {size / 2**20:.0f} MiB in {time.time() - t0:.0f} s", flush=True)

    # Each library's own memory: its peak over the two epochs of a run
    # without a limit (RANDOM with the OS cache: no process cache), sampled
    # from outside.
    anon, unlimited = {}, {}
    env = {**os.environ, "PYTHONPATH": os.path.join(ROOT, "python")}
    for lib in ("ffcv_go", "ffcv"):
        drop(beton)
        anon[lib], out = peak_anon(child_cmd(lib, beton, "RANDOM", True, a), env)
        m = re.search(r"^RESULT (.*)$", out, re.M)
        if not m:
            sys.exit(f"doctor_storage: {lib} failed without a memory limit")
        unlimited[lib] = json.loads(m.group(1))["img_s"]
    limits = {lib: ((a.memory_mib << 20) if a.memory_mib else anon[lib] + size // 3) // 4096 * 4096
              for lib in anon}
    print("own memory: " + ", ".join(f"{k} {v / 2**20:.0f} MiB" for k, v in anon.items())
          + "; limits " + ", ".join(f"{k} {v / 2**20:.0f} MiB" for k, v in limits.items()), flush=True)
    limit = limits["ffcv_go"]

    # The doctor, under ffcv_go's limit, with the libraries' defaults to diagnose.
    drop(beton)
    with Limits(memory=limit, read_bps=a.read_mbps and a.read_mbps * 1e6, path=beton) as lim:
        d = subprocess.run([sys.executable, "-m", "ffcv_go", "doctor", beton, "--json", "--batch-size",
                            str(a.batch_size), "--res", str(a.res), "--pipeline", "train", "--max-seconds", "30"],
                           env={**os.environ, "PYTHONPATH": os.path.join(ROOT, "python")}, capture_output=True,
                           text=True, timeout=600, preexec_fn=lim.enter)
    if d.returncode != 0:
        sys.exit(f"doctor_storage: the doctor failed: {d.stderr[-2000:]}")
    doc = json.loads(d.stdout)
    q = doc["loader"].get("quasi_window") or {}
    window, resident = q.get("window_pages", 0), q.get("max_resident_pages", 0)
    print(f"doctor: {doc['bottleneck']}; " + "; ".join(r["setting"] for r in doc["recommendations"]), flush=True)

    rows = []
    for lib in ("ffcv_go", "ffcv"):
        for order in ("RANDOM", "QUASI_RANDOM"):
            for os_cache in (True, False):
                kw = {"window": window, "resident": resident} if lib == "ffcv_go" and not os_cache else {}
                drop(beton)
                with Limits(memory=limits[lib], read_bps=a.read_mbps and a.read_mbps * 1e6, path=beton) as lim:
                    r = child(lib, beton, order, os_cache, a, limits=lim, **kw)
                rows.append((lib, order, os_cache, kw, r))
                print(f"{lib:8} {order:13} os_cache={os_cache!s:5}: "
                      + (f"{r['img_s']:,.0f} img/s" if "img_s" in r else r["error"]), flush=True)
    os.remove(beton)
    os.rmdir(tmp)

    cpu = open("/proc/cpuinfo").read().split("model name")[1].split(":")[1].splitlines()[0].strip()
    go_best = max((r["img_s"] for lib, o, c, _, r in rows if lib == "ffcv_go" and "img_s" in r), default=0)
    ffcv_best = max((r["img_s"] for lib, o, c, _, r in rows if lib == "ffcv" and "img_s" in r), default=0)
    lines = [
        "# A file larger than memory: ffcv_go's orders and caches against FFCV\n",
        f"{datetime.date.today()}, {platform.node()}: {len(os.sched_getaffinity(0))} cores ({cpu}), "
        f"load average {load0:.1f} when it started (a shared machine: other jobs ran meanwhile), "
        f"{time.time() - t0:.0f} s in all.\n",
        f"{size / 2**20:.0f} MiB .beton of {doc['dataset']['samples']:,} photos ({a.page_mib} MiB pages). "
        + (f"Memory limit {limit / 2**20:.0f} MiB for every run" if a.memory_mib else
           "Memory limits: " + ", ".join(f"{k} {limits[k] / 2**20:.0f} MiB" for k in limits)
           + ", each library's own memory (" + ", ".join(f"{k} {v / 2**20:.0f} MiB" for k, v in anon.items())
           + ") plus a third of the file")
        + "; without a limit, from the page cache: "
        + ", ".join(f"{k} {v:,.0f} img/s" for k, v in unlimited.items())
        + (f", reads throttled to {a.read_mbps:.0f} MB/s" if a.read_mbps else "")
        + f". RandomResizedCrop {a.res} + flip, batch {a.batch_size}, {a.workers} workers; img/s of the second "
        f"epoch (stopped after {a.epoch_seconds:.0f} s), from a cold page cache.\n",
        f"The doctor, under ffcv_go's limit: **{doc['bottleneck']}**: {doc['summary']}\n",
        "Recommended: " + "; ".join(f"`{r['setting']}`" for r in doc["recommendations"]) + "\n",
        "| library | order | os_cache | img/s | pages read | note |",
        "|---|---|---|---:|---:|---|"]
    for lib, order, os_cache, kw, r in rows:
        note = f"window_pages={kw['window']}, max_resident_pages={kw['resident']} (the doctor's)" \
            if kw.get("resident") else ""
        if "img_s" in r:
            lines.append(f"| {lib} | {order} | {os_cache} | {r['img_s']:,.0f} | {r.get('pages_read', '')} | {note} |")
        else:
            lines.append(f"| {lib} | {order} | {os_cache} | - | | {r['error']} |")
    lines.append("")
    lines.append(f"Best: ffcv_go {go_best:,.0f} img/s, FFCV {ffcv_best:,.0f} img/s.")
    text = "\n".join(lines) + "\n"
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
