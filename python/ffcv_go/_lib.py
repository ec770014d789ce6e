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
ABI_VERSION = 4
ERR_INTERNAL = -1
ERR_ARGUMENT = -2
ERR_FORMAT = -3
ERR_IO = -4
ERR_NOT_FOUND = -5
ERR_DATA = -6
# ffcv_trace_event's stages (FFCV_STAGE_*) by value, and its tracks.
STAGES = ("read", "entropy_decode", "idct_resize", "ops", "page_read", "batch_ops")
TRACK_PAGES = -1
TRACK_BATCH = -2

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


COLUMN_BINARY, COLUMN_LARGE_BINARY, COLUMN_INT64, COLUMN_FLOAT64 = 0, 1, 2, 3


class Column(ctypes.Structure):
    """ffcv_column: one Arrow column handed to ffcv_ingest_push."""
    _fields_ = [
        ("kind", ctypes.c_int32),
        ("list", ctypes.c_int32),
        ("offset", ctypes.c_int64),
        ("validity", ctypes.c_void_p),
        ("list_offsets", ctypes.c_void_p),
        ("values_offset", ctypes.c_int64),
        ("values_validity", ctypes.c_void_p),
        ("offsets", ctypes.c_void_p),
        ("data", ctypes.c_void_p),
        ("data_len", ctypes.c_uint64),
        ("token_offsets", ctypes.c_void_p),
        ("tokens", ctypes.c_void_p),
        ("n_tokens", ctypes.c_uint64),
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
        "ffcv_reader_info": (i64, [i64, out_str, err]),
        "ffcv_dataset_open": (i64, [cp, cp, err]),
        "ffcv_dataset_paths": (i64, [cp, out_str, err]),
        "ffcv_mixture_open": (i64, [cp, out_str, err]),
        "ffcv_reader_tables": (i64, [i64, ctypes.POINTER(vp), ctypes.POINTER(u64), ctypes.POINTER(vp),
                                     ctypes.POINTER(u64), err]),
        "ffcv_file_fields": (i64, [cp, out_str, err]),
        "ffcv_reader_allocs": (i64, [i64, ctypes.POINTER(u64), ctypes.POINTER(u64), u64, err]),
        "ffcv_reader_alloc_pages": (i64, [i64, ctypes.POINTER(u64), ctypes.POINTER(u64), u64, err]),
        "ffcv_reader_mmap": (i64, [i64, ctypes.POINTER(vp), ctypes.POINTER(u64), err]),
        "ffcv_reader_read": (i64, [i64, u64, i32, ctypes.POINTER(vp), ctypes.POINTER(u64),
                                   ctypes.POINTER(vp), ctypes.POINTER(u64), err]),
        "ffcv_verify": (i64, [i64, i32, out_str, err]),
        "ffcv_writer_create": (i64, [cp, cp, err]),
        "ffcv_writer_put": (i64, [i64, u64, u64, ctypes.POINTER(Value), err]),
        "ffcv_writer_finish": (i64, [i64, err]),
        "ffcv_writer_abort": (i64, [i64, err]),
        "ffcv_scan_image_folder": (i64, [cp, out_str, err]),
        "ffcv_yolo_scan": (i64, [cp, out_str, err]),
        "ffcv_write_image_folder": (i64, [cp, cp, cp, ctypes.POINTER(i64), err]),
        "ffcv_ingest_webdataset": (i64, [cp, err]),
        "ffcv_ingest_columns": (i64, [cp, err]),
        "ffcv_ingest_arrow": (i64, [cp, err]),
        "ffcv_ingest_push": (i64, [i64, i64, u64, ctypes.POINTER(Column), i32, ctypes.POINTER(Column), err]),
        "ffcv_ingest_end": (i64, [i64, i64, err]),
        "ffcv_ingest_texts": (i64, [i64, i64, ctypes.POINTER(u64), ctypes.POINTER(vp),
                                    ctypes.POINTER(ctypes.POINTER(u64)), ctypes.POINTER(u64), err]),
        "ffcv_ingest_tokens": (i64, [i64, u64, vp, u64, vp, u64, err]),
        "ffcv_ingest_wait": (i64, [i64, i64, ctypes.POINTER(i64), out_str, err]),
        "ffcv_loader_create": (i64, [cp, ctypes.POINTER(u64), u64, err]),
        "ffcv_loader_info": (i64, [i64, out_str, err]),
        "ffcv_loader_order": (i64, [i64, u64, ctypes.POINTER(u64), u64, err]),
        "ffcv_loader_elastic": (i64, [i64, cp, ctypes.POINTER(u64), u64, ctypes.POINTER(u64), u64, out_str, err]),
        "ffcv_loader_start": (i64, [i64, u64, u64, ctypes.POINTER(u64), u64, i32, err]),
        "ffcv_iter_next": (i64, [i64, ctypes.POINTER(ctypes.POINTER(_DLManagedTensor)), i32, err]),
        "ffcv_loader_stats": (i64, [i64, out_str, err]),
        "ffcv_loader_trace": (i64, [i64, vp, u64, err]),
        "ffcv_loader_tail": (i64, [i64, cp, out_str, err]),
        "ffcv_tail_run": (i64, [i64, u64, u64, ctypes.POINTER(u64), u64, vp, u64, vp, u64, err]),
        "ffcv_memcpy": (i64, [vp, vp, u64, err]),
        "ffcv_imdecode": (i64, [vp, u64, vp, u64] + [i64] * 8 + [i32, i32, err]),
        "ffcv_resize_crop": (i64, [vp] + [i64] * 6 + [vp, i64, i64, err]),
        "ffcv_pad": (i64, [vp] + [i64] * 6 + [vp, i64, i64, err]),
        "ffcv_encode_jpeg": (i64, [vp, i64, i64, i64, ctypes.POINTER(vp), ctypes.POINTER(u64), err]),
        "ffcv_audio_encode": (i64, [cp, ctypes.POINTER(Value), ctypes.POINTER(vp), ctypes.POINTER(u64), vp, err]),
        "ffcv_normalize_table": (i64, [cp, vp, u64, err]),
        "ffcv_op_check": (i64, [cp, err]),
        "ffcv_op_out": (i64, [cp, cp, out_str, err]),
        "ffcv_augment_ops": (i64, [out_str, err]),
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


def audio_encode(options, value):
    """(stored bytes, 32-byte metadata column) of one AudioField value (a
    Value as the writer takes it), encoded with options by the Go core."""
    out, n = ctypes.c_void_p(), ctypes.c_uint64()
    column = (ctypes.c_uint8 * 32)()
    call("ffcv_audio_encode", json.dumps(options).encode(), ctypes.byref(value), ctypes.byref(out),
         ctypes.byref(n), column)
    try:
        return ctypes.string_at(out.value, n.value), bytes(column)
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


def mixture_open(spec, context=None):
    """(reader handle, description) of the mixture spec (a dict)."""
    out = ctypes.c_void_p()
    handle = call("ffcv_mixture_open", json.dumps(spec).encode(), ctypes.byref(out), context=context)
    return handle, json.loads(_take_string(out.value))


def close(handle):
    """Closes a handle. In a forked child it does nothing: the handles are the
    parent's, and finalizers running at the child's exit must not fail."""
    if os.getpid() != _PID:
        return
    call("ffcv_close", handle)


def _uint64_pairs(fn, handle, context):
    """Two uint64 numpy arrays from a function that counts with NULL arrays
    and fills arrays of the count it gave."""
    import numpy as np
    n = call(fn, handle, None, None, 0, context=context)
    a, b = np.empty(n, dtype=np.uint64), np.empty(n, dtype=np.uint64)
    call(fn, handle, _u64(a), _u64(b), n, context=context)
    return a, b


def alloc_index(handle, context=None):
    """(pointers, sizes) of a reader's allocations: every distinct pointer,
    sorted, sized as the Go reader resolves it (what memory_read searches)."""
    return _uint64_pairs("ffcv_reader_allocs", handle, context)


def alloc_pages(handle, context=None):
    """(samples, pages) of a reader's allocations: each distinct pair of a
    sample id and the page an allocation of it starts on, sorted."""
    return _uint64_pairs("ffcv_reader_alloc_pages", handle, context)


class _GoMemory:
    """Go-owned memory as numpy sees it (__array_interface__); it keeps its
    owner, whatever keeps the memory mapped, alive as long as any view."""

    def __init__(self, address, size, owner):
        self.__array_interface__ = {"data": (address, True), "shape": (size,), "typestr": "|u1", "version": 3}
        self.owner = owner


def memory_view(address, size, owner):
    """A read-only uint8 array over size bytes of library memory at address,
    keeping owner (what keeps that memory mapped) alive while it is used."""
    import numpy as np
    out = np.asarray(_GoMemory(address, size, owner)) if size else np.empty(0, dtype=np.uint8)
    out.flags.writeable = False
    return out


def reader_mmap(handle):
    """(address, size) of a reader's memory map."""
    ptr, size = ctypes.c_void_p(), ctypes.c_uint64()
    call("ffcv_reader_mmap", handle, ctypes.byref(ptr), ctypes.byref(size))
    return ptr.value, size.value


def reader_tables(handle):
    """((address, size) of the metadata table, (address, size) of the
    allocation table), both owned by the reader."""
    meta, meta_len = ctypes.c_void_p(), ctypes.c_uint64()
    allocs, allocs_len = ctypes.c_void_p(), ctypes.c_uint64()
    call("ffcv_reader_tables", handle, ctypes.byref(meta), ctypes.byref(meta_len), ctypes.byref(allocs),
         ctypes.byref(allocs_len))
    return (meta.value, meta_len.value), (allocs.value, allocs_len.value)


def reader_read(handle, sample, field, context=None):
    """(column address, column size, heap address or None, heap size) of a sample's field."""
    col, col_len = ctypes.c_void_p(), ctypes.c_uint64()
    heap, heap_len = ctypes.c_void_p(), ctypes.c_uint64()
    call("ffcv_reader_read", handle, sample, field, ctypes.byref(col), ctypes.byref(col_len),
         ctypes.byref(heap), ctypes.byref(heap_len), context=context)
    return col.value, col_len.value, heap.value, heap_len.value


class Counter:
    """An int64 the library counts into from another thread (progress)."""

    def __init__(self):
        self._c = ctypes.c_int64(0)
        self.ref = ctypes.byref(self._c)

    @property
    def value(self):
        return self._c.value


def libffcv_functions():
    """(memcpy, imdecode, resize_crop, pad): FFCV's libffcv C functions
    with numba-compatible signatures (pointers as void*, err passed as 0)."""
    i32, i64, u64, vp = ctypes.c_int32, ctypes.c_int64, ctypes.c_uint64, ctypes.c_void_p
    return (c_function("ffcv_memcpy", i64, [vp, vp, u64, vp]),
            c_function("ffcv_imdecode", i64, [vp, u64, vp, u64] + [i64] * 8 + [i32, i32, vp]),
            c_function("ffcv_resize_crop", i64, [vp] + [i64] * 6 + [vp, i64, i64, vp]),
            c_function("ffcv_pad", i64, [vp] + [i64] * 6 + [vp, i64, i64, vp]))


def _u64(a):
    """A uint64 array's data as the signatures' pointer (None stays NULL)."""
    return None if a is None else a.ctypes.data_as(ctypes.POINTER(ctypes.c_uint64))


def _u64_array(x):
    import numpy as np
    return None if x is None else np.ascontiguousarray(x, dtype=np.uint64)


def loader_create(spec, indices, context=None):
    """A Go loader from its spec (a dict) over indices (None: every sample)."""
    idx = _u64_array(indices)
    return call("ffcv_loader_create", json.dumps(spec).encode(), _u64(idx), 0 if idx is None else idx.size,
                context=context)


def loader_tail(handle, spec, context=None):
    """(handle, {shape, dtype}) of built-in operations run on a batch a
    Python stage produced."""
    out = ctypes.c_void_p()
    tail = call("ffcv_loader_tail", handle, json.dumps(spec).encode(), ctypes.byref(out), context=context)
    return tail, json.loads(_take_string(out.value))


def loader_order(handle, epoch):
    """This rank's sample order of epoch, as a uint64 array."""
    import numpy as np
    n = call("ffcv_loader_order", handle, epoch, None, 0)
    out = np.empty(n, dtype=np.uint64)
    call("ffcv_loader_order", handle, epoch, _u64(out), n)
    return out


def loader_start(handle, epoch, batch, order, per_rank, context=None):
    """An iterator handle for epoch from batch on; order None: the loader's own."""
    order = _u64_array(order)
    return call("ffcv_loader_start", handle, epoch, batch, _u64(order), 0 if order is None else order.size,
                per_rank, context=context)


def loader_elastic(handle, spec, global_order, capacity, context=None):
    """(this rank's ids, info) of an elastic resume spec; global_order: the
    epoch's order when Python draws it (None: Go does)."""
    import numpy as np
    g = _u64_array(global_order)
    out = np.empty(capacity, dtype=np.uint64)
    info = ctypes.c_void_p()
    n = call("ffcv_loader_elastic", handle, json.dumps(spec).encode(), _u64(g), 0 if g is None else g.size,
             _u64(out) if capacity else None, capacity, ctypes.byref(info), context=context)
    return out[:n], json.loads(_take_string(info.value))


def _trace_dtype():
    import numpy as np
    return np.dtype([("start_ns", "<i8"), ("dur_ns", "<i8"), ("arg", "<u8"), ("track", "<i4"), ("stage", "<i4")])


def loader_trace(handle):
    """The spans a loader traced with "events" has recorded since the last
    call, as a numpy array of ffcv_trace_event records (start_ns, dur_ns,
    arg, track, stage)."""
    import numpy as np
    dtype = _trace_dtype()
    parts = []
    while True:
        n = call("ffcv_loader_trace", handle, None, 0)
        if n == 0:
            break
        out = np.empty(n, dtype=dtype)
        got = call("ffcv_loader_trace", handle, out.ctypes.data, n)
        parts.append(out[:got])
        if got < n:
            break
    return np.concatenate(parts) if parts else np.empty(0, dtype=dtype)


class BatchSlots:
    """Room for the DLManagedTensor pointers of one batch (outputs and ids)."""

    def __init__(self, n):
        self.n = n
        self.ptrs = _slot_array(n)()

    def next(self, handle, context=None):
        """The iterator's next batch as torch tensors (the last: sample ids),
        or None at the end of the epoch."""
        k = call("ffcv_iter_next", handle, self.ptrs, self.n, context=context)
        return tensors_from_dlpack(self.ptrs[:k]) if k else None


def values(n):
    """An array of n zeroed Values, the writer's per-sample arguments."""
    return _value_array(n)()


@functools.lru_cache(maxsize=64)
def _value_array(n):
    return Value * n


@functools.lru_cache(maxsize=None)
def _slot_array(n):
    # One ctypes array type per size: a new type per batch source would be
    # garbage that only the cyclic collector frees (types are cycles).
    return DLManagedTensorPtr * n


def tail_run(handle, epoch, batch, ids, x, out):
    """Runs a tail's built-in operations on the contiguous CPU tensor x into out."""
    call("ffcv_tail_run", handle, epoch, batch, ctypes.cast(ids.data_ptr(), ctypes.POINTER(ctypes.c_uint64)),
         len(ids), x.data_ptr(), x.numel() * x.element_size(), out.data_ptr(), out.numel() * out.element_size())


def ingest_texts(handle, timeout_ms):
    """The next batch of captions an ingest job wants tokenized: (id, list
    of str); None when none came in time; False when no more will come."""
    batch, data, n = ctypes.c_uint64(), ctypes.c_void_p(), ctypes.c_uint64()
    offsets = ctypes.POINTER(ctypes.c_uint64)()
    got = call("ffcv_ingest_texts", handle, int(timeout_ms), ctypes.byref(batch), ctypes.byref(data),
               ctypes.byref(offsets), ctypes.byref(n))
    if got == 2:
        return False
    if got == 0:
        return None
    try:
        raw = ctypes.string_at(data.value, offsets[n.value]) if offsets[n.value] else b""
        ends = [offsets[k] for k in range(n.value + 1)]
    finally:
        lib.ffcv_free(data.value)
        lib.ffcv_free(ctypes.cast(offsets, ctypes.c_void_p).value)
    return batch.value, [raw[a:b].decode("utf-8") for a, b in zip(ends, ends[1:])]


def ingest_tokens(handle, batch, offsets, ids):
    """Hands back batch's tokens: offsets (n + 1,) uint64 into ids uint32."""
    call("ffcv_ingest_tokens", handle, batch, offsets.ctypes.data, len(offsets) - 1,
         ids.ctypes.data if ids.size else None, ids.size)


def ingest_wait(handle, timeout_ms, progress):
    """An ingest job's report (a dict) once it has ended, else None; the
    Counter progress gets the samples done so far."""
    out = ctypes.c_void_p()
    done = call("ffcv_ingest_wait", handle, int(timeout_ms), progress.ref, ctypes.byref(out))
    return json.loads(_take_string(out.value)) if done else None


def normalize_table(mean, std, dtype):
    """NormalizeImage's (256, channels) lookup table, as the Go core computes
    it, in dtype (numpy float16 or float32)."""
    import numpy as np
    dt = np.dtype(dtype)
    mean, std = np.asarray(mean, dtype=np.float64).reshape(-1), np.asarray(std, dtype=np.float64).reshape(-1)
    out = np.empty((256, mean.size), dtype=dt)
    spec = json.dumps({"mean": mean.tolist(), "std": std.tolist(), "dtype": dt.str}).encode()
    call("ffcv_normalize_table", spec, out.ctypes.data, out.nbytes)
    return out


def check_op(spec):
    """Checks the arguments of a built-in operation's spec (a dict) in the Go
    core, without a file; ValueError, naming the argument, for a bad one."""
    call("ffcv_op_check", json.dumps(spec).encode())


def op_out(spec, shape, dtype):
    """(shape, numpy dtype str) of what a built-in transform's spec (a dict)
    makes of an input of shape and dtype, as the Go core infers it;
    ValueError naming the argument or input it refuses."""
    out = call_json("ffcv_op_out", json.dumps(spec).encode(),
                    json.dumps({"shape": [int(d) for d in shape], "dtype": dtype}).encode())
    return tuple(out["shape"]), out["dtype"]


def augment_ops():
    """The names of the automatic augmentation policies' operations, as the
    Go core has them (torchvision's)."""
    return tuple(call_json("ffcv_augment_ops"))


class _CudaRuntime:
    """The few CUDA runtime calls the loader makes itself, on the libcudart
    that torch loaded: page-locking batch slots (cudaHostRegister) and reading
    back, which also clears, the last error of a failed call, so that it does
    not surface in a later, unrelated kernel launch."""

    _NAMES = ("libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so")

    def __init__(self):
        import torch
        torch.cuda.init()  # torch loads its runtime first; dlopen then finds that one
        for name in self._NAMES:
            try:
                self._rt = ctypes.CDLL(name)
                break
            except OSError:
                continue
        else:
            raise RuntimeError(f"ffcv_go: none of {', '.join(self._NAMES)} could be loaded beside torch's CUDA")
        self._rt.cudaHostRegister.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint]
        self._rt.cudaHostUnregister.argtypes = [ctypes.c_void_p]
        self._rt.cudaGetErrorString.restype = ctypes.c_char_p
        self._rt.cudaGetErrorString.argtypes = [ctypes.c_int]

    def host_register(self, ptr, size):
        return self._rt.cudaHostRegister(ptr, size, 0)

    def host_unregister(self, ptr):
        return self._rt.cudaHostUnregister(ptr)

    def get_last_error(self):
        return self._rt.cudaGetLastError()

    def error_string(self, code):
        return self._rt.cudaGetErrorString(code).decode("utf-8", "replace")


@functools.lru_cache(maxsize=None)
def cudart():
    """The CUDA runtime calls the loader makes (see _CudaRuntime), loaded once."""
    return _CudaRuntime()


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
