"""Detection (fasterrcnn_mobilenet_v3_large_fpn) or segmentation
(lraspp_mobilenet_v3_large) trained from a .beton with ffcv_go: boxes,
labels and masks follow the image's random crop and flip.

The data are scenes of coloured rectangles over real photos
(bench/scenes.py; noise backgrounds when Debian's wallpapers are absent),
a task with real signal: the loss falls within a few dozen steps. Models
start from scratch (no downloaded weights). Prints one JSON line of
results at the end.

    python examples/train_detection.py --task detection --steps 30
    python examples/train_detection.py --task segmentation --device cuda
"""
import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
import scenes  # noqa: E402

from ffcv_go import DatasetWriter, Loader  # noqa: E402
from ffcv_go.detection import to_torchvision_targets  # noqa: E402
from ffcv_go.fields import MaskField, RaggedArrayField, RGBImageField  # noqa: E402
from ffcv_go.fields.decoders import MaskDecoder, RaggedDecoder, RandomResizedCropRGBImageDecoder  # noqa: E402
from ffcv_go.loader import OrderOption  # noqa: E402
from ffcv_go.transforms import RandomHorizontalFlip, ToDevice, ToTensor, ToTorchImage  # noqa: E402

NUM_CLASSES = len(scenes.COLOURS) + 1  # background + one class per colour


def write_scenes(path, n, photos):
    fields = {"image": RGBImageField(write_mode="jpg", max_resolution=256, jpeg_quality=95),
              "boxes": RaggedArrayField(np.float32, (4,), follows="image", coords="xyxy"),
              "labels": RaggedArrayField(np.int64, (), follows="boxes"),
              "mask": MaskField("image")}
    DatasetWriter(path, fields, progress=False).from_indexed_dataset(scenes.SceneDataset(n, photos))


def make_loader(path, args, device):
    return Loader(path, batch_size=args.batch_size, num_workers=args.workers, order=OrderOption.RANDOM, seed=0,
                  pipelines={
                      "image": [RandomResizedCropRGBImageDecoder((args.size, args.size), scale=(0.35, 1.0)),
                                RandomHorizontalFlip(), ToTensor(), ToDevice(device), ToTorchImage()],
                      "boxes": [RaggedDecoder(min_size=2, min_area=16), ToTensor(), ToDevice(device)],
                      "labels": [RaggedDecoder(), ToTensor(), ToDevice(device)],
                      "mask": [MaskDecoder(), ToTensor(), ToDevice(device)]})


def build_model(task):
    from torchvision.models import detection, segmentation
    if task == "detection":
        return detection.fasterrcnn_mobilenet_v3_large_fpn(weights=None, weights_backbone=None,
                                                           num_classes=NUM_CLASSES, min_size=160, max_size=160)
    return segmentation.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None, num_classes=NUM_CLASSES)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--task", choices=["detection", "segmentation"], default="detection")
    p.add_argument("--data", help="a .beton written by this script (default: written to a temporary folder)")
    p.add_argument("--samples", type=int, default=256)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--size", type=int, default=160)
    p.add_argument("--lr", type=float, default=None)
    p.add_argument("--workers", type=int, default=-1)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = p.parse_args(argv)
    torch.manual_seed(0)
    device = torch.device(args.device)
    tmp = None
    path = args.data
    if path is None or not os.path.exists(path):
        if path is None:
            tmp = tempfile.TemporaryDirectory()
            path = os.path.join(tmp.name, "scenes.beton")
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
        import make_dataset
        write_scenes(path, args.samples, make_dataset.find_photos()[:4])
    loader = make_loader(path, args, device)
    model = build_model(args.task).to(device)
    lr = args.lr or (0.02 if args.task == "detection" else 0.01)
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, weight_decay=1e-4)
    losses, step, t0 = [], 0, time.time()
    model.train()
    while step < args.steps:
        for images, boxes, labels, mask in loader:
            x = images.float().div_(255)
            if args.task == "detection":
                out = model(list(x), to_torchvision_targets(boxes, labels))
                loss = sum(out.values())
            else:
                out = model(x)["out"]
                loss = torch.nn.functional.cross_entropy(out, mask.long())
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            losses.append(float(loss))
            step += 1
            if step % 10 == 0:
                print(f"step {step}: loss {np.mean(losses[-10:]):.4f}", flush=True)
            if step >= args.steps:
                break
    k = max(1, len(losses) // 4)
    result = {"task": args.task, "steps": step, "first_loss": float(np.mean(losses[:k])),
              "last_loss": float(np.mean(losses[-k:])), "seconds": round(time.time() - t0, 1),
              "device": str(device)}
    print("RESULT " + json.dumps(result))
    loader.close()
    if tmp is not None:
        tmp.cleanup()
    return result


if __name__ == "__main__":
    main()
