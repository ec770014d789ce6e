"""Audio transforms, run in Go per sample: on waveforms (MonoMix, Resample,
Gain, SpeedPerturbation, AddNoise, MelSpectrogram, WhisperLogMel) and on
spectrograms (TimeMasking, FrequencyMasking). Each is equal to the
torchaudio or Whisper function it names (see docs/guides/audio.md for the
tolerances).

They take what an audio decoder gives, (C, 8 + 4·N) uint8 rows (each an
int64 valid length, then N float32 samples), and give the same layout:
waveforms (C, 8 + 4·N'), spectrograms (n_mels, 8 + 4·T) (or (C, n_mels,
8 + 4·T) for C > 1 channels) with their valid frames. Each works on the
valid part, leaves zeros after it and heads its rows with its own length,
so a batch comes as ``Audio(data, lengths)`` whatever the transforms. A
plain float32 array (an NDArrayField's (N,) or (C, N) waveforms, (F, T) or
(C, F, T) spectrograms) is taken as all valid. The classes describe the
operations and ask the Go core for their arguments' checks and their
output shapes."""
import numbers

import numpy as np
import torch

from .. import _lib
from ..fields.audio_decoders import _finish_audio
from ..pipeline.operation import _ArgumentError, _check_spec, _seed_arg
from ._base import Transform, replace_state
from .image import _seeded


class _Audio(Transform):
    """A Go transform of the rows layout (or float32 arrays of ``_ndims``
    dimensions) on the CPU, described by ``_spec()``."""

    _ndims = (1, 2)
    _input = "waveforms: an audio decoder's (C, 8 + 4*N) uint8 rows, or float32 (N,) or (C, N)"

    def _check(self):
        _check_spec(self, self._spec())

    def _fits(self, state):
        if not state.jit_mode or state.shape is None:
            return False
        dt = np.dtype(state.dtype)
        return (dt == np.float32 and len(state.shape) in self._ndims) or (dt == np.uint8 and len(state.shape) >= 2)

    def _go_spec(self, state):
        return self._spec() if self._fits(state) else None

    def declare_state_and_memory(self, previous_state):
        if not self._fits(previous_state):
            return previous_state, None
        try:
            shape, dtype = _lib.op_out(self._spec(), previous_state.shape, np.dtype(previous_state.dtype).str)
        except ValueError as e:
            raise _ArgumentError(type(self).__name__, str(e)) from None
        return replace_state(previous_state, shape=shape, dtype=np.dtype(dtype)), None

    def _finish_batch(self, x):
        """The batch as Audio(data, lengths) views."""
        return _finish_audio(x)

    def _misplaced(self, name, index, state):
        return (f"{name!r}: {type(self).__name__} (operation {index}) runs in Go on CPU "
                f"{self._input}; here its input is shape {state.shape}, dtype {state.dtype}, "
                f"on {state.device}. Put it right after an audio decoder or another audio transform, "
                f"before ToTensor/ToDevice.")


class MonoMix(_Audio):
    """Averages the channels of a (C, N) waveform: ``waveform.mean(0,
    keepdim=True)``, (1, N)."""

    def __init__(self):
        super().__init__()
        self._check()

    def _spec(self):
        return {"op": "audio_mono"}


class Resample(_Audio):
    """torchaudio.transforms.Resample with sinc_interp_hann: (..., N) to
    (..., ceil(new_freq * N / orig_freq)), equal to
    torchaudio.functional.resample on float32 waveforms (beta is the
    Kaiser window's, unused here, as in torchaudio)."""

    def __init__(self, orig_freq=16000, new_freq=16000, resampling_method="sinc_interp_hann",
                 lowpass_filter_width=6, rolloff=0.99, beta=None, dtype=None):
        super().__init__()
        if resampling_method != "sinc_interp_hann":
            raise _ArgumentError(type(self).__name__, f"resampling_method {resampling_method!r}: only "
                                 f"'sinc_interp_hann' is implemented")
        if dtype not in (None, torch.float32):
            raise _ArgumentError(type(self).__name__, f"dtype {dtype}: the kernel is float32's, as torchaudio "
                                 f"makes it for float32 waveforms")
        self.orig_freq, self.new_freq = _int(orig_freq, "orig_freq", self), _int(new_freq, "new_freq", self)
        self.lowpass_filter_width = _int(lowpass_filter_width, "lowpass_filter_width", self)
        self.rolloff = float(rolloff)
        self._check()

    def _spec(self):
        return {"op": "audio_resample", "orig_freq": self.orig_freq, "new_freq": self.new_freq,
                "lowpass_filter_width": self.lowpass_filter_width, "rolloff": self.rolloff}


class Gain(_Audio):
    """Scales each waveform by a gain drawn uniformly in [min_db, max_db]
    decibels: torchaudio.functional.gain, ``waveform * 10 ** (gain / 20)``
    (no clipping). seed pairs the draw across pipelines."""

    def __init__(self, min_db=-6.0, max_db=6.0, seed=None):
        super().__init__()
        self.min_db, self.max_db, self.seed = float(min_db), float(max_db), _seed_arg(seed)
        self._check()

    def _spec(self):
        return _seeded({"op": "audio_gain", "min_db": self.min_db, "max_db": self.max_db}, self.seed)


class SpeedPerturbation(_Audio):
    """torchaudio.transforms.SpeedPerturbation: a factor drawn uniformly
    from factors, then torchaudio.functional.speed (a resampling from
    int(factor * orig_freq) to orig_freq Hz: faster is shorter). The output
    is as long as the slowest factor makes it; the rest of a faster draw
    is zeros, and the sample's valid length says where they start."""

    def __init__(self, orig_freq, factors, seed=None):
        super().__init__()
        self.orig_freq = _int(orig_freq, "orig_freq", self)
        self.factors = [float(f) for f in factors]
        self.seed = _seed_arg(seed)
        self._check()

    def _spec(self):
        return _seeded({"op": "audio_speed", "orig_freq": self.orig_freq, "factors": self.factors}, self.seed)


class AddNoise(_Audio):
    """Adds noise at a signal-to-noise ratio drawn uniformly in ``snr_db``
    = (low, high) decibels, by torchaudio.functional.add_noise's rule on
    each channel's valid samples (the padding stays zero). The noise is a
    clip of ``noise``, an AudioField at the clips' sample rate (put AddNoise
    before a Resample), drawn per sample with a window of it as long as the
    clip (a shorter noise clip repeats), keyed like every random transform
    (the same for any number of workers, and on resume). A noise of the
    clip's channel count is added channel to channel, another one mixed down
    to mono first.

    Without ``source``, ``noise`` is another field of the dataset being read
    (of a :class:`~ffcv_go.loader.Mixture`, any of the samples its epochs
    take). With ``source`` (a name, ``Source(name=)``, or an index in the
    Mixture's list), the noise clips are drawn from that source of the
    Mixture alone, ``noise`` being one of its fields; a noise corpus is best
    a side source, which no epoch takes samples of and whose fields need
    not match the others': ``Source("musan.beton", proportion=0,
    name="musan")`` with ``AddNoise((0, 15), noise="audio",
    source="musan")``."""

    def __init__(self, snr_db=(0.0, 20.0), noise=None, source=None, seed=None):
        super().__init__()
        try:
            self.snr_db = tuple(float(v) for v in snr_db)
        except (TypeError, ValueError):
            raise _ArgumentError(type(self).__name__, f"snr_db {snr_db!r}: give (low, high) in dB") from None
        if not isinstance(noise, str):
            raise _ArgumentError(type(self).__name__, f"noise {noise!r}: name the AudioField the noise clips are "
                                 f"drawn from")
        if source is not None and (isinstance(source, bool) or not isinstance(source, (str, numbers.Integral))
                                   or (not isinstance(source, str) and source < 0)):
            raise _ArgumentError(type(self).__name__, f"source {source!r}: give a source of the Mixture by its "
                                 f"name or index")
        self.noise, self.seed = noise, _seed_arg(seed)
        self.source = source if source is None or isinstance(source, str) else int(source)
        self._check()

    def _spec(self):
        spec = {"op": "audio_add_noise", "snr_db": list(self.snr_db), "noise": self.noise}
        if self.source is not None:
            spec["source"] = self.source
        return _seeded(spec, self.seed)


class MelSpectrogram(_Audio):
    """torchaudio.transforms.MelSpectrogram with its defaults and
    arguments (a periodic Hann window): one channel to (n_mels, T), C > 1
    channels to (C, n_mels, T), T = 1 + N // hop_length when centred; of
    a clip shorter than its slot, the frames of its valid samples, 1 +
    length // hop_length, the rest zero."""

    def __init__(self, sample_rate=16000, n_fft=400, win_length=None, hop_length=None, f_min=0.0, f_max=None,
                 pad=0, n_mels=128, window_fn=torch.hann_window, power=2.0, normalized=False, wkwargs=None,
                 center=True, pad_mode="reflect", onesided=None, norm=None, mel_scale="htk"):
        super().__init__()
        if pad != 0 or normalized or onesided is False:
            raise _ArgumentError(type(self).__name__, "pad, normalized and onesided=False are not implemented: "
                                 "leave them 0, False and None")
        if window_fn is not torch.hann_window or wkwargs not in (None, {}, {"periodic": True}):
            raise _ArgumentError(type(self).__name__, "window_fn: only torch.hann_window (periodic) is implemented")
        if power is None:
            raise _ArgumentError(type(self).__name__, "power None (complex spectrograms) is not implemented")
        self.sample_rate, self.n_fft = _int(sample_rate, "sample_rate", self), _int(n_fft, "n_fft", self)
        self.win_length = None if win_length is None else _int(win_length, "win_length", self)
        self.hop_length = None if hop_length is None else _int(hop_length, "hop_length", self)
        self.f_min, self.f_max = float(f_min), None if f_max is None else float(f_max)
        self.n_mels, self.power = _int(n_mels, "n_mels", self), float(power)
        self.center, self.pad_mode, self.norm, self.mel_scale = bool(center), str(pad_mode), norm, str(mel_scale)
        self._check()

    def _spec(self):
        spec = {"op": "mel_spectrogram", "sample_rate": self.sample_rate, "n_fft": self.n_fft, "f_min": self.f_min,
                "n_mels": self.n_mels, "power": self.power, "center": self.center, "pad_mode": self.pad_mode,
                "norm": self.norm, "mel_scale": self.mel_scale}
        for k in ("win_length", "hop_length", "f_max"):
            if getattr(self, k) is not None:
                spec[k] = getattr(self, k)
        return spec


class WhisperLogMel(_Audio):
    """whisper.audio.log_mel_spectrogram of 16 kHz waveforms: (n_mels,
    N // 160), n_mels 80 or 128, of a clip's valid samples (length // 160
    valid frames, the rest zero); with pad_or_trim (the default) of
    ``whisper.pad_or_trim(waveform)``, 30 s, so (n_mels, 3000), every frame
    valid, as Whisper's encoder takes them."""

    def __init__(self, n_mels=80, pad_or_trim=True):
        super().__init__()
        self.n_mels, self.pad_or_trim = _int(n_mels, "n_mels", self), bool(pad_or_trim)
        self._check()

    def _spec(self):
        return {"op": "whisper_log_mel", "n_mels": self.n_mels, "pad_or_trim": self.pad_or_trim}


class _Masking(_Audio):
    _ndims = (2, 3)
    _input = ("spectrograms: a spectrogram transform's (F, 8 + 4*T) or (C, F, 8 + 4*T) uint8 rows, "
              "or float32 (F, T) or (C, F, T)")

    def __init__(self, mask_param, iid_masks, p, n, mask_value, seed):
        super().__init__()
        if iid_masks:
            raise _ArgumentError(type(self).__name__, "iid_masks=True is not implemented: every channel gets "
                                 "the same masks")
        self.mask_param = _int(mask_param, self._param, self)
        self.p, self.n, self.mask_value = float(p), _int(n, "n", self), float(mask_value)
        self.seed = _seed_arg(seed)
        self._check()

    def _spec(self):
        return _seeded({"op": self._op, "mask_param": self.mask_param, "p": self.p, "n": self.n,
                        "mask_value": self.mask_value}, self.seed)


class TimeMasking(_Masking):
    """torchaudio.transforms.TimeMasking, n times (SpecAugment's
    n_time_masks): each mask is [start, start + width) frames with width
    drawn in [0, time_mask_param) (at most p of the valid frames) and start
    uniform where it fits, filled with mask_value."""

    _op, _param = "time_masking", "time_mask_param"

    def __init__(self, time_mask_param, iid_masks=False, p=1.0, n=1, mask_value=0.0, seed=None):
        super().__init__(time_mask_param, iid_masks, p, n, mask_value, seed)


class FrequencyMasking(_Masking):
    """torchaudio.transforms.FrequencyMasking, n times (SpecAugment's
    n_freq_masks): [start, start + width) bands, width drawn in [0,
    freq_mask_param)."""

    _op, _param = "frequency_masking", "freq_mask_param"

    def __init__(self, freq_mask_param, iid_masks=False, n=1, mask_value=0.0, seed=None):
        super().__init__(freq_mask_param, iid_masks, 1.0, n, mask_value, seed)


def _int(v, name, op):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise _ArgumentError(type(op).__name__, f"{name} {v!r} must be an integer")
    return int(v)


__all__ = ["MonoMix", "Resample", "Gain", "SpeedPerturbation", "AddNoise", "MelSpectrogram", "WhisperLogMel",
           "TimeMasking",
           "FrequencyMasking"]
