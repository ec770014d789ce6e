"""The clip decoders of VideoField: which frames make a clip (drawn per sample
and epoch, or evenly spaced), and one image decoder's geometry (crop, resize,
flip) drawn once per clip and applied to every frame, each frame
region-decoded. Run in Go."""
import numpy as np

from .base import _Decoder
from .rgb_image import SimpleRGBImageDecoder
from .video import VideoField
from ..pipeline.allocation_query import AllocationQuery
from ..pipeline.operation import _check_spec, _seed_arg
from ..pipeline.state import State


class _ClipDecoder(_Decoder):
    _default_geometry = SimpleRGBImageDecoder
    _clip = True  # the planner lifts the per-image ops after it over the clip's frames

    def __init__(self, num_frames, geometry=None, stride=None, fps=None, short="repeat"):
        super().__init__()
        for name, v in (("num_frames", num_frames), ("stride", stride)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer))):
                raise TypeError(f"{type(self).__name__}: {name} {v!r} must be an integer")
        geometry = self._default_geometry() if geometry is None else geometry
        if not (getattr(geometry, "_decoder", False) and getattr(geometry, "_builtin", False)):
            raise TypeError(f"{type(self).__name__}: geometry must be a decoder of ffcv_go "
                            f"(RandomResizedCropRGBImageDecoder, ...), got {type(geometry).__name__}")
        self.num_frames = int(num_frames)
        self.geometry = geometry
        self.stride = 1 if stride is None and fps is None else (None if stride is None else int(stride))
        self.fps = None if fps is None else float(fps)
        self.short = str(short)

    def _field_classes(self):
        return (VideoField,)

    def accept_field(self, field):
        if not isinstance(field, VideoField):
            raise TypeError(f"{type(self).__name__} decodes a VideoField, not a {type(field).__name__}")
        super().accept_field(field)

    def _frame_shape(self):
        g = self.geometry
        if isinstance(g, SimpleRGBImageDecoder):
            # Whole frames: the first video's size (the Go core checks, when
            # the loader is built, that every video has it).
            widths, heights = self.metadata["width"], self.metadata["height"]
            return (int(heights[0]), int(widths[0]), 3) if len(widths) else (0, 0, 3)
        return (*g.output_size, 3)

    def _shape(self):
        return (self.num_frames, *self._frame_shape())

    def declare_state_and_memory(self, previous_state):
        shape = self._shape()
        return (State(previous_state.jit_mode, previous_state.device, shape, np.dtype("u1")),
                AllocationQuery(shape, np.dtype("u1")))

    def _clip_spec(self, op):
        spec = {"op": op, "num_frames": self.num_frames, "short": self.short,
                "geometry": dict(self.geometry._go_spec(), **{"class": type(self.geometry).__name__})}
        if self.fps is not None:
            spec["fps"] = self.fps
        if self.stride is not None:
            spec["stride"] = self.stride
        return spec

    def _check(self):
        """Checks the arguments in the Go core (which geometries a clip
        takes included), naming the geometry as written, not by its op."""
        spec = self._go_spec()
        try:
            _check_spec(self, spec)
        except ValueError as e:
            op, name = spec["geometry"]["op"], type(self.geometry).__name__
            raise ValueError(str(e).replace(f'"{op}"', name).replace(f"geometry: {op}:", f"geometry: {name}:")) \
                from None

    def generate_code(self):
        raise NotImplementedError(f"{type(self).__name__} runs in the Go core only")


class RandomClipDecoder(_ClipDecoder):
    """A clip of ``num_frames`` frames per sample, its start drawn anew each
    epoch, as (T, H, W, 3) uint8; batches are (B, T, H, W, 3)
    (``ToTorchVideo`` makes them (B, 3, T, H, W)).

    - ``stride``: frames k·stride apart (default 1, every stored frame), or
      ``fps``: frames at this rate, from the rate stored with each video
      (frame start + floor(k · stored_fps / fps)).
    - ``geometry``: the image decoder whose crop each frame goes through:
      ``RandomResizedCropRGBImageDecoder(size, scale, ratio)``,
      ``CenterCropRGBImageDecoder(size, ratio)``,
      ``ResizePadRGBImageDecoder(size, ...)`` or ``SimpleRGBImageDecoder()``
      (the default: whole frames, every video one size). It draws once per
      clip: every frame gets the same crop, each frame region-decoded (only
      the restart intervals under the crop, DCT-scaled). Transforms after
      the decoder (flips, colour jitter, blur, normalize, ...) also draw
      once per clip and apply to every frame.
    - ``short``: a clip longer than its video takes, past the video's last
      frame, ``'repeat'`` the last frame (default), ``'loop'`` frames from
      the start again, or ``'pad'`` black frames. A video at least as long
      as the clip has its start drawn uniformly over every start that fits.

    Every draw is keyed by (seed, epoch, sample position, operation), so any
    number of workers gives the same clips.
    """

    def __init__(self, num_frames, geometry=None, stride=None, fps=None, short="repeat", seed=None):
        super().__init__(num_frames, geometry, stride, fps, short)
        self.seed = _seed_arg(seed)
        self._check()

    def _go_spec(self, previous_state=None):
        spec = self._clip_spec("clip_random")
        if self.seed is not None:
            spec["seed"] = self.seed
        return spec


class ClipDecoder(_ClipDecoder):
    """Evaluation clips: ``num_clips`` clips of ``num_frames`` frames evenly
    spaced over each video -- clip j starts at the middle of the j-th of
    ``num_clips`` equal parts of the starts that fit, so one clip is the
    centre clip. (T, H, W, 3) per sample for one clip, (num_clips, T, H, W, 3)
    for more. ``geometry`` defaults to the whole frame; for evaluation give
    ``CenterCropRGBImageDecoder(size, ratio)``. ``stride``, ``fps`` and
    ``short`` as RandomClipDecoder's."""

    def __init__(self, num_frames, num_clips=1, geometry=None, stride=None, fps=None, short="repeat"):
        super().__init__(num_frames, geometry, stride, fps, short)
        if isinstance(num_clips, bool) or not isinstance(num_clips, (int, np.integer)):
            raise TypeError(f"ClipDecoder: num_clips {num_clips!r} must be an integer")
        self.num_clips = int(num_clips)
        self._check()

    def _shape(self):
        clip = super()._shape()
        return clip if self.num_clips == 1 else (self.num_clips, *clip)

    def _go_spec(self, previous_state=None):
        return dict(self._clip_spec("clip_eval"), num_clips=self.num_clips)
