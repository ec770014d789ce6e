"""Compiler: how custom operations' generated code is run (numba when present)."""
from ..utils import _cpu_count


class Compiler:
    """How custom operations' generated code is compiled (FFCV's Compiler).

    With numba installed and compilation enabled, ``compile`` is
    ``numba.njit(nogil=True, ...)``; otherwise the function runs as plain
    Python. Built-in operations run in Go and are not affected.
    """
    is_enabled = True
    num_threads = 1

    @classmethod
    def set_enabled(cls, b):
        """Turns numba compilation of custom code on or off (on by default)."""
        cls.is_enabled = bool(b)

    @classmethod
    def set_num_threads(cls, n):
        """Threads for numba's parallel loops (< 1: every core in the
        process's affinity mask)."""
        if n < 1:
            n = _cpu_count()
        cls.num_threads = n
        if _numba() is not None:
            import numba
            numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))

    @classmethod
    def compile(cls, code, signature=None):
        """``code`` compiled with numba (parallel when ``code.is_parallel``
        and more than one thread), or ``code`` itself when compilation is
        disabled or numba is missing."""
        nb = _numba()
        if not cls.is_enabled or nb is None:
            return code
        parallel = bool(getattr(code, "is_parallel", False)) and cls.num_threads > 1
        jit = nb.njit(signature, fastmath=True, nogil=True, error_model="numpy", parallel=parallel) \
            if signature else nb.njit(fastmath=True, nogil=True, error_model="numpy", parallel=parallel)
        return jit(code)

    @classmethod
    def get_iterator(cls):
        """The loop over a batch's samples for generated code: numba's
        ``prange`` when compiling with several threads, else ``range``."""
        nb = _numba()
        if cls.is_enabled and nb is not None and cls.num_threads > 1:
            return nb.prange
        return range


_NUMBA = []


def _numba():
    if not _NUMBA:
        try:
            import numba
            _NUMBA.append(numba)
        except ImportError:
            _NUMBA.append(None)
    return _NUMBA[0]
