"""The ffcv-go command line: convert, info, verify, bench, doctor."""
import argparse
import os
import sys
import time

import numpy as np

def _size(n):
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{n} B"
        n /= 1024


def cmd_convert(a):
    from .fields import RGBImageField, IntField
    from .writer import DatasetWriter
    field = RGBImageField(write_mode=a.write_mode, max_resolution=a.max_resolution,
                          smart_threshold=a.smart_threshold, jpeg_quality=a.jpeg_quality,
                          compress_probability=a.compress_probability)
    w = DatasetWriter(a.output, {"image": field, "label": IntField()}, page_size=a.page_size << 20,
                      num_workers=a.workers, progress=not a.quiet)
    t = time.perf_counter()
    classes = w.from_image_folder(a.folder)
    dt = time.perf_counter() - t
    from .reader import Reader
    n = Reader(a.output).num_samples
    print(f"wrote {n} images of {len(classes)} classes to {a.output} ({_size(os.path.getsize(a.output))}) "
          f"in {dt:.1f} s ({n / dt:.0f} images/s)")
    return 0


def _describe(handler, column, n):
    """The field's kind as the user wrote it and its key arguments; then
    lines of what its metadata says about the samples."""
    kind = type(handler).__name__
    args, lines = [], []
    if kind in ("NDArrayField", "TorchTensorField"):
        args.append(f"{np.dtype(handler.dtype).name} {tuple(handler.shape)}")
    elif kind == "RaggedArrayField":
        args.append(f"{handler.dtype.name} rows {tuple(handler.row_shape)}")
        args += [f"{k}={getattr(handler, k)!r}" for k in ("follows", "coords") if getattr(handler, k)]
    elif kind == "MaskField":
        args.append(f"{np.dtype(handler.dtype).name}, follows {handler.follows!r}")
    elif kind == "TextField":
        if handler.tokens:
            args.append(f"tokenizer {handler.tokenizer_name or '(unnamed)'}, vocabulary {handler.vocab_size}")
        else:
            args.append("captions only (no tokens)")
    if n and kind == "RGBImageField":
        modes = np.bincount(column["mode"].astype(np.int64), minlength=2)
        lines.append(f"modes: {modes[0]} JPEG, {n - modes[0]} raw")
        longer = np.maximum(column["width"], column["height"]).astype(np.int64)
        edges = [0, 64, 128, 256, 384, 512, 1024, 2048, 1 << 16]
        hist, _ = np.histogram(longer, bins=edges)
        lines.append("longer side: " + ", ".join(f"{lo}-{hi - 1}: {c}" for lo, hi, c in zip(edges, edges[1:], hist) if c))
        lines.append(f"mean size {column['width'].mean():.0f} x {column['height'].mean():.0f} (W x H)")
    elif n and kind == "VideoField":
        frames, fps = column["frames"].astype(np.int64), column["fps"]
        lines.append(f"frames: {frames.min()}-{frames.max()} (mean {frames.mean():.0f}), "
                     f"fps: {_span(fps, '{:.3g}')}, duration {_span(frames / np.maximum(fps, 1e-9), '{:.1f}')} s")
        lines.append(f"mean size {column['width'].mean():.0f} x {column['height'].mean():.0f} (W x H)")
    elif n and kind == "AudioField":
        frames, rate = column["frames"].astype(np.float64), column["sample_rate"].astype(np.float64)
        codecs = {1: "FLAC", 2: "WAV", 3: "MP3", 4: "Opus"}
        kinds = np.unique(column["codec"])
        lines.append(f"sample rate: {_span(column['sample_rate'], '{} Hz')}, channels: {_span(column['channels'], '{}')}, "
                     f"duration {_span(frames / rate, '{:.1f}')} s (total {(frames / rate).sum() / 3600:.2f} h), "
                     f"stored as {', '.join(codecs.get(int(k), str(k)) for k in kinds)}")
    elif n and kind == "TextField":
        lines.append(f"captions a sample: {_span(column['captions'], '{}')}")
        if handler.tokens:
            lines.append(f"tokens a caption: up to {int(column['max_tokens'].max())}")
    return " ".join([kind, *args]), lines


def _span(values, fmt):
    lo, hi = values.min(), values.max()
    return fmt.format(lo) if lo == hi else f"{fmt.format(lo)}-{fmt.format(hi)}"


def cmd_info(a):
    from .reader import Reader
    r = Reader(a.file)
    info = r._info
    pages = len(np.unique(r.alloc_table["ptr"] // r.page_size)) if len(r.alloc_table) else 0
    print(f"file        {a.file}" + (" (a directory)" if os.path.isdir(a.file) else ""))
    if len(r.shards) > 1 or os.path.isdir(a.file):
        print(f"size        {_size(sum(os.path.getsize(p) for p, _ in r.shards))} in {len(r.shards)} .beton files")
        for path, n in r.shards:
            print(f"  {path}: {n} samples, {_size(os.path.getsize(path))}")
    else:
        print(f"size        {_size(os.path.getsize(r.shards[0][0]))}")
    print(f"samples     {r.num_samples}")
    print(f"page size   {_size(r.page_size)}, {pages} pages used")
    print("fields")
    for i, f in enumerate(info["fields"]):
        desc, lines = _describe(r.handlers[f["name"]], r.metadata[f"f{i}"], r.num_samples)
        print(f"  {i}: {f['name']:<16} {desc}")
        for line in lines:
            print(f"     {line}")
    return 0


def cmd_verify(a):
    from .reader import Reader
    r = Reader(a.file)
    t = time.perf_counter()
    problems = r.verify(a.workers)
    dt = time.perf_counter() - t
    where = _shard_of(r.shards)
    for p in problems:
        print(f"{where(p['sample'])}, field {p['field']!r}: {p['error']}")
    bad = sorted({p["sample"] for p in problems})
    named = [where(b) if len(r.shards) > 1 else str(b) for b in bad[:20]]
    print(f"checked {r.num_samples} samples in {dt:.1f} s: {len(bad)} corrupt" +
          (f" ({', '.join(named)}{' ...' if len(bad) > 20 else ''})" if bad else ""))
    return 1 if bad else 0


def _shard_of(shards):
    """sample id -> where it is: "sample 7", or "PATH sample 3" of a shard."""
    ends = np.cumsum([n for _, n in shards])

    def where(sample):
        if len(shards) == 1:
            return f"sample {sample}"
        k = int(np.searchsorted(ends, sample, side="right"))
        return f"{shards[k][0]} sample {sample - (ends[k - 1] if k else 0)}"
    return where


def cmd_bench(a):
    import torch  # noqa: F401
    from .fields.decoders import RandomResizedCropRGBImageDecoder
    from .loader import Loader, OrderOption
    from .reader import Reader
    from .transforms import ToTensor, RandomHorizontalFlip, ToTorchImage
    r = Reader(a.file)
    pipelines = {}
    for name, h in r.handlers.items():
        if type(h).__name__ == "RGBImageField":
            pipelines[name] = [RandomResizedCropRGBImageDecoder((a.res, a.res)), RandomHorizontalFlip(),
                               ToTensor(), ToTorchImage()]
    t0 = time.perf_counter()
    loader = Loader(a.file, batch_size=a.batch_size, num_workers=a.workers, os_cache=not a.no_os_cache,
                    order=OrderOption[a.order.upper()], pipelines=pipelines, seed=0)
    for epoch in range(a.epochs):
        t = time.perf_counter()
        n, first = 0, None
        for batch in loader:
            if first is None:
                first = time.perf_counter() - (t0 if epoch == 0 else t)
            n += len(batch[0])
        dt = time.perf_counter() - t
        print(f"epoch {epoch}: {n} samples in {dt:.2f} s = {n / dt:,.0f} samples/s, first batch after {first:.3f} s")
    return 0


def cmd_doctor(a):
    from .doctor import diagnose
    report = diagnose(a.data if len(a.data) > 1 else a.data[0], pipeline=a.pipeline, res=a.res,
                      batch_size=a.batch_size, num_workers=a.workers, order=a.order, os_cache=not a.no_os_cache,
                      model=a.model, device=a.device, amp=a.amp, max_seconds=a.max_seconds,
                      progress=not a.json and sys.stderr.isatty() or a.progress,
                      evict={"auto": "auto", "always": True, "never": False}[a.evict], epochs=a.epochs)
    if a.plot:
        report.plot(a.plot)
    print(report.to_json() if a.json else report.format())
    if a.plot and not a.json:
        print(f"plot: {a.plot}")
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(prog="ffcv-go", description="Write and inspect .beton datasets; benchmark loading.")
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("convert", help="ImageFolder -> .beton (image: RGBImageField, label: IntField)")
    c.add_argument("folder")
    c.add_argument("output")
    c.add_argument("--write-mode", default="jpg", choices=["raw", "jpg", "smart", "proportion"])
    c.add_argument("--max-resolution", type=int, default=None)
    c.add_argument("--jpeg-quality", type=int, default=90)
    c.add_argument("--smart-threshold", type=int, default=None)
    c.add_argument("--compress-probability", type=float, default=0.5)
    c.add_argument("--page-size", type=int, default=8, help="MiB")
    c.add_argument("--workers", type=int, default=-1)
    c.add_argument("--quiet", action="store_true")
    c.set_defaults(fn=cmd_convert)
    i = sub.add_parser("info", help="fields, sample count, pages, image modes and sizes")
    i.add_argument("file")
    i.set_defaults(fn=cmd_info)
    v = sub.add_parser("verify", help="read every sample; report corrupt ones (exit 1 if any)")
    v.add_argument("file")
    v.add_argument("--workers", type=int, default=-1)
    v.set_defaults(fn=cmd_verify)
    b = sub.add_parser("bench", help="loader throughput (RandomResizedCrop + flip for images)")
    b.add_argument("file")
    b.add_argument("--res", type=int, default=224)
    b.add_argument("--batch-size", type=int, default=256)
    b.add_argument("--workers", type=int, default=-1)
    b.add_argument("--epochs", type=int, default=2)
    b.add_argument("--order", default="random", choices=["sequential", "random", "quasi_random"])
    b.add_argument("--no-os-cache", action="store_true")
    b.set_defaults(fn=cmd_bench)
    d = sub.add_parser("doctor", help="measure storage, the loader and the model here; name the bottleneck "
                                      "and the settings that fix it")
    d.add_argument("data", nargs="+", help=".beton file(s), a directory or glob of shards, an s3:// or "
                                           "http(s):// URL, or FILE.py defining `data` (a Mixture of datasets)")
    d.add_argument("--pipeline", default="train",
                   help="train (RandomResizedCrop + flip), val (centre crop) or FILE.py defining `pipelines` "
                        "(and optionally `loader_kwargs`, e.g. custom_field_mapper for views)")
    d.add_argument("--res", type=int, default=224, help="crop size of the train and val pipelines")
    d.add_argument("--model", default=None, help="a torchvision model name (resnet50) or FILE.py defining `model`")
    d.add_argument("--device", default="cpu", help="where the model trains: cpu, cuda, cuda:1, ...")
    d.add_argument("--amp", action="store_true", help="train the model with mixed precision")
    d.add_argument("--batch-size", type=int, default=256)
    d.add_argument("--workers", type=int, default=None, help="the num_workers to diagnose (default: all usable cores)")
    d.add_argument("--order", default="random", choices=["sequential", "random", "quasi_random"])
    d.add_argument("--no-os-cache", action="store_true", help="diagnose os_cache=False")
    d.add_argument("--max-seconds", type=float, default=40.0,
                   help="the deadline for measuring: runs waiting on storage are cut at it, and the report says "
                        "where any extra time went")
    d.add_argument("--evict", default="auto", choices=["auto", "always", "never"],
                   help="drop the file from the page cache to read it cold (for every process on the machine): "
                        "auto (default) only when no other process has it open")
    d.add_argument("--epochs", type=int, default=None,
                   help="the training schedule's epochs, for the first epoch's share of it")
    d.add_argument("--json", action="store_true", help="print the report as JSON")
    d.add_argument("--plot", default=None, metavar="PNG", help="write a figure of img/s against workers")
    d.add_argument("--progress", action="store_true", help="a progress bar even when stderr is not a terminal")
    d.set_defaults(fn=cmd_doctor)
    a = p.parse_args(argv)
    try:
        code = a.fn(a)
        sys.stdout.flush()  # here, where a closed pipe is caught, not at exit
        return code
    except BrokenPipeError:
        # The reader of our output went away (| head): stop quietly, as Unix tools do.
        _quiet_stdout()
        return 0
    except (OSError, ValueError, TypeError) as e:
        print(f"ffcv-go {a.cmd}: {e}", file=sys.stderr)
        return 2


def _quiet_stdout():
    """Points stdout at /dev/null, so that flushing it at exit raises nothing."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    sys.exit(main())
