#!/usr/bin/env python3
"""Fashion-MNIST with ffcv_go: write .beton files, train a small CNN on the CPU.

    PYTHONPATH=python python examples/train_fashion_mnist.py            # full: 60k/10k
    PYTHONPATH=python python examples/train_fashion_mnist.py --limit 2000

Reads the IDX files (gzipped or not) from --data (default: Debian's
dataset-fashion-mnist, /usr/share/datasets/fashion-mnist), writes
train.beton / test.beton into --out-dir with the 28x28 grayscale images as an
RGBImageField(write_mode='raw') (ffcv_go turns grayscale into RGB) and the
label as an IntField, then trains with ffcv_go.Loader in RANDOM order and
evaluates on the test file. The last line printed is ``accuracy: <float>``.
"""
import argparse
import gzip
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import ffcv_go
from ffcv_go.fields import RGBImageField, IntField
from ffcv_go.fields.decoders import SimpleRGBImageDecoder, IntDecoder
from ffcv_go.loader import OrderOption
from ffcv_go.transforms import ToTensor, ToTorchImage, NormalizeImage, Squeeze

DEFAULT_DATA = "/usr/share/datasets/fashion-mnist"
# Fashion-MNIST pixel statistics (0-255 scale), the same for the three channels.
MEAN, STD = 0.2860 * 255, 0.3530 * 255


def read_idx(path):
    """An IDX file (optionally .gz) as a numpy array of its declared shape."""
    path = Path(path)
    if not path.exists() and Path(str(path) + ".gz").exists():
        path = Path(str(path) + ".gz")
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        data = f.read()
    zero, dtype_code, ndim = data[0] << 8 | data[1], data[2], data[3]
    if zero != 0 or dtype_code != 0x08:
        raise ValueError(f"{path}: not an unsigned-byte IDX file")
    shape = tuple(int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim))
    arr = np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim)
    if arr.size != int(np.prod(shape)):
        raise ValueError(f"{path}: {arr.size} values for shape {shape}")
    return arr.reshape(shape)


def load_split(data_dir, split):
    prefix = "train" if split == "train" else "t10k"
    images = read_idx(Path(data_dir) / f"{prefix}-images-idx3-ubyte")
    labels = read_idx(Path(data_dir) / f"{prefix}-labels-idx1-ubyte")
    assert images.shape[0] == labels.shape[0]
    return images, labels


class ArrayDataset:
    """Indexed dataset of (28x28 uint8 image, int label)."""

    def __init__(self, images, labels):
        self.images, self.labels = images, labels

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.images[i], int(self.labels[i])


def write_beton(path, images, labels):
    writer = ffcv_go.DatasetWriter(str(path), {
        "image": RGBImageField(write_mode="raw"),
        "label": IntField(),
    }, progress=False)
    writer.from_indexed_dataset(ArrayDataset(images, labels))


def make_loader(path, batch_size, train, num_workers, seed):
    pipelines = {
        "image": [SimpleRGBImageDecoder(), ToTensor(), ToTorchImage(),
                  NormalizeImage(np.array([MEAN] * 3), np.array([STD] * 3), np.float32)],
        "label": [IntDecoder(), ToTensor(), Squeeze()],
    }
    return ffcv_go.Loader(str(path), batch_size=batch_size, num_workers=num_workers,
                          order=OrderOption.RANDOM if train else OrderOption.SEQUENTIAL,
                          seed=seed, pipelines=pipelines, drop_last=train)


class SmallCNN(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, 3, padding=1)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1)
        self.fc1 = nn.Linear(64 * 7 * 7, 128)
        self.fc2 = nn.Linear(128, num_classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.relu(self.fc1(x.flatten(1)))
        return self.fc2(x)


def evaluate(model, loader):
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for images, labels in loader:
            correct += (model(images).argmax(1) == labels).sum().item()
            total += labels.numel()
    return correct / max(total, 1), total


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default=DEFAULT_DATA, help="directory with the Fashion-MNIST IDX files")
    p.add_argument("--out-dir", default=None, help="where to write the .beton files (default: a temp dir)")
    p.add_argument("--limit", type=int, default=0, help="use only the first N train (and test) samples")
    p.add_argument("--test-limit", type=int, default=None, help="use only the first N test samples "
                   "(default: --limit)")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--num-workers", type=int, default=-1, help="loader threads (< 1: every CPU)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)

    torch.manual_seed(args.seed)
    tmp = None
    if args.out_dir is None:
        tmp = tempfile.TemporaryDirectory(prefix="fmnist-ffcv-")
        out_dir = Path(tmp.name)
    else:
        out_dir = Path(args.out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)

    t0 = time.time()
    paths = {}
    for split in ("train", "test"):
        images, labels = load_split(args.data, split)
        limit = args.limit if split == "train" or args.test_limit is None else args.test_limit
        if limit > 0:
            images, labels = images[:limit], labels[:limit]
        paths[split] = out_dir / f"fashion_mnist_{split}.beton"
        write_beton(paths[split], images, labels)
        print(f"wrote {paths[split]}: {len(labels)} samples")
    print(f"write time: {time.time() - t0:.1f}s", flush=True)

    train_loader = make_loader(paths["train"], args.batch_size, True, args.num_workers, args.seed)
    test_loader = make_loader(paths["test"], args.batch_size, False, args.num_workers, args.seed)

    model = SmallCNN().to(memory_format=torch.channels_last)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    steps = args.epochs * len(train_loader)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, total_steps=max(steps, 1), pct_start=0.15)

    t0 = time.time()
    for epoch in range(args.epochs):
        model.train()
        seen, loss_sum = 0, 0.0
        for images, labels in train_loader:  # each iter() is the next epoch of the loader
            loss = F.cross_entropy(model(images), labels)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            seen += labels.numel()
            loss_sum += loss.item() * labels.numel()
        acc, n = evaluate(model, test_loader)
        print(f"epoch {epoch}: train loss {loss_sum / max(seen, 1):.4f} over {seen} samples, "
              f"test accuracy {acc:.4f} over {n} samples ({time.time() - t0:.1f}s)", flush=True)
    train_loader.close()
    test_loader.close()
    if tmp is not None:
        tmp.cleanup()
    print(f"accuracy: {acc:.4f}")
    return acc


if __name__ == "__main__":
    main()
    sys.exit(0)
