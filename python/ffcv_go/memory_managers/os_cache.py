"""OSCacheManager (FFCV's ffcv.memory_managers.os_cache): allocations read
through the file's memory map, i.e. the OS page cache."""
import weakref

from .base import MemoryManager, MemoryContext


class OSCacheContext(MemoryContext):
    """The context of an OSCacheManager: one per manager, as in FFCV. The
    manager holds it, so it holds its manager weakly (and the reader
    itself): dropping the manager frees both, and the file's map, by
    reference counting alone."""

    def __init__(self, manager, batches=None):
        self._manager = weakref.ref(manager)
        self._reader = manager.reader
        self.batches = batches

    @property
    def manager(self):
        return self._manager()

    @property
    def state(self):
        return self._reader._mapped("memory_read")


class OSCacheManager(MemoryManager):
    def __init__(self, reader):
        super().__init__(reader)
        self.context = OSCacheContext(self)

    def schedule_epoch(self, batches):
        return self.context


__all__ = ["OSCacheManager", "OSCacheContext"]
