"""Files ffcv_go writes, read by FFCV 1.0 itself (skipped unless `import ffcv` works)."""
import numpy as np
import pytest
import torch

from conftest import MiB, FnDataset, ffcv_relaid, write

from ffcv_go import Loader as GoLoader
from ffcv_go.reader import Reader as GoReader
from ffcv_go.fields import (IntField, FloatField, BytesField, NDArrayField, TorchTensorField, JSONField,
                            RGBImageField)

ffcv = pytest.importorskip("ffcv")

# FFCV's numba-compiled pipelines raise KeyErrors from numba's dispatcher
# finalizers when they are garbage collected: FFCV's noise, not a result.
pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")


@pytest.fixture(autouse=True)
def _collect_ffcv_garbage():
    """Collects FFCV's pipelines within each test, so the noise above is not
    reported against whichever later test happens to run the collector."""
    yield
    import gc
    for _ in range(2):
        gc.collect()


def sample(i):
    rng = np.random.default_rng(i)
    return (i, i / 3, rng.standard_normal((2, 5)).astype(np.float32), torch.arange(3, dtype=torch.int64) * i,
            rng.integers(0, 256, size=int(rng.integers(0, 200)), dtype=np.uint8), {"i": i, "s": "ü" * (i % 4)},
            rng.integers(0, 256, size=(12, 20, 3), dtype=np.uint8))


@pytest.fixture(scope="module")
def ours(tmp_path_factory):
    fields = {"i": IntField(), "f": FloatField(), "a": NDArrayField(np.float32, (2, 5)),
              "t": TorchTensorField(torch.int64, (3,)), "b": BytesField(), "j": JSONField(),
              "img": RGBImageField(write_mode="raw")}
    return write(tmp_path_factory.mktemp("compat") / "ours.beton", fields, FnDataset(37, sample), page_size=2 * MiB)


def test_ffcv_reader_reads_our_file(ours):
    from ffcv.reader import Reader
    theirs, mine = Reader(str(ours)), GoReader(ours)
    assert theirs.num_samples == mine.num_samples == 37
    assert list(theirs.handlers) == mine.field_names
    # FFCV builds an NDArrayField for a TorchTensorField (type 6) descriptor, so
    # compare the stored type ids rather than handler classes.
    assert theirs.field_descriptors["type_id"].tolist() == [type(h).TYPE_ID for h in mine.handlers.values()]
    assert theirs.metadata.tobytes() == mine.metadata.tobytes()
    assert theirs.alloc_table.tobytes() == mine.alloc_table.tobytes()


@pytest.mark.parametrize("os_cache", [True, False])
def test_ffcv_loader_matches_ours(ours, os_cache):
    """Our file is one page, its heap right after the tables: FFCV's OS
    cache maps it, its process cache reads page 0 (a short read)."""
    from ffcv.loader import Loader, OrderOption
    theirs = Loader(str(ours), batch_size=8, num_workers=1, order=OrderOption.SEQUENTIAL, drop_last=False,
                    os_cache=os_cache)
    mine = GoLoader(ours, batch_size=8, num_workers=1, drop_last=False)
    n = 0
    meta = mine.reader.metadata
    for a, b in zip(theirs, mine):
        assert len(a) == len(b) == 7
        sizes = {4: meta["f4"]["size"][8 * n:8 * n + 8], 5: meta["f5"]["size"][8 * n:8 * n + 8]}
        for k, (x, y) in enumerate(zip(a, b)):
            x = x.cpu().numpy() if hasattr(x, "cpu") else np.asarray(x)
            y = y.numpy()
            assert x.shape == y.shape
            if k in sizes:
                # FFCV leaves the previous batch's bytes after each row's end
                # (we zero them): compare the stored bytes only.
                for row_x, row_y, size in zip(x, y, sizes[k]):
                    assert np.array_equal(row_x[:size], row_y[:size]) and not row_y[size:].any()
            else:
                assert np.array_equal(x, y)
        n += 1
    assert n == len(mine) == 5


def test_ffcv_random_order_matches_ours(index_file):
    from ffcv.loader import Loader, OrderOption as FOrder
    from ffcv_go.loader import OrderOption
    sel = np.arange(3, 100, 2)
    theirs = Loader(str(index_file), batch_size=7, num_workers=1, order=FOrder.RANDOM, seed=31, indices=sel,
                    drop_last=False)
    mine = GoLoader(index_file, batch_size=7, num_workers=1, order=OrderOption.RANDOM, seed=31, indices=sel,
                    drop_last=False)
    assert len(theirs) == len(mine)
    for _ in range(2):  # epochs 0 and 1
        # FFCV reuses its batch buffers: copy each batch before the next one.
        a = np.concatenate([b[0].cpu().numpy()[:, 0].copy() for b in theirs])
        b = np.concatenate([b[0].numpy()[:, 0] for b in mine])
        assert a.tolist() == b.tolist()


@pytest.mark.parametrize("os_cache", [True, False])
def test_ffcv_reads_our_multi_page_file(paged_file, os_cache):
    """Our last page ends at its last byte, the allocation table right after."""
    from ffcv.loader import Loader, OrderOption
    from conftest import PAGED_N, paged_blob
    seen = []
    for blob, index in Loader(str(paged_file), batch_size=16, num_workers=1, order=OrderOption.QUASI_RANDOM,
                              drop_last=False, seed=0, os_cache=os_cache):
        blob, index = blob.cpu().numpy(), index.cpu().numpy()[:, 0]
        for row, i in zip(blob, index.tolist()):
            want = paged_blob(i)
            assert np.array_equal(row[:len(want)], want)
        seen.extend(index.tolist())
    assert sorted(seen) == list(range(PAGED_N))


def test_ffcv_writes_what_we_write(tmp_path):
    """FFCV's own writer and ours write the same bytes, empty samples
    included, ours in our layout (conftest.ffcv_relaid: no padding)."""
    from ffcv.writer import DatasetWriter as FfcvWriter
    from ffcv.fields import BytesField as FBytes, IntField as FInt, NDArrayField as FArray, JSONField as FJson
    from ffcv_go.fields import IntField, BytesField, NDArrayField, JSONField
    from conftest import ListDataset
    e = np.zeros(0, np.uint8)
    cases = {
        "first_empty": [(e, 0), (np.full(10, 1, np.uint8), 1), (e, 2), (np.full(5, 3, np.uint8), 3)],
        "all_empty": [(e, i) for i in range(4)],
        "pages": [(np.full(600_000 + 1000 * i, i, np.uint8) if i % 3 else e, i) for i in range(9)],
    }
    for name, items in cases.items():
        FfcvWriter(str(tmp_path / f"ffcv_{name}.beton"), {"b": FBytes(), "i": FInt()}, page_size=2 * MiB,
                   num_workers=1).from_indexed_dataset(ListDataset(items))
        ours = write(tmp_path / f"ours_{name}.beton", {"b": BytesField(), "i": IntField()}, items)
        assert ours.read_bytes() == ffcv_relaid(tmp_path / f"ffcv_{name}.beton"), name
        r = GoReader(tmp_path / f"ffcv_{name}.beton")
        assert [r.read(k, "b").tobytes() for k in range(len(items))] == [bytes(x[0]) for x in items]
    items = [(np.arange(6, dtype="<i2").reshape(2, 3) * i, {"k": i, "u": "é" * i}) for i in range(20)]
    FfcvWriter(str(tmp_path / "ffcv_mixed.beton"), {"a": FArray(np.dtype("<i2"), (2, 3)), "j": FJson()},
               page_size=2 * MiB, num_workers=1).from_indexed_dataset(ListDataset(items))
    ours = write(tmp_path / "ours_mixed.beton", {"a": NDArrayField(np.dtype("<i2"), (2, 3)), "j": JSONField()}, items)
    assert ours.read_bytes() == ffcv_relaid(tmp_path / "ffcv_mixed.beton")
