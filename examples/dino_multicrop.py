#!/usr/bin/env python3
"""DINO's multi-crop: 2 global views at 224 px (scale 0.4-1) and N local views
at 96 px (scale 0.05-0.4) of every image, each with its own augmentations,
from one loader.

Every view is an output of the one image field (``custom_field_mapper``);
ffcv_go entropy-decodes each JPEG once for all of them and gives each view
its own DCT-scaled region decode, crop, resize and operations. The stacks
follow DINO (Caron et al. 2021): flip, colour jitter (0.4, 0.4, 0.2, 0.1) at
p=0.8, grayscale at p=0.2, then Gaussian blur at p=1.0 on the first global
view, blur at p=0.1 and solarization at p=0.2 on the second, blur at p=0.5 on
the locals.

    python examples/make_tiny_imagefolder.py /tmp/tiny --classes 4 --per-class 32
    PYTHONPATH=python python examples/dino_multicrop.py --data /tmp/tiny --out-dir /tmp/dino

It trains a small DINO (student and EMA teacher, centred and sharpened
teacher outputs, cross-entropy from each teacher global view to every other
student view) for --steps steps and prints the loss; on a GPU the views go
to the device in the loader. Last line: ``RESULT {json}``.
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

from train_simclr import MEAN, STD, to_device, write_beton  # noqa: E402

from ffcv_go import Loader  # noqa: E402
from ffcv_go.loader import OrderOption  # noqa: E402
from ffcv_go.transforms import (GaussianBlur, NormalizeImage, RandomColorJitter, RandomGrayscale,  # noqa: E402
                                RandomHorizontalFlip, RandomResizedCrop, RandomSolarization, ToTensor,
                                ToTorchImage)


def _view(res, scale, blur_p, solarize_p, device):
    ops = [RandomResizedCrop((res, res), scale=scale), RandomHorizontalFlip(),
           RandomColorJitter(0.8, 0.4, 0.4, 0.2, 0.1), RandomGrayscale(0.2)]
    if blur_p > 0:
        ops.append(GaussianBlur(blur_p, kernel_size=max(3, int(0.1 * res) // 2 * 2 + 1), sigma=(0.1, 2.0)))
    if solarize_p > 0:
        ops.append(RandomSolarization(solarize_p, threshold=128))
    return ops + [ToTensor(), *to_device(device), ToTorchImage(), NormalizeImage(MEAN, STD, np.float32)]


def dino_pipelines(device="cpu", global_res=224, local_res=96, n_local=8,
                   global_scale=(0.4, 1.0), local_scale=(0.05, 0.4)):
    """DINO's views as loader pipelines, and the custom_field_mapper naming them."""
    views = {"global_0": _view(global_res, global_scale, 1.0, 0.0, device),
             "global_1": _view(global_res, global_scale, 0.1, 0.2, device)}
    for i in range(n_local):
        views[f"local_{i}"] = _view(local_res, local_scale, 0.5, 0.0, device)
    return views, {name: "image" for name in views}


def dino_loader(path, batch_size, device="cpu", workers=-1, seed=0, **sizes):
    """A loader yielding (global_0, global_1, local_0, ..., local_{n-1}) per batch."""
    views, mapper = dino_pipelines(device, **sizes)
    return Loader(path, batch_size=batch_size, num_workers=workers, order=OrderOption.RANDOM, seed=seed,
                  pipelines={"image": None, "label": None, **views}, custom_field_mapper=mapper)


class Net(torch.nn.Module):
    """ResNet-18 trunk and a DINO head (MLP, then a weight-normalised layer)."""

    def __init__(self, out=256):
        super().__init__()
        self.trunk = torchvision.models.resnet18(weights=None)
        self.trunk.fc = torch.nn.Identity()
        self.mlp = torch.nn.Sequential(torch.nn.Linear(512, 256), torch.nn.GELU(), torch.nn.Linear(256, 64))
        self.last = torch.nn.utils.parametrizations.weight_norm(torch.nn.Linear(64, out, bias=False))

    def forward(self, x):
        return self.last(F.normalize(self.mlp(self.trunk(x)), dim=-1))


def dino_loss(student, teacher, center, n_global, t_student=0.1, t_teacher=0.04):
    """Cross-entropy from each teacher global view to every other student view."""
    s = [F.log_softmax(x / t_student, dim=-1) for x in student]
    t = [F.softmax((x - center) / t_teacher, dim=-1).detach() for x in teacher]
    total, n = 0.0, 0
    for i, ti in enumerate(t):
        for j, sj in enumerate(s):
            if i == j:
                continue
            total = total + torch.sum(-ti * sj, dim=-1).mean()
            n += 1
    return total / n


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True, help="ImageFolder root")
    p.add_argument("--out-dir", default="./dino")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--global-res", type=int, default=224)
    p.add_argument("--local-res", type=int, default=96)
    p.add_argument("--local-views", type=int, default=8)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--num-workers", type=int, default=-1)
    args = p.parse_args(argv)
    torch.manual_seed(0)

    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    beton = out / "train.beton"
    n, _ = write_beton(args.data, beton, args.global_res, args.num_workers)
    device = torch.device(args.device)
    student, teacher = Net().to(device), Net().to(device)
    teacher.load_state_dict(student.state_dict())
    for q in teacher.parameters():
        q.requires_grad_(False)
    opt = torch.optim.AdamW(student.parameters(), lr=1e-3, weight_decay=0.04)
    center = torch.zeros(1, 256, device=device)
    loader = dino_loader(beton, args.batch_size, args.device, args.num_workers,
                         global_res=args.global_res, local_res=args.local_res, n_local=args.local_views)
    shapes, losses, step, t0 = None, [], 0, time.perf_counter()
    while step < args.steps:
        for views in loader:
            shapes = shapes or [list(v.shape) for v in views]
            globals_, locals_ = views[:2], views[2:]
            student_out = [student(v) for v in (*globals_, *locals_)]
            with torch.no_grad():
                teacher_out = [teacher(v) for v in globals_]
            loss = dino_loss(student_out, teacher_out, center, 2)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            with torch.no_grad():
                for ps, pt in zip(student.parameters(), teacher.parameters()):
                    pt.mul_(0.99).add_(ps.detach(), alpha=0.01)
                center.mul_(0.9).add_(torch.cat(teacher_out).mean(0, keepdim=True), alpha=0.1)
            losses.append(loss.item())
            print(json.dumps({"step": step, "loss": round(losses[-1], 4)}))
            step += 1
            if step >= args.steps:
                break
    print("RESULT " + json.dumps({"images": n, "view_shapes": shapes, "steps": step, "first_loss": losses[0],
                                  "last_loss": float(np.mean(losses[-3:])),
                                  "seconds": round(time.perf_counter() - t0, 2)}))


if __name__ == "__main__":
    main()
