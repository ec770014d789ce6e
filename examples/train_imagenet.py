#!/usr/bin/env python3
"""ResNet training on an ImageFolder with ffcv_go, after FFCV's ImageNet example.

    # GPU, ImageNet-style layout (root/train/<class>/*.jpg, root/val/<class>/*.jpg):
    PYTHONPATH=python python examples/train_imagenet.py --data /data/imagenet --out-dir /data/betons \\
        --arch resnet50 --epochs 16 --batch-size 512 --min-res 160 --max-res 192 --val-res 256

    # 8 GPUs with DistributedDataParallel (the loaders shard by rank; batch size is per GPU):
    PYTHONPATH=python torchrun --nproc_per_node 8 examples/train_imagenet.py --distributed --data ... \
        --batch-size 128

    # CPU, tiny (a single folder is split 80/20 into train/val):
    python examples/make_tiny_imagefolder.py /tmp/tiny
    PYTHONPATH=python python examples/train_imagenet.py --data /tmp/tiny --device cpu --arch resnet18 \\
        --epochs 1 --min-res 64 --max-res 64 --val-res 64 --batch-size 8

Steps:
1. Writes train.beton / val.beton into --out-dir (skipped when they exist,
   unless --rewrite) with image = RGBImageField(write_mode='jpg',
   max_resolution=--write-max-res) and label = IntField, from
   torchvision.datasets.ImageFolder.
2. Trains with FFCV's ImageNet recipe: train pipeline
   RandomResizedCropRGBImageDecoder((res, res)) -> RandomHorizontalFlip ->
   ToTensor -> ToDevice(device, non_blocking=True) -> ToTorchImage ->
   NormalizeImage(mean*255, std*255, float16 on CUDA with AMP, else float32);
   on the CPU the ToDevice step is left out (see ``to_device``) so that the
   normalisation stays fused in ffcv_go's Go pipeline;
   validation with CenterCropRGBImageDecoder((val_res, val_res), ratio=224/256).
   Model in channels_last, SGD (momentum 0.9, no weight decay on BN/bias)
   with a per-iteration triangular learning-rate schedule, cross entropy with
   label smoothing, AMP: torch.autocast float16 + GradScaler on CUDA; on the
   CPU autocast is off unless --amp (then bfloat16).

Progressive resizing: the training resolution of epoch e is --min-res up to
--start-ramp, --max-res from --end-ramp on, and linearly interpolated (rounded
to a multiple of 32) in between, as in FFCV. Setting ``decoder.output_size``
between epochs would work as in FFCV (the pipeline is planned again at every
epoch); this script instead builds a new train Loader whenever the resolution
changes, and calls ``loader.load_state_dict({'epoch': e, 'batch': 0, 'seed':
seed})`` on it so that it draws exactly the random order epoch e would have had
with a single Loader iterated across all epochs.

The last line printed is ``RESULT {json}`` with the per-epoch resolutions,
batch counts, losses and the final validation accuracy.
"""
import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn

import ffcv_go
from ffcv_go.fields import RGBImageField, IntField
from ffcv_go.fields.decoders import RandomResizedCropRGBImageDecoder, CenterCropRGBImageDecoder, IntDecoder
from ffcv_go.loader import OrderOption
from ffcv_go.transforms import RandomHorizontalFlip, ToTensor, ToDevice, ToTorchImage, NormalizeImage, Squeeze

IMAGENET_MEAN = np.array([0.485, 0.456, 0.406]) * 255
IMAGENET_STD = np.array([0.229, 0.224, 0.225]) * 255
DEFAULT_CROP_RATIO = 224 / 256


# ---- writing ------------------------------------------------------------------------

def _subset(n, limit, seed):
    """Indices of a seeded random subset of size limit (all when limit <= 0), sorted."""
    if limit <= 0 or limit >= n:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).permutation(n)[:limit])


def write_betons(args, quiet=False):
    """(train.beton, val.beton, number of classes), writing them if needed."""
    from torchvision.datasets import ImageFolder

    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    train_path, val_path = out / "train.beton", out / "val.beton"
    meta_path = out / "classes.json"
    if train_path.exists() and val_path.exists() and meta_path.exists() and not args.rewrite:
        if not quiet:
            print(f"using existing {train_path} and {val_path}")
        return train_path, val_path, len(json.loads(meta_path.read_text()))

    root = Path(args.data)
    if (root / "train").is_dir() and (root / "val").is_dir():
        train_ds, val_ds = ImageFolder(str(root / "train")), ImageFolder(str(root / "val"))
        if train_ds.classes != val_ds.classes:
            raise SystemExit(f"{root}/train and {root}/val have different classes")
        train_idx = _subset(len(train_ds), args.limit, args.seed)
        val_idx = _subset(len(val_ds), args.limit, args.seed)
    else:
        # One folder: a seeded 80/20 split.
        train_ds = val_ds = ImageFolder(str(root))
        perm = np.random.default_rng(args.seed).permutation(len(train_ds))
        perm = perm[:args.limit] if args.limit > 0 else perm
        n_val = max(1, int(round(len(perm) * args.val_fraction)))
        train_idx, val_idx = np.sort(perm[n_val:]), np.sort(perm[:n_val])
    classes = train_ds.classes

    for path, ds, idx in ((train_path, train_ds, train_idx), (val_path, val_ds, val_idx)):
        t0 = time.time()
        writer = ffcv_go.DatasetWriter(str(path), {
            "image": RGBImageField(write_mode="jpg", max_resolution=args.write_max_res,
                                   jpeg_quality=args.jpeg_quality),
            "label": IntField(),
        }, num_workers=args.num_workers, progress=args.progress)
        # ImageFolder decodes with PIL, which releases the GIL: fetch with threads.
        writer.from_indexed_dataset(ds, indices=idx, pool="thread", pool_workers=max(1, args.num_workers))
        print(f"wrote {path}: {len(idx)} images in {time.time() - t0:.1f}s", flush=True)
    meta_path.write_text(json.dumps(classes))
    return train_path, val_path, len(classes)


# ---- loaders ------------------------------------------------------------------------

def image_dtype(args):
    return np.float16 if args.use_fp16 else np.float32


def to_device(device):
    """[ToDevice(device, non_blocking=True)] for an accelerator; [] on the CPU.

    Batches already are CPU tensors, and ffcv_go fuses NormalizeImage into
    its Go decoding program only when nothing but ToTensor / ToTorchImage
    stands between them: a ToDevice('cpu') would push the normalisation into
    per-batch torch code (measured ~1.6-2x fewer images/s at 128 px).
    """
    return [] if torch.device(device).type == "cpu" else [ToDevice(device, non_blocking=True)]


def create_train_loader(path, res, epoch, device, args):
    """The train Loader at resolution res, positioned at the start of epoch."""
    image_pipeline = [
        RandomResizedCropRGBImageDecoder((res, res)),
        RandomHorizontalFlip(),
        ToTensor(),
        *to_device(device),
        ToTorchImage(),
        NormalizeImage(IMAGENET_MEAN, IMAGENET_STD, image_dtype(args)),
    ]
    label_pipeline = [IntDecoder(), ToTensor(), Squeeze(1), *to_device(device)]
    order = OrderOption.QUASI_RANDOM if args.quasi_random else OrderOption.RANDOM
    loader = ffcv_go.Loader(str(path), batch_size=args.batch_size, num_workers=args.num_workers,
                            order=order, os_cache=args.os_cache, drop_last=True, seed=args.seed,
                            distributed=args.distributed,
                            pipelines={"image": image_pipeline, "label": label_pipeline})
    loader.load_state_dict({"epoch": epoch, "batch": 0, "seed": args.seed})
    return loader


def create_val_loader(path, device, args):
    res = args.val_res
    image_pipeline = [
        CenterCropRGBImageDecoder((res, res), ratio=DEFAULT_CROP_RATIO),
        ToTensor(),
        *to_device(device),
        ToTorchImage(),
        NormalizeImage(IMAGENET_MEAN, IMAGENET_STD, image_dtype(args)),
    ]
    label_pipeline = [IntDecoder(), ToTensor(), Squeeze(1), *to_device(device)]
    return ffcv_go.Loader(str(path), batch_size=args.val_batch_size or args.batch_size,
                          num_workers=args.num_workers, order=OrderOption.SEQUENTIAL, os_cache=args.os_cache,
                          drop_last=False, seed=args.seed, distributed=args.distributed,
                          pipelines={"image": image_pipeline, "label": label_pipeline})


# ---- schedules ------------------------------------------------------------------------

def get_resolution(epoch, min_res, max_res, start_ramp, end_ramp):
    """FFCV's progressive resizing schedule."""
    assert min_res <= max_res
    if epoch <= start_ramp:
        return min_res
    if epoch >= end_ramp:
        return max_res
    interp = np.interp([epoch], [start_ramp, end_ramp], [min_res, max_res])
    return int(np.round(interp[0] / 32)) * 32


def get_lr(progress, peak_lr, peak_epoch, epochs):
    """Triangular schedule over fractional epochs: ~0 -> peak_lr at peak_epoch -> 0 at the end."""
    return float(np.interp([progress], [0, peak_epoch, epochs], [peak_lr * 1e-4, peak_lr, 0])[0])


# ---- model ------------------------------------------------------------------------------

def create_model_and_optimizer(args, num_classes, device):
    import torchvision
    model = getattr(torchvision.models, args.arch)(weights=None, num_classes=num_classes)
    model = model.to(device=device, memory_format=torch.channels_last)
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (no_decay if p.ndim <= 1 else decay).append(p)  # BN weights/biases and biases: no weight decay
    opt = torch.optim.SGD([{"params": decay, "weight_decay": args.weight_decay},
                           {"params": no_decay, "weight_decay": 0.0}],
                          lr=args.lr, momentum=args.momentum)
    return model, opt


def autocast(args):
    return torch.autocast(device_type=args.device_type, dtype=args.amp_dtype, enabled=args.amp)


def evaluate(model, loader, args):
    model.eval()
    loss_fn = nn.CrossEntropyLoss(reduction="sum")
    top1 = top5 = loss = n = 0.0
    with torch.no_grad(), autocast(args):
        for images, target in loader:
            out = model(images)
            if args.lr_tta:
                out = out + model(torch.flip(images, dims=[3]))
            loss += loss_fn(out.float(), target).item()
            k = min(5, out.shape[1])
            pred = out.topk(k, dim=1).indices
            hit = pred == target[:, None]
            top1 += hit[:, 0].sum().item()
            top5 += hit.any(1).sum().item()
            n += target.numel()
    if args.distributed:
        t = torch.tensor([top1, top5, loss, n], dtype=torch.float64, device=args.reduce_device)
        torch.distributed.all_reduce(t)
        top1, top5, loss, n = t.tolist()
    n = max(n, 1)
    return {"top1": top1 / n, "top5": top5 / n, "loss": loss / n, "samples": int(n)}


# ---- main -----------------------------------------------------------------------------

def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    d = p.add_argument_group("data")
    d.add_argument("--data", help="ImageFolder root (with train/ and val/, or one folder to split)")
    d.add_argument("--out-dir", default="./betons", help="where train.beton / val.beton are written")
    d.add_argument("--rewrite", action="store_true", help="rewrite the .beton files even if they exist")
    d.add_argument("--limit", type=int, default=0, help="use a seeded random subset of N images per split")
    d.add_argument("--val-fraction", type=float, default=0.2, help="val share when --data is a single folder")
    d.add_argument("--write-max-res", type=int, default=512, help="max_resolution of the written images")
    d.add_argument("--jpeg-quality", type=int, default=90)
    d.add_argument("--num-workers", type=int, default=-1, help="writer/loader threads (< 1: every CPU)")
    d.add_argument("--os-cache", action=argparse.BooleanOptionalAction, default=True)
    d.add_argument("--quasi-random", action="store_true", help="QUASI_RANDOM order (for data larger than RAM)")
    d.add_argument("--distributed", action="store_true",
                   help="DistributedDataParallel, one process per GPU (launch with torchrun); "
                        "the loaders shard the data by rank")
    d.add_argument("--progress", action="store_true", help="progress bars while writing")
    t = p.add_argument_group("training")
    t.add_argument("--arch", default="resnet50", choices=["resnet18", "resnet34", "resnet50", "resnet101"])
    t.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    t.add_argument("--epochs", type=int, default=16)
    t.add_argument("--batch-size", type=int, default=512)
    t.add_argument("--val-batch-size", type=int, default=0, help="default: --batch-size")
    t.add_argument("--lr", type=float, default=0.5,
                   help="peak learning rate per 256 images (scaled by the global batch size)")
    t.add_argument("--lr-peak-epoch", type=float, default=2.0)
    t.add_argument("--momentum", type=float, default=0.9)
    t.add_argument("--weight-decay", type=float, default=None, help="default 5e-5 (resnet18/34), 1e-4 otherwise")
    t.add_argument("--label-smoothing", type=float, default=0.1)
    t.add_argument("--amp", action=argparse.BooleanOptionalAction, default=None,
                   help="autocast (default: float16 on CUDA, off on the CPU; --amp on the CPU is bfloat16)")
    t.add_argument("--lr-tta", action="store_true", help="validation averages the flipped image's logits")
    t.add_argument("--seed", type=int, default=0)
    r = p.add_argument_group("resolution")
    r.add_argument("--min-res", type=int, default=160)
    r.add_argument("--max-res", type=int, default=192)
    r.add_argument("--start-ramp", type=int, default=None, help="last epoch at --min-res (default ~74%% of training)")
    r.add_argument("--end-ramp", type=int, default=None, help="first epoch at --max-res (default ~86%% of training)")
    r.add_argument("--val-res", type=int, default=256)
    args = p.parse_args(argv)

    if args.data is None:
        if not ((Path(args.out_dir) / "train.beton").exists() and (Path(args.out_dir) / "val.beton").exists()):
            p.error("--data is required unless --out-dir already holds train.beton and val.beton")
    if args.min_res > args.max_res:
        p.error("--min-res must be <= --max-res")
    if args.start_ramp is None:
        args.start_ramp = int(0.74 * (args.epochs - 1))
    if args.end_ramp is None:
        args.end_ramp = max(args.start_ramp, int(0.86 * (args.epochs - 1)))
    if args.weight_decay is None:
        args.weight_decay = 5e-5 if args.arch in ("resnet18", "resnet34") else 1e-4
    dev = torch.device(args.device)
    args.device_type = dev.type
    if args.amp is None:
        args.amp = dev.type == "cuda"
    args.amp_dtype = torch.float16 if dev.type == "cuda" else torch.bfloat16
    args.use_fp16 = args.amp and args.amp_dtype == torch.float16
    return args


def setup_distributed(args):
    """torchrun's environment -> process group; returns (rank, world size, device)."""
    import torch.distributed as dist
    device = torch.device(args.device)
    if not args.distributed:
        return 0, 1, device
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    if device.type == "cuda":
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    args.reduce_device = device if device.type == "cuda" else torch.device("cpu")
    return dist.get_rank(), dist.get_world_size(), device


def main(argv=None):
    args = parse_args(argv)
    torch.manual_seed(args.seed)
    rank, world, device = setup_distributed(args)
    if device.type == "cuda":
        torch.backends.cudnn.benchmark = True
    log = print if rank == 0 else (lambda *a, **k: None)

    # Rank 0 writes the files; the others wait for it, then find them there.
    if rank == 0:
        train_path, val_path, num_classes = write_betons(args)
    if args.distributed:
        torch.distributed.barrier()
    if rank != 0:
        args.rewrite = False
        train_path, val_path, num_classes = write_betons(args, quiet=True)
    model, opt = create_model_and_optimizer(args, num_classes, device)
    if args.distributed:
        model = torch.nn.parallel.DistributedDataParallel(
            model, device_ids=[device.index] if device.type == "cuda" else None)
    loss_fn = nn.CrossEntropyLoss(label_smoothing=args.label_smoothing)
    scaler = torch.amp.GradScaler(device.type, enabled=args.use_fp16)
    peak_lr = args.lr * args.batch_size * world / 256  # --lr is per 256 images of the global batch
    peak_epoch = min(args.lr_peak_epoch, args.epochs / 2)

    val_loader = create_val_loader(val_path, device, args)
    history = {"resolutions": [], "train_batches": [], "train_loss": [], "images_per_s": [], "val": []}
    train_loader, loader_res = None, None
    t_start = time.time()
    for epoch in range(args.epochs):
        res = get_resolution(epoch, args.min_res, args.max_res, args.start_ramp, args.end_ramp)
        if res != loader_res:
            # A new Loader for the new resolution (see the module docstring), at this epoch's order.
            if train_loader is not None:
                train_loader.close()
            train_loader = create_train_loader(train_path, res, epoch, device, args)
            loader_res = res
        iters = len(train_loader)
        model.train()
        t0 = time.time()
        losses, seen, batches = [], 0, 0
        for it, (images, target) in enumerate(train_loader):
            assert images.shape[-2:] == (res, res), (images.shape, res)
            lr = get_lr(epoch + it / max(iters, 1), peak_lr, peak_epoch, args.epochs)
            for g in opt.param_groups:
                g["lr"] = lr
            opt.zero_grad(set_to_none=True)
            with autocast(args):
                loss = loss_fn(model(images), target)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            losses.append(loss.detach())
            seen += target.numel()
            batches += 1
        if device.type == "cuda":
            torch.cuda.synchronize()
        dt = time.time() - t0
        train_loss = float(torch.stack(losses).float().mean()) if losses else math.nan
        val = evaluate(model, val_loader, args)
        history["resolutions"].append(res)
        history["train_batches"].append(batches)
        history["train_loss"].append(train_loss)
        history["images_per_s"].append(seen * world / max(dt, 1e-9))
        history["val"].append(val)
        log(f"epoch {epoch}: res {res}, {batches} batches, train loss {train_loss:.4f}, "
              f"{seen * world / max(dt, 1e-9):.0f} img/s | val top1 {val['top1']:.4f} top5 {val['top5']:.4f} "
              f"loss {val['loss']:.4f} ({val['samples']} images)", flush=True)
    if train_loader is not None:
        train_loader.close()
    val_loader.close()

    result = {"arch": args.arch, "device": str(device), "world_size": world, "amp": args.amp, "epochs": args.epochs,
              "num_classes": num_classes, "val_top1": history["val"][-1]["top1"] if history["val"] else None,
              "time_s": time.time() - t_start, **history}
    log("RESULT " + json.dumps(result))
    if args.distributed:
        torch.distributed.destroy_process_group()
    return result


if __name__ == "__main__":
    main()
    sys.exit(0)
