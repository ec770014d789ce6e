#!/usr/bin/env python3
"""Learns a camera's motion from video clips: a small 3D CNN on clips loaded
by ffcv_go's clip decoders.

The clips are a camera moving over Debian's wallpapers (bench/motion_clips.py):
pan left, right, up or down, zoom in or out -- six classes that no single
frame shows, only the frames in order. They are encoded to mp4 (H.264) with
PyAV, written to a .beton (VideoField: every frame a JPEG with restart
markers), and loaded with

- train: RandomClipDecoder(8 frames, stride 2, RandomResizedCrop 24x24 at
  scale 0.5-1) + RandomBrightness + NormalizeImage + ToTorchVideo. One crop
  and one brightness per clip, applied to every frame. No horizontal flip:
  it turns a pan left into a pan right.
- validation: ClipDecoder (the centre clip) with a centre crop.

    python examples/train_video.py                              # CPU, 10-30 s on 2 cores
    python examples/train_video.py --device cuda --epochs 20    # unchanged on a GPU

Prints each epoch's loss and validation accuracy; the last line is
``RESULT {json}`` (chance is 1/6).
"""
import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np
import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "bench"))
import motion_clips  # noqa: E402

from ffcv_go import DatasetWriter, Loader  # noqa: E402
from ffcv_go.fields import IntField, VideoField  # noqa: E402
from ffcv_go.fields.decoders import (CenterCropRGBImageDecoder, ClipDecoder, IntDecoder,  # noqa: E402
                                     RandomClipDecoder, RandomResizedCropRGBImageDecoder)
from ffcv_go.loader import OrderOption  # noqa: E402
from ffcv_go.transforms import (NormalizeImage, RandomBrightness, Squeeze, ToDevice, ToTensor,  # noqa: E402
                                ToTorchVideo)

MEAN, STD = np.array([120.0, 125.0, 130.0]), np.array([60.0, 60.0, 60.0])


def small_3d_cnn(classes):
    """Three 3x3x3 convolutions at full resolution first (a pan moves a
    few pixels a frame), pooled between: about 9 M multiply-adds per clip
    of 8 frames at 24x24, so a CPU trains it in seconds."""
    def conv(cin, cout):
        return [nn.Conv3d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm3d(cout), nn.ReLU(inplace=True)]
    return nn.Sequential(*conv(3, 8), nn.MaxPool3d((1, 2, 2)), *conv(8, 16), nn.MaxPool3d(2), *conv(16, 32),
                         nn.AdaptiveAvgPool3d(1), nn.Flatten(), nn.Linear(32, classes))


def write(path, items):
    DatasetWriter(path, {"video": VideoField(jpeg_quality=90), "label": IntField()},
                  progress=False).from_indexed_dataset(items)


def loaders(train, val, args, device):
    to_dev = [ToDevice(device, non_blocking=True)] if device.type != "cpu" else []
    label = [IntDecoder(), ToTensor(), Squeeze(), *to_dev]
    crop = RandomResizedCropRGBImageDecoder((args.crop, args.crop), scale=(0.5, 1.0))
    norm = NormalizeImage(MEAN, STD, np.float32)
    train_l = Loader(train, batch_size=args.batch_size, num_workers=args.workers, order=OrderOption.RANDOM,
                     seed=args.seed, drop_last=True, pipelines={
                         "video": [RandomClipDecoder(args.clip, crop, stride=args.stride),
                                   RandomBrightness(0.3), norm, ToTensor(), *to_dev, ToTorchVideo()],
                         "label": label})
    centre = CenterCropRGBImageDecoder((args.crop, args.crop), ratio=0.85)
    val_l = Loader(val, batch_size=args.batch_size, num_workers=args.workers, order=OrderOption.SEQUENTIAL,
                   drop_last=False, pipelines={
                       "video": [ClipDecoder(args.clip, geometry=centre, stride=args.stride), norm, ToTensor(),
                                 *to_dev, ToTorchVideo()],
                       "label": label})
    return train_l, val_l


def evaluate(model, loader):
    model.eval()
    right = total = 0
    with torch.no_grad():
        for x, y in loader:
            right += (model(x).argmax(1) == y).sum().item()
            total += len(y)
    model.train()
    return right / max(total, 1)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=None, help="where the clips and .beton files go (default: a temporary folder)")
    ap.add_argument("--train-clips", type=int, default=240)
    ap.add_argument("--val-clips", type=int, default=96)
    ap.add_argument("--frames", type=int, default=16, help="frames per mp4")
    ap.add_argument("--size", type=int, nargs=2, default=[64, 48], metavar=("W", "H"))
    ap.add_argument("--clip", type=int, default=8, help="frames per loaded clip")
    ap.add_argument("--stride", type=int, default=2)
    ap.add_argument("--crop", type=int, default=24)
    ap.add_argument("--epochs", type=int, default=8)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--lr", type=float, default=5e-3)
    ap.add_argument("--workers", type=int, default=-1)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    tmp = None if args.data else tempfile.TemporaryDirectory()
    root = args.data or tmp.name
    t0 = time.perf_counter()
    paths = motion_clips.photos(32)
    if not paths:
        raise SystemExit("no photos: install Debian's mate-backgrounds or lomiri-wallpapers-*")
    # Separate photos for validation: the model must learn the motion, not the scenes.
    sources = motion_clips.load_sources(paths)
    held = max(1, len(sources) // 4)
    n = args.train_clips + args.val_clips
    train_items = motion_clips.make_clips(os.path.join(root, "train"), args.train_clips, args.frames,
                                          tuple(args.size), seed=args.seed, sources=sources[held:])
    val_items = motion_clips.make_clips(os.path.join(root, "val"), args.val_clips, args.frames, tuple(args.size),
                                        seed=args.seed + 1, sources=sources[:held])
    train, val = os.path.join(root, "train.beton"), os.path.join(root, "val.beton")
    write(train, train_items)
    write(val, val_items)
    print(f"{n} clips ({args.train_clips} train over {len(sources) - held} photos, {args.val_clips} validation "
          f"over {held} others) made and written in {time.perf_counter() - t0:.1f} s", flush=True)

    train_l, val_l = loaders(train, val, args, device)
    model = small_3d_cnn(len(motion_clips.MOTIONS)).to(device)
    steps = args.epochs * len(train_l)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, total_steps=steps, pct_start=0.2)
    loss_fn = nn.CrossEntropyLoss()
    t1 = time.perf_counter()
    history = []
    for epoch in range(args.epochs):
        total = count = 0
        for x, y in train_l:
            loss = loss_fn(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            total += loss.item() * len(y)
            count += len(y)
        acc = evaluate(model, val_l)
        history.append({"epoch": epoch, "loss": total / count, "val_accuracy": acc})
        print(f"epoch {epoch}: loss {total / count:.3f}, validation accuracy {acc:.3f}", flush=True)
    result = {"val_accuracy": history[-1]["val_accuracy"], "chance": 1 / len(motion_clips.MOTIONS),
              "epochs": args.epochs, "train_clips": args.train_clips, "val_clips": args.val_clips,
              "train_seconds": time.perf_counter() - t1, "history": history, "device": str(device)}
    print("RESULT " + json.dumps(result))
    if tmp is not None:
        train_l.close()
        val_l.close()
        tmp.cleanup()


if __name__ == "__main__":
    main()
