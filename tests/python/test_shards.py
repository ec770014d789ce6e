"""Sharded datasets: several .beton files with one set of fields, named by a
list, a directory or a glob, read as one dataset. Batches equal those of the
same rows written as one file."""
import numpy as np
import pytest

from conftest import FnDataset, collect, fixture_file, fixture_images, ids, same_batches, write

from ffcv_go import Loader
from ffcv_go.fields import BytesField, FloatField, IntField, RGBImageField
from ffcv_go.fields.decoders import IntDecoder, RandomResizedCropRGBImageDecoder
from ffcv_go.loader import OrderOption
from ffcv_go.reader import Reader
from ffcv_go.transforms import RandomHorizontalFlip, ToTensor

N = 60
SPLITS = [0, 23, 23, 41, N]  # four shards, the second empty


@pytest.fixture(scope="module")
def photos():
    """Real photos (FFCV's images_raw_var fixture), 60 rows: image, label = row."""
    _, content = fixture_file("images_raw_var")
    images = fixture_images(content)
    return [(images[i % len(images)], i) for i in range(N)]


def fields():
    return {"image": RGBImageField(write_mode="jpg", jpeg_quality=90), "label": IntField()}


@pytest.fixture(scope="module")
def dataset(photos, tmp_path_factory):
    """(the rows as one file, the directory of the same rows as shards, the shard paths)."""
    d = tmp_path_factory.mktemp("shards")
    whole = write(d / "whole.beton", fields(), photos)
    (d / "parts").mkdir()
    parts = []
    for k, (a, b) in enumerate(zip(SPLITS, SPLITS[1:])):
        parts.append(str(write(d / "parts" / f"train-{k:02d}.beton", fields(),
                               FnDataset(b - a, lambda i, a=a: photos[a + i]))))
    return str(whole), str(d / "parts"), parts


def pipelines():
    return {"image": [RandomResizedCropRGBImageDecoder((24, 24)), RandomHorizontalFlip(), ToTensor()],
            "label": [IntDecoder(), ToTensor()]}


def loader(src, **kw):
    kw = {"batch_size": 7, "num_workers": 2, "seed": 11, "pipelines": pipelines(), "drop_last": False, **kw}
    return Loader(src, **kw)


@pytest.mark.parametrize("order", [OrderOption.SEQUENTIAL, OrderOption.RANDOM], ids=lambda o: o.name)
@pytest.mark.parametrize("os_cache", [True, False])
@pytest.mark.parametrize("form", ["list", "dir", "glob"])
def test_shards_match_one_file(dataset, order, os_cache, form):
    whole, parts_dir, parts = dataset
    src = {"list": parts, "dir": parts_dir, "glob": parts_dir + "/train-*.beton"}[form]
    a, b = loader(whole, order=order, os_cache=os_cache), loader(src, order=order, os_cache=os_cache)
    assert len(a) == len(b) and b.reader.num_samples == N
    for _ in range(2):  # two epochs: random augmentations and orders change alike
        want, got = collect(a), collect(b)
        assert same_batches(want, got)
    assert sorted(ids(got, 1)) == list(range(N))


@pytest.mark.parametrize("os_cache", [True, False])
def test_quasi_random_visits_every_sample_once(dataset, os_cache):
    _, parts_dir, _ = dataset
    ld = loader(parts_dir, order=OrderOption.QUASI_RANDOM, os_cache=os_cache, batch_size=4)
    first = None
    for _ in range(2):
        seen = ids(collect(ld), 1)
        assert sorted(seen) == list(range(N))
        first = seen if first is None else first
    assert not np.array_equal(seen, first)  # the order changes between epochs


def test_indices_distributed_and_resume(dataset, monkeypatch):
    whole, _, parts = dataset
    subset = np.arange(3, N, 2)
    kw = dict(order=OrderOption.RANDOM, indices=subset, distributed=True, batch_size=3)
    monkeypatch.setenv("WORLD_SIZE", "2")
    seen = []
    for rank in range(2):
        monkeypatch.setenv("RANK", str(rank))
        ref = collect(loader(whole, **kw))
        full = collect(loader(parts, **kw))
        assert same_batches(ref, full)
        seen.extend(ids(full, 1))
        # Resume mid-epoch from a state_dict: the rest of the epoch, unchanged.
        a = loader(parts, **kw)
        it = iter(a)
        head = [next(it) for _ in range(2)]
        state = a.state_dict()
        del it, head
        b = loader(parts, **kw)
        b.load_state_dict(state)
        assert same_batches(collect(b), full[2:])
    assert sorted(set(seen)) == subset.tolist()


def test_reader_and_filter(dataset):
    whole, _, parts = dataset
    one, many = Reader(whole), Reader(parts)
    assert many.file_names == parts
    assert many.shards == [(p, b - a) for p, a, b in zip(parts, SPLITS, SPLITS[1:])]
    assert np.array_equal(many.metadata["f1"], one.metadata["f1"])
    for col in ("mode", "width", "height"):
        assert np.array_equal(many.metadata["f0"][col], one.metadata["f0"][col])
    # Allocations: global sample ids in shard order, pointers inside their shard.
    assert np.array_equal(many.alloc_table["sample_id"], one.alloc_table["sample_id"])
    for i in (0, 22, 23, 40, 41, N - 1):
        assert np.array_equal(many.read(i, "image"), one.read(i, "image"))
    # FFCV's memory_read (what custom operations get) reads the shards' map.
    from ffcv_go.memory_managers import OSCacheManager
    manager = OSCacheManager(many)
    read = manager.compile_reader()
    state = manager.schedule_epoch(np.arange(N)).state
    for i in (5, 30, N - 1):
        assert np.array_equal(read(many.metadata["f0"]["data_ptr"][i], state), one.read(i, "image"))
    # Its page maps, from Go, are FFCV's: each allocation's sample and start page.
    table = many.alloc_table
    pairs = {(int(s), int(p) // many.page_size) for s, p in zip(table["sample_id"], table["ptr"])}
    assert {(int(s), int(p)) for s, ps in manager.sample_to_pages.items() for p in ps} == pairs
    assert {(int(s), int(p)) for p, ss in manager.page_to_samples.items() for s in ss} == pairs
    keep = loader(parts).filter("label", lambda x: int(x) % 4 == 1)
    assert ids(collect(keep), 1).tolist() == list(range(1, N, 4))


def test_bad_shards(dataset, tmp_path):
    whole, parts_dir, parts = dataset
    missing = str(tmp_path / "nope.beton")
    with pytest.raises(FileNotFoundError, match="nope.beton"):
        Loader(parts + [missing], batch_size=4)
    with pytest.raises(FileNotFoundError, match="matches no file"):
        Loader(parts_dir + "/val-*.beton", batch_size=4)
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no .beton files"):
        Loader(str(tmp_path / "empty"), batch_size=4)
    with pytest.raises(ValueError, match="no paths"):
        Loader([], batch_size=4)
    other = write(tmp_path / "other.beton", {"image": RGBImageField(write_mode="jpg"), "label": FloatField()},
                  [(np.zeros((8, 8, 3), np.uint8), 1.0)])
    with pytest.raises(ValueError, match=r'other\.beton: field 1 is "label" \(FloatField\), .*train-00\.beton has '
                                         r'"label" \(IntField\)'):
        Loader(parts + [str(other)], batch_size=4)
    blobs = write(tmp_path / "blobs.beton", {"image": BytesField(), "label": IntField()}, [(b"x", 1)])
    with pytest.raises(ValueError, match=r'blobs\.beton: field 0 is "image" \(BytesField\)'):
        Reader([whole, str(blobs)])


class TopLeft(RandomResizedCropRGBImageDecoder):
    """An FFCV-style subclass with its own crop: decoded in Python through memory_read."""

    @property
    def get_crop_generator(self):
        def crop(height, width, scale, ratio):
            return 0, 0, height // 2, width // 2
        return crop


def test_python_decoder_reads_shards(dataset):
    whole, parts_dir, _ = dataset
    kw = dict(batch_size=8, drop_last=False, pipelines={"image": [TopLeft((12, 12))], "label": None})
    want, got = collect(Loader(whole, **kw)), collect(Loader(parts_dir, **kw))
    assert len(want) == 8 and same_batches(want, got)


def test_small_shard_is_its_data(photos, dataset, tmp_path):
    """A shard of 50 photos written with the default page size (8 MiB) takes
    its photos' bytes and its tables, a few KiB more, not two whole pages;
    it reads back alone, and joined with the next shard as the rows written
    as one file."""
    from ffcv_go import DatasetWriter
    paths = [tmp_path / "train-00.beton", tmp_path / "train-01.beton"]
    for path, rows in zip(paths, (photos[:50], photos[50:])):
        DatasetWriter(str(path), fields(), num_workers=2, progress=False).from_indexed_dataset(rows)
    r = Reader(str(paths[0]))
    data, page_size = int(r.alloc_table["size"].sum()), r.page_size
    r.close()
    assert page_size == 8 << 20
    size = paths[0].stat().st_size
    assert data <= size <= data + (8 << 10), (size, data)
    whole = dataset[0]
    for os_cache in (True, False):
        got = collect(loader(str(paths[0]), order=OrderOption.SEQUENTIAL, os_cache=os_cache))
        assert list(ids(got, 1)) == list(range(50))
        got = collect(loader([str(p) for p in paths], order=OrderOption.SEQUENTIAL, os_cache=os_cache))
        assert same_batches(got, collect(loader(whole, order=OrderOption.SEQUENTIAL, os_cache=os_cache)))
