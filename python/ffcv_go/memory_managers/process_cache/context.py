"""ProcessCacheContext (FFCV's module path)."""
from ..base import MemoryContext


class ProcessCacheContext(MemoryContext):
    """The context of one scheduled epoch of a ProcessCacheManager."""

    def __init__(self, manager, batches):
        super().__init__(manager, batches)


__all__ = ["ProcessCacheContext"]
