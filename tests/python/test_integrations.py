"""Composer and Lightning integrations (ffcv_go.integrations), with real trainers.

Each framework's tests are skipped when it is not importable. The data is a
small synthetic image set whose class is visible in the channel means, so a
tiny CNN learns it within a few batches; every sample also carries its id, so
the tests can check that the batches the trainers saw are exactly the ones
ffcv_go's loader produces (RANDOM = numpy default_rng(seed + epoch).permutation).
"""
import math
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from conftest import FnDataset, write

N_TRAIN, N_VAL, NUM_CLASSES, SIZE, BATCH = 200, 72, 4, 16, 32
SEED = 5
REPO = Path(__file__).resolve().parents[2]


def synthetic_sample(i, offset=0):
    rng = np.random.default_rng(i + offset)
    label = (i + offset) % NUM_CLASSES
    img = rng.integers(0, 96, (SIZE, SIZE, 3), dtype=np.uint8)
    # class k: channel k (k < 3) bright, class 3: all channels mid-grey.
    if label < 3:
        img[:, :, label] += 150
    else:
        img += 80
    return img, label, i


@pytest.fixture(scope="module")
def betons(tmp_path_factory):
    from ffcv_go.fields import RGBImageField, IntField
    d = tmp_path_factory.mktemp("integrations")
    fields = lambda: {"image": RGBImageField(write_mode="raw"), "label": IntField(), "index": IntField()}
    train = write(d / "train.beton", fields(), FnDataset(N_TRAIN, synthetic_sample))
    val = write(d / "val.beton", fields(), FnDataset(N_VAL, lambda i: synthetic_sample(i, 10_000)))
    return train, val


def pipelines():
    from ffcv_go.fields.decoders import SimpleRGBImageDecoder, IntDecoder
    from ffcv_go.transforms import ToTensor, ToTorchImage, NormalizeImage, Squeeze
    return {
        "image": [SimpleRGBImageDecoder(), ToTensor(), ToTorchImage(),
                  NormalizeImage(np.array([110.0] * 3), np.array([60.0] * 3), np.float32)],
        "label": [IntDecoder(), ToTensor(), Squeeze(1)],
        "index": [IntDecoder(), ToTensor(), Squeeze(1)],
    }


def tiny_net():
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(8, NUM_CLASSES))


def random_order(epoch, n=N_TRAIN, seed=SEED):
    return np.random.default_rng(seed + epoch).permutation(n)


def check_batch(batch, n=BATCH):
    image, label, index = batch
    assert image.shape == (n, 3, SIZE, SIZE) and image.dtype == torch.float32
    assert label.shape == (n,) and label.dtype == torch.int64
    assert index.shape == (n,) and index.dtype == torch.int64
    # Labels are what the writer stored for those sample ids.
    assert torch.equal(label, index % NUM_CLASSES)


# ---- import hygiene ----------------------------------------------------------------

def test_integrations_import_needs_no_framework():
    code = ("import sys, ffcv_go.integrations as i; "
            "from ffcv_go.integrations import build_loader, samples_per_rank; "
            "bad = [m for m in ('composer', 'lightning', 'pytorch_lightning') if m in sys.modules]; "
            "assert not bad, bad; print('ok')")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO / "python"), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr


def test_samples_per_rank_and_sharding(betons, monkeypatch):
    from ffcv_go.integrations import build_loader, samples_per_rank
    train, _ = betons
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    single = build_loader(train, BATCH, pipelines=pipelines(), num_workers=1, seed=SEED)
    assert not single.distributed and samples_per_rank(single) == (N_TRAIN // BATCH) * BATCH
    shards = []
    for rank in range(3):
        loader = build_loader(train, 16, rank=rank, world_size=3, train=False, pipelines=pipelines(), num_workers=1)
        assert loader.distributed and (loader.rank, loader.world_size) == (rank, 3)
        assert "RANK" not in os.environ and "WORLD_SIZE" not in os.environ  # restored
        ids = np.concatenate([b[2].numpy() for b in loader])
        assert len(ids) == samples_per_rank(loader) == math.ceil(N_TRAIN / 3)
        shards.append(ids)
    # DistributedSampler(shuffle=False): rank r takes positions r, r+3, ... of the padded list.
    padded = np.concatenate([np.arange(N_TRAIN), np.arange(3 * 67 - N_TRAIN)])
    for rank in range(3):
        assert np.array_equal(shards[rank], padded[rank::3])


# ---- Composer -------------------------------------------------------------------------

def _composer_model():
    from composer.models import ComposerModel
    from torchmetrics.classification import MulticlassAccuracy

    class Model(ComposerModel):
        def __init__(self):
            super().__init__()
            self.net = tiny_net()
            self.train_ids, self.eval_ids = [], []

        def forward(self, batch):
            check_batch(batch, len(batch[0]))
            (self.train_ids if self.training else self.eval_ids).append(batch[2].clone())
            return self.net(batch[0])

        def loss(self, outputs, batch):
            loss = F.cross_entropy(outputs, batch[1])
            assert torch.isfinite(loss)
            return loss

        def eval_forward(self, batch, outputs=None):
            return outputs if outputs is not None else self.forward(batch)

        def get_metrics(self, is_train=False):
            return {} if is_train else {"MulticlassAccuracy": MulticlassAccuracy(num_classes=NUM_CLASSES,
                                                                                 average="micro")}

        def update_metric(self, batch, outputs, metric):
            metric.update(outputs.argmax(1), batch[1])

    return Model()


def test_composer_trainer_with_dataspec(betons, monkeypatch):
    pytest.importorskip("composer")
    from composer import Trainer
    from ffcv_go import Loader
    from ffcv_go.integrations.composer import to_dataspec, build_train_loader, build_eval_loader
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    train, val = betons

    train_loader = build_train_loader(train, BATCH, pipelines=pipelines(), num_workers=2, seed=SEED)
    eval_loader = build_eval_loader(val, BATCH, pipelines=pipelines(), num_workers=2)
    assert isinstance(train_loader, Loader) and not train_loader.distributed
    train_spec, eval_spec = to_dataspec(train_loader), to_dataspec(eval_loader, tokens_per_sample=3)
    per_epoch = (N_TRAIN // BATCH) * BATCH
    assert train_spec.num_samples == per_epoch and eval_spec.num_samples == N_VAL
    assert eval_spec.num_tokens == 3 * N_VAL
    first = next(iter(eval_loader))  # epoch 0 of the SEQUENTIAL eval loader: ids 0..31
    assert eval_spec.get_num_samples_in_batch(first) == BATCH
    assert eval_spec.get_num_tokens_in_batch(first) == 3 * BATCH

    model = _composer_model()
    trainer = Trainer(model=model, train_dataloader=train_spec, eval_dataloader=eval_spec, max_duration="3ep",
                      optimizers=torch.optim.Adam(model.parameters(), lr=0.05), device="cpu",
                      progress_bar=False, log_to_console=False, loggers=[], seed=0)
    trainer.fit()

    batches = N_TRAIN // BATCH
    ts = trainer.state.timestamp
    assert int(ts.epoch) == 3 and int(ts.batch) == 3 * batches and int(ts.sample) == 3 * per_epoch
    assert trainer.state.train_dataloader is train_loader
    # Every training batch came from the loader, epoch by epoch in its RANDOM order.
    assert len(model.train_ids) == 3 * batches
    for epoch in range(3):
        got = torch.cat(model.train_ids[epoch * batches:(epoch + 1) * batches]).numpy()
        assert np.array_equal(got, random_order(epoch)[:per_epoch]), f"epoch {epoch}"
    # Evaluation ran on every val sample, in order, after each epoch.
    eval_ids = torch.cat(model.eval_ids).numpy()
    assert len(eval_ids) % N_VAL == 0 and len(eval_ids) >= N_VAL
    assert np.array_equal(eval_ids[-N_VAL:], np.arange(N_VAL))
    acc = float(trainer.state.eval_metrics["eval"]["MulticlassAccuracy"].compute())
    print(f"composer eval accuracy after 3 epochs: {acc:.3f}")
    # 4 balanced classes (chance 0.25), separable by channel means: 18 steps of Adam learn them.
    assert acc > 0.6, acc


def test_composer_loaders_take_rank_from_composer_dist(betons, monkeypatch):
    pytest.importorskip("composer")
    from ffcv_go.integrations.composer import to_dataspec, build_train_loader
    train, _ = betons
    monkeypatch.setenv("WORLD_SIZE", "2")
    ids = []
    for rank in range(2):
        monkeypatch.setenv("RANK", str(rank))
        loader = build_train_loader(train, BATCH, pipelines=pipelines(), num_workers=1)
        assert loader.distributed and (loader.rank, loader.world_size) == (rank, 2) and loader.seed == 0
        spec = to_dataspec(loader)
        # 100 samples per rank -> 3 whole batches of 32 each, on 2 ranks.
        assert len(loader) == 3 and spec.num_samples == 2 * 3 * BATCH
        ids.append(np.concatenate([b[2].numpy() for b in loader]))
    assert not set(ids[0]) & set(ids[1])  # the ranks' shares of one permutation are disjoint


# ---- Lightning --------------------------------------------------------------------------

def _lightning():
    try:
        import lightning.pytorch as pl
    except ImportError:
        pl = pytest.importorskip("pytorch_lightning")
    return pl


def _lightning_module(pl, batch_size=BATCH):
    class Lit(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = tiny_net()
            self.train_ids, self.val_ids, self.losses = [], [], []

        def training_step(self, batch, batch_idx):
            check_batch(batch, batch_size)
            self.train_ids.append(batch[2].clone())
            loss = F.cross_entropy(self.net(batch[0]), batch[1])
            self.losses.append(loss.item())
            return loss

        def validation_step(self, batch, batch_idx):
            check_batch(batch, len(batch[0]))
            self.val_ids.append(batch[2].clone())
            return F.cross_entropy(self.net(batch[0]), batch[1])

        def configure_optimizers(self):
            return torch.optim.Adam(self.parameters(), lr=0.05)

    return Lit()


def _trainer_kwargs():
    return dict(accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                enable_progress_bar=False, enable_model_summary=False, use_distributed_sampler=False)


def test_lightning_fast_dev_run_with_datamodule(betons):
    pl = _lightning()
    from ffcv_go import Loader
    from ffcv_go.integrations.lightning import FFCVDataModule
    train, val = betons
    dm = FFCVDataModule(train, val, batch_size=BATCH, train_pipelines=pipelines(), eval_pipelines=pipelines(),
                        seed=SEED, loader_kwargs={"num_workers": 2})
    model = _lightning_module(pl)
    trainer = pl.Trainer(fast_dev_run=True, **_trainer_kwargs())
    trainer.fit(model, datamodule=dm)
    # fast_dev_run: one training batch and one validation batch, straight from our loaders.
    assert len(model.train_ids) == 1 and len(model.val_ids) == 1
    assert isinstance(trainer.train_dataloader, Loader) and not trainer.train_dataloader.distributed
    assert np.array_equal(model.train_ids[0].numpy(), random_order(0)[:BATCH])
    assert np.array_equal(model.val_ids[0].numpy(), np.arange(BATCH))
    assert all(math.isfinite(x) for x in model.losses)


def test_lightning_two_epochs(betons):
    pl = _lightning()
    from ffcv_go import Loader
    from ffcv_go.integrations.lightning import FFCVDataModule
    train, val = betons
    dm = FFCVDataModule(train, val, batch_size=BATCH, train_pipelines=pipelines(), eval_pipelines=pipelines(),
                        seed=SEED, loader_kwargs={"num_workers": 2})
    model = _lightning_module(pl)
    trainer = pl.Trainer(max_epochs=2, num_sanity_val_steps=0, **_trainer_kwargs())
    trainer.fit(model, datamodule=dm)
    batches, per_epoch = N_TRAIN // BATCH, (N_TRAIN // BATCH) * BATCH
    assert isinstance(trainer.val_dataloaders, Loader)
    assert len(model.train_ids) == 2 * batches
    for epoch in range(2):
        got = torch.cat(model.train_ids[epoch * batches:(epoch + 1) * batches]).numpy()
        assert np.array_equal(got, random_order(epoch)[:per_epoch]), f"epoch {epoch}"
    val_ids = torch.cat(model.val_ids).numpy()
    assert np.array_equal(val_ids, np.tile(np.arange(N_VAL), 2))  # every val sample, each epoch
    assert np.mean(model.losses[-3:]) < np.mean(model.losses[:3])  # it learns


def test_lightning_ddp_checkpoint_resumes_on_fewer_devices(betons, tmp_path):
    """Lightning DDP on 2 CPU processes (gloo) checkpoints mid-epoch; a run on
    1 device resumes it: the rest of the epoch, each sample once, nothing
    trained before the checkpoint again."""
    pl = _lightning()
    import multiprocessing
    from lightning.pytorch.callbacks import ModelCheckpoint
    from lightning.pytorch.strategies import DDPStrategy
    from ffcv_go.integrations.lightning import FFCVDataModule
    import _lightning_ddp
    train, _ = betons

    def run(devices, **kw):
        dm = FFCVDataModule(train, batch_size=BATCH // 2, train_pipelines=pipelines(), seed=SEED,
                            loader_kwargs={"num_workers": 1})
        model = _lightning_ddp.IdRecorder(str(tmp_path), NUM_CLASSES)
        ckpt_path = kw.pop("ckpt_path", None)
        args = dict(_trainer_kwargs(), devices=devices, enable_checkpointing=bool(kw.get("callbacks")))
        if devices > 1:
            # forkserver: workers fork from a server that imported torch and
            # Lightning once, and load the Go library themselves.
            multiprocessing.set_forkserver_preload(["torch", "lightning.pytorch", "numpy"])
            args["strategy"] = DDPStrategy(start_method="forkserver", process_group_backend="gloo")
        pl.Trainer(max_epochs=1, **args, **kw).fit(model, datamodule=dm, ckpt_path=ckpt_path)
        return [np.load(tmp_path / f"ids_world{devices}_rank{r}.npy") for r in range(devices)]

    saved = run(2, callbacks=[ModelCheckpoint(dirpath=tmp_path, every_n_train_steps=2, save_top_k=-1)])
    ckpt = tmp_path / "epoch=0-step=2.ckpt"
    state = torch.load(ckpt, weights_only=False)["loops"]["fit_loop"]["state_dict"]["combined_loader"][0]
    assert (state["epoch"], state["batch"], state["world"]) == (0, 2, 2), state
    taken = np.concatenate([rows[rows[:, 0] < 2, 1] for rows in saved])
    assert len(taken) == 2 * 2 * (BATCH // 2) and len(set(taken.tolist())) == len(taken)
    # DDP's two ranks: torch's permutation (seed SEED + epoch 0), strided.
    g = torch.Generator()
    g.manual_seed(SEED)
    perm = torch.randperm(N_TRAIN, generator=g).numpy()
    assert set(taken.tolist()) == set(perm[:len(taken)].tolist())
    (rest,) = run(1, ckpt_path=str(ckpt))
    rest = rest[:, 1]
    left = N_TRAIN - len(taken)
    assert len(rest) == left // (BATCH // 2) * (BATCH // 2)  # drop_last: whole batches
    assert len(set(rest.tolist())) == len(rest) and not set(rest.tolist()) & set(taken.tolist())


def test_lightning_datamodule_shards_by_trainer_rank(betons):
    _lightning()
    from ffcv_go.integrations.lightning import FFCVDataModule
    train, val = betons
    ids = []
    for rank in range(2):
        dm = FFCVDataModule(train, val, batch_size=BATCH, train_pipelines=pipelines(), eval_pipelines=pipelines(),
                            loader_kwargs={"num_workers": 1})
        # What a DDP trainer exposes to its datamodule (the process group itself is not needed).
        dm.trainer = SimpleNamespace(global_rank=rank, world_size=2, current_epoch=1)
        loader = dm.train_dataloader()
        assert loader.distributed and (loader.rank, loader.world_size) == (rank, 2) and loader.seed == 0
        assert len(loader) == (N_TRAIN // 2) // BATCH
        assert loader.state_dict()["epoch"] == 1  # positioned at the trainer's epoch
        ids.append(np.concatenate([b[2].numpy() for b in loader]))
        val_loader = dm.val_dataloader()
        assert val_loader.distributed and not val_loader.drop_last and len(val_loader) == 2
        dm.teardown("fit")
    assert not set(ids[0]) & set(ids[1])
    # The ranks' shares of epoch 1 = DistributedSampler(shuffle=True, seed=0).set_epoch(1).
    g = torch.Generator()
    g.manual_seed(0 + 1)
    perm = torch.randperm(N_TRAIN, generator=g).numpy()
    for rank in range(2):
        assert np.array_equal(ids[rank], perm[rank::2][:len(ids[rank])])


def test_composer_resumes_mid_epoch_on_the_same_batches(betons, tmp_path, monkeypatch):
    """Composer resumes by spinning: one iter() per finished epoch, then skipping the
    batches already trained; each iter() of the Loader being its next epoch, the resumed
    run sees exactly the rest of the uninterrupted run's batches."""
    pytest.importorskip("composer")
    from composer import Trainer
    from ffcv_go.integrations.composer import to_dataspec, build_train_loader
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    train, _ = betons

    def run(**kw):
        model = _composer_model()
        spec = to_dataspec(build_train_loader(train, BATCH, pipelines=pipelines(), num_workers=1, seed=SEED))
        Trainer(model=model, train_dataloader=spec, max_duration="2ep", device="cpu", seed=0,
                optimizers=torch.optim.SGD(model.parameters(), lr=0.01), progress_bar=False,
                log_to_console=False, loggers=[], **kw).fit()
        return torch.cat(model.train_ids).numpy() if model.train_ids else np.zeros(0, dtype=np.int64)

    full = run(save_folder=str(tmp_path), save_interval="4ba", save_num_checkpoints_to_keep=-1)
    assert np.array_equal(full, np.concatenate([random_order(0)[:192], random_order(1)[:192]]))
    for name, done in (("ep0-ba4-rank0.pt", 4), ("ep1-ba8-rank0.pt", 8)):
        rest = run(load_path=str(tmp_path / name))
        assert np.array_equal(rest, full[done * BATCH:]), name


def test_composer_loader_state_callback_resumes_exactly_and_elastically(betons, tmp_path, monkeypatch):
    """With the LoaderState callback the checkpoint holds the Loader's state:
    a resumed run continues without spinning, exactly at the same batch size,
    and with the rest of the epoch, each sample once, at another one."""
    pytest.importorskip("composer")
    from composer import Trainer
    from ffcv_go.integrations.composer import to_dataspec, build_train_loader, LoaderState
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    train, _ = betons

    def run(batch_size=BATCH, **kw):
        model = _composer_model()
        spec = to_dataspec(build_train_loader(train, batch_size, pipelines=pipelines(), num_workers=1, seed=SEED))
        Trainer(model=model, train_dataloader=spec, max_duration="2ep", device="cpu", seed=0,
                optimizers=torch.optim.SGD(model.parameters(), lr=0.01), progress_bar=False,
                log_to_console=False, loggers=[], callbacks=[LoaderState()], **kw).fit()
        return torch.cat(model.train_ids).numpy() if model.train_ids else np.zeros(0, dtype=np.int64)

    full = run(save_folder=str(tmp_path), save_interval="4ba", save_num_checkpoints_to_keep=-1)
    ckpt = tmp_path / "ep0-ba4-rank0.pt"
    saved = torch.load(ckpt, weights_only=False)["state"]["callbacks"]["LoaderState"]["loader"]
    assert (saved["epoch"], saved["batch"]) == (0, 4)
    assert np.array_equal(run(load_path=str(ckpt)), full[4 * BATCH:])
    half = BATCH // 2
    rest = run(batch_size=half, load_path=str(ckpt))
    taken, left = full[:4 * BATCH], (N_TRAIN - 4 * BATCH) // half * half
    assert len(set(rest[:left].tolist())) == left and not set(rest[:left].tolist()) & set(taken.tolist())
    assert np.array_equal(rest[left:], random_order(1)[:N_TRAIN // half * half])


def test_lightning_resumes_from_step_checkpoints(betons, tmp_path):
    """Lightning saves the Loader's state_dict in its checkpoints; resuming from
    any of them trains on exactly the rest of the uninterrupted run's batches,
    also from the checkpoint taken after an epoch's last batch."""
    pl = _lightning()
    from lightning.pytorch.callbacks import ModelCheckpoint
    from ffcv_go.integrations.lightning import FFCVDataModule
    train, val = betons

    def run(batch_size=BATCH, **kw):
        dm = FFCVDataModule(train, val, batch_size=batch_size, train_pipelines=pipelines(),
                            eval_pipelines=pipelines(), seed=SEED, loader_kwargs={"num_workers": 1})
        model = _lightning_module(pl, batch_size)
        ckpt_path = kw.pop("ckpt_path", None)
        args = dict(_trainer_kwargs(), enable_checkpointing=bool(kw.get("callbacks")))
        pl.Trainer(max_epochs=2, num_sanity_val_steps=0, limit_val_batches=0, **args, **kw).fit(
            model, datamodule=dm, ckpt_path=ckpt_path)
        return torch.cat(model.train_ids).numpy() if model.train_ids else np.zeros(0, dtype=np.int64)

    full = run(callbacks=[ModelCheckpoint(dirpath=tmp_path, every_n_train_steps=3, save_top_k=-1)])
    assert len(full) == 12 * BATCH
    for name, done, saved in (("epoch=0-step=3.ckpt", 3, (0, 3)), ("epoch=0-step=6.ckpt", 6, (1, 0)),
                              ("epoch=1-step=9.ckpt", 9, (1, 3))):
        state = torch.load(tmp_path / name, weights_only=False)["loops"]["fit_loop"]["state_dict"]
        loader_state = state["combined_loader"][0]
        assert (loader_state["epoch"], loader_state["batch"]) == saved, loader_state
        rest = run(ckpt_path=str(tmp_path / name))
        assert np.array_equal(rest, full[done * BATCH:]), name
    # Elastic: the checkpoint holds what the run took of the epoch, so a run
    # with another batch size (as after a change of world size) trains on the
    # rest of epoch 0, each sample once, then on a whole epoch 1.
    state = torch.load(tmp_path / "epoch=0-step=3.ckpt", weights_only=False)
    assert state["loops"]["fit_loop"]["state_dict"]["combined_loader"][0]["elastic"]["stages"][0]["batches"] == 3
    half = BATCH // 2
    rest = run(batch_size=half, ckpt_path=str(tmp_path / "epoch=0-step=3.ckpt"))
    taken, left = full[:3 * BATCH], (N_TRAIN - 3 * BATCH) // half * half  # drop_last: whole batches
    assert len(rest) == left + N_TRAIN // half * half
    assert len(set(rest[:left].tolist())) == left and not set(rest[:left].tolist()) & set(taken.tolist())
    assert np.array_equal(rest[left:], random_order(1)[:N_TRAIN // half * half])
