"""Lightning integration: a LightningDataModule serving ffcv_go Loaders.

    from ffcv_go.integrations.lightning import FFCVDataModule

    dm = FFCVDataModule("train.beton", "val.beton", batch_size=256,
                        train_pipelines={"image": [...], "label": [...]},
                        eval_pipelines={"image": [...], "label": [...]},
                        loader_kwargs={"num_workers": 8})
    lightning.Trainer(max_epochs=16, strategy="ddp", devices=8).fit(model, datamodule=dm)

It needs only what ``LightningDataModule`` offers, so it runs on whatever
torch the installed Lightning release accepts (Lightning declares its own
floor; recent releases need torch 2.x). ffcv_go itself runs on torch 1.13.

Behaviour:

- ``train_dataloader`` / ``val_dataloader`` / ``test_dataloader`` /
  ``predict_dataloader`` return ffcv_go Loaders (RANDOM + drop_last for
  training, SEQUENTIAL over every sample otherwise). ``batch_size`` is per
  process. They are ``LazyEpochLoader``s, a Loader subclass whose epoch
  starts at the first ``next()`` rather than at ``iter()``: Lightning calls
  ``iter()`` once on every non-DataLoader just to check it is iterable, which
  with a plain Loader would skip epoch 0 (and decode batches nobody reads).
- Sharding: when attached to a trainer the rank and world size come from
  ``trainer.global_rank`` / ``trainer.world_size``, and ``distributed``
  (default None) turns on when the world size is above 1; ranks then share
  one RANDOM permutation per epoch (seed 0 unless given) and take
  DistributedSampler's strided shares of it.
- No DistributedSampler: Lightning injects one only into torch
  ``DataLoader`` objects, which these are not, so the loaders reach the loops
  untouched whatever ``Trainer(use_distributed_sampler=...)`` says (passing
  ``use_distributed_sampler=False`` is harmless and documents the intent).
  For the same reason Lightning has no sampler to ``set_epoch``: each
  ``iter()`` of an ffcv_go Loader starts its next epoch by itself.
- Resumption: ffcv_go Loaders have ``state_dict`` / ``load_state_dict``, so
  Lightning stores the training loader's position in its checkpoints and
  restores it, mid-epoch too: a run resumed from any ``ModelCheckpoint``
  (every_n_train_steps included) trains on exactly the batches the
  uninterrupted run would have. The state also records what the run took
  of the epoch, so a run resumed with another number of devices (or batch
  size) trains on the rest of that epoch, each remaining sample once over
  its ranks (elastic resume: see the documentation's guide), then on normal epochs. A state taken after an epoch's last batch
  resumes at the next epoch (``LazyEpochLoader.load_state_dict``), as
  Lightning does not iterate the finished epoch again. The training loader is also positioned at
  ``trainer.current_epoch`` when built, so
  ``reload_dataloaders_every_n_epochs`` does not replay epoch 0's order.
- Batches are tuples of tensors in the file's field order; add ``ToDevice``
  to the pipelines to have them arrive on the GPU, or leave it to Lightning's
  ``transfer_batch_to_device``.
"""
try:
    from lightning.pytorch import LightningDataModule
except ImportError:  # the standalone package
    from pytorch_lightning import LightningDataModule

from ._common import build_loader, LazyEpochLoader

__all__ = ["FFCVDataModule"]


class FFCVDataModule(LightningDataModule):
    """A LightningDataModule over .beton files.

    Args:
        train_path: the training .beton file (or shards, as Loader takes);
            None leaves train_dataloader undefined.
        val_path: the validation file; None: Lightning skips validation.
        test_path: the test file, or None.
        predict_path: the prediction file, or None.
        batch_size: per-process batch size.
        eval_batch_size: per-process batch size of validation, test and
            predict (default: batch_size).
        train_pipelines: pipelines dict for the training loader.
        eval_pipelines: pipelines dict for validation, test and predict.
        seed: order seed (None: random, or 0 when distributed).
        distributed: None (auto: world size > 1), True or False.
        loader_kwargs: extra ffcv_go.Loader arguments for every loader
            (num_workers, os_cache, order, drop_last, indices, ...).
        train_loader_kwargs: Loader arguments for the training loader only,
            over loader_kwargs.
        eval_loader_kwargs: Loader arguments for the other loaders only,
            over loader_kwargs.
    """

    def __init__(self, train_path=None, val_path=None, test_path=None, predict_path=None, batch_size=256, *,
                 eval_batch_size=None, train_pipelines=None, eval_pipelines=None, seed=None, distributed=None,
                 loader_kwargs=None, train_loader_kwargs=None, eval_loader_kwargs=None):
        super().__init__()
        self.paths = {"train": train_path, "val": val_path, "test": test_path, "predict": predict_path}
        self.batch_size = int(batch_size)
        self.eval_batch_size = int(eval_batch_size or batch_size)
        self.train_pipelines = train_pipelines
        self.eval_pipelines = eval_pipelines
        self.seed = seed
        self.distributed = distributed
        self.loader_kwargs = dict(loader_kwargs or {})
        self.train_loader_kwargs = dict(train_loader_kwargs or {})
        self.eval_loader_kwargs = dict(eval_loader_kwargs or {})
        self.loaders = {}  # kind -> the last Loader built for it
        # Lightning calls the *_dataloader hooks only when they are overridden:
        # hide the ones without a file.
        for kind, path in self.paths.items():
            if path is None:
                setattr(self, f"{kind}_dataloader", None)

    def rank_and_world(self):
        """(global rank, world size) of the attached trainer, (0, 1) without one."""
        trainer = getattr(self, "trainer", None)
        if trainer is None:
            return 0, 1
        return int(trainer.global_rank), int(trainer.world_size)

    def _build(self, kind):
        path = self.paths[kind]
        if path is None:
            raise ValueError(f"FFCVDataModule has no {kind}_path")
        train = kind == "train"
        rank, world = self.rank_and_world()
        kwargs = dict(self.loader_kwargs)
        kwargs.update(self.train_loader_kwargs if train else self.eval_loader_kwargs)
        old = self.loaders.pop(kind, None)
        if old is not None:
            old.close()
        loader = build_loader(path, self.batch_size if train else self.eval_batch_size, rank=rank, world_size=world,
                              distributed=self.distributed, train=train,
                              pipelines=self.train_pipelines if train else self.eval_pipelines,
                              seed=self.seed, loader_cls=LazyEpochLoader, **kwargs)
        trainer = getattr(self, "trainer", None)
        if train and trainer is not None and trainer.current_epoch:
            loader.load_state_dict({"epoch": int(trainer.current_epoch), "batch": 0, "seed": loader.seed})
        self.loaders[kind] = loader
        return loader

    def train_dataloader(self):
        """A new Loader over train_path for this rank (by default RANDOM order and drop_last; positioned at the trainer's current epoch); the one
        built before for it is closed."""
        return self._build("train")

    def val_dataloader(self):
        """A new Loader over val_path for this rank (by default SEQUENTIAL, every sample); the one
        built before for it is closed."""
        return self._build("val")

    def test_dataloader(self):
        """A new Loader over test_path for this rank (by default SEQUENTIAL, every sample); the one
        built before for it is closed."""
        return self._build("test")

    def predict_dataloader(self):
        """A new Loader over predict_path for this rank (by default SEQUENTIAL, every sample); the one
        built before for it is closed."""
        return self._build("predict")

    def teardown(self, stage=None):
        """Closes the loaders this module built."""
        # Loaders already handed to Lightning stay usable until it drops them;
        # close() only stops their background work early.
        for loader in self.loaders.values():
            loader.close()
        self.loaders.clear()
