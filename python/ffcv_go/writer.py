"""DatasetWriter: turns an indexed dataset into a .beton file.

Python only fetches samples (optionally with a thread or process pool); the
Go core encodes them in parallel and packs pages in index order, so the file
is the same whatever the number of workers, and it appears atomically.
"""
import json
import os
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field as _dc_field
from typing import List

import numpy as np

from . import _forked, _lib
from .fields.base import Field, _set_data
from .types import CURRENT_VERSION, TYPE_ID_HANDLER  # noqa: F401 - FFCV's module path
from .utils import _cpu_count, _get_item, _progress

MiB = 1 << 20
MIN_PAGE_SIZE = 1 << 21  # 2 MiB
MAX_PAGE_SIZE = 1 << 32  # exclusive: page offsets are uint32 in the header


def from_shard(shard, pipeline):
    """pipeline(webdataset.WebDataset(shard)): the samples of one shard."""
    try:
        import webdataset as wds
    except ImportError:
        raise ImportError("from_webdataset needs the webdataset package (pip install webdataset)") from None
    return pipeline(wds.WebDataset(shard, shardshuffle=False, empty_check=False))


def count_samples_in_shard(shard, pipeline):
    """How many samples from_shard(shard, pipeline) yields."""
    return sum(1 for _ in from_shard(shard, pipeline))


@dataclass
class WriteReport:
    """What a write wrote and what it left out: the one-pass conversions'
    (``from_webdataset`` without a pipeline, ``from_parquet``,
    ``from_huggingface``) and ``from_indexed_dataset``'s.

    files: the .beton files written, in order (a Loader reads them as one
    dataset); counts: the samples in each; samples: in all; skipped: the
    samples left out; problems: the first 1000 problems, each a dict
    {shard, key, member, reason, sample_skipped} (key None for a shard
    problem, member None where no member is at fault: a missing one, an
    Arrow row, a shard problem; from_indexed_dataset: shard the value's
    file, '' for other values, key the dataset index, member the field);
    num_problems: all of them; problem_groups: the problems by reason (the
    same in many samples is one group), each a dict {reason, count,
    sample_skipped, examples: the first 3 problems}. str(report)
    summarizes it."""
    files: List[str]
    counts: List[int]
    samples: int
    skipped: int = 0
    problems: List[dict] = _dc_field(default_factory=list)
    num_problems: int = 0
    problem_groups: List[dict] = _dc_field(default_factory=list)

    def __str__(self):
        head = (f"{self.samples} samples in {len(self.files)} file{'s' if len(self.files) != 1 else ''}, "
                f"{self.skipped} skipped, {self.num_problems} problems")
        from ._ingest import problem_lines
        return "\n  ".join([head] + problem_lines(self.problem_groups))


def _report(r):
    """The WriteReport of a one-pass job's report."""
    return WriteReport(files=r["files"], counts=r["counts"], samples=r["samples"], skipped=r["skipped"],
                       problems=r["problems"], num_problems=r["num_problems"],
                       problem_groups=r.get("problem_groups") or [])


class DatasetWriter:
    """Writes samples with the given fields (name -> Field, in order) to fname.

    page_size: heap page size (a power of two, 2 MiB to < 4 GiB). Each
    sample must fit in one page; the process cache and remote reads fetch
    whole pages. A dataset whose tables and samples fit in one page is
    written as that page alone, unpadded (docs/design/format.md).
    num_workers: Go encoder threads (< 1: every CPU).
    """

    def __init__(self, fname, fields, page_size=8 * MiB, num_workers=-1, progress=True):
        if not isinstance(fields, dict) or not fields:
            raise ValueError("fields must be a non-empty dict of name -> Field")
        for name, f in fields.items():
            if not isinstance(name, str) or not name.isascii() or len(name.encode()) > 16 or not name:
                raise ValueError(f"field name {name!r} must be 1 to 16 ASCII characters")
            if not isinstance(f, Field):
                raise TypeError(f"field {name!r}: {f!r} is not a Field instance")
        for name, f in fields.items():
            if hasattr(f, "_check_follows"):  # targets name the field they belong to
                f._check_follows(name, fields)
        self.fname = os.fspath(fname)
        self.fields = dict(fields)
        self.page_size = int(page_size)
        if self.page_size < MIN_PAGE_SIZE or self.page_size >= MAX_PAGE_SIZE or self.page_size & (self.page_size - 1):
            raise ValueError(f"page_size {page_size} must be a power of two, at least 2 MiB and below 4 GiB")
        self.num_workers = int(num_workers)
        self.progress = progress
        self.num_samples = None
        self._handle = None
        self._specs = []
        self._python_encoded = []  # fields whose own encode() writes them
        for name, f in self.fields.items():
            spec, own = _field_spec(name, f)
            self._specs.append(spec)
            self._python_encoded.append(own)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def from_indexed_dataset(self, dataset, indices=None, chunksize=100, shuffle_indices=False,
                             pool="auto", pool_workers=None, errors="raise"):
        """Writes dataset[i] for i in indices (all by default) as samples 0, 1, ...

        Each item is a tuple with one value per field, in the fields' order,
        or a dict of field name -> value (as MosaicML Streaming, litdata and
        Hugging Face datasets yield): it must have every field's key, and
        its other keys are ignored (a dataset's extra columns). (A writer of
        one field takes a dict without that key as the field's value, e.g. a
        JSONField's document.) Items are fetched
        in parallel (pool_workers of them, default: every CPU) and written in
        index order, so the file is the same for any pool and worker count:

        - pool='auto' (default): items that take under 0.1 ms each are
          fetched on this thread; slower ones in forked processes (FFCV's
          choice, right for Python-heavy datasets), or threads where fork is
          unavailable;
        - pool='process' / 'thread' / None: processes, threads (best when
          items release the GIL: file reads, decoders) or this thread.

        A torchvision ImageFolder (any DatasetFolder with its default loader
        and no transforms) written to (RGBImageField, IntField) skips Python
        entirely: its file paths go to the Go encoder, which reads and
        decodes the images in its own threads (DCT-scaled when
        max_resolution is at least 2x smaller than a JPEG).

        errors: 'raise' (default) fails the write at the first item a field
        refuses as it is fetched (a corrupt or truncated video, a missing
        video file, an array of the wrong type or shape); 'skip' leaves such
        items out, warns, and lists them in the returned WriteReport (the
        file then has fewer samples than items, in their order). Files the
        Go encoder reads itself (ImageFolder images, frame files) are not
        fetched in Python: a bad one fails the write either way.
        """
        from . import _ingest
        _ingest.check_errors(errors)
        if indices is None:
            indices = np.arange(len(dataset))
        indices = np.asarray(indices, dtype=np.int64).reshape(-1)
        if shuffle_indices:
            indices = indices.copy()
            np.random.shuffle(indices)
        items = _path_items(dataset, indices, self.fields)
        if items is None:
            workers = int(pool_workers) if pool_workers else _cpu_count()
            items = _fetch(dataset, indices, chunksize, pool, workers, self._portable)
        try:
            return self._write(len(indices), items, indices, skip=errors == "skip")
        finally:
            items.close()  # stops the pool now, also on errors

    def from_image_folder(self, root):
        """Writes an ImageFolder tree (class folders of images; labels by sorted
        folder name) with no Python per image: files are read, decoded,
        resized and encoded by Go threads. The writer's fields must be
        (image: RGBImageField, label: IntField); returns the class names."""
        kinds = [type(f).__name__ for f in self.fields.values()]
        if kinds != ["RGBImageField", "IntField"] or list(self.fields) != ["image", "label"]:
            raise ValueError("from_image_folder writes fields {'image': RGBImageField(...), 'label': IntField()}; "
                             f"this writer has {dict(zip(self.fields, kinds))}")
        return _write_image_folder(self, root, self.fields["image"], self.progress)["classes"]

    def from_webdataset(self, shards, pipeline=None, *, extensions=None, ignore=(), errors="raise",
                        output_shards=None, readers=None):
        """Writes the samples of webdataset shards (tar files), in order.

        FFCV's form, ``from_webdataset(shards, pipeline)``:
        pipeline(webdataset.WebDataset(shard)) yields one tuple per sample, a
        value per field (e.g. ``ds.decode().to_tuple(...)``); shards are read
        twice, once to count their samples, and decoded in Python, as FFCV
        does.

        Without a pipeline the shards are read once, in the Go core, several
        at a time: local paths, s3:// and http(s):// URLs, a list or one
        string (webdataset's ``{000..099}`` syntax, a glob, a directory). An
        image member's bytes go straight to the image encoder (no decoding
        in Python); other members go to fields by extension:

        - extensions: {field: "jpg;png"} (the first present wins) or
          "json:key.path" (a value inside the JSON member); defaults by field
          kind: RGBImageField "jpg;jpeg;png;webp", AudioField
          "flac;wav;mp3;opus;ogg" (the file's bytes go to the audio
          encoder, which refuses a corrupt or truncated one), TextField
          "txt" (one caption; a JSON list of strings gives several),
          IntField "cls", JSONField "json";
        - ignore: extensions the shards hold that no field takes; any other
          such member is a problem;
        - errors: 'raise' (default) fails the write at the first problem (an
          image that does not decode, a missing member, an unknown
          extension, a damaged shard), naming the shard and the sample's
          key; 'skip' leaves such samples out (an unknown member only loses
          itself), warns, and lists them in the report;
        - output_shards: None writes one file, fname; 'input' one .beton per
          input shard; a size (bytes, or e.g. '512MB') cuts a new file once
          one holds that much. fname then numbers the files:
          'out/train-{:05d}.beton' (or a directory: its 00000.beton, ...);
        - readers: shards read ahead at once (default: up to 4).

        A TextField with a tokenizer has its captions tokenized here, in
        batches, while Go reads and encodes. The files are the same for any
        num_workers and readers. Returns a WriteReport.
        """
        if pipeline is not None:
            if extensions is not None or output_shards is not None or tuple(ignore) or errors != "raise":
                raise ValueError("from_webdataset: a pipeline (FFCV's form) takes no extensions, ignore, errors "
                                 "or output_shards; leave it out to read the shards in Go")
            shards = [str(s) for s in shards]
            lengths = [count_samples_in_shard(s, pipeline) for s in shards]
            ids = np.concatenate([np.arange(k) for k in lengths]) if lengths else np.zeros(0, np.int64)
            self._write(sum(lengths), (x for s in shards for x in from_shard(s, pipeline)), ids)
            return None
        from . import _ingest
        spec = _ingest.base_spec(self, errors, output_shards)
        if isinstance(ignore, str):
            ignore = [ignore]
        spec.update(shards=_ingest.expand_shards(shards), take=_ingest.webdataset_take(self, extensions),
                    ignore=[str(e).lower().lstrip(".") for e in ignore], readers=int(readers or 0))
        handle = _lib.call("ffcv_ingest_webdataset", json.dumps(spec).encode(), context=self.fname)
        return _report(_ingest.run(self, handle))

    def from_streaming(self, path, columns=None, *, errors="raise", output_shards=None, readers=None):
        """Writes the samples of a MosaicML Streaming (MDS) dataset, in order,
        read in one pass by the Go core: path is its directory (where
        ``MDSWriter(out=...)`` wrote index.json and the shards), local or an
        ``s3://`` or ``http(s)://`` prefix (a split is a subdirectory:
        ``path/train``). Shards compressed with zstd, gz, bz2 or snappy are
        read; brotli is refused.

        columns maps field names to column names (default: the same name).
        An RGBImageField takes a jpeg, png, pil (L, RGB, RGBA) or bytes
        column; image files go to the encoder as they are, so with
        ``keep_source_jpeg=True`` a JPEG within ``max_resolution`` is stored
        byte for byte. An IntField takes integer columns (int, int8 ...
        uint64, str_int); a FloatField those and float16/32/64, str_float,
        str_decimal; a TextField str, or json holding a string or a list of
        strings; a JSONField json (or str holding JSON); a BytesField any
        column's bytes; an AudioField a bytes column holding audio files
        (WAV, FLAC, MP3, Ogg/Opus). Columns no field takes are left out. errors,
        output_shards ('input': one .beton per MDS shard) and readers are
        as for from_webdataset. Returns a WriteReport."""
        return self._from_columns("mds", path, columns, errors, output_shards, readers)

    def from_litdata(self, path, columns=None, *, errors="raise", output_shards=None, readers=None):
        """Writes the items of a litdata dataset (``litdata.optimize``'s
        output), in order, read in one pass by the Go core: path is its
        directory (index.json and the chunk .bin files), local or an
        ``s3://`` or ``http(s)://`` prefix. Chunks compressed whole with zstd
        are read; per-batch or per-sample compression and encryption are
        refused.

        An item's columns are its leaves: a dict's keys ("image"), a tuple's
        indices ("0"), joined by dots for nested items ("meta.caption");
        columns maps field names to them (default: the same name). Fields
        take litdata's serializers as from_streaming takes MDS encodings:
        jpeg, image, pil or bytes for an RGBImageField, int or bool for an
        IntField, those and float for a FloatField, str for a TextField or a
        JSONField, bytes holding an audio file for an AudioField, anything
        for a BytesField. errors, output_shards
        ('input': one .beton per chunk) and readers are as for
        from_webdataset. Returns a WriteReport."""
        return self._from_columns("litdata", path, columns, errors, output_shards, readers)

    def _from_columns(self, fmt, path, columns, errors, output_shards, readers):
        from . import _ingest
        spec = _ingest.base_spec(self, errors, output_shards)
        spec.update(format=fmt, root=os.fspath(path), columns=_ingest.table_columns(self, columns),
                    readers=int(readers or 0))
        handle = _lib.call("ffcv_ingest_columns", json.dumps(spec).encode(), context=os.fspath(path))
        return _report(_ingest.run(self, handle))

    def from_parquet(self, files, columns=None, *, key=None, batch_size=1024, errors="raise", output_shards=None):
        """Writes the rows of Parquet files, in order, read with pyarrow in
        record batches whose buffers go to the Go core as they are: no
        per-sample Python work (but the tokenizer's, if any).

        columns maps field names to column names (default: the same name).
        An RGBImageField takes a binary column of image files (Hugging
        Face's {"bytes", "path"} image structs included), an AudioField
        one of audio files (WAV, FLAC, MP3, Ogg/Opus; Hugging Face's
        {"bytes", "path"} Audio structs included); a TextField a
        string column, or a list of strings for several captions; IntField
        and FloatField numeric columns; JSONField a string column of JSON;
        BytesField a binary one. key names a column naming the rows in
        reports (default "row N"). errors and output_shards ('input': one
        .beton per Parquet file) are as for from_webdataset; a null value
        is a problem. Returns a WriteReport."""
        import pyarrow.parquet as pq
        from . import _ingest
        if isinstance(files, (str, os.PathLike)):
            files = [files]
        files = [f for x in files for f in (_ingest.expand_shards(x) if any(c in os.fspath(x) for c in "*?[")
                                             else [os.fspath(x)])]
        cols = _ingest.arrow_columns(self, columns)
        wanted = sorted(set(cols + ([key] if key else [])))

        def batches(path):
            pf = pq.ParquetFile(path)
            missing = [c for c in wanted if c not in pf.schema_arrow.names]
            if missing:
                raise ValueError(f"{path}: no column {', '.join(map(repr, missing))} "
                                 f"(columns: {', '.join(pf.schema_arrow.names)})")
            yield from pf.iter_batches(batch_size=int(batch_size), columns=wanted)
        return self._from_arrow(files, [batches(f) for f in files], cols, key, errors, output_shards)

    def from_huggingface(self, dataset, columns=None, *, key=None, batch_size=1024, errors="raise",
                         output_shards=None):
        """Writes the rows of a Hugging Face ``datasets.Dataset`` (one split),
        in order, from its Arrow table: image and audio columns (the Image
        and Audio features' {"bytes", "path"} structs: the files go to the
        Go encoders undecoded), text, list-of-text and label columns go
        to the Go core as Arrow buffers, as in from_parquet (which see for
        columns, key, errors and output_shards)."""
        from . import _ingest
        kind = type(dataset).__name__
        if not hasattr(dataset, "with_format") or not isinstance(getattr(dataset, "column_names", None), list):
            hint = " (pick a split: dataset['train'])" if kind.endswith("DatasetDict") else ""
            raise TypeError(f"from_huggingface needs a datasets.Dataset, got a {kind}{hint}")
        cols = _ingest.arrow_columns(self, columns)
        wanted = sorted(set(cols + ([key] if key else [])))
        missing = [c for c in wanted if c not in dataset.column_names]
        if missing:
            raise ValueError(f"the dataset has no column {', '.join(map(repr, missing))} "
                             f"(columns: {', '.join(dataset.column_names)})")
        ds = dataset.select_columns(wanted).with_format("arrow")
        n, step = len(ds), int(batch_size)

        def batches():
            for i in range(0, n, step):
                yield ds[i:i + step]
        info = getattr(dataset, "info", None)
        name = getattr(info, "dataset_name", None) or getattr(info, "builder_name", None) or "dataset"
        split = getattr(dataset, "split", None)
        return self._from_arrow([f"{name}[{split}]" if split else name], [batches()], cols, key, errors,
                                output_shards)

    def _from_arrow(self, names, sources, cols, key, errors, output_shards):
        from . import _ingest
        spec = _ingest.base_spec(self, errors, output_shards)
        spec["sources"] = [str(n) for n in names]
        handle = _lib.call("ffcv_ingest_arrow", json.dumps(spec).encode(), context=self.fname)
        return _report(_ingest.run(self, handle, _ingest.push_batches(handle, self, sources, cols, key)))

    def prepare(self):
        """Starts the file for self.num_samples samples (the first step of
        every write; from_* methods call it). The file appears only at
        finalize()."""
        spec = {"num_samples": int(self.num_samples), "page_size": self.page_size,
                "num_workers": self.num_workers, "fields": self._specs,
                "at_most": bool(getattr(self, "_at_most", False))}
        self._handle = _lib.call("ffcv_writer_create", self.fname.encode(), json.dumps(spec).encode(),
                                 context=self.fname)

    def finalize(self, allocations=None):
        """Finishes the file started by prepare() (metadata, allocation
        table, header) and renames it into place. allocations is FFCV's
        list of the workers' allocations; the Go writer keeps its own."""
        handle, self._handle = self._handle, None
        if handle is None:
            raise ValueError(f"{self.fname}: finalize() without prepare()")
        _lib.call("ffcv_writer_finish", handle, context=self.fname)

    def _write(self, n, items, source_ids, skip=False):
        """Writes the n items; with skip, an item a field refuses is left
        out (the file has the samples written) and reported. Returns the
        WriteReport."""
        from . import _ingest
        self.num_samples = int(n)
        self._at_most = skip
        self.prepare()
        handle = self._handle
        bar = _progress(n, self.progress)
        nf = len(self._specs)
        fields = list(self.fields.items())
        done = False
        problems, num_problems = [], 0
        try:
            got, pos = 0, 0  # items taken, samples written
            chunk, keep = [], []
            for item in items:
                if self._by_name(item):
                    item = self._from_dict(item, source_ids[pos])
                elif not isinstance(item, (tuple, list)):
                    item = (item,)
                if len(item) != nf:
                    raise ValueError(f"dataset item {source_ids[got]} has {len(item)} values; "
                                     f"the writer has {nf} fields ({', '.join(self.fields)})")
                vals = _lib.values(nf)
                got += 1
                try:
                    for k, ((name, f), value) in enumerate(zip(fields, item)):
                        try:
                            if isinstance(value, _Refused):
                                raise value.error
                            if self._python_encoded[k]:
                                _encode_custom(f, value, vals[k], keep)
                            else:
                                f._value(value, vals[k], keep)
                        except (TypeError, ValueError, OverflowError) as e:
                            raise type(e)(f"dataset item {source_ids[got - 1]}, field {name!r}: {e}") from None
                except (TypeError, ValueError, OverflowError, OSError) as e:
                    if not skip:
                        raise
                    num_problems += 1
                    if len(problems) < 1000:
                        problems.append({"shard": _source_file(value), "key": int(source_ids[got - 1]),
                                         "member": name, "reason": str(e), "sample_skipped": True})
                    if bar is not None:
                        bar.update(1)
                    continue
                chunk.append(vals)
                pos += 1
                if len(chunk) >= 64:
                    self._put(handle, pos - len(chunk), chunk)
                    chunk, keep = [], []
                    if bar is not None:
                        bar.update(64)
            if got != n:
                raise ValueError(f"dataset gave {got} items, expected {n}")
            if chunk:
                self._put(handle, pos - len(chunk), chunk)
                if bar is not None:
                    bar.update(len(chunk))
            done = True
            self.finalize(None)
        except BaseException:
            if not done:
                self._handle = None
                _lib.call("ffcv_writer_abort", handle)
            raise
        finally:
            if bar is not None:
                bar.close()
        report = {"files": [self.fname], "counts": [pos], "samples": pos, "skipped": num_problems,
                  "problems": problems, "num_problems": num_problems}
        _ingest.warn_problems(self.fname, report, stacklevel=4)
        return _report(report)

    def _by_name(self, item):
        """Whether item is a dict of values by field name: a dict, but for a
        one-field writer's dict without that key (a JSONField's document)."""
        return isinstance(item, Mapping) and (len(self.fields) > 1 or next(iter(self.fields)) in item)

    def _from_dict(self, item, index):
        """A dict item's values in field order; its other keys are ignored."""
        missing = [name for name in self.fields if name not in item]
        if missing:
            raise KeyError(f"dataset item {index} has no key {', '.join(map(repr, missing))} (a dict item needs one "
                           f"per field: {', '.join(self.fields)}; its keys: {', '.join(map(repr, item))})")
        return tuple(item[name] for name in self.fields)

    def _portable(self, item):
        """item with each built-in field's value in the form that a fetch
        process sends back fastest (a PIL image as its pixel array), taken
        by _write exactly as the original; anything it cannot convert is
        left for _write to report."""
        fields = list(self.fields.values())
        if self._by_name(item):
            if any(name not in item for name in self.fields):
                return item
            item = tuple(item[name] for name in self.fields)
        single = not isinstance(item, (tuple, list))
        vals = (item,) if single else item
        if len(vals) != len(fields):
            return item
        out = []
        for f, v, own in zip(fields, vals, self._python_encoded):
            try:
                out.append(v if own else f._portable(v))
            except (TypeError, ValueError, OverflowError, OSError) as e:
                # A value the field refuses (a corrupt video): _write reports
                # it with the item's index, without decoding it again.
                out.append(_Refused(e, v))
            except Exception:  # noqa: BLE001 - _write raises the error with the item's index
                return item
        return out[0] if single else tuple(out)

    def _put(self, handle, first, chunk):
        nf = len(self._specs)
        flat = _lib.values(nf * len(chunk))
        for k, vals in enumerate(chunk):
            for j in range(nf):
                flat[k * nf + j] = vals[j]
        _lib.call("ffcv_writer_put", handle, first, len(chunk), flat, context=self.fname)


class _Refused:
    """A value its field refused in a fetch worker: the error, and the
    value's file (for the report)."""
    __slots__ = ("error", "file")

    def __init__(self, error, value):
        self.error = error
        self.file = _source_file(value)

    def __reduce__(self):
        return _Refused._make, (self.error, self.file)

    @staticmethod
    def _make(error, file):
        r = _Refused(error, None)
        r.file = file
        return r


def _source_file(value):
    """The file a value names ('' for other values), for a WriteReport."""
    if isinstance(value, _Refused):
        return value.file
    return os.fspath(value) if isinstance(value, (str, os.PathLike)) else ""


def _builtin_base(f):
    """The built-in field class f is (or derives from), or None."""
    builtins = set(TYPE_ID_HANDLER.values()) - {None}
    return next((c for c in type(f).__mro__ if c in builtins), None)


def _field_spec(name, f):
    """The Go writer's spec of field f, and whether f's own encode() makes
    its values.

    As in FFCV, only the built-in classes themselves get their type id; any
    other Field (a subclass included) is written as type 255 with its
    to_binary() arguments and read back through custom_fields. A subclass
    that keeps its built-in encode() is still encoded by the Go writer."""
    base = _builtin_base(f)
    if base is not None and type(f) is base:
        spec = {"name": name, "type_id": f.TYPE_ID}
        spec.update(f._spec())
        return spec, False
    mt = np.dtype(f.metadata_type)
    args = np.asarray(f.to_binary())
    raw = args.tobytes()
    if len(raw) != 1024:
        raise ValueError(f"field {name!r}: to_binary() gives {len(raw)} bytes, a field descriptor holds 1024")
    spec = {"name": name, "type_id": 255, "args_hex": raw.hex(), "column": [mt.itemsize, mt.alignment]}
    if base is not None and type(f).encode is base.encode:
        if mt != np.dtype(base.metadata_type.fget(f)):
            raise ValueError(f"field {name!r}: {type(f).__name__} changes the metadata type of {base.__name__} "
                             "but not its encode()")
        spec.update(f._spec())
        spec["encoder"] = base.TYPE_ID
        return spec, False
    spec["encoder"] = 255
    return spec, True


# What malloc hands a custom encode() as the heap pointer: the writer finds
# it in the metadata column and replaces it by the real file offset.
_PTR_TOKEN = 0x7FC0_FFC6_0A11_0C8D


def _encode_custom(f, value, v, keep):
    """Runs FFCV's f.encode(destination, value, malloc) into writer value v."""
    dest = np.zeros(1, dtype=f.metadata_type)
    heap = []

    def malloc(size):
        if heap:
            raise ValueError(f"{type(f).__name__}.encode called malloc twice; ffcv_go stores one heap "
                             "allocation per field and sample")
        buf = np.zeros(int(size), dtype=np.uint8)
        heap.append(buf)
        return _PTR_TOKEN, buf

    f.encode(dest, value, malloc)
    col = dest.view(np.uint8).reshape(-1).copy()
    v.ptr_offset = -1
    if heap:
        at = col.tobytes().find(_PTR_TOKEN.to_bytes(8, "little"))
        if at < 0:
            raise ValueError(f"{type(f).__name__}.encode allocated memory with malloc but did not store the "
                             "pointer it returned in the metadata")
        col[at:at + 8] = 0
        v.ptr_offset = at
        _set_data(v, heap[0], keep)
    keep.append(col)
    v.column = col.ctypes.data if col.nbytes else None
    v.column_len = col.nbytes

def _path_items(dataset, indices, fields):
    """(path, label) items for a torchvision DatasetFolder whose items are
    exactly its files loaded by the default loader, written to fields
    (RGBImageField, IntField); None for anything else."""
    kinds = [type(f).__name__ for f in fields.values()]
    samples = getattr(dataset, "samples", None)
    if kinds != ["RGBImageField", "IntField"] or not isinstance(samples, list) or len(samples) != len(dataset):
        return None
    try:
        from torchvision.datasets import folder
    except ImportError:
        return None
    if (not isinstance(dataset, folder.DatasetFolder)
            or type(dataset).__getitem__ is not folder.DatasetFolder.__getitem__
            or getattr(dataset, "loader", None) not in (folder.default_loader, folder.pil_loader)
            or getattr(dataset, "transform", None) is not None
            or getattr(dataset, "target_transform", None) is not None):
        return None
    if folder.default_loader is getattr(dataset, "loader", None):
        from torchvision import get_image_backend
        if get_image_backend() != "PIL":
            return None
    return ((_ImagePath(samples[i][0]), samples[i][1]) for i in indices)


class _ImagePath(os.PathLike):
    """An image file for the Go encoder to read."""
    __slots__ = ("path",)

    def __init__(self, path):
        self.path = os.fspath(path)

    def __fspath__(self):
        return self.path


def _get_chunk(dataset, idx, prepare=None):
    if prepare is None:
        return [_get_item(dataset, i) for i in idx]
    return [prepare(_get_item(dataset, i)) for i in idx]


def _fetch(dataset, indices, chunksize, pool, workers, portable=None):
    """Yields dataset[i] for i in indices, in order (see from_indexed_dataset
    for pool). At most 4 chunks per worker are in flight, so memory stays
    bounded when the encoder is the slower side. Fetch processes and threads
    pass items through portable (which decodes videos, for instance)."""
    if pool not in ("auto", "process", "thread", None):
        raise ValueError(f"pool {pool!r} must be 'auto', 'process', 'thread' or None")
    indices = [int(i) for i in indices]
    start = 0
    if pool == "auto":
        # Time a few items here: cheap ones are not worth a pool.
        import time
        t0 = time.perf_counter()
        while start < len(indices) and start < 32 and time.perf_counter() - t0 < 0.2:
            item = _get_item(dataset, indices[start])
            yield item if portable is None else portable(item)
            start += 1
        per_item = (time.perf_counter() - t0) / max(start, 1)
        if start == len(indices) or per_item < 1e-4 or workers < 2:
            pool = None
        else:
            import multiprocessing
            pool = "process" if "fork" in multiprocessing.get_all_start_methods() else "thread"
    if pool is None:
        for i in indices[start:]:
            yield _get_item(dataset, i)
        return
    chunksize = max(1, int(chunksize))
    if pool == "thread":
        chunksize = min(chunksize, 16)  # threads share the work finer
    chunks = [indices[k:k + chunksize] for k in range(start, len(indices), chunksize)]
    if pool == "process":
        # Forked here, at most 32 items in: before the first chunk of 64 reaches
        # the Go writer, so no Go thread is inside C code (libjpeg) at fork time.
        yield from _forked.fetch(dataset, chunks, workers, depth=4, prepare=portable)
        return
    from collections import deque
    depth = 4 * max(1, workers)
    pending = deque()
    ex = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ffcv_go-fetch")
    try:
        for idx in chunks:
            pending.append(ex.submit(_get_chunk, dataset, idx, portable))
            if len(pending) >= depth:
                yield from pending.popleft().result()
        while pending:
            yield from pending.popleft().result()
    finally:
        for f in pending:
            f.cancel()
        ex.shutdown(wait=True)


def _write_image_folder(writer, root, image_field, progress):
    """Runs the Go ImageFolder writer in a thread, polling its progress."""
    import threading
    root = os.fspath(root)
    listing = _lib.call_json("ffcv_scan_image_folder", root.encode(), context=root)
    n = len(listing["files"])
    spec = {"page_size": writer.page_size, "num_workers": writer.num_workers, "image": image_field._spec()}
    counter = _lib.Counter()
    result = {}

    def run():
        try:
            _lib.call("ffcv_write_image_folder", root.encode(), writer.fname.encode(), json.dumps(spec).encode(),
                      counter.ref, context=root)
        except BaseException as e:  # re-raised in the caller's thread
            result["error"] = e

    t = threading.Thread(target=run, name="ffcv_go-image-folder", daemon=True)
    t.start()
    bar = _progress(n, progress)
    try:
        while t.is_alive():
            t.join(0.1)
            if bar is not None:
                bar.update(counter.value - bar.n)
    finally:
        if bar is not None:
            bar.close()
    if "error" in result:
        raise result["error"]
    return listing
