"""Fused pipeline benchmark: RandomResizedCrop + flip + normalize to float16 NCHW.

ffcv_go runs all three in Go per sample (ToTensor/ToTorchImage are views);
the baseline is the same pipeline through torchvision transforms in a
torch.utils.data.DataLoader over the ImageFolder. One process, same batch
size and workers; prints img/s of each and the ratio.

    PYTHONPATH=python .venv/bin/python bench/fused_pipeline.py --data bench/data/imagenet-like \\
        --beton bench/data/imagenet-like_256.beton
"""
import argparse
import os
import time

import numpy as np
import torch

MEAN = np.array([0.485, 0.456, 0.406]) * 255
STD = np.array([0.229, 0.224, 0.225]) * 255


def epoch_rate(loader, epochs):
    best = 0.0
    for _ in range(epochs):
        t, n = time.perf_counter(), 0
        for images, labels in loader:
            assert images.dtype == torch.float16 and images.shape[1] == 3
            n += len(images)
        best = max(best, n / (time.perf_counter() - t))
    return best


def ours(args):
    from ffcv_go import Loader
    from ffcv_go.fields.decoders import IntDecoder, RandomResizedCropRGBImageDecoder
    from ffcv_go.loader import OrderOption
    from ffcv_go.transforms import NormalizeImage, RandomHorizontalFlip, Squeeze, ToTensor, ToTorchImage
    loader = Loader(args.beton, batch_size=args.batch_size, num_workers=args.workers, order=OrderOption.RANDOM,
                    seed=0, pipelines={
                        "image": [RandomResizedCropRGBImageDecoder((args.res, args.res)), RandomHorizontalFlip(),
                                  ToTensor(), ToTorchImage(), NormalizeImage(MEAN, STD, np.float16)],
                        "label": [IntDecoder(), ToTensor(), Squeeze()]})
    return epoch_rate(loader, args.epochs)


def dataloader(args):
    import torchvision
    from torchvision.transforms import v2
    tf = v2.Compose([v2.PILToTensor(), v2.RandomResizedCrop(args.res, antialias=True), v2.RandomHorizontalFlip(),
                     v2.ToDtype(torch.float32, scale=True), v2.Normalize(list(MEAN / 255), list(STD / 255)),
                     v2.ToDtype(torch.float16)])
    ds = torchvision.datasets.ImageFolder(args.data, transform=tf)
    if args.limit:
        ds = torch.utils.data.Subset(ds, range(min(args.limit, len(ds))))
    dl = torch.utils.data.DataLoader(ds, batch_size=args.batch_size, shuffle=True, num_workers=args.workers,
                                     persistent_workers=True, drop_last=True)
    return epoch_rate(dl, args.epochs)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True)
    p.add_argument("--beton", required=True)
    p.add_argument("--res", type=int, default=224)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)))
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--limit", type=int, default=0, help="images for the DataLoader run (0: all)")
    a = p.parse_args()
    go, dl = ours(a), dataloader(a)
    print("| pipeline: RRC %d + flip + normalize fp16 NCHW | img/s |" % a.res)
    print("|---|---:|")
    print(f"| ffcv_go (fused in Go) | {go:.0f} |")
    print(f"| DataLoader + torchvision v2 | {dl:.0f} |")
    print(f"| ratio | {go / dl:.2f}x |")


if __name__ == "__main__":
    main()
