"""ffcv_go.ray.write_shards on a local Ray cluster (ray.init(num_cpus=2), one
for the module: Ray starts slowly). Every shard must be byte for byte the
file DatasetWriter writes on this machine from the same rows."""
import hashlib
import os
import sys
from pathlib import Path

import numpy as np
import pytest

ray = pytest.importorskip("ray")

import ffcv_go  # noqa: E402
from ffcv_go import DatasetWriter, Loader  # noqa: E402
from ffcv_go.fields.decoders import FloatDecoder, IntDecoder, NDArrayDecoder  # noqa: E402
from ffcv_go.loader import OrderOption  # noqa: E402
from ffcv_go.transforms import ToTensor  # noqa: E402
from ffcv_go.fields import BytesField, FloatField, IntField, NDArrayField, RGBImageField  # noqa: E402
from ffcv_go.reader import Reader  # noqa: E402
from ffcv_go.ray import read_image_folder, shard_name, write_shards  # noqa: E402

from conftest import MiB, ListDataset, collect, ids, same_batches  # noqa: E402

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))


@pytest.fixture(scope="module", autouse=True)
def cluster():
    # Ray's workers are new processes: they find ffcv_go through PYTHONPATH
    # (and this module, for the field class of the crash test).
    package_root = str(Path(ffcv_go.__file__).resolve().parents[1])
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, str(Path(__file__).parent), old) if p)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    try:
        yield
    finally:
        ray.shutdown()
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old


def digest(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def rows(n):
    """Rows of every kind of column: int, float, bytes, a fixed-shape array,
    and images of varying sizes as (H, W, 3) arrays."""
    rng = np.random.default_rng(7)
    out = []
    for i in range(n):
        h, w = int(rng.integers(4, 40)), int(rng.integers(4, 40))
        out.append({"label": i * 7 - 50, "score": float(rng.normal()),
                    "blob": rng.bytes(int(rng.integers(0, 300))),
                    "vec": rng.normal(size=(2, 3)).astype(np.float32),
                    "image": rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8)})
    return out


def fields():
    return {"image": RGBImageField(write_mode="raw"), "label": IntField(), "score": FloatField(),
            "blob": BytesField(), "vec": NDArrayField(np.dtype("float32"), (2, 3))}


def one_machine(path, items, flds, **kw):
    """What DatasetWriter writes on this machine from items (row dicts)."""
    names = list(flds)
    DatasetWriter(str(path), flds, page_size=2 * MiB, num_workers=1, progress=False, **kw).from_indexed_dataset(
        ListDataset([tuple(r[n] for n in names) for r in items]))
    return path


def assert_same_split(paths, items, rows_per_shard, flds, tmp_path):
    expect = [items[k:k + rows_per_shard] for k in range(0, len(items), rows_per_shard)]
    assert [os.path.basename(p) for p in paths] == [shard_name(k) for k in range(len(expect))]
    assert paths == sorted(paths)
    for k, (p, part) in enumerate(zip(paths, expect)):
        ref = one_machine(tmp_path / f"ref-{k}.beton", part, flds)
        assert digest(p) == digest(ref), f"shard {k}"


def test_shards_are_the_one_machine_files(tmp_path):
    items = rows(50)

    def transform(batch):
        # Ray tasks make the blocks; the first ones finish last, so the
        # dataset's order is not the order blocks complete in.
        import time
        if batch["label"][0] < 0:
            time.sleep(0.5)
        return {k: batch[k] for k in reversed(list(batch))}

    ds = ray.data.from_items(items, override_num_blocks=7).map_batches(transform, batch_size=8)
    out = tmp_path / "out"
    paths = write_shards(ds, fields(), out, rows_per_shard=13, page_size=2 * MiB, num_workers=2)
    assert len(paths) == 4  # 13, 13, 13 and 11 rows, across block boundaries
    assert_same_split(paths, items, 13, fields(), tmp_path)
    assert sorted(os.listdir(out)) == [os.path.basename(p) for p in paths]  # no temporary files left
    r = Reader(paths[3])
    assert r.num_samples == 11
    assert r.metadata["f1"].tolist() == [x["label"] for x in items[39:]]
    assert ds.context.execution_options.preserve_order is False  # the caller's setting is back

    # Read back as one dataset: the batches of the same rows written as one file.
    whole = one_machine(tmp_path / "whole.beton", items, fields())
    kw = dict(batch_size=6, num_workers=2, order=OrderOption.RANDOM, seed=3, drop_last=False,
              pipelines={"image": None, "blob": None, "label": [IntDecoder(), ToTensor()],
                         "score": [FloatDecoder(), ToTensor()], "vec": [NDArrayDecoder(), ToTensor()]})
    want, got = collect(Loader(str(whole), **kw)), collect(Loader(str(out), **kw))
    assert same_batches(want, got) and sorted(ids(got, 0)) == sorted(x["label"] for x in items)


def test_rows_per_shard_edges(tmp_path):
    items = rows(9)
    ds = ray.data.from_items(items, override_num_blocks=3)
    flds = {"label": IntField(), "blob": BytesField()}
    # More rows per shard than the dataset has: one shard, the whole file.
    paths = write_shards(ds, flds, tmp_path / "big", rows_per_shard=1000, page_size=2 * MiB)
    assert len(paths) == 1
    assert digest(paths[0]) == digest(one_machine(tmp_path / "all.beton", items, flds))
    # One row each, overwriting an earlier run with another split.
    write_shards(ds, flds, tmp_path / "one", rows_per_shard=4, page_size=2 * MiB)
    with pytest.raises(FileExistsError, match="overwrite=True"):
        write_shards(ds, flds, tmp_path / "one", rows_per_shard=1, page_size=2 * MiB)
    paths = write_shards(ds, flds, tmp_path / "one", rows_per_shard=1, page_size=2 * MiB, overwrite=True)
    assert_same_split(paths, items, 1, flds, tmp_path)
    assert sorted(os.listdir(tmp_path / "one")) == [shard_name(k) for k in range(9)]
    # No rows, no shards.
    assert write_shards(ds.filter(lambda r: False), flds, tmp_path / "none", rows_per_shard=3) == []


@pytest.mark.parametrize("kwargs, error, match", [
    ({"rows_per_shard": 0}, ValueError, "rows_per_shard must be a positive integer"),
    ({"rows_per_shard": -3}, ValueError, "rows_per_shard"),
    ({"rows_per_shard": 2.5}, ValueError, "rows_per_shard"),
    ({"rows_per_shard": True}, ValueError, "rows_per_shard"),
    ({"page_size": 3 * MiB}, ValueError, "page_size"),
    ({"num_cpus": 0}, ValueError, "num_cpus"),
    ({"prefix": "a/b"}, ValueError, "prefix"),
    ({"fields": {"label": "int"}}, TypeError, "not a Field"),
    ({"fields": {"label": IntField(), "nope": IntField()}}, ValueError, r"\['nope'\] are not columns"),
    ({"dataset": [{"label": 1}]}, TypeError, "ray.data.Dataset"),
    ({"out_dir": "s3://bucket/shards"}, ValueError, "shared file system"),
])
def test_bad_arguments(tmp_path, kwargs, error, match):
    args = {"dataset": ray.data.from_items([{"label": i} for i in range(5)]), "fields": {"label": IntField()},
            "out_dir": tmp_path / "out", "rows_per_shard": 2, **kwargs}
    with pytest.raises(error, match=match):
        write_shards(**args)
    assert not (tmp_path / "out").exists() or os.listdir(tmp_path / "out") == []


def test_a_failing_row_names_shard_and_row_and_leaves_nothing(tmp_path, photo_jpegs):
    good = photo_jpegs[0]
    items = [{"image": good, "label": i} for i in range(12)]
    items[7]["label"] = "seven"  # shard 1 (rows 4 to 7), Python side
    ds = ray.data.from_items(items, override_num_blocks=4)
    flds = {"image": RGBImageField(write_mode="jpg", max_resolution=64), "label": IntField()}
    with pytest.raises(TypeError, match=r"shard 1 \(.*shard-00001.beton, dataset rows 4 to 7\).*dataset row 7, "
                                        r"field 'label'.*IntField needs an integer"):
        write_shards(ds, flds, tmp_path / "py", rows_per_shard=4)
    assert os.listdir(tmp_path / "py") == []

    items[7]["label"] = 7
    items[10]["image"] = good[:len(good) // 3]  # truncated JPEG in shard 2: the Go encoder fails
    ds = ray.data.from_items(items, override_num_blocks=4)
    with pytest.raises(ValueError, match=r"shard 2 \(.*shard-00002.beton, dataset rows 8 to 11\).*"
                                         r"sample 2 \(dataset row 10\)"):
        write_shards(ds, flds, tmp_path / "go", rows_per_shard=4)
    assert os.listdir(tmp_path / "go") == []


class CrashingIntField(IntField):
    """An IntField (as a custom field) whose encode() kills its process at
    value 13: a Ray worker that dies in the middle of a shard."""

    def encode(self, destination, field, malloc):
        if field == 13:
            os._exit(17)
        destination[0] = field


def test_a_dying_task_leaves_no_file(tmp_path):
    ds = ray.data.from_items([{"label": i} for i in range(20)], override_num_blocks=2)
    out = tmp_path / "out"
    with pytest.raises(RuntimeError, match=r"shard 1 \(.*shard-00001.beton\): the Ray task failed"):
        write_shards(ds, {"label": CrashingIntField()}, out, rows_per_shard=10,
                     ray_remote_args={"max_retries": 0})
    assert os.listdir(out) == []  # shard 0 removed, and the dead task's temporary file


@pytest.fixture(scope="module")
def photo_jpegs(photo_folder):
    return [p.read_bytes() for p in sorted(Path(photo_folder).rglob("*.jpg"))]


@pytest.mark.parametrize("image", [{"write_mode": "jpg", "max_resolution": 160},
                                   {"write_mode": "jpg", "keep_source_jpeg": True},
                                   {"write_mode": "raw"}])
def test_image_folder_through_ray(tmp_path, photo_folder, image):
    """JPEG bytes read by Ray tasks and encoded in the shard tasks give the
    files the Go-native ImageFolder path writes from the same photos."""
    torchvision = pytest.importorskip("torchvision")
    folder = torchvision.datasets.ImageFolder(str(photo_folder))
    flds = lambda: {"image": RGBImageField(**image), "label": IntField()}  # noqa: E731
    ds = read_image_folder(photo_folder, override_num_blocks=5)
    paths = write_shards(ds, flds(), tmp_path / "out", rows_per_shard=10, page_size=2 * MiB, num_workers=2)
    assert len(paths) == 3
    for k, p in enumerate(paths):
        ref = tmp_path / f"ref-{k}.beton"
        DatasetWriter(str(ref), flds(), page_size=2 * MiB, progress=False).from_indexed_dataset(
            folder, indices=range(10 * k, min(10 * k + 10, len(folder))))
        assert digest(p) == digest(ref), f"shard {k}"
    labels = np.concatenate([Reader(p).metadata["f1"] for p in paths])
    assert labels.tolist() == [s[1] for s in folder.samples] and len(set(labels.tolist())) == 3


def test_ray_shards_as_a_mixture_source(tmp_path):
    """A directory of shards Ray wrote is one Source of a Mixture beside a
    file written on this machine: each gives its share of every epoch."""
    from ffcv_go.loader import Mixture, Source
    items = rows(30)
    ray_dir = tmp_path / "ray"
    write_shards(ray.data.from_items(items, override_num_blocks=3), fields(), ray_dir, rows_per_shard=8,
                 page_size=2 * MiB, num_workers=2)
    local = one_machine(tmp_path / "local.beton", [dict(r, label=1000 + i) for i, r in enumerate(rows(12))], fields())
    loader = Loader(Mixture([Source(str(ray_dir), proportion=0.5, name="ray"), Source(str(local), proportion=0.5)],
                            epoch_size=40),
                    batch_size=8, num_workers=2, order=OrderOption.RANDOM, seed=1, drop_last=False,
                    pipelines={"image": None, "blob": None, "score": None, "vec": None,
                               "label": [IntDecoder(), ToTensor()]})
    assert [s["files"] for s in loader.sources][0] == [str(ray_dir / shard_name(k)) for k in range(4)]
    labels = ids(collect(loader), 0)
    assert (labels < 1000).sum() == 20 and (labels >= 1000).sum() == 20
    assert set(labels[labels < 1000].tolist()) <= {x["label"] for x in items}
