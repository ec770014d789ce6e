"""Every FFCV 1.0.1 fixture read through ffcv_go.reader.Reader and through the Loader."""
import json

import numpy as np
import pytest
import torch

from conftest import MiB, fixture_file, fixture_blobs, fixture_docs, fixture_images, collect

from ffcv_go import Loader
from ffcv_go.loader import OrderOption
from ffcv_go.reader import Reader
from ffcv_go.fields import (IntField, FloatField, BytesField, NDArrayField, TorchTensorField, JSONField,
                            RGBImageField)


def check_allocations(r, fields_with_heap):
    """Every allocation lies in one page and every sample has one per heap field."""
    at = r.alloc_table
    assert len(at) == r.num_samples * fields_with_heap
    ps = np.uint64(r.page_size)
    ptr, size = at["ptr"], at["size"]
    nonempty = size > 0
    assert np.all(ptr[nonempty] // ps == (ptr[nonempty] + size[nonempty] - np.uint64(1)) // ps)
    counts = np.bincount(at["sample_id"].astype(np.int64), minlength=r.num_samples)
    assert np.all(counts == fields_with_heap)


# ---- Reader ----------------------------------------------------------------------

def test_reader_scalars():
    path, z = fixture_file("scalars")
    r = Reader(path)
    assert r.num_samples == 257 and r.page_size == 8 * MiB
    assert r.field_names == ["label", "value"]
    assert type(r.handlers["label"]) is IntField and type(r.handlers["value"]) is FloatField
    assert r.metadata.dtype.names == ("f0", "f1")
    assert r.metadata.dtype.itemsize == 16
    assert r.metadata["f0"].dtype == np.dtype("<i8") and r.metadata["f1"].dtype == np.dtype("<f8")
    assert np.array_equal(r.metadata["f0"], z["label"])
    assert np.array_equal(r.metadata["f1"], z["value"])  # exact, bit for bit
    assert len(r.alloc_table) == 0
    assert r.read(0, "label") is None and r.read(256, 1) is None


def test_reader_arrays():
    path, z = fixture_file("arrays")
    r = Reader(path)
    assert r.num_samples == 100 and r.page_size == 2 * MiB
    assert r.field_names == ["arr", "small", "tensor", "blob", "doc"]
    h = r.handlers
    assert type(h["arr"]) is NDArrayField and h["arr"].dtype == np.float32 and h["arr"].shape == (3, 5)
    assert type(h["small"]) is NDArrayField and h["small"].dtype == np.dtype("<i2") and h["small"].shape == (7,)
    assert type(h["tensor"]) is TorchTensorField and h["tensor"].dtype == np.float64 and h["tensor"].shape == (4,)
    assert type(h["blob"]) is BytesField and type(h["doc"]) is JSONField
    assert r.metadata.dtype.itemsize == 56
    assert r.metadata.dtype.fields["f3"][1] == 24 and r.metadata.dtype.fields["f4"][1] == 40
    blobs, docs = fixture_blobs(z), fixture_docs(z)
    assert np.array_equal(r.metadata["f3"]["size"], z["blob_lengths"])
    for i in range(r.num_samples):
        assert np.array_equal(r.read(i, "arr").view("<f4").reshape(3, 5), z["arr"][i])
        assert np.array_equal(r.read(i, "small").view("<i2"), z["small"][i])
        assert np.array_equal(r.read(i, 2).view("<f8"), z["tensor"][i])
        assert np.array_equal(r.read(i, "blob"), blobs[i])
        raw = r.read(i, "doc").tobytes()
        assert raw == z["doc_json"][i].encode() + b"\0"
        assert json.loads(raw[:-1]) == docs[i]
    check_allocations(r, 5)


def test_reader_views_are_read_only():
    path, _ = fixture_file("arrays")
    r = Reader(path)
    with pytest.raises(ValueError):
        r.read(0, "arr")[0] = 1
    with pytest.raises(ValueError):
        r.metadata["f0"][0] = 1


def test_reader_images_raw_fixed():
    path, z = fixture_file("images_raw_fixed")
    r = Reader(path)
    assert r.num_samples == 40
    assert type(r.handlers["image"]) is RGBImageField and type(r.handlers["label"]) is IntField
    m = r.metadata["f0"]
    assert m.dtype.names == ("mode", "width", "height", "data_ptr")
    assert r.metadata.dtype.itemsize == 24 and r.metadata.dtype.fields["f1"][1] == 16
    assert np.all(m["mode"] == 1) and np.all(m["width"] == 48) and np.all(m["height"] == 32)
    assert np.array_equal(r.metadata["f1"], z["label"])
    for i in range(40):
        assert np.array_equal(r.read(i, "image").reshape(32, 48, 3), z["image"][i])
    check_allocations(r, 1)


@pytest.mark.parametrize("name", ["images_raw_var", "images_jpg_var", "images_smart_var", "images_proportion_var"])
def test_reader_images_var(name):
    path, z = fixture_file(name)
    r = Reader(path)
    m = r.metadata["f0"]
    assert r.num_samples == len(z["label"]) == 30
    assert np.array_equal(m["mode"], z["modes"])
    assert np.array_equal(m["height"], z["heights"]) and np.array_equal(m["width"], z["widths"])
    assert np.array_equal(r.metadata["f1"], z["label"])
    assert max(m["height"].max(), m["width"].max()) <= 64  # max_resolution=64
    pixels = fixture_images(z)
    sizes = dict(zip(r.alloc_table["ptr"].tolist(), r.alloc_table["size"].tolist()))
    n_raw = 0
    for i in range(30):
        data = r.read(i, "image")
        assert sizes[int(m["data_ptr"][i])] == len(data)
        if m["mode"][i] == 0:  # JPEG: a whole JFIF file (decoding is tested elsewhere)
            assert data[:2].tobytes() == b"\xff\xd8" and data[-2:].tobytes() == b"\xff\xd9"
        else:
            n_raw += 1
            assert np.array_equal(data.reshape(pixels[i].shape), pixels[i])
    expect_raw = {"images_raw_var": 30, "images_jpg_var": 0}.get(name)
    if expect_raw is not None:
        assert n_raw == expect_raw
    else:
        assert 0 < n_raw < 30
    check_allocations(r, 1)


def test_reader_pages_2mib():
    path, z = fixture_file("pages_2mib")
    r = Reader(path)
    assert r.num_samples == 12 and r.page_size == 2 * MiB
    assert r.field_names == ["blob", "index"]
    assert np.array_equal(r.metadata["f1"], np.arange(12))
    blobs = fixture_blobs(z)
    for i in range(12):
        assert np.array_equal(r.read(i, "blob"), blobs[i])
    pages = r.metadata["f0"]["ptr"] // np.uint64(r.page_size)
    assert pages[0] == 1 and len(set(pages.tolist())) >= 3
    assert np.all(np.diff(pages.astype(np.int64)) >= 0)
    check_allocations(r, 1)
    # The allocation table follows the last page, which is written whole.
    assert r._info["alloc_table_ptr"] % r.page_size == 0
    assert path.stat().st_size == r._info["alloc_table_ptr"] + 24 * len(r.alloc_table)


def test_reader_read_out_of_range():
    path, _ = fixture_file("arrays")
    r = Reader(path)
    with pytest.raises(IndexError, match=r"arrays\.beton.*sample 100"):
        r.read(100, "arr")
    with pytest.raises(IndexError, match="sample -1"):
        r.read(-1, "arr")
    with pytest.raises(ValueError, match="'nope'"):
        r.read(0, "nope")
    with pytest.raises(IndexError, match="field index 9"):
        r.read(0, 9)


def test_reader_close_keeps_views_alive():
    path, z = fixture_file("scalars")
    r = Reader(path)
    labels = r.metadata["f0"]
    r.close()
    import gc
    gc.collect()
    assert np.array_equal(labels, z["label"])


# ---- Loader with default pipelines -------------------------------------------------

def test_loader_scalars():
    path, z = fixture_file("scalars")
    batches = list(Loader(path, batch_size=64, num_workers=2, drop_last=False))
    assert [len(b[0]) for b in batches] == [64, 64, 64, 64, 1]
    for label, value in batches:
        assert isinstance(label, torch.Tensor) and label.dtype == torch.int64 and label.shape[1:] == (1,)
        assert value.dtype == torch.float64 and value.shape[1:] == (1,)
    assert np.array_equal(np.concatenate([b[0].numpy()[:, 0] for b in batches]), z["label"])
    assert np.array_equal(np.concatenate([b[1].numpy()[:, 0] for b in batches]), z["value"])


def test_loader_arrays():
    path, z = fixture_file("arrays")
    loader = Loader(path, batch_size=32, num_workers=2, drop_last=False)
    blobs, docs = fixture_blobs(z), fixture_docs(z)
    longest_blob = int(z["blob_lengths"].max())
    longest_doc = max(len(s.encode()) for s in z["doc_json"]) + 1
    seen = 0
    for arr, small, tensor, blob, doc in loader:
        n = len(arr)
        sl = slice(seen, seen + n)
        assert arr.dtype == torch.float32 and arr.shape == (n, 3, 5)
        assert small.dtype == torch.int16 and small.shape == (n, 7)
        assert tensor.dtype == torch.float64 and tensor.shape == (n, 4)
        assert blob.dtype == torch.uint8 and blob.shape == (n, longest_blob)
        assert doc.dtype == torch.uint8 and doc.shape == (n, longest_doc)
        assert np.array_equal(arr.numpy(), z["arr"][sl])
        assert np.array_equal(small.numpy(), z["small"][sl])
        assert np.array_equal(tensor.numpy(), z["tensor"][sl])
        for k in range(n):
            want = blobs[seen + k]
            assert np.array_equal(blob[k, :len(want)].numpy(), want)
            assert not blob[k, len(want):].any()
        assert JSONField.unpack(doc) == docs[sl]
        seen += n
    assert seen == 100


def test_loader_images_raw_fixed():
    path, z = fixture_file("images_raw_fixed")
    batches = list(Loader(path, batch_size=16, num_workers=2, drop_last=False))
    assert [len(b[0]) for b in batches] == [16, 16, 8]
    for image, label in batches:
        assert image.dtype == torch.uint8 and image.shape[1:] == (32, 48, 3)
        assert label.dtype == torch.int64 and label.shape[1:] == (1,)
    assert np.array_equal(np.concatenate([b[0].numpy() for b in batches]), z["image"])
    assert np.array_equal(np.concatenate([b[1].numpy()[:, 0] for b in batches]), z["label"])


def test_loader_simple_decoder_rejects_varying_sizes():
    path, _ = fixture_file("images_raw_var")
    with pytest.raises(TypeError):
        Loader(path, batch_size=4, num_workers=1)


def test_loader_pages_2mib():
    path, z = fixture_file("pages_2mib")
    blobs = fixture_blobs(z)
    batches = collect(Loader(path, batch_size=5, num_workers=2, drop_last=False))
    assert [len(b[0]) for b in batches] == [5, 5, 2]
    longest = int(z["blob_lengths"].max())
    got = np.concatenate([b[0] for b in batches])
    assert got.shape == (12, longest)
    for i in range(12):
        assert np.array_equal(got[i, :len(blobs[i])], blobs[i]) and not got[i, len(blobs[i]):].any()
    assert np.array_equal(np.concatenate([b[1][:, 0] for b in batches]), np.arange(12))


@pytest.mark.parametrize("os_cache", [True, False])
def test_loader_arrays_random_order_matches_content(os_cache):
    path, z = fixture_file("arrays")
    loader = Loader(path, batch_size=10, num_workers=2, order=OrderOption.RANDOM, seed=3, os_cache=os_cache,
                    pipelines={"blob": None, "doc": None})
    order = np.random.default_rng(3).permutation(100)
    got = np.concatenate([b[0].numpy() for b in loader])
    assert np.array_equal(got, z["arr"][order])
