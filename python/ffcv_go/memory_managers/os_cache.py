"""OSCacheManager (FFCV's ffcv.memory_managers.os_cache): allocations read
through the file's memory map, i.e. the OS page cache."""
from .base import MemoryManager, MemoryContext


class OSCacheContext(MemoryContext):
    """The context of an OSCacheManager: one per manager, as in FFCV."""


class OSCacheManager(MemoryManager):
    def __init__(self, reader):
        super().__init__(reader)
        self.context = OSCacheContext(self)

    def schedule_epoch(self, batches):
        return self.context


__all__ = ["OSCacheManager", "OSCacheContext"]
