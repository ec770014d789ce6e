"""MosaicML's "Composer + FFCV" recipe on ffcv_go batches, on the CPU.

A tiny ResNet (torchvision's BasicBlocks) trains through composer.Trainer on ffcv_go DataSpecs
(real photos: random crops of Debian's wallpapers, see
examples/make_tiny_imagefolder.py) with ProgressiveResizing, BlurPool,
LabelSmoothing and ChannelsLast. The tests check that the algorithms act on
our batches (the model sees exactly the loader's pixels, rescaled on the
schedule; the loss sees smoothed targets; the model is blurpooled and
channels_last) and that Composer's own checkpoints, resumed mid-epoch, give
the uninterrupted run's batches: same samples, same pixels at the same scale,
same smoothed targets, same losses.
"""
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from conftest import FnDataset, write

pytest.importorskip("composer")

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "examples"))

RES, BATCH, EPOCHS, SMOOTHING, NUM_CLASSES = 32, 8, 4, 0.1, 2
N_TRAIN, N_VAL = 40, 12
SEED = 3
STEPS = EPOCHS * (N_TRAIN // BATCH)  # 20


@pytest.fixture(scope="module")
def photo_betons(tmp_path_factory):
    """train (40) / val (12) .beton files of real photos: image (JPEG, <= 64 px), label, index."""
    from make_tiny_imagefolder import find_photos, make_tiny_imagefolder
    from torchvision.datasets import ImageFolder
    from ffcv_go.fields import RGBImageField, IntField
    if len(find_photos()) < 2:
        pytest.skip("no wallpapers in /usr/share/backgrounds or /usr/share/wallpapers "
                    "(mate-backgrounds / lomiri-wallpapers-*)")
    d = tmp_path_factory.mktemp("composer_photos")
    out = []
    for name, per_class, seed in (("train", N_TRAIN // 2, 0), ("val", N_VAL // 2, 1)):
        folder = ImageFolder(str(make_tiny_imagefolder(d / name, NUM_CLASSES, per_class, seed=seed)))
        fields = {"image": RGBImageField(write_mode="jpg", max_resolution=64), "label": IntField(),
                  "index": IntField()}
        out.append(write(d / f"{name}.beton", fields, FnDataset(len(folder), lambda i, f=folder: (*f[i], i))))
    return tuple(out)


def train_pipelines():
    from ffcv_go.fields.decoders import RandomResizedCropRGBImageDecoder, IntDecoder
    from ffcv_go.transforms import RandomHorizontalFlip, ToTensor, ToTorchImage, NormalizeImage, Squeeze
    return {"image": [RandomResizedCropRGBImageDecoder((RES, RES)), RandomHorizontalFlip(), ToTensor(),
                      ToTorchImage(), NormalizeImage(np.array([124.0, 116.0, 104.0]), np.array([58.0, 57.0, 57.0]),
                                                     np.float32)],
            "label": [IntDecoder(), ToTensor(), Squeeze(1)],
            "index": [IntDecoder(), ToTensor(), Squeeze(1)]}


def eval_pipelines():
    from ffcv_go.fields.decoders import CenterCropRGBImageDecoder
    p = train_pipelines()
    p["image"] = [CenterCropRGBImageDecoder((RES, RES), ratio=224 / 256)] + p["image"][2:]
    return p


def tiny_resnet():
    """A ResNet of torchvision's BasicBlocks, 16 and 32 channels wide: stem, max-pool, a
    block, a strided block (both strided layers get BlurPool's filters), pool, linear."""
    from torchvision.models.resnet import BasicBlock
    torch.manual_seed(0)
    down = nn.Sequential(nn.Conv2d(16, 32, 1, stride=2, bias=False), nn.BatchNorm2d(32))
    return nn.Sequential(nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(inplace=True),
                         nn.MaxPool2d(3, stride=2, padding=1), BasicBlock(16, 16),
                         BasicBlock(16, 32, stride=2, downsample=down), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(32, NUM_CLASSES))


def composer_model():
    from composer.models import ComposerModel
    from torchmetrics.classification import MulticlassAccuracy

    class Model(ComposerModel):
        """Records what each training step's forward and loss receive."""

        def __init__(self):
            super().__init__()
            self.net = tiny_resnet()
            self.seen, self.targets, self.losses, self.eval_shapes = [], [], [], []

        def forward(self, batch):
            images, labels, index = batch
            if self.training:
                self.seen.append((images.detach().clone(), labels.clone(), index.clone()))
            else:
                self.eval_shapes.append(tuple(images.shape))
            return self.net(images)

        def loss(self, outputs, batch):
            self.targets.append(batch[1].detach().clone())
            loss = F.cross_entropy(outputs, batch[1])
            self.losses.append(float(loss))
            return loss

        def eval_forward(self, batch, outputs=None):
            return outputs if outputs is not None else self.forward(batch)

        def get_metrics(self, is_train=False):
            return {} if is_train else {"MulticlassAccuracy": MulticlassAccuracy(num_classes=NUM_CLASSES,
                                                                                 average="micro")}

        def update_metric(self, batch, outputs, metric):
            metric.update(outputs.argmax(1), batch[1])

    return Model()


def algorithms():
    from composer.algorithms import ProgressiveResizing, BlurPool, LabelSmoothing, ChannelsLast
    return [ProgressiveResizing(mode="resize", initial_scale=0.5, delay_fraction=0.25, finetune_fraction=0.25,
                                size_increment=4),
            BlurPool(replace_convs=True, replace_maxpools=True, blur_first=True, min_channels=16),
            LabelSmoothing(smoothing=SMOOTHING),
            ChannelsLast()]


def build_specs(train, val):
    from ffcv_go.integrations.composer import to_dataspec, build_train_loader, build_eval_loader
    return (to_dataspec(build_train_loader(train, BATCH, pipelines=train_pipelines(), num_workers=2, seed=SEED)),
            to_dataspec(build_eval_loader(val, BATCH, pipelines=eval_pipelines(), num_workers=2)))


def fit(train, val, **kw):
    from composer import Trainer
    model = composer_model()
    train_spec, eval_spec = build_specs(train, val)
    trainer = Trainer(model=model, train_dataloader=train_spec, eval_dataloader=eval_spec,
                      max_duration=f"{STEPS}ba", algorithms=algorithms(), device="cpu", seed=0,
                      optimizers=torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9),
                      progress_bar=False, log_to_console=False, loggers=[], **kw)
    trainer.fit()
    trainer.close()
    return trainer, model


@pytest.fixture(scope="module")
def full_run(photo_betons, tmp_path_factory):
    import os
    for k in ("RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE"):
        assert k not in os.environ, f"{k} is set: these tests run as a single process"
    ckpt = tmp_path_factory.mktemp("composer_ckpt")
    trainer, model = fit(*photo_betons, save_folder=str(ckpt), save_interval="7ba", save_num_checkpoints_to_keep=-1)
    return trainer, model, ckpt


def test_algorithms_act_on_ffcv_go_batches(photo_betons, full_run):
    from composer.algorithms.blurpool import BlurConv2d, BlurMaxPool2d
    from ffcv_go.integrations.composer import build_train_loader
    trainer, model, _ = full_run
    assert int(trainer.state.timestamp.batch) == STEPS and len(model.seen) == STEPS == len(model.targets)

    # BlurPool and ChannelsLast changed the model (surgery at INIT).
    kinds = {type(m) for m in model.net.modules()}
    assert BlurConv2d in kinds and BlurMaxPool2d in kinds
    assert model.net[0].weight.is_contiguous(memory_format=torch.channels_last)

    # ProgressiveResizing: the model saw 16 px for the first quarter of training, then
    # growing sizes in steps of 4 px, then the full 32 px; never anything else.
    widths = [x.shape[-1] for x, _, _ in model.seen]
    assert all(x.shape[-2] == x.shape[-1] for x, _, _ in model.seen)
    assert widths[:STEPS // 4] == [RES // 2] * (STEPS // 4) and widths[-STEPS // 4:] == [RES] * (STEPS // 4)
    assert widths == sorted(widths) and len(set(widths)) >= 4 and all(w % 4 == 0 for w in widths)
    # ... of exactly our loader's pixels: the same loader built again, epoch by epoch, rescaled the
    # way ProgressiveResizing does (nearest, scale = width / 32).
    direct = build_train_loader(photo_betons[0], BATCH, pipelines=train_pipelines(), num_workers=1, seed=SEED)
    step = 0
    for _ in range(EPOCHS):
        for images, labels, index in direct:
            seen_x, seen_y, seen_i = model.seen[step]
            assert torch.equal(seen_i, index) and torch.equal(seen_y, labels), f"step {step}"
            want = F.interpolate(images, scale_factor=widths[step] / RES, mode="nearest")
            assert torch.equal(seen_x, want), f"step {step}: pixels differ from ffcv_go's batch"
            step += 1
    direct.close()
    assert step == STEPS

    # LabelSmoothing: the loss got one_hot * (1 - a) + a / C of the batch's labels, the forward the labels.
    for (_, labels, _), target in zip(model.seen, model.targets):
        assert target.dtype == torch.float32 and target.shape == (BATCH, NUM_CLASSES)
        want = F.one_hot(labels, NUM_CLASSES).float() * (1 - SMOOTHING) + SMOOTHING / NUM_CLASSES
        assert torch.allclose(target, want)

    # Evaluation: every val sample at full size after each epoch, untouched by the training algorithms.
    assert model.eval_shapes and all(s[1:] == (3, RES, RES) for s in model.eval_shapes)
    assert sum(s[0] for s in model.eval_shapes) == EPOCHS * N_VAL
    assert all(np.isfinite(model.losses))


@pytest.mark.parametrize("name, done", [("ep1-ba7-rank0.pt", 7), ("ep2-ba14-rank0.pt", 14)])
def test_checkpoint_resume_mid_epoch_replays_the_same_batches(photo_betons, full_run, name, done):
    """Resumed from Composer's checkpoint after step 7 (epoch 1, batch 2 of 5) or 14 (epoch 2, batch
    4 of 5, on the resizing ramp), the run trains on exactly the rest of the uninterrupted run's
    batches: same samples, pixels, sizes and smoothed targets, and the same losses."""
    _, full, ckpt = full_run
    assert (ckpt / name).is_file(), sorted(p.name for p in ckpt.iterdir())
    trainer, model = fit(*photo_betons, load_path=str(ckpt / name))
    assert int(trainer.state.timestamp.batch) == STEPS
    assert len(model.seen) == STEPS - done
    for k, ((x, y, i), (fx, fy, fi)) in enumerate(zip(model.seen, full.seen[done:])):
        assert torch.equal(i, fi) and torch.equal(y, fy), f"step {done + k}: other samples"
        assert x.shape == fx.shape and torch.equal(x, fx), f"step {done + k}: other pixels"
    for k, (t, ft) in enumerate(zip(model.targets, full.targets[done:])):
        assert torch.equal(t, ft), f"step {done + k}: other targets"
    # Restored weights and optimizer on the same inputs: the same losses.
    np.testing.assert_allclose(model.losses, full.losses[done:], rtol=1e-4, atol=1e-6)
