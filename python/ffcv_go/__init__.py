"""ffcv_go: FFCV-compatible fast data loading with a Go core.

Write a dataset once with DatasetWriter, then train from it with Loader.
"""
from ._lib import version as __version__, CorruptFileError, SampleError
from .writer import DatasetWriter

__all__ = ["DatasetWriter", "Loader", "CorruptFileError", "SampleError", "__version__"]


def __getattr__(name):
    # Loader pulls in torch-heavy modules: import it on first use.
    if name == "Loader":
        from .loader import Loader
        return Loader
    raise AttributeError(name)
