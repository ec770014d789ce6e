"""TraversalOrder: the base of sample orders (FFCV's ffcv.traversal_order.base)."""
from abc import ABC, abstractmethod


class TraversalOrder(ABC):
    """Subclass and implement sample_order(epoch) -> sequence of sample ids
    (this rank's order) to give the Loader an order of your own."""

    def __init__(self, loader):
        self.loader = loader
        self.seed = loader.seed
        self.distributed = loader.distributed
        self.world_size = loader.world_size
        self.rank = loader.rank

    @property
    def indices(self):
        """The loader's samples, unless a subclass assigned its own."""
        own = self.__dict__.get("_indices")
        return self.loader.indices if own is None else own

    @indices.setter
    def indices(self, value):
        self._indices = value

    @abstractmethod
    def sample_order(self, epoch):
        raise NotImplementedError
