"""Speech made with espeak-ng (Debian's espeak-ng), written as FLAC: the data
of examples/train_kws.py and bench/audio.py.

- keyword_clips(): one-second clips of ten keywords, each spoken by many
  speakers (an espeak-ng voice, its accent, with a variant: +f1 ... +m7,
  +croak, +klatt, ...), at a speed (words per minute, -s) and pitch (-p)
  drawn per clip, then mixed with white, pink or babble noise (another
  clip's speech) at a signal-to-noise ratio drawn per clip. Speakers are
  split into train and val, so validation is on voices never trained on.
- long_utterances(): 10-20 s utterances, espeak-ng reading a generated
  word list, with a little pink noise, for the benchmark.

Everything follows from the seed and the arguments: a directory made once is
reused when its manifest matches (the same call makes the same files).
espeak-ng speaks at 22.05 kHz; the waveforms are resampled to the rate asked
for (16 kHz by default) with torchaudio and written as 16-bit FLAC with
soundfile. espeak-ng runs in parallel processes, one per core.
"""
import json
import os
import shutil
import subprocess
import zlib
from concurrent.futures import ThreadPoolExecutor

import numpy as np

KEYWORDS = ("yes", "no", "up", "down", "left", "right", "on", "off", "stop", "go")
# espeak-ng's own English voices (no MBROLA) and the variants that change the
# speaker: formants, breathiness, the Klatt synthesizer.
VOICES = ("en", "en-us", "en-gb-scotland", "en-gb-x-rp", "en-029", "en-gb-x-gbclan", "en-gb-x-gbcwmd")
VARIANTS = ("", "f1", "f2", "f3", "f4", "f5", "m1", "m2", "m3", "m4", "m5", "m6", "m7", "croak", "klatt",
            "klatt2", "klatt3", "Andy", "max", "steph", "linda", "edward", "robert")
ESPEAK_RATE = 22050
# Words of the long utterances besides the keywords.
FILLER = ("the", "a", "and", "then", "we", "will", "turn", "after", "before", "every", "morning", "evening",
          "house", "river", "garden", "window", "little", "green", "blue", "quickly", "slowly", "number",
          "seven", "three", "twelve", "people", "always", "never", "today", "tomorrow", "machine", "light",
          "forward", "back", "open", "close", "water", "mountain", "city", "train", "station", "music")
MANIFEST = "manifest.json"
MARK = ".speech"  # this module made the folder (an interrupted run leaves it without a manifest)


def espeak_available():
    return shutil.which("espeak-ng") is not None


def _require_espeak():
    if not espeak_available():
        raise RuntimeError("espeak-ng not found: install Debian's espeak-ng (apt-get install espeak-ng)")


def speakers():
    """Every (voice, variant) pair, as espeak-ng's -v argument, in a fixed order."""
    return [v + ("+" + x if x else "") for v in VOICES for x in VARIANTS]


def speak(text, voice, speed=160, pitch=50):
    """espeak-ng's waveform of text: float32 mono at 22.05 kHz, leading and
    trailing silence cut."""
    proc = subprocess.run(["espeak-ng", "-v", voice, "-s", str(int(speed)), "-p", str(int(pitch)), "--stdout", text],
                          capture_output=True, check=False)
    raw = proc.stdout
    at = raw.find(b"data")
    if proc.returncode != 0 or at < 0:
        raise RuntimeError(f"espeak-ng -v {voice} failed ({proc.returncode}): {proc.stderr.decode()[-300:]}")
    # --stdout writes a streaming header (no size): the samples are the rest.
    pcm = raw[at + 8:]
    x = np.frombuffer(pcm[:len(pcm) // 2 * 2], dtype="<i2").astype(np.float32) / 32768.0
    loud = np.flatnonzero(np.abs(x) > 0.01)
    return x[loud[0]:loud[-1] + 1] if len(loud) else x


def resample(x, rate):
    if rate == ESPEAK_RATE:
        return x
    import torch
    import torchaudio.functional as F
    return F.resample(torch.from_numpy(np.ascontiguousarray(x)), ESPEAK_RATE, rate).numpy()


def pink_noise(n, rng):
    """1/f noise: white noise shaped in the frequency domain, unit RMS."""
    spec = np.fft.rfft(rng.standard_normal(n))
    f = np.arange(len(spec), dtype=np.float64)
    f[0] = 1.0
    x = np.fft.irfft(spec / np.sqrt(f), n)
    return (x / (np.sqrt(np.mean(x ** 2)) + 1e-12)).astype(np.float32)


def mix(signal, noise, snr_db):
    """signal + noise scaled to snr_db (by the RMS of both)."""
    ps = np.mean(signal ** 2) + 1e-12
    pn = np.mean(noise ** 2) + 1e-12
    return signal + noise * np.sqrt(ps / (pn * 10 ** (snr_db / 10)))


def _write(path, x, rate):
    import soundfile as sf
    peak = float(np.max(np.abs(x))) if len(x) else 0.0
    if peak > 0.99:
        x = x * (0.99 / peak)
    sf.write(path, x.astype(np.float32), rate, format="FLAC", subtype="PCM_16")


def _cached(out_dir, params):
    """The manifest's items when out_dir was made with these params, else None
    (out_dir then emptied when it was made by this module, refused when it
    holds anything else)."""
    path = os.path.join(out_dir, MANIFEST)
    try:
        with open(path) as f:
            m = json.load(f)
        if m["params"] == params and all(os.path.exists(os.path.join(out_dir, it["path"])) for it in m["items"]):
            return [dict(it, path=os.path.join(out_dir, it["path"])) for it in m["items"]]
    except (OSError, ValueError, KeyError):
        pass
    if os.path.exists(os.path.join(out_dir, MARK)):
        shutil.rmtree(out_dir)
    elif os.path.isdir(out_dir) and os.listdir(out_dir):
        raise FileExistsError(f"{out_dir}: not empty and not made by _speech (no {MARK}); give another folder")
    os.makedirs(out_dir, exist_ok=True)
    open(os.path.join(out_dir, MARK), "w").close()
    return None


def _save_manifest(out_dir, params, items):
    rel = [dict(it, path=os.path.relpath(it["path"], out_dir)) for it in items]
    with open(os.path.join(out_dir, MANIFEST + ".tmp"), "w") as f:
        json.dump({"params": params, "items": rel}, f, indent=0)
    os.replace(os.path.join(out_dir, MANIFEST + ".tmp"), os.path.join(out_dir, MANIFEST))


def _pool(workers):
    return ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 1)


def keyword_clips(out_dir, num_speakers=40, clips_per_word=2, val_fraction=0.25, seconds=1.0, rate=16000,
                  snr_db=(5.0, 20.0), seed=0, workers=None):
    """Writes num_speakers × len(KEYWORDS) × clips_per_word one-second FLAC
    clips under out_dir; returns their items, dicts of path, label (the
    keyword's index), word, speaker, speed, pitch, noise, snr_db and split
    ('train' or 'val': a val_fraction of the speakers, none of whose clips
    is trained on)."""
    params = dict(kind="keywords", num_speakers=num_speakers, clips_per_word=clips_per_word,
                  val_fraction=val_fraction, seconds=seconds, rate=rate, snr_db=list(snr_db), seed=seed)
    items = _cached(out_dir, params)
    if items is not None:
        return items
    _require_espeak()
    rng = np.random.default_rng(seed)
    every = speakers()
    if num_speakers > len(every):
        raise ValueError(f"num_speakers {num_speakers}: espeak-ng gives {len(every)} here")
    chosen = [every[i] for i in sorted(rng.choice(len(every), num_speakers, replace=False))]
    n_val = max(1, int(round(val_fraction * num_speakers)))
    val = set(chosen[i] for i in rng.choice(num_speakers, n_val, replace=False))
    jobs = []
    for s in chosen:
        for label, word in enumerate(KEYWORDS):
            for k in range(clips_per_word):
                jobs.append(dict(word=word, label=label, speaker=s, split="val" if s in val else "train",
                                 speed=int(rng.integers(130, 211)), pitch=int(rng.integers(20, 81))))
    with _pool(workers) as pool:
        clean = list(pool.map(lambda j: resample(speak(j["word"], j["speaker"], j["speed"], j["pitch"]), rate),
                              jobs))
    n = int(round(seconds * rate))
    for i, (j, x) in enumerate(zip(jobs, clean)):
        r = np.random.default_rng([seed, i])
        x = x[:n]
        at = int(r.integers(0, n - len(x) + 1))
        clip = np.zeros(n, np.float32)
        clip[at:at + len(x)] = x
        kind = ("white", "pink", "babble")[int(r.integers(0, 3))]
        snr = float(r.uniform(*snr_db))
        if kind == "white":
            noise = r.standard_normal(n).astype(np.float32)
        elif kind == "pink":
            noise = pink_noise(n, r)
        else:  # another clip's speech, a different word, looped to the length
            o = int(r.integers(0, len(clean)))
            while jobs[o]["label"] == j["label"]:
                o = (o + 1) % len(clean)
            noise = np.resize(clean[o], n)
            snr = max(snr, 10.0)
        j.update(noise=kind, snr_db=round(snr, 2),
                 path=os.path.join(out_dir, j["split"], f"{i:05d}-{j['word']}.flac"))
        os.makedirs(os.path.dirname(j["path"]), exist_ok=True)
        _write(j["path"], mix(clip, noise, snr), rate)
    _save_manifest(out_dir, params, jobs)
    return jobs


def long_utterances(out_dir, num=64, min_seconds=10.0, max_seconds=20.0, rate=16000, seed=0, workers=None):
    """Writes num utterances of min_seconds to max_seconds (drawn uniformly)
    as FLAC under out_dir: a random speaker reading random words of
    KEYWORDS + FILLER at a random speed, with pink noise at 20-30 dB.
    Returns dicts of path, seconds, frames, speaker."""
    params = dict(kind="long", num=num, min_seconds=min_seconds, max_seconds=max_seconds, rate=rate, seed=seed)
    items = _cached(out_dir, params)
    if items is not None:
        return items
    _require_espeak()
    every = speakers()
    words = KEYWORDS + FILLER
    jobs = []
    for i in range(num):
        r = np.random.default_rng([seed, 1, i])
        target = float(r.uniform(min_seconds, max_seconds))
        speed = int(r.integers(140, 191))
        # About 4 words a second: always more speech than the target at these speeds.
        text = " ".join(words[int(w)] for w in r.integers(0, len(words), int(target * 4) + 8))
        jobs.append(dict(speaker=every[int(r.integers(0, len(every)))], speed=speed,
                         pitch=int(r.integers(20, 81)), target=target, text=text,
                         snr=float(r.uniform(20, 30)), noise_seed=int(zlib.crc32(text.encode()))))

    def make(i_job):
        i, j = i_job
        x = resample(speak(j["text"], j["speaker"], j["speed"], j["pitch"]), rate)
        n = int(round(j["target"] * rate))
        while len(x) < n:  # a slow voice: say it again
            x = np.concatenate([x, np.zeros(rate // 4, np.float32), x])
        x = mix(x[:n], pink_noise(n, np.random.default_rng([seed, 2, i])), j["snr"])
        path = os.path.join(out_dir, f"{i:05d}.flac")
        _write(path, x, rate)
        return dict(path=path, seconds=n / rate, frames=n, speaker=j["speaker"], speed=j["speed"])

    with _pool(workers) as pool:
        items = list(pool.map(make, enumerate(jobs)))
    _save_manifest(out_dir, params, items)
    return items
