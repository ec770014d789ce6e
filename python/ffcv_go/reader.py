"""Reader: a .beton file's header, fields, metadata and allocation table."""
import copy
import inspect
import json
import os

import numpy as np

from . import _lib
from .fields.base import ARG_TYPE
from .types import ALLOC_TABLE_TYPE, CURRENT_VERSION, TYPE_ID_HANDLER  # noqa: F401 - FFCV's module path


class Reader:
    """Opens a .beton dataset (memory-mapped by the Go core).

    fname is a file, a directory (its *.beton files, sorted), a glob (its
    matches, sorted) or a list of these: several files are shards with one set
    of fields read as one dataset, sample indices in shard order.
    ``metadata`` is a numpy structured array (columns f0, f1, ...) and
    ``alloc_table`` a structured array (pointers of shards moved into one
    address space), both zero-copy views of the Go reader's tables.
    custom_handlers maps the names of custom fields to their Field classes.
    ``sources`` is None, except for the reader of a Loader over a Mixture,
    whose sources it reads as one dataset (see Loader.sources).

    Two call forms: FFCV 1.0's ``Reader(fname, custom_handlers={})`` and
    FFCV-SSL's ``Reader(path, custom_handlers={}, custom_field_mapper=None)``
    (positionally the same). custom_field_mapper maps view names to fields:
    ``handlers`` gets a copy of the field's handler under each view's name,
    as FFCV-SSL's; ``field_names`` and the metadata keep the file's fields.
    """

    def __init__(self, *args, **kwargs):
        if "fname" in kwargs and "path" in kwargs:
            raise TypeError("Reader: give the dataset as fname= (FFCV 1.0) or path= (FFCV-SSL), not both")
        form = _ffcv_form if "fname" in kwargs else _ffcv_ssl_form
        try:
            bound = inspect.signature(form).bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"Reader: {e}") from None
        bound.apply_defaults()
        a = bound.arguments
        self._open(a.get("fname", a.get("path")), a["custom_handlers"], a.get("custom_field_mapper"))

    def _open(self, fname, custom_handlers, custom_field_mapper):
        specs = [os.fspath(p) for p in fname] if isinstance(fname, (list, tuple)) else [os.fspath(fname)]
        self.file_name = ", ".join(specs) if len(specs) <= 2 else f"{specs[0]} … {specs[-1]} ({len(specs)} paths)"
        self.custom_handlers = dict(custom_handlers)
        # Directories and globs are expanded once, by the Go core; every error
        # of the open names the file already.
        self.file_names = _lib.call_json("ffcv_dataset_paths", json.dumps(specs).encode())
        self.sources = self.side = None
        self._setup(_lib.call("ffcv_dataset_open", json.dumps(self.file_names).encode(), self._custom_layouts()),
                    custom_field_mapper)

    @classmethod
    def _of_mixture(cls, mixture):
        """The Reader of a loader.Mixture: its sources read as one dataset,
        sample ids source by source. ``sources`` describes them: name, files,
        start (first sample id), samples, take (samples per epoch)."""
        self = cls.__new__(cls)
        self.custom_handlers = {}
        handle, info = _lib.mixture_open(mixture._spec())  # its errors name the source
        self.file_name = info["name"]  # as the Go reader's errors call it: "mixture of 3 sources"
        self.sources = info["sources"]
        self.side = info["side"]  # the sources of weight 0: not among the samples, read by operations
        self.file_names = [f for s in self.sources for f in s["files"]]
        self._setup(handle)
        return self

    def _setup(self, handle, custom_field_mapper=None):
        self._mapping = _Mapping(handle)
        self._handle = handle
        info = _lib.call_json("ffcv_reader_info", handle, context=self.file_name)
        self._info = info
        self.num_samples = info["num_samples"]
        self.page_size = info["page_size"]
        self.shards = [(s["path"], s["num_samples"]) for s in info["shards"]]
        info["fields"] = info["fields"] or []  # a file may have no fields
        self.field_names = [f["name"] for f in info["fields"]]
        self.handlers = {}
        for f in info["fields"]:
            try:
                self.handlers[f["name"]] = self._make_handler(f)
            except (TypeError, ValueError) as e:
                raise _lib.CorruptFileError(f"{self.file_name}: field {f['name']!r}: {e}") from None
        self.fields = self.handlers
        self._add_views(custom_field_mapper)
        self._buffer = None  # the map, where there is one (not for a file read without one)
        if info["mapped"]:
            self._buffer = self._view(*_lib.reader_mmap(handle))
        types = [(f"f{i}", self.handlers[n].metadata_type) for i, n in enumerate(self.field_names)]
        self.metadata_type = np.dtype(types, align=True)
        if self.metadata_type.itemsize != info["row_size"]:
            raise _lib.CorruptFileError(f"{self.file_name}: metadata row is {info['row_size']} bytes, handlers give "
                                        f"{self.metadata_type.itemsize}")
        meta, allocs = _lib.reader_tables(handle)
        self.metadata = self._view(*meta).view(self.metadata_type)
        self.alloc_table = self._view(*allocs).view(ALLOC_TABLE_TYPE)

    def _add_views(self, mapper):
        for view, source in (mapper or {}).items():
            if source not in self.field_names:
                raise ValueError(f"{self.file_name}: custom_field_mapper maps {view!r} to {source!r}, which is not "
                                 f"a field (fields: {', '.join(self.field_names)})")
            if view in self.field_names:
                raise ValueError(f"{self.file_name}: custom_field_mapper: {view!r} is already a field")
            self.handlers[view] = copy.copy(self.handlers[source])

    def _view(self, address, size):
        """A read-only uint8 view of Go-owned memory that keeps the reader open."""
        return _lib.memory_view(address, size, self._mapping)

    def _mapped(self, what):
        """The map, for what needs one; a clear error where there is none."""
        if self._buffer is None:
            raise ValueError(f"{self.file_name}: {what} reads through a memory map, and this dataset is read "
                             f"without one (through the process cache, os_cache=False)")
        return self._buffer

    def _custom_layouts(self):
        # Custom handlers' metadata types may depend on their args: the Go
        # core describes the fields first, then opens with their layouts.
        if not self.custom_handlers:
            return None
        fields = _lib.call_json("ffcv_file_fields", self.file_names[0].encode())
        layouts = {}
        for f in fields:
            if f["type_id"] == 255 and f["name"] in self.custom_handlers:
                mt = np.dtype(self._make_handler(f).metadata_type)
                layouts[f["name"]] = [mt.itemsize, mt.alignment]
        return _custom_json(self.custom_handlers, layouts)

    def _make_handler(self, f):
        args = np.zeros(1, dtype=ARG_TYPE)[0]
        if f["type_id"] == 255:
            cls = self.custom_handlers[f["name"]]
            raw = np.frombuffer(bytes.fromhex(f.get("args_hex", "")), dtype=np.uint8)
            if raw.size == 1024:
                args = raw.view(ARG_TYPE)[0]
            handler = cls.from_binary(args)
            # Stored as a custom field: the Go decoders do not know its
            # layout, so built-in decoders read it in Python (see fields/base.py, _Decoder).
            handler._custom_stored = True
            return handler
        cls = self.custom_handlers.get(f["name"]) or TYPE_ID_HANDLER[f["type_id"]]
        if f["type_id"] in (4, 6):
            from .fields.ndarray import NDArrayField, TorchTensorField
            dtype = np.dtype(f["dtype"])
            if f["type_id"] == 6:
                import torch
                return TorchTensorField(torch.from_numpy(np.empty(0, dtype=dtype)).dtype, tuple(f["shape"] or ()))
            return NDArrayField(dtype, tuple(f["shape"] or ()))
        if f["type_id"] in (100, 101, 102, 103):  # their arguments say what they hold
            raw = np.frombuffer(bytes.fromhex(f.get("args_hex", "")), dtype=np.uint8)
            if raw.size == 1024:
                args = raw.view(ARG_TYPE)[0]
        return cls.from_binary(args)

    def read(self, sample, field):
        """The stored heap bytes of one field of one sample (a read-only view), or None."""
        if isinstance(field, str):
            if field not in self.field_names:
                raise ValueError(f"{self.file_name}: no field {field!r} (fields: {', '.join(self.field_names)})")
            idx = self.field_names.index(field)
        else:
            idx = int(field)
            if not 0 <= idx < len(self.field_names):
                raise IndexError(f"{self.file_name}: field index {idx} out of range [0, {len(self.field_names)})")
        if not 0 <= int(sample) < self.num_samples:
            raise IndexError(f"{self.file_name}: sample {sample} out of range [0, {self.num_samples})")
        _, _, heap, heap_len = _lib.reader_read(self._handle, int(sample), idx, context=self.file_name)
        if not heap:
            return None
        start = heap - self._mapped("read").ctypes.data
        return self._buffer[start:start + heap_len]

    def verify(self, num_workers=-1):
        """Reads every sample, decoding images fully; returns the problems
        found as [{'sample', 'field', 'error'}], in sample order."""
        return _lib.call_json("ffcv_verify", self._handle, int(num_workers), context=self.file_name)

    def close(self):
        """Drops this reader's references; the map goes once no view of it is left."""
        self.metadata = self.alloc_table = self._buffer = self._mapping = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _ffcv_form(fname, custom_handlers={}):
    """FFCV 1.0's Reader signature."""


def _ffcv_ssl_form(path, custom_handlers={}, custom_field_mapper=None):
    """FFCV-SSL's Reader signature."""


class _Mapping:
    """Owns a reader handle; closing it unmaps the file, so it is closed only
    when the last numpy view of the map is gone."""

    def __init__(self, handle):
        self.handle = handle

    def __del__(self):
        try:
            _lib.close(self.handle)
        except Exception:
            pass


def _custom_json(handlers, layouts):
    if not layouts:
        return None
    return json.dumps(layouts).encode()
