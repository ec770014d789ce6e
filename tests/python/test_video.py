"""VideoField: writing clips (mp4 files through PyAV, frame folders, arrays),
the clip decoders, and the loader's features on clips.

The clips are bench/motion_clips.py's: a camera panning or zooming over
Debian's wallpapers, encoded to mp4 (H.264) with PyAV, kept tiny (64x48,
20 frames) so the file is written and read in well under a second.
"""
import io
import os
import struct
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import FnDataset, ListDataset, collect, same_batches

try:
    import av
except ImportError:  # the tests of arrays and arguments run without PyAV
    av = None
needs_av = pytest.mark.skipif(av is None, reason="PyAV is not installed (pip install av)")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import motion_clips  # noqa: E402

from ffcv_go.fields import IntField, VideoField, Frames  # noqa: E402
from ffcv_go.reader import Reader  # noqa: E402
from ffcv_go.writer import DatasetWriter  # noqa: E402

W, H, T, FPS = 64, 48, 20, 25


@pytest.fixture(scope="session")
def clips(tmp_path_factory):
    """12 mp4 clips, two of each motion: [(path, label)]."""
    if av is None:
        pytest.skip("PyAV is not installed (pip install av)")
    paths = motion_clips.photos(4)
    if not paths:
        pytest.skip("no photos installed (Debian wallpaper packages)")
    root = tmp_path_factory.mktemp("clips")
    return motion_clips.make_clips(str(root), 12, T, (W, H), seed=1, fps=FPS,
                                   sources=motion_clips.load_sources(paths))


def write_clips(path, items, field=None, **kw):
    fields = {"video": field or VideoField(), "label": IntField()}
    DatasetWriter(str(path), fields, progress=False, num_workers=kw.pop("num_workers", 2)).from_indexed_dataset(
        ListDataset(items), **kw)
    return path


@pytest.fixture(scope="session")
def clip_file(clips, tmp_path_factory):
    """The clips, each with its index as its label."""
    return write_clips(tmp_path_factory.mktemp("clipfile") / "clips.beton", [(p, i) for i, (p, _) in enumerate(clips)])


def pyav_frames(path):
    with av.open(path) as c:
        return np.stack([f.to_ndarray(format="rgb24") for f in c.decode(video=0)])


def stored_frames(path, sample):
    """The stored JPEG frames of a sample, read by hand from the heap
    (frame table, then the frames) and decoded with PIL."""
    from PIL import Image
    r = Reader(str(path))
    m = r.metadata["f0"][sample]
    heap = bytes(r.read(sample, "video"))
    n = int(m["frames"])
    offs = struct.unpack(f"<{n + 1}I", heap[:4 * (n + 1)])
    out = [np.asarray(Image.open(io.BytesIO(heap[offs[k]:offs[k + 1]])).convert("RGB")) for k in range(n)]
    return m, heap, offs, np.stack(out)


# ---- writing ----------------------------------------------------------------------------------------


def test_mp4_frames_are_stored_as_jpegs(clips, clip_file):
    r = Reader(str(clip_file))
    assert type(r.handlers["video"]).__name__ == "VideoField" and r.verify() == []
    for i in (0, 5, 11):
        m, heap, offs, frames = stored_frames(clip_file, i)
        assert (int(m["frames"]), int(m["width"]), int(m["height"]), float(m["fps"])) == (T, W, H, FPS)
        assert int(m["size"]) == len(heap) == offs[-1]
        for k in range(T):  # JPEGs with restart markers (a DRI segment), as RGBImageField writes
            jpeg = heap[offs[k]:offs[k + 1]]
            assert jpeg[:2] == b"\xff\xd8" and b"\xff\xdd" in jpeg[:jpeg.index(b"\xff\xda")]
        src = pyav_frames(clips[i][0]).astype(np.int16)
        assert frames.shape == src.shape
        same = np.abs(frames - src).mean()  # JPEG quality 90 (4:2:0) of the same frames
        assert same < 6 and np.abs(frames - src[::-1]).mean() > 2 * same


def test_workers_and_pools_write_the_same_file(clips, clip_file, tmp_path):
    items = [(p, i) for i, (p, _) in enumerate(clips)]
    for k, (pool, workers) in enumerate([(None, 1), ("thread", 3), ("process", 2)]):
        out = write_clips(tmp_path / f"c{k}.beton", items, pool=pool, pool_workers=2, num_workers=workers)
        assert out.read_bytes() == Path(clip_file).read_bytes(), pool


def test_max_resolution_and_quality(clips, clip_file, tmp_path):
    small = write_clips(tmp_path / "small.beton", clips, VideoField(max_resolution=32, jpeg_quality=50))
    m, _, _, frames = stored_frames(small, 3)
    assert (int(m["width"]), int(m["height"]), frames.shape[1:3]) == (32, 24, (24, 32))
    big = Reader(str(clip_file)).metadata["f0"]["size"].sum()
    assert Reader(str(small)).metadata["f0"]["size"].sum() < big / 1.5  # tiny frames: JPEG headers weigh


def counting_frames(n):
    """n frames whose pixels say their index."""
    return np.repeat(np.arange(n, dtype=np.uint8)[:, None, None, None] * 10, 16 * 16 * 3).reshape(n, 16, 16, 3)


@pytest.mark.parametrize("field, source_fps, want, want_fps", [
    (VideoField(), 25, list(range(20)), 25),
    (VideoField(frame_step=3), 25, list(range(0, 20, 3)), 25 / 3),
    (VideoField(fps=10), 25, [0, 2, 5, 7, 10, 12, 15, 17], 10),  # t = 0, .1, ...: nearest of k/25, ties early
    (VideoField(fps=10, frame_step=2), 25, [0, 5, 10, 15], 5),
    (VideoField(fps=50), 25, [0, 0, 1, 1, 2], 50),  # up-sampling repeats frames
])
def test_frame_rate_and_step(tmp_path, field, source_fps, want, want_fps):
    n = 20 if field.fps != 50 else 3
    path = write_clips(tmp_path / "f.beton", [(Frames(counting_frames(n), source_fps), 0)], field)
    m, _, _, frames = stored_frames(path, 0)
    got = [int(round(f.mean() / 10)) for f in frames]
    assert got == want and float(m["fps"]) == pytest.approx(want_fps)


def test_fps_of_a_video_file(clips, tmp_path):
    path = write_clips(tmp_path / "f.beton", clips[:1], VideoField(fps=10))
    m, _, _, frames = stored_frames(path, 0)
    src = pyav_frames(clips[0][0]).astype(np.int16)
    assert int(m["frames"]) == 8 and float(m["fps"]) == 10
    for k, j in enumerate([0, 2, 5, 7, 10, 12, 15, 17]):
        assert np.abs(frames[k] - src[j]).mean() < np.abs(frames[k] - src[j + 1]).mean()


def test_frame_folders_lists_and_arrays(clips, tmp_path):
    from PIL import Image
    src = pyav_frames(clips[2][0])
    folder = tmp_path / "frames"
    folder.mkdir()
    for k in range(len(src)):  # frame_2 sorts before frame_10
        Image.fromarray(src[k]).save(folder / f"frame_{k}.png")
    (folder / "notes.txt").write_text("not a frame")
    files = [folder / f"frame_{k}.png" for k in range(len(src))]
    items = [(str(folder), 0), (files[:5], 1), (src, 2), (src[..., 0], 3), (Frames(src[:4], 30.0), 4)]
    path = write_clips(tmp_path / "f.beton", items)
    meta = Reader(str(path)).metadata["f0"]
    assert list(meta["frames"]) == [T, 5, T, T, 4] and list(meta["fps"]) == [0, 0, 0, 0, 30]
    a, b, c = (stored_frames(path, i)[3] for i in (0, 1, 2))
    assert np.array_equal(a, c) and np.array_equal(a[:5], b)  # PNG frames are the same pixels
    grey = stored_frames(path, 3)[3].astype(np.int16)
    assert np.abs(grey - src[..., :1].astype(np.int16)).mean() < 4


def test_video_files_as_str_pathlike_or_bytes(clips, tmp_path):
    """A video file by its path (str or os.PathLike) or as its bytes: the
    same frames each way; a value of another type is refused, saying what
    is taken."""
    p = clips[3][0]
    items = [(str(p), 0), (Path(p), 1), (Path(p).read_bytes(), 2)]
    path = write_clips(tmp_path / "v.beton", items, pool=None)
    meta = Reader(str(path)).metadata["f0"]
    assert list(meta["frames"]) == [T] * 3 and list(meta["fps"]) == [FPS] * 3
    a, b, c = (stored_frames(path, i)[3] for i in range(3))
    assert np.array_equal(a, b) and np.array_equal(a, c)
    with pytest.raises(TypeError, match=r"dataset item 1, field 'video': VideoField takes a video file's path "
                                        r"\(str or os.PathLike\) or bytes, .* got int"):
        write_clips(tmp_path / "bad.beton", [items[0], (7, 1)], pool=None)


# ---- bad input: a clear error naming the file, and nothing lost ----------------------------------

# Every container and codec the tests write: a healthy file of each must pass.
VIDEO_KINDS = [(".mp4", "libx264"), (".webm", "libvpx"), (".webm", "libvpx-vp9"), (".mkv", "libx264")]


@pytest.fixture(scope="session")
def sources():
    if av is None:
        pytest.skip("PyAV is not installed (pip install av)")
    paths = motion_clips.photos(2)
    if not paths:
        pytest.skip("no photos installed (Debian wallpaper packages)")
    return motion_clips.load_sources(paths)


def make_video(path, sources, codec, frames=30):
    """A 128x96 clip of frames frames panning over a photo, at FPS: large
    enough that a damaged or cut file still has whole packets."""
    src = motion_clips.clip_frames(sources[0], "pan_left", frames, (128, 96), np.random.default_rng(7))
    motion_clips.write_mp4(path, src, fps=FPS, codec=codec)
    return path


def damage(path, out):
    """path with random bytes over the second half of its largest packet:
    the container and the packets' sizes stay intact, a frame's slice data
    does not (FFmpeg conceals it and logs "error while decoding MB")."""
    with av.open(str(path)) as c:
        pos, size = max(((p.pos, p.size) for p in c.demux(video=0) if p.size), key=lambda t: t[1])
    data = bytearray(Path(path).read_bytes())
    at = pos + size // 2
    n = min(2048, pos + size - at - 4)
    data[at:at + n] = np.random.default_rng(1).integers(0, 256, n, dtype=np.uint8).tobytes()
    Path(out).write_bytes(bytes(data))
    return out


def cut(path, out, keep=0.6):
    data = Path(path).read_bytes()
    Path(out).write_bytes(data[:int(len(data) * keep)])
    return out


@pytest.mark.parametrize("ext", [".mp4", ".mkv"])
def test_corrupt_h264_is_refused(sources, tmp_path, ext):
    good = make_video(tmp_path / f"good{ext}", sources, "libx264")
    bad = damage(good, tmp_path / f"bad{ext}")
    with av.open(str(bad)) as c:  # FFmpeg alone decodes every frame, some garbage
        assert sum(1 for _ in c.decode(video=0)) == 30
    with pytest.raises(ValueError, match=rf"dataset item 1, field 'video': VideoField: \S*bad{ext} is corrupt: "
                                         rf"frame \d+ \(at [\d.]+ s\) does not decode \(invalid data"):
        write_clips(tmp_path / "out.beton", [(str(good), 0), (str(bad), 1)], pool=None)
    assert not (tmp_path / "out.beton").exists()


@pytest.mark.parametrize("ext, codec", [(".webm", "libvpx"), (".webm", "libvpx-vp9"), (".mkv", "libx264")])
def test_truncated_video_is_refused(sources, tmp_path, ext, codec):
    """A webm or mkv cut off still says its whole duration (and lists no
    frame count): its frames stop short of it."""
    good = make_video(tmp_path / f"good{ext}", sources, codec)
    bad = cut(good, tmp_path / f"cut{ext}")
    with av.open(str(bad)) as c:
        assert 0 < sum(1 for _ in c.decode(video=0)) < 30
    with pytest.raises(ValueError, match=rf"cut{ext} is truncated: its frames stop at frame \d+ \([\d.]+ s\) "
                                         r"of a 1.2 s video"):
        write_clips(tmp_path / "out.beton", [(str(good), 0), (str(bad), 1)], pool=None)


def test_ffmpeg_errors_are_sentences(tmp_path):
    if av is None:
        pytest.skip("PyAV is not installed (pip install av)")
    empty = tmp_path / "empty.mp4"
    empty.write_bytes(b"")
    text = tmp_path / "notes.mkv"
    text.write_text("not a video at all\n" * 20)
    for path, want in [(empty, "empty.mp4 is empty (0 bytes)"),
                       (text, "notes.mkv is not a video file FFmpeg can read (invalid data found")]:
        with pytest.raises(ValueError) as e:
            write_clips(tmp_path / "out.beton", [(str(path), 0)], pool=None)
        assert want in str(e.value) and "Errno" not in str(e.value), str(e.value)


@pytest.mark.parametrize("pool", [None, "process"])
def test_errors_skip_reports_bad_videos(sources, tmp_path, pool):
    """errors='skip' leaves out the items whose video is refused (decoded in
    the fetch workers), warns, and reports each with its file and frame;
    the file holds the others, in order."""
    good = make_video(tmp_path / "good.mp4", sources, "libx264")
    other = make_video(tmp_path / "other.webm", sources, "libvpx", frames=20)
    corrupt = damage(good, tmp_path / "corrupt.mp4")
    truncated = cut(make_video(tmp_path / "long.mkv", sources, "libx264"), tmp_path / "cut.mkv")
    items = [(str(good), 0), (str(corrupt), 1), (str(other), 2), (str(truncated), 3),
             (str(tmp_path / "missing.mp4"), 4), (np.zeros((2, 8, 8, 3), np.float32), 5)]
    out = tmp_path / "out.beton"
    writer = DatasetWriter(str(out), {"video": VideoField(), "label": IntField()}, progress=False, num_workers=2)
    with pytest.warns(UserWarning, match=r"4 problems, 4 samples skipped \(see the returned report's problems\): "
                                         r"1 x .*is corrupt: frame.* \(\S*corrupt.mp4: sample 1, member 'video'\)"):
        report = writer.from_indexed_dataset(ListDataset(items), pool=pool, pool_workers=2, errors="skip")
    assert (report.files, report.counts, report.samples, report.skipped, report.num_problems) == \
        ([str(out)], [2], 2, 4, 4)
    got = [(os.path.basename(p["shard"]), p["key"], p["member"], p["sample_skipped"]) for p in report.problems]
    assert got == [("corrupt.mp4", 1, "video", True), ("cut.mkv", 3, "video", True),
                   ("missing.mp4", 4, "video", True), ("", 5, "video", True)]
    reasons = [p["reason"] for p in report.problems]
    assert "is corrupt: frame" in reasons[0] and "is truncated" in reasons[1]
    assert "missing.mp4" in reasons[2] and "uint8" in reasons[3]
    r = Reader(str(out))
    assert list(r.metadata["f1"]) == [0, 2] and list(r.metadata["f0"]["frames"]) == [30, 20]
    assert r.verify() == []
    # The same items with errors='raise' (the default) fail at the corrupt one.
    with pytest.raises(ValueError, match="dataset item 1, field 'video': .*corrupt.mp4 is corrupt"):
        write_clips(tmp_path / "raise.beton", items, pool=pool, pool_workers=2)
    with pytest.raises(ValueError, match="errors 'ignore' must be 'raise' or 'skip'"):
        write_clips(tmp_path / "bad.beton", items, errors="ignore")


def test_bad_videos(clips, tmp_path):
    good = Path(clips[0][0]).read_bytes()
    corrupt = tmp_path / "corrupt.mp4"
    corrupt.write_bytes(b"\x00\x00\x00\x18ftypmp42" + os.urandom(3000))
    truncated = tmp_path / "truncated.mp4"  # its index (at the end) cut off
    truncated.write_bytes(good[:len(good) // 2])
    streamable = tmp_path / "cut.mp4"  # its index first, frames cut off
    motion_clips.write_mp4(streamable, pyav_frames(clips[0][0]), faststart=True)
    streamable.write_bytes(streamable.read_bytes()[:int(streamable.stat().st_size * 0.6)])
    empty = tmp_path / "empty"
    empty.mkdir()
    out = tmp_path / "out.beton"
    out.write_bytes(b"an earlier file")
    for value, want in [(str(corrupt), "corrupt.mp4"), (str(truncated), "truncated.mp4"), (str(streamable), "cut.mp4"),
                        (str(tmp_path / "missing.mp4"), "missing.mp4"), (str(empty), "has no frames"),
                        (np.zeros((0, 8, 8, 3), np.uint8), "has no frames"),
                        (np.zeros((2, 8, 8, 3), np.float32), "uint8"),
                        (Frames(counting_frames(3)), None)]:
        items = [(clips[1][0], 0), (value, 1)]
        field = VideoField(fps=10) if isinstance(value, Frames) else VideoField()
        with pytest.raises((ValueError, TypeError, OSError)) as e:
            write_clips(out, items, field, pool=None)
        assert (want or "source rate") in str(e.value), str(e.value)
        assert out.read_bytes() == b"an earlier file"  # the destination is only replaced by a whole file
    assert sorted(os.listdir(tmp_path)) == ["corrupt.mp4", "cut.mp4", "empty", "out.beton", "truncated.mp4"]


def test_field_arguments():
    for kw in [dict(max_resolution=0), dict(jpeg_quality=101), dict(fps=0), dict(fps=float("nan")),
               dict(frame_step=0)]:
        with pytest.raises(ValueError):
            VideoField(**kw)


# ---- loading clips ----------------------------------------------------------------------------------

from ffcv_go.fields.decoders import (CenterCropRGBImageDecoder, ClipDecoder, IntDecoder,  # noqa: E402
                                     RandomClipDecoder, RandomResizedCropRGBImageDecoder,
                                     SimpleRGBImageDecoder)
from ffcv_go.loader import Loader, OrderOption  # noqa: E402
from ffcv_go.transforms import (NormalizeImage, RandomBrightness, RandomHorizontalFlip, Squeeze,  # noqa: E402
                                ToTensor, ToTorchVideo)


def clip_pipelines(decoder=None, ops=()):
    decoder = decoder or RandomClipDecoder(8, RandomResizedCropRGBImageDecoder((32, 32)), stride=2)
    return {"video": [decoder, *ops, ToTensor()], "label": [IntDecoder(), ToTensor(), Squeeze()]}


def load(path, batch_size=4, workers=2, order=OrderOption.RANDOM, seed=3, pipelines=None, **kw):
    path = [str(p) for p in path] if isinstance(path, list) else str(path)
    return Loader(path, batch_size=batch_size, num_workers=workers, order=order, seed=seed,
                  pipelines=pipelines or clip_pipelines(), **kw)


def test_clip_batches_and_layout(clip_file):
    import torch
    loader = load(clip_file, pipelines=clip_pipelines(ops=[RandomHorizontalFlip()]))
    batches = list(loader)
    assert len(batches) == 3 and sorted(torch.cat([y for _, y in batches]).tolist()) == list(range(12))
    for x, _ in batches:
        assert x.shape == (4, 8, 32, 32, 3) and x.dtype == torch.uint8
    p = clip_pipelines(ops=[RandomHorizontalFlip()])
    p["video"].append(ToTorchVideo())
    for (a, _), (b, _) in zip(batches, load(clip_file, pipelines=p)):
        assert b.shape == (4, 3, 8, 32, 32) and torch.equal(b, a.permute(0, 4, 1, 2, 3))
    p = clip_pipelines(ClipDecoder(6, num_clips=3, geometry=CenterCropRGBImageDecoder((24, 24), ratio=1)))
    p["video"].append(ToTorchVideo())
    x, _ = next(iter(load(clip_file, pipelines=p, order=OrderOption.SEQUENTIAL)))
    assert x.shape == (4, 3, 3, 6, 24, 24)
    x, _ = next(iter(load(clip_file, pipelines=clip_pipelines(ClipDecoder(5)), order=OrderOption.SEQUENTIAL)))
    assert x.shape == (4, 5, H, W, 3)  # whole frames
    p = clip_pipelines(ops=[NormalizeImage(np.array([120.0, 110, 100]), np.array([60.0, 55, 50]), np.float32)])
    x, _ = next(iter(load(clip_file, pipelines=p)))
    assert x.shape == (4, 8, 32, 32, 3) and x.dtype == torch.float32


def test_transforms_draw_once_per_clip(clip_file):
    """A flip and a brightness change after the clip decoder act on every
    frame of a clip alike: each clip is wholly flipped or not, and every
    frame is scaled by one factor."""
    plain = collect(load(clip_file))
    flipped = collect(load(clip_file, pipelines=clip_pipelines(ops=[RandomHorizontalFlip()])))
    kinds = set()
    for (a, ya), (b, yb) in zip(plain, flipped):
        assert np.array_equal(ya, yb)
        for u, v in zip(a, b):
            same, mirrored = np.array_equal(u, v), np.array_equal(u[:, :, ::-1], v)
            assert same or mirrored
            kinds.add(same)
    assert kinds == {True, False}
    bright = collect(load(clip_file, pipelines=clip_pipelines(ops=[RandomBrightness(0.5, p=1.0)])))
    for (a, _), (b, _) in zip(plain, bright):
        for u, v in zip(a.astype(np.float64), b.astype(np.float64)):
            keep = (u > 20) & (v < 250) & (v > 0)
            ratios = [np.median(v[k][keep[k]] / u[k][keep[k]]) for k in range(len(u))]
            assert np.ptp(ratios) < 0.03, ratios


def test_same_clips_for_any_worker_count(clip_file):
    runs = [collect(load(clip_file, workers=w, pipelines=clip_pipelines(ops=[RandomHorizontalFlip()])))
            for w in (1, 3)]
    assert same_batches(runs[0], runs[1])
    other_epoch = collect(load(clip_file, seed=4))
    assert not same_batches(collect(load(clip_file)), other_epoch)


def test_resume_mid_epoch(clip_file):
    full = load(clip_file, batch_size=2)
    it = iter(full)
    head = [tuple(t.numpy().copy() for t in next(it)) for _ in range(2)]
    state = full.state_dict()
    tail = collect(it)
    resumed = load(clip_file, batch_size=2)
    resumed.load_state_dict(state)
    assert same_batches(collect(resumed), tail) and len(head) + len(tail) == 6


def test_distributed_ranks(clip_file, monkeypatch):
    seen = []
    whole = collect(load(clip_file, batch_size=2, order=OrderOption.SEQUENTIAL))
    for rank in (0, 1):
        monkeypatch.setenv("RANK", str(rank))
        monkeypatch.setenv("WORLD_SIZE", "2")
        batches = collect(load(clip_file, batch_size=2, order=OrderOption.SEQUENTIAL, distributed=True))
        assert len(batches) == 3
        seen += [int(y) for _, ys in batches for y in ys]
    assert sorted(seen) == list(range(12))
    assert len(whole) == 6


def test_quasi_random_through_the_process_cache(clip_file):
    a = collect(load(clip_file, order=OrderOption.QUASI_RANDOM, os_cache=False))
    b = collect(load(clip_file, order=OrderOption.QUASI_RANDOM, os_cache=True))
    assert same_batches(a, b)
    assert sorted(int(y) for _, ys in a for y in ys) == list(range(12))


def test_trace_times_the_clip_decoder(clip_file, tmp_path):
    import json
    loader = load(clip_file, trace=str(tmp_path / "trace.json"))
    collect(loader)
    stages = loader.stats["stages"]
    assert stages, loader.stats
    loader.close()
    events = json.loads((tmp_path / "trace.json").read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    assert any("decode" in str(e.get("name", "")).lower() for e in events)


def test_bad_decoders(clip_file, tmp_path):
    from ffcv_go.fields import RGBImageField
    with pytest.raises(ValueError, match="num_frames"):
        RandomClipDecoder(0)
    with pytest.raises(ValueError, match=r"RandomClipDecoder: give a stride >= 1 or an fps > 0, not both"):
        RandomClipDecoder(4, stride=2, fps=10)
    with pytest.raises(ValueError, match="short"):
        ClipDecoder(4, short="wrap")
    with pytest.raises(TypeError, match="geometry must be a decoder of ffcv_go"):
        RandomClipDecoder(4, geometry=RandomHorizontalFlip())
    # Which decoders a clip's frames go through is the Go core's to say,
    # in the words of the decoders as written.
    with pytest.raises(ValueError, match="^ClipDecoder: geometry: IntDecoder is not an image decoder a clip's"):
        ClipDecoder(4, geometry=IntDecoder())
    with pytest.raises(ValueError, match="no default decoder"):
        load(clip_file, pipelines={"video": [ToTensor()]})
    images = tmp_path / "images.beton"
    DatasetWriter(str(images), {"image": RGBImageField(), "label": IntField()}, progress=False).from_indexed_dataset(
        ListDataset([(counting_frames(1)[0], 0)] * 4))
    with pytest.raises(TypeError, match="RandomClipDecoder decodes a VideoField, not a RGBImageField"):
        load(images, pipelines={"image": [RandomClipDecoder(4)]})



@pytest.mark.parametrize("decoder", [SimpleRGBImageDecoder(), RandomResizedCropRGBImageDecoder((32, 32)),
                                     CenterCropRGBImageDecoder((32, 32), ratio=1)])
def test_image_decoder_on_a_video_field(tmp_path, decoder):
    path = write_clips(tmp_path / "v.beton", [(counting_frames(4), 0)] * 2)
    name = type(decoder).__name__
    with pytest.raises(TypeError, match=rf'output "video": {name} decodes images, not the clips of a VideoField: '
                                        rf"start the pipeline with RandomClipDecoder\(num_frames, geometry={name}"):
        load(path, pipelines={"video": [decoder]})


def test_fps_without_stored_rates_fails_at_build(tmp_path):
    """Clips sampled at an fps need each video's stored rate: a file with a
    video without one is refused when the Loader is built, not mid-epoch."""
    items = [(Frames(counting_frames(6), 25.0), 0)] * 3 + [(counting_frames(6), 1)]
    path = write_clips(tmp_path / "nofps.beton", items)
    for decoder in (RandomClipDecoder(3, fps=5), ClipDecoder(3, fps=5)):
        with pytest.raises(ValueError, match=rf'field "video", {type(decoder).__name__}: fps 5 samples at the '
                                             r"videos' stored frame rate, and sample 3 has none"):
            load(path, pipelines=clip_pipelines(decoder))
    x, _ = next(iter(load(path, pipelines=clip_pipelines(RandomClipDecoder(3, stride=2)))))  # a stride needs none
    assert x.shape == (4, 3, 16, 16, 3)


def test_whole_frames_of_different_sizes_fail_at_build(tmp_path):
    items = [(counting_frames(4), 0), (np.zeros((4, 8, 16, 3), np.uint8), 1)]
    path = write_clips(tmp_path / "sizes.beton", items)
    with pytest.raises(ValueError, match=r'field "video", RandomClipDecoder: geometry: videos have different '
                                         r"frame sizes \(16x16, then 16x8 at sample 1\): give a crop geometry"):
        load(path, batch_size=2, pipelines=clip_pipelines(RandomClipDecoder(3)))
    x, _ = next(iter(load(path, batch_size=2, pipelines=clip_pipelines(
        RandomClipDecoder(3, CenterCropRGBImageDecoder((8, 8), ratio=1))))))
    assert x.shape == (2, 3, 8, 8, 3)


def test_doctor_measures_a_clip_pipeline(clip_file):
    from ffcv_go.doctor import diagnose
    report = diagnose(str(clip_file), pipeline=clip_pipelines(ops=[RandomHorizontalFlip()]), batch_size=4,
                      num_workers=1, max_seconds=5, progress=False)
    scan = report.loader["scan"][0]
    assert scan["img_s"] > 0 and report.dataset["samples"] == 12
    # The clip decoder's time is the image path's: entropy decoding, then IDCT and resize.
    assert {"entropy_decode", "idct_resize"} <= set(scan["stages"])


@pytest.mark.parametrize("os_cache", [True, False])
def test_shards_read_as_one_file(clips, clip_file, tmp_path, os_cache):
    items = [(p, i) for i, (p, _) in enumerate(clips)]
    parts = [str(write_clips(tmp_path / f"part-{k}.beton", items[a:b])) for k, (a, b) in enumerate([(0, 5), (5, 12)])]
    whole = collect(load(clip_file, os_cache=os_cache))
    assert same_batches(collect(load(parts, os_cache=os_cache)), whole)


def test_fps_sampling_and_resize_pad(clip_file):
    import torch
    from ffcv_go.fields.decoders import ResizePadRGBImageDecoder
    by_stride = collect(load(clip_file, pipelines=clip_pipelines(ClipDecoder(4, stride=2))))
    by_fps = collect(load(clip_file, pipelines=clip_pipelines(ClipDecoder(4, fps=FPS / 2))))
    assert same_batches(by_stride, by_fps)  # 25 fps stored, 12.5 wanted: every second frame
    pad = ResizePadRGBImageDecoder((40, 40), fill=(7, 7, 7))
    x, _ = next(iter(load(clip_file, pipelines=clip_pipelines(RandomClipDecoder(3, pad)))))
    assert x.shape == (4, 3, 40, 40, 3) and bool((x[:, :, 30:] == 7).all())  # 64x48 fits as 40x30
    assert not torch.equal(x[:, 0], x[:, 2])


def test_corrupt_frame_table_at_load_time(clip_file, tmp_path):
    import shutil
    bad = tmp_path / "bad.beton"
    shutil.copy(clip_file, bad)
    ptr = int(Reader(str(bad)).metadata["f0"][3]["ptr"])
    with open(bad, "r+b") as f:  # frame 1 of sample 3 now ends past its video
        f.seek(ptr + 8)
        f.write(struct.pack("<I", 10 ** 6))
    p = clip_pipelines(ClipDecoder(T))
    with pytest.raises(Exception, match=r'sample 3, field "video": .*frame 1 of the video lies at'):
        collect(load(bad, pipelines=p, order=OrderOption.SEQUENTIAL))
    kept = collect(load(bad, pipelines=p, order=OrderOption.SEQUENTIAL, on_error="skip", drop_last=False))
    assert sorted(int(y) for _, ys in kept for y in ys) == [i for i in range(12) if i != 3]
    assert Reader(str(bad)).verify()[0]["sample"] == 3


def test_go_ops_after_a_python_stage_on_clips(clip_file):
    """Built-in ops after a Python stage run on the clip batch in Go, lifted
    over the frames, with the draws they make without the stage."""
    import torch
    plain = collect(load(clip_file, pipelines=clip_pipelines(ops=[RandomHorizontalFlip(), RandomBrightness(0.4)])))
    staged = collect(load(clip_file, pipelines=clip_pipelines(
        ops=[torch.nn.Identity(), RandomHorizontalFlip(), RandomBrightness(0.4)])))
    assert same_batches(plain, staged)


@pytest.mark.parametrize("ext, codec", VIDEO_KINDS)
def test_webm_and_mkv(clips, tmp_path, ext, codec):
    src = pyav_frames(clips[4][0])
    path = tmp_path / f"clip{ext}"
    motion_clips.write_mp4(path, src, fps=FPS, codec=codec)
    out = write_clips(tmp_path / "f.beton", [(str(path), 0)])
    m, _, _, frames = stored_frames(out, 0)
    assert (int(m["frames"]), float(m["fps"])) == (T, FPS)
    assert np.abs(frames.astype(np.int16) - src).mean() < 8  # a second lossy encode


def test_targets_do_not_follow_clips(tmp_path):
    """Boxes, points and masks follow an image's geometry, never a clip's:
    the writer refuses a target field that follows a VideoField, and the
    loader a target decoder told to follow a clip output."""
    from ffcv_go.fields import RaggedArrayField
    from ffcv_go.fields.decoders import RaggedDecoder
    items = [(counting_frames(4), np.array([[1, 2, 8, 9]], np.float32))] * 4
    with pytest.raises(ValueError, match="not an RGBImageField"):
        DatasetWriter(str(tmp_path / "boxes.beton"), {
            "video": VideoField(), "boxes": RaggedArrayField(np.float32, (4,), follows="video", coords="xyxy")},
            progress=False).from_indexed_dataset(ListDataset(items))
    path = tmp_path / "rows.beton"
    DatasetWriter(str(path), {"video": VideoField(), "rows": RaggedArrayField(np.float32, (4,))},
                  progress=False).from_indexed_dataset(ListDataset(items))
    with pytest.raises(ValueError, match='output "rows" follows "video", which is not an image output decoded in Go'):
        load(path, pipelines={"video": [RandomClipDecoder(2)], "rows": [RaggedDecoder(follows="video")]})


def test_runs_without_pyav(tmp_path):
    """Without PyAV only the tests that decode video files skip: those of
    arrays and arguments still run."""
    import subprocess
    import ffcv_go
    blocked = tmp_path / "blocked" / "av"
    blocked.mkdir(parents=True)
    (blocked / "__init__.py").write_text("raise ImportError('PyAV is blocked for this test')\n")
    path = os.pathsep.join([str(blocked.parent), str(Path(ffcv_go.__file__).parents[1])])
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__,
                        "-k", "frame_rate_and_step or field_arguments or corrupt_h264"],
                       env=dict(os.environ, PYTHONPATH=path), capture_output=True, text=True, timeout=300)
    assert "6 passed, 2 skipped" in r.stdout, r.stdout[-2000:]
