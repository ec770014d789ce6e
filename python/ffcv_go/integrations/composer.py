"""MosaicML Composer integration: ffcv_go Loaders as Composer ``DataSpec``s.

    from ffcv_go.integrations.composer import build_train_loader, build_eval_loader, to_dataspec

    train = to_dataspec(build_train_loader("train.beton", 256, pipelines=train_pipelines))
    val = to_dataspec(build_eval_loader("val.beton", 256, pipelines=val_pipelines))
    trainer = composer.Trainer(model=model, train_dataloader=train, eval_dataloader=val,
                               max_duration="16ep", ...)

Needs torch >= 2.0, as Composer does (ffcv_go itself runs on torch 1.13):
importing this module with an older torch raises ImportError saying so.

How it fits Composer:

- ``DataSpec.num_samples`` is the number of samples of one epoch across all
  ranks (this rank's share, see ``samples_per_rank``, times the world size);
  ``get_num_samples_in_batch`` is the first dimension of the batch's first
  tensor. ``num_tokens`` / ``get_num_tokens_in_batch`` are derived from
  ``tokens_per_sample`` when given (else Composer counts no tokens).
- Every ``iter(loader)`` starts the loader's next epoch, which is what
  Composer's epoch loop and its resumption "spinning" (one ``iter()`` per
  finished epoch, then skipping the batches already trained) expect, so a
  run resumed from a checkpoint sees the same orders as an uninterrupted one.
- Composer checks for a ``DistributedSampler`` only on torch ``DataLoader``s;
  ffcv_go shards itself (``distributed=True``). ``build_*_loader`` take rank
  and world size from ``composer.utils.dist`` and turn ``distributed`` on
  when the world size is above 1 (with seed 0 by default so ranks agree).
  With ``drop_last=False`` and several ranks, the last batches are padded
  with repeated samples as by DistributedSampler; Composer only removes such
  duplicates from metrics for DataLoaders, so evaluation metrics over an
  uneven split count the few repeated samples.
- Put ``ToDevice`` in the pipelines to have batches arrive on the GPU; Composer's
  own device move is then a no-op.
- Composer's algorithms see our batches as a DataLoader's: ProgressiveResizing
  rescales the images (batch item 0) after loading, LabelSmoothing the targets
  (item 1) before the loss; extra outputs (e.g. an index field) ride along.
  Decode at the full training resolution and let ProgressiveResizing shrink it:
  one Loader then serves the whole run and checkpoints resume on the same batches.
- Resumption: add ``LoaderState()`` to the Trainer's callbacks (saving and
  resuming runs) to keep the loader's ``state_dict`` in the checkpoints; a
  resumed run then continues the epoch where it stopped, also at another
  world size or batch size (elastic resume: see the documentation's guide). Without it
  Composer spins the loader, which is exact only at the saving run's sizes.
  Composer stops all ranks together when one runs out of batches, so the
  uneven last step of an elastic resume with ``drop_last=False`` cannot
  hang; the ranks' extra batch of that step is then not trained.
- One process per GPU (``composer -n 8``): with ``num_workers`` at its default
  each process's loader takes cores // LOCAL_WORLD_SIZE threads, at least 1.
"""
from ._common import require_torch

require_torch("Composer", "2.0")

from composer.core import Callback, DataSpec
from composer.utils import dist

from ..loader import Loader
from ._common import build_loader, samples_per_rank, batch_size_of

__all__ = ["to_dataspec", "ffcv_dataspec", "build_train_loader", "build_eval_loader", "build_loader", "LoaderState"]


class LoaderState(Callback):
    """Keeps the training Loader's position in Composer checkpoints.

    Composer checkpoints the position of torch DataLoaders only; without
    this callback it resumes an ffcv_go Loader by "spinning" (one ``iter()``
    per finished epoch, then decoding and discarding the batches already
    trained), which is exact at the saving run's world size and batch size
    only. With it, the checkpoint holds ``loader.state_dict()`` and a resumed
    run's Loader continues from it (``load_state_dict``) without spinning:
    nothing is decoded twice, and at another world size or batch size the
    rest of the epoch is split over the new ranks, each remaining sample
    once (elastic resume). Pass it to the saving and the resuming Trainer::

        Trainer(..., callbacks=[LoaderState()], load_path=...)
    """

    def __init__(self):
        self._state = None
        self._pending = None

    def _loader(self):
        dl = None if self._state is None else self._state.train_dataloader
        if isinstance(dl, DataSpec):
            dl = dl.dataloader
        return dl if isinstance(dl, Loader) else None

    def init(self, state, logger):
        """Keeps Composer's training state, to find the train loader later."""
        self._state = state

    def fit_start(self, state, logger):
        """Hands a checkpoint's loader state to the train Loader, and tells
        Composer the loader is positioned (no spinning)."""
        self._state = state
        loader = self._loader()
        if self._pending is not None and loader is not None:
            loader.load_state_dict(self._pending)
            # The loader is positioned: Composer must not spin it forward too.
            state.dataset_resumption["train"] = True
        self._pending = None

    def state_dict(self):
        """``{"loader": the train Loader's state_dict()}`` (None without one),
        saved in Composer's checkpoints."""
        loader = self._loader()
        return {"loader": None if loader is None else loader.state_dict()}

    def load_state_dict(self, state):
        """Takes the saved loader state; it is applied at fit start, once
        the train Loader exists."""
        self._pending = state.get("loader")


def to_dataspec(loader, *, num_samples=None, tokens_per_sample=None, num_tokens=None,
                get_num_samples_in_batch=None, get_num_tokens_in_batch=None, **dataspec_kwargs):
    """A composer.core.DataSpec over an ffcv_go Loader.

    num_samples: samples per epoch across all ranks (default: computed from
    the loader). tokens_per_sample: fixed tokens per sample, which gives
    num_tokens and get_num_tokens_in_batch. Other keyword arguments
    (batch_transforms, microbatch_transforms, split_batch, ...) go to DataSpec.
    """
    world = loader.world_size if getattr(loader, "distributed", False) else 1
    if num_samples is None:
        num_samples = samples_per_rank(loader) * world
    if get_num_samples_in_batch is None:
        get_num_samples_in_batch = batch_size_of
    if tokens_per_sample is not None:
        tokens_per_sample = int(tokens_per_sample)
        if num_tokens is None:
            num_tokens = num_samples * tokens_per_sample
        if get_num_tokens_in_batch is None:
            def get_num_tokens_in_batch(batch):
                return batch_size_of(batch) * tokens_per_sample
    return DataSpec(loader, num_samples=num_samples, num_tokens=num_tokens,
                    get_num_samples_in_batch=get_num_samples_in_batch,
                    get_num_tokens_in_batch=get_num_tokens_in_batch, **dataspec_kwargs)


ffcv_dataspec = to_dataspec


def _dist_kwargs(kwargs):
    kwargs.setdefault("rank", dist.get_global_rank())
    kwargs.setdefault("world_size", dist.get_world_size())
    return kwargs


def build_train_loader(path, batch_size, pipelines=None, **kwargs):
    """A training Loader for this Composer rank: RANDOM order, drop_last, sharded
    over composer.utils.dist's world (distributed=True when it has more than one
    rank). batch_size is per rank. Keyword arguments as for
    ffcv_go.integrations.build_loader / ffcv_go.Loader."""
    return build_loader(path, batch_size, train=True, pipelines=pipelines, **_dist_kwargs(kwargs))


def build_eval_loader(path, batch_size, pipelines=None, **kwargs):
    """An evaluation Loader for this Composer rank: SEQUENTIAL, every sample
    (drop_last=False), sharded like build_train_loader."""
    return build_loader(path, batch_size, train=False, pipelines=pipelines, **_dist_kwargs(kwargs))
