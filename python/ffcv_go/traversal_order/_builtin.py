"""The built-in orders; their permutations are computed by the Go core."""
import numpy as np

from .base import TraversalOrder


class _GoOrder(TraversalOrder):
    _go_name = None

    def sample_order(self, epoch):
        return self.loader._go_order(epoch)


class Sequential(_GoOrder):
    """The indices as given (strided over ranks like DistributedSampler)."""
    _go_name = "sequential"


class SequentialContiguous(_GoOrder):
    """FFCV-SSL's SEQUENTIAL_CONTIGUOUS: the indices as given; distributed,
    rank r reads a contiguous block of them (padded from their head to a
    multiple of the world size, as DistributedSamplerProxy) where
    Sequential strides."""
    _go_name = "sequential_contiguous"


class Random(_GoOrder):
    """numpy default_rng(seed + epoch).permutation(indices); distributed: as
    DistributedSampler(shuffle=True, seed) with set_epoch(epoch)."""
    _go_name = "random"

    def _torch_order(self, epoch):
        import torch
        g = torch.Generator()
        g.manual_seed(self.seed + epoch)
        perm = torch.randperm(len(self.indices), generator=g).numpy()
        return np.asarray(self.indices, dtype=np.uint64)[perm]


class QuasiRandom(_GoOrder):
    """Random within a window of heap pages (few pages read at a time); works
    distributed too, each rank taking a contiguous block of the global order."""
    _go_name = "quasi_random"
