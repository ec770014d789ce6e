#!/usr/bin/env python3
"""ImageNet-style ResNet training with MosaicML Composer on ffcv_go loaders.

The setting of MosaicML's "Composer + FFCV: Faster Together": one process per
GPU, each with its own ffcv_go Loader (sharded by rank), and Composer's speed-up
algorithms on top of the loaded batches: ProgressiveResizing (rescales each
batch after loading, on the GPU when the batches are there), BlurPool,
LabelSmoothing and ChannelsLast.

    # CPU, after `make demo` (bench/data/imagenet-like: 10,000 photos, 10 classes): a tiny
    # ResNet at 48 px on a 2,000-image subset, 2 epochs, about a minute on 2 cores
    PYTHONPATH=python .venv/bin/python examples/train_imagenet_composer.py

    # One GPU, the same command: ResNet-50 at 176 px (validation 224), AMP, 16 epochs
    PYTHONPATH=python python examples/train_imagenet_composer.py --data /data/imagenet --out-dir /data/betons

    # 8 GPUs on one node: Composer's launcher (or torchrun --nproc_per_node 8); --batch-size is per GPU
    PYTHONPATH=python composer -n 8 examples/train_imagenet_composer.py --data /data/imagenet --out-dir /data/betons

Data: --data is an ImageFolder (root/train and root/val, or one folder split
80/20); the first run writes train.beton / val.beton into --out-dir (JPEG,
--write-max-res), later runs reuse them. This is examples/train_imagenet.py's
writer, and its decoding pipelines: RandomResizedCrop((res, res)) + flip ->
ToTensor -> ToDevice (GPU only) -> ToTorchImage -> NormalizeImage (float16
with AMP) for training, CenterCrop((val_res, val_res), 224/256) for validation.

The loaders' num_workers default (-1) takes this process's share of the cores:
cores // LOCAL_WORLD_SIZE (set by both launchers), so 8 ranks on a node do not
oversubscribe it.

Progressive resizing here is Composer's: the loader always decodes at --res and
ProgressiveResizing scales the batch down (from --pr-initial-scale, growing
after --pr-delay of training, full size for the last --pr-finetune), so one
Loader serves the whole run and Composer's checkpoints (--save-folder,
--load-path) resume mid-epoch on the same batches.

Defaults depend on the device: on CUDA resnet50, --res 176, --val-res 224,
--batch-size 256, 16 epochs, every image, precision amp_fp16; on the CPU a
tiny ResNet (torchvision BasicBlocks, 16-64 channels), --res 48, --val-res 48,
--batch-size 64, 2 epochs, --limit 2000, fp32. --out-dir keeps the first run's
files (use --rewrite after changing --data, --limit or --write-max-res). The last line printed is ``RESULT {json}``.
"""
import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from train_imagenet import (IMAGENET_MEAN, IMAGENET_STD, DEFAULT_CROP_RATIO, write_betons,  # noqa: E402
                            to_device)

DEMO_DATA = HERE.parent / "bench" / "data" / "imagenet-like"
DEMO_BETONS = HERE.parent / "bench" / "data" / "imagenet-like-composer"

GPU_DEFAULTS = dict(arch="resnet50", res=176, val_res=224, batch_size=256, epochs=16, lr=2.048, limit=0)
# On the CPU the model, not the loader, is the bottleneck (~0.2 CPU-s per step of 64 images even for the tiny
# ResNet): a 2,000-image subset keeps the demo run short.
CPU_DEFAULTS = dict(arch="tiny", res=48, val_res=48, batch_size=64, epochs=2, lr=0.5, limit=2000)


# ---- model ------------------------------------------------------------------------------

def tiny_resnet(num_classes):
    """A small ResNet of torchvision's BasicBlocks (16, 32, 64 channels) for CPU runs."""
    from torchvision.models.resnet import BasicBlock

    def down(cin, cout):
        return nn.Sequential(nn.Conv2d(cin, cout, 1, stride=2, bias=False), nn.BatchNorm2d(cout))

    return nn.Sequential(
        nn.Conv2d(3, 16, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(inplace=True),
        nn.MaxPool2d(3, stride=2, padding=1),
        BasicBlock(16, 16), BasicBlock(16, 32, stride=2, downsample=down(16, 32)),
        BasicBlock(32, 64, stride=2, downsample=down(32, 64)),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, num_classes))


def create_model(arch, num_classes):
    from composer.models import ComposerClassifier
    import torchvision
    if arch == "tiny":
        module = tiny_resnet(num_classes)
    else:
        module = getattr(torchvision.models, arch)(weights=None, num_classes=num_classes)
    # soft_cross_entropy (ComposerClassifier's loss) takes LabelSmoothing's soft targets.
    return ComposerClassifier(module, num_classes=num_classes)


def create_algorithms(args):
    from composer.algorithms import ProgressiveResizing, BlurPool, LabelSmoothing, ChannelsLast
    algorithms = []
    if args.pr_initial_scale < 1:
        algorithms.append(ProgressiveResizing(mode="resize", initial_scale=args.pr_initial_scale,
                                              delay_fraction=args.pr_delay, finetune_fraction=args.pr_finetune,
                                              size_increment=4))
    algorithms.append(BlurPool(replace_convs=True, replace_maxpools=True, blur_first=True))
    if args.label_smoothing > 0:
        algorithms.append(LabelSmoothing(smoothing=args.label_smoothing))
    algorithms.append(ChannelsLast())
    return algorithms


# ---- loaders ------------------------------------------------------------------------------

def create_loaders(train_path, val_path, device, args):
    """(train, val) ffcv_go Loaders for this Composer rank (sharded when the world is > 1)."""
    from ffcv_go.fields.decoders import RandomResizedCropRGBImageDecoder, CenterCropRGBImageDecoder, IntDecoder
    from ffcv_go.loader import OrderOption
    from ffcv_go.transforms import RandomHorizontalFlip, ToTensor, ToTorchImage, NormalizeImage, Squeeze
    from ffcv_go.integrations.composer import build_train_loader, build_eval_loader
    dtype = np.float16 if args.precision == "amp_fp16" else np.float32

    def pipelines(decoder, flip):
        return {"image": [decoder, *([RandomHorizontalFlip()] if flip else []), ToTensor(), *to_device(device),
                          ToTorchImage(), NormalizeImage(IMAGENET_MEAN, IMAGENET_STD, dtype)],
                "label": [IntDecoder(), ToTensor(), Squeeze(1), *to_device(device)]}

    common = dict(num_workers=args.num_workers, os_cache=args.os_cache, seed=args.seed)
    order = OrderOption.QUASI_RANDOM if args.quasi_random else OrderOption.RANDOM
    train = build_train_loader(train_path, args.batch_size, order=order, **common,
                               pipelines=pipelines(RandomResizedCropRGBImageDecoder((args.res, args.res)), True))
    val = build_eval_loader(val_path, args.val_batch_size or args.batch_size, **common,
                            pipelines=pipelines(CenterCropRGBImageDecoder((args.val_res, args.val_res),
                                                                          ratio=DEFAULT_CROP_RATIO), False))
    return train, val


# ---- what the run did -------------------------------------------------------------------------

def make_recorder():
    from composer import Callback

    class Recorder(Callback):
        """Per epoch: the image sizes the model was given (after ProgressiveResizing), batches,
        mean training loss, images/s; per evaluation: samples and top-1."""

        def __init__(self):
            self.epochs, self.evals = [], []

        def epoch_start(self, state, logger):
            self.cur = {"sizes": [], "losses": [], "samples": 0, "t0": time.perf_counter()}

        def after_dataloader(self, state, logger):  # runs after the algorithms on this event
            images = state.batch_get_item(0)
            self.cur["sizes"].append(int(images.shape[-1]))
            self.cur["samples"] += int(images.shape[0])

        def batch_end(self, state, logger):
            loss = state.loss
            self.cur["losses"].append(float(sum(loss) if isinstance(loss, (list, tuple)) else loss))
            self.cur["t1"] = time.perf_counter()  # evaluation, after the last batch, is not counted

        def epoch_end(self, state, logger):
            c = self.cur
            dt = c.get("t1", c["t0"]) - c["t0"]
            self.epochs.append({"batches": len(c["sizes"]), "sizes": sorted(set(c["sizes"])),
                                "first_size": c["sizes"][0] if c["sizes"] else None,
                                "last_size": c["sizes"][-1] if c["sizes"] else None,
                                "train_loss": float(np.mean(c["losses"])) if c["losses"] else math.nan,
                                "images_per_s_rank": c["samples"] / max(dt, 1e-9)})

        def eval_start(self, state, logger):
            self.eval_samples = 0

        def eval_batch_end(self, state, logger):
            self.eval_samples += int(state.batch_get_item(0).shape[0])

        def eval_end(self, state, logger):
            metric = state.eval_metrics["eval"]["MulticlassAccuracy"]
            self.evals.append({"samples_rank": self.eval_samples, "top1": float(metric.compute())})

    return Recorder()


# ---- main ---------------------------------------------------------------------------------------

def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    d = p.add_argument_group("data")
    d.add_argument("--data", default=str(DEMO_DATA),
                   help="ImageFolder root (train/ and val/, or one folder to split); default: make demo's set")
    d.add_argument("--out-dir", default=str(DEMO_BETONS), help="where train.beton / val.beton are written")
    d.add_argument("--rewrite", action="store_true", help="rewrite the .beton files even if they exist")
    d.add_argument("--limit", type=int, default=None,
                   help="use a seeded random subset of N images (per split; 0: all; default 2000 on the CPU)")
    d.add_argument("--val-fraction", type=float, default=0.2, help="val share when --data is a single folder")
    d.add_argument("--write-max-res", type=int, default=256, help="max_resolution of the written images")
    d.add_argument("--jpeg-quality", type=int, default=90)
    d.add_argument("--num-workers", type=int, default=-1,
                   help="loader threads per process (< 1: this process's share of the cores)")
    d.add_argument("--os-cache", action=argparse.BooleanOptionalAction, default=True)
    d.add_argument("--quasi-random", action="store_true", help="QUASI_RANDOM order (for data larger than RAM)")
    d.add_argument("--progress", action="store_true", help="progress bars while writing")
    t = p.add_argument_group("training (defaults depend on the device, see above)")
    t.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu", choices=["cuda", "cpu"])
    t.add_argument("--arch", default=None, choices=["tiny", "resnet18", "resnet34", "resnet50", "resnet101"])
    t.add_argument("--epochs", type=int, default=None)
    t.add_argument("--batch-size", type=int, default=None, help="per process")
    t.add_argument("--val-batch-size", type=int, default=0, help="default: --batch-size")
    t.add_argument("--res", type=int, default=None, help="training resolution the loader decodes at")
    t.add_argument("--val-res", type=int, default=None)
    t.add_argument("--lr", type=float, default=None, help="peak learning rate per 2048 images of global batch")
    t.add_argument("--momentum", type=float, default=0.875)
    t.add_argument("--weight-decay", type=float, default=5e-5, help="decoupled (DecoupledSGDW)")
    t.add_argument("--warmup", default="0.1dur", help="linear warm-up duration (Composer time string)")
    t.add_argument("--precision", default=None, help="Composer precision (default amp_fp16 on CUDA, fp32 on CPU)")
    t.add_argument("--seed", type=int, default=0)
    a = p.add_argument_group("algorithms")
    a.add_argument("--pr-initial-scale", type=float, default=0.5, help="ProgressiveResizing (1: off)")
    a.add_argument("--pr-delay", type=float, default=0.4, help="fraction of training at the initial scale")
    a.add_argument("--pr-finetune", type=float, default=0.2, help="fraction of training at full size at the end")
    a.add_argument("--label-smoothing", type=float, default=0.08, help="LabelSmoothing (0: off)")
    c = p.add_argument_group("checkpoints")
    c.add_argument("--save-folder", default=None, help="Composer checkpoints go here")
    c.add_argument("--save-interval", default="1ep")
    c.add_argument("--load-path", default=None, help="resume from this Composer checkpoint")
    args = p.parse_args(argv)

    defaults = GPU_DEFAULTS if args.device == "cuda" else CPU_DEFAULTS
    for k, v in defaults.items():
        if getattr(args, k) is None:
            setattr(args, k, v)
    if args.precision is None:
        args.precision = "amp_fp16" if args.device == "cuda" else "fp32"
    out = Path(args.out_dir)
    if not ((out / "train.beton").exists() and (out / "val.beton").exists()) and not Path(args.data).is_dir():
        p.error(f"no ImageFolder at {args.data} and no .beton files in {out}: run `make demo` (it builds "
                f"{DEMO_DATA}) or pass --data")
    return args


def main(argv=None):
    args = parse_args(argv)
    from composer import Trainer
    from composer.devices import DeviceCPU, DeviceGPU
    from composer.optim import DecoupledSGDW, CosineAnnealingWithWarmupScheduler
    from composer.utils import dist

    device = DeviceGPU() if args.device == "cuda" else DeviceCPU()
    dist.initialize_dist(device)  # a no-op for one process; under a launcher, before anything waits on it
    rank, world = dist.get_global_rank(), dist.get_world_size()
    log = print if rank == 0 else (lambda *a, **k: None)

    # Each node's first process writes the files; the others wait, then find them there.
    if dist.get_local_rank() == 0:
        train_path, val_path, num_classes = write_betons(args)
    dist.barrier()
    if dist.get_local_rank() != 0:
        args.rewrite = False
        train_path, val_path, num_classes = write_betons(args, quiet=True)

    torch_device = device._device
    train_loader, val_loader = create_loaders(train_path, val_path, torch_device, args)
    from ffcv_go.integrations.composer import to_dataspec
    model = create_model(args.arch, num_classes)
    lr = args.lr * args.batch_size * world / 2048
    optimizer = DecoupledSGDW(model.parameters(), lr=lr, momentum=args.momentum, weight_decay=args.weight_decay)
    recorder = make_recorder()
    algorithms = create_algorithms(args)
    log(f"rank {rank}/{world}: {args.arch} at {args.res} px (val {args.val_res}), batch {args.batch_size} per "
        f"process, {len(train_loader)} batches per epoch, loader workers {train_loader.num_workers}, "
        f"algorithms {[type(a).__name__ for a in algorithms]}, precision {args.precision}", flush=True)

    # The duration in batches: ProgressiveResizing and the schedule then move every batch, not every epoch.
    trainer = Trainer(model=model, train_dataloader=to_dataspec(train_loader),
                      eval_dataloader=to_dataspec(val_loader), max_duration=f"{args.epochs * len(train_loader)}ba",
                      eval_interval=f"{len(train_loader)}ba",
                      algorithms=algorithms, optimizers=optimizer,
                      schedulers=CosineAnnealingWithWarmupScheduler(t_warmup=args.warmup), device=device,
                      precision=args.precision, seed=args.seed, callbacks=[recorder], progress_bar=False,
                      log_to_console=False, loggers=[], save_folder=args.save_folder,
                      save_interval=args.save_interval, load_path=args.load_path)
    t0 = time.time()
    trainer.fit()
    elapsed = time.time() - t0
    for e, (ep, ev) in enumerate(zip(recorder.epochs, recorder.evals)):
        log(f"epoch {e}: {ep['batches']} batches at {ep['sizes']} px, train loss {ep['train_loss']:.4f}, "
            f"{ep['images_per_s_rank'] * world:.0f} img/s | val top1 {ev['top1']:.4f}", flush=True)
    result = {"arch": args.arch, "device": str(torch_device), "world_size": world, "precision": args.precision,
              "num_classes": num_classes, "res": args.res, "val_res": args.val_res, "batch_size": args.batch_size,
              "loader_workers": train_loader.num_workers, "algorithms": [type(a).__name__ for a in algorithms],
              "blurpool_layers": sum(type(m).__name__.startswith("Blur") for m in model.modules()),
              "channels_last": next(m for m in model.modules() if isinstance(m, nn.Conv2d)).weight.is_contiguous(
                  memory_format=torch.channels_last),
              "batches": int(trainer.state.timestamp.batch), "epochs": recorder.epochs, "val": recorder.evals,
              "val_top1": recorder.evals[-1]["top1"] if recorder.evals else None, "time_s": elapsed}
    trainer.close()
    train_loader.close()
    val_loader.close()
    log("RESULT " + json.dumps(result))
    return result


if __name__ == "__main__":
    main()
    sys.exit(0)
