"""ProcessCacheManager (FFCV's ffcv.memory_managers.process_cache). By hand
it reads through the map like OSCacheManager; in the Loader, os_cache=False
selects the Go core's process cache (its own pages, read ahead in the
epoch's order)."""
from .context import ProcessCacheContext
from .manager import ProcessCacheManager

__all__ = ["ProcessCacheContext", "ProcessCacheManager"]
