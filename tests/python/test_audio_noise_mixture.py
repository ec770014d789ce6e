"""AddNoise(noise=, source=): the noise drawn from one source of a Mixture.

The speech source holds clips of 440 Hz tones and labels; the noise
corpus, a side source (proportion 0, only an audio field), holds tones at
other frequencies, one per clip. What AddNoise adds (output minus clean
clip) must be one of the noise source's tones, never a speech clip, at an
SNR in the range; the epochs hold the speech samples only; the draws are
the same for any number of workers and on resume; a source that cannot
be drawn from is refused by name."""
import json

import numpy as np
import pytest
import torch

from conftest import FnDataset, write

from ffcv_go import Loader
from ffcv_go.fields import AudioField, IntField
from ffcv_go.fields.decoders import AudioDecoder, IntDecoder
from ffcv_go.loader import Mixture, OrderOption, Source
from ffcv_go.transforms import AddNoise

RATE = 16000
NOISE_HZ = [1000, 2000, 3000]  # noise clip j is a tone at NOISE_HZ[j]
SPEECH_HZ = 440


def tone(hz, n, amp=0.3, rate=RATE):
    return (amp * np.sin(2 * np.pi * hz * np.arange(n) / rate)).astype(np.float32)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("noise_mixture")
    speech = write(d / "speech.beton", {"audio": AudioField(), "label": IntField()},
                   FnDataset(6, lambda i: ((tone(SPEECH_HZ, 4000 + 800 * i), RATE), i)))
    musan = write(d / "musan.beton", {"audio": AudioField()},
                  FnDataset(3, lambda j: ((tone(NOISE_HZ[j], 3000, 0.2), RATE),)))
    slow = write(d / "slow.beton", {"audio": AudioField()},
                 FnDataset(2, lambda j: ((tone(NOISE_HZ[j], 3000, 0.2, 8000), 8000),)))
    return {"speech": str(speech), "musan": str(musan), "slow": str(slow)}


def mixture(files, noise="musan"):
    return Mixture([Source(files["speech"], name="speech"), Source(files[noise], proportion=0, name="musan")])


def run(data, ops, num_workers=1, seed=3, batch_size=2):
    loader = Loader(data, batch_size=batch_size, num_workers=num_workers, seed=seed, drop_last=False,
                    order=OrderOption.RANDOM,
                    pipelines={"audio": [AudioDecoder(), *ops], "label": [IntDecoder()]})
    return loader, [(a.data.numpy().copy(), a.lengths.numpy().copy(), y.numpy().ravel().copy()) for a, y in loader]


def by_label(batches):
    """{label: (waveform row 0, length)} over an epoch."""
    return {int(y[k]): (data[k, 0], int(n[k])) for data, n, y in batches for k in range(len(y))}


def peak_hz(x):
    spec = np.abs(np.fft.rfft(x * np.hanning(len(x))))
    return np.fft.rfftfreq(len(x), 1 / RATE)[spec.argmax()]


def test_noise_comes_from_the_named_source_only(files):
    m = mixture(files)
    loader, clean = run(m, [])
    assert sorted(by_label(clean)) == list(range(6)), "the epochs hold the speech samples only"
    assert [(s["name"], s["per_epoch"], s["first_sample"]) for s in loader.sources] == \
        [("speech", 6, 0), ("musan", 0, None)]
    clean = by_label(clean)
    for source in ("musan", 1):
        _, noisy = run(m, [AddNoise((5, 15), noise="audio", source=source)])
        seen = set()
        for label, (y, n) in by_label(noisy).items():
            x, cn = clean[label]
            assert n == cn and not y[n:].any()
            d = y[:n].astype(np.float64) - x[:n]
            snr = 10 * np.log10((x[:n].astype(np.float64) ** 2).sum() / (d ** 2).sum())
            assert 5 - 0.01 <= snr <= 15 + 0.01, snr
            hz = peak_hz(d)
            assert min(abs(hz - f) for f in NOISE_HZ) < 20, f"sample {label}: added noise peaks at {hz} Hz"
            seen.add(min(NOISE_HZ, key=lambda f: abs(hz - f)))
        assert len(seen) > 1, "one noise clip drawn for every sample"
    # Without source, the noise is another clip of the samples read: the speech tones.
    _, own = run(m, [AddNoise((5, 15), noise="audio")])
    for label, (y, n) in by_label(own).items():
        x = clean[label][0]
        assert abs(peak_hz(y[:n].astype(np.float64) - x[:n]) - SPEECH_HZ) < 20


def test_draws_do_not_depend_on_workers_and_resume(files):
    m = mixture(files)
    ops = lambda: [AddNoise((0, 10), noise="audio", source="musan")]  # noqa: E731
    _, one = run(m, ops(), num_workers=1, batch_size=1)
    _, three = run(m, ops(), num_workers=3, batch_size=1)
    assert all(np.array_equal(a, b) for p, q in zip(one, three) for a, b in zip(p, q))
    make = lambda: Loader(m, batch_size=1, num_workers=2, seed=3, drop_last=False,  # noqa: E731
                          order=OrderOption.RANDOM, pipelines={"audio": [AudioDecoder(), *ops()],
                                                               "label": [IntDecoder()]})
    first = make()
    it = iter(first)
    for _ in range(2):
        next(it)
    state = json.loads(json.dumps(first.state_dict()))
    resumed = make()
    resumed.load_state_dict(state)
    rest = [(a.data.numpy().copy(), a.lengths.numpy().copy(), y.numpy().ravel().copy()) for a, y in resumed]
    assert len(rest) == len(one) - 2
    assert all(np.array_equal(a, b) for p, q in zip(rest, one[2:]) for a, b in zip(p, q))


@pytest.mark.parametrize("make, message", [
    (lambda f: (f["speech"], AddNoise((0, 10), noise="audio", source="musan")),
     'source "musan": the loader reads one dataset'),
    (lambda f: (mixture(f), AddNoise((0, 10), noise="audio", source="noise")),
     'source "noise" is not a source of the Mixture (its sources: 0: "speech", 1: "musan")'),
    (lambda f: (mixture(f), AddNoise((0, 10), noise="audio", source=2)), "source 2: the Mixture has 2 sources"),
    (lambda f: (mixture(f), AddNoise((0, 10), noise="noise", source="musan")),
     'noise "noise" is not an AudioField of source "musan" (its fields: audio)'),
    (lambda f: (mixture(f, "slow"), AddNoise((0, 10), noise="audio", source="musan")),
     'noise "audio" of source "musan" at 8000 Hz, the clips at 16000 Hz'),
])
def test_bad_sources_are_refused_by_name(files, make, message):
    data, op = make(files)
    with pytest.raises(ValueError) as e:
        Loader(data, batch_size=2, num_workers=1, pipelines={"audio": [AudioDecoder(), op], "label": [IntDecoder()]})
    assert message in str(e.value)


def test_side_source_arguments(files):
    with pytest.raises(ValueError, match="pipelines of a source of weight 0"):
        Source(files["musan"], proportion=0, pipelines={"audio": [AudioDecoder()]})
    with pytest.raises(ValueError, match=r"proportion -1.0 must be a positive number \(or 0"):
        Source(files["musan"], proportion=-1.0)
    with pytest.raises(ValueError, match="every source has weight 0"):
        Loader(Mixture([Source(files["speech"], choose=0), Source(files["musan"], repeat=0)]), batch_size=2)
    # weights= with a 0: the same side source, whose fields need not match.
    loader = Loader(Mixture([files["speech"], files["musan"]], weights=[1, 0]), batch_size=2, num_workers=1,
                    pipelines={"audio": [AudioDecoder()], "label": [IntDecoder()]})
    assert [s["per_epoch"] for s in loader.sources] == [6, 0]
    assert isinstance(next(iter(loader))[0].data, torch.Tensor)
