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


class Bucketed(_GoOrder):
    """Batches by total duration, as lhotse's DynamicBucketingSampler: the
    samples sorted into duration buckets, shuffled within each bucket per
    (seed, epoch), each bucket cut into batches of at most max_duration
    (and batch_size samples), the batches shuffled across buckets.
    Distributed, every rank gets the same number of batches, of about equal
    total duration. Its arguments come in the Loader's order_kwargs (see
    ``_bucketing_args``)."""
    _go_name = "bucketed"


class Rect(_GoOrder):
    """Ultralytics' rect order (its validation's rect=True): the samples
    sorted by their image's aspect ratio, height / width (ties in id
    order), the same every epoch, so that each batch holds images of
    similar shape; ``LetterBox(rect=...)`` gives each batch its shape. The
    file must have one RGBImageField; one process only."""
    _go_name = "rect"


class QuasiRandom(_GoOrder):
    """Random within a window of heap pages (few pages read at a time); works
    distributed too, each rank taking a contiguous block of the global order."""
    _go_name = "quasi_random"
