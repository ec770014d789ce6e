"""AudioField: one clip of sound per sample, stored as FLAC (lossless, the
default) or as the source file's own bytes (WAV, FLAC, MP3, Ogg/Opus), with
its sample rate, channels, frame count and codec in the metadata.

Everything about the formats happens in the Go core: the writer decodes
every value whole once (so a corrupt or truncated file is refused, naming
it) and encodes FLAC with libFLAC; the decoders (``AudioDecoder``,
``RandomAudioCropDecoder`` in ``ffcv_go.fields.decoders``) decode only the
frames under their window, straight into the batch.
"""
import json
import os
from typing import NamedTuple

import numpy as np

from .base import Field, ARG_TYPE, _set_data

_STORAGE = ("flac", "source")
_FORMATS = {np.dtype("<i2"): 1, np.dtype("<i4"): 2, np.dtype("<f4"): 3}
_CODECS = {1: "flac", 2: "wav", 3: "mp3", 4: "opus"}


class Waveform(NamedTuple):
    """Samples as the writer takes them: ``samples`` a (channels, frames)
    array (or 1-D for mono) of int16, int32 or float32 (float64 is taken
    as float32), as torchaudio.load gives them, and their ``sample_rate``.
    A plain ``(samples, sample_rate)`` tuple is taken the same way."""
    samples: object
    sample_rate: int


class AudioField(Field):
    """A clip of sound per sample.

    A value is an audio file (WAV, FLAC, MP3 or Ogg/Opus) by its path (str
    or os.PathLike) or as bytes; an array of samples with its rate,
    ``Waveform(samples, sample_rate)`` or ``(samples, sample_rate)``
    (``samples`` (channels, frames) or 1-D; a bare array takes the field's
    ``sample_rate``); or a Hugging Face ``Audio`` value (a dict with
    ``bytes``, ``path`` or ``array`` and ``sampling_rate``).

    - ``storage='flac'`` (default): every clip is stored as FLAC (libFLAC,
      compression level 5, a seek point a second). Integer sources (PCM
      WAV, FLAC, int16 arrays) keep their samples exactly; float sources
      (float WAV, MP3, Opus, float arrays) are rounded to ``bits`` (16 or
      24) bits.
    - ``storage='source'``: files are stored as they are (after one full
      decode that checks them); arrays as WAV (int16, int32 or float32
      samples, exact).
    - ``sample_rate``: the rate of arrays given without one.
    - ``resample``: a rate (Hz) every clip of another rate is resampled to
      at write time, as ``torchaudio.functional.resample`` does by default
      (sinc_interp_hann, lowpass_filter_width 6, rolloff 0.99); a
      resampled clip is stored as floats (FLAC at ``bits`` bits, or float
      WAV with ``storage='source'``). Clips already at that rate are
      stored as they come.

    Every value is decoded whole once at write time: a file that is
    corrupt, truncated (its frames short of its header's count: FLAC's
    STREAMINFO, WAV's data size, MP3's Xing/Info count, Opus's last
    granule position), empty, of an unknown codec or of sample rate 0 is
    refused with a ValueError naming it (``errors='skip'`` in
    ``from_indexed_dataset`` skips and reports it). FFCV cannot read files
    with this field (type id 104).
    """
    TYPE_ID = 104

    def __init__(self, storage="flac", bits=16, sample_rate=None, resample=None):
        if storage not in _STORAGE:
            raise ValueError(f"AudioField: storage {storage!r} must be 'flac' or 'source'")
        if bits not in (16, 24):
            raise ValueError(f"AudioField: bits {bits!r} must be 16 or 24")
        if sample_rate is not None and (isinstance(sample_rate, bool) or int(sample_rate) != sample_rate
                                        or int(sample_rate) <= 0):
            raise ValueError(f"AudioField: sample_rate {sample_rate!r} must be a positive integer (Hz)")
        if resample is not None and (isinstance(resample, bool) or not isinstance(resample, (int, float))
                                     or int(resample) != resample or not 0 < resample < 2**31):
            raise ValueError(f"AudioField: resample {resample!r} must be a positive integer rate (Hz)")
        self.storage = storage
        self.bits = int(bits)
        self.sample_rate = None if sample_rate is None else int(sample_rate)
        self.resample = None if resample is None else int(resample)

    @property
    def metadata_type(self):
        return np.dtype([("ptr", "<u8"), ("size", "<u8"), ("frames", "<u8"), ("sample_rate", "<u4"),
                         ("channels", "<u2"), ("codec", "u1"), ("bits", "u1")], align=True)

    @staticmethod
    def from_binary(binary):
        raw = np.ascontiguousarray(binary).view(np.uint8).reshape(-1).tobytes() \
            if isinstance(binary, np.ndarray) else bytes(binary)
        args = json.loads(raw.split(b"\0", 1)[0] or b"{}")
        storage = args.get("storage", "flac")
        if storage not in _STORAGE:
            raise ValueError(f"AudioField: unknown storage {storage!r}")
        return AudioField(storage)

    def to_binary(self):
        raw = np.zeros(1024, dtype=np.uint8)
        b = json.dumps({"storage": self.storage}, separators=(",", ":")).encode()
        raw[:len(b)] = np.frombuffer(b, dtype=np.uint8)
        return raw.view(ARG_TYPE)[0]

    def get_decoder_class(self):
        from .audio_decoders import AudioDecoder
        return AudioDecoder

    def _spec(self):
        return {"audio": self._options()}

    def _options(self):
        return {"storage": self.storage, "bits": self.bits, "resample": self.resample or 0}

    # Encoding runs where the value is fetched when it can (the writer's
    # fetch threads: the Go call releases the GIL), else in _value; either
    # way a refused value raises here, with the writer's item index.
    def _portable(self, value):
        from .. import _lib
        if _lib.forked():  # a fetch process: no Go here, the writer encodes it
            return value
        return self._encode(value)

    def _value(self, value, v, keep):
        clip = value if isinstance(value, _Clip) else self._encode(value)
        _set_data(v, clip.data, keep)
        col = np.frombuffer(clip.column, dtype=np.uint8)
        keep.append(col)
        v.column, v.column_len, v.ptr_offset = col.ctypes.data, col.nbytes, 0

    def _encode(self, value):
        """value as the stored clip (bytes and metadata column), by the Go core."""
        from .. import _lib
        v, keep = _lib.Value(), []
        if isinstance(value, (str, os.PathLike)):
            path = os.fspath(value)
            if not os.path.isfile(path):
                raise FileNotFoundError(f"AudioField: no such audio file: {path}")
            v.encoded = 2
            _set_data(v, os.fsencode(path), keep)
        elif isinstance(value, (bytes, bytearray, memoryview)):
            v.encoded = 1
            _set_data(v, bytes(value), keep)
        else:
            samples, rate = self._samples(value)
            if isinstance(samples, (str, os.PathLike, bytes, bytearray, memoryview)):
                return self._encode(samples)
            v.i, v.channels, v.width = rate, samples.shape[0], _FORMATS[samples.dtype]
            _set_data(v, samples, keep)
        data, column = _lib.audio_encode(self._options(), v)
        return _Clip(data, column)

    def _samples(self, value):
        """An array value's (samples (C, N), rate), checked; or, for a
        Hugging Face dict holding a file, that file."""
        rate = self.sample_rate
        if isinstance(value, dict):  # a Hugging Face Audio value
            if value.get("bytes") is not None:
                return value["bytes"], None
            if value.get("array") is not None:
                value = (value["array"], value.get("sampling_rate"))
            elif value.get("path") is not None:
                return value["path"], None
            else:
                raise ValueError("AudioField: an audio dict needs 'bytes', 'path' or 'array' (with 'sampling_rate')")
        if isinstance(value, tuple) and len(value) == 2 and not isinstance(value[0], (int, float)):
            value, rate = value
            if rate is None or isinstance(rate, bool) or not float(rate).is_integer() or int(rate) <= 0:
                raise ValueError(f"AudioField: sample rate {rate!r} must be a positive integer (Hz)")
            rate = int(rate)
        if hasattr(value, "detach") and hasattr(value, "numpy"):
            value = value.detach().cpu().numpy()
        if not isinstance(value, np.ndarray):
            raise TypeError(f"AudioField takes an audio file's path or bytes, or an array of samples with its "
                            f"sample rate ((samples, sample_rate)), got {type(value).__name__}")
        if rate is None:
            raise ValueError("AudioField: an array of samples needs its sample rate: give (samples, sample_rate) "
                             "or AudioField(sample_rate=...)")
        if value.dtype == np.float64:
            value = value.astype(np.float32)
        if value.dtype.newbyteorder("<") not in _FORMATS:
            raise TypeError(f"AudioField takes int16, int32 or float32 samples, got {value.dtype}")
        value = value.astype(value.dtype.newbyteorder("<"), copy=False)
        if value.ndim == 1:
            value = value[None]
        if value.ndim != 2:
            raise ValueError(f"AudioField needs (channels, frames) samples (or 1-D), got shape {value.shape}")
        if value.shape[0] > 8:
            hint = " (soundfile gives (frames, channels): transpose it)" if value.shape[1] <= 8 else ""
            raise ValueError(f"AudioField: {value.shape[0]} channels, at most 8{hint}")
        if value.shape[1] == 0:
            raise ValueError("AudioField: the array holds no samples (0 frames)")
        return np.ascontiguousarray(value), rate


class _Clip:
    """A clip the Go core encoded: its stored bytes and metadata column (what
    fetch workers hand the writer)."""
    __slots__ = ("data", "column")

    def __init__(self, data, column):
        self.data, self.column = data, column

    def __reduce__(self):
        return _Clip, (self.data, self.column)


def _column(column):
    """A metadata column as a dict (for messages and tests)."""
    m = np.frombuffer(column, dtype=AudioField().metadata_type)[0]
    return {"frames": int(m["frames"]), "sample_rate": int(m["sample_rate"]), "channels": int(m["channels"]),
            "codec": _CODECS.get(int(m["codec"]), int(m["codec"])), "bits": int(m["bits"])}


