"""Memory managers (FFCV's ffcv.memory_managers), for code that reads
allocations by hand with ``compile_reader``. The Loader itself reads through
the Go core's caches (``os_cache=True``: the OS page cache through the map;
``os_cache=False``: the loader's own page cache with read-ahead)."""
import numpy as np

from ..pipeline.compiler import Compiler


class MemoryContext:
    """What ``schedule_epoch`` returns: a context whose ``state`` is passed to readers."""

    def __init__(self, manager, batches):
        self.manager = manager
        self.batches = batches
        self.state = None

    def __enter__(self):
        self.state = self.manager._state()
        return self

    def __exit__(self, *exc):
        self.state = None
        return False


class MemoryManager:
    def __init__(self, reader):
        self.reader = reader
        self.ptrs, self.sizes = reader._alloc_index()  # the Go reader's lookup, not a second one

    def schedule_epoch(self, batches):
        return MemoryContext(self, batches)

    def _state(self):
        return self.reader._buffer

    def compile_reader(self):
        """read(address, state) -> uint8 array of the allocation starting at address."""
        ptrs, sizes = self.ptrs, self.sizes

        def read(address, mem_state):
            i = np.searchsorted(ptrs, address)
            if i >= ptrs.shape[0] or ptrs[i] != address:
                raise ValueError("no allocation starts at this address")
            return mem_state[address:address + sizes[i]]
        return Compiler.compile(read)


class OSCacheManager(MemoryManager):
    """Reads allocations through the file's memory map (the OS page cache)."""


class ProcessCacheManager(MemoryManager):
    """Same interface; in the Loader, os_cache=False selects the Go process cache."""


__all__ = ["OSCacheManager", "ProcessCacheManager", "MemoryManager", "MemoryContext"]
