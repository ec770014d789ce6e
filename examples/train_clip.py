#!/usr/bin/env python3
"""CLIP-style contrastive training of a small dual encoder on photo crops
with captions, read from webdataset shards converted in one pass.

The data: crops of the Debian wallpaper photos (mate-backgrounds,
lomiri-wallpapers-*), each captioned with words naming its source
photograph, where in it the crop lies and its colour, e.g. "the top of the
garden photo, mostly green" (a real signal: the words follow from the
pixels). They are written as webdataset shards (key.jpg + key.txt), then
converted by ``DatasetWriter.from_webdataset`` -- images straight from the
tar to the Go encoder, captions tokenized with open_clip's tokenizer at
write time -- into one .beton per shard.

The model: a four-layer CNN and a bag-of-tokens text encoder, projected to
a shared space and trained with CLIP's symmetric InfoNCE loss (learned
temperature). Batches: RandomResizedCrop + flip for images (the captions
say nothing about left and right), ``TokenDecoder`` rows for captions, as
open_clip's ``tokenize`` makes them.

It reports, per epoch, the loss, and on held-out crops the image-to-text
retrieval accuracy: the share of images whose nearest caption, among every
distinct caption of the held-out set, is their own (chance: 1 / the number
of distinct captions), before and after training.

    PYTHONPATH=python python examples/train_clip.py --out-dir /tmp/clip

On a GPU (``--device cuda``) the batches go to the device in the loader.
Last line: ``RESULT {json}``.
"""
import argparse
import io
import json
import os
import re
import sys
import tarfile
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ffcv_go import DatasetWriter, Loader  # noqa: E402
from ffcv_go.fields import RGBImageField, TextField  # noqa: E402
from ffcv_go.fields.decoders import (CenterCropRGBImageDecoder, RandomResizedCropRGBImageDecoder,  # noqa: E402
                                     TokenDecoder)
from ffcv_go.loader import OrderOption  # noqa: E402
from ffcv_go.transforms import NormalizeImage, RandomHorizontalFlip, ToDevice, ToTensor, ToTorchImage  # noqa: E402

MEAN = np.array([0.485, 0.456, 0.406]) * 255
STD = np.array([0.229, 0.224, 0.225]) * 255
REGIONS = ("top", "middle", "bottom")
COLOURS = {"red": 0, "orange": 30, "yellow": 55, "green": 110, "cyan": 180, "blue": 225, "purple": 280, "pink": 330}


# ---- data -----------------------------------------------------------------------

def photo_name(path):
    """A word naming the photo: the first word of its file name."""
    words = [w for w in re.split(r"[^a-zA-Z]+", Path(path).stem) if len(w) > 1]
    return (words[0] if words else "unnamed").lower()


def colour_word(pix):
    """The colour of a crop: grey/dark/bright for dull ones, else the hue's name."""
    rgb = pix.reshape(-1, 3).astype(np.float64).mean(0) / 255
    mx, mn = rgb.max(), rgb.min()
    if mx - mn < 0.08:
        return "dark" if mx < 0.3 else "bright" if mn > 0.7 else "grey"
    r, g, b = rgb
    if mx == r:
        h = (60 * (g - b) / (mx - mn)) % 360
    elif mx == g:
        h = 60 * (b - r) / (mx - mn) + 120
    else:
        h = 60 * (r - g) / (mx - mn) + 240
    return min(COLOURS, key=lambda c: min(abs(h - COLOURS[c]), 360 - abs(h - COLOURS[c])))


def make_shards(out, num_photos, per_photo, test_share, seed):
    """Writes train and test webdataset shards of photo crops and captions;
    returns (train shards, test shards, photo names)."""
    from make_tiny_imagefolder import _open_small, find_photos
    photos, names = [], []
    for p in find_photos():
        n = photo_name(p)
        if n not in names:
            photos.append(p)
            names.append(n)
        if len(photos) == num_photos:
            break
    if len(photos) < 2:
        raise SystemExit("need at least 2 photos in /usr/share/backgrounds or /usr/share/wallpapers "
                         "(install mate-backgrounds or lomiri-wallpapers-*)")
    rng = np.random.default_rng(seed)
    samples = []
    for k, (path, name) in enumerate(zip(photos, names)):
        src = _open_small(path, 480)
        for i in range(per_photo):
            region = i % 3
            side = int(rng.integers(min(src.height // 3, src.width) // 2, min(src.height // 3, src.width) + 1))
            band = src.height / 3
            x = int(rng.integers(0, src.width - side + 1))
            y = int(rng.integers(int(region * band), max(int(region * band) + 1, int((region + 1) * band) - side + 1)))
            crop = src.crop((x, y, x + side, y + side))
            caption = f"the {REGIONS[region]} of the {name} photo, mostly {colour_word(np.asarray(crop))}"
            buf = io.BytesIO()
            crop.save(buf, "JPEG", quality=90)
            samples.append((f"{k:02d}{i:04d}", buf.getvalue(), caption))
    order = rng.permutation(len(samples))
    n_test = int(len(samples) * test_share)
    splits = {"test": [samples[i] for i in order[:n_test]], "train": [samples[i] for i in order[n_test:]]}
    shards = {}
    for split, items in splits.items():
        shards[split] = []
        per_shard = max(1, (len(items) + 1) // 2)
        for s in range(0, len(items), per_shard):
            path = out / f"{split}-{s // per_shard:03d}.tar"
            with tarfile.open(path, "w") as tf:
                for key, jpg, caption in items[s:s + per_shard]:
                    for ext, data in (("jpg", jpg), ("txt", caption.encode())):
                        info = tarfile.TarInfo(f"{key}.{ext}")
                        info.size = len(data)
                        tf.addfile(info, io.BytesIO(data))
            shards[split].append(str(path))
    return shards["train"], shards["test"], names


# ---- model ----------------------------------------------------------------------

class ImageEncoder(nn.Module):
    def __init__(self, dim):
        super().__init__()
        chans = [3, 32, 64, 96, 128]
        layers = []
        for a, b in zip(chans, chans[1:]):
            layers += [nn.Conv2d(a, b, 3, padding=1), nn.BatchNorm2d(b), nn.ReLU(inplace=True), nn.MaxPool2d(2)]
        self.net = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(chans[-1], dim))

    def forward(self, x):
        return self.net(x)


class TextEncoder(nn.Module):
    """The mean of the caption's token embeddings (padding left out), then an MLP."""

    def __init__(self, vocab, dim):
        super().__init__()
        self.embed = nn.Embedding(vocab, 128)
        self.mlp = nn.Sequential(nn.Linear(128, 256), nn.ReLU(inplace=True), nn.Linear(256, dim))

    def forward(self, tokens):
        mask = (tokens != 0).unsqueeze(-1).float()
        e = (self.embed(tokens) * mask).sum(1) / mask.sum(1).clamp(min=1)
        return self.mlp(e)


class DualEncoder(nn.Module):
    def __init__(self, vocab, dim=64):
        super().__init__()
        self.image, self.text = ImageEncoder(dim), TextEncoder(vocab, dim)
        self.logit_scale = nn.Parameter(torch.tensor(np.log(1 / 0.07), dtype=torch.float32))

    def forward(self, images, tokens):
        return F.normalize(self.image(images), dim=-1), F.normalize(self.text(tokens), dim=-1)


def clip_loss(img, txt, scale):
    logits = scale.exp().clamp(max=100) * img @ txt.t()
    target = torch.arange(len(img), device=img.device)
    return (F.cross_entropy(logits, target) + F.cross_entropy(logits.t(), target)) / 2


# ---- loading --------------------------------------------------------------------

def to_device(device):
    return [] if torch.device(device).type == "cpu" else [ToDevice(device, non_blocking=True)]


def train_loader(path, res, batch_size, workers, device, seed, ctx):
    image = [RandomResizedCropRGBImageDecoder((res, res), scale=(0.5, 1.0)), RandomHorizontalFlip(), ToTensor(),
             *to_device(device), ToTorchImage(), NormalizeImage(MEAN, STD, np.float32)]
    return Loader(path, batch_size=batch_size, num_workers=workers, order=OrderOption.RANDOM, seed=seed,
                  drop_last=True, pipelines={"image": image,
                                             "caption": [TokenDecoder(ctx), ToTensor(), *to_device(device)]})


def eval_loader(path, res, workers, device, ctx):
    image = [CenterCropRGBImageDecoder((res, res), ratio=1.0), ToTensor(), *to_device(device), ToTorchImage(),
             NormalizeImage(MEAN, STD, np.float32)]
    return Loader(path, batch_size=64, num_workers=workers, order=OrderOption.SEQUENTIAL, drop_last=False,
                  pipelines={"image": image, "caption": [TokenDecoder(ctx), ToTensor(), *to_device(device)]})


@torch.no_grad()
def retrieval(model, loader):
    """Image-to-text top-1 accuracy over the distinct captions of loader's
    samples, and its chance level."""
    model.eval()
    imgs, toks = [], []
    for image, tokens in loader:
        imgs.append(F.normalize(model.image(image.float()), dim=-1))
        toks.append(tokens)
    imgs, toks = torch.cat(imgs), torch.cat(toks)
    candidates, own = torch.unique(toks, dim=0, return_inverse=True)
    txt = F.normalize(model.text(candidates), dim=-1)
    hit = (imgs @ txt.t()).argmax(1) == own
    model.train()
    return hit.float().mean().item(), 1 / len(candidates)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out-dir", default="./clip", help="where the shards and .beton files go")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--photos", type=int, default=8, help="source photographs")
    p.add_argument("--per-photo", type=int, default=60, help="crops of each")
    p.add_argument("--res", type=int, default=64)
    p.add_argument("--context-length", type=int, default=32)
    p.add_argument("--epochs", type=int, default=15)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--num-workers", type=int, default=-1)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    import open_clip
    torch.manual_seed(a.seed)
    out = Path(a.out_dir)
    out.mkdir(parents=True, exist_ok=True)

    t0 = time.perf_counter()
    train_shards, test_shards, names = make_shards(out, a.photos, a.per_photo, 0.2, a.seed)
    tokenizer = open_clip.get_tokenizer("ViT-B-32")
    fields = lambda: {"image": RGBImageField(write_mode="jpg", max_resolution=2 * a.res),  # noqa: E731
                      "caption": TextField(tokenizer)}
    train = DatasetWriter(str(out / "train-{:03d}.beton"), fields(), progress=False).from_webdataset(
        train_shards, output_shards="input")
    test = DatasetWriter(str(out / "test.beton"), fields(), progress=False).from_webdataset(test_shards)
    print(f"{len(names)} photos ({', '.join(names)}): {train.samples} training and {test.samples} held-out crops "
          f"in {len(train.files)} + 1 .beton files, {time.perf_counter() - t0:.1f} s", flush=True)

    device = torch.device(a.device)
    model = DualEncoder(tokenizer.vocab_size).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=1e-4)
    loader = train_loader(train.files, a.res, a.batch_size, a.num_workers, device, a.seed, a.context_length)
    held_out = eval_loader(test.files[0], a.res, a.num_workers, device, a.context_length)
    before, chance = retrieval(model, held_out)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, a.lr, total_steps=a.epochs * len(loader), pct_start=0.2)
    history = []
    for epoch in range(a.epochs):
        t = time.perf_counter()
        losses = []
        for images, tokens in loader:
            img, txt = model(images.float(), tokens)
            loss = clip_loss(img, txt, model.logit_scale)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            losses.append(loss.item())
        acc, _ = retrieval(model, held_out)
        history.append({"epoch": epoch, "loss": float(np.mean(losses)), "retrieval": acc})
        print(f"epoch {epoch}: loss {np.mean(losses):.3f}, held-out image-to-text top-1 {acc:.3f} "
              f"(chance {chance:.3f}), {time.perf_counter() - t:.1f} s", flush=True)
    after = history[-1]["retrieval"] if history else before
    print(f"image-to-text top-1 on {test.samples} held-out crops: {before:.3f} -> {after:.3f} (chance {chance:.3f})")
    print("RESULT " + json.dumps({"retrieval_before": before, "retrieval_after": after, "chance": chance,
                                  "history": history, "train_samples": train.samples, "test_samples": test.samples,
                                  "device": str(device)}))


if __name__ == "__main__":
    main()
