"""TraversalOrder: the base of sample orders (FFCV's ffcv.traversal_order.base)."""
import weakref
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
    def loader(self):
        """The Loader this order serves.

        Held through a weak reference: the loader owns its order, and a
        strong reference back would put both in a cycle that only Python's
        cyclic collector frees, gigabytes of batch memory later."""
        ref = self.__dict__.get("_loader_ref")
        loader = ref() if ref is not None else None
        if loader is None:
            raise ReferenceError(f"{type(self).__name__}: the Loader this order belonged to has been freed")
        return loader

    @loader.setter
    def loader(self, value):
        self._loader_ref = weakref.ref(value)

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
