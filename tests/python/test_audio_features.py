"""Audio transforms against torchaudio 2.7 and openai-whisper on real
speech (espeak-ng, 22.05 kHz), stored as FLAC in an AudioField and fed
through its decoders: resampling within 1e-5, MelSpectrogram within 1e-4
relative to each band's peak, Whisper's log-mel within 1e-4, each on a
clip's valid part as if it were the whole clip, with the lengths and
masks of the batch saying which frames are real (the rest zero);
SpecAugment's masks, gain and speed perturbation by their definitions;
arguments refused by name."""
import inspect
import shutil
import subprocess

import numpy as np
import pytest
import torch

from conftest import ListDataset, write

torchaudio = pytest.importorskip("torchaudio")
whisper_audio = pytest.importorskip("whisper.audio")
sf = pytest.importorskip("soundfile")

from ffcv_go import Loader  # noqa: E402
from ffcv_go.fields import AudioField, NDArrayField  # noqa: E402
from ffcv_go.fields.decoders import Audio, AudioDecoder, NDArrayDecoder, RandomAudioCropDecoder  # noqa: E402
from ffcv_go.transforms import (MonoMix, Resample, Gain, SpeedPerturbation, AddNoise, MelSpectrogram,  # noqa: E402
                                WhisperLogMel, TimeMasking, FrequencyMasking)
from ffcv_go.writer import DatasetWriter  # noqa: E402

SENTENCES = ["The quick brown fox jumps over the lazy dog.",
             "Seven wizards quietly hex a box of jumping frogs.",
             "Speech features must match to the last digit."]


@pytest.fixture(scope="module")
def speech(tmp_path_factory):
    """Three utterances of espeak-ng at 22050 Hz, float32 as soundfile
    reads them (16-bit samples, as FLAC keeps them), of three lengths."""
    if shutil.which("espeak-ng") is None:
        pytest.skip("espeak-ng is not installed (apt-get install espeak-ng)")
    out = []
    d = tmp_path_factory.mktemp("speech")
    for i, text in enumerate(SENTENCES):
        wav = d / f"{i}.wav"
        subprocess.run(["espeak-ng", "-v", ["en", "en-us", "de"][i], "-w", str(wav), text], check=True)
        x, sr = sf.read(wav, dtype="float32")
        assert sr == 22050 and x.ndim == 1
        out.append(x)
    assert len({len(x) for x in out}) == 3
    return out


@pytest.fixture(scope="module")
def flac(speech, tmp_path_factory):
    """The utterances in an AudioField (FLAC), mono and stereo (the second
    channel negated and delayed 7 samples: exact in 16 bits)."""
    d = tmp_path_factory.mktemp("flac")
    paths = {}
    for name, waves in [("mono", speech), ("stereo", [_stereo(x) for x in speech])]:
        paths[name] = d / f"{name}.beton"
        DatasetWriter(str(paths[name]), {"audio": AudioField()}, progress=False, num_workers=1).from_indexed_dataset(
            ListDataset([((w, 22050),) for w in waves]))
    return paths


def _stereo(w):
    return np.stack([w, -np.roll(w, 7)])


def _load(path, ops, seed=0, decoder=None):
    """The batches of decoder (whole clips by default) + ops, as one Audio."""
    loader = Loader(str(path), batch_size=2, num_workers=2, seed=seed, drop_last=False,
                    pipelines={"audio": [decoder or AudioDecoder(), *ops]})
    batches = [b[0] for b in loader]
    assert all(isinstance(b, Audio) for b in batches)
    n = max(b.data.shape[-1] for b in batches)
    assert all(b.data.shape[-1] == n for b in batches)
    return Audio(np.concatenate([b.data.numpy() for b in batches]),
                 np.concatenate([b.lengths.numpy() for b in batches]))


def _check(a, k, want, tol, rel=False):
    """Sample k of batch a is want (..., length) on its valid frames, within
    tol (relative to each row's peak with rel), zero after them, and its
    mask says so."""
    n = want.shape[-1]
    assert a.lengths[k] == n, (a.lengths[k], n)
    got = a.data[k]
    assert got.shape[:-1] == want.shape[:-1]
    err = np.abs(got[..., :n] - want)
    if rel:
        err = err / (np.abs(want).max(axis=-1, keepdims=True) + 1e-30)
    assert err.max() < tol, f"sample {k}: max error {err.max()}"
    assert not got[..., n:].any(), "nonzero past the valid frames"
    assert a.mask()[k].sum() == n and a.mask()[k, :n].all()


def test_resample_equals_torchaudio(speech, flac):
    for orig, new in [(22050, 16000), (22050, 8000), (22050, 44100)]:
        a = _load(flac["stereo"], [Resample(orig, new)])
        assert a.data.shape[:2] == (3, 2)
        for k, x in enumerate(speech):
            want = torchaudio.functional.resample(torch.from_numpy(_stereo(x)), orig, new).numpy()
            # 1e-5 is the promise; 2e-6 holds the float32 kernel to torchaudio's.
            _check(a, k, want, 2e-6)


def test_mono_mix(speech, flac):
    a = _load(flac["stereo"], [MonoMix()])
    assert a.data.shape[1] == 1
    for k, x in enumerate(speech):
        _check(a, k, torch.from_numpy(_stereo(x)).mean(0, keepdim=True).numpy(), 1e-7)


@pytest.mark.filterwarnings("ignore:At least one mel filterbank has all zero values")
@pytest.mark.parametrize("kw", [
    {},  # torchaudio's defaults: 16 kHz, n_fft 400, hop 200, 128 HTK bands
    {"sample_rate": 22050, "n_fft": 1024, "hop_length": 256, "n_mels": 80, "f_min": 20.0, "f_max": 8000.0},
    {"sample_rate": 22050, "n_fft": 512, "win_length": 400, "hop_length": 160, "n_mels": 64, "power": 1.0,
     "norm": "slaney", "mel_scale": "slaney"},
    {"sample_rate": 22050, "n_fft": 400, "hop_length": 100, "n_mels": 40, "center": False},
    {"sample_rate": 22050, "n_fft": 256, "n_mels": 32, "pad_mode": "constant"},
])
def test_mel_spectrogram_equals_torchaudio(speech, flac, kw):
    """Of whole clips padded to the longest: each clip's frames are its
    own (reflect padding at its true end), the rest zero."""
    a = _load(flac["mono"], [MelSpectrogram(**kw)])
    mel = torchaudio.transforms.MelSpectrogram(**kw)
    assert a.data.ndim == 3 and a.data.shape[1] == mel.n_mels if hasattr(mel, "n_mels") else True
    for k, x in enumerate(speech):
        # Relative to each band's peak over the utterance: float32 noise in
        # quiet frames is relative to the loud ones.
        _check(a, k, mel(torch.from_numpy(x)).numpy(), 1e-4, rel=True)


def test_whisper_log_mel_equals_whisper(speech, flac):
    """22.05 kHz FLAC to Whisper's features in Go, as torchaudio then
    Whisper make them: padded to 30 s (3000 frames, all valid), or of the
    clip alone (length // 160 frames)."""
    x16 = [torchaudio.functional.resample(torch.from_numpy(x), 22050, 16000) for x in speech]
    for n_mels in (80, 128):
        a = _load(flac["mono"], [Resample(22050, 16000), WhisperLogMel(n_mels)])
        assert a.data.shape == (3, n_mels, 3000)
        for k, x in enumerate(x16):
            _check(a, k, whisper_audio.log_mel_spectrogram(whisper_audio.pad_or_trim(x), n_mels=n_mels).numpy(), 1e-4)
    a = _load(flac["mono"], [Resample(22050, 16000), WhisperLogMel(80, pad_or_trim=False)])
    for k, x in enumerate(x16):
        _check(a, k, whisper_audio.log_mel_spectrogram(x, n_mels=80).numpy(), 1e-4)


def test_crop_resample_mel_masks(speech, flac):
    """RandomAudioCropDecoder -> Resample -> MelSpectrogram -> TimeMasking
    -> FrequencyMasking: the features of each window (found by the decoder
    alone, drawn alike) as torchaudio makes them, shorter clips' lengths
    carried to the frames; masks only within the valid frames."""
    crop = dict(seconds=2.0, seed=5)
    windows = _load(flac["mono"], [], seed=1, decoder=RandomAudioCropDecoder(**crop))
    assert windows.lengths.tolist() == [min(len(x), 44100) for x in speech]
    mel = dict(sample_rate=16000, n_fft=400, hop_length=160, n_mels=40)
    ops = [Resample(22050, 16000), MelSpectrogram(**mel)]
    base = _load(flac["mono"], ops, seed=1, decoder=RandomAudioCropDecoder(**crop))
    ref = torchaudio.transforms.MelSpectrogram(**mel)
    for k in range(3):
        w = torch.from_numpy(windows.data[k, 0, :windows.lengths[k]].copy())
        _check(base, k, ref(torchaudio.functional.resample(w, 22050, 16000)).numpy(), 1e-4, rel=True)
    masks = [TimeMasking(30, n=2), FrequencyMasking(10)]
    masked = _load(flac["mono"], ops + masks, seed=1, decoder=RandomAudioCropDecoder(**crop))
    assert np.array_equal(masked.lengths, base.lengths)
    for b, m, n in zip(base.data, masked.data, base.lengths):
        assert not m[:, n:].any()
        zero_frames = np.flatnonzero((m[:, :n] == 0).all(axis=0))
        zero_bands = np.flatnonzero((m[:, :n] == 0).all(axis=1))
        assert 0 < len(zero_frames) < 2 * 30 and len(zero_bands) < 10
        keep = np.ones_like(m, dtype=bool)
        keep[:, zero_frames] = keep[zero_bands, :] = False
        assert np.array_equal(m[keep], b[keep]), "a mask changed values outside its bands and frames"
    again = _load(flac["mono"], ops + masks, seed=1, decoder=RandomAudioCropDecoder(**crop))
    assert np.array_equal(masked.data, again.data)


def test_gain_and_speed(speech, flac):
    gained = _load(flac["mono"], [Gain(-6, 6, seed=1)])
    for k, x in enumerate(speech):
        g = gained.data[k, 0, :len(x)]
        r = np.median(g[np.abs(x) > 1e-3] / x[np.abs(x) > 1e-3])
        assert 10 ** (-6 / 20) - 1e-6 <= r <= 10 ** (6 / 20) + 1e-6
        _check(gained, k, x[None] * np.float32(r), 1e-6)

    sped = _load(flac["mono"], [SpeedPerturbation(22050, [0.9, 1.0, 1.1], seed=2)])
    assert sped.data.shape[-1] == int(np.ceil(max(map(len, speech)) * 22050 / int(0.9 * 22050)))
    for k, x in enumerate(speech):
        for f in (0.9, 1.0, 1.1):
            y = torchaudio.functional.speed(torch.from_numpy(x), 22050, f)[0].numpy()
            if sped.lengths[k] == len(y):
                _check(sped, k, y[None], 1e-5)
                break
        else:
            raise AssertionError("speed perturbation matches none of torchaudio's speeds for its factors")


def test_add_noise_at_snr(speech, tmp_path):
    """AddNoise(snr_db, noise="noise"): a clip of the noise field (white
    noise, shorter than some clips: repeated) added to each clip's valid
    samples at an SNR in the range, the padding left zero, keyed draws."""
    rng = np.random.default_rng(0)
    noise = [(rng.standard_normal(n).astype(np.float32) * 0.1) for n in (30000, 70000)]
    path = tmp_path / "noisy.beton"
    DatasetWriter(str(path), {"audio": AudioField(), "noise": AudioField()}, progress=False,
                  num_workers=1).from_indexed_dataset(
        ListDataset([((x, 22050), (noise[i % 2], 22050)) for i, x in enumerate(speech)]))

    def run(ops, seed=0):
        (a,), = list(Loader(str(path), batch_size=3, num_workers=1, seed=seed, drop_last=False,
                            pipelines={"audio": [AudioDecoder(), *ops], "noise": None}))
        return a

    clean = run([])
    for lo, hi in [(10, 10), (0, 20)]:
        noisy = run([AddNoise((lo, hi), noise="noise")])
        assert torch.equal(noisy.lengths, clean.lengths)
        for k, n in enumerate(clean.lengths.tolist()):
            x, y = clean.data[k, 0].numpy().astype(np.float64), noisy.data[k, 0].numpy().astype(np.float64)
            snr = 10 * np.log10((x[:n] ** 2).sum() / ((y[:n] - x[:n]) ** 2).sum())
            assert lo - 0.01 <= snr <= hi + 0.01 and not y[n:].any()
    assert torch.equal(run([AddNoise((0, 20), noise="noise")], 1).data, run([AddNoise((0, 20), noise="noise")], 1).data)
    with pytest.raises(ValueError, match='noise "audio2" is not an AudioField'):
        run([AddNoise((0, 20), noise="audio2")])


def test_ndarray_waveforms_are_all_valid(speech, tmp_path):
    """Plain float32 arrays of an NDArrayField: every sample is valid."""
    n = 20000
    path = write(tmp_path / "w.beton", {"wave": NDArrayField(np.dtype("float32"), (n,))},
                 [(x[:n],) for x in speech])
    loader = Loader(str(path), batch_size=3, num_workers=1, drop_last=False,
                    pipelines={"wave": [NDArrayDecoder(), MelSpectrogram(sample_rate=22050, n_mels=40)]})
    (a,), = list(loader)
    want = torchaudio.transforms.MelSpectrogram(sample_rate=22050, n_mels=40)(
        torch.from_numpy(np.stack([x[:n] for x in speech]))).numpy()
    assert a.lengths.tolist() == [want.shape[-1]] * 3
    err = np.abs(a.data.numpy() - want) / (np.abs(want).max(axis=-1, keepdims=True) + 1e-30)
    assert err.max() < 1e-4


@pytest.mark.parametrize("make, message", [
    (lambda: Resample(0, 16000), "orig_freq 0 and new_freq 16000 must be positive"),
    (lambda: Resample(16000, 8000, resampling_method="sinc_interp_kaiser"), "resampling_method"),
    (lambda: MelSpectrogram(n_fft=400, win_length=512), "win_length 512 must be in [1, n_fft 400]"),
    (lambda: MelSpectrogram(mel_scale="bark"), "mel_scale"),
    (lambda: MelSpectrogram(norm="l2"), "norm"),
    (lambda: MelSpectrogram(f_min=9000.0), "f_min"),
    (lambda: MelSpectrogram(window_fn=torch.hamming_window), "window_fn"),
    (lambda: WhisperLogMel(64), "n_mels 64 must be 80 or 128"),
    (lambda: TimeMasking(-1), "time_mask_param -1"),
    (lambda: FrequencyMasking(5, iid_masks=True), "iid_masks"),
    (lambda: Gain(6, -6), "min_db"),
    (lambda: SpeedPerturbation(16000, []), "factors"),
    (lambda: SpeedPerturbation(16000, [0.0]), "factors"),
])
def test_bad_arguments(make, message):
    with pytest.raises(ValueError) as e:
        make()
    assert message in str(e.value)


def test_signatures_are_torchaudios():
    """torchaudio's parameters, in its order (ours may add seed, n and
    mask_value after them)."""
    for ours, theirs in [(MelSpectrogram, torchaudio.transforms.MelSpectrogram),
                         (Resample, torchaudio.transforms.Resample),
                         (TimeMasking, torchaudio.transforms.TimeMasking),
                         (FrequencyMasking, torchaudio.transforms.FrequencyMasking),
                         (SpeedPerturbation, torchaudio.transforms.SpeedPerturbation)]:
        a = list(inspect.signature(ours.__init__).parameters)
        b = list(inspect.signature(theirs.__init__).parameters)
        assert a[:len(b)] == b, (ours.__name__, a, b)


def test_wrong_input_is_refused(tmp_path, flac):
    path = write(tmp_path / "i.beton", {"wave": NDArrayField(np.dtype("int16"), (100,))},
                 [(np.zeros(100, np.int16),)])
    with pytest.raises(ValueError, match="MelSpectrogram.*float32"):
        Loader(str(path), batch_size=1, pipelines={"wave": [NDArrayDecoder(), MelSpectrogram()]})
    # A waveform transform after a spectrogram is refused by name.
    with pytest.raises(ValueError, match=r"MonoMix: needs waveforms.*got \[2 128 "):
        Loader(str(flac["stereo"]), batch_size=1, pipelines={"audio": [AudioDecoder(), MelSpectrogram(), MonoMix()]})
