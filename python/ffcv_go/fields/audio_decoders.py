"""The decoders of AudioField: a clip's frames -- whole, its first seconds,
or a window drawn per sample and epoch -- decoded in Go straight into the
batch as float32, optionally mixed down to mono, with each clip's valid
length.

Batches come as ``Audio(data, lengths)``: ``data`` (B, C, N) float32,
zero past each clip's ``lengths`` (B,) int64 frames, read from one uint8
batch buffer of shape (B, C, 8 + 4·N) (per channel row an int64 length,
then the N samples): the layout every audio transform after the decoder
reads and writes, so the lengths reach the batch through them."""
import math
from typing import NamedTuple

import numpy as np

from .audio import AudioField
from .base import _Decoder
from ..pipeline.allocation_query import AllocationQuery
from ..pipeline.operation import _check_spec, _seed_arg
from ..pipeline.state import State


class Audio(NamedTuple):
    """A batch of an audio pipeline: ``data`` float32, (B, C, N) waveforms
    or (B, n_mels, T) (or (B, C, n_mels, T)) spectrograms, zero past each
    sample's ``lengths`` (B,) int64 (frames of the waveform, or of the
    spectrogram); ``mask()`` gives the (B, N) or (B, T) attention mask. The
    data is a view of the batch buffer, whose rows each begin with the
    sample's length (the layout every audio operation reads and writes)."""
    data: "object"
    lengths: "object"

    @property
    def waveform(self):
        """``data``, by its name for waveforms."""
        return self.data

    @staticmethod
    def of(x):
        """The Audio view of an audio decoder's or audio transform's raw
        batch ``x``, a (B, ..., 8 + 4·N) uint8 tensor or array (each row an
        int64 length, then N float32), as a Python stage after it gets it."""
        if (x.ndim < 3 or x.shape[-1] < 8 or (x.shape[-1] - 8) % 4
                or str(x.dtype) not in ("torch.uint8", "uint8")):
            raise ValueError(f"Audio.of takes an audio decoder's or audio transform's (B, ..., 8 + 4*N) uint8 batch, "
                             f"got shape {tuple(x.shape)}, dtype {x.dtype}")
        first = (slice(None),) + (0,) * (x.ndim - 2) + (slice(0, 8),)
        if isinstance(x, np.ndarray):
            return Audio(x[..., 8:].view("<f4"), x[first].copy().view("<i8").reshape(-1))
        import torch
        # The lengths are copied (B × 8 bytes) into memory of their own: a
        # row is 8 + 4·N bytes, not always a multiple of 8, so no int64 view
        # of them in place.
        return Audio(x[..., 8:].view(torch.float32), x[first].reshape(-1).clone().view(torch.int64))

    def mask(self):
        """(B, N) bool: True on each sample's valid frames."""
        n = self.data.shape[-1]
        if isinstance(self.lengths, np.ndarray):  # numpy 2's arrays have a .device too
            return np.arange(n)[None, :] < self.lengths[:, None]
        import torch
        return torch.arange(n, device=self.lengths.device)[None, :] < self.lengths[:, None]


def _finish_audio(x):
    """A batch in the rows layout as Audio; anything else (a Python stage
    changed it) as it is."""
    if (x.ndim >= 3 and x.shape[-1] >= 8 and (x.shape[-1] - 8) % 4 == 0
            and str(x.dtype) in ("torch.uint8", "uint8")):
        return Audio.of(x)
    return x


def _finite(op, name, value):
    """value as a float; infinity and NaN do not cross to Go as JSON."""
    x = float(value)
    if not math.isfinite(x):
        raise ValueError(f"{type(op).__name__}: {name} {value} must be a finite number of seconds")
    return x


class _AudioDecoder(_Decoder):
    def __init__(self, mono=False):
        super().__init__()
        if not isinstance(mono, (bool, np.bool_)):
            raise TypeError(f"{type(self).__name__}: mono {mono!r} must be True or False")
        self.mono = bool(mono)

    def _field_classes(self):
        return (AudioField,)

    def _seconds(self):
        raise NotImplementedError

    def _layout(self):
        """(channels, frames) of each sample's output, from the metadata as
        the Go core computes it (which checks that the clips have one
        sample rate and, unless mono, one channel count)."""
        m = self.metadata
        if m is None or len(m) == 0:
            return 1, 0
        rate, channels = int(m["sample_rate"][0]), int(m["channels"][0])
        secs = self._seconds()
        frames = max(int(math.floor(secs * rate + 0.5)), 1) if secs else int(m["frames"].max())
        return (1 if self.mono else channels), frames

    def declare_state_and_memory(self, previous_state):
        c, n = self._layout()
        shape = (c, 8 + 4 * n)
        return (State(previous_state.jit_mode, previous_state.device, shape, np.dtype("u1")),
                AllocationQuery(shape, np.dtype("u1")))

    def _finish_batch(self, x):
        """The (B, C, 8 + 4·N) uint8 batch as Audio(data, lengths) views;
        a batch that a Python stage changed is handed on as it is."""
        c, n = self._layout()
        if tuple(x.shape[1:]) != (c, 8 + 4 * n) or str(x.dtype) not in ("torch.uint8", "uint8"):
            return x
        return Audio.of(x)

    def generate_code(self):
        raise NotImplementedError(f"{type(self).__name__} runs in the Go core only")


class AudioDecoder(_AudioDecoder):
    """Whole clips, or their first ``max_seconds`` seconds: (C, N) float32
    per sample, N the longest clip's frames (or max_seconds × the sample
    rate, rounded), shorter clips zero-padded; batches are
    ``Audio(data (B, C, N), lengths (B,))``. ``mono=True`` mixes the
    channels down to one (their mean). Every clip of the file must have one
    sample rate, and, unless mono, one channel count."""
    _go_name = "audio"

    def __init__(self, max_seconds=None, mono=False):
        super().__init__(mono)
        self.max_seconds = None if max_seconds is None else _finite(self, "max_seconds", max_seconds)
        _check_spec(self, self._go_spec())

    def _seconds(self):
        return self.max_seconds

    def _go_spec(self, previous_state=None):
        return {"op": "audio", "max_seconds": self.max_seconds or 0.0, "mono": self.mono}


class RandomAudioCropDecoder(_AudioDecoder):
    """A window of ``seconds`` seconds per clip, its start drawn anew each
    epoch (uniform over the starts that fit; keyed like every random
    operation, by seed, epoch, sample position and the operation, so any
    number of workers gives the same windows); only the frames under it
    are decoded (FLAC and Opus seek, MP3 from a frame-header index, WAV by
    offset). A clip shorter than the window is taken whole, zero-padded,
    its length saying so. ``mono`` as AudioDecoder's."""
    _go_name = "audio_random_crop"

    def __init__(self, seconds, mono=False, seed=None):
        super().__init__(mono)
        self.seconds = _finite(self, "seconds", seconds)
        self.seed = _seed_arg(seed)
        _check_spec(self, self._go_spec())

    def _seconds(self):
        return self.seconds

    def _go_spec(self, previous_state=None):
        spec = {"op": "audio_random_crop", "seconds": self.seconds, "mono": self.mono}
        if self.seed is not None:
            spec["seed"] = self.seed
        return spec
