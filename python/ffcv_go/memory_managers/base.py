"""MemoryManager and MemoryContext (FFCV's ffcv.memory_managers.base), for
code that reads allocations by hand with ``compile_reader``.

The Loader itself reads through the Go core's caches (``os_cache=True``: the
OS page cache through the map; ``os_cache=False``: the loader's own page
cache with read-ahead). Here the memory state handed to the compiled reader
is the file's map, a read-only uint8 array, whatever the manager (FFCV's is
a tuple that differs per manager)."""
from collections import defaultdict

import numpy as np

from .. import _lib
from ..pipeline.compiler import Compiler


class MemoryContext:
    """What ``schedule_epoch`` returns: a context manager whose ``state`` is
    passed to the compiled reader (valid after the ``with`` block too)."""

    def __init__(self, manager, batches=None):
        self.manager = manager
        self.batches = batches

    @property
    def state(self):
        return self.manager.reader._mapped("memory_read")

    def start_batch(self, batch):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class MemoryManager:
    """Where each allocation of a reader's file is: ``ptrs`` (sorted) and
    their ``sizes``, ``ptr_to_size``, and the page maps ``sample_to_pages``
    and ``page_to_samples`` (page = pointer >> log2(page_size))."""

    def __init__(self, reader):
        self.reader = reader
        # Both lookups are the Go reader's, read through the C ABI: the
        # allocation table is parsed in one place.
        self.ptrs, self.sizes = _lib.alloc_index(reader._handle, context=reader.file_name)
        self.ptr_to_size = dict(zip(self.ptrs, self.sizes))
        self.sample_to_pages = defaultdict(set)
        self.page_to_samples = defaultdict(set)
        for sample, page in zip(*_lib.alloc_pages(reader._handle, context=reader.file_name)):
            self.sample_to_pages[sample].add(page)
            self.page_to_samples[page].add(sample)

    def schedule_epoch(self, batches):
        return MemoryContext(self, batches)

    @property
    def state_type(self):
        """numba type of the state (a read-only contiguous uint8 array)."""
        import numba as nb
        t = nb.uint8[::1]
        return t.copy(readonly=True)

    def compile_reader(self):
        """read(address, state) -> uint8 array of the allocation starting at address."""
        ptrs, sizes = self.ptrs, self.sizes

        def read(address, mem_state):
            i = np.searchsorted(ptrs, address)
            if i >= ptrs.shape[0] or ptrs[i] != address:
                raise ValueError("no allocation starts at this address")
            return mem_state[address:address + sizes[i]]
        return Compiler.compile(read)


__all__ = ["MemoryManager", "MemoryContext"]
