"""Writing .beton shards from a Ray Data dataset, one Ray task per shard.

    import ray
    from ffcv_go.fields import IntField, RGBImageField
    from ffcv_go.ray import read_image_folder, write_shards

    ds = read_image_folder("/data/imagenet/train")          # rows {image: JPEG bytes, label}
    paths = write_shards(ds, {"image": RGBImageField(max_resolution=256), "label": IntField()},
                         "/shared/imagenet-shards", rows_per_shard=10_000)

Rows are dicts; a row's value for each field is its column of the same name
(other columns are ignored). Shard k holds rows [k * rows_per_shard,
(k + 1) * rows_per_shard) in the dataset's order and is written by
DatasetWriter in its own task, so it is byte for byte the file one machine
writes from the same rows. Every node needs ffcv_go installed and out_dir
on a file system they share.
"""
import glob
import numbers
import os
import re

from .writer import MiB, DatasetWriter

SHARD_DIGITS = 5
FILES_PER_BLOCK = 100  # read_image_folder's default block size


def shard_name(k, prefix="shard"):
    """The file name of shard k: '{prefix}-{k:05d}.beton' (shard-00000.beton,
    shard-00001.beton, ...), so sorted names are shard order."""
    return f"{prefix}-{k:0{SHARD_DIGITS}d}.beton"


def write_shards(dataset, fields, out_dir, rows_per_shard, *, prefix="shard", page_size=8 * MiB,
                 num_workers=1, num_cpus=1, max_in_flight=None, overwrite=False, ray_remote_args=None):
    """Writes dataset (a ray.data.Dataset) to .beton shards in out_dir; returns
    their paths, sorted (shard order). See the module doc for the layout.

    fields: name -> Field, as for DatasetWriter; each name must be a column.
    rows_per_shard: rows per shard (the last one may hold fewer); a dataset
    with no rows gives no shards.
    page_size, num_workers: DatasetWriter's options, for each shard's writer
    (num_workers: Go encoder threads per task).
    num_cpus: CPUs Ray reserves for each task (match num_workers).
    max_in_flight: shard tasks queued or running at once (default: twice
    the cluster's CPUs / num_cpus); bounds the blocks held for them.
    overwrite: whether existing '{prefix}-*.beton' files in out_dir are
    removed first; otherwise they are an error, so no stale shard from an
    earlier run is ever read as part of this dataset.
    ray_remote_args: further options for the tasks (memory, resources,
    max_retries, ...).

    The dataset is read in its order (preserve_order is set while it runs)
    and streamed: a shard's task starts as soon as its rows exist. Each shard
    appears atomically (the writer renames a temporary file on success). If
    a task fails, the others are cancelled, every shard this call wrote is
    removed, and its exception is raised here, naming the shard and row.
    """
    import ray

    if not isinstance(dataset, ray.data.Dataset):
        raise TypeError(f"dataset must be a ray.data.Dataset, got {type(dataset).__name__}")
    if isinstance(rows_per_shard, bool) or not isinstance(rows_per_shard, numbers.Integral) or rows_per_shard < 1:
        raise ValueError(f"rows_per_shard must be a positive integer, got {rows_per_shard!r}")
    rows_per_shard = int(rows_per_shard)
    if not isinstance(prefix, str) or not prefix or os.sep in prefix or prefix.startswith("."):
        raise ValueError(f"prefix {prefix!r} must be a non-empty file name part (no '{os.sep}', no leading '.')")
    for name, value in (("num_cpus", num_cpus), ("max_in_flight", max_in_flight)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, numbers.Real) or value <= 0):
            raise ValueError(f"{name} must be positive, got {value!r}")
    out_dir = os.fspath(out_dir)
    if "://" in str(out_dir):
        raise ValueError(f"out_dir {out_dir!r}: write_shards writes to a directory every node sees "
                         "(a shared file system), not a URL")
    out_dir = os.path.abspath(out_dir)
    # Validates fields, page_size and num_workers here rather than in every task.
    DatasetWriter(os.path.join(out_dir, shard_name(0, prefix)), fields, page_size=page_size,
                  num_workers=num_workers, progress=False)
    os.makedirs(out_dir, exist_ok=True)
    existing = _shard_files(out_dir, prefix)
    if existing and not overwrite:
        raise FileExistsError(f"{out_dir} already holds {len(existing)} '{prefix}-*.beton' shard(s) "
                              f"({os.path.basename(existing[0])}, ...); pass overwrite=True to replace them")
    for p in existing:
        os.remove(p)
    if not ray.is_initialized():
        ray.init()
    if max_in_flight is None:
        max_in_flight = max(1, int(2 * ray.cluster_resources().get("CPU", 1) / num_cpus))
    options = {"num_cpus": num_cpus, **(ray_remote_args or {})}
    task = ray.remote(_write_shard).options(**options)
    writer_args = {"page_size": int(page_size), "num_workers": int(num_workers)}
    names = list(fields)

    pending = {}   # ObjectRef -> shard number
    written = []   # shard paths, in shard order
    ctx = dataset.context.execution_options
    order = ctx.preserve_order
    ctx.preserve_order = True  # rows in the dataset's order, not completion order
    bundles = None
    try:
        blocks, have, row = [], 0, 0  # blocks not yet in a task: [ref, first row used, rows]
        shard = 0

        def launch(n):
            nonlocal have, row, shard
            refs, slices, need = [], [], n
            while need:
                b = blocks[0]
                take = min(need, b[2] - b[1])
                refs.append(b[0])
                slices.append((b[1], b[1] + take))
                b[1] += take
                need -= take
                if b[1] == b[2]:
                    blocks.pop(0)
            path = os.path.join(out_dir, shard_name(shard, prefix))
            ref = task.remote(path, fields, writer_args, shard, row, slices, *refs)
            pending[ref] = shard
            written.append(path)
            have -= n
            row += n
            shard += 1
            while len(pending) >= max_in_flight:
                _wait(ray, pending, written, 1)

        columns_checked = False
        bundles = dataset.iter_internal_ref_bundles()
        for bundle in bundles:
            for entry in bundle.blocks:
                n = entry.metadata.num_rows
                if n is None:
                    raise RuntimeError(f"a block of {dataset} has no row count; materialize() it first")
                if n and not columns_checked:  # an empty block may have no columns
                    _check_columns(names, getattr(bundle.schema, "names", None))
                    columns_checked = True
                if n:
                    blocks.append([entry.ref, 0, int(n)])
                    have += int(n)
                while have >= rows_per_shard:
                    launch(rows_per_shard)
        if have:
            launch(have)
        while pending:
            _wait(ray, pending, written, 1)  # one at a time: the first failure stops the rest
    except BaseException:
        for ref in pending:
            ray.cancel(ref)
        if pending:  # let cancelled tasks stop (and remove their temporary files)
            ray.wait(list(pending), num_returns=len(pending), timeout=60)
        for p in written:
            if os.path.exists(p):
                os.remove(p)
        raise
    finally:
        if bundles is not None and hasattr(bundles, "close"):
            bundles.close()  # stops the dataset's execution if we stopped early
        ctx.preserve_order = order
        _remove_leftovers(out_dir, prefix)
    return written


def read_image_folder(root, *, override_num_blocks=None):
    """A Ray dataset of the ImageFolder tree at root (class folders of
    images, labels by sorted folder name, files sorted, as torchvision and
    DatasetWriter.from_image_folder list them): rows {"image": the file's
    bytes, "label": int}. Files are read by Ray tasks, and nothing is
    decoded: write_shards' tasks decode and encode. root must be visible to
    every node. override_num_blocks: Ray blocks (default: one per
    FILES_PER_BLOCK files; one per file costs a Ray task each)."""
    import ray
    from . import _lib

    root = os.path.abspath(os.fspath(root))
    listing = _lib.call_json("ffcv_scan_image_folder", root.encode(), context=root)
    items = [{"path": p, "label": label} for p, label in zip(listing["files"], listing["labels"])]
    if override_num_blocks is None:
        override_num_blocks = -(-len(items) // FILES_PER_BLOCK)
    return ray.data.from_items(items, override_num_blocks=override_num_blocks).map_batches(
        _read_files, batch_format="numpy")


def _read_files(batch):
    import numpy as np
    images = np.empty(len(batch["path"]), dtype=object)
    for i, p in enumerate(batch["path"]):
        with open(p, "rb") as f:
            images[i] = f.read()
    return {"image": images, "label": batch["label"].astype(np.int64)}


def _check_columns(names, columns):
    if columns is None:
        return
    missing = [n for n in names if n not in columns]
    if missing:
        raise ValueError(f"fields {missing} are not columns of the dataset (columns: {list(columns)}); "
                         "each field is written from the column of its name")


def _shard_files(out_dir, prefix):
    return sorted(glob.glob(os.path.join(glob.escape(out_dir), glob.escape(prefix) + "-*.beton")))


def _remove_leftovers(out_dir, prefix):
    """Temporary files of tasks that were killed mid-write (the writer
    removes its own on any error it sees)."""
    for p in glob.glob(os.path.join(glob.escape(out_dir), "." + glob.escape(prefix) + "-*.beton.tmp-*")):
        try:
            os.remove(p)
        except FileNotFoundError:
            pass


def _wait(ray, pending, written, n):
    """Waits for n of the pending tasks; raises the first failure."""
    done, _ = ray.wait(list(pending), num_returns=n)
    for ref in done:
        k = pending.pop(ref)
        try:
            ray.get(ref)
        except ray.exceptions.RayTaskError as e:
            if isinstance(e.cause, _ShardError):
                raise e.cause.error from None
            raise RuntimeError(f"shard {k} ({written[k]}): {e}") from None
        except ray.exceptions.RayError as e:
            raise RuntimeError(f"shard {k} ({written[k]}): the Ray task failed: {e}") from None


class _ShardError(Exception):
    """Carries a shard task's exception, annotated, back to write_shards.
    Ray re-raises a task's exception inside its own type; this one holds the
    exception to raise as is."""

    def __init__(self, error):
        super().__init__(error)  # args: pickled with the exception
        self.error = error

    def __str__(self):
        return str(self.error)


class _Rows:
    """A shard's rows, read from its blocks as the writer asks for them (in
    order: it fetches with pool=None), so a task holds one row at a time
    besides its blocks; indexed by dataset row number, so the writer's
    errors name the row."""

    def __init__(self, blocks, slices, names, first):
        self.first, self.next = first, first
        self.n = sum(end - start for start, end in slices)
        self._rows = self._iter(blocks, slices, names)

    def _iter(self, blocks, slices, names):
        from ray.data.block import BlockAccessor
        for block, (start, end) in zip(blocks, slices):
            part = BlockAccessor.for_block(BlockAccessor.for_block(block).slice(start, end, copy=False))
            for r in part.iter_rows(public_row_format=True):
                try:
                    yield tuple(r[n] for n in names)
                except KeyError as e:
                    raise ValueError(f"dataset row {self.next - 1} has no column {e.args[0]!r} "
                                     f"(columns: {list(r.keys())})") from None

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i != self.next:
            raise IndexError(f"rows are read in order: asked for {i}, next is {self.next}")
        self.next += 1
        return next(self._rows)


def _write_shard(path, fields, writer_args, shard, first_row, slices, *blocks):
    """A Ray task: writes rows slices[j] of blocks[j] (in order) to path."""
    rows = _Rows(blocks, slices, list(fields), first_row)
    try:
        DatasetWriter(path, fields, progress=False, **writer_args).from_indexed_dataset(
            rows, indices=range(first_row, first_row + len(rows)), pool=None)
    except Exception as e:
        raise _ShardError(_annotate(e, shard, path, first_row, len(rows))) from None


def _annotate(e, shard, path, first_row, n):
    """e with a message that names the shard, its rows, and the dataset row
    of a Go error's 'sample j' (the j-th sample of the shard)."""
    msg = str(e)
    msg = re.sub(r"\bsample (\d+)\b", lambda m: f"sample {m.group(1)} (dataset row {first_row + int(m.group(1))})",
                 msg)
    msg = msg.replace("dataset item ", "dataset row ")
    msg = f"shard {shard} ({path}, dataset rows {first_row} to {first_row + n - 1}): {msg}"
    try:
        out = type(e)(msg)
    except Exception:
        out = RuntimeError(msg)
    out.__cause__ = None
    return out
