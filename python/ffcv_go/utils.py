"""Small helpers of FFCV's ffcv.utils."""
import os
import re
from threading import Lock

import numpy as np


def _cpu_count():
    """The cores this process may run on (its affinity mask)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def set_seed(seed, indices):
    """Seeds Python's and numpy's global generators from seed and a batch's
    sample indices (FFCV-SSL's helper, for code of your own that draws from
    them per batch): the seed is (hash of the indices' decimal digits, in
    order) + seed, modulo 2**31. The hash is CRC-32, the same in every
    process; FFCV-SSL's is Python's hash(), which changes from process to
    process unless PYTHONHASHSEED is set."""
    import random
    import zlib
    digits = "".join(str(int(i)) for i in indices)
    local = (zlib.crc32(digits.encode()) + int(seed)) % 2**31
    random.seed(local)
    np.random.seed(local)


def chunks(lst, n):
    """Successive slices of lst of length n (the last may be shorter)."""
    for i in range(0, len(lst), n):
        yield lst[i:i + n]


def is_power_of_2(n):
    """True when the positive integer n is a power of two."""
    return n != 0 and (n & (n - 1)) == 0


def align_to_page(ptr, page_size):
    """ptr rounded up to a multiple of page_size."""
    if ptr % page_size:
        ptr += page_size - ptr % page_size
    return ptr


def decode_null_terminated_string(bytes: np.ndarray):
    """The ASCII text before the first NUL of a uint8 array."""
    return bytes.tobytes().decode("ascii").split("\x00")[0]


def __getattr__(name):
    # cast_int_to_byte_ptr: inside numba-compiled code, the integer address
    # src as a uint8 pointer (a numba intrinsic, as in FFCV); built on first
    # use so that importing this module does not need numba.
    if name == "cast_int_to_byte_ptr":
        return _cast_int_to_byte_ptr()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_INTRINSIC = []


def _cast_int_to_byte_ptr():
    if not _INTRINSIC:
        from numba import types
        from numba.extending import intrinsic

        @intrinsic
        def cast(typingctx, src):
            if isinstance(src, types.Integer):
                sig = types.CPointer(types.uint8)(types.uintp)

                def codegen(context, builder, signature, args):
                    return builder.inttoptr(args[0], context.get_value_type(signature.return_type))
                return sig, codegen
        _INTRINSIC.append(cast)
    return _INTRINSIC[0]


s_print_lock = Lock()


def s_print(*a, **b):
    """print, one thread at a time."""
    with s_print_lock:
        print(*a, **b)


def _progress(total, enabled=True):
    """A tqdm bar counting samples, or None without tqdm or when disabled."""
    try:
        from tqdm.auto import tqdm
    except ImportError:
        tqdm = None
    if tqdm is None or not enabled:
        return None
    return tqdm(total=total, unit="sample", smoothing=0.1)


def _get_item(dataset, i):
    """dataset[i]; an error it raises names the item (a bare KeyError: 'masks'
    says nothing of where)."""
    try:
        return dataset[i]
    except Exception as e:  # noqa: BLE001 - re-raised, naming the item
        _raise_at_item(e, i)


def _raise_at_item(e, i):
    """Raises e (being handled) as _at_item makes it, keeping its cause."""
    new = _at_item(e, i)
    if new is e:
        raise e
    raise new from e.__cause__


def _at_item(e, i):
    """e, saying that it is about dataset item i: a built-in exception as
    the same type with the index in its message, any other with a note."""
    where = f"dataset item {i}"
    if re.search(rf"\bitem {i}\b", str(e)):
        return e
    if type(e).__module__ == "builtins":
        try:
            if isinstance(e, OSError) and e.strerror is not None:
                new = type(e)(e.errno, f"{where}: {e.strerror}", *([e.filename] if e.filename else []))
            elif len(e.args) <= 1:
                new = type(e)(f"{where}: no key {e.args[0]!r}" if isinstance(e, KeyError) and e.args
                              else f"{where}: {e}")
            else:
                new = None
        except Exception:  # noqa: BLE001 - a type that takes other arguments
            new = None
        if new is not None:
            return new.with_traceback(e.__traceback__)
    e.add_note(where)
    return e


def attention_mask(lengths, max_length=None):
    """(B, max_length) bool mask, True over each sample's first lengths[i]
    positions, for a padded batch (max_length: by default the longest of
    lengths, the width to trim the batch's padded outputs to; pass the
    output's width to mask the whole slot). lengths: the (B,) or (B, 1)
    lengths the loader gave, e.g. a duration field's output."""
    import torch
    lengths = torch.as_tensor(lengths).reshape(-1)
    width = int(lengths.max()) if max_length is None and lengths.numel() else int(max_length or 0)
    return torch.arange(width, device=lengths.device) < lengths[:, None]
