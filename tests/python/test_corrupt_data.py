"""Corrupt .beton files: damaged JPEGs, bad pointers, sizes and shapes that
overflow, truncated files and lying headers fail with an error naming the file,
sample and field (or are skipped with on_error="skip"); nothing is read wrong
silently and nothing allocates what a bad size claims.
"""
import struct

import numpy as np
import pytest
import torch

from conftest import N_JPEG, FnDataset, MiB, rss_bytes, write

from ffcv_go import CorruptFileError, Loader, SampleError
from ffcv_go.fields import BytesField, IntField, NDArrayField, RGBImageField
from ffcv_go.fields.decoders import (CenterCropRGBImageDecoder, RandomResizedCropRGBImageDecoder,
                                     SimpleRGBImageDecoder)
from ffcv_go.loader import OrderOption
from ffcv_go.reader import Reader
from ffcv_go.transforms import ToTensor


def corrupted(tmp_path, src_bytes, edits, name="bad.beton", cut=None):
    data = bytearray(src_bytes)
    for off, b in edits:
        data[off:off + len(b)] = b
    if cut is not None:
        data = data[:cut]
    out = tmp_path / name
    out.write_bytes(bytes(data))
    return out


def flipped(data, off, n):
    return bytes(b ^ 0xFF for b in data[off:off + n])


def image_col(info, k):
    """File offset of sample k's RGB column {mode u8, width u16, height u16, data_ptr u64}."""
    return info["meta"] + k * info["row"]


def image_loader(path, **kw):
    kw.setdefault("batch_size", 8)
    kw.setdefault("num_workers", 2)
    kw.setdefault("pipelines", {"image": [CenterCropRGBImageDecoder((32, 32), 1.0), ToTensor()]})
    return Loader(path, **kw)


def epoch_ids(loader):
    ids = []
    for img, label in loader:
        assert img.shape[1:] == (32, 32, 3)
        ids += label.view(-1).tolist()
    return ids


def assert_names(exc, path, sample, field):
    msg = str(exc)
    assert str(path) in msg and f"sample {sample}" in msg and repr(field).replace("'", '"') in msg.replace(
        "'", '"'), msg
    assert "internal error" not in msg, msg


def jpeg_corruptions(info):
    """name -> (edits, the bad samples)."""
    ptrs, sizes, data = info["ptrs"], info["sizes"], info["data"]
    k, j = 13, 30
    mid = int(ptrs[j] + sizes[j] // 2)
    page = int(ptrs[40] // info["page"] * info["page"])
    heap_end = struct.unpack("<Q", data[16:24])[0]  # the last page ends with the heap
    on_page = [i for i in range(N_JPEG) if ptrs[i] // info["page"] == ptrs[40] // info["page"]]
    return {
        "flipped SOI": ([(int(ptrs[k]), flipped(data, int(ptrs[k]), 2))], [k]),
        "flipped scan bytes": ([(mid, flipped(data, mid, 16))], [j]),
        "pointer past EOF": ([(image_col(info, k) + 5, struct.pack("<Q", len(data) + 4096))], [k]),
        "pointer into the table": ([(image_col(info, k) + 5, struct.pack("<Q", info["meta"]))], [k]),
        "zeroed page": ([(page, bytes(min(info["page"], heap_end - page)))], on_page),
        "65535x65535 image": ([(image_col(info, j) + 1, struct.pack("<HH", 0xFFFF, 0xFFFF))], [j]),
    }


CORRUPTIONS = ["flipped SOI", "flipped scan bytes", "pointer past EOF", "pointer into the table", "zeroed page",
               "65535x65535 image"]


@pytest.mark.parametrize("how", CORRUPTIONS)
def test_corrupt_jpeg_sample_raises_naming_it(tmp_path, jpeg_info, how):
    edits, bad = jpeg_corruptions(jpeg_info)[how]
    path = corrupted(tmp_path, jpeg_info["data"], edits)
    loader = image_loader(path, order=OrderOption.SEQUENTIAL, drop_last=False)
    with pytest.raises(ValueError) as info:
        epoch_ids(loader)
    assert isinstance(info.value, (SampleError, CorruptFileError))
    assert_names(info.value, path, min(bad), "image")


def epoch_by_id(loader):
    out = {}
    for img, label in loader:
        out.update({int(i): x.clone() for i, x in zip(label.view(-1), img)})
    return out


DECODERS = {"center": lambda: CenterCropRGBImageDecoder((32, 32), 1.0),
            "rrc": lambda: RandomResizedCropRGBImageDecoder((32, 32))}

@pytest.mark.parametrize("decoder", list(DECODERS))
@pytest.mark.parametrize("how", CORRUPTIONS)
@pytest.mark.parametrize("os_cache", [True, False])
def test_corrupt_samples_skipped(tmp_path, jpeg_file, jpeg_info, how, decoder, os_cache):
    """on_error='skip' leaves the bad samples out and counts them, epoch after
    epoch; every sample delivered equals the clean file's: nothing silently wrong.
    A random crop decodes only the restart intervals under it (the writer puts
    markers in its JPEGs), so damaged scan bytes beside the crop go unseen and
    the sample, whose pixels are right, is delivered; damage under it is
    noticed where an interval no longer ends at its marker."""
    edits, bad = jpeg_corruptions(jpeg_info)[how]
    path = corrupted(tmp_path, jpeg_info["data"], edits)
    kw = dict(order=OrderOption.RANDOM, seed=1, drop_last=False, os_cache=os_cache,
              pipelines={"image": [DECODERS[decoder](), ToTensor()]})
    clean = image_loader(jpeg_file, **kw)
    loader = image_loader(path, on_error="skip", **kw)
    delivered = 0
    for epoch in range(2):  # training continues
        want, got = epoch_by_id(clean), epoch_by_id(loader)
        for i, x in got.items():
            assert torch.equal(x, want[i]), f"{how}: sample {i} differs from the clean file"
        if (how, decoder) == ("flipped scan bytes", "rrc"):
            assert set(range(N_JPEG)) - set(bad) <= set(got), how
        else:
            assert sorted(got) == sorted(set(range(N_JPEG)) - set(bad)), how
        delivered += len(got)
    assert loader.stats["samples_skipped"] == 2 * N_JPEG - delivered


def test_skipped_samples_keep_good_pixels(tmp_path, jpeg_file, jpeg_info):
    edits, bad = jpeg_corruptions(jpeg_info)["flipped scan bytes"]
    path = corrupted(tmp_path, jpeg_info["data"], edits)
    kw = dict(order=OrderOption.SEQUENTIAL, drop_last=False, batch_size=5)
    want = {}
    for img, label in image_loader(jpeg_file, **kw):
        want.update({int(i): x.clone() for i, x in zip(label.view(-1), img)})
    seen = 0
    for img, label in image_loader(path, on_error="skip", **kw):
        for i, x in zip(label.view(-1).tolist(), img):
            assert i not in bad and torch.equal(x, want[i]), i
            seen += 1
    assert seen == N_JPEG - len(bad)


def test_truncated_file(tmp_path, jpeg_info):
    data = jpeg_info["data"]
    for cut in (10, 24 + 100, jpeg_info["meta"] + 7, len(data) // 2, len(data) - 5):
        path = corrupted(tmp_path, data, [], name=f"cut{cut}.beton", cut=cut)
        for open_ in (Reader, image_loader):
            with pytest.raises(CorruptFileError) as info:
                open_(path)
            assert str(path) in str(info.value)


def bytes_file(tmp_path):
    return write(tmp_path / "bytes.beton", {"blob": BytesField(), "label": IntField()},
                 FnDataset(20, lambda i: (np.full(1000 + i, i, dtype=np.uint8), i)))


@pytest.mark.parametrize("size", [2**64 - 1, 2**63, 2**40, 3 * MiB])
def test_bytes_size_overflow(tmp_path, size):
    src = bytes_file(tmp_path)
    r = Reader(src)
    meta, row = r._info["metadata_offset"], r._info["row_size"]
    r.close()
    path = corrupted(tmp_path, src.read_bytes(), [(meta + 7 * row + 8, struct.pack("<Q", size))])
    rss0 = rss_bytes()
    loader = Loader(path, batch_size=4, num_workers=2, order=OrderOption.SEQUENTIAL)
    # The bad length must not size every sample's output.
    assert loader._go_outputs[0]["shape"] == [1019]
    with pytest.raises(ValueError) as info:
        list(loader)
    assert_names(info.value, path, 7, "blob")
    loader = Loader(path, batch_size=4, num_workers=2, on_error="skip")
    assert sum(len(b[1]) for b in loader) == 19  # 5 batches of 4, one sample left out
    assert loader.stats["samples_skipped"] == 1
    assert rss_bytes() - rss0 < 200 * MiB


@pytest.mark.parametrize("shape", [(2**32, 2**32), (2**62, 4), (2**40,)])
def test_ndarray_shape_overflow(tmp_path, shape):
    src = write(tmp_path / "arr.beton", {"arr": NDArrayField(np.float32, (2, 3)), "label": IntField()},
                FnDataset(8, lambda i: (np.full((2, 3), i, np.float32), i)))
    shape_bytes = b"".join(struct.pack("<Q", d) for d in shape)
    path = corrupted(tmp_path, src.read_bytes(), [(24 + 17, shape_bytes)])
    rss0 = rss_bytes()
    with pytest.raises(ValueError) as info:
        Loader(path, batch_size=4, num_workers=1)
    assert str(path) in str(info.value) and "arr" in str(info.value)
    assert rss_bytes() - rss0 < 200 * MiB


def test_raw_image_size_overflow(tmp_path):
    src = write(tmp_path / "raw.beton", {"image": RGBImageField(), "label": IntField()},
                FnDataset(8, lambda i: (np.full((6, 5, 3), i, np.uint8), i)))
    r = Reader(src)
    meta, row = r._info["metadata_offset"], r._info["row_size"]
    r.close()
    path = corrupted(tmp_path, src.read_bytes(), [(meta + 3 * row + 1, struct.pack("<HH", 0xFFFF, 0xFFFF))])
    loader = Loader(path, batch_size=4, num_workers=1, order=OrderOption.SEQUENTIAL,
                    pipelines={"image": [RandomResizedCropRGBImageDecoder((4, 4))]})
    with pytest.raises(ValueError) as info:
        list(loader)
    assert_names(info.value, path, 3, "image")
    with pytest.raises(TypeError):  # SimpleRGBImageDecoder: sizes differ
        Loader(path, batch_size=4, num_workers=1, pipelines={"image": [SimpleRGBImageDecoder()]})


@pytest.mark.parametrize("n", [2**60, 2**64 - 1, 2**40])
def test_header_claiming_huge_sample_count(tmp_path, jpeg_info, n):
    path = corrupted(tmp_path, jpeg_info["data"], [(8, struct.pack("<Q", n))])
    rss0 = rss_bytes()
    for open_ in (Reader, image_loader):
        with pytest.raises(CorruptFileError, match="samples|metadata") as info:
            open_(path)
        assert str(path) in str(info.value)
    assert rss_bytes() - rss0 < 100 * MiB


def test_header_claiming_huge_sample_count_without_fields(tmp_path):
    """No fields, so rows take no bytes: the count must still be checked against the file."""
    path = tmp_path / "nofields.beton"
    path.write_bytes(struct.pack("<HHIQQ", 2, 0, 2 * MiB, 2**60, 24))
    rss0 = rss_bytes()
    for open_ in (Reader, lambda p: Loader(p, batch_size=4, num_workers=1)):
        with pytest.raises(CorruptFileError) as info:
            open_(path)
        assert str(path) in str(info.value)
    assert rss_bytes() - rss0 < 100 * MiB
