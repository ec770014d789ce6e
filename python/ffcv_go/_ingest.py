"""DatasetWriter's one-pass conversions (webdataset shards, MDS and litdata
datasets, Parquet files, Hugging Face datasets): the Go core reads, encodes and places the samples;
Python names the inputs, hands over Arrow buffers as they are, and runs the
user's tokenizer on the captions Go passes it."""
import glob
import json
import os
import re
import warnings

import numpy as np

from . import _lib

_DEFAULT_EXTENSIONS = {"RGBImageField": "jpg;jpeg;png;webp", "TextField": "txt", "IntField": "cls",
                       "JSONField": "json", "AudioField": "flac;wav;mp3;opus;ogg"}
_WDS_KINDS = ("RGBImageField", "AudioField", "TextField", "IntField", "FloatField", "JSONField", "BytesField")


# ---- output names and sizes ---------------------------------------------------

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?)b?\s*$", re.I)


def _parse_size(x):
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
        n = int(x)
    else:
        m = _SIZE.match(str(x))
        if not m:
            raise ValueError(f"output_shards {x!r}: give 'input', a number of bytes or a size such as '512MB'")
        base = 1024 if m.group(3) or m.group(2).lower() == "" else 1000
        n = int(float(m.group(1)) * base ** "_kmgt".index((m.group(2) or "_").lower()))
    if n <= 0:
        raise ValueError(f"output_shards {x!r}: the size must be positive")
    return n


_PLACEHOLDER = re.compile(r"\{(?::0?(\d*)d)?\}")


def _output(fname, output_shards):
    """(spec output, split, target) for fname and output_shards."""
    if output_shards is None:
        if _PLACEHOLDER.search(fname):
            raise ValueError(f"{fname}: a numbered name is for several files: pass output_shards ('input' or a size)")
        return {"prefix": fname, "width": -1, "suffix": ""}, "one", 0
    split, target = ("shard", 0) if output_shards == "input" else ("size", _parse_size(output_shards))
    found = list(_PLACEHOLDER.finditer(fname))
    if len(found) > 1:
        raise ValueError(f"{fname}: one placeholder for the file number, e.g. 'train-{{:05d}}.beton'")
    if not found:
        if fname.endswith(".beton"):
            raise ValueError(f"{fname}: several output files need a numbered name, e.g. 'train-{{:05d}}.beton' "
                             "(or a directory)")
        return {"prefix": os.path.join(fname, ""), "width": 5, "suffix": ".beton"}, split, target
    m = found[0]
    return {"prefix": fname[:m.start()], "width": int(m.group(1) or 0), "suffix": fname[m.end():]}, split, target


def _make_dirs(out):
    d = os.path.dirname(out["prefix"])
    if d and "://" not in out["prefix"]:
        os.makedirs(d, exist_ok=True)


# ---- inputs -------------------------------------------------------------------

def _brace_expand(s):
    """webdataset's shard syntax: {000..099} ranges (zero-padded as written) and {a,b} lists."""
    m = re.search(r"\{([^{}]*)\}", s)
    if not m:
        return [s]
    head, tail, body = s[:m.start()], s[m.end():], m.group(1)
    r = re.fullmatch(r"(\d+)\.\.(\d+)", body)
    if r:
        a, b = r.groups()
        width = len(a) if a.startswith("0") else 0
        items = [str(k).zfill(width) for k in range(int(a), int(b) + 1)]
    else:
        items = body.split(",")
    return [x for it in items for x in _brace_expand(head + it + tail)]


def expand_shards(shards):
    """The shard files shards names: a list, or one string with webdataset's
    brace syntax, a glob, a directory (its .tar/.tar.gz/.tgz files), or an
    s3:// pattern; sorted within each pattern."""
    if isinstance(shards, (str, os.PathLike)):
        shards = [shards]
    out = []
    for s in shards:
        for x in _brace_expand(os.fspath(s)):
            if x.startswith("s3://") and any(c in x for c in "*?["):
                out += _lib.call_json("ffcv_dataset_paths", json.dumps([x]).encode(), context=x)
            elif "://" in x:
                out.append(x)
            elif os.path.isdir(x):
                out += sorted(os.path.join(x, f) for f in os.listdir(x) if f.endswith((".tar", ".tar.gz", ".tgz")))
            elif any(c in x for c in "*?[") and not os.path.exists(x):
                m = sorted(glob.glob(x))
                if not m:
                    raise FileNotFoundError(f"{x}: the pattern matches no file")
                out += m
            else:
                out.append(x)
    if not out:
        raise ValueError("no input shards")
    return out


def webdataset_take(writer, extensions):
    """Per field {exts, json_key}: extensions[name] ("jpg;png", ["jpg", "png"],
    "json:caption") or the field kind's default."""
    extensions = dict(extensions or {})
    unknown = set(extensions) - set(writer.fields)
    if unknown:
        raise ValueError(f"extensions names {', '.join(sorted(unknown))}, not fields of this writer "
                         f"({', '.join(writer.fields)})")
    take = []
    for name, f in writer.fields.items():
        kind = type(f).__name__
        if kind not in _WDS_KINDS:
            raise ValueError(f"field {name!r}: a {kind} cannot be read from webdataset members "
                             f"(fields: {', '.join(_WDS_KINDS)})")
        spec = extensions.get(name, _DEFAULT_EXTENSIONS.get(kind))
        if spec is None:
            raise ValueError(f"field {name!r}: give the member extension it is read from, "
                             f"e.g. extensions={{{name!r}: 'bin'}}")
        if isinstance(spec, str):
            if ":" in spec:
                ext, key = spec.split(":", 1)
                take.append({"exts": [ext.strip().lower()], "json_key": key.strip()})
                continue
            spec = spec.split(";")
        exts = [e.strip().lower().lstrip(".") for e in spec if e.strip()]
        if not exts:
            raise ValueError(f"field {name!r}: no extension in {extensions.get(name)!r}")
        take.append({"exts": exts, "json_key": ""})
    return take


# ---- running a job ------------------------------------------------------------

def _tokenized(writer):
    """(index, field) of the TextField written with a tokenizer, or None."""
    found = [(i, f) for i, f in enumerate(writer.fields.values())
             if type(f).__name__ == "TextField" and f.tokens]
    if len(found) > 1:
        raise ValueError("a one-pass conversion tokenizes one TextField; give the others no tokenizer")
    return found[0] if found else None


def check_errors(errors):
    if errors not in ("raise", "skip"):
        raise ValueError(f"errors {errors!r} must be 'raise' or 'skip'")


def base_spec(writer, errors, output_shards):
    check_errors(errors)
    out, split, target = _output(writer.fname, output_shards)
    _make_dirs(out)
    tok = _tokenized(writer)
    return {"fields": writer._specs, "output": out, "split": split, "target": target, "skip": errors == "skip",
            "tokenize": [tok[0]] if tok else [], "page_size": writer.page_size, "num_workers": writer.num_workers}


def run(writer, handle, pusher=None):
    """Drives the job: tokenizes the captions it hands out, runs pusher (the
    thread handing it Arrow batches) beside, shows progress; returns the
    job's report (the fields of a WriteReport), warning of its problems. The
    job is aborted on any error (Ctrl-C included)."""
    import threading
    from .utils import _progress
    tok = _tokenized(writer)
    counter = _lib.Counter()
    bar = _progress(None, writer.progress)
    failure = {}

    def push():
        try:
            pusher()
        except BaseException as e:  # noqa: BLE001 - raised in the caller's thread
            failure["error"] = e

    thread = None
    try:
        if pusher is not None:
            thread = threading.Thread(target=push, name="ffcv_go-ingest-push", daemon=True)
            thread.start()
        report = None
        tokenizing = tok is not None
        while report is None and "error" not in failure:
            if tokenizing:
                got = _lib.ingest_texts(handle, 50)
                if got is False:
                    tokenizing = False
                elif got is not None:
                    batch, texts = got
                    offsets, ids = tok[1]._tok(texts)
                    _lib.ingest_tokens(handle, batch, offsets, ids)
                    continue
            report = _lib.ingest_wait(handle, 0 if tokenizing else 100, counter)
            if bar is not None:
                bar.update(counter.value - bar.n)
        if report is None:  # the pusher failed (bad column, unreadable file): abort, then say why
            _lib.close(handle)
            handle = None
            thread.join()
            raise failure["error"]
    except BaseException:
        if handle is not None:
            _lib.close(handle)  # aborts: a blocked push returns, the file being written goes
            handle = None
        if thread is not None:
            thread.join()
        raise
    finally:
        if handle is not None:
            _lib.close(handle)
        if thread is not None:
            thread.join()
        if bar is not None:
            bar.close()
    report["problems"] = report["problems"] or []
    warn_problems(writer.fname, report)
    return report


def warn_problems(fname, report, stacklevel=4):
    """Warns of a write's problems (the fields of a WriteReport), if any,
    a line per group of problems. A report without groups (the Python
    write path, whose reasons name each file) has a group per problem."""
    if not report.get("problem_groups"):
        report["problem_groups"] = [{"reason": p["reason"], "count": 1, "sample_skipped": p["sample_skipped"],
                                     "examples": [p]} for p in report["problems"]]
    if report["num_problems"]:
        groups = report["problem_groups"]
        lines = problem_lines(groups[:3])
        if len(groups) > 3:
            lines.append(f"and {len(groups) - 3} more kinds")
        warnings.warn(f"{fname}: {report['num_problems']} problems, {report['skipped']} samples skipped "
                      f"(see the returned report's problems): " + "; ".join(lines), stacklevel=stacklevel)


def _where(p):
    """Where problem p is: its shard, sample and member."""
    return p["shard"] + (f": sample {p['key']!r}" if p.get("key") is not None else "") + \
        (f", member {p['member']!r}" if p.get("member") is not None else "")


def problem_lines(groups):
    """A line per group of problems: count, reason, where the first ones are."""
    out = []
    for g in groups:
        shard = all(x.get("key") is None and x.get("member") is None for x in g["examples"])
        label = "shard problem: " if shard else ""
        where = "; ".join(_where(x) for x in g["examples"])
        out.append(f"{g['count']} x {label}{g['reason']} ({'e.g. ' if g['count'] > 1 else ''}{where})")
    return out


# ---- Arrow --------------------------------------------------------------------

def arrow_columns(writer, names):
    """The column of each field: names maps field names to column names
    (default: the field's own name)."""
    names = dict(names or {})
    unknown = set(names) - set(writer.fields)
    if unknown:
        raise ValueError(f"columns names {', '.join(sorted(unknown))}, not fields of this writer "
                         f"({', '.join(writer.fields)})")
    kinds = _WDS_KINDS
    for name, f in writer.fields.items():
        if type(f).__name__ not in kinds:
            raise ValueError(f"field {name!r}: a {type(f).__name__} cannot come from an Arrow column "
                             f"(fields: {', '.join(kinds)})")
    return [names.get(name, name) for name in writer.fields]


def table_columns(writer, names):
    """The column of each field of an MDS or litdata dataset: names maps
    field names to column names (default: the field's own name)."""
    names = dict(names or {})
    unknown = set(names) - set(writer.fields)
    if unknown:
        raise ValueError(f"columns names {', '.join(sorted(unknown))}, not fields of this writer "
                         f"({', '.join(writer.fields)})")
    for name, f in writer.fields.items():
        if type(f).__name__ not in _WDS_KINDS:
            raise ValueError(f"field {name!r}: a {type(f).__name__} cannot come from a column "
                             f"(fields: {', '.join(_WDS_KINDS)})")
    return [str(names.get(name, name)) for name in writer.fields]


def _address(buf):
    return None if buf is None else buf.address


class _Batch:
    """One record batch as ffcv_columns, with everything they point into."""

    def __init__(self, writer, batch, columns, key):
        import pyarrow as pa
        self.keep = []
        self.rows = batch.num_rows
        self.cols = (_lib.Column * len(columns))()
        have = batch.schema.names
        for k, ((name, f), col) in enumerate(zip(writer.fields.items(), columns)):
            if col not in have:
                raise ValueError(f"field {name!r}: no column {col!r} (columns: {', '.join(have)})")
            arr = batch.column(have.index(col))
            if isinstance(arr, pa.ChunkedArray):
                arr = arr.combine_chunks()
            try:
                self._fill(self.cols[k], arr, f)
            except (TypeError, ValueError) as e:
                raise type(e)(f"field {name!r}, column {col!r}: {e}") from None
        self.keys = None
        if key is not None:
            if key not in have:
                raise ValueError(f"key column {key!r} is not a column (columns: {', '.join(have)})")
            arr = batch.column(have.index(key))
            if isinstance(arr, pa.ChunkedArray):
                arr = arr.combine_chunks()
            if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
                arr = arr.cast(pa.string())
            self.keys = _lib.Column()
            self._binary(self.keys, arr)

    def _binary(self, c, arr, values_of=None):
        import pyarrow as pa
        t = arr.type
        if pa.types.is_large_binary(t) or pa.types.is_large_string(t):
            c.kind = _lib.COLUMN_LARGE_BINARY
        elif pa.types.is_binary(t) or pa.types.is_string(t):
            c.kind = _lib.COLUMN_BINARY
        else:
            raise TypeError(f"a column of {t}, not binary or strings")
        validity, offsets, data = arr.buffers()[:3]
        self.keep.append(arr)
        if values_of is None:
            c.offset, c.validity = arr.offset, _address(validity)
        else:
            c.values_offset, c.values_validity = arr.offset, _address(validity)
        c.offsets, c.data, c.data_len = _address(offsets), _address(data), 0 if data is None else data.size

    def _fill(self, c, arr, f):
        import pyarrow as pa
        import pyarrow.compute as pc
        kind, t = type(f).__name__, arr.type
        if kind in ("RGBImageField", "AudioField") and pa.types.is_struct(t):
            # Hugging Face's Image and Audio features: {bytes, path}; files given by path only are read here.
            names = [t.field(i).name for i in range(t.num_fields)]
            if "bytes" not in names:
                raise TypeError(f"a struct column without a 'bytes' field ({', '.join(names)})")
            data = pc.struct_field(arr, "bytes")
            if "path" in names and data.null_count > arr.null_count:
                data = _read_paths(arr, data)
            arr, t = data, data.type
        if kind in ("IntField", "FloatField"):
            want = pa.int64() if kind == "IntField" else pa.float64()
            if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)):
                raise TypeError(f"a column of {t}, not numbers")
            if kind == "IntField" and pa.types.is_floating(t):
                raise TypeError(f"a column of {t}: an IntField takes integers")
            arr = arr.cast(want) if t != want else arr
            validity, data = arr.buffers()[:2]
            self.keep.append(arr)
            c.kind = _lib.COLUMN_INT64 if kind == "IntField" else _lib.COLUMN_FLOAT64
            c.offset, c.validity, c.data, c.data_len = arr.offset, _address(validity), _address(data), data.size
            return
        if kind == "TextField" and (pa.types.is_list(t) or pa.types.is_large_list(t)):
            validity, list_offsets = arr.buffers()[:2]
            self.keep.append(arr)
            c.list = 64 if pa.types.is_large_list(t) else 32
            c.offset, c.validity, c.list_offsets = arr.offset, _address(validity), _address(list_offsets)
            self._binary(c, arr.values, values_of=arr)
            captions = arr.flatten()
        else:
            self._binary(c, arr)
            captions = arr
        if kind == "TextField" and f.tokens:
            texts = [s for s in captions.to_pylist() if s is not None]
            texts = [s.decode("utf-8") if isinstance(s, bytes) else s for s in texts]
            offsets, ids = f._tok(texts)
            self.keep += [offsets, ids]
            c.token_offsets, c.tokens, c.n_tokens = offsets.ctypes.data, ids.ctypes.data if ids.size else None, ids.size


def _read_paths(struct_arr, data):
    """The bytes of a {bytes, path} column, files read for rows with a path only."""
    import pyarrow as pa
    import pyarrow.compute as pc
    paths = pc.struct_field(struct_arr, "path").to_pylist()
    out = []
    for b, p in zip(data.to_pylist(), paths):
        if b is None and p:
            with open(p, "rb") as fh:
                b = fh.read()
        out.append(b)
    return pa.array(out, pa.binary())


def push_batches(handle, writer, sources, columns, key):
    """A pusher for run(): sources is a list of iterables of record batches."""
    def push():
        for k, batches in enumerate(sources):
            for batch in batches:
                if batch.num_rows == 0:
                    continue
                b = _Batch(writer, batch, columns, key)
                _lib.call("ffcv_ingest_push", handle, k, b.rows, b.cols, len(columns),
                          None if b.keys is None else b.keys)
            _lib.call("ffcv_ingest_end", handle, k)
    return push
