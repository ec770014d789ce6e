"""Framework-independent helpers of the integrations: building a Loader for a
given rank / world size, and counting the samples a loader yields."""
import contextlib
import copy
import math
import os

from ..loader import Loader, Mixture, OrderOption


def require_torch(framework, floor):
    """Raises ImportError, naming both versions, when the installed torch is
    older than floor ("2.0"): ffcv_go itself runs on torch 1.13, but some
    frameworks it integrates with need a newer one."""
    import re
    import torch
    have = tuple(int(x) for x in re.match(r"(\d+)\.(\d+)", torch.__version__).groups())
    if have < tuple(int(x) for x in floor.split(".")):
        raise ImportError(f"ffcv_go's {framework} integration needs torch >= {floor} ({framework}'s own floor); "
                          f"this is torch {torch.__version__}. ffcv_go itself works with torch >= 1.13.")


@contextlib.contextmanager
def _rank_env(rank, world_size):
    """While building a Loader: make it see (rank, world_size).

    ffcv_go.Loader (like FFCV's) has no rank/world arguments; with
    distributed=True it asks torch.distributed when that is initialised and
    otherwise reads the RANK / WORLD_SIZE environment variables. If the
    process group is up it must agree with (rank, world_size); if not, the
    two variables are set for the duration of the construction only.
    """
    import torch.distributed as td
    if td.is_available() and td.is_initialized():
        if (td.get_rank(), td.get_world_size()) != (rank, world_size):
            raise RuntimeError(f"rank/world size {rank}/{world_size} disagree with the initialised process group "
                               f"({td.get_rank()}/{td.get_world_size()})")
        yield
        return
    saved = {k: os.environ.get(k) for k in ("RANK", "WORLD_SIZE")}
    os.environ["RANK"], os.environ["WORLD_SIZE"] = str(rank), str(world_size)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


class LazyEpochLoader(Loader):
    """A Loader whose ``iter()`` starts the epoch at the first ``next()``.

    A plain Loader starts its next epoch (and its background decoding) on
    every ``iter()``. Some frameworks call ``iter(dataloader)`` once just to
    check that it is iterable (Lightning's ``_check_dataloader_iterable``
    does, for anything that is not a torch DataLoader), which would silently
    skip epoch 0 and decode batches nobody reads. With this class such an
    unused iterator costs nothing and consumes no epoch. Everything else is
    the Loader's behaviour.
    """

    def __iter__(self):
        return _LazyEpoch(self)

    def load_state_dict(self, state):
        """As Loader's, except that a state at the end of an epoch (batch >=
        len) resumes at the start of the next one: a trainer restoring a
        checkpoint taken after an epoch's last batch moves on to the next
        epoch without iterating the (empty) rest of the old one."""
        state = dict(state)
        # (An elastic state, with what the run took of the epoch, says itself
        # when the epoch is over: its batches are not this loader's.)
        if "elastic" not in state and int(state.get("batch", 0)) >= len(self) > 0:
            state["epoch"], state["batch"] = int(state["epoch"]) + 1, 0
        super().load_state_dict(state)


class _LazyEpoch:
    def __init__(self, loader):
        self.loader, self.it = loader, None

    def __iter__(self):
        return self

    def __next__(self):
        if self.it is None:
            self.it = Loader.__iter__(self.loader)
        return next(self.it)

    def __len__(self):
        if self.it is not None:
            return len(self.it)
        return self.loader._next_epoch_length()

    def close(self):
        if self.it is not None:
            self.it.close()


def build_loader(path, batch_size, *, rank=0, world_size=1, distributed=None, train=True, pipelines=None,
                 order=None, seed=None, drop_last=None, loader_cls=Loader, **loader_kwargs):
    """An ffcv_go.Loader over path (or a Mixture) for the given rank of world_size.

    distributed=None means ``world_size > 1``. Defaults follow the usual
    train/eval split: train -> RANDOM order, drop_last=True; eval ->
    SEQUENTIAL, drop_last=False. When distributed with no seed, seed 0 is
    used so every rank draws the same permutation (FFCV's rule, without the
    warning). pipelines are deep-copied so one dict can serve several
    loaders. Other keyword arguments go to Loader (num_workers, os_cache,
    indices, batches_ahead, ...).
    """
    if distributed is None:
        distributed = world_size > 1
    if not 0 <= rank < world_size:
        raise ValueError(f"rank {rank} is not in [0, {world_size})")
    if order is None:
        order = OrderOption.RANDOM if train else OrderOption.SEQUENTIAL
    if drop_last is None:
        drop_last = bool(train)
    if seed is None and distributed:
        seed = 0
    kwargs = dict(loader_kwargs, order=order, seed=seed, drop_last=drop_last, distributed=distributed,
                  pipelines=copy.deepcopy(pipelines) if pipelines is not None else {})
    if not isinstance(path, Mixture):
        path = os.fspath(path)
    if distributed:
        with _rank_env(rank, world_size):
            loader = loader_cls(path, batch_size, **kwargs)
        if (loader.rank, loader.world_size) != (rank, world_size):
            raise RuntimeError(f"Loader took rank/world {loader.rank}/{loader.world_size}, expected {rank}/{world_size}")
        return loader
    return loader_cls(path, batch_size, **kwargs)


def _num_indices(loader):
    """len(loader.indices), without materialising the index list of an
    ffcv_go Loader over all samples (an FFCV Loader has it already)."""
    if hasattr(loader, "_num_indices"):
        return loader._num_indices()
    return len(loader.indices)


def samples_per_rank(loader):
    """How many samples one epoch of loader yields on this rank.

    Non-distributed: len(indices); distributed: ceil(len(indices) / world),
    the DistributedSampler share (the list is padded by repeating its head);
    with drop_last only whole batches count.
    """
    n = _num_indices(loader)
    world = getattr(loader, "world_size", 1) if getattr(loader, "distributed", False) else 1
    per_rank = math.ceil(n / world) if world > 1 else n
    if loader.drop_last:
        return (per_rank // loader.batch_size) * loader.batch_size
    return per_rank


def batch_size_of(batch):
    """Samples in a batch (a tensor, or a tuple/list/dict of them): the first
    dimension of its first tensor with one; 0-d tensors count as 1."""
    if isinstance(batch, dict):
        batch = list(batch.values())
    if not isinstance(batch, (tuple, list)):
        batch = (batch,)
    for x in batch:
        shape = getattr(x, "shape", None)
        if shape is not None:
            return int(shape[0]) if len(shape) else 1
    return len(batch[0]) if batch else 0
