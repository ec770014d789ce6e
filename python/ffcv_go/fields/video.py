"""VideoField: a clip of frames per sample, each frame stored as
RGBImageField stores a JPEG image (restart markers included), so that a clip
decoder region-decodes only the part of each frame under its crop.

Video files (mp4, webm, mkv, anything FFmpeg reads) are decoded with PyAV
(``pip install av``; its wheels bundle FFmpeg) by the writer's fetch workers;
frame folders and arrays are taken as they are. The clip decoders live in
``ffcv_go.fields.decoders`` (RandomClipDecoder, ClipDecoder).
"""
import io
import json
import os
import re
from typing import NamedTuple

import numpy as np

from .base import Field, ARG_TYPE, _Decoder, _set_data

_FRAME_FILES = (".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff", ".gif")


class Frames(NamedTuple):
    """A clip as the writer takes it: ``frames`` an (T, H, W, C) uint8 array
    (C 1, 3 or 4) or a list of T image files, and its frame rate ``fps``
    (None when unknown)."""
    frames: object
    fps: object = None


class VideoField(Field):
    """A clip per sample: every frame stored as a JPEG with restart markers
    (RGBImageField's ``write_mode='jpg'``), all frames of a clip one size,
    with the frame count, frame rate and size in the metadata.

    A value is a video file (mp4, webm, mkv, ... decoded with PyAV) by its
    path (str or os.PathLike) or as bytes, a folder of frame images (sorted by name, numbers in it compared as
    numbers), an (T, H, W, C) uint8 array, a list of image files, or
    ``Frames(frames, fps)`` for arrays and lists with a known frame rate.

    - ``max_resolution``: frames are downscaled (area) so their longer side
      fits, as RGBImageField's. Frames decoded from video files are scaled
      by FFmpeg's area scaler as they are decoded (the full-size frames never
      cross between processes); arrays and frame files by the Go encoder.
    - ``jpeg_quality``: as RGBImageField's.
    - ``fps``: resample to this frame rate at write time (each output instant
      takes the source frame nearest to it; needs a source rate: video files
      have theirs, arrays and folders need ``Frames(..., fps)``).
    - ``frame_step``: then keep every frame_step-th frame (the stored rate
      is divided by it).

    A sample's frames lie in one heap page: a long clip needs a larger
    ``DatasetWriter(page_size=...)``. FFCV cannot read files with this
    field (type id 103).
    """
    TYPE_ID = 103
    _clips = True  # image decoders refuse it, naming the clip decoders

    def __init__(self, max_resolution=None, jpeg_quality=90, fps=None, frame_step=1):
        if max_resolution is not None and int(max_resolution) < 1:
            raise ValueError(f"VideoField: max_resolution {max_resolution} must be positive")
        if not 1 <= int(jpeg_quality) <= 100:
            raise ValueError(f"VideoField: jpeg_quality {jpeg_quality} must be in [1, 100]")
        if fps is not None and not (np.isfinite(float(fps)) and float(fps) > 0):
            raise ValueError(f"VideoField: fps {fps} must be positive")
        if int(frame_step) < 1:
            raise ValueError(f"VideoField: frame_step {frame_step} must be at least 1")
        self.max_resolution = None if max_resolution is None else int(max_resolution)
        self.jpeg_quality = int(jpeg_quality)
        self.fps = None if fps is None else float(fps)
        self.frame_step = int(frame_step)

    @property
    def metadata_type(self):
        return np.dtype([("ptr", "<u8"), ("size", "<u8"), ("fps", "<f8"), ("frames", "<u4"), ("width", "<u4"),
                         ("height", "<u4"), ("encoding", "u1"), ("_pad", "u1", 3)], align=True)

    @staticmethod
    def from_binary(binary):
        raw = np.ascontiguousarray(binary).view(np.uint8).reshape(-1).tobytes() \
            if isinstance(binary, np.ndarray) else bytes(binary)
        args = json.loads(raw.split(b"\0", 1)[0] or b"{}")
        if args.get("encoding", "jpeg") != "jpeg":
            raise ValueError(f"VideoField: unknown frame encoding {args.get('encoding')!r}")
        return VideoField()

    def to_binary(self):
        raw = np.zeros(1024, dtype=np.uint8)
        b = json.dumps({"encoding": "jpeg"}, separators=(",", ":")).encode()
        raw[:len(b)] = np.frombuffer(b, dtype=np.uint8)
        return raw.view(ARG_TYPE)[0]

    def get_decoder_class(self):
        return _NoClipDecoder

    def _spec(self):
        return {"max_resolution": self.max_resolution or 0, "jpeg_quality": self.jpeg_quality}

    # Decoding happens here, in the writer's fetch workers (processes or
    # threads): a path becomes the frames the Go encoder takes.
    def _portable(self, value):
        return self._frames(value)

    def _value(self, value, v, keep):
        clip = self._frames(value)
        v.f = float(clip.fps or 0.0)
        if isinstance(clip.frames, np.ndarray):
            arr = clip.frames
            v.height, v.width, v.channels = arr.shape[1:]
            _set_data(v, arr, keep)
        else:
            v.encoded = 2  # files the Go encoder reads itself, NUL-separated
            _set_data(v, b"\0".join(os.fsencode(p) for p in clip.frames), keep)

    def _frames(self, value):
        """value as Frames: a checked array or list of files, resampled."""
        if isinstance(value, _Clip):
            return value
        where = None
        if isinstance(value, (str, os.PathLike)):
            where = os.fspath(value)
            if os.path.isdir(where):
                value = Frames(_folder(where), None)
            else:
                clip = _decode(where, self.max_resolution, self.fps, self.frame_step)
                return _ready(clip)
        elif isinstance(value, (bytes, bytearray, memoryview)):
            return _ready(_decode(bytes(value), self.max_resolution, self.fps, self.frame_step))
        elif isinstance(value, Frames):
            value = Frames(value.frames, value.fps)
        else:
            value = Frames(value, None)
        frames, fps = value
        if fps is not None and not (np.isfinite(float(fps)) and float(fps) > 0):
            raise ValueError(f"VideoField: frame rate {fps} must be positive")
        fps = None if fps is None else float(fps)
        if isinstance(frames, (list, tuple)) and all(isinstance(p, (str, os.PathLike)) for p in frames):
            frames = [os.fspath(p) for p in frames]
        else:
            frames = _array(frames)
        n = len(frames)
        if n == 0:
            raise ValueError(f"VideoField: {where or 'the clip'} has no frames")
        if self.fps is not None:
            if fps is None:
                raise ValueError(f"VideoField(fps={self.fps:g}) resamples clips: give the source rate of "
                                 f"{where or 'this clip'} as Frames(frames, fps)")
            keep = _resample(np.arange(n) / fps, self.fps)
            fps = self.fps
        else:
            keep = np.arange(n)
        keep = keep[::self.frame_step]
        if fps is not None:
            fps /= self.frame_step
        frames = frames[keep] if isinstance(frames, np.ndarray) else [frames[k] for k in keep]
        return _ready(Frames(np.ascontiguousarray(frames) if isinstance(frames, np.ndarray) else frames, fps))


class _Clip:
    """Frames checked and resampled by a VideoField: what its fetch workers
    send the writer (arrays travel out of band)."""
    __slots__ = ("frames", "fps")

    def __init__(self, frames, fps):
        self.frames, self.fps = frames, fps

    def __reduce__(self):
        return _Clip, (self.frames, self.fps)


def _ready(clip):
    return _Clip(clip.frames, clip.fps)


def _array(frames):
    if hasattr(frames, "detach") and hasattr(frames, "numpy"):
        frames = frames.detach().cpu().numpy()
    if not isinstance(frames, np.ndarray):
        raise TypeError(f"VideoField takes a video file's path (str or os.PathLike) or bytes, a folder of frames, "
                        f"an (T, H, W, C) uint8 array or a list of image file paths, got {type(frames).__name__}")
    if frames.dtype != np.uint8:
        raise TypeError(f"VideoField needs uint8 frames, got {frames.dtype}")
    if frames.ndim == 3:
        frames = frames[..., None]
    if frames.ndim != 4 or frames.shape[3] not in (1, 3, 4) or 0 in frames.shape[1:3]:
        raise ValueError(f"VideoField needs (T, H, W, C) frames with C 1, 3 or 4, got shape {frames.shape}")
    return frames


def _natural(name):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


def _folder(path):
    files = sorted((f for f in os.listdir(path) if f.lower().endswith(_FRAME_FILES)), key=_natural)
    return [os.path.join(path, f) for f in files]


def _resample(times, fps):
    """Indices of the frames (at ascending times, seconds) nearest to the
    instants 0, 1/fps, 2/fps, ... up to the last frame."""
    times = np.asarray(times, dtype=np.float64)
    times = times - times[0]
    targets = np.arange(int(np.floor(times[-1] * fps + 1e-9)) + 1) / fps
    right = np.clip(np.searchsorted(times, targets), 0, len(times) - 1)
    left = np.clip(right - 1, 0, len(times) - 1)
    # Ties (an instant halfway between two frames) go to the earlier frame,
    # whatever the rounding of the times.
    return np.where(np.abs(times[left] - targets) <= np.abs(times[right] - targets) + 1e-9, left, right)


def _stored_size(width, height, max_resolution):
    """The size frames are stored at: RGBImageField's max_resolution rule."""
    if not max_resolution or max(width, height) <= max_resolution:
        return width, height
    ratio = max_resolution / max(width, height)
    return max(int(ratio * width), 1), max(int(ratio * height), 1)


def _decode(path, max_resolution, fps, frame_step):
    """The frames of a video file, decoded with PyAV at the stored size,
    resampled to fps and thinned to every frame_step-th. A file that does
    not decode whole -- a frame with a decode error, or frames missing
    from its end -- is refused (ValueError naming the file and the frame)."""
    try:
        import av
    except ImportError:
        raise ImportError("VideoField decodes video files with PyAV: pip install av") from None
    if isinstance(path, bytes):  # the file's bytes
        src, path = io.BytesIO(path), "the video given as bytes"
    elif not os.path.exists(path):
        raise FileNotFoundError(f"VideoField: no such video file: {path}")
    else:
        src = path
    if (src.getbuffer().nbytes if isinstance(src, io.BytesIO) else os.path.getsize(src)) == 0:
        raise ValueError(f"VideoField: {path} is empty (0 bytes)")
    try:
        container = av.open(src)
    except av.error.FFmpegError as e:
        raise ValueError(f"VideoField: {path} is not a video file FFmpeg can read ({_reason(e)})") from None
    frames, times, last = [], [], None
    with container:
        if not container.streams.video:
            raise ValueError(f"VideoField: {path} has no video stream")
        stream = container.streams.video[0]
        # Slice threads, not frame threads: after a decode error FFmpeg's
        # frame threads can leave avcodec_free_context waiting forever (seen
        # under load), and an error is then reported at its own frame. The
        # writer decodes several files at once in its fetch workers anyway.
        stream.thread_type = "SLICE"
        # Without this FFmpeg conceals a damaged slice (it logs "error while
        # decoding MB") and hands out the frame as if whole.
        stream.codec_context.options = {"err_detect": "explode"}
        rate = float(stream.average_rate) if stream.average_rate else None
        size = None
        try:
            for packet in container.demux(stream):
                for frame in packet.decode():
                    if size is None:
                        size = _stored_size(frame.width, frame.height, max_resolution)
                    frames.append(frame.to_ndarray(format="rgb24", width=size[0], height=size[1],
                                                   interpolation="AREA"))
                    times.append(frame.time if frame.time is not None else len(times) / (rate or 1.0))
                    last = frame
        except av.error.FFmpegError as e:
            raise ValueError(f"VideoField: {path} is corrupt: {_frame_at(rate, len(frames))} "
                             f"does not decode ({_reason(e)})") from None
        _check_whole(path, container, stream, times, rate, last)
    keep = _resample(times, fps) if fps is not None else np.arange(len(frames))
    keep = keep[::frame_step]
    out_fps = fps if fps is not None else rate
    return Frames(np.stack([frames[k] for k in keep]), None if out_fps is None else out_fps / frame_step)


def _frame_at(rate, decoded):
    """Names the frame that failed: frames come out in order (frame
    threading delays the error, not the order), so it is the next one."""
    return f"frame {decoded}" + (f" (at {decoded / rate:.3g} s)" if rate else "")


def _reason(e):
    """FFmpeg's words for error e, without its errno and the file name."""
    text = getattr(e, "strerror", None) or str(e)
    return text[:1].lower() + text[1:]


def _check_whole(path, container, stream, times, rate, last):
    """Refuses a video whose frames stop short of what its container says:
    fewer frames than it lists (mp4), or the last frame's time short of its
    stream's duration (a webm or mkv cut off; their headers keep the whole
    duration)."""
    if not times:
        raise ValueError(f"VideoField: {path} is truncated or corrupt: no frame decodes")
    listed = int(stream.frames or 0)
    if listed and len(times) < listed:
        raise ValueError(f"VideoField: {path} is truncated: its container lists {listed} frames, "
                         f"{len(times)} decode")
    duration = _stream_duration(container, stream)
    if duration is None or not rate:
        return
    start = float(stream.start_time * stream.time_base) if stream.start_time is not None else 0.0
    # The end of the last frame: its own duration when the stream gives it
    # (a variable rate), else the average frame's.
    d = getattr(last, "duration", None)  # PyAV 13 and later
    shown = float(d * last.time_base) if d and last.time_base else 1.0 / rate
    end = times[-1] - start + shown
    if end < duration - 2.0 / rate - 1e-3:  # a frame's jitter is no cut
        raise ValueError(f"VideoField: {path} is truncated: its frames stop at frame {len(times)} "
                         f"({end:.3g} s) of a {duration:.3g} s video")


def _stream_duration(container, stream):
    """The duration (s) the container gives the video stream: its own, its
    DURATION tag (Matroska), or the file's when it holds this stream only;
    None when unknown."""
    if stream.duration and stream.time_base:
        return float(stream.duration * stream.time_base)
    tag = (stream.metadata or {}).get("DURATION") or (stream.metadata or {}).get("duration")
    m = re.fullmatch(r"(\d+):(\d+):(\d+(?:\.\d*)?)", tag.strip()) if tag else None
    if m:
        return int(m.group(1)) * 3600 + int(m.group(2)) * 60 + float(m.group(3))
    if container.duration and len(container.streams) == 1:
        return container.duration / 1e6  # AV_TIME_BASE
    return None


class _NoClipDecoder(_Decoder):
    """The default decoder of a VideoField: there is none, a clip needs its
    length. Refuses with what to write instead."""

    def __init__(self):
        super().__init__()

    def accept_field(self, field):
        raise ValueError("a VideoField has no default decoder: start its pipeline with "
                         "RandomClipDecoder(num_frames, ...) or ClipDecoder(num_frames, ...)")

    def declare_state_and_memory(self, previous_state):
        raise ValueError("a VideoField needs a clip decoder")

    def generate_code(self):
        raise NotImplementedError
