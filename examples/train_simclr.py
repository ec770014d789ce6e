#!/usr/bin/env python3
"""SimCLR on an ImageFolder with two augmented views of every image.

The views are two outputs of the one image field (FFCV-SSL's
``custom_field_mapper``), each with SimCLR's augmentation stack: random
resized crop, flip, colour jitter (with hue) at p=0.8, grayscale at p=0.2,
Gaussian blur at p=0.5, normalisation. ffcv_go decodes each JPEG's entropy
code once for both views; each view does its own crop, resize and ops.

    python examples/make_tiny_imagefolder.py /tmp/tiny --classes 4 --per-class 32
    PYTHONPATH=python python examples/train_simclr.py --data /tmp/tiny --out-dir /tmp/simclr

It trains an encoder (ResNet-18, or ``--arch small`` for quick CPU runs)
with the NT-Xent loss and reports, per epoch, the loss and the view-retrieval
accuracy (the share of views whose nearest neighbour in the batch is the
other view of the same image; chance is 1 / (2B - 1)), and that accuracy on
an epoch of fresh views before and after training. On a GPU (``--device cuda``) the
batches go to the device in the loader (ToDevice) and are normalised there.
Last line: ``RESULT {json}``.
"""
import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
import torchvision

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ffcv_go import DatasetWriter, Loader  # noqa: E402
from ffcv_go.fields import IntField, RGBImageField  # noqa: E402
from ffcv_go.fields.decoders import IntDecoder  # noqa: E402
from ffcv_go.loader import OrderOption  # noqa: E402
from ffcv_go.transforms import (GaussianBlur, NormalizeImage, RandomColorJitter, RandomGrayscale,  # noqa: E402
                                RandomHorizontalFlip, RandomResizedCrop, Squeeze, ToDevice, ToTensor,
                                ToTorchImage)

MEAN = np.array([0.485, 0.456, 0.406]) * 255
STD = np.array([0.229, 0.224, 0.225]) * 255


def to_device(device):
    """ToDevice for an accelerator; nothing on the CPU, where NormalizeImage then
    runs inside the Go decoding program."""
    return [] if torch.device(device).type == "cpu" else [ToDevice(device, non_blocking=True)]


def simclr_view(res, device):
    """SimCLR's augmentation stack (Chen et al. 2020, appendix A) at res px."""
    blur = max(3, int(0.1 * res) // 2 * 2 + 1)  # 10% of the side, odd
    return [RandomResizedCrop((res, res), scale=(0.08, 1.0)), RandomHorizontalFlip(),
            RandomColorJitter(0.8, 0.4, 0.4, 0.4, 0.1), RandomGrayscale(0.2),
            GaussianBlur(0.5, kernel_size=blur, sigma=(0.1, 2.0)),
            ToTensor(), *to_device(device), ToTorchImage(), NormalizeImage(MEAN, STD, np.float32)]


def simclr_loader(path, batch_size, res, device, workers=-1, seed=0, views=2):
    """A loader yielding (label, view_0, ..., view_{views-1}) per batch: the
    file's fields first, then the views in the mapper's order."""
    names = [f"view_{i}" for i in range(views)]
    pipelines = {"image": None, "label": [IntDecoder(), ToTensor(), Squeeze(), *to_device(device)]}
    pipelines.update({n: simclr_view(res, device) for n in names})
    return Loader(path, batch_size=batch_size, num_workers=workers, order=OrderOption.RANDOM, seed=seed,
                  pipelines=pipelines, custom_field_mapper={n: "image" for n in names}, drop_last=True)


def small_cnn():
    """Four conv blocks: learns in seconds on the CPU at 32-64 px."""
    layers, c = [], 3
    for k in (32, 64, 128, 256):
        layers += [torch.nn.Conv2d(c, k, 3, padding=1, bias=False), torch.nn.BatchNorm2d(k), torch.nn.ReLU(),
                   torch.nn.MaxPool2d(2)]
        c = k
    return torch.nn.Sequential(*layers, torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(256, 512))


class Encoder(torch.nn.Module):
    """A trunk (ResNet-18, or small_cnn) and SimCLR's 2-layer projection head."""

    def __init__(self, arch="resnet18", dim=64):
        super().__init__()
        if arch == "resnet18":
            trunk = torchvision.models.resnet18(weights=None)
            trunk.fc = torch.nn.Identity()
        else:
            trunk = small_cnn()
        self.trunk = trunk
        self.head = torch.nn.Sequential(torch.nn.Linear(512, 256), torch.nn.ReLU(), torch.nn.Linear(256, dim))

    def forward(self, x):
        return self.head(self.trunk(x))


def nt_xent(z, temperature=0.2):
    """SimCLR's loss over 2B embeddings (view 0 of every image, then view 1),
    and the share of them whose nearest neighbour is their positive."""
    z = F.normalize(z, dim=1)
    n = z.shape[0] // 2
    sim = z @ z.t() / temperature
    sim.fill_diagonal_(float("-inf"))
    positive = torch.cat([torch.arange(n, 2 * n), torch.arange(0, n)]).to(z.device)
    return F.cross_entropy(sim, positive), (sim.argmax(1) == positive).float().mean().item()


@torch.no_grad()
def retrieval(model, loader):
    """The share of views whose nearest neighbour in their batch is the other
    view of their image, over one epoch of fresh views, without training."""
    hits = [nt_xent(model(torch.cat([v0, v1])))[1] for _, v0, v1 in loader]
    return float(np.mean(hits))


def write_beton(data, out, res, workers):
    """The ImageFolder as out (JPEG at twice the training resolution)."""
    ds = torchvision.datasets.ImageFolder(str(data))
    writer = DatasetWriter(str(out), {"image": RGBImageField(write_mode="jpg", max_resolution=2 * res),
                                      "label": IntField()}, num_workers=workers)
    writer.from_indexed_dataset(ds)
    return len(ds), len(ds.classes)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True, help="ImageFolder root")
    p.add_argument("--out-dir", default="./simclr", help="where train.beton is written")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--arch", default="resnet18", choices=["resnet18", "small"])
    p.add_argument("--res", type=int, default=64)
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--num-workers", type=int, default=-1)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    torch.manual_seed(args.seed)

    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    beton = out / "train.beton"
    n, classes = write_beton(args.data, beton, args.res, args.num_workers)
    print(f"{n} images in {classes} classes -> {beton}")

    device = torch.device(args.device)
    model = Encoder(args.arch).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-4)
    loader = simclr_loader(beton, args.batch_size, args.res, args.device, args.num_workers, args.seed)
    before = retrieval(model, loader)
    history = []
    for epoch in range(args.epochs):
        t0, losses, hits = time.perf_counter(), [], []
        for _, v0, v1 in loader:
            loss, hit = nt_xent(model(torch.cat([v0, v1])))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            losses.append(loss.item())
            hits.append(hit)
        history.append({"epoch": epoch, "loss": float(np.mean(losses)), "retrieval": float(np.mean(hits)),
                        "seconds": round(time.perf_counter() - t0, 2)})
        print(json.dumps(history[-1]))
    after = retrieval(model, loader)
    chance = 1 / (2 * args.batch_size - 1)
    print("RESULT " + json.dumps({"images": n, "classes": classes, "history": history, "retrieval_chance": chance,
                                  "retrieval_before": before, "retrieval_after": after}))


if __name__ == "__main__":
    main()
