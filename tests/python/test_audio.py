"""AudioField and its decoders, on speech synthesized by espeak-ng (Debian's
espeak-ng), encoded to FLAC and Ogg/Opus by soundfile and to MP3 by PyAV:
what the loader decodes equals soundfile's decode (WAV, FLAC: exactly;
Opus: libsndfile decodes with libopus too) or FFmpeg's through PyAV (MP3),
windows are slices of the whole clip, and bad files are refused by name.
Clips are a second or two of speech, written in well under a second."""
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

from conftest import ListDataset, same_batches

sf = pytest.importorskip("soundfile")

from ffcv_go.fields import AudioField, IntField, Waveform  # noqa: E402
from ffcv_go.fields.decoders import (Audio, AudioDecoder, IntDecoder,  # noqa: E402
                                     RandomAudioCropDecoder)
from ffcv_go.loader import Loader, OrderOption  # noqa: E402
from ffcv_go.reader import Reader  # noqa: E402
from ffcv_go.writer import DatasetWriter  # noqa: E402

try:
    import av
except ImportError:
    av = None

TEXTS = ["seven", "the quick brown fox", "jumps over the lazy dog", "hello"]


@pytest.fixture(scope="session")
def speech(tmp_path_factory):
    """One WAV of espeak-ng speech per text (22050 Hz, mono, int16)."""
    if shutil.which("espeak-ng") is None:
        pytest.skip("espeak-ng is not installed (Debian package espeak-ng)")
    root = tmp_path_factory.mktemp("speech")
    paths = []
    for i, text in enumerate(TEXTS):
        p = root / f"s{i}.wav"
        subprocess.run(["espeak-ng", "-w", str(p), text], check=True)
        paths.append(p)
    return paths


@pytest.fixture(scope="session")
def sources(speech, tmp_path_factory):
    """The first clip in every codec: {name: path}."""
    root = tmp_path_factory.mktemp("codecs")
    x, sr = sf.read(speech[1], dtype="float32")
    st = np.stack([x, -0.5 * x], 1)
    out = {"wav16": speech[1]}
    for name, data, rate, kw in [("wav24.wav", st, sr, {"subtype": "PCM_24"}),
                                 ("float.wav", st, sr, {"subtype": "FLOAT"}),
                                 ("flac16.flac", x, sr, {"subtype": "PCM_16"}),
                                 ("flac24.flac", st, sr, {"subtype": "PCM_24"}),
                                 ("opus.ogg", st, 48000, {"format": "OGG", "subtype": "OPUS"})]:
        sf.write(root / name, data, rate, **kw)
        out[name.split(".")[0]] = root / name
    if av is not None:
        out["mp3"] = root / "speech.mp3"
        with av.open(str(out["mp3"]), "w") as c:
            s = c.add_stream("libmp3lame", rate=sr)
            s.layout = "mono"
            frame = av.AudioFrame.from_ndarray(x[None].copy(), format="fltp", layout="mono")
            frame.sample_rate, frame.pts = sr, 0
            for pkt in list(s.encode(frame)) + list(s.encode(None)):
                c.mux(pkt)
    return out


def reference(path):
    """(C, N) float32 as soundfile decodes the file, or FFmpeg for MP3."""
    if str(path).endswith(".mp3"):
        with av.open(str(path)) as c:
            return np.concatenate([f.to_ndarray() for f in c.decode(audio=0)], 1).astype(np.float32)
    x, _ = sf.read(path, dtype="float32", always_2d=True)
    return np.ascontiguousarray(x.T)


def write(path, values, field=None, **kw):
    fields = {"audio": field or AudioField(), "label": IntField()}
    return DatasetWriter(str(path), fields, progress=False, num_workers=2).from_indexed_dataset(
        ListDataset([(v, i) for i, v in enumerate(values)]), **kw)


def load(path, decoder=None, batch_size=4, workers=2, **kw):
    return Loader(str(path), batch_size=batch_size, num_workers=workers, order=kw.pop("order", OrderOption.SEQUENTIAL),
                  drop_last=kw.pop("drop_last", False),
                  pipelines={"audio": [decoder or AudioDecoder()], "label": [IntDecoder()]}, **kw)


def only(path, decoder=None):
    (a, _), = list(load(path, decoder, batch_size=64))
    return a


@pytest.mark.parametrize("storage", ["flac", "source"])
@pytest.mark.parametrize("codec", ["wav16", "wav24", "float", "flac16", "flac24", "opus", "mp3"])
def test_decodes_as_soundfile_and_ffmpeg(sources, tmp_path, codec, storage):
    """The whole clip equals the reference decode: exactly for lossless
    storage of integer samples; float sources stored as FLAC are rounded
    to 16 bits."""
    if codec not in sources:
        pytest.skip("PyAV is not installed (pip install av)")
    write(tmp_path / "a.beton", [str(sources[codec])], AudioField(storage=storage))
    a = only(tmp_path / "a.beton")
    want = reference(sources[codec])
    assert isinstance(a, Audio) and a.waveform.dtype == torch.float32
    assert tuple(a.waveform.shape) == (1, *want.shape) and a.lengths.tolist() == [want.shape[1]]
    got = a.waveform[0].numpy()
    if codec in ("float", "opus", "mp3") and storage == "flac":
        np.testing.assert_allclose(got, want, rtol=0, atol=1.01 / 32768)  # rounded to 16 bits
    elif codec in ("opus", "mp3"):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)  # same decoder library / to float rounding
    else:
        assert np.array_equal(got, want)
    meta = Reader(str(tmp_path / "a.beton")).metadata["f0"][0]
    assert (meta["sample_rate"], meta["channels"], meta["frames"]) == \
        (48000 if codec == "opus" else 22050, want.shape[0], want.shape[1])
    assert Reader(str(tmp_path / "a.beton")).verify() == []


@pytest.mark.parametrize("codec", ["flac16", "wav24", "opus", "mp3"])
def test_windows_are_slices_of_the_whole(sources, tmp_path, codec):
    """RandomAudioCropDecoder's windows, drawn per epoch, are slices of the
    clip, decoded by seeking (Opus converges after a seek to within float
    noise); a window longer than the clip is the clip, zero-padded."""
    if codec not in sources:
        pytest.skip("PyAV is not installed (pip install av)")
    write(tmp_path / "a.beton", [str(sources[codec])] * 4, AudioField(storage="source"))
    whole = only(tmp_path / "a.beton").waveform[0].numpy()
    n = whole.shape[1]
    rate = Reader(str(tmp_path / "a.beton")).metadata["f0"]["sample_rate"][0]
    starts = set()
    for epoch_loader in [load(tmp_path / "a.beton", RandomAudioCropDecoder(0.25), seed=s) for s in (1, 2)]:
        for a, _ in epoch_loader:
            w = int(np.floor(0.25 * rate + 0.5))  # seconds × rate, rounded half up
            assert tuple(a.waveform.shape) == (4, whole.shape[0], w) and a.lengths.tolist() == [w] * 4
            for x in a.waveform.numpy():
                s = locate(whole, x)
                assert np.abs(whole[:, s:s + w] - x).max() <= (1e-4 if codec == "opus" else 0), codec
                starts.add(s)
    assert len(starts) >= 4
    a = only(tmp_path / "a.beton", RandomAudioCropDecoder(n / rate + 1.0))
    assert a.lengths.tolist() == [n] * 4
    assert np.array_equal(a.waveform[:, :, :n].numpy(), np.stack([whole] * 4)) and not a.waveform[:, :, n:].any()


class _Keep(torch.nn.Module):
    """A Python stage that keeps what it is given."""

    def __init__(self, seen):
        super().__init__()
        self.seen = seen

    def forward(self, x):
        self.seen.append(x.clone())
        return x


def locate(whole, x):
    """Where window x lies in the clip: the best match of its loudest 64
    samples (speech has silences, which match anywhere)."""
    k = 64
    j = min(max(int(np.argmax(np.abs(x[0]))) - k // 2, 0), x.shape[1] - k)
    rows = np.lib.stride_tricks.sliding_window_view(whole[0], k)
    at = int(np.argmin(np.abs(rows - x[0, j:j + k]).max(1)))
    return at - j


def test_padding_lengths_and_mask(speech, tmp_path, capsys):
    """Clips of several lengths in one batch: zero-padded to the longest
    (or to max_seconds, cut there), the lengths and the mask say which
    frames are real."""
    write(tmp_path / "a.beton", [str(p) for p in speech])
    lengths = [sf.info(p).frames for p in speech]
    a = only(tmp_path / "a.beton")
    assert a.lengths.tolist() == lengths and a.waveform.shape[-1] == max(lengths)
    mask = a.mask()
    assert mask.dtype == torch.bool and mask.sum(1).tolist() == lengths
    # A Python stage after the decoder gets the raw batch; Audio.of views it.
    seen = []
    list(Loader(str(tmp_path / "a.beton"), batch_size=64, num_workers=1, order=OrderOption.SEQUENTIAL, drop_last=False,
                pipelines={"audio": [AudioDecoder(), _Keep(seen)], "label": [IntDecoder()]}))
    assert seen[0].dtype == torch.uint8 and tuple(seen[0].shape) == (4, 1, 8 + 4 * max(lengths))
    b = Audio.of(seen[0])
    assert torch.equal(b.waveform, a.waveform) and torch.equal(b.lengths, a.lengths)
    with pytest.raises(ValueError, match=r"Audio.of takes an audio decoder's or audio transform's \(B, \.\.\., "
                                          r"8 \+ 4\*N\) uint8 batch"):
        Audio.of(a.waveform)
    for k, p in enumerate(speech):
        assert np.array_equal(a.waveform[k, 0, :lengths[k]].numpy(), reference(p)[0])
        assert not a.waveform[k, 0, lengths[k]:].any()
    from ffcv_go._cli import main  # `python -m ffcv_go info` sums the clips up
    main(["info", str(tmp_path / "a.beton")])
    out = capsys.readouterr().out
    assert "AudioField" in out and "sample rate: 22050 Hz, channels: 1" in out and "stored as FLAC" in out
    a = only(tmp_path / "a.beton", AudioDecoder(max_seconds=1.0))
    assert a.waveform.shape[-1] == 22050 and a.lengths.tolist() == [min(n, 22050) for n in lengths]
    assert np.array_equal(a.waveform[1, 0].numpy(), reference(speech[1])[0, :22050])


def test_mono_mixdown(sources, tmp_path):
    """mono=True: the mean of the channels."""
    write(tmp_path / "a.beton", [str(sources["wav24"])])
    stereo = only(tmp_path / "a.beton").waveform
    mono = only(tmp_path / "a.beton", AudioDecoder(mono=True)).waveform
    assert stereo.shape[1] == 2 and mono.shape[1] == 1
    assert torch.equal(mono[:, 0], stereo.mean(1))


def test_arrays_bytes_and_dicts(speech, tmp_path):
    """Arrays with their rate (a tuple, Waveform, the field's sample_rate,
    a Hugging Face dict), torch tensors and file bytes; int16 samples and
    float samples stored as WAV come back exactly."""
    x, sr = sf.read(speech[0], dtype="int16")
    f = (x.astype(np.float32) / 32768)
    values = [(x, sr), Waveform(torch.from_numpy(f), sr), {"array": f.astype(np.float64), "sampling_rate": sr},
              {"bytes": speech[0].read_bytes(), "path": None}, speech[0].read_bytes(), x]
    for storage in ("flac", "source"):
        write(tmp_path / f"{storage}.beton", values, AudioField(storage=storage, sample_rate=sr))
        a = only(tmp_path / f"{storage}.beton", AudioDecoder())
        assert a.lengths.tolist() == [len(f)] * len(values)
        assert np.array_equal(a.waveform[:, 0].numpy(), np.stack([f] * len(values)))
    meta = Reader(str(tmp_path / "source.beton")).metadata["f0"]
    assert meta["codec"].tolist() == [2] * 6 and meta["bits"].tolist() == [16, 32, 32, 16, 16, 16]


def test_same_windows_for_any_worker_count(speech, tmp_path):
    write(tmp_path / "a.beton", [str(p) for p in speech] * 3)
    runs = [[(a.waveform.numpy().copy(), a.lengths.numpy().copy(), y.numpy().copy())
             for a, y in load(tmp_path / "a.beton", RandomAudioCropDecoder(0.3, seed=5), workers=w,
                              order=OrderOption.RANDOM, seed=7)] for w in (1, 3)]
    assert same_batches(*runs)


def bad_files(sources, tmp_path):
    wav = sources["wav16"].read_bytes()
    flac = sources["flac16"].read_bytes()
    files = {"empty.wav": b"", "notes.wav": b"just some text, not a sound", "cut.wav": wav[:len(wav) // 2],
             "cut.flac": flac[:len(flac) // 2], "rate0.wav": wav[:24] + b"\0\0\0\0" + wav[28:]}
    paths = {}
    for name, data in files.items():
        paths[name] = tmp_path / name
        paths[name].write_bytes(data)
    return paths


@pytest.mark.parametrize("name, reason", [
    ("empty.wav", "empty (0 bytes)"), ("notes.wav", "unknown codec"),
    ("cut.wav", "truncated WAV: its data chunk says"), ("cut.flac", "truncated FLAC: its STREAMINFO gives"),
    ("rate0.wav", "sample rate 0")])
def test_bad_files_are_refused_by_name(sources, tmp_path, name, reason):
    path = bad_files(sources, tmp_path)[name]
    with pytest.raises(ValueError, match=re.escape(f"dataset item 1, field 'audio': {path}: ") + ".*" + re.escape(reason)):
        write(tmp_path / "a.beton", [str(sources["wav16"]), str(path)])


@pytest.mark.parametrize("pool", [None, "thread", "process"])
def test_errors_skip_reports_bad_files(sources, tmp_path, pool):
    bad = bad_files(sources, tmp_path)
    values = [str(sources["wav16"]), str(bad["cut.flac"]), str(sources["wav16"]), str(bad["empty.wav"]),
              np.zeros(5, np.float32), str(tmp_path / "missing.flac")]
    out = tmp_path / "a.beton"
    with pytest.warns(UserWarning, match="4 problems, 4 samples skipped"):
        report = write(out, values, errors="skip", pool=pool, pool_workers=2)
    assert (report.samples, report.skipped) == (2, 4)
    got = [(p["shard"].rsplit("/", 1)[-1], p["key"]) for p in report.problems]
    assert got == [("cut.flac", 1), ("empty.wav", 3), ("", 4), ("missing.flac", 5)]
    reasons = [p["reason"] for p in report.problems]
    assert "truncated FLAC" in reasons[0] and "empty" in reasons[1] and "sample rate" in reasons[2]
    assert "no such audio file" in reasons[3]
    assert Reader(str(out)).metadata["f1"].tolist() == [0, 2]


def test_decoder_arguments_and_mixed_rates(speech, sources, tmp_path):
    with pytest.raises(ValueError, match="RandomAudioCropDecoder: seconds 0 must be positive"):
        RandomAudioCropDecoder(0)
    with pytest.raises(ValueError, match="AudioDecoder: max_seconds -1 must be positive"):
        AudioDecoder(max_seconds=-1)
    with pytest.raises(ValueError, match="AudioField: storage 'mp3'"):
        AudioField(storage="mp3")
    write(tmp_path / "mixed.beton", [str(speech[0]), str(sources["opus"])])
    with pytest.raises(ValueError, match="several sample rates .*22050 Hz, then 48000 Hz at sample 1"):
        list(load(tmp_path / "mixed.beton"))
    write(tmp_path / "channels.beton", [str(speech[0]), str(sources["wav24"])])
    with pytest.raises(ValueError, match="several channel counts .*mono=True"):
        list(load(tmp_path / "channels.beton"))
    a = only(tmp_path / "channels.beton", AudioDecoder(mono=True))
    assert a.waveform.shape[:2] == (2, 1)


def test_write_time_resampling_equals_torchaudio(speech, sources, tmp_path):
    """AudioField(resample=16000): clips of mixed rates (22050, 48000 Hz,
    an array at 8 kHz, one already at 16 kHz kept as it is) come out at
    16 kHz, each equal to torchaudio.functional.resample of its source
    (within the 24-bit storage), and the file then loads as one rate."""
    torchaudio = pytest.importorskip("torchaudio")
    t = np.arange(8000, dtype=np.float32) / 8000
    tone = (0.3 * np.sin(2 * np.pi * 300 * t)).astype(np.float32)
    at16k = np.round(0.25 * np.sin(2 * np.pi * 440 * np.arange(4000) / 16000) * 32767).astype(np.int16)
    values = [str(speech[0]), str(sources["opus"]), (tone, 8000), (at16k, 16000)]
    write(tmp_path / "a.beton", values, AudioField(bits=24, resample=16000))
    meta = Reader(str(tmp_path / "a.beton")).metadata["f0"]
    assert meta["sample_rate"].tolist() == [16000] * 4
    a = only(tmp_path / "a.beton", AudioDecoder(mono=True))
    refs = [reference(speech[0]), reference(sources["opus"]), tone[None], None]
    rates = [22050, 48000, 8000, None]
    for k, (ref, rate) in enumerate(zip(refs, rates)):
        n = int(a.lengths[k])
        got = a.waveform[k, 0, :n]
        if ref is None:  # at the target rate: its int16 samples exactly
            assert meta["bits"][k] == 16 and torch.equal(got, torch.from_numpy(at16k / np.float32(32768)))
            continue
        want = torchaudio.functional.resample(torch.from_numpy(ref), rate, 16000).mean(0)
        assert n == want.shape[0], k
        assert (got - want).abs().max() < 1e-5, k
    with pytest.raises(ValueError, match="AudioField: resample 0 must be a positive integer rate"):
        AudioField(resample=0)


def test_damaged_clip_in_the_file_is_refused_when_read(speech, tmp_path):
    """A clip whose bytes were damaged after writing (the second half of its
    FLAC zeroed) fails its batch, naming the sample; never a short or
    patched-up waveform."""
    path = tmp_path / "a.beton"
    write(path, [str(p) for p in speech])
    meta = Reader(str(path)).metadata["f0"][2]
    ptr, size = int(meta["ptr"]), int(meta["size"])
    data = bytearray(path.read_bytes())
    data[ptr + size // 2:ptr + size] = bytes(size - size // 2)
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=r"sample 2\b.*(corrupt|truncated) FLAC"):
        list(load(path, batch_size=1, workers=1))
    # A window decodes only the frames under it: damage elsewhere is not its
    # business. Reader.verify() decodes every clip whole.
    problems = Reader(str(path)).verify()
    assert [(p["sample"], p["field"]) for p in problems] == [(2, "audio")], problems
    assert "FLAC" in problems[0]["error"]


def test_batch_of_one_and_numpy_batches(speech, tmp_path):
    """A batch of one clip whose rows are not a multiple of 8 bytes still
    gives its int64 lengths; Audio.of a numpy batch gives a numpy mask."""
    write(tmp_path / "a.beton", [str(speech[0])])
    n = 11025  # (8 + 4·n) bytes a row: not a multiple of 8
    a = only(tmp_path / "a.beton", AudioDecoder(max_seconds=0.5))
    assert a.lengths.tolist() == [n] and a.mask().sum().item() == n
    seen = []
    list(Loader(str(tmp_path / "a.beton"), batch_size=1, num_workers=1, drop_last=False,
                pipelines={"audio": [AudioDecoder(max_seconds=0.5), _Keep(seen)], "label": [IntDecoder()]}))
    b = Audio.of(seen[0].numpy())
    assert b.lengths.tolist() == [n] and b.mask().dtype == np.bool_ and b.mask().sum() == n
    assert np.array_equal(b.data, a.data.numpy())


def test_bucketed_by_audio_duration(speech, tmp_path):
    """order_kwargs={"duration_field": "audio"}: batches by the clips' total
    seconds (frames / sample rate, from the metadata), each at most
    max_duration, every clip once an epoch; a clip longer than
    max_duration is refused by name."""
    paths = [str(p) for p in speech] * 6
    write(tmp_path / "a.beton", paths)
    frames = np.array([sf.info(p).frames for p in paths])
    secs = frames / 22050
    loader = load(tmp_path / "a.beton", RandomAudioCropDecoder(1.0), batch_size=16, order=OrderOption.BUCKETED,
                  order_kwargs={"duration_field": "audio", "max_duration": 4.0}, seed=3)
    seen, sizes = [], set()
    for a, y in loader:
        ids = y.reshape(-1).tolist()
        assert secs[ids].sum() <= 4.0 + 1e-9
        assert a.lengths.tolist() == np.minimum(frames[ids], 22050).tolist()
        seen += ids
        sizes.add(len(ids))
    assert sorted(seen) == list(range(len(paths))) and len(sizes) > 1
    with pytest.raises(ValueError, match=r"duration field \"audio\".*more than max_duration 1"):
        load(tmp_path / "a.beton", order=OrderOption.BUCKETED, order_kwargs={"duration_field": "audio",
                                                                            "max_duration": 1.0})


# ---- one-pass conversions: webdataset, Parquet, Hugging Face, MDS/litdata -----

def _stored(path):
    """Every sample's (metadata column, stored bytes) of a file's AudioField."""
    r = Reader(str(path))
    return [(tuple(r.metadata["f0"][i][["frames", "sample_rate", "channels", "codec", "bits"]].tolist()),
             bytes(r.read(i, "audio"))) for i in range(r.num_samples)]


def _clips(sources):
    """(key, extension, bytes, label) of a clip in every codec."""
    out = []
    for k, name in enumerate(["wav16", "flac24", "opus", "mp3", "float"]):
        if name in sources:
            ext = {"wav16": "wav", "float": "wav", "opus": "opus"}.get(name, name[:4] if name != "mp3" else "mp3")
            out.append((f"c{k}", ext, sources[name].read_bytes(), k))
    return out


def test_webdataset_members_equal_the_indexed_writer(sources, tmp_path):
    """Audio members (.wav .flac .mp3 .opus) go to the Go audio encoder
    undecoded: the file equals one written from the same bytes by
    from_indexed_dataset. A truncated member is refused naming the shard,
    the sample's key and the field; errors='skip' leaves that sample out and reports it."""
    import io
    import tarfile
    clips = _clips(sources)
    cut = sources["flac16"].read_bytes()
    shard = tmp_path / "shard-0.tar"
    with tarfile.open(shard, "w") as tar:
        for key, ext, data, label in clips[:2] + [("cut", "flac", cut[:len(cut) // 2], 9)] + clips[2:]:
            for name, b in [(f"{key}.{ext}", data), (f"{key}.cls", str(label).encode())]:
                info = tarfile.TarInfo(name)
                info.size = len(b)
                tar.addfile(info, io.BytesIO(b))
    fields = {"audio": AudioField(), "label": IntField()}
    with pytest.raises(ValueError, match=r"shard-0\.tar: sample \"cut\": field \"audio\": .*truncated FLAC"):
        DatasetWriter(str(tmp_path / "w.beton"), fields, progress=False).from_webdataset(str(shard))
    with pytest.warns(UserWarning, match="1 problem"):
        rep = DatasetWriter(str(tmp_path / "w.beton"), fields, progress=False).from_webdataset(str(shard),
                                                                                                errors="skip")
    assert (rep.samples, rep.skipped) == (len(clips), 1) and rep.problems[0]["key"] == "cut"
    write(tmp_path / "i.beton", [data for _, _, data, _ in clips])
    assert _stored(tmp_path / "w.beton") == _stored(tmp_path / "i.beton")
    assert Reader(str(tmp_path / "w.beton")).metadata["f1"].tolist() == [c[3] for c in clips]


def test_parquet_and_huggingface_audio_columns(sources, speech, tmp_path):
    """A binary column of audio files, and Hugging Face's Audio feature
    ({bytes, path} structs, rows given by path only included), convert
    to the same clips as from_indexed_dataset; a column that is not
    audio is refused by row."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    clips = _clips(sources)
    want = tmp_path / "i.beton"
    write(want, [data for _, _, data, _ in clips])
    fields = {"audio": AudioField(), "label": IntField()}
    table = pa.table({"sound": pa.array([c[2] for c in clips], pa.binary()),
                      "label": pa.array([c[3] for c in clips], pa.int64())})
    pq.write_table(table, tmp_path / "a.parquet", row_group_size=2)
    DatasetWriter(str(tmp_path / "p.beton"), fields, progress=False).from_parquet(
        str(tmp_path / "a.parquet"), columns={"audio": "sound"}, batch_size=2)
    assert _stored(tmp_path / "p.beton") == _stored(want)
    datasets = pytest.importorskip("datasets")
    paths = [str(p) for p in speech]
    ds = datasets.Dataset.from_dict({"audio": paths, "label": list(range(len(paths)))}).cast_column(
        "audio", datasets.Audio(decode=False))
    assert ds.data.column("audio").type == pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    DatasetWriter(str(tmp_path / "hf.beton"), fields, progress=False).from_huggingface(ds, batch_size=3)
    write(tmp_path / "hf-i.beton", paths)
    assert _stored(tmp_path / "hf.beton") == _stored(tmp_path / "hf-i.beton")
    bad = pa.table({"audio": pa.array([b"not a sound at all"], pa.binary()), "label": pa.array([0])})
    pq.write_table(bad, tmp_path / "bad.parquet")
    with pytest.raises(ValueError, match=r"bad\.parquet.*row 0.*unknown codec"):
        DatasetWriter(str(tmp_path / "b.beton"), fields, progress=False).from_parquet(str(tmp_path / "bad.parquet"))


def test_mds_and_litdata_bytes_columns_go_to_the_audio_encoder(tmp_path):
    """An AudioField takes an MDS/litdata bytes column: bytes that are no
    audio file (the fixtures' raw column) are refused by sample, as a
    corrupt file would be, never stored; a column of another encoding is
    refused up front."""
    peers = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "peers"
    for fmt, name in [("mds", "mds"), ("litdata", "litdata")]:
        w = DatasetWriter(str(tmp_path / f"{name}.beton"), {"audio": AudioField()}, progress=False)
        convert = w.from_streaming if fmt == "mds" else w.from_litdata
        with pytest.raises(ValueError, match=r"sample \"sample 0\": field \"audio\": .*unknown codec"):
            convert(str(peers / name), columns={"audio": "raw"})
        with pytest.raises(ValueError, match=r"no sample could be written: 7 problems.*unknown codec"):
            convert(str(peers / name), columns={"audio": "raw"}, errors="skip")
        with pytest.raises(ValueError, match=r"field \"audio\": column \"caption\" holds str, which an AudioField"):
            convert(str(peers / name), columns={"audio": "caption"})
