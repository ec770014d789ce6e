"""numpy and torch dtypes, one to the other."""
import numpy as np
import torch

# A table, not torch.from_numpy: states are declared every epoch, possibly on
# a daemon thread, and a numpy-backed tensor freed there while the interpreter
# exits aborts it (its deleter takes the GIL inside a noexcept destructor).
# torch.uint16, uint32 and uint64 exist from torch 2.3 on: looked up here,
# and an op that needs one on an older torch says so (torch_dtype).
_OPTIONAL = {"uint16": "2.3", "uint32": "2.3", "uint64": "2.3"}
_TORCH_OF_NUMPY = {np.dtype(n): getattr(torch, n) for n in [
    "bool", "uint8", "int8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
    "float16", "float32", "float64", "complex64", "complex128"] if hasattr(torch, n)}
_NUMPY_OF_TORCH = {t: n for n, t in _TORCH_OF_NUMPY.items()}


def torch_dtype(dtype):
    """numpy or torch dtype -> torch dtype."""
    if isinstance(dtype, torch.dtype):
        return dtype
    d = np.dtype(dtype)
    if not d.isnative:
        raise ValueError(f"numpy dtype {d} is not in native byte order: torch cannot hold it")
    if d not in _TORCH_OF_NUMPY:
        if d.name in _OPTIONAL:
            raise ValueError(f"numpy dtype {d} needs torch.{d.name}, which torch {torch.__version__} lacks "
                             f"(it exists from torch {_OPTIONAL[d.name]}): use another dtype or a newer torch")
        raise ValueError(f"no torch dtype for numpy dtype {d}")
    return _TORCH_OF_NUMPY[d]


def numpy_dtype(dtype):
    if isinstance(dtype, torch.dtype):
        if dtype not in _NUMPY_OF_TORCH:
            raise ValueError(f"no numpy dtype for torch dtype {dtype}")
        return _NUMPY_OF_TORCH[dtype]
    return np.dtype(dtype)
