"""Sequential orders (FFCV's ffcv.traversal_order.sequential): Sequential,
FFCV-SSL's SequentialContiguous, and its DistributedSamplerProxy."""
import math

import torch
from torch.utils.data import DistributedSampler

from ._builtin import Sequential, SequentialContiguous  # noqa: F401

__all__ = ["Sequential", "SequentialContiguous", "DistributedSamplerProxy"]


class DistributedSamplerProxy(DistributedSampler):
    """FFCV-SSL's DistributedSampler whose ranks take contiguous blocks:
    the list (shuffled with seed + epoch when shuffle, as
    DistributedSampler) padded from its head to num_samples * num_replicas
    (or cut, with drop_last), and rank r's block [r * num_samples,
    (r + 1) * num_samples) of it. The loader's SEQUENTIAL_CONTIGUOUS order
    cuts its epochs the same way, in the Go core."""

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            g = torch.Generator()
            g.manual_seed(self.seed + self.epoch)
            ids = torch.randperm(n, generator=g).tolist()
        else:
            ids = list(range(n))
        if self.drop_last:
            ids = ids[:self.total_size]
        elif ids:
            ids = (ids * math.ceil(self.total_size / n))[:self.total_size]
        start = self.num_samples * self.rank
        return iter(ids[start:start + self.num_samples])
