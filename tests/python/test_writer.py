"""DatasetWriter round trips, page packing, determinism, atomicity and byte-identity with FFCV 1.0."""
import json
import math
import os

import numpy as np
import pytest
import torch

from conftest import (MiB, FnDataset, ListDataset, collect, ffcv_relaid, fixture_file, fixture_blobs,
                      fixture_docs, write)

import ffcv_go
from ffcv_go import DatasetWriter, Loader
from ffcv_go.reader import Reader
from ffcv_go.fields import (IntField, FloatField, BytesField, NDArrayField, TorchTensorField, JSONField,
                            RGBImageField)


def leftovers(directory, name):
    """Files in directory other than name itself that mention name (temporary files)."""
    return [f for f in os.listdir(directory) if name in f and f != name]


# ---- round trips ---------------------------------------------------------------------

UNICODE_DOCS = [
    {"text": "héllo wörld", "n": 1},
    {"emoji": "🙂✓", "cjk": "日本語", "nested": {"list": [1, 2.5, None, True, "ünï"]}},
    [],
    "just a string with \"quotes\" and \\ backslash\n",
    None,
    {"big": 2**62, "neg": -1.25e-300, "empty": {}},
]


def test_round_trip_every_field_type(tmp_path):
    n = 24
    rng = np.random.default_rng(0)
    arrs = rng.standard_normal((n, 2, 3)).astype(np.float32)
    tens = torch.arange(n * 4, dtype=torch.int64).reshape(n, 4) * -3
    blobs = [bytes(rng.integers(0, 256, size=(i * 37) % 300, dtype=np.uint8)) for i in range(n)]
    blobs[5] = b""  # an empty blob
    docs = [UNICODE_DOCS[i % len(UNICODE_DOCS)] for i in range(n)]
    ints = [(-1) ** i * (i * 10**15) for i in range(n)]
    ints[0], ints[1] = -2**63, 2**63 - 1
    floats = [i / 7 for i in range(n)]
    floats[0], floats[1], floats[2], floats[3] = float("inf"), -0.0, float("nan"), 5e-324
    items = [(ints[i], floats[i], blobs[i], arrs[i], tens[i], docs[i], np.array([float(i)])) for i in range(n)]
    fields = {"i": IntField(), "f": FloatField(), "b": BytesField(), "a": NDArrayField(np.float32, (2, 3)),
              "t": TorchTensorField(torch.int64, (4,)), "j": JSONField(), "z": NDArrayField(np.float64, (1,))}
    path = write(tmp_path / "all.beton", fields, items)

    r = Reader(path)
    assert r.num_samples == n and r.field_names == list(fields)
    assert [type(h) for h in r.handlers.values()] == [type(f) for f in fields.values()]
    assert r.handlers["z"].shape == (1,) and r.handlers["t"].dtype == np.int64
    assert r.metadata["f0"].tolist() == ints
    np.testing.assert_array_equal(r.metadata["f1"].view("<u8"), np.array(floats).view("<u8"))  # bitwise
    for i in range(n):
        assert r.read(i, "b").tobytes() == blobs[i]
        assert np.array_equal(r.read(i, "a").view("<f4").reshape(2, 3), arrs[i])
        assert np.array_equal(r.read(i, "t").view("<i8"), tens[i].numpy())
        assert r.read(i, "j").tobytes() == json.dumps(docs[i]).encode() + b"\0"
        assert r.read(i, "z").view("<f8")[0] == i
    assert r.metadata["f2"]["size"][5] == 0

    loader = Loader(path, batch_size=10, num_workers=2, drop_last=False)
    batches = list(loader)
    assert len(batches) == len(loader) == 3
    cat = [torch.cat([b[k] for b in batches]) for k in range(7)]
    assert cat[0].dtype == torch.int64 and cat[0][:, 0].tolist() == ints
    np.testing.assert_array_equal(cat[1][:, 0].numpy().view("<u8"), np.array(floats).view("<u8"))
    longest = max(len(b) for b in blobs)
    assert cat[2].shape == (n, longest) and cat[2].dtype == torch.uint8
    for i in range(n):
        assert cat[2][i].numpy().tobytes() == blobs[i] + bytes(longest - len(blobs[i]))
    assert cat[3].dtype == torch.float32 and np.array_equal(cat[3].numpy(), arrs)
    assert cat[4].dtype == torch.int64 and torch.equal(cat[4], tens)
    assert JSONField.unpack(cat[5]) == docs
    assert cat[6].dtype == torch.float64 and cat[6].shape == (n, 1) and cat[6][:, 0].tolist() == list(range(n))


DTYPES = ["?", "i1", "u1", "<i2", "<u2", "<i4", "<u4", "<i8", "<u8", "<f2", "<f4", "<f8", "<c8", "<c16"]


def test_round_trip_many_dtypes(tmp_path):
    rng = np.random.default_rng(1)
    shape = (3, 2)
    data = {}
    for dt in DTYPES:
        raw = rng.integers(0, 256, size=(5, *shape, np.dtype(dt).itemsize), dtype=np.uint8)
        if dt == "?":
            raw &= 1
        arr = raw.view(dt).reshape(5, *shape)
        data[dt] = arr
    fields = {f"d{k}": NDArrayField(np.dtype(dt), shape) for k, dt in enumerate(DTYPES)}
    items = [tuple(data[dt][i] for dt in DTYPES) for i in range(5)]
    path = write(tmp_path / "dtypes.beton", fields, items)
    r = Reader(path)
    for k, dt in enumerate(DTYPES):
        h = r.handlers[f"d{k}"]
        assert h.dtype == np.dtype(dt) and h.shape == shape
        for i in range(5):
            assert r.read(i, k).tobytes() == data[dt][i].tobytes()
    # torch < 2.3 has no uint16/32/64: loading those fields is a clear error
    # there, and the others load.
    missing = [k for k, dt in enumerate(DTYPES) if not hasattr(torch, np.dtype(dt).name)]
    if missing:
        with pytest.raises(ValueError, match=r"torch 2\.3"):
            Loader(path, batch_size=5, num_workers=1)
    (batch,) = list(Loader(path, batch_size=5, num_workers=1, pipelines={f"d{k}": None for k in missing}))
    for out, (k, dt) in zip(batch, [(k, dt) for k, dt in enumerate(DTYPES) if k not in missing], strict=True):
        assert out.shape == (5, *shape)
        assert out.numpy().dtype == np.dtype(dt).newbyteorder("=")
        assert out.numpy().tobytes() == data[dt].tobytes(), dt


def test_big_endian_array_reads_but_cannot_load(tmp_path):
    arr = np.arange(6, dtype=">i4").reshape(2, 3)
    path = write(tmp_path / "be.beton", {"a": NDArrayField(np.dtype(">i4"), (2, 3))}, [(arr,), ((arr + 1).astype(">i4"),)])
    r = Reader(path)
    assert r.handlers["a"].dtype == np.dtype(">i4")
    assert np.array_equal(r.read(1, "a").view(">i4").reshape(2, 3), arr + 1)
    with pytest.raises(ValueError, match='"a"'):
        Loader(path, batch_size=2, num_workers=1)


def test_large_arrays_across_pages(tmp_path):
    # 512 KiB per sample: four fill a 2 MiB page exactly.
    n = 9
    fields = {"x": NDArrayField(np.float64, (256, 256)), "i": IntField()}
    mk = lambda i: (np.full((256, 256), i, dtype=np.float64) + np.arange(256), i)  # noqa: E731
    path = write(tmp_path / "large.beton", fields, FnDataset(n, mk))
    r = Reader(path)
    pages = (r.metadata["f0"] // np.uint64(r.page_size)).tolist()
    assert pages == [1, 1, 1, 1, 2, 2, 2, 2, 3]
    got = torch.cat([b[0] for b in Loader(path, batch_size=4, num_workers=2, drop_last=False)])
    assert np.array_equal(got.numpy(), np.stack([mk(i)[0] for i in range(n)]))


def test_new_pages_are_opened_when_full(tmp_path):
    size = 700_000  # two fit in a 2 MiB page, three do not
    n = 7
    mk = lambda i: (np.full(size + i, i, dtype=np.uint8), i)  # noqa: E731
    path = write(tmp_path / "pages.beton", {"blob": BytesField(), "index": IntField()}, FnDataset(n, mk),
                 page_size=2 * MiB)
    r = Reader(path)
    ps = 2 * MiB
    ptr = r.metadata["f0"]["ptr"].astype(np.int64)
    assert (ptr // ps).tolist() == [1, 1, 2, 2, 3, 3, 4]
    # Packed byte-contiguously from each page's start.
    for i in range(n):
        assert ptr[i] == (1 + i // 2) * ps + (0 if i % 2 == 0 else size + i - 1)
        assert np.array_equal(r.read(i, "blob"), mk(i)[0])
    # The full pages' tails are zero; the allocation table follows the last heap byte.
    data = path.read_bytes()
    alloc_ptr = r._info["alloc_table_ptr"]
    assert alloc_ptr == 4 * ps + size + n - 1 and len(data) == alloc_ptr + 24 * n
    for page in range(1, 4):
        used = sum(size + i for i in range(n) if 1 + i // 2 == page)
        tail = np.frombuffer(data[page * ps + used:(page + 1) * ps], dtype=np.uint8)
        assert not tail.any()
    # The padding between the metadata table and the first page is zero too.
    meta_end = 24 + 2 * 1041 + n * 24
    assert not any(data[meta_end:ps])
    got = collect(Loader(path, batch_size=3, num_workers=2, drop_last=False))
    assert np.array_equal(np.concatenate([b[1][:, 0] for b in got]), np.arange(n))


def test_scalars_only_file_has_no_heap(tmp_path):
    path = write(tmp_path / "s.beton", {"a": FloatField(), "b": IntField()}, [(i / 3, i) for i in range(10)],
                 page_size=4 * MiB)
    data = path.read_bytes()
    assert len(data) == 24 + 2 * 1041 + 10 * 16  # no pages, no padding, empty allocation table
    hdr = np.frombuffer(data[:24], dtype=np.uint8)
    assert hdr[:2].view("<u2")[0] == 2 and hdr[2:4].view("<u2")[0] == 2
    assert hdr[4:8].view("<u4")[0] == 4 * MiB and hdr[8:16].view("<u8")[0] == 10
    assert hdr[16:24].view("<u8")[0] == len(data)


def test_field_descriptor_bytes(tmp_path):
    name = "sixteen_chars_xx"
    assert len(name) == 16
    path = write(tmp_path / "d.beton", {name: NDArrayField(np.dtype("<i2"), (7, 3)), "j": JSONField()},
                 [(np.zeros((7, 3), np.int16), {"a": 1})])
    data = path.read_bytes()
    d0 = data[24:24 + 1041]
    assert d0[0] == 4 and d0[1:17] == name.encode()  # no terminator at 16 bytes
    args = np.frombuffer(d0[17:], dtype=np.uint8)
    assert args[:256].view("<u8")[:3].tolist() == [7, 3, 0] and not args[24:256].any()
    descr = b'[["", "<i2"]]'
    assert args[256:264].view("<u8")[0] == len(descr)
    assert args[264:264 + len(descr)].tobytes() == descr and not args[264 + len(descr):].any()
    d1 = data[24 + 1041:24 + 2 * 1041]
    assert d1[0] == 5 and d1[1:17] == b"j" + bytes(15) and not any(d1[17:])
    assert Reader(path).field_names == [name, "j"]


def test_empty_dataset(tmp_path):
    path = write(tmp_path / "empty.beton", {"x": IntField(), "b": BytesField()}, [])
    r = Reader(path)
    assert r.num_samples == 0 and len(r.metadata) == 0 and len(r.alloc_table) == 0
    loader = Loader(path, batch_size=4, num_workers=1, drop_last=False)
    assert len(loader) == 0 and list(loader) == []


def test_indices_argument_selects_and_orders(tmp_path):
    ds = FnDataset(50, lambda i: (i * 3,))
    path = tmp_path / "sel.beton"
    DatasetWriter(str(path), {"x": IntField()}, num_workers=1, progress=False).from_indexed_dataset(
        ds, indices=[7, 3, 49, 0])
    assert Reader(path).metadata["f0"].tolist() == [21, 9, 147, 0]


# ---- determinism -------------------------------------------------------------------

def mixed_dataset(n=60):
    def mk(i):
        rng = np.random.default_rng(i)
        return (i, rng.integers(0, 256, size=int(rng.integers(50_000, 150_000)), dtype=np.uint8),
                rng.standard_normal((4, 4)).astype(np.float32), {"i": i, "s": "ü" * (i % 5)})
    return FnDataset(n, mk)


MIXED_FIELDS = lambda: {"index": IntField(), "blob": BytesField(), "a": NDArrayField(np.float32, (4, 4)),  # noqa: E731
                        "j": JSONField()}


def test_output_identical_for_any_worker_count(tmp_path):
    paths = []
    for workers in (1, 4):
        paths.append(write(tmp_path / f"w{workers}.beton", MIXED_FIELDS(), mixed_dataset(), num_workers=workers))
    # A thread pool fetching the items must not change the file either.
    p = tmp_path / "pool.beton"
    DatasetWriter(str(p), MIXED_FIELDS(), page_size=2 * MiB, num_workers=3, progress=False).from_indexed_dataset(
        mixed_dataset(), pool="thread", pool_workers=3)
    paths.append(p)
    data = [p.read_bytes() for p in paths]
    assert len(data[0]) > 4 * 2 * MiB  # several pages
    assert data[0] == data[1] == data[2]


# ---- errors and atomicity ---------------------------------------------------------------

def test_sample_larger_than_a_page(tmp_path):
    target = tmp_path / "big.beton"
    items = [(np.zeros(1000, np.uint8),), (np.zeros(2 * MiB + 1, np.uint8),), (np.zeros(10, np.uint8),)]
    with pytest.raises(ffcv_go.SampleError, match=r"sample 1\b.*page"):
        write(target, {"blob": BytesField()}, items, page_size=2 * MiB)
    assert not target.exists()
    assert leftovers(tmp_path, "big.beton") == []


def test_sample_exactly_one_page_fits(tmp_path):
    target = tmp_path / "full.beton"
    items = [(np.full(2 * MiB, 7, np.uint8),), (np.full(5, 8, np.uint8),)]
    write(target, {"blob": BytesField()}, items, page_size=2 * MiB)
    r = Reader(target)
    assert (r.metadata["f0"]["ptr"] // np.uint64(2 * MiB)).tolist() == [1, 2]
    assert np.array_equal(r.read(0, "blob"), items[0][0])


class Boom(RuntimeError):
    pass


@pytest.mark.parametrize("workers", [1, 4])
def test_exception_in_dataset_leaves_nothing(tmp_path, workers):
    target = tmp_path / "atomic.beton"

    def mk(i):
        if i == 150:
            raise Boom(f"item {i} is broken")
        return (i, np.full(30_000, i % 256, np.uint8))
    with pytest.raises(Boom, match="item 150 is broken"):
        write(target, {"i": IntField(), "b": BytesField()}, FnDataset(300, mk), num_workers=workers)
    assert not target.exists()
    assert os.listdir(tmp_path) == []


def test_failed_write_keeps_previous_file(tmp_path):
    target = write(tmp_path / "keep.beton", {"i": IntField()}, [(1,), (2,)])
    before = target.read_bytes()
    with pytest.raises(TypeError, match="item 1"):
        write(target, {"i": IntField()}, [(1,), ("x",), (3,)])
    assert target.read_bytes() == before
    assert os.listdir(tmp_path) == ["keep.beton"]


def test_successful_write_replaces_file(tmp_path):
    target = write(tmp_path / "r.beton", {"i": IntField()}, [(1,), (2,)])
    write(target, {"i": IntField()}, [(5,), (6,), (7,)])
    assert Reader(target).metadata["f0"].tolist() == [5, 6, 7]
    assert os.listdir(tmp_path) == ["r.beton"]


# ---- FFCV 1.0 byte identity --------------------------------------------------------------

def _assert_same_file(ours, theirs):
    """ours holds FFCV's file's bytes exactly, in our layout (ffcv_relaid)."""
    a, b = ours.read_bytes(), ffcv_relaid(theirs)
    if a != b:
        n = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b)))
        pytest.fail(f"{ours.name} differs from FFCV's {theirs.name} at byte {n} (sizes {len(a)}, {len(b)})")


@pytest.mark.parametrize("workers", [1, 3])
def test_rewrite_scalars_identical(tmp_path, workers):
    path, z = fixture_file("scalars")
    items = list(zip(z["label"].tolist(), z["value"].tolist()))
    out = write(tmp_path / "scalars.beton", {"label": IntField(), "value": FloatField()}, items,
                page_size=8 * MiB, num_workers=workers)
    _assert_same_file(out, path)


@pytest.mark.parametrize("workers", [1, 3])
def test_rewrite_arrays_identical(tmp_path, workers):
    path, z = fixture_file("arrays")
    blobs, docs = fixture_blobs(z), fixture_docs(z)
    items = [(z["arr"][i], z["small"][i], torch.from_numpy(z["tensor"][i]), blobs[i], docs[i]) for i in range(100)]
    fields = {"arr": NDArrayField(np.float32, (3, 5)), "small": NDArrayField(np.dtype("<i2"), (7,)),
              "tensor": TorchTensorField(torch.float64, (4,)), "blob": BytesField(), "doc": JSONField()}
    out = write(tmp_path / "arrays.beton", fields, items, page_size=2 * MiB, num_workers=workers)
    _assert_same_file(out, path)


def test_rewrite_pages_2mib_identical(tmp_path):
    path, z = fixture_file("pages_2mib")
    blobs = fixture_blobs(z)
    out = write(tmp_path / "pages_2mib.beton", {"blob": BytesField(), "index": IntField()},
                [(blobs[i], i) for i in range(12)], page_size=2 * MiB, num_workers=2)
    _assert_same_file(out, path)


def test_rewrite_images_raw_fixed_identical(tmp_path):
    path, z = fixture_file("images_raw_fixed")
    items = [(z["image"][i], int(z["label"][i])) for i in range(40)]
    out = write(tmp_path / "images_raw_fixed.beton", {"image": RGBImageField(write_mode="raw"), "label": IntField()},
                items, page_size=2 * MiB, num_workers=2)
    _assert_same_file(out, path)


def test_metadata_layout_matches_numpy_align(tmp_path):
    # (Bytes, Int, JSON, Float): packed 16-byte columns are 1-aligned, scalars 8-aligned.
    path = write(tmp_path / "layout.beton", {"b": BytesField(), "i": IntField(), "j": JSONField(), "f": FloatField()},
                 [(b"ab", 1, 2, 0.5)])
    r = Reader(path)
    want = np.dtype([("f0", [("ptr", "<u8"), ("size", "<u8")]), ("f1", "<i8"),
                     ("f2", [("ptr", "<u8"), ("size", "<u8")]), ("f3", "<f8")], align=True)
    assert r.metadata.dtype == want and want.itemsize == 48
    row = path.read_bytes()[24 + 4 * 1041:24 + 4 * 1041 + 48]
    rec = np.frombuffer(row, dtype=want)[0]
    assert rec["f1"] == 1 and rec["f3"] == 0.5 and rec["f0"]["size"] == 2 and rec["f2"]["size"] == 2
    assert math.isclose(rec["f3"], 0.5)


def test_non_contiguous_inputs_are_stored_in_c_order(tmp_path):
    base = np.arange(48, dtype=np.int32).reshape(6, 8)
    arrays = [base.T, base[::2, ::2].T.copy(order="F")[:, :3].T, np.asfortranarray(base), base[::-1, ::-1]]
    shapes = [(8, 6), (3, 4), (6, 8), (6, 8)]
    blob = np.arange(100, dtype=np.uint8)[::3]
    fields = {f"a{k}": NDArrayField(np.int32, s) for k, s in enumerate(shapes)}
    fields["b"] = BytesField()
    path = write(tmp_path / "nc.beton", fields, [(*arrays, blob)])
    r = Reader(path)
    for k, a in enumerate(arrays):
        assert a.shape == shapes[k]
        assert np.array_equal(r.read(0, k).view(np.int32).reshape(a.shape), a)
    assert r.read(0, "b").tobytes() == blob.tobytes()


def test_process_pool_gives_same_file(tmp_path):
    items = [(i, np.full(1000 + 37 * i, i % 256, np.uint8), {"i": i}) for i in range(150)]
    fields = lambda: {"i": IntField(), "b": BytesField(), "j": JSONField()}  # noqa: E731
    out = {}
    for pool in (None, "process"):
        out[pool] = tmp_path / f"{pool}.beton"
        DatasetWriter(str(out[pool]), fields(), page_size=2 * MiB, num_workers=2, progress=False).from_indexed_dataset(
            ListDataset(items), pool=pool, pool_workers=2, chunksize=16)
    assert out[None].read_bytes() == out["process"].read_bytes()
    r = Reader(out["process"])
    assert r.metadata["f0"].tolist() == list(range(150))


def test_zero_d_arrays_are_refused(tmp_path):
    # FFCV 1.0 can neither write nor read a 0-d array field: refuse it up front.
    for make in (lambda: NDArrayField(np.float32, ()), lambda: TorchTensorField(torch.float32, ())):
        with pytest.raises(ValueError, match=r"shape \(\)"):
            make()
    # A file that has one anyway (descriptor patched) is refused with the field named.
    path = write(tmp_path / "one.beton", {"zz": NDArrayField(np.float32, (1,))}, [(np.ones(1, np.float32),)])
    data = bytearray(path.read_bytes())
    data[24 + 17:24 + 17 + 8] = bytes(8)  # shape[0] = 0: no dimensions
    path.write_bytes(bytes(data))
    with pytest.raises(ffcv_go.CorruptFileError, match=r"one\.beton.*'zz'.*shape"):
        Reader(path)


def test_empty_samples_before_the_first_page_follow_ffcv(tmp_path):
    # FFCV 1.0's allocator opens no page for a sample with no heap bytes; before
    # its first page such (empty) allocations point one page before it (here
    # byte 0). Checked against files FFCV 1.0.2 wrote (see test_ffcv_compat).
    # The heap fits in the tables' page, so it follows them, at byte 2202.
    e = np.zeros(0, np.uint8)
    fields = lambda: {"b": BytesField(), "i": IntField()}  # noqa: E731
    path = write(tmp_path / "first.beton", fields(), [(e, 0), (np.full(10, 1, np.uint8), 1), (e, 2),
                                                       (np.full(5, 3, np.uint8), 3)])
    r = Reader(path)
    h = 24 + 2 * 1041 + 4 * 24
    assert r.metadata["f0"].tolist() == [(0, 0), (h, 10), (h + 10, 0), (h + 10, 5)]
    assert r.alloc_table.tolist() == [(0, 0, 0), (1, h, 10), (2, h + 10, 0), (3, h + 10, 5)]
    assert path.stat().st_size == h + 15 + 4 * 24
    assert [r.read(i, "b").tobytes() for i in range(4)] == [b"", b"\1" * 10, b"", b"\3" * 5]
    # Only empty samples: no page at all; the table follows the metadata.
    path = write(tmp_path / "all.beton", fields(), [(e, i) for i in range(4)])
    r = Reader(path)
    assert r.metadata["f0"].tolist() == [(0, 0)] * 4
    assert path.stat().st_size == 24 + 2 * 1041 + 4 * 24 + 4 * 24
    for os_cache in (True, False):
        (b, i), = list(Loader(path, batch_size=4, num_workers=1, os_cache=os_cache))
        assert b.shape == (4, 0) and i[:, 0].tolist() == [0, 1, 2, 3]


# ---- files as values: paths (str or os.PathLike) and encoded bytes -------------------

def test_image_and_mask_files_as_str_pathlike_or_bytes(tmp_path):
    """An image file is taken by its path (str or os.PathLike) or as its
    bytes (JPEG or PNG), the same pixels each way; a mask file (a palette
    PNG) likewise. A value of another type is refused, saying what is taken
    and naming the item."""
    from pathlib import Path
    from PIL import Image
    from ffcv_go.fields import MaskField
    from ffcv_go.fields.decoders import MaskDecoder, SimpleRGBImageDecoder
    rng = np.random.default_rng(0)
    pix = rng.integers(0, 256, (24, 32, 3), dtype=np.uint8)
    labels = (np.arange(24 * 32).reshape(24, 32) % 7).astype(np.uint8)
    Image.fromarray(pix).save(tmp_path / "a.png")
    Image.fromarray(pix).save(tmp_path / "a.jpg", quality=95)
    m = Image.fromarray(labels)
    m.putpalette([v for k in range(256) for v in (k * 30 % 256, k * 60 % 256, k * 90 % 256)])
    assert m.mode == "P"
    m.save(tmp_path / "m.png")
    png, jpg, mask = (tmp_path / "a.png").read_bytes(), (tmp_path / "a.jpg").read_bytes(), (tmp_path / "m.png")
    items = [(str(tmp_path / "a.png"), str(mask)), (Path(tmp_path / "a.png"), Path(mask)), (png, mask.read_bytes()),
             (str(tmp_path / "a.jpg"), labels), (jpg, labels)]
    fields = {"image": RGBImageField(write_mode="raw"), "mask": MaskField("image")}
    path = write(tmp_path / "files.beton", fields, ListDataset(items))
    loader = Loader(str(path), batch_size=5, num_workers=1,
                    pipelines={"image": [SimpleRGBImageDecoder()], "mask": [MaskDecoder()]})
    img, got = (x.numpy() for x in next(iter(loader)))
    for k in range(3):
        np.testing.assert_array_equal(img[k], pix)
    np.testing.assert_array_equal(img[3], img[4])
    assert np.abs(img[3].astype(int) - np.asarray(Image.open(tmp_path / "a.jpg"))).mean() < 2
    for k in range(5):
        np.testing.assert_array_equal(got[k], labels)
    for bad, words in [((3, labels), "RGBImageField takes a PIL image, a uint8 array, an image file's bytes or "
                        "its path \\(str or os.PathLike\\), got int"),
                       ((png, 3.5), "MaskField takes .* bytes or path \\(str or os.PathLike\\), got float")]:
        with pytest.raises(TypeError, match=f"dataset item 1, field '(image|mask)': {words}"):
            write(tmp_path / "bad.beton", fields, ListDataset([items[0], bad]))


@pytest.mark.parametrize("pool", [None, "thread", "process"])
def test_dict_items(tmp_path, pool):
    """Dict items (field name -> value, as Streaming, litdata and Hugging
    Face datasets yield) are written as the tuples of their fields' values,
    whatever their key order; other keys are ignored. A missing key fails
    the write, naming the item and the key."""
    fields = {"label": IntField(), "blob": BytesField()}
    as_dicts = FnDataset(200, lambda i: {"extra": "x", "blob": np.full(i % 5 + 1, i % 256, np.uint8), "label": i})
    as_tuples = FnDataset(200, lambda i: (i, np.full(i % 5 + 1, i % 256, np.uint8)))
    a = tmp_path / "dicts.beton"
    DatasetWriter(str(a), fields, page_size=2 * MiB, progress=False).from_indexed_dataset(
        as_dicts, pool=pool, pool_workers=2, chunksize=16)
    b = write(tmp_path / "tuples.beton", fields, as_tuples)
    assert a.read_bytes() == b.read_bytes()
    broken = FnDataset(200, lambda i: {"label": i} if i == 123 else as_dicts[i])
    with pytest.raises(KeyError, match=r"dataset item 123 has no key 'blob' \(a dict item needs one per field: "
                                       r"label, blob; its keys: 'label'\)"):
        DatasetWriter(str(tmp_path / "c.beton"), fields, progress=False).from_indexed_dataset(
            broken, pool=pool, pool_workers=2, chunksize=16)
    # One JSONField: a dict without the field's key is the document itself.
    docs = [{"a": 1}, {"doc": 2, "b": [1]}]
    r = Reader(str(write(tmp_path / "json.beton", {"doc": JSONField()}, ListDataset(docs))))
    assert [JSONField.unpack(np.asarray(r.read(k, "doc"))) for k in range(2)] == [{"a": 1}, 2]
