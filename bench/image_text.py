"""Image-text pretraining data, one run on the same data: webdataset shards
of photo crops (ImageNet-like sizes, JPEG q90) with captions, as
img2dataset writes them (key.jpg, key.txt, key.json).

Conversion of the shards to a dataset, images kept at max_resolution 256:

  ours            DatasetWriter.from_webdataset(shards, output_shards="input"):
                  one pass, read and encoded in Go (JPEG q90), captions in a
                  TextField; again with open_clip's tokens stored beside them
  FFCV-style      from_webdataset(shards, pipeline): webdataset decodes every
                  image in Python (PIL), shards read twice (FFCV's way), the
                  pixels encoded by the same Go writer, captions as bytes
  litdata         litdata.optimize(fn, shards): fn reads a shard with
                  webdataset, PIL decodes, resizes to 256 and re-encodes
                  (JPEG q90); num_workers = the cores

Loading, RandomResizedCrop 224 + horizontal flip (uint8 NCHW) + tokenized
captions (open_clip's tokenizer, context 77), batch --batch-size:

  ours, stored tokens
                  Loader over the shards converted with the tokenizer:
                  RandomResizedCropRGBImageDecoder((224, 224)) +
                  RandomHorizontalFlip, and TokenDecoder(77) (tokens made at
                  conversion time)
  ours, tokenized at load
                  Loader over the shards converted without tokens: the same
                  image pipeline, and CaptionDecoder(), each batch's
                  captions tokenized with open_clip's tokenizer as the
                  training loop takes it (in the training process; open_clip
                  tokenizes in its worker processes)
  open_clip       open_clip_train's webdataset pipeline (tarfile_to_samples,
                  shuffle, decode("pilrgb"), rename, map_dict with the
                  torchvision transform and the tokenizer, to_tuple,
                  batched) in a WebLoader with --workers processes, over the
                  same images at 256 (img2dataset's --image_size 256 shards)

End to end, conversion + --epochs epochs of loading, wall seconds: ours
(convert without tokens + load tokenizing; convert with tokens + load with
stored tokens) against open_clip reading its shards as they are (no
conversion: img2dataset's 256 px shards are its input, made here untimed).
litdata's loading is not measured (no litdata loader here).

Each contender runs in a process of its own; reported: wall time, samples
per second, CPU ms per sample and peak RSS of its process tree (workers
included), and the ratios to the targets (conversion >= 4x the faster of the
other two, loading >= 5x open_clip's images/s), each with met or missed.

    make bench-image-text                       # litdata in a venv of its own, then runs
    PYTHONPATH=python .venv/bin/python bench/image_text.py --samples 4000 --shards 8
    PYTHONPATH=python .venv/bin/python bench/image_text.py --quick   # seconds: proves it runs
"""
import argparse
import datetime
import io
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
if os.path.join(REPO, "python") not in sys.path:
    sys.path.insert(0, os.path.join(REPO, "python"))

WORDS = ("a photo of the", "wallpaper", "with", "light", "colours", "in the", "morning", "evening", "over",
         "detail", "close up", "landscape", "nature", "city", "sky", "water", "flowers", "trees", "warm", "cold")


# ---- data ------------------------------------------------------------------------

def _caption(rng, name):
    words = [WORDS[0], name, WORDS[1]] + [WORDS[int(k)] for k in rng.integers(2, len(WORDS), int(rng.integers(3, 14)))]
    return " ".join(words)


def _shard_job(job):
    """Writes shard k (samples first..first+n) in both sizes."""
    import make_dataset
    from PIL import Image
    root, k, first, n, seed, names = job
    full = os.path.join(root, "full", f"{k:05d}.tar")
    small = os.path.join(root, "256", f"{k:05d}.tar")
    with tarfile.open(full + ".tmp", "w") as tf, tarfile.open(small + ".tmp", "w") as ts:
        for i in range(first, first + n):
            out, src = make_dataset.make_image(seed, i)
            caption = _caption(np.random.default_rng([seed, i, 1]), names[src])
            s = min(1.0, 256 / max(out.size))
            resized = out.resize((max(1, round(out.width * s)), max(1, round(out.height * s))), Image.BICUBIC) \
                if s < 1 else out
            for tar, img in ((tf, out), (ts, resized)):
                b = io.BytesIO()
                img.save(b, "JPEG", quality=90)
                meta = json.dumps({"caption": caption, "width": img.width, "height": img.height,
                                   "key": f"{i:09d}"}).encode()
                for ext, data in (("jpg", b.getvalue()), ("txt", caption.encode()), ("json", meta)):
                    info = tarfile.TarInfo(f"{i:09d}.{ext}")
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
    os.replace(full + ".tmp", full)
    os.replace(small + ".tmp", small)
    return k


def make_shards(root, samples, shards, seed, processes):
    """The shards (full size and at 256), reused when an identical set exists."""
    import multiprocessing
    import make_dataset
    want = {"samples": samples, "shards": shards, "seed": seed, "version": 1}
    marker = os.path.join(root, "marker.json")
    full = [os.path.join(root, "full", f"{k:05d}.tar") for k in range(shards)]
    small = [os.path.join(root, "256", f"{k:05d}.tar") for k in range(shards)]
    if os.path.exists(marker) and json.load(open(marker)) == want:
        return full, small
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(os.path.join(root, "full"))
    os.makedirs(os.path.join(root, "256"))
    photos = make_dataset.find_photos()
    if not photos:
        raise SystemExit("no photos: install " + " ".join(make_dataset.DEBIAN_PACKAGES))
    names = [os.path.basename(p).split("_")[0].split(".")[0].lower() for p in photos]
    per = (samples + shards - 1) // shards
    jobs = [(root, k, k * per, min(per, samples - k * per), seed, names) for k in range(shards)]
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(processes) as pool:
        make_dataset._set_sources(pool.map(make_dataset._load_source, photos, chunksize=1))
    with ctx.Pool(processes) as pool:
        list(pool.imap_unordered(_shard_job, jobs))
    with open(marker, "w") as f:
        json.dump(want, f)
    return full, small


# ---- contenders (each run in a child process) -------------------------------------------------

# Each contender does its imports and set-up, then returns what is timed.

def _fields(tokens):
    from ffcv_go.fields import RGBImageField, TextField
    tok = None
    if tokens:
        import open_clip
        tok = open_clip.get_tokenizer("ViT-B-32")
    return {"image": RGBImageField(write_mode="jpg", max_resolution=256, jpeg_quality=90), "caption": TextField(tok)}


def convert_ours(a, tokens=False):
    from ffcv_go import DatasetWriter
    out = os.path.join(a.work, "ours-tokens" if tokens else "ours")
    shutil.rmtree(out, ignore_errors=True)
    fields = _fields(tokens)

    def run():
        rep = DatasetWriter(os.path.join(out, "{:05d}.beton"), fields, num_workers=a.workers,
                            progress=False).from_webdataset(a.shards, ignore=["json"], output_shards="input")
        return rep.samples, sum(os.path.getsize(f) for f in rep.files)
    return run


def convert_ffcv_style(a):
    import webdataset  # noqa: F401 - imported before the clock starts
    from ffcv_go import DatasetWriter
    from ffcv_go.fields import BytesField, RGBImageField
    from ffcv_go.reader import Reader
    out = os.path.join(a.work, "ffcv-style.beton")
    fields = {"image": RGBImageField(write_mode="jpg", max_resolution=256, jpeg_quality=90), "caption": BytesField()}
    pipeline = lambda ds: ds.decode("rgb8").to_tuple("jpg", "txt").map_tuple(  # noqa: E731
        lambda x: x, lambda s: np.frombuffer(s.encode(), np.uint8))

    def run():
        DatasetWriter(out, fields, num_workers=a.workers, progress=False).from_webdataset(a.shards, pipeline)
        r = Reader(out)
        n = r.num_samples
        r.close()
        return n, os.path.getsize(out)
    return run


def _litdata_fn(shard):
    import webdataset as wds
    from PIL import Image
    for s in wds.WebDataset(shard, shardshuffle=False, empty_check=False).decode("pil"):
        im = s["jpg"].convert("RGB")
        scale = min(1.0, 256 / max(im.size))
        if scale < 1:
            im = im.resize((max(1, int(im.width * scale)), max(1, int(im.height * scale))), Image.BOX)
        b = io.BytesIO()
        im.save(b, "JPEG", quality=90)
        yield {"image": b.getvalue(), "caption": s["txt"]}


def convert_litdata(a):
    import litdata
    import webdataset  # noqa: F401 - imported before the clock starts
    out = os.path.join(a.work, "litdata")
    shutil.rmtree(out, ignore_errors=True)

    def run():
        litdata.optimize(fn=_litdata_fn, inputs=list(a.shards), output_dir=out, num_workers=a.workers,
                         chunk_bytes="64MB", verbose=False, start_method="fork")
        n = len(litdata.StreamingDataset(out))
        return n, sum(os.path.getsize(os.path.join(out, f)) for f in os.listdir(out))
    return run


class _TokenizedAtLoad:
    """A loader whose captions (CaptionDecoder's strings) are tokenized with
    open_clip's tokenizer as each batch is taken, in the training process.
    (A Python operation after CaptionDecoder would run in the loader's
    stage thread, but the loader turns a CaptionDecoder pipeline's output
    into strings whatever follows the decoder.)"""

    def __init__(self, loader, tokenizer):
        self.loader, self.tokenizer = loader, tokenizer

    def __iter__(self):
        for images, captions in self.loader:
            yield images, self.tokenizer(captions)


def load_ours(a, tokenize=False):
    import torch
    from ffcv_go import Loader
    from ffcv_go.fields.decoders import CaptionDecoder, RandomResizedCropRGBImageDecoder, TokenDecoder
    from ffcv_go.loader import OrderOption
    from ffcv_go.transforms import RandomHorizontalFlip, ToTensor, ToTorchImage
    files = sorted(os.path.join(a.beton, f) for f in os.listdir(a.beton))
    tokenizer = None
    if tokenize:  # made before the clock starts, as load_open_clip's
        import open_clip
        tokenizer = open_clip.get_tokenizer("ViT-B-32")

    def run():
        l = Loader(files, batch_size=a.batch_size, num_workers=a.workers, order=OrderOption.RANDOM, drop_last=True,
                   pipelines={"image": [RandomResizedCropRGBImageDecoder((224, 224)), RandomHorizontalFlip(),
                                        ToTensor(), ToTorchImage()],
                              "caption": [CaptionDecoder()] if tokenize else [TokenDecoder(77)]})
        return _epochs(a, _TokenizedAtLoad(l, tokenizer) if tokenize else l, torch)
    return run


def load_open_clip(a):
    """open_clip_train's get_wds_dataset (training branch), as written there."""
    import torch
    import webdataset as wds
    import open_clip
    from torchvision import transforms as T
    tokenizer = open_clip.get_tokenizer("ViT-B-32")
    preprocess = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.PILToTensor()])

    def has_caption_and_image(s):
        return "txt" in s and any(k in s for k in ("png", "jpg", "jpeg", "webp"))

    def run():
        pipeline = [wds.SimpleShardList(list(a.shards)), wds.detshuffle(bufsize=2000, initial=500, seed=0),
                    wds.split_by_node, wds.split_by_worker,
                    wds.tarfile_to_samples(handler=wds.warn_and_continue),
                    wds.shuffle(bufsize=5000, initial=1000),
                    wds.select(has_caption_and_image),
                    wds.decode("pilrgb", handler=wds.warn_and_continue),
                    wds.rename(image="jpg;png;jpeg;webp", text="txt"),
                    wds.map_dict(image=preprocess, text=lambda text: tokenizer(text)[0]),
                    wds.to_tuple("image", "text"),
                    wds.batched(a.batch_size, partial=False)]
        loader = wds.WebLoader(wds.DataPipeline(*pipeline), batch_size=None, shuffle=False, num_workers=a.workers,
                               persistent_workers=a.workers > 0)
        return _epochs(a, loader, torch)
    return run


def _epochs(a, loader, torch):
    """Runs a.epochs epochs; returns (samples of the best epoch, its seconds)
    and checks the batches' shapes."""
    best = None
    total = 0
    for e in range(a.epochs):
        t0, n = time.perf_counter(), 0
        for images, tokens in loader:
            assert images.shape[1:] == (3, 224, 224) and images.dtype == torch.uint8, images.shape
            assert tokens.shape[1:] == (77,) and tokens.dtype == torch.int64, tokens.shape
            n += len(images)
        dt = time.perf_counter() - t0
        total += n
        if e > 0 or a.epochs == 1:
            best = max(best or (0, 1), (n, dt), key=lambda x: x[0] / x[1])
    return best[0], best[1], total


CONTENDERS = {
    "convert-ours": lambda a: convert_ours(a),
    "convert-ours-tokens": lambda a: convert_ours(a, tokens=True),
    "convert-ffcv-style": convert_ffcv_style,
    "convert-litdata": convert_litdata,
    "load-ours": load_ours,
    "load-ours-tokenize": lambda a: load_ours(a, tokenize=True),
    "load-open-clip": load_open_clip,
}


def child(a):
    """Runs one contender in this process, measuring its process tree; prints JSON."""
    from harness import TreeMonitor
    run = CONTENDERS[a.child](a)
    mon = TreeMonitor()
    m = mon.mark()
    out = run()
    use = mon.since(m)
    mon.stop()
    r = {"name": a.child, "cpu_s": use["cpu_s"], "wall_s": use["wall_s"], "peak_rss_mib": use["peak_rss_mib"],
         "start_rss_mib": use["start_rss_mib"]}
    if a.child.startswith("convert"):
        r.update(samples=out[0], bytes=out[1])
    else:
        r.update(samples=out[0], epoch_s=out[1], samples_total=out[2])
    print("RESULT " + json.dumps(r), flush=True)


def run_child(a, name, python=None, **extra):
    args = [python or sys.executable, os.path.abspath(__file__), "--child", name, "--work", a.work, "--workers", str(a.workers),
            "--batch-size", str(a.batch_size), "--epochs", str(a.epochs)]
    for k, v in extra.items():
        args += [f"--{k}", *map(str, v if isinstance(v, list) else [v])]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(REPO, "python"), os.environ.get("PYTHONPATH", "")]))
    t0 = time.perf_counter()
    proc = subprocess.run(args, capture_output=True, text=True, env=env)
    line = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
    if proc.returncode != 0 or not line:
        print(f"[image_text] {name} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}", flush=True)
        return None
    r = json.loads(line[-1][len("RESULT "):])
    print(f"[image_text] {name}: {json.dumps(r)} ({time.perf_counter() - t0:.1f} s with start-up)", flush=True)
    return r


# ---- the run ---------------------------------------------------------------------------------

def _have(module, python=None):
    if python:  # another interpreter: ask it
        return subprocess.run([python, "-c", f"import {module}"], capture_output=True).returncode == 0
    try:
        __import__(module)
        return True
    except ImportError:
        return False


def table(res, a):
    def conv(r):
        return r["samples"] / r["wall_s"]
    lines = [f"## Image-text data: {a.samples} samples in {a.shards_n} webdataset shards",
             "",
             f"{platform.node()}, {os.cpu_count()} CPUs, {datetime.date.today()}; --workers {a.workers}, "
             f"batch {a.batch_size}; `{' '.join(sys.argv[1:]) or '(defaults)'}`.",
             "",
             f"Conversion to .beton (or litdata chunks), images at max_resolution 256, JPEG q90, "
             f"fastest of {a.rounds} alternating rounds:",
             "",
             "| | samples/s | wall s | CPU ms/sample | peak RSS MiB (at start) | output MiB |",
             "|---|---:|---:|---:|---:|---:|"]
    for key, label in (("convert-ours", "ours (text)"), ("convert-ours-tokens", "ours (text + open_clip tokens)"),
                       ("convert-ffcv-style", "FFCV-style from_webdataset"), ("convert-litdata", "litdata.optimize")):
        r = res.get(key)
        if r is None:
            lines.append(f"| {label} | not run | | | | |")
            continue
        lines.append(f"| {label} | {conv(r):.0f} | {r['wall_s']:.1f} | {1000 * r['cpu_s'] / r['samples']:.2f} | "
                     f"{r['peak_rss_mib']:.0f} ({r['start_rss_mib']:.0f}) | {r['bytes'] / 2**20:.1f} |")
    others = [conv(res[k]) for k in ("convert-ffcv-style", "convert-litdata") if res.get(k)]
    if res.get("convert-ours") and others:
        ratio = conv(res["convert-ours"]) / max(others)
        lines += ["", f"ours / the faster other: **{ratio:.2f}×** (target ≥ 4×: {_met(ratio, 4)})"]
    lines += ["", f"Loading: RandomResizedCrop 224 + flip (uint8 NCHW) + open_clip tokens (context 77), best epoch "
                  f"of {a.epochs}:",
              "", "| | images/s | CPU ms/image | peak RSS MiB (at start) |", "|---|---:|---:|---:|"]
    for key, label in LOAD_ROWS:
        r = res.get(key)
        if r is None:
            lines.append(f"| {label} | not run | | |")
            continue
        lines.append(f"| {label} | {_load_rate(r):.0f} | {1000 * r['cpu_s'] / r['samples_total']:.2f} | "
                     f"{r['peak_rss_mib']:.0f} ({r['start_rss_mib']:.0f}) |")
    for key, label in LOAD_ROWS[:2]:
        if res.get(key) and res.get("load-open-clip"):
            ratio = _load_rate(res[key]) / _load_rate(res["load-open-clip"])
            lines += ["", f"{label} / open_clip: **{ratio:.2f}×** (target ≥ 5×: {_met(ratio, 5)})"]
    lines += ["", f"End to end: conversion + {a.epochs} epoch{'s' if a.epochs != 1 else ''} of loading (wall s; "
                  "open_clip reads img2dataset's 256 px shards as they are, so it converts nothing here; litdata's "
                  "loading is not measured):",
              "", "| | convert s | load s | total s |", "|---|---:|---:|---:|"]
    for label, conv_key, load_key in E2E_ROWS:
        c = res.get(conv_key) if conv_key else {"wall_s": 0.0}
        ld = res.get(load_key)
        if c is None or ld is None:
            lines.append(f"| {label} | not run | | |")
            continue
        lines.append(f"| {label} | {c['wall_s']:.1f} | {ld['wall_s']:.1f} | {c['wall_s'] + ld['wall_s']:.1f} |")
    return lines


LOAD_ROWS = (("load-ours", "ours, tokens stored at conversion (TokenDecoder)"),
             ("load-ours-tokenize", "ours, tokenized at load (CaptionDecoder + open_clip's tokenizer)"),
             ("load-open-clip", "open_clip webdataset pipeline (tokenized at load)"))
E2E_ROWS = (("ours, tokens stored at conversion", "convert-ours-tokens", "load-ours"),
            ("ours, tokenized at load", "convert-ours", "load-ours-tokenize"),
            ("open_clip", None, "load-open-clip"))


def _load_rate(r):
    return r["samples"] / r["epoch_s"]


def _met(ratio, target):
    return "met" if ratio >= target else "missed"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--samples", type=int, default=4000)
    p.add_argument("--shards", type=int, default=8, help="webdataset shards")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--epochs", type=int, default=3, help="loading epochs (the best after the first counts)")
    p.add_argument("--rounds", type=int, default=3, help="alternating conversion rounds (the fastest of each counts)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data", default=os.path.join(HERE, "data"))
    p.add_argument("--out", default=os.path.join(HERE, "results", "image_text.md"))
    p.add_argument("--quick", action="store_true", help="64 samples in 2 shards, 1 epoch: proves the bench runs")
    p.add_argument("--peers-python", help="the interpreter of litdata's venv (its pins are not ours)")
    p.add_argument("--only", nargs="*", default=None, help="run only these contenders (names as in the log)")
    # The child's arguments.
    p.add_argument("--child", choices=sorted(CONTENDERS), help=argparse.SUPPRESS)
    p.add_argument("--work", help=argparse.SUPPRESS)
    p.add_argument("--shard-list", nargs="*", dest="shards_in", help=argparse.SUPPRESS)
    p.add_argument("--beton", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.child:
        a.shards = a.shards_in
        child(a)
        return
    if a.quick:
        a.samples, a.shards, a.epochs, a.batch_size, a.rounds = 64, 2, 1, 16, 1
    a.shards_n = a.shards
    root = os.path.join(a.data, f"image-text-{a.samples}-{a.shards}-{a.seed}")
    t0 = time.perf_counter()
    full, small = make_shards(root, a.samples, a.shards, a.seed, max(1, min(a.workers, 4)))
    print(f"[image_text] {a.samples} samples in {a.shards} shards under {root} ({time.perf_counter() - t0:.1f} s)",
          flush=True)
    a.work = os.path.join(root, "work")
    os.makedirs(a.work, exist_ok=True)
    want = set(a.only or CONTENDERS)
    res = {}
    converters = [n for n in ("convert-ours", "convert-ours-tokens", "convert-ffcv-style", "convert-litdata")
                  if n in want]
    if "convert-litdata" in converters and not _have("litdata", a.peers_python):
        print("[image_text] litdata is not installed (make bench-image-text gives it a venv of its own and "
              "passes --peers-python): skipped", flush=True)
        converters.remove("convert-litdata")
    # Alternating rounds, each converter's fastest kept: a slow spell of the
    # machine then costs every contender a round, not one contender its figure.
    for _ in range(a.rounds):
        for name in converters:
            python = a.peers_python if name == "convert-litdata" else None
            r = run_child(a, name, python=python, **{"shard-list": full})
            if r is not None and (name not in res or r["wall_s"] < res[name]["wall_s"]):
                res[name] = r
    if "load-ours" in want:
        if not os.path.isdir(os.path.join(a.work, "ours-tokens")):
            run_child(a, "convert-ours-tokens", **{"shard-list": full})
        res["load-ours"] = run_child(a, "load-ours", beton=os.path.join(a.work, "ours-tokens"))
    if "load-ours-tokenize" in want:
        if not os.path.isdir(os.path.join(a.work, "ours")):
            run_child(a, "convert-ours", **{"shard-list": full})
        res["load-ours-tokenize"] = run_child(a, "load-ours-tokenize", beton=os.path.join(a.work, "ours"))
    if "load-open-clip" in want:
        res["load-open-clip"] = run_child(a, "load-open-clip", **{"shard-list": small})
    lines = table(res, a)
    print("\n".join(lines))
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"[image_text] table written to {a.out}")


if __name__ == "__main__":
    main()
