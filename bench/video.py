"""Video clip loading: ffcv_go against DataLoader + PyAV, DataLoader +
torchcodec (or torchvision.io), and DataLoader + decord, in one run.

Same work everywhere: per sample, a random 16-frame clip (consecutive
frames, its start drawn uniformly), one random resized crop to 112x112 and
one horizontal flip (p=0.5) for the whole clip, uint8 (B, 3, T, 112, 112)
batches of 16 and int64 labels, RANDOM order, every core.

  ffcv_go      the clips written once to a .beton (VideoField: JPEG frames
               with restart markers), then Loader with
               RandomClipDecoder(16, geometry=RandomResizedCropRGBImageDecoder)
               + RandomHorizontalFlip + ToTorchVideo: each frame region-decoded.
  pyav         torch DataLoader whose dataset decodes the mp4 with PyAV up to
               the clip's last frame, then torchvision's RandomResizedCrop and
               RandomHorizontalFlip (v2) on the clip tensor.
  torchcodec   the same, frames from torchcodec's VideoDecoder.get_frames_at
               with seek_mode="approximate" (its fast mode: the stream's
               metadata, no scan of the file at open); torchvision.io.read_video
               when torchcodec is missing.
  torchcodec-exact
               the same with seek_mode="exact" (the default: each open scans
               the file to index its frames).
  decord       the same, frames from decord's VideoReader.get_batch.

The data are bench/motion_clips.py's: a camera panning or zooming over
Debian's wallpapers, H.264 in mp4 (yuv420p). Reported per system: clips/s
(best epoch), CPU ms per clip (process tree, DataLoader workers included,
from /proc), time to the first batch (from the loader's constructor), peak
RSS and PSS of the process tree; and the storage of the .beton against the
mp4 files. Peers that do not import are reported as skipped.

    make bench-video                                      # installs the peers, full size
    PYTHONPATH=python .venv/bin/python bench/video.py --quick   # a few seconds
"""
import argparse
import datetime
import gc
import json
import os
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
if os.path.join(REPO, "python") not in sys.path:
    sys.path.insert(0, os.path.join(REPO, "python"))

import harness  # noqa: E402
import motion_clips  # noqa: E402

SYSTEMS = ("ffcv_go", "pyav", "torchcodec", "torchcodec-exact", "decord")
NAMES = {"ffcv_go": "ffcv_go", "pyav": "DataLoader + PyAV",
         "torchcodec": "DataLoader + torchcodec (seek_mode approximate)",
         "torchcodec_exact": "DataLoader + torchcodec (seek_mode exact)",
         "torchvision": "DataLoader + torchvision.io", "decord": "DataLoader + decord"}


def log(msg):
    print(f"[video {time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ---- the peers: a torch Dataset per decoder -------------------------------------------------------


class ClipDataset:
    """(clip (3, T, crop, crop) uint8, label) per mp4: a random start, one
    RandomResizedCrop and one flip for every frame of the clip."""

    def __init__(self, items, frame_counts, frames, crop, backend):
        self.items, self.counts, self.frames, self.crop, self.backend = items, frame_counts, frames, crop, backend
        self._tf = None

    def __len__(self):
        return len(self.items)

    def _transform(self):
        if self._tf is None:
            from torchvision.transforms import v2
            self._tf = v2.Compose([v2.RandomResizedCrop(self.crop, antialias=True), v2.RandomHorizontalFlip()])
        return self._tf

    def __getitem__(self, i):
        import torch
        path, label = self.items[i]
        n = int(self.counts[i])
        start = int(np.random.randint(0, max(1, n - self.frames + 1)))
        idx = [min(start + k, n - 1) for k in range(self.frames)]
        clip = getattr(self, "_" + self.backend)(path, idx)  # (T, 3, H, W) uint8
        clip = self._transform()(clip)
        return clip.permute(1, 0, 2, 3), torch.tensor(label)

    @staticmethod
    def _pyav(path, idx):
        import av
        import torch
        want, last, out = set(idx), max(idx), {}
        with av.open(path) as c:
            s = c.streams.video[0]
            s.thread_type = "NONE"  # one core per DataLoader worker, as the others
            for k, f in enumerate(c.decode(s)):
                if k in want:
                    out[k] = torch.from_numpy(f.to_ndarray(format="rgb24"))
                if k >= last:
                    break
        return torch.stack([out[k] for k in idx]).permute(0, 3, 1, 2)

    @staticmethod
    def _torchcodec(path, idx, seek_mode="approximate"):
        from torchcodec.decoders import VideoDecoder
        return VideoDecoder(path, num_ffmpeg_threads=1, seek_mode=seek_mode).get_frames_at(idx).data

    @staticmethod
    def _torchcodec_exact(path, idx):
        return ClipDataset._torchcodec(path, idx, seek_mode="exact")

    @staticmethod
    def _torchvision(path, idx):
        import torchvision.io as tio
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            frames, _, info = tio.read_video(path, pts_unit="sec", output_format="TCHW")
        return frames[idx]

    @staticmethod
    def _decord(path, idx):
        import decord
        import torch
        return torch.from_numpy(decord.VideoReader(path, num_threads=1).get_batch(idx).asnumpy()).permute(0, 3, 1, 2)


def peer_backend(name):
    """The backend a peer uses here, or raises ImportError."""
    if name == "pyav":
        import av  # noqa: F401
        return "pyav"
    if name == "torchcodec":
        try:
            from torchcodec.decoders import VideoDecoder  # noqa: F401
            return "torchcodec"
        except Exception:  # noqa: BLE001 - torchcodec raises RuntimeError without FFmpeg's libraries
            import av  # noqa: F401 - torchvision.io reads video through PyAV
            import torchvision.io  # noqa: F401
            return "torchvision"
    if name == "torchcodec-exact":
        try:
            from torchcodec.decoders import VideoDecoder  # noqa: F401
        except Exception as e:  # noqa: BLE001 - as above; torchvision.io is the other row's fallback
            raise ImportError(f"torchcodec: {e}") from e
        return "torchcodec_exact"
    if name == "decord":
        import decord  # noqa: F401
        return "decord"
    raise ValueError(name)


def make_peer(items, counts, args, backend):
    import torch
    ds = ClipDataset(items, counts, args.frames, args.crop, backend)
    return torch.utils.data.DataLoader(ds, batch_size=args.batch_size, shuffle=True, num_workers=args.workers,
                                       persistent_workers=args.workers > 0, drop_last=True)


# ---- ffcv_go ------------------------------------------------------------------------------------------


def write_beton(items, path, args):
    from ffcv_go.fields import IntField, VideoField
    from ffcv_go.writer import DatasetWriter
    t0 = time.perf_counter()
    DatasetWriter(path, {"video": VideoField(max_resolution=args.max_resolution, jpeg_quality=args.quality),
                         "label": IntField()}, progress=False).from_indexed_dataset(items)
    return time.perf_counter() - t0


def make_ours(path, args):
    from ffcv_go.fields.decoders import IntDecoder, RandomClipDecoder, RandomResizedCropRGBImageDecoder
    from ffcv_go.loader import Loader, OrderOption
    from ffcv_go.transforms import RandomHorizontalFlip, Squeeze, ToTensor, ToTorchVideo
    crop = RandomResizedCropRGBImageDecoder((args.crop, args.crop))
    return Loader(path, batch_size=args.batch_size, num_workers=args.workers, order=OrderOption.RANDOM,
                  seed=args.seed, pipelines={
                      "video": [RandomClipDecoder(args.frames, geometry=crop), RandomHorizontalFlip(), ToTensor(),
                                ToTorchVideo()],
                      "label": [IntDecoder(), ToTensor(), Squeeze()]})


# ---- running ----------------------------------------------------------------------------------------


def run(make, args, mon):
    """Epochs of the loader make() builds: clips/s, CPU ms per clip, first batch, peak memory."""
    import torch
    out = {"epochs": []}
    mark = mon.mark()
    t_create = time.perf_counter()
    loader = make()
    for e in range(args.epochs):
        emark = mon.mark() if e else mark
        t0 = time.perf_counter()
        n = 0
        for clips, labels in loader:
            if n == 0 and e == 0:
                out["first_batch_s"] = time.perf_counter() - t_create
            want = (args.batch_size, 3, args.frames, args.crop, args.crop)
            if tuple(clips.shape) != want or clips.dtype != torch.uint8:
                raise AssertionError(f"batch {tuple(clips.shape)} {clips.dtype}, want {want} uint8")
            n += clips.shape[0]
        dt = time.perf_counter() - t0
        use = mon.since(emark)
        out["epochs"].append({"clips": n, "seconds": dt, "clips_per_s": n / dt, "cpu_s": use["cpu_s"]})
        log(f"  epoch {e}: {n} clips in {dt:.2f} s = {n / dt:.1f} clips/s (CPU {use['cpu_s']:.1f} s)")
    use = mon.since(mark)
    del loader
    gc.collect()
    out.update(peak_rss_mib=use["peak_rss_mib"], peak_pss_mib=use["peak_pss_mib"])
    out["clips_per_s"] = max(x["clips_per_s"] for x in out["epochs"])
    out["cpu_ms_per_clip"] = min(1000 * x["cpu_s"] / max(1, x["clips"]) for x in out["epochs"])
    return out


def table(r):
    lines = ["| system | clips/s | CPU ms / clip | first batch (s) | peak RSS (MiB) | peak PSS (MiB) | ours × |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    ours = r["systems"].get("ffcv_go", {}).get("clips_per_s")
    for name, x in r["systems"].items():
        if "skipped" in x:
            lines.append(f"| {NAMES.get(x.get('backend', name), name)} | skipped: {x['skipped']} | | | | | |")
            continue
        ratio = "" if not ours or name == "ffcv_go" else f"{ours / x['clips_per_s']:.1f}×"
        lines.append(f"| {NAMES.get(x.get('backend', name), name)} | {x['clips_per_s']:.1f} | "
                     f"{x['cpu_ms_per_clip']:.1f} | {x['first_batch_s']:.2f} | {x['peak_rss_mib']:.0f} | "
                     f"{x['peak_pss_mib']:.0f} | {ratio} |")
    s = r["storage"]
    lines.append("")
    lines.append(f"Storage: {s['videos']} mp4 files of {s['frames']} frames at {s['width']}x{s['height']}: "
                 f"{s['mp4_mib']:.2f} MiB; their frames in the .beton (JPEG quality {s['quality']}): "
                 f"{s['beton_mib']:.2f} MiB ({s['beton_mib'] / s['mp4_mib']:.1f}× the mp4s; the file, whole "
                 f"pages: {s['file_mib']:.1f} MiB), written in {s['write_s']:.1f} s.")
    return "\n".join(lines)


def storage(items, args):
    """The stored frames' bytes against the mp4s' for write options."""
    from ffcv_go.fields import IntField, VideoField
    from ffcv_go.reader import Reader
    from ffcv_go.writer import DatasetWriter
    mp4 = sum(os.path.getsize(p) for p, _ in items)
    short = min(args.size)
    rows = ["| JPEG quality | max_resolution | frame_step | stored MiB | × the mp4s | write s |",
            "|---:|---:|---:|---:|---:|---:|"]
    for q, res, step in [(95, None, 1), (90, None, 1), (75, None, 1), (50, None, 1),
                         (90, short, 1), (90, max(args.size) // 2, 1), (90, None, 2), (90, None, 4)]:
        path = os.path.join(args.data, f"storage-q{q}-r{res or 0}-s{step}.beton")
        t0 = time.perf_counter()
        DatasetWriter(path, {"video": VideoField(max_resolution=res, jpeg_quality=q, frame_step=step),
                             "label": IntField()}, progress=False).from_indexed_dataset(items)
        dt = time.perf_counter() - t0
        stored = float(Reader(path).metadata["f0"]["size"].sum())
        os.remove(path)
        rows.append(f"| {q} | {res or 'none'} | {step} | {stored / harness.MiB:.2f} | {stored / mp4:.1f} | {dt:.1f} |")
    head = (f"{len(items)} mp4 files (H.264, crf 20, {args.clip_frames} frames at {args.size[0]}x{args.size[1]}): "
            f"{mp4 / harness.MiB:.2f} MiB")
    return head + "\n\n" + "\n".join(rows)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default=os.path.join(HERE, "data", "motion-clips"))
    p.add_argument("--num-clips", type=int, default=480)
    p.add_argument("--clip-frames", type=int, default=64, help="frames per mp4")
    p.add_argument("--size", type=int, nargs=2, default=[170, 128], metavar=("W", "H"),
                   help="even sizes (H.264 in 4:2:0)")
    p.add_argument("--frames", type=int, default=16, help="frames per loaded clip")
    p.add_argument("--crop", type=int, default=112)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--workers", type=int, default=harness.cpu_count())
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--quality", type=int, default=90)
    p.add_argument("--max-resolution", type=int, default=None)
    p.add_argument("--systems", nargs="+", default=list(SYSTEMS), choices=SYSTEMS)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None, help="write the results (JSON) here")
    p.add_argument("--quick", action="store_true", help="a tiny run that proves the benchmark works")
    p.add_argument("--storage", action="store_true",
                   help="only the storage table: the .beton against the mp4s for JPEG qualities, "
                        "max_resolution and frame_step")
    a = p.parse_args(argv)
    if a.quick:
        a.data = a.data + "-quick" if a.data == p.get_default("data") else a.data
        a.num_clips, a.clip_frames, a.size, a.crop, a.epochs, a.batch_size = 32, 20, [64, 48], 32, 2, 8
        a.workers = min(a.workers, 2)
    return a


def main(argv=None):
    args = parse_args(argv)
    size = tuple(args.size)
    log(f"{args.num_clips} clips of {args.clip_frames} frames at {size[0]}x{size[1]} under {args.data}")
    items = motion_clips.make_clips(args.data, args.num_clips, args.clip_frames, size, seed=args.seed)
    if args.storage:
        text = storage(items, args)
        print(text)
        return text
    mp4 = sum(os.path.getsize(p) for p, _ in items)
    beton = os.path.join(args.data, f"clips-q{args.quality}-r{args.max_resolution or 0}.beton")
    write_s = write_beton(items, beton, args)
    from ffcv_go.reader import Reader
    meta = Reader(beton).metadata["f0"]
    counts = meta["frames"].astype(np.int64)
    r = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "machine": harness.machine_info(),
         "git": harness.git_rev(), "args": vars(args), "systems": {},
         "storage": {"videos": len(items), "frames": args.clip_frames, "width": size[0], "height": size[1],
                     "quality": args.quality, "mp4_mib": mp4 / harness.MiB,
                     "beton_mib": float(meta["size"].sum()) / harness.MiB,
                     "file_mib": os.path.getsize(beton) / harness.MiB, "write_s": write_s}}
    mon = harness.TreeMonitor()
    try:
        for name in args.systems:
            if name == "ffcv_go":
                log("ffcv_go")
                r["systems"][name] = run(lambda: make_ours(beton, args), args, mon)
                continue
            try:
                backend = peer_backend(name)
            except ImportError as e:
                log(f"{name}: skipped ({e})")
                r["systems"][name] = {"skipped": str(e)}
                continue
            log(NAMES[backend])
            r["systems"][name] = dict(run(lambda: make_peer(items, counts, args, backend), args, mon),
                                      backend=backend)
    finally:
        mon.stop()
    text = table(r)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(r, f, indent=1)
    return r


if __name__ == "__main__":
    main()
