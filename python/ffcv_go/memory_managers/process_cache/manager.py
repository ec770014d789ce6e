"""ProcessCacheManager (FFCV's module path)."""
from ..base import MemoryManager
from .context import ProcessCacheContext


class ProcessCacheManager(MemoryManager):
    def schedule_epoch(self, batches):
        return ProcessCacheContext(self, batches)


__all__ = ["ProcessCacheManager"]
