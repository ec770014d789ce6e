"""Speech loading: ffcv_go against DataLoader + torchcodec, DataLoader +
soundfile, and lhotse, in one run.

Same work everywhere: per utterance (10-20 s of espeak-ng speech at 16 kHz,
FLAC), a random 5 s window (its start drawn uniformly), resampled to 16 kHz
when the files are at another rate (--source-rate), Whisper's 80-band
log-mel spectrogram (n_fft 400, hop 160, no padding to 30 s: (80, 500)),
then SpecAugment: two frequency masks of up to 27 bands and two time masks of
up to 100 frames (at most a fifth of the frames each), filled with 0. Batches
of 32, RANDOM order, 2 workers.

  ffcv_go     the utterances written once to a .beton (AudioField, FLAC),
              then Loader with RandomAudioCropDecoder(5 s) [+ Resample] +
              WhisperLogMel(80, pad_or_trim=False) + FrequencyMasking(27, n=2)
              + TimeMasking(100, p=0.2, n=2): only the FLAC frames under the
              window decoded, all in Go threads.
  torchcodec  torch DataLoader whose dataset decodes the window with
              torchcodec's AudioDecoder.get_samples_played_in_range,
              resamples with torchaudio.functional.resample (a no-op at
              16 kHz), takes whisper.audio.log_mel_spectrogram and
              torchaudio's FrequencyMasking/TimeMasking.
  soundfile   the same, the window read with soundfile.read(start=, stop=)
              (libsndfile seeks in the FLAC).
  lhotse      a CutSet of the files, SimpleCutSampler(max_cuts=32), a
              dataset that truncates each cut to a random 5 s window
              (CutSet.truncate(offset_type="random")) and computes features
              with OnTheFlyFeatures(Fbank(80 bins)) and lhotse's SpecAugment
              (no time warp, the same masks), DataLoader with
              batch_size=None, 2 workers; CutSet.resample(16000) when the
              files are at another rate. Fbank is lhotse's own Kaldi
              filterbank in torch (25 ms windows every 10 ms, log mel, the
              same work as Whisper's); its WhisperFbank needs librosa (and
              with it numba and scipy), which the benchmark does not install.

Reported per system: utterances/s (best epoch), CPU ms per utterance (the
process tree, DataLoader workers included, from /proc), time to the first
batch (from the loader's constructor), peak RSS and PSS of the process tree.
Peers that do not import are reported as skipped.

    make bench-audio                                         # installs lhotse, full size
    PYTHONPATH=python .venv/bin/python bench/audio.py --quick  # a few seconds
"""
import argparse
import datetime
import gc
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "examples"))
if os.path.join(REPO, "python") not in sys.path:
    sys.path.insert(0, os.path.join(REPO, "python"))

import _speech  # noqa: E402
import harness  # noqa: E402

RATE = 16000  # Whisper's log-mel runs at 16 kHz
HOP = 160
SYSTEMS = ("ffcv_go", "torchcodec", "soundfile", "lhotse")
NAMES = {"ffcv_go": "ffcv_go", "torchcodec": "DataLoader + torchcodec AudioDecoder",
         "soundfile": "DataLoader + soundfile", "lhotse": "lhotse (OnTheFlyFeatures, Fbank)"}
# SpecAugment as the LibriSpeech policies have it, without time warping.
FREQ_MASK, N_FREQ = 27, 2
TIME_MASK, TIME_P, N_TIME = 100, 0.2, 2


def log(msg):
    print(f"[audio {time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ==== ffcv_go pipeline ==========================================================================
# The .beton and the Loader: AudioField, RandomAudioCropDecoder and the Go
# audio transforms are what is measured; the rest of this file is the same
# for every system.

def write_beton(items, path):
    from ffcv_go.fields import AudioField
    from ffcv_go.writer import DatasetWriter
    t0 = time.perf_counter()
    DatasetWriter(path, {"audio": AudioField()}, progress=False).from_indexed_dataset([(it["path"],) for it in items])
    return time.perf_counter() - t0


def make_ours(path, args):
    from ffcv_go.fields.decoders import RandomAudioCropDecoder
    from ffcv_go.loader import Loader, OrderOption
    from ffcv_go.transforms import FrequencyMasking, Resample, TimeMasking, WhisperLogMel
    resample = [Resample(args.source_rate, RATE)] if args.source_rate != RATE else []
    return Loader(path, batch_size=args.batch_size, num_workers=args.workers, order=OrderOption.RANDOM,
                  seed=args.seed, drop_last=True, pipelines={
                      "audio": [RandomAudioCropDecoder(args.window, mono=True), *resample,
                                WhisperLogMel(args.n_mels, pad_or_trim=False),
                                FrequencyMasking(FREQ_MASK, n=N_FREQ), TimeMasking(TIME_MASK, p=TIME_P, n=N_TIME)]})

# ==== end of the ffcv_go pipeline ===============================================================


# ---- the DataLoader peers: a torch Dataset per decoder ------------------------------------------


class WindowDataset:
    """Log-mel (n_mels, window · 100) per utterance of a random window,
    SpecAugment'ed."""

    def __init__(self, items, args, backend):
        self.paths = [it["path"] for it in items]
        self.frames = [int(it["frames"]) for it in items]
        self.rate, self.window, self.n_mels, self.backend = args.source_rate, args.window, args.n_mels, backend
        self._aug = None

    def __len__(self):
        return len(self.paths)

    def _masks(self):
        if self._aug is None:
            import torchaudio.transforms as T
            self._aug = [T.FrequencyMasking(FREQ_MASK)] * N_FREQ + [T.TimeMasking(TIME_MASK, p=TIME_P)] * N_TIME
        return self._aug

    def __getitem__(self, i):
        import torch
        import torchaudio.functional as F
        import whisper
        n = int(round(self.window * self.rate))
        start = int(np.random.randint(0, max(1, self.frames[i] - n + 1)))
        wave = getattr(self, "_" + self.backend)(self.paths[i], start, n)  # (N,) float32 tensor
        if wave.shape[0] < n:
            wave = torch.nn.functional.pad(wave, (0, n - wave.shape[0]))
        wave = F.resample(wave[:n], self.rate, RATE)
        x = whisper.log_mel_spectrogram(wave, self.n_mels)
        for m in self._masks():
            x = m(x)
        return x

    def _torchcodec(self, path, start, n):
        from torchcodec.decoders import AudioDecoder
        s = AudioDecoder(path).get_samples_played_in_range(start / self.rate, (start + n) / self.rate)
        return s.data.mean(0)

    def _soundfile(self, path, start, n):
        import soundfile as sf
        import torch
        x, _ = sf.read(path, start=start, stop=start + n, dtype="float32", always_2d=True)
        return torch.from_numpy(x.mean(1))


def make_peer(items, args, backend):
    import torch
    ds = WindowDataset(items, args, backend)
    return torch.utils.data.DataLoader(ds, batch_size=args.batch_size, shuffle=True, num_workers=args.workers,
                                       persistent_workers=args.workers > 0, drop_last=True)


# ---- lhotse -------------------------------------------------------------------------------------


class LhotseWindows:
    """A lhotse dataset: a CutSet batch -> (B, T, n_mels) log-mel filterbank
    of a random window of each cut, SpecAugment'ed."""

    def __init__(self, window, n_mels):
        from lhotse.dataset import OnTheFlyFeatures, SpecAugment
        from lhotse.features import Fbank, FbankConfig
        self.window = window
        self.features = OnTheFlyFeatures(Fbank(FbankConfig(num_mel_bins=n_mels, device="cpu")))
        self.aug = SpecAugment(time_warp_factor=None, num_feature_masks=N_FREQ, features_mask_size=FREQ_MASK,
                               num_frame_masks=N_TIME, frames_mask_size=TIME_MASK, max_frames_mask_fraction=TIME_P,
                               p=1.0)

    def __getitem__(self, cuts):
        cuts = cuts.truncate(max_duration=self.window, offset_type="random", preserve_id=True)
        feats, _ = self.features(cuts)
        return self.aug(feats)


class LhotseLoader:
    """lhotse's DataLoader over a SimpleCutSampler, the sampler's epoch set
    before each pass as lhotse's recipes do."""

    def __init__(self, items, args):
        import torch
        from lhotse import CutSet, Recording, RecordingSet
        from lhotse.dataset import SimpleCutSampler
        recordings = RecordingSet.from_recordings(Recording.from_file(it["path"]) for it in items)
        cuts = CutSet.from_manifests(recordings=recordings)
        if args.source_rate != RATE:
            cuts = cuts.resample(RATE)  # done as each cut's audio is loaded
        self.sampler = SimpleCutSampler(cuts, max_cuts=args.batch_size,
                                        shuffle=True, drop_last=True, seed=args.seed)
        self.loader = torch.utils.data.DataLoader(LhotseWindows(args.window, args.n_mels), sampler=self.sampler,
                                                  batch_size=None, num_workers=args.workers,
                                                  persistent_workers=args.workers > 0)
        self.epoch = 0

    def __iter__(self):
        self.sampler.set_epoch(self.epoch)
        self.epoch += 1
        return iter(self.loader)


def peer_ready(name):
    """Raises ImportError when the peer cannot run here."""
    if name == "torchcodec":
        try:
            from torchcodec.decoders import AudioDecoder  # noqa: F401
        except Exception as e:  # noqa: BLE001 - torchcodec raises RuntimeError without FFmpeg's libraries
            raise ImportError(f"torchcodec: {e}") from e
    elif name == "soundfile":
        import soundfile  # noqa: F401
    elif name == "lhotse":
        import lhotse  # noqa: F401
    else:
        raise ValueError(name)
    import torchaudio  # noqa: F401
    import whisper  # noqa: F401


# ---- running ------------------------------------------------------------------------------------


def features_of(batch):
    """The feature tensor of a batch as each system hands it."""
    if isinstance(batch, (tuple, list)):
        batch = batch[0]
    return getattr(batch, "waveform", batch)


def run(make, args, mon):
    """Epochs of the loader make() builds: utterances/s, CPU ms per utterance,
    first batch, peak memory."""
    out = {"epochs": []}
    mark = mon.mark()
    t_create = time.perf_counter()
    loader = make()
    frames = int(round(args.window * RATE)) // HOP
    for e in range(args.epochs):
        emark = mon.mark() if e else mark
        t0 = time.perf_counter()
        n = 0
        for batch in loader:
            x = features_of(batch)
            if n == 0 and e == 0:
                out["first_batch_s"] = time.perf_counter() - t_create
                out["batch_shape"] = list(x.shape)
            # (B, n_mels, T), lhotse's (B, T, n_mels); T within a few frames
            # of window · 100 (Kaldi's frames end inside the window).
            dims = sorted(x.shape[1:])
            if x.shape[0] != args.batch_size or args.n_mels not in x.shape[1:] or abs(dims[-1] - frames) > 3:
                raise AssertionError(f"batch {tuple(x.shape)}, want {args.batch_size} × {args.n_mels} × ~{frames}")
            n += x.shape[0]
        dt = time.perf_counter() - t0
        use = mon.since(emark)
        out["epochs"].append({"utterances": n, "seconds": dt, "utterances_per_s": n / dt, "cpu_s": use["cpu_s"]})
        log(f"  epoch {e}: {n} utterances in {dt:.2f} s = {n / dt:.1f}/s (CPU {use['cpu_s']:.1f} s)")
    use = mon.since(mark)
    if hasattr(loader, "close"):
        loader.close()
    del loader
    gc.collect()
    out.update(peak_rss_mib=use["peak_rss_mib"], peak_pss_mib=use["peak_pss_mib"])
    out["utterances_per_s"] = max(x["utterances_per_s"] for x in out["epochs"])
    out["cpu_ms_per_utterance"] = min(1000 * x["cpu_s"] / max(1, x["utterances"]) for x in out["epochs"])
    return out


def table(r):
    lines = ["| system | utterances/s | CPU ms / utterance | first batch (s) | peak RSS (MiB) | peak PSS (MiB) "
             "| ours × |", "|---|---:|---:|---:|---:|---:|---:|"]
    ours = r["systems"].get("ffcv_go", {}).get("utterances_per_s")
    for name, x in r["systems"].items():
        if "skipped" in x:
            lines.append(f"| {NAMES[name]} | skipped: {x['skipped']} | | | | | |")
            continue
        ratio = "" if not ours or name == "ffcv_go" else f"{ours / x['utterances_per_s']:.1f}×"
        lines.append(f"| {NAMES[name]} | {x['utterances_per_s']:.1f} | {x['cpu_ms_per_utterance']:.1f} | "
                     f"{x['first_batch_s']:.2f} | {x['peak_rss_mib']:.0f} | {x['peak_pss_mib']:.0f} | {ratio} |")
    d = r["data"]
    lines.append("")
    lines.append(f"Data: {d['utterances']} utterances of {d['min_s']:.1f}-{d['max_s']:.1f} s "
                 f"({d['hours']:.2f} h) at {d['rate']} Hz, FLAC: {d['flac_mib']:.1f} MiB"
                 + (f"; the .beton {d['beton_mib']:.1f} MiB, written in {d['write_s']:.1f} s." if "beton_mib" in d
                    else "."))
    return "\n".join(lines)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default=os.path.join(HERE, "data", "speech"))
    p.add_argument("--utterances", type=int, default=512)
    p.add_argument("--min-seconds", type=float, default=10.0)
    p.add_argument("--max-seconds", type=float, default=20.0)
    p.add_argument("--source-rate", type=int, default=RATE,
                   help="the files' sample rate; other than 16000, every system resamples to 16 kHz")
    p.add_argument("--window", type=float, default=5.0, help="seconds per loaded window")
    p.add_argument("--n-mels", type=int, default=80, choices=(80, 128))
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--systems", nargs="+", default=list(SYSTEMS), choices=SYSTEMS)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None, help="write the results (JSON) here")
    p.add_argument("--quick", action="store_true", help="a tiny run that proves the benchmark works")
    a = p.parse_args(argv)
    if a.quick:
        a.data = a.data + "-quick" if a.data == p.get_default("data") else a.data
        a.utterances, a.batch_size, a.epochs = 48, 16, 2
    return a


def main(argv=None):
    args = parse_args(argv)
    data = os.path.join(args.data, f"{args.source_rate}hz")
    log(f"{args.utterances} utterances of {args.min_seconds:g}-{args.max_seconds:g} s at {args.source_rate} Hz "
        f"under {data}")
    t0 = time.perf_counter()
    items = _speech.long_utterances(data, args.utterances, args.min_seconds, args.max_seconds,
                                    rate=args.source_rate, seed=args.seed)
    log(f"  ready in {time.perf_counter() - t0:.1f} s")
    secs = [it["seconds"] for it in items]
    r = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "machine": harness.machine_info(),
         "git": harness.git_rev(), "args": vars(args), "systems": {},
         "data": {"utterances": len(items), "min_s": min(secs), "max_s": max(secs), "hours": sum(secs) / 3600,
                  "rate": args.source_rate,
                  "flac_mib": sum(os.path.getsize(it["path"]) for it in items) / harness.MiB}}
    beton = os.path.join(data, "speech.beton")
    mon = harness.TreeMonitor()
    try:
        for name in args.systems:
            if name == "ffcv_go":
                try:
                    from ffcv_go.fields import AudioField  # noqa: F401
                except ImportError as e:
                    log(f"ffcv_go: skipped ({e})")
                    r["systems"][name] = {"skipped": f"no AudioField in this ffcv_go ({e})"}
                    continue
                log("ffcv_go: writing the .beton")
                r["data"]["write_s"] = write_beton(items, beton)
                r["data"]["beton_mib"] = os.path.getsize(beton) / harness.MiB
                log(NAMES[name])
                r["systems"][name] = run(lambda: make_ours(beton, args), args, mon)
                continue
            try:
                peer_ready(name)
            except ImportError as e:
                log(f"{name}: skipped ({e})")
                r["systems"][name] = {"skipped": str(e)}
                continue
            log(NAMES[name])
            if name == "lhotse":
                r["systems"][name] = run(lambda: LhotseLoader(items, args), args, mon)
            else:
                r["systems"][name] = run(lambda: make_peer(items, args, name), args, mon)
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
