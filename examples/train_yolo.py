"""YOLOv8n trained by Ultralytics on an ffcv_go loader: its DetectionTrainer
reads .beton files through ffcv_go.integrations.ultralytics.

The data are scenes of coloured rectangles pasted over real photos
(bench/scenes.py; Debian's wallpapers, noise without them), written as a
YOLO dataset and converted with YoloDataset. The model starts from its
YAML (no downloaded weights), on the CPU by default. Prints mAP50 of the
untrained and the trained model, both from Ultralytics' own validation on
the original images (and from the trainer's on the .beton), and the
training time per epoch against Ultralytics' own loader on the same run.
Runs offline (YOLO_OFFLINE=1, see docs/guides/yolo.md). Needs Ultralytics:
run it with build/ultralytics-venv/bin/python (make ultralytics-venv).

    PYTHONPATH=python build/ultralytics-venv/bin/python examples/train_yolo.py
    ... examples/train_yolo.py --epochs 30 --train 1024 --imgsz 256 --device cuda
"""
import argparse
import json
import os
import sys
import tempfile
import time

os.environ.setdefault("YOLO_OFFLINE", "1")
os.environ.setdefault("YOLO_AUTOINSTALL", "False")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
import make_dataset  # noqa: E402
import scenes  # noqa: E402


def epoch_timer(times):
    """Callbacks that record each training epoch's seconds (validation excluded)."""
    state = {}

    def start(trainer):
        state["t"] = time.perf_counter()

    def end(trainer):
        times.append(time.perf_counter() - state["t"])
    return {"on_train_epoch_start": start, "on_train_epoch_end": end}


def train(data, args, trainer, times, name):
    from ultralytics import YOLO
    model = YOLO("yolov8n.yaml")
    for event, fn in epoch_timer(times).items():
        model.add_callback(event, fn)
    model.train(trainer=trainer, data=data, epochs=args.epochs, imgsz=args.imgsz, batch=args.batch,
                workers=args.workers, device=args.device, amp=False, plots=False, seed=0, deterministic=False,
                warmup_epochs=min(3, max(1, args.epochs // 5)), close_mosaic=0, project=args.runs, name=name,
                exist_ok=True, verbose=False)
    return model


def map50(model, data, args, validator=None):
    m = model.val(data=data, imgsz=args.imgsz, batch=args.batch, device=args.device, plots=False, verbose=False,
                  project=args.runs, name="val", exist_ok=True, validator=validator)
    return float(m.box.map50)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--train", type=int, default=256, help="training scenes")
    p.add_argument("--val", type=int, default=64, help="validation scenes")
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--imgsz", type=int, default=160)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--device", default="cpu")
    p.add_argument("--skip-theirs", action="store_true", help="do not train with Ultralytics' own loader")
    p.add_argument("--dir", help="where the data and runs go (default: a temporary folder)")
    args = p.parse_args(argv)

    import ultralytics
    ultralytics.settings.update(sync=False, raytune=False, tensorboard=False, mlflow=False, clearml=False,
                                comet=False, dvc=False, wandb=False)
    from ultralytics import YOLO
    from ultralytics.models.yolo.detect import DetectionTrainer, DetectionValidator
    from ffcv_go import DatasetWriter
    from ffcv_go.detection import YoloDataset
    from ffcv_go.integrations.ultralytics import beton_trainer, beton_validator, write_data_yaml

    root = args.dir or tempfile.mkdtemp(prefix="train_yolo-")
    args.runs = os.path.join(root, "runs")
    photos = make_dataset.find_photos()
    images = scenes.write_yolo(os.path.join(root, "yolo"), {"train": range(args.train),
                                                            "val": range(10**6, 10**6 + args.val)}, photos)
    for split in ("train", "val"):
        ds = YoloDataset(images, split=split)
        DatasetWriter(os.path.join(root, f"{split}.beton"), ds.fields(), progress=False).from_indexed_dataset(ds)
    betons = write_data_yaml(os.path.join(root, "beton.yaml"), "train.beton", "val.beton", names=ds.names)

    before = map50(YOLO("yolov8n.yaml"), images, args)
    ours_times, theirs_times = [], []
    ours = train(betons, args, beton_trainer(DetectionTrainer), ours_times, "ours")
    result = {"mAP50_untrained": before, "mAP50_trained": map50(ours, images, args),
              "mAP50_trained_on_beton_val": map50(ours, betons, args, beton_validator(DetectionValidator)),
              "epochs": args.epochs, "imgsz": args.imgsz, "train_images": args.train,
              "s_per_epoch_ours": sum(ours_times[1:]) / max(1, len(ours_times) - 1)}
    if not args.skip_theirs:
        theirs = train(images, args, None, theirs_times, "theirs")
        result["s_per_epoch_ultralytics"] = sum(theirs_times[1:]) / max(1, len(theirs_times) - 1)
        result["mAP50_trained_ultralytics_loader"] = map50(theirs, images, args)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
