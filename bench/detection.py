"""Detection and segmentation loading: ffcv_go against DataLoader +
torchvision.transforms.v2 on the same scenes, one run, images/s and ratios.

Both sides do the same work per sample: decode a JPEG, random resized crop
to --res, random horizontal flip, and move the targets with the image —
boxes (clipped, small ones dropped with their labels) for detection, the
class mask for segmentation — then batch with boxes padded to the batch's
or file's most boxes. The data are bench/scenes.py scenes at --height x
--width (JPEG quality 90), with their masks as PNG files for the DataLoader.

    PYTHONPATH=python .venv/bin/python bench/detection.py --samples 2000 --workers 2
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scenes  # noqa: E402


def make_data(args):
    """The scenes as JPEG + PNG mask + boxes files (for the DataLoader) and as a .beton."""
    from PIL import Image
    from ffcv_go import DatasetWriter
    from ffcv_go.fields import MaskField, RaggedArrayField, RGBImageField
    root = os.path.join(args.out, f"scenes_{args.samples}_{args.height}x{args.width}")
    beton = root + ".beton"
    if os.path.exists(beton):
        return root, beton
    os.makedirs(root, exist_ok=True)
    import make_dataset
    ds = scenes.SceneDataset(args.samples, make_dataset.find_photos()[:8], height=args.height, width=args.width)
    for i in range(len(ds)):
        img, boxes, labels, mask = ds[i]
        Image.fromarray(img).save(os.path.join(root, f"{i}.jpg"), quality=90)
        Image.fromarray(mask).save(os.path.join(root, f"{i}.png"))
        np.savez(os.path.join(root, f"{i}.npz"), boxes=boxes, labels=labels)

    class Files:
        def __len__(self):
            return len(ds)

        def __getitem__(self, i):
            from ffcv_go.writer import _ImagePath
            t = np.load(os.path.join(root, f"{i}.npz"))
            return (_ImagePath(os.path.join(root, f"{i}.jpg")), t["boxes"], t["labels"],
                    np.asarray(Image.open(os.path.join(root, f"{i}.png"))))
    fields = {"image": RGBImageField(write_mode="jpg", jpeg_quality=90),
              "boxes": RaggedArrayField(np.float32, (4,), follows="image", coords="xyxy"),
              "labels": RaggedArrayField(np.int64, (), follows="boxes"),
              "mask": MaskField("image")}
    DatasetWriter(beton, fields, progress=False).from_indexed_dataset(Files())
    return root, beton


def rate(loader, epochs):
    best = 0.0
    for _ in range(epochs):
        t, n = time.perf_counter(), 0
        for batch in loader:
            n += len(batch[0])
        best = max(best, n / (time.perf_counter() - t))
    return best


def ffcv_go_loader(args, beton, task):
    from ffcv_go import Loader
    from ffcv_go.fields.decoders import MaskDecoder, RaggedDecoder, RandomResizedCropRGBImageDecoder
    from ffcv_go.loader import OrderOption
    from ffcv_go.transforms import RandomHorizontalFlip, ToTensor, ToTorchImage
    pipes = {"image": [RandomResizedCropRGBImageDecoder((args.res, args.res)), RandomHorizontalFlip(),
                       ToTensor(), ToTorchImage()]}
    if task == "detection":
        pipes.update(boxes=[RaggedDecoder(min_size=1, min_area=1)], labels=[RaggedDecoder()], mask=None)
    else:
        pipes.update(boxes=None, labels=None, mask=[MaskDecoder()])
    return Loader(beton, batch_size=args.batch_size, num_workers=args.workers, order=OrderOption.RANDOM, seed=0,
                  pipelines=pipes)


class _Scenes(torch.utils.data.Dataset):
    """The scene files through torchvision: decode, then v2 transforms on tv_tensors."""

    def __init__(self, root, n, task, res):
        from torchvision.transforms import v2
        self.root, self.n, self.task = root, n, task
        steps = [v2.RandomResizedCrop(res, antialias=True), v2.RandomHorizontalFlip()]
        if task == "detection":
            steps.append(v2.SanitizeBoundingBoxes(min_size=1, min_area=1))
        self.tf = v2.Compose(steps)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        from torchvision import io, tv_tensors
        img = io.decode_jpeg(io.read_file(os.path.join(self.root, f"{i}.jpg")))
        h, w = img.shape[-2:]
        if self.task == "detection":
            t = np.load(os.path.join(self.root, f"{i}.npz"))
            target = {"boxes": tv_tensors.BoundingBoxes(torch.from_numpy(t["boxes"]), format="XYXY", canvas_size=(h, w)),
                      "labels": torch.from_numpy(t["labels"])}
            img, target = self.tf(tv_tensors.Image(img), target)
            return img, target["boxes"], target["labels"]
        mask = io.decode_png(io.read_file(os.path.join(self.root, f"{i}.png")))[0]
        img, mask = self.tf(tv_tensors.Image(img), tv_tensors.Mask(mask))
        return img, mask


def _pad_collate(items):
    """Boxes and labels padded to the batch's most boxes, with counts: the layout ffcv_go gives."""
    imgs = torch.stack([x[0] for x in items])
    if len(items[0]) == 2:
        return imgs, torch.stack([x[1] for x in items])
    counts = torch.tensor([len(x[2]) for x in items])
    n = int(counts.max()) if len(items) else 0
    boxes = torch.zeros(len(items), n, 4)
    labels = torch.zeros(len(items), n, dtype=torch.int64)
    for k, (_, b, l) in enumerate(items):
        boxes[k, :len(b)], labels[k, :len(l)] = b, l
    return imgs, (boxes, counts), (labels, counts)


def dataloader(args, root, task):
    ds = _Scenes(root, args.samples, task, args.res)
    return torch.utils.data.DataLoader(ds, batch_size=args.batch_size, shuffle=True, num_workers=args.workers,
                                       persistent_workers=args.workers > 0, drop_last=True, collate_fn=_pad_collate)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--samples", type=int, default=2000)
    p.add_argument("--height", type=int, default=480)
    p.add_argument("--width", type=int, default=640)
    p.add_argument("--res", type=int, default=320)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--workers", type=int, default=os.cpu_count())
    p.add_argument("--epochs", type=int, default=2, help="the best epoch counts (the first warms caches)")
    p.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "data"))
    p.add_argument("--json", help="also write the results here")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    root, beton = make_data(args)
    results = {"samples": args.samples, "size": f"{args.height}x{args.width}", "res": args.res,
               "batch_size": args.batch_size, "workers": args.workers}
    for task in ("detection", "segmentation"):
        ours = rate(ffcv_go_loader(args, beton, task), args.epochs)
        theirs = rate(dataloader(args, root, task), args.epochs)
        results[task] = {"ffcv_go_img_s": round(ours, 1), "dataloader_img_s": round(theirs, 1),
                         "ratio": round(ours / theirs, 2)}
        print(f"{task:13s} ffcv_go {ours:8.1f} img/s   DataLoader + v2 {theirs:8.1f} img/s   "
              f"ratio {ours / theirs:5.2f}x", flush=True)
    print("RESULT " + json.dumps(results))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
