#!/usr/bin/env python3
"""A mixture of three datasets, killed mid-epoch and resumed: the rest of
the epoch read exactly, the counts per source exact.

    PYTHONPATH=python python examples/mixture_resume.py --out-dir /tmp/mixture

Three sources of real photos (random crops of Debian's wallpapers, as
make_tiny_imagefolder.py makes them) are written as .beton files -- the
second with other field names, which the mixture renames -- and mixed 0.6 /
0.3 / 0.1 over an epoch of --epoch-size samples:

1. A training process (this script, --train) reads the mixture in batches of
   --batch-size and, after every step, saves a checkpoint: the loader's
   state_dict() and the ids of the samples its steps trained on.
2. This script kills it (SIGKILL, no chance to clean up) once it is past
   --kill-at steps of the epoch.
3. A new training process resumes from the last checkpoint at another batch
   size (--resume-batch-size): elastic resume hands it the samples the killed
   one had not trained on, each once.

It then prints, per source, the samples the epoch takes (Loader.sources),
those trained before the kill and after it, and checks that together they
are the epoch exactly: each sample as often as the epoch takes it (an
upsampled source's samples more than once), none missed, none extra. Steps after
the last checkpoint are redone, as in any training run. Last line
`RESULT {json}`.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
WEIGHTS = (0.6, 0.3, 0.1)


def write_sources(out_dir, per_class):
    """Three .beton files of photo crops: image, label, index (unique over
    all sources); the second stores them as img, target, index."""
    sys.path.insert(0, str(HERE))
    from make_tiny_imagefolder import make_tiny_imagefolder
    from ffcv_go import DatasetWriter
    from ffcv_go.fields import IntField, RGBImageField
    paths = []
    for k, names in enumerate([("image", "label"), ("img", "target"), ("image", "label")]):
        folder = make_tiny_imagefolder(out_dir / f"photos-{k}", num_classes=2, per_class=per_class, seed=k)
        items = [(p, c) for c, d in enumerate(sorted(folder.iterdir())) for p in sorted(d.glob("*.jpg"))]
        rows = [(p, label, 1000 * k + i) for i, (p, label) in enumerate(items)]
        path = out_dir / f"source-{k}.beton"
        DatasetWriter(str(path), {names[0]: RGBImageField(write_mode="jpg", max_resolution=96),
                                  names[1]: IntField(), "index": IntField()}, progress=False).from_indexed_dataset(rows)
        paths.append(path)
    return paths


def mixture(out_dir, epoch_size):
    from ffcv_go.loader import Mixture, Source
    return Mixture([Source(str(out_dir / "source-0.beton"), proportion=WEIGHTS[0], name="curated"),
                    Source(str(out_dir / "source-1.beton"), proportion=WEIGHTS[1], name="web",
                           rename={"img": "image", "target": "label"}),
                    Source(str(out_dir / "source-2.beton"), proportion=WEIGHTS[2], name="domain")],
                   epoch_size=epoch_size, source_field="source")


def make_loader(out_dir, epoch_size, batch_size):
    from ffcv_go import Loader
    from ffcv_go.fields.decoders import IntDecoder, RandomResizedCropRGBImageDecoder
    from ffcv_go.loader import OrderOption
    from ffcv_go.transforms import RandomHorizontalFlip, Squeeze, ToTensor, ToTorchImage
    ints = lambda: [IntDecoder(), ToTensor(), Squeeze()]  # noqa: E731
    return Loader(mixture(out_dir, epoch_size), batch_size=batch_size, num_workers=2, seed=0,
                  order=OrderOption.RANDOM, drop_last=False, pipelines={
                      "image": [RandomResizedCropRGBImageDecoder((64, 64)), RandomHorizontalFlip(), ToTensor(),
                                ToTorchImage()],
                      "label": ints(), "index": ints(), "source": ints()})


def train(args):
    """The training process: one epoch, a checkpoint after every step."""
    import torch
    out_dir = Path(args.out_dir)
    ckpt = out_dir / "checkpoint.json"
    loader = make_loader(out_dir, args.epoch_size, args.batch_size)
    trained = []
    if args.resume:
        saved = json.loads(ckpt.read_text())
        loader.load_state_dict(saved["loader"])
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.LazyLinear(2))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step, (images, labels, index, source) in enumerate(loader):
        loss = torch.nn.functional.cross_entropy(model(images.float() / 255), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        trained += index.tolist()
        tmp = ckpt.with_suffix(".tmp")  # written whole, then renamed: a kill never leaves half a checkpoint
        tmp.write_text(json.dumps({"loader": loader.state_dict(), "trained": trained}))
        os.replace(tmp, ckpt)
        print(f"step {step}: {len(trained)} samples", flush=True)
        time.sleep(args.step_seconds)
    (out_dir / ("resumed.json" if args.resume else "finished.json")).write_text(json.dumps({"trained": trained}))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out-dir", default="/tmp/ffcv_go-mixture-resume")
    p.add_argument("--per-class", type=int, default=12, help="photos per class (2 classes) in each source")
    p.add_argument("--epoch-size", type=int, default=96)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--resume-batch-size", type=int, default=12)
    p.add_argument("--kill-at", type=int, default=4, help="kill the training process after this many steps")
    p.add_argument("--step-seconds", type=float, default=0.2, help="time a step takes")
    p.add_argument("--train", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--resume", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.train:
        return train(args)

    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for f in ("checkpoint.json", "finished.json", "resumed.json"):
        (out_dir / f).unlink(missing_ok=True)
    write_sources(out_dir, args.per_class)
    loader = make_loader(out_dir, args.epoch_size, args.batch_size)
    sources = loader.sources
    loader.close()
    print(f"{len(sources)} sources, {args.epoch_size} samples per epoch:")
    for s in sources:
        print(f"  {s['name']}: {s['samples']} samples, {s['per_epoch']} per epoch (repeat {s['repeat']:.2f})")

    cmd = [sys.executable, __file__, "--train", "--out-dir", str(out_dir), "--epoch-size", str(args.epoch_size),
           "--step-seconds", str(args.step_seconds)]
    child = subprocess.Popen(cmd + ["--batch-size", str(args.batch_size)], stdout=subprocess.PIPE, text=True)
    steps = 0
    for line in child.stdout:
        steps += line.startswith("step ")
        if steps >= args.kill_at:
            child.send_signal(signal.SIGKILL)
            break
    child.wait()
    killed = child.returncode == -signal.SIGKILL
    before = json.loads((out_dir / "checkpoint.json").read_text())["trained"]
    print(f"training process {'killed' if killed else 'ended'} (exit {child.returncode}) after {steps} steps; "
          f"the last checkpoint holds {len(before)} samples")

    resumed = subprocess.run(cmd + ["--batch-size", str(args.resume_batch_size), "--resume"], capture_output=True,
                             text=True)
    if resumed.returncode != 0:
        raise SystemExit(f"the resumed run failed:\n{resumed.stderr[-3000:]}")
    after = json.loads((out_dir / "resumed.json").read_text())["trained"]

    def source_of(i):
        return i // 1000

    counts = []
    print(f"\n{'source':<8} {'per epoch':>9} {'before kill':>11} {'after':>6} {'total':>6}")
    for k, s in enumerate(sources):
        b = sum(source_of(i) == k for i in before)
        a = sum(source_of(i) == k for i in after)
        counts.append({"name": s["name"], "per_epoch": s["per_epoch"], "before": b, "after": a})
        print(f"{s['name']:<8} {s['per_epoch']:>9} {b:>11} {a:>6} {a + b:>6}")
    # The epoch's samples, each as often as the epoch takes it: the
    # uninterrupted order, from a loader of the killed run's sizes.
    full = make_loader(out_dir, args.epoch_size, args.batch_size)
    epoch = [i for batch in full for i in batch[2].tolist()]
    exact = sorted(before + after) == sorted(epoch)
    print(f"\ntrained before and after the kill: the epoch, each sample as often as the epoch takes it: {exact}")
    print("RESULT " + json.dumps({"killed": killed, "steps_before_kill": steps, "before": len(before),
                                  "after": len(after), "exact": exact, "sources": counts}))


if __name__ == "__main__":
    main()
