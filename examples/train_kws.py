#!/usr/bin/env python3
"""Keyword spotting: a small CNN on Whisper's log-mel spectrograms of ten spoken words
("yes", "no", "up", "down", "left", "right", "on", "off", "stop", "go").

The speech is synthesized with espeak-ng (examples/_speech.py): many
speakers (espeak-ng's English voices and accents with their variants), a
speed and pitch drawn per clip, white, pink or babble noise mixed in at
5-20 dB, one second at 16 kHz, FLAC. A quarter of the speakers are held
out: validation accuracy is on voices the model never heard.

The clips are written to .beton files (AudioField: FLAC) and loaded with

- train: AudioDecoder + WhisperLogMel (80 bands, 25 ms windows every 10 ms,
  log10, Whisper's scaling) + FrequencyMasking + TimeMasking (SpecAugment),
  in ffcv_go's Go workers;
- validation: the same without the masks.

The masks fill with 0, which in Whisper's scaling is a middling level (the
features run from about -1 to 1.5), not a hole far below the rest.

    python examples/train_kws.py                        # CPU, 1-2 minutes on 2 cores
    python examples/train_kws.py --device cuda          # unchanged on a GPU
    python examples/train_kws.py --reference            # the same with a torch DataLoader:
                                                        # soundfile, whisper's log-mel,
                                                        # torchaudio's masks

Prints each epoch's loss and validation accuracy; the last line is
``RESULT {json}`` (chance is 0.10).
"""
import argparse
import json
import os
import sys
import tempfile
import time

import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import _speech  # noqa: E402

RATE = 16000  # Whisper's log-mel: 400-point windows every 160 samples at 16 kHz


class KWSNet(nn.Module):
    """Four 3x3 convolutions (the first with stride 2) with pooling between
    and a linear layer over (n_mels, T) log-mel features: about 9 M
    multiply-adds per one-second clip at 80 bands."""

    def __init__(self, classes):
        super().__init__()

        def conv(cin, cout, stride=1):
            return [nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False), nn.BatchNorm2d(cout),
                    nn.ReLU(inplace=True)]
        self.net = nn.Sequential(*conv(1, 16, 2), *conv(16, 32), nn.MaxPool2d(2), *conv(32, 64), nn.MaxPool2d(2),
                                 *conv(64, 64), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.2),
                                 nn.Linear(64, classes))

    def forward(self, x):  # (B, n_mels, T) or (B, 1, n_mels, T)
        return self.net(x.float().reshape(x.shape[0], 1, *x.shape[-2:]))


# ==== ffcv_go pipeline ==========================================================================
# The .beton files and the Loaders. AudioField, AudioDecoder and the Go
# audio transforms (WhisperLogMel, FrequencyMasking, TimeMasking) are what
# the example exists to show; everything else in this file is the same for
# --reference.

def write_betons(root, items):
    """train.beton and val.beton: each clip as FLAC (AudioField) and its label."""
    from ffcv_go import DatasetWriter
    from ffcv_go.fields import AudioField, IntField
    paths = {}
    for split in ("train", "val"):
        paths[split] = os.path.join(root, f"{split}.beton")
        DatasetWriter(paths[split], {"audio": AudioField(), "label": IntField()}, progress=False).from_indexed_dataset(
            [(it["path"], it["label"]) for it in items if it["split"] == split])
    return paths["train"], paths["val"]


class _Mels:
    """(log-mel (B, n_mels, T) on device, labels) from a Loader whose audio
    output is an Audio(data, lengths) batch: every clip is 1 s long, so all
    of data is valid and the lengths are not needed."""

    def __init__(self, loader, device):
        self.loader, self.device = loader, device

    def __len__(self):
        return len(self.loader)

    def __iter__(self):
        for audio, y in self.loader:
            yield audio.data.to(self.device, non_blocking=True), y

    def close(self):
        self.loader.close()


def ffcv_go_loaders(root, items, args, device):
    from ffcv_go import Loader
    from ffcv_go.fields.decoders import AudioDecoder, IntDecoder
    from ffcv_go.loader import OrderOption
    from ffcv_go.transforms import FrequencyMasking, Squeeze, TimeMasking, ToDevice, ToTensor, WhisperLogMel
    train, val = write_betons(root, items)
    to_dev = [ToDevice(device, non_blocking=True)] if device.type != "cpu" else []
    mel = WhisperLogMel(args.n_mels, pad_or_trim=False)  # 1 s: (n_mels, 100)
    label = [IntDecoder(), ToTensor(), Squeeze(), *to_dev]
    train_l = Loader(train, batch_size=args.batch_size, num_workers=args.workers, order=OrderOption.RANDOM,
                     seed=args.seed, drop_last=True, pipelines={
                         "audio": [AudioDecoder(mono=True), mel, FrequencyMasking(args.freq_mask),
                                   TimeMasking(args.time_mask)],
                         "label": label})
    val_l = Loader(val, batch_size=args.batch_size, num_workers=args.workers, order=OrderOption.SEQUENTIAL,
                   pipelines={"audio": [AudioDecoder(mono=True), mel], "label": label})
    return _Mels(train_l, device), _Mels(val_l, device)

# ==== end of the ffcv_go pipeline ===============================================================


class ClipDataset(torch.utils.data.Dataset):
    """--reference: (log-mel (n_mels, T), label) per clip, read with
    soundfile, features by whisper.log_mel_spectrogram, torchaudio's masks
    in training."""

    def __init__(self, items, n_mels, masks=None):
        self.items, self.n_mels, self.masks = items, n_mels, masks
        self._aug = None

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        import soundfile as sf
        import torchaudio
        import whisper
        if self.masks and self._aug is None:
            self._aug = nn.Sequential(torchaudio.transforms.FrequencyMasking(self.masks[0]),
                                      torchaudio.transforms.TimeMasking(self.masks[1]))
        wave, rate = sf.read(self.items[i]["path"], dtype="float32", always_2d=True)
        assert rate == RATE, (self.items[i]["path"], rate)
        x = whisper.log_mel_spectrogram(torch.from_numpy(wave.T.copy()).mean(0), self.n_mels)
        if self.masks:
            x = self._aug(x)
        return x, self.items[i]["label"]


class _OnDevice:
    """A DataLoader whose batches are moved to device."""

    def __init__(self, loader, device):
        self.loader, self.device = loader, device

    def __len__(self):
        return len(self.loader)

    def __iter__(self):
        for x, y in self.loader:
            yield x.to(self.device, non_blocking=True), y.to(self.device, non_blocking=True)


def reference_loaders(items, args, device):
    def make(split, masks, shuffle):
        ds = ClipDataset([it for it in items if it["split"] == split], args.n_mels, masks)
        g = torch.Generator().manual_seed(args.seed)
        return _OnDevice(torch.utils.data.DataLoader(
            ds, batch_size=args.batch_size, shuffle=shuffle, drop_last=shuffle, generator=g,
            num_workers=max(args.workers, 0), persistent_workers=args.workers > 0,
            pin_memory=device.type == "cuda"), device)
    return make("train", (args.freq_mask, args.time_mask), True), make("val", None, False)


def evaluate(model, loader):
    model.eval()
    right = total = 0
    with torch.no_grad():
        for x, y in loader:
            right += (model(x).argmax(1) == y.reshape(-1)).sum().item()
            total += len(y)
    model.train()
    return right / max(total, 1), total


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=None, help="where the clips and .beton files go (default: a temporary folder)")
    ap.add_argument("--speakers", type=int, default=40, help="espeak-ng voice/variant pairs (a quarter held out)")
    ap.add_argument("--clips-per-word", type=int, default=2, help="clips per speaker and keyword")
    ap.add_argument("--n-mels", type=int, default=80, choices=(80, 128))
    ap.add_argument("--freq-mask", type=int, default=8, help="FrequencyMasking's freq_mask_param (bands)")
    ap.add_argument("--time-mask", type=int, default=10, help="TimeMasking's time_mask_param (10 ms frames)")
    ap.add_argument("--epochs", type=int, default=12)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--lr", type=float, default=1e-2)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--reference", action="store_true",
                    help="load with a torch DataLoader (soundfile + torchaudio) instead of ffcv_go")
    args = ap.parse_args(argv)
    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    tmp = None if args.data else tempfile.TemporaryDirectory()
    root = args.data or tmp.name
    t0 = time.perf_counter()
    items = _speech.keyword_clips(os.path.join(root, "clips"), num_speakers=args.speakers,
                                  clips_per_word=args.clips_per_word, seed=args.seed)
    n_train = sum(it["split"] == "train" for it in items)
    n_val_speakers = len({it["speaker"] for it in items if it["split"] == "val"})
    if args.reference:
        train_l, val_l = reference_loaders(items, args, device)
    else:
        train_l, val_l = ffcv_go_loaders(root, items, args, device)
    print(f"{len(items)} clips ({n_train} train, {len(items) - n_train} validation from {n_val_speakers} "
          f"held-out speakers of {args.speakers}) made and written in {time.perf_counter() - t0:.1f} s "
          f"({'reference DataLoader' if args.reference else 'ffcv_go'})", flush=True)

    model = KWSNet(len(_speech.KEYWORDS)).to(device)
    steps = args.epochs * len(train_l)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-3)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, total_steps=steps, pct_start=0.25)
    loss_fn = nn.CrossEntropyLoss()
    t1 = time.perf_counter()
    history = []
    for epoch in range(args.epochs):
        total = count = 0
        for x, y in train_l:
            y = y.reshape(-1)
            loss = loss_fn(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            total += loss.item() * len(y)
            count += len(y)
        acc, n_val = evaluate(model, val_l)
        history.append({"epoch": epoch, "loss": total / count, "val_accuracy": acc})
        print(f"epoch {epoch}: loss {total / count:.3f}, validation accuracy {acc:.3f} over {n_val} clips",
              flush=True)
    result = {"val_accuracy": history[-1]["val_accuracy"], "chance": 1 / len(_speech.KEYWORDS),
              "epochs": args.epochs, "train_clips": n_train, "val_clips": len(items) - n_train,
              "val_speakers": n_val_speakers, "loader": "reference" if args.reference else "ffcv_go",
              "train_seconds": time.perf_counter() - t1, "history": history, "device": str(device)}
    print("RESULT " + json.dumps(result))
    for loader in (train_l, val_l):
        if hasattr(loader, "close"):
            loader.close()
    if tmp is not None:
        tmp.cleanup()
    return result


if __name__ == "__main__":
    main()
