"""The one module that talks to libffcv_go through ctypes.

Every other module calls the small wrappers here; they turn the library's
error codes into Python exceptions. ctypes releases the GIL during each call,
so blocking calls (the next batch, a full writer queue) never stall other
Python threads.
"""
import ctypes
import functools
import json
import os

_HERE = os.path.dirname(os.path.abspath(__file__))
_PATH = os.environ.get("FFCV_GO_LIBRARY", os.path.join(_HERE, "_ffcv_go.so"))


class CorruptFileError(ValueError):
    """A .beton file is malformed, truncated or corrupt."""


class SampleError(ValueError):
    """A sample's content cannot be written or decoded."""


# These mirror include/ffcv_go.h (tests/python/test_abi.py checks them against it).
ABI_VERSION = 2
ERR_INTERNAL = -1
ERR_ARGUMENT = -2
ERR_FORMAT = -3
ERR_IO = -4
ERR_NOT_FOUND = -5
ERR_DATA = -6

_CODES = {
    ERR_ARGUMENT: ValueError,
    ERR_FORMAT: CorruptFileError,
    ERR_IO: OSError,
    ERR_NOT_FOUND: FileNotFoundError,
    ERR_DATA: SampleError,
}

# The process that loaded the library. The Go runtime does not survive fork():
# its threads are gone in the child, where any call would hang.
_PID = os.getpid()
_FORK_MESSAGE = (
    "ffcv_go cannot be used in a process forked from one that had loaded it (the Go runtime does not "
    "survive fork). Start worker processes with the 'spawn' (or 'forkserver') method, e.g. "
    "multiprocessing.set_start_method('spawn') or DataLoader(multiprocessing_context='spawn'), "
    "and create Loaders and DatasetWriters inside them.")


def forked():
    """True in a child forked after the library was loaded."""
    return os.getpid() != _PID


def check_process():
    if os.getpid() != _PID:
        raise RuntimeError(_FORK_MESSAGE)


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class _DLManagedTensor(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(_DLManagedTensor))
_DLManagedTensor._fields_ = [
    ("dl_tensor", _DLTensor),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", ctypes.c_void_p),
]


class Value(ctypes.Structure):
    """ffcv_value: one field value handed to the writer."""
    _fields_ = [
        ("i", ctypes.c_int64),
        ("f", ctypes.c_double),
        ("data", ctypes.c_void_p),
        ("len", ctypes.c_uint64),
        ("width", ctypes.c_int32),
        ("height", ctypes.c_int32),
        ("channels", ctypes.c_int32),
        ("encoded", ctypes.c_int32),
        ("column", ctypes.c_void_p),
        ("column_len", ctypes.c_uint64),
        ("ptr_offset", ctypes.c_int64),
    ]


# Every function of include/ffcv_go.h: name -> (result, arguments).
def _signatures():
    i64, u64, i32 = ctypes.c_int64, ctypes.c_uint64, ctypes.c_int32
    cp, vp, err = ctypes.c_char_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)
    out_str = ctypes.POINTER(ctypes.c_void_p)
    return {
        "ffcv_version": (cp, []),
        "ffcv_abi_version": (i64, []),
        "ffcv_free": (None, [vp]),
        "ffcv_close": (i64, [i64, err]),
        "ffcv_live_objects": (i64, []),
        "ffcv_goroutines": (i64, []),
        "ffcv_reader_open": (i64, [cp, cp, err]),
        "ffcv_reader_info": (i64, [i64, out_str, err]),
        "ffcv_dataset_open": (i64, [cp, cp, err]),
        "ffcv_dataset_paths": (i64, [cp, out_str, err]),
        "ffcv_reader_tables": (i64, [i64, ctypes.POINTER(vp), ctypes.POINTER(u64), ctypes.POINTER(vp),
                                     ctypes.POINTER(u64), err]),
        "ffcv_file_fields": (i64, [cp, out_str, err]),
        "ffcv_reader_allocs": (i64, [i64, ctypes.POINTER(u64), ctypes.POINTER(u64), u64, err]),
        "ffcv_reader_mmap": (i64, [i64, ctypes.POINTER(vp), ctypes.POINTER(u64), err]),
        "ffcv_reader_read": (i64, [i64, u64, i32, ctypes.POINTER(vp), ctypes.POINTER(u64),
                                   ctypes.POINTER(vp), ctypes.POINTER(u64), err]),
        "ffcv_verify": (i64, [i64, i32, out_str, err]),
        "ffcv_writer_create": (i64, [cp, cp, err]),
        "ffcv_writer_put": (i64, [i64, u64, u64, ctypes.POINTER(Value), err]),
        "ffcv_writer_progress": (i64, [i64, err]),
        "ffcv_writer_finish": (i64, [i64, err]),
        "ffcv_writer_abort": (i64, [i64, err]),
        "ffcv_scan_image_folder": (i64, [cp, out_str, err]),
        "ffcv_write_image_folder": (i64, [cp, cp, cp, ctypes.POINTER(i64), err]),
        "ffcv_loader_create": (i64, [cp, ctypes.POINTER(u64), u64, err]),
        "ffcv_loader_info": (i64, [i64, out_str, err]),
        "ffcv_loader_order": (i64, [i64, u64, ctypes.POINTER(u64), u64, err]),
        "ffcv_loader_elastic": (i64, [i64, cp, ctypes.POINTER(u64), u64, ctypes.POINTER(u64), u64, out_str, err]),
        "ffcv_loader_start": (i64, [i64, u64, u64, ctypes.POINTER(u64), u64, i32, err]),
        "ffcv_iter_next": (i64, [i64, ctypes.POINTER(ctypes.POINTER(_DLManagedTensor)), i32, err]),
        "ffcv_loader_stats": (i64, [i64, out_str, err]),
        "ffcv_loader_tail": (i64, [i64, cp, out_str, err]),
        "ffcv_tail_run": (i64, [i64, u64, u64, ctypes.POINTER(u64), u64, vp, u64, vp, u64, err]),
        "ffcv_memcpy": (i64, [vp, vp, u64, err]),
        "ffcv_imdecode": (i64, [vp, u64, vp, u64] + [i64] * 8 + [i32, i32, err]),
        "ffcv_resize_crop": (i64, [vp] + [i64] * 6 + [vp, i64, i64, err]),
        "ffcv_encode_jpeg": (i64, [vp, i64, i64, i64, ctypes.POINTER(vp), ctypes.POINTER(u64), err]),
    }


SIGNATURES = _signatures()


def _load():
    if not os.path.exists(_PATH):
        raise ImportError(
            f"ffcv_go: the Go library {_PATH} is missing; build it with `make build` "
            "(needs Go and libturbojpeg0-dev) or install the package with pip")
    lib = ctypes.CDLL(_PATH)
    # A stale or foreign library must fail here, not at its first missing call.
    missing = [name for name in SIGNATURES if not hasattr(lib, name)]
    if missing:
        raise ImportError(f"ffcv_go: {_PATH} lacks {', '.join(missing)}: it is stale; rebuild it (make build)")
    for name, (res, args) in SIGNATURES.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args
    got = lib.ffcv_abi_version()
    if got != ABI_VERSION:
        raise ImportError(f"ffcv_go: {_PATH} has C ABI version {got}, this package needs {ABI_VERSION}; "
                          "rebuild it (make build) or reinstall the package")
    return lib


lib = _load()
version = lib.ffcv_version().decode()


def encode_jpeg(pixels, height, width, quality):
    """JPEG bytes of height×width RGB pixels (a C-contiguous uint8 array)."""
    out, n = ctypes.c_void_p(), ctypes.c_uint64()
    call("ffcv_encode_jpeg", pixels.ctypes.data, height, width, quality, ctypes.byref(out), ctypes.byref(n))
    try:
        return ctypes.string_at(out.value, n.value)
    finally:
        lib.ffcv_free(out.value)


def c_function(name, restype, argtypes):
    """A ctypes function object of its own for library function name, for
    callers that numba compiles (FFCV's libffcv helpers): its argument types
    are numba's (pointers as c_void_p, so err is passed as 0)."""
    fn = getattr(ctypes.CDLL(_PATH), name)
    fn.restype, fn.argtypes = restype, argtypes
    return fn


def _take_string(p):
    """Copies a library-allocated C string and frees it."""
    if not p:
        return None
    try:
        return ctypes.string_at(p).decode("utf-8", "replace")
    finally:
        lib.ffcv_free(p)


def call(fn, *args, context=None):
    """Calls lib.fn(*args, &err) and raises on a negative result."""
    if os.getpid() != _PID:
        raise RuntimeError(_FORK_MESSAGE)
    err = ctypes.c_void_p()
    ret = getattr(lib, fn)(*args, ctypes.byref(err))
    if ret < 0:
        msg = _take_string(err.value) or f"{fn} failed"
        if isinstance(context, (list, tuple)):  # a sharded dataset's files
            context = ", ".join(map(str, context))
        if context and context not in msg:  # most messages name the file already
            msg = f"{context}: {msg}"
        raise _CODES.get(ret, RuntimeError)(msg)
    return ret


def call_json(fn, *args, context=None):
    """Calls a function with a `char **out` JSON result before err."""
    out = ctypes.c_void_p()
    call(fn, *args, ctypes.byref(out), context=context)
    return json.loads(_take_string(out.value))


def close(handle):
    """Closes a handle. In a forked child it does nothing: the handles are the
    parent's, and finalizers running at the child's exit must not fail."""
    if os.getpid() != _PID:
        return
    call("ffcv_close", handle)


def live_objects():
    """Handles and batch slots currently alive (for leak checks)."""
    check_process()
    return lib.ffcv_live_objects()


def goroutines():
    """Goroutines currently running in the library (for leak checks)."""
    check_process()
    return lib.ffcv_goroutines()


# ---- DLPack -----------------------------------------------------------------

_pythonapi = ctypes.pythonapi
_pythonapi.PyCapsule_New.restype = ctypes.py_object
_pythonapi.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_CAPSULE_NAME = b"dltensor"  # kept alive for the capsules' lifetime (module constant)


_pythonapi.PyCapsule_IsValid.restype = ctypes.c_int
_pythonapi.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]


_KDLUINT, _KDLBOOL = 1, 6


@functools.lru_cache(maxsize=None)
def _torch_lacks_dlpack_bool():
    import torch
    return tuple(int(x) for x in torch.__version__.split(".")[:2]) < (2, 1)


def tensors_from_dlpack(ptrs):
    """Turns DLManagedTensor*s from the library into torch tensors that own
    them. On an error, Ctrl-C included, each one no tensor took is released
    once: torch renames a capsule it takes ("used_dltensor"), and a
    KeyboardInterrupt can land after that, inside torch's Python wrapper,
    where releasing it too would free it twice."""
    import torch.utils.dlpack
    tensors, capsules = [], [None] * len(ptrs)
    try:
        for k, ptr in enumerate(ptrs):
            # torch < 2.1 takes no DLPack bool: hand it the bytes as uint8
            # and view them as bool (the same 1-byte 0/1 layout).
            dtype = ptr.contents.dl_tensor.dtype
            as_bool = dtype.code == _KDLBOOL and _torch_lacks_dlpack_bool()
            if as_bool:
                dtype.code = _KDLUINT
            capsules[k] = _pythonapi.PyCapsule_New(ctypes.cast(ptr, ctypes.c_void_p), _CAPSULE_NAME, None)
            t = torch.utils.dlpack.from_dlpack(capsules[k])
            tensors.append(t.view(torch.bool) if as_bool else t)
        return tensors
    except BaseException:
        for ptr, capsule in zip(ptrs, capsules):
            if capsule is None or _pythonapi.PyCapsule_IsValid(capsule, _CAPSULE_NAME):
                release_dlpack(ptr)
        raise


def release_dlpack(ptr):
    """Calls a DLManagedTensor's deleter (when it was not handed to torch)."""
    deleter = ptr.contents.deleter
    if deleter:
        _DELETER(deleter)(ptr)


DLManagedTensorPtr = ctypes.POINTER(_DLManagedTensor)
