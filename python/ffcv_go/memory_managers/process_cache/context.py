"""ProcessCacheContext (FFCV's module path)."""
from ..base import MemoryContext


class ProcessCacheContext(MemoryContext):
    """The context of one scheduled epoch of a ProcessCacheManager."""


__all__ = ["ProcessCacheContext"]
