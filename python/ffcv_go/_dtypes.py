"""numpy and torch dtypes, one to the other."""
import numpy as np
import torch

# A table, not torch.from_numpy: states are declared every epoch, possibly on
# a daemon thread, and a numpy-backed tensor freed there while the interpreter
# exits aborts it (its deleter takes the GIL inside a noexcept destructor).
_TORCH_OF_NUMPY = {np.dtype(n): t for n, t in [
    ("bool", torch.bool), ("uint8", torch.uint8), ("int8", torch.int8), ("int16", torch.int16),
    ("uint16", torch.uint16), ("int32", torch.int32), ("uint32", torch.uint32), ("int64", torch.int64),
    ("uint64", torch.uint64), ("float16", torch.float16), ("float32", torch.float32),
    ("float64", torch.float64), ("complex64", torch.complex64), ("complex128", torch.complex128)]}
_NUMPY_OF_TORCH = {t: n for n, t in _TORCH_OF_NUMPY.items()}


def torch_dtype(dtype):
    """numpy or torch dtype -> torch dtype."""
    if isinstance(dtype, torch.dtype):
        return dtype
    d = np.dtype(dtype)
    if not d.isnative:
        raise ValueError(f"numpy dtype {d} is not in native byte order: torch cannot hold it")
    if d not in _TORCH_OF_NUMPY:
        raise ValueError(f"no torch dtype for numpy dtype {d}")
    return _TORCH_OF_NUMPY[d]


def numpy_dtype(dtype):
    if isinstance(dtype, torch.dtype):
        if dtype not in _NUMPY_OF_TORCH:
            raise ValueError(f"no numpy dtype for torch dtype {dtype}")
        return _NUMPY_OF_TORCH[dtype]
    return np.dtype(dtype)
