"""Bad input gives clear exceptions: corrupt files, bad samples at write time, bad Loader arguments."""
import os
import re
import struct

import numpy as np
import pytest
import torch

from conftest import MiB, collect, fixture_file, write

from ffcv_go import CorruptFileError, DatasetWriter, Loader, SampleError
from ffcv_go.loader import OrderOption
from ffcv_go.reader import Reader
from ffcv_go.fields import IntField, FloatField, BytesField, NDArrayField, TorchTensorField, JSONField


def corrupt_copy(tmp_path, name, patch=None, cut=None):
    src, _ = fixture_file(name)
    data = bytearray(src.read_bytes())
    if patch:
        for off, b in patch.items():
            data[off:off + len(b)] = b
    if cut is not None:
        data = data[:cut]
    out = tmp_path / f"bad_{name}.beton"
    out.write_bytes(bytes(data))
    return out


def assert_corrupt(path, match):
    """Reader and Loader both refuse path with a CorruptFileError naming it."""
    for opener in (lambda: Reader(path), lambda: Loader(path, batch_size=4, num_workers=1)):
        with pytest.raises(CorruptFileError) as info:
            opener()
        msg = str(info.value)
        assert str(path) in msg, msg
        assert re.search(match, msg), msg
        assert isinstance(info.value, ValueError)


# ---- corrupt files -----------------------------------------------------------------------

ARRAYS_META = 24 + 5 * 1041            # 5229: start of the metadata table
ARRAYS_HEAP = ARRAYS_META + 100 * 56   # 10829: end of the metadata table
ARRAYS_ALLOC = 2 * 2 * MiB             # allocation table pointer


@pytest.mark.parametrize("cut,match", [
    (0, "header"), (11, "header"), (23, "header"),
    (24, "descriptor"), (24 + 1041 * 3 + 7, "descriptor"),
    (ARRAYS_META + 56 * 40 + 3, "metadata"),
    (ARRAYS_HEAP + 100, "allocation table"), (3 * MiB, "allocation table"),
    (ARRAYS_ALLOC, "allocation table"),            # the whole table is gone
    (ARRAYS_ALLOC + 24 * 7, "allocation table"),   # cut at an entry boundary
    (ARRAYS_ALLOC + 24 * 7 + 5, "allocation table"),
    (ARRAYS_ALLOC + 24 * 500 - 1, "allocation table"),
])
def test_truncated_file(tmp_path, cut, match):
    assert_corrupt(corrupt_copy(tmp_path, "arrays", cut=cut), match)


def test_truncated_scalars_file(tmp_path):
    src, _ = fixture_file("scalars")
    size = src.stat().st_size
    for cut in (24 + 2 * 1041 + 16 * 100 + 5, size - 1):
        assert_corrupt(corrupt_copy(tmp_path, "scalars", cut=cut), "metadata|allocation table")


@pytest.mark.parametrize("version", [0, 1, 3])
def test_wrong_version(tmp_path, version):
    assert_corrupt(corrupt_copy(tmp_path, "scalars", patch={0: struct.pack("<H", version)}), f"version {version}")


def test_not_a_beton_is_not_read_as_a_version(tmp_path):
    """A first uint16 no .beton version has (0xFFFF; a JPEG's 0xD8FF) is
    another kind of file, not "version 65535"."""
    assert_corrupt(corrupt_copy(tmp_path, "scalars", patch={0: struct.pack("<H", 0xFFFF)}),
                   "does not begin with a .beton header$")
    assert_corrupt(corrupt_copy(tmp_path, "scalars", patch={0: b"\xff\xd8\xff\xe0"}),
                   "does not begin with a .beton header: it is a JPEG image")


@pytest.mark.parametrize("page_size", [0, 1 << 20, 3 * MiB, 0xFFFFFFFF])
def test_bad_page_size(tmp_path, page_size):
    assert_corrupt(corrupt_copy(tmp_path, "scalars", patch={4: struct.pack("<I", page_size)}), "page size")


@pytest.mark.parametrize("ptr", [4206304 + 24, 2**63, 2**64 - 1, 100])
def test_alloc_table_pointer_out_of_file(tmp_path, ptr):
    assert_corrupt(corrupt_copy(tmp_path, "arrays", patch={16: struct.pack("<Q", ptr)}), "allocation table")


@pytest.mark.parametrize("type_id", [7, 42, 254])
def test_unknown_type_id(tmp_path, type_id):
    # Field 2 of arrays.beton is "tensor".
    path = corrupt_copy(tmp_path, "arrays", patch={24 + 2 * 1041: bytes([type_id])})
    assert_corrupt(path, f"type id {type_id}")
    with pytest.raises(CorruptFileError, match="tensor"):
        Reader(path)


def test_custom_field_without_handler(tmp_path):
    path = corrupt_copy(tmp_path, "scalars", patch={24 + 1041: bytes([255])})
    with pytest.raises(ValueError, match=r"\"value\".*custom") as info:
        Reader(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("n", [2**60, 2**63, 2**64 - 1, 258])
def test_header_claims_too_many_samples(tmp_path, n):
    assert_corrupt(corrupt_copy(tmp_path, "scalars", patch={8: struct.pack("<Q", n)}), "samples|metadata")


def test_more_fields_than_the_file_holds(tmp_path):
    assert_corrupt(corrupt_copy(tmp_path, "scalars", patch={2: struct.pack("<H", 60000)}), "descriptor")


def test_bad_array_descriptor(tmp_path):
    # dtype length of field 0 ("arr") set beyond the argument block.
    path = corrupt_copy(tmp_path, "arrays", patch={24 + 17 + 256: struct.pack("<Q", 5000)})
    assert_corrupt(path, "arr")


def test_corrupt_heap_pointer(tmp_path):
    # Sample 37's "arr" pointer (column f0 of its row) points past the heap.
    path = corrupt_copy(tmp_path, "arrays", patch={ARRAYS_META + 37 * 56: struct.pack("<Q", 2**40)})
    r = Reader(path)  # rows are checked when read
    assert np.array_equal(r.read(36, "arr").view("<f4").reshape(3, 5), fixture_file("arrays")[1]["arr"][36])
    with pytest.raises(CorruptFileError, match=r"sample 37.*\"arr\"|sample 37.*'arr'"):
        r.read(37, "arr")
    loader = Loader(path, batch_size=10, num_workers=2, pipelines={"blob": None, "doc": None})
    it = iter(loader)
    for _ in range(3):
        next(it)
    with pytest.raises(CorruptFileError) as info:
        next(it)
    assert str(path) in str(info.value) and "sample 37" in str(info.value) and "arr" in str(info.value)
    # The loader is still usable, e.g. for the samples around the bad one.
    ok = Loader(path, batch_size=10, num_workers=2, indices=[i for i in range(100) if i != 37], drop_last=False,
                pipelines={"blob": None, "doc": None})
    assert sum(len(b[0]) for b in ok) == 99


def test_corrupt_bytes_size(tmp_path):
    # Sample 5's blob claims 3 MiB: more than a page.
    path = corrupt_copy(tmp_path, "arrays", patch={ARRAYS_META + 5 * 56 + 24 + 8: struct.pack("<Q", 3 * MiB)})
    r = Reader(path)
    with pytest.raises(CorruptFileError, match="sample 5"):
        r.read(5, "blob")


def test_nonexistent_file(tmp_path):
    missing = tmp_path / "nope.beton"
    with pytest.raises(FileNotFoundError, match="nope.beton"):
        Reader(missing)
    with pytest.raises(FileNotFoundError, match="nope.beton"):
        Loader(missing, batch_size=4)


def test_directory_is_not_a_file(tmp_path):
    with pytest.raises(OSError):
        Reader(tmp_path)


def test_not_a_beton_file(tmp_path):
    path = tmp_path / "random.beton"
    path.write_bytes(np.random.default_rng(0).integers(0, 256, 10_000, dtype=np.uint8).tobytes())
    with pytest.raises(CorruptFileError, match="random.beton"):
        Reader(path)


# ---- bad samples at write time ---------------------------------------------------------------

def assert_no_output(tmp_path, name):
    assert not (tmp_path / name).exists()
    assert [f for f in os.listdir(tmp_path) if name in f] == []


def test_field_name_too_long(tmp_path):
    with pytest.raises(ValueError, match="seventeen_chars_x"):
        DatasetWriter(str(tmp_path / "x.beton"), {"seventeen_chars_x": IntField()})
    with pytest.raises(ValueError, match="16"):
        DatasetWriter(str(tmp_path / "x.beton"), {"é": IntField()})
    assert_no_output(tmp_path, "x.beton")


def test_bad_writer_arguments(tmp_path):
    with pytest.raises(ValueError):
        DatasetWriter(str(tmp_path / "x.beton"), {})
    with pytest.raises(TypeError, match="'a'"):
        DatasetWriter(str(tmp_path / "x.beton"), {"a": int})
    for ps in (MiB, 3 * MiB, 4 << 30):
        with pytest.raises(ValueError, match="page_size"):
            DatasetWriter(str(tmp_path / "x.beton"), {"a": IntField()}, page_size=ps)
    with pytest.raises(ValueError):
        NDArrayField(np.float32, (3, 0))
    with pytest.raises(TypeError):
        NDArrayField(np.dtype([("a", "<i4"), ("b", "<f4")]), (2,))
    assert_no_output(tmp_path, "x.beton")


@pytest.mark.parametrize("items,exc,match", [
    ([(1, 2.0), (2,), (3, 4.0)], ValueError, r"item 1 has 1 value"),
    ([(1, 2.0), (2, 3.0, 4), (3, 4.0)], ValueError, r"item 1 has 3 values"),
    ([(1, 2.0), ("7", 3.0)], TypeError, r"item 1, field 'i'"),
    ([(1, 2.0), (1.5, 3.0)], TypeError, r"item 1, field 'i'"),
    ([(1, 2.0), (None, 3.0)], TypeError, r"item 1, field 'i'"),
    ([(1, 2.0), (2**63, 3.0)], OverflowError, r"item 1, field 'i'"),
    ([(1, "x")], TypeError, r"item 0, field 'f'"),
])
def test_bad_scalar_samples(tmp_path, items, exc, match):
    with pytest.raises(exc, match=match):
        write(tmp_path / "s.beton", {"i": IntField(), "f": FloatField()}, items)
    assert_no_output(tmp_path, "s.beton")


@pytest.mark.parametrize("value,exc,match", [
    (np.zeros((2, 3), np.float64), TypeError, "float64"),
    # Another shape with as many elements is reshaped, as FFCV does
    # (tests/python/test_ffcv_api.py); another element count is an error.
    (np.zeros((3, 3), np.float32), ValueError, r"\(3, 3\)"),
    (np.zeros(5, np.float32), ValueError, r"\(5,\)"),
    ([[0.0] * 3] * 2, TypeError, "list"),
    (torch.zeros(2, 3), TypeError, "Tensor"),
])
def test_bad_ndarray_samples(tmp_path, value, exc, match):
    ok = np.zeros((2, 3), np.float32)
    with pytest.raises(exc, match=match) as info:
        write(tmp_path / "a.beton", {"a": NDArrayField(np.float32, (2, 3))}, [(ok,), (ok,), (value,)])
    assert "item 2" in str(info.value) and "'a'" in str(info.value)
    assert_no_output(tmp_path, "a.beton")


def test_bad_torch_tensor_samples(tmp_path):
    with pytest.raises(TypeError, match=r"item 1, field 't'.*int64"):
        write(tmp_path / "t.beton", {"t": TorchTensorField(torch.float32, (4,))},
              [(torch.zeros(4),), (torch.zeros(4, dtype=torch.int64),)])
    with pytest.raises(ValueError, match=r"item 0, field 't'"):
        write(tmp_path / "t.beton", {"t": TorchTensorField(torch.float32, (4,))}, [(torch.zeros(5),)])
    assert_no_output(tmp_path, "t.beton")


def test_bad_bytes_and_json_samples(tmp_path):
    with pytest.raises(TypeError, match=r"item 1, field 'b'"):
        write(tmp_path / "b.beton", {"b": BytesField()}, [(b"ok",), ("a str",)])
    # Any plain array is stored as its bytes; Python objects cannot be.
    with pytest.raises(TypeError, match=r"item 0, field 'b'.*object"):
        write(tmp_path / "b.beton", {"b": BytesField()}, [(np.array([None, 1]),)])
    with pytest.raises(TypeError, match=r"item 1, field 'j'"):
        write(tmp_path / "b.beton", {"j": JSONField()}, [({"a": 1},), ({"s": {1, 2}},)])
    assert_no_output(tmp_path, "b.beton")


def test_dataset_shorter_than_its_len(tmp_path):
    class Liar:
        def __len__(self):
            return 10

        def __getitem__(self, i):
            if i >= 4:
                raise IndexError(i)
            return (i,)
    with pytest.raises(IndexError):
        DatasetWriter(str(tmp_path / "l.beton"), {"i": IntField()}, progress=False).from_indexed_dataset(Liar())
    assert_no_output(tmp_path, "l.beton")


def test_unwritable_directory(tmp_path):
    with pytest.raises(OSError):
        write(tmp_path / "missing_dir" / "x.beton", {"i": IntField()}, [(1,)])


# ---- bad Loader arguments ---------------------------------------------------------------------

@pytest.mark.parametrize("bs", [0, -1, 2.5, None])
def test_bad_batch_size(index_file, bs):
    with pytest.raises(ValueError, match="batch_size"):
        Loader(index_file, batch_size=bs)


@pytest.mark.parametrize("order", ["random", 3, None, int])
def test_unknown_order(index_file, order):
    with pytest.raises(ValueError, match="order"):
        Loader(index_file, batch_size=4, order=order)


def test_pipeline_names_missing_field(index_file):
    with pytest.raises(ValueError, match="'labels'") as info:
        Loader(index_file, batch_size=4, pipelines={"labels": None})
    assert "index" in str(info.value)  # lists the fields the file has


@pytest.mark.parametrize("indices", [[0, 103], [-1], [5, 2**40], [0.5, 1.5]])
def test_indices_out_of_range(index_file, indices):
    with pytest.raises(ValueError, match="indices"):
        Loader(index_file, batch_size=4, indices=indices)


def test_wrong_decoder_for_field(index_file):
    from ffcv_go.fields.decoders import NDArrayDecoder, BytesDecoder, FloatDecoder
    for dec, field in ((NDArrayDecoder, "index"), (BytesDecoder, "value"), (FloatDecoder, "index")):
        with pytest.raises(TypeError, match=dec.__name__ + ".*(IntField|FloatField)"):
            Loader(index_file, batch_size=4, pipelines={field: [dec()]})


def test_negative_batches_ahead(index_file):
    with pytest.raises(ValueError, match="batches_ahead"):
        Loader(index_file, batch_size=4, batches_ahead=-1)


def test_bad_arguments_leave_no_objects(index_file):
    from ffcv_go import _lib
    from conftest import settle
    settle()
    before = _lib.live_objects()
    for kw in ({"indices": [500]}, {"pipelines": {"x": None}}, {"order": "x"}):
        with pytest.raises(ValueError):
            Loader(index_file, batch_size=4, **kw)
    settle()
    assert _lib.live_objects() == before
    # And a valid loader still works afterwards.
    assert len(collect(Loader(index_file, batch_size=50, num_workers=1))) == 2


def test_skip_bad_samples(tmp_path):
    path = corrupt_copy(tmp_path, "arrays", patch={ARRAYS_META + 37 * 56: struct.pack("<Q", 2**40)})
    _, z = fixture_file("arrays")
    loader = Loader(path, batch_size=10, num_workers=2, drop_last=False, on_error="skip",
                    pipelines={"blob": None, "doc": None})
    batches = list(loader)
    arr = torch.cat([b[0] for b in batches]).numpy()
    assert [len(b[0]) for b in batches] == [10, 10, 10, 9] + [10] * 6
    assert np.array_equal(arr, np.delete(z["arr"], 37, axis=0))
    assert loader.stats["samples_skipped"] == 1


class CustomFloat(FloatField):
    """A field class FFCV does not know (stored with type id 255)."""
    TYPE_ID = 255

    @staticmethod
    def from_binary(binary):
        return CustomFloat()


def test_custom_field_with_handler(tmp_path):
    path = corrupt_copy(tmp_path, "scalars", patch={24 + 1041: bytes([255])})
    _, z = fixture_file("scalars")
    r = Reader(path, custom_handlers={"value": CustomFloat})
    assert type(r.handlers["value"]) is CustomFloat and type(r.handlers["label"]) is IntField
    assert np.array_equal(r.metadata["f1"], z["value"]) and np.array_equal(r.metadata["f0"], z["label"])
    # Its column loads when dropped from the pipelines; the other field decodes as usual.
    loader = Loader(path, batch_size=100, num_workers=1, custom_fields={"value": CustomFloat}, drop_last=False,
                    pipelines={"value": None})
    assert np.array_equal(torch.cat([b[0] for b in loader])[:, 0].numpy(), z["label"])
