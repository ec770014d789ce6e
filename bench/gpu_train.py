#!/usr/bin/env python3
"""Training throughput on one GPU, fed three ways: ResNet-50 from random
weights, AMP (float16 autocast + GradScaler), channels_last, SGD.

  ffcv_go     Loader: RandomResizedCrop + flip in Go, ToDevice(non_blocking=True),
              ToTorchImage and NormalizeImage(float16) on the GPU
  synthetic   one random batch already on the GPU: the model's own limit
  dataloader  torch DataLoader over the same JPEGs as an ImageFolder,
              torchvision RandomResizedCrop + flip + ToTensor + Normalize in
              --workers processes, pin_memory, non_blocking copy

Each variant runs --warmup steps, then --steps timed steps; img/s is timed
images over wall time, with the GPU synchronised at both ends. Prints a
table (img/s, ms per step, ms per step spent waiting for data, share of
the synthetic rate) with the machine and date, and ``RESULT {json}`` last.

    python bench/gpu_train.py --data build/gpu-data/photos.beton
    python bench/gpu_train.py --data ... --device cpu --steps 3 --arch resnet18   # smoke run, no GPU

--data is a .beton with fields image (JPEG) and label (`make gpu-bundle`
writes one). The DataLoader reads an ImageFolder: --folder, or else the
.beton's JPEGs written out to a temporary folder. Without torchvision the
model is a ResNet built here (same layout, no weights to download) and the
dataloader variant is left out.
"""
import argparse
import datetime
import importlib.util
import json
import os
import platform
import shutil
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn as nn

MEAN = np.array([0.485, 0.456, 0.406]) * 255
STD = np.array([0.229, 0.224, 0.225]) * 255
VARIANTS = ("ffcv_go", "synthetic", "dataloader")


# ---- the model ---------------------------------------------------------------------

class _Block(nn.Module):
    def __init__(self, cin, width, stride, bottleneck):
        super().__init__()
        cout = width * 4 if bottleneck else width
        if bottleneck:
            layers = [nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(inplace=True),
                      nn.Conv2d(width, width, 3, stride, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(inplace=True),
                      nn.Conv2d(width, cout, 1, bias=False), nn.BatchNorm2d(cout)]
        else:
            layers = [nn.Conv2d(cin, width, 3, stride, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(inplace=True),
                      nn.Conv2d(width, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout)]
        self.body = nn.Sequential(*layers)
        self.short = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                      if stride != 1 or cin != cout else nn.Identity())
        self.out_channels = cout

    def forward(self, x):
        return torch.relu(self.body(x) + self.short(x))


_DEPTHS = {"resnet18": ([2, 2, 2, 2], False), "resnet34": ([3, 4, 6, 3], False),
           "resnet50": ([3, 4, 6, 3], True), "resnet101": ([3, 4, 23, 3], True)}


def builtin_resnet(arch, num_classes):
    """torchvision's ResNet layout (v1.5: stride in the 3x3 conv), for machines without torchvision."""
    depths, bottleneck = _DEPTHS[arch]
    layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for stage, n in enumerate(depths):
        for i in range(n):
            block = _Block(cin, 64 << stage, 2 if i == 0 and stage > 0 else 1, bottleneck)
            layers.append(block)
            cin = block.out_channels
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, num_classes)]
    return nn.Sequential(*layers)


def build_model(arch, num_classes):
    try:
        import torchvision
    except ImportError:
        if arch not in _DEPTHS:
            raise SystemExit(f"gpu_train: --arch {arch} needs torchvision (built in: {', '.join(_DEPTHS)})")
        return builtin_resnet(arch, num_classes), "built-in (no torchvision)"
    return getattr(torchvision.models, arch)(weights=None, num_classes=num_classes), \
        f"torchvision {torchvision.__version__}"


def make_step(model, device):
    cuda = device.type == "cuda"
    params_bn = [p for n, p in model.named_parameters() if p.ndim <= 1]
    params_w = [p for n, p in model.named_parameters() if p.ndim > 1]
    opt = torch.optim.SGD([{"params": params_w, "weight_decay": 5e-5}, {"params": params_bn, "weight_decay": 0}],
                          lr=0.1, momentum=0.9)
    scaler = torch.amp.GradScaler("cuda") if cuda else None
    loss_fn = nn.CrossEntropyLoss(label_smoothing=0.1)
    amp_dtype = torch.float16 if cuda else torch.bfloat16

    def step(images, labels):
        with torch.autocast(device.type, dtype=amp_dtype):
            loss = loss_fn(model(images), labels)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    return step


# ---- the feeds ---------------------------------------------------------------------

def ffcv_go_batches(args, device, count):
    from ffcv_go import Loader
    from ffcv_go.fields.decoders import IntDecoder, RandomResizedCropRGBImageDecoder
    from ffcv_go.loader import OrderOption
    from ffcv_go.reader import Reader
    from ffcv_go.transforms import (NormalizeImage, RandomHorizontalFlip, Squeeze, ToDevice, ToTensor,
                                    ToTorchImage)
    with Reader(args.data) as r:
        n = r.num_samples
    # One long epoch over the images repeated (in a random order): no epoch
    # boundaries inside the timed steps, as with the DataLoader's sampler.
    indices = np.resize(np.arange(n), count * args.batch_size)
    half = np.float16 if device.type == "cuda" else np.float32
    loader = Loader(args.data, batch_size=args.batch_size, num_workers=args.workers, order=OrderOption.RANDOM,
                    seed=0, indices=indices, drop_last=True, batches_ahead=3,
                    pipelines={"image": [RandomResizedCropRGBImageDecoder((args.res, args.res)),
                                         RandomHorizontalFlip(), ToTensor(), ToDevice(device, non_blocking=True),
                                         ToTorchImage(), NormalizeImage(MEAN, STD, half)],
                               "label": [IntDecoder(), ToTensor(), Squeeze(), ToDevice(device, non_blocking=True)]})
    try:
        yield from loader
    finally:
        loader.close()


def synthetic_batches(args, device, count):
    dtype = torch.float16 if device.type == "cuda" else torch.float32
    images = torch.randn(args.batch_size, 3, args.res, args.res, device=device).to(
        dtype=dtype, memory_format=torch.channels_last)
    labels = torch.randint(0, 10, (args.batch_size,), device=device)
    for _ in range(count):
        yield images, labels


def dataloader_batches(args, device, count):
    import torchvision.transforms as T
    from torch.utils.data import DataLoader, RandomSampler
    from torchvision.datasets import ImageFolder
    tf = T.Compose([T.RandomResizedCrop(args.res, antialias=True), T.RandomHorizontalFlip(), T.ToTensor(),
                    T.Normalize((MEAN / 255).tolist(), (STD / 255).tolist())])
    ds = ImageFolder(args.folder, transform=tf)
    sampler = RandomSampler(ds, replacement=True, num_samples=count * args.batch_size,
                            generator=torch.Generator().manual_seed(0))
    # forkserver: workers start from a fresh process, not a fork of this one
    # (which holds CUDA and ffcv_go's Go runtime).
    loader = DataLoader(ds, batch_size=args.batch_size, sampler=sampler, num_workers=args.workers,
                        pin_memory=device.type == "cuda", drop_last=True,
                        multiprocessing_context="forkserver" if args.workers > 0 else None)
    for images, labels in loader:
        yield (images.to(device, non_blocking=True).to(memory_format=torch.channels_last),
               labels.to(device, non_blocking=True))


def write_image_folder(beton, root):
    """The .beton's images as an ImageFolder (class_<label>/<i>.jpg); JPEGs byte for byte."""
    from PIL import Image
    from ffcv_go.reader import Reader
    with Reader(beton) as r:
        img_f, lab_f = r.field_names.index("image"), r.field_names.index("label")
        meta = r.metadata
        for i in range(r.num_samples):
            m, label = meta[f"f{img_f}"][i], int(meta[f"f{lab_f}"][i])
            d = os.path.join(root, f"class_{label:04d}")
            os.makedirs(d, exist_ok=True)
            data = bytes(r.read(i, img_f))
            path = os.path.join(d, f"{i:07d}.jpg")
            if data[:2] == b"\xff\xd8":
                with open(path, "wb") as f:
                    f.write(data)
            else:  # stored raw: encode it
                pixels = np.frombuffer(data, np.uint8).reshape(int(m["height"]), int(m["width"]), 3)
                Image.fromarray(pixels).save(path, quality=90)
    return root


# ---- timing ------------------------------------------------------------------------

def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(batches, step, args, device):
    it = iter(batches)
    try:
        for _ in range(args.warmup):
            step(*next(it))
        sync(device)
        waited, t0 = 0.0, time.perf_counter()
        for _ in range(args.steps):
            w = time.perf_counter()
            images, labels = next(it)
            waited += time.perf_counter() - w
            step(images, labels)
        sync(device)
        dt = time.perf_counter() - t0
    finally:
        close = getattr(it, "close", None)
        if close is not None:
            close()
    return {"img_s": args.steps * args.batch_size / dt, "step_ms": dt / args.steps * 1e3,
            "wait_ms": waited / args.steps * 1e3}


def machine(device):
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), cpu)
    except OSError:
        pass
    info = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "host": platform.node(), "cpu": cpu, "cores": len(os.sched_getaffinity(0)),
            "python": platform.python_version(), "torch": torch.__version__}
    try:
        import ffcv_go
        info["ffcv_go"] = ffcv_go.__version__
    except ImportError:
        pass
    if device.type == "cuda":
        p = torch.cuda.get_device_properties(device)
        info.update(gpu=p.name, gpu_memory_gib=round(p.total_memory / 2**30, 1), cuda=torch.version.cuda,
                    cudnn=torch.backends.cudnn.version())
    return info


def report(result):
    m, rows = result["machine"], result["variants"]
    lines = [f"# gpu_train: {result['arch']}, batch {result['batch_size']}, {result['res']} px, "
             f"{result['device']}, {result['workers']} workers",
             "",
             f"{m['date']} on {m.get('gpu', 'CPU')} / {m['cpu']} ({m['cores']} cores), python {m['python']}, "
             f"torch {m['torch']}, ffcv_go {m.get('ffcv_go', '?')}, model {result['model']}",
             "",
             "| feed | img/s | ms/step | ms/step waiting for data | of synthetic |",
             "|---|---:|---:|---:|---:|"]
    synth = rows.get("synthetic", {}).get("img_s")
    for name, r in rows.items():
        if "skipped" in r:
            lines.append(f"| {name} | skipped: {r['skipped']} | | | |")
            continue
        share = f"{r['img_s'] / synth:.2f}" if synth else "-"
        lines.append(f"| {name} | {r['img_s']:.0f} | {r['step_ms']:.1f} | {r['wait_ms']:.1f} | {share} |")
    for a, b in (("ffcv_go", "dataloader"),):
        if "img_s" in rows.get(a, {}) and "img_s" in rows.get(b, {}):
            lines += ["", f"{a} / {b}: {rows[a]['img_s'] / rows[b]['img_s']:.2f}x"]
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--data", required=True, help=".beton with fields image (JPEG) and label")
    p.add_argument("--folder", help="ImageFolder for the dataloader feed (default: the .beton's JPEGs)")
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    p.add_argument("--arch", default="resnet50")
    p.add_argument("--batch-size", type=int, help="default 256 on cuda, 8 on cpu")
    p.add_argument("--res", type=int, help="training resolution; default 224 on cuda, 64 on cpu")
    p.add_argument("--steps", type=int, default=100, help="timed steps per feed")
    p.add_argument("--warmup", type=int, help="untimed steps first; default 20 on cuda, 1 on cpu")
    p.add_argument("--workers", type=int, default=16, help="ffcv_go threads and DataLoader processes")
    p.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated, of: " + ", ".join(VARIANTS))
    p.add_argument("--out", help="also write OUT.json and OUT.md")
    args = p.parse_args(argv)
    cpu = args.device == "cpu"
    args.batch_size = args.batch_size or (8 if cpu else 256)
    args.res = args.res or (64 if cpu else 224)
    args.warmup = args.warmup if args.warmup is not None else (1 if cpu else 20)
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = set(variants) - set(VARIANTS)
    if unknown:
        p.error(f"unknown variants {sorted(unknown)}")
    if not cpu and not torch.cuda.is_available():
        sys.exit(f"gpu_train: no CUDA device (torch {torch.__version__}, CUDA build {torch.version.cuda}); "
                 "for a smoke run on the CPU: --device cpu --steps 3 --arch resnet18")
    if not os.path.isfile(args.data):
        sys.exit(f"gpu_train: no such .beton: {args.data}")

    device = torch.device(args.device)
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = True
    model, model_src = build_model(args.arch, 1000)
    model = model.to(device, memory_format=torch.channels_last).train()
    step = make_step(model, device)
    count = args.warmup + args.steps + 1
    result = {"arch": args.arch, "model": model_src, "device": args.device, "batch_size": args.batch_size,
              "res": args.res, "steps": args.steps, "warmup": args.warmup, "workers": args.workers,
              "machine": machine(device), "variants": {}}
    tmp = None
    try:
        for name in variants:
            if name == "dataloader":
                if importlib.util.find_spec("torchvision") is None:
                    result["variants"][name] = {"skipped": "torchvision is not installed"}
                    continue
                if args.folder is None:
                    tmp = tempfile.mkdtemp(prefix="gpu_train_folder_")
                    args.folder = write_image_folder(args.data, tmp)
                feed = dataloader_batches(args, device, count)
            elif name == "ffcv_go":
                feed = ffcv_go_batches(args, device, count)
            else:
                feed = synthetic_batches(args, device, count)
            print(f"[gpu_train] {name}: {args.warmup} + {args.steps} steps ...", flush=True)
            result["variants"][name] = r = timed(feed, step, args, device)
            print(f"[gpu_train] {name}: {r['img_s']:.0f} img/s", flush=True)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    text = report(result)
    print(text)
    if args.out:
        with open(args.out + ".json", "w") as f:
            json.dump(result, f, indent=1)
        with open(args.out + ".md", "w") as f:
            f.write(text + "\n")
    print("RESULT " + json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
