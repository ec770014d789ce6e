"""FFCV 1.0's public API under ffcv_go: module paths, the Field.encode
protocol and custom fields, writer and field details, libffcv, transforms.
Values are checked against numpy/PIL computations on real data."""
import importlib
import inspect
import io
import json
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from conftest import write, collect
from ffcv_go import DatasetWriter, Loader
from ffcv_go.fields import BytesField, FloatField, IntField, JSONField, NDArrayField, RGBImageField
from ffcv_go.fields.decoders import IntDecoder, NDArrayDecoder, SimpleRGBImageDecoder, BytesDecoder
from ffcv_go.loader import OrderOption
from ffcv_go.reader import Reader

sys.path.insert(0, str(Path(__file__).parents[2] / "examples"))
from make_tiny_imagefolder import find_photos  # noqa: E402

# FFCV 1.0's public names, by module (the import paths FFCV programs use).
FFCV_MODULES = {
    "ffcv_go": ["DatasetWriter", "Loader"],
    "ffcv_go.libffcv": ["memcpy", "imdecode", "resize_crop", "read"],
    "ffcv_go.utils": ["chunks", "is_power_of_2", "align_to_page", "decode_null_terminated_string",
                      "cast_int_to_byte_ptr", "s_print"],
    "ffcv_go.types": ["CURRENT_VERSION", "HeaderType", "ALLOC_TABLE_TYPE", "FieldDescType", "TYPE_ID_HANDLER",
                      "get_handlers", "get_metadata_type"],
    "ffcv_go.benchmarks": ["Benchmark", "benchmark", "run_all"],
    "ffcv_go.memory_managers": ["OSCacheManager", "ProcessCacheManager", "MemoryManager", "MemoryContext"],
    "ffcv_go.memory_managers.base": ["MemoryManager", "MemoryContext"],
    "ffcv_go.memory_managers.os_cache": ["OSCacheManager", "OSCacheContext"],
    "ffcv_go.memory_managers.process_cache": ["ProcessCacheManager", "ProcessCacheContext"],
    "ffcv_go.transforms.common": ["Squeeze"],
    "ffcv_go.transforms.flip": ["RandomHorizontalFlip"],
    "ffcv_go.transforms.cutout": ["Cutout"],
    "ffcv_go.transforms.mixup": ["ImageMixup", "LabelMixup", "MixupToOneHot"],
    "ffcv_go.transforms.translate": ["RandomTranslate"],
    "ffcv_go.transforms.poisoning": ["Poison"],
    "ffcv_go.transforms.replace_label": ["ReplaceLabel"],
    "ffcv_go.transforms.normalize": ["NormalizeImage", "ch_dtype_from_numpy"],
    "ffcv_go.transforms.ops": ["ToTensor", "ToDevice", "ToTorchImage", "Convert", "View"],
    "ffcv_go.transforms.module": ["ModuleWrapper"],
    "ffcv_go.transforms.random_resized_crop": ["RandomResizedCrop"],
    "ffcv_go.transforms.color_jitter": ["RandomBrightness", "RandomContrast", "RandomSaturation"],
    "ffcv_go.transforms.utils.fast_crop": ["resize_crop", "get_random_crop", "get_center_crop"],
}


@pytest.mark.parametrize("module", sorted(FFCV_MODULES))
def test_ffcv_module_paths(module):
    mod = importlib.import_module(module)
    for name in FFCV_MODULES[module]:
        assert getattr(mod, name) is not None, f"{module}.{name}"


def test_transform_signatures_match_ffcv():
    from ffcv_go import transforms as T
    expect = {
        "Cutout": "(self, crop_size, fill=(0, 0, 0))",
        "RandomHorizontalFlip": "(self, flip_prob=0.5, seed=None)",  # seed: FFCV-SSL's, after FFCV's
        "RandomTranslate": "(self, padding, fill=(0, 0, 0), seed=None)",  # seed: ffcv_go's, after FFCV's
        "Poison": "(self, mask, alpha, indices, clamp=(0, 255))",
        "ToTorchImage": "(self, channels_last=True, convert_back_int16=True)",
        "ToDevice": "(self, device, non_blocking=True)",
        "RandomBrightness": "(self, magnitude, p=0.5)",
        "NormalizeImage": "(self, mean, std, type)",
        "ImageMixup": "(self, alpha, same_lambda)",
    }
    for name, sig in expect.items():
        assert str(inspect.signature(getattr(T, name).__init__)) == sig, name
    # RandomResizedCrop takes FFCV 1.0's (scale, ratio, size) and FFCV-SSL's
    # (output_size, scale=, ratio=), by position and by keyword.
    for args, kwargs in [(((0.2, 1.0), (0.75, 4 / 3), 64), {}), ((), dict(scale=(0.2, 1.0), ratio=(0.75, 4 / 3), size=64)),
                         (((64, 64),), dict(scale=(0.2, 1.0), ratio=(0.75, 4 / 3))), (((64, 64), (0.2, 1.0)), {})]:
        t = T.RandomResizedCrop(*args, **kwargs)
        assert (t.size, t.scale, t.ratio) == ((64, 64), (0.2, 1.0), (0.75, 4 / 3)), (args, kwargs)
    # FFCV's parameters first; ffcv_go's own (keep_source_jpeg) come after, with defaults.
    params = list(inspect.signature(RGBImageField.__init__).parameters.values())
    assert [(p.name, p.default) for p in params[:6]] == [
        ("self", inspect.Parameter.empty), ("write_mode", "raw"), ("max_resolution", None),
        ("smart_threshold", None), ("jpeg_quality", 90), ("compress_probability", 0.5)]
    assert all(p.default is not inspect.Parameter.empty for p in params[6:])


# ---- custom fields (Field.encode, type 255) ----------------------------------------

class StringField(NDArrayField):
    """FFCV's documented pattern: a subclass with its own __init__ and encode."""

    def __init__(self, max_len):
        self.max_len = max_len
        super().__init__(np.dtype("uint8"), (max_len,))

    def encode(self, destination, field, malloc):
        raw = field.encode("ascii")[:self.max_len].ljust(self.max_len, b"\0")
        return super().encode(destination, np.frombuffer(raw, dtype="uint8"), malloc)


class PairField(IntField):
    """A subclass that keeps the built-in encode (Go-encoded, stored as 255)."""


CAPTIONS = ["a cat", "", "two dogs on a red sofa", "x" * 40, "naïve".encode("ascii", "replace").decode()]


def test_custom_field_written_as_type_255_and_read_back(tmp_path):
    path = write(tmp_path / "c.beton", {"caption": StringField(24), "n": PairField(), "i": IntField()},
                 [(c, 10 * k, k) for k, c in enumerate(CAPTIONS)])
    raw = path.read_bytes()
    # Descriptors follow the 24-byte header, 1041 bytes each: type id first.
    assert [raw[24 + 1041 * k] for k in range(3)] == [255, 255, 1]
    with pytest.raises(ValueError, match="custom"):
        Reader(str(path))
    reader = Reader(str(path), custom_handlers={"caption": StringField, "n": PairField})
    assert type(reader.handlers["caption"]) is NDArrayField  # from_binary, as FFCV
    assert reader.handlers["caption"].shape == (24,)
    assert list(reader.metadata["f1"]) == [0, 10, 20, 30, 40]
    loader = Loader(str(path), batch_size=2, num_workers=1, order=OrderOption.SEQUENTIAL, drop_last=False,
                    pipelines={"caption": [NDArrayDecoder()], "n": [IntDecoder()]},
                    custom_fields={"caption": StringField, "n": PairField})
    got, ns = [], []
    for caption, n, i in loader:
        got += [bytes(np.asarray(c)).rstrip(b"\0").decode() for c in caption]
        ns += np.asarray(n).reshape(-1).tolist()
    assert got == [c[:24] for c in CAPTIONS]
    assert ns == [0, 10, 20, 30, 40]
    with pytest.raises(ValueError, match="custom"):
        Loader(str(path), batch_size=2, num_workers=1, pipelines={"caption": [NDArrayDecoder()]})


class TwoMallocs(BytesField):
    def encode(self, destination, field, malloc):
        malloc(1)
        malloc(1)


class ForgetsPointer(BytesField):
    def encode(self, destination, field, malloc):
        _, buf = malloc(3)
        buf[:] = 7


@pytest.mark.parametrize("field,match", [(TwoMallocs(), "malloc twice"), (ForgetsPointer(), "did not store")])
def test_custom_encode_misuse_is_a_clear_error(tmp_path, field, match):
    with pytest.raises(ValueError, match=match):
        write(tmp_path / "bad.beton", {"b": field}, [(b"abc",)])
    assert not (tmp_path / "bad.beton").exists()


# ---- built-in fields as FFCV ---------------------------------------------------------

def test_ndarray_field_reshapes_as_ffcv(tmp_path):
    labels = np.random.default_rng(1).random(6).astype(np.float32)
    # FFCV's linear_regression.py writes 0-d labels into shape (1,); (2, 3) into (6,) too.
    path = write(tmp_path / "a.beton", {"y": NDArrayField(np.dtype("float32"), (1,)),
                                        "m": NDArrayField(np.dtype("int16"), (6,))},
                 [(np.array(v), np.arange(6, dtype=np.int16).reshape(2, 3) * k) for k, v in enumerate(labels)])
    y, m = collect(Loader(str(path), batch_size=6, num_workers=1, order=OrderOption.SEQUENTIAL))[0]
    assert np.array_equal(np.asarray(y).reshape(-1), labels)
    assert np.array_equal(np.asarray(m)[4], np.arange(6) * 4)


def test_bytes_field_takes_any_plain_array(tmp_path):
    values = [np.sin(np.arange(1.0)), np.arange(3, dtype=np.int32), b"raw"]
    path = write(tmp_path / "b.beton", {"b": BytesField()}, [(v,) for v in values])
    reader = Reader(str(path))
    for k, v in enumerate(values):
        stored = bytes(reader.read(k, "b"))
        assert stored == (v.tobytes() if isinstance(v, np.ndarray) else v)
    (batch,) = collect(Loader(str(path), batch_size=3, num_workers=1, order=OrderOption.SEQUENTIAL,
                              pipelines={"b": [BytesDecoder()]}))[0]
    batch = np.asarray(batch)
    assert batch.shape == (3, 12)  # the longest sample: 3 int32
    assert np.array_equal(batch[1].view(np.int32), [0, 1, 2])
    assert bytes(batch[2, :3]) == b"raw" and not batch[2, 3:].any()


def test_json_unpack_batch_and_single_sample(tmp_path):
    docs = [{"id": k, "tags": ["a"] * k, "name": f"n{k}"} for k in range(4)]
    path = write(tmp_path / "j.beton", {"doc": JSONField()}, [(d,) for d in docs])
    (batch,) = collect(Loader(str(path), batch_size=4, num_workers=1, order=OrderOption.SEQUENTIAL))[0]
    assert JSONField.unpack(batch) == docs
    assert JSONField.unpack(batch[2]) == docs[2]


def test_rgb_compress_probability_none(tmp_path):
    rng = np.random.default_rng(3)
    imgs = [rng.integers(0, 256, (20, 30, 3), dtype=np.uint8) for _ in range(3)]
    path = write(tmp_path / "r.beton", {"im": RGBImageField(write_mode="raw", compress_probability=None)},
                 [(im,) for im in imgs])
    (batch,) = collect(Loader(str(path), batch_size=3, num_workers=1, order=OrderOption.SEQUENTIAL))[0]
    assert np.array_equal(np.asarray(batch), np.stack(imgs))
    with pytest.raises(ValueError, match="proportion"):
        RGBImageField(write_mode="proportion", compress_probability=None)


def test_from_webdataset(tmp_path):
    wds = pytest.importorskip("webdataset")
    n = 47
    with wds.ShardWriter(str(tmp_path / "shard-%06d.tar"), maxcount=20) as sink:
        for i in range(n):
            sink.write({"__key__": f"s{i}", "index.pyd": i, "value.pyd": float(np.sin(i))})
    shards = sorted(str(p) for p in tmp_path.glob("shard-*.tar"))
    assert len(shards) == 3
    out = tmp_path / "w.beton"
    DatasetWriter(str(out), {"index": IntField(), "value": FloatField()}, progress=False).from_webdataset(
        shards, lambda ds: ds.decode().to_tuple("index.pyd", "value.pyd"))
    reader = Reader(str(out))
    assert list(reader.metadata["f0"]) == list(range(n))
    assert np.array_equal(reader.metadata["f1"], np.sin(np.arange(n)))


def test_prepare_finalize_write_a_file(tmp_path):
    w = DatasetWriter(str(tmp_path / "p.beton"), {"i": IntField()}, progress=False)
    w.num_samples = 0
    w.prepare()
    assert not (tmp_path / "p.beton").exists()  # appears atomically at finalize
    w.finalize([])
    assert Reader(str(tmp_path / "p.beton")).num_samples == 0
    with pytest.raises(ValueError, match="prepare"):
        w.finalize([])


# ---- libffcv ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.uint8, np.int32, np.float64])
def test_libffcv_memcpy(dtype):
    from ffcv_go.libffcv import memcpy
    src = (np.arange(99 * 7) % 251).astype(dtype).reshape(99, 7)
    dst = np.zeros_like(src)
    memcpy(src, dst)
    assert np.array_equal(src, dst)
    with pytest.raises(ValueError, match="smaller"):
        memcpy(src, np.zeros(3, dtype))


def _photo_jpeg(max_side=160):
    photos = find_photos()
    if not photos:
        pytest.skip("no JPEG photos installed (Debian wallpaper packages)")
    img = Image.open(photos[0]).convert("RGB")
    img.thumbnail((max_side, max_side))
    buf = io.BytesIO()
    img.save(buf, format="JPEG", quality=90)
    data = np.frombuffer(buf.getvalue(), dtype=np.uint8)
    return data, np.asarray(Image.open(io.BytesIO(buf.getvalue())).convert("RGB"))


def test_libffcv_imdecode_matches_pil_and_crops():
    from ffcv_go.libffcv import imdecode
    data, ref = _photo_jpeg()
    h, w = ref.shape[:2]
    dst = np.zeros((h, w, 3), np.uint8)
    assert imdecode(data, dst, h, w, h, w, 0, 0, 1, 1, False, False) == 0
    # libjpeg-turbo in both; allow the DCT/upsampling variants a level or two.
    assert np.abs(dst.astype(int) - ref).mean() < 1.0
    crop = np.zeros((20, 30, 3), np.uint8)
    imdecode(data, crop, h, w, 20, 30, 10, 5, 1, 1, True, True)
    assert np.array_equal(crop, dst[5:25, 10:40][:, ::-1])
    with pytest.raises(ValueError, match="imdecode"):
        imdecode(data, np.zeros((2, 2, 3), np.uint8), h, w, h, w, 0, 0, 1, 1, False, False)


def test_libffcv_resize_crop_is_area_interpolation():
    from ffcv_go.libffcv import resize_crop
    rng = np.random.default_rng(5)
    src = rng.integers(0, 256, (40, 60, 3), dtype=np.uint8)
    dst = np.zeros((10, 15, 3), np.uint8)
    resize_crop(src, 10, 30, 0, 30, dst)
    # An exact 2x shrink: INTER_AREA is the rounded mean of each 2x2 block.
    block = src[10:30, 0:30].reshape(10, 2, 15, 2, 3).astype(np.float64).mean(axis=(1, 3))
    assert np.abs(dst - block).max() <= 0.5 + 1e-9
    with pytest.raises(ValueError, match="resize_crop"):
        resize_crop(src, 0, 50, 0, 10, dst)


def test_simple_decoder_generate_code_by_hand(tmp_path):
    """FFCV's protocol outside the Loader: accept_globals + Compiler.compile(generate_code())."""
    from ffcv_go.memory_managers import OSCacheManager
    from ffcv_go.pipeline.compiler import Compiler
    rng = np.random.default_rng(7)
    imgs = [rng.integers(0, 256, (12, 16, 3), dtype=np.uint8) for _ in range(4)]
    path = write(tmp_path / "s.beton", {"im": RGBImageField(write_mode="raw")}, [(im,) for im in imgs])
    reader = Reader(str(path))
    manager = OSCacheManager(reader)
    with manager.schedule_epoch(np.array([0])) as context:
        dec = SimpleRGBImageDecoder()
        dec.accept_globals(reader.metadata["f0"], manager.compile_reader())
    decode = Compiler.compile(dec.generate_code())
    out = np.zeros((2, 12, 16, 3), np.uint8)
    got = decode(np.array([3, 1]), out, reader.metadata["f0"], context.state)
    assert np.array_equal(got, np.stack([imgs[3], imgs[1]]))


def test_memory_manager_page_maps(tmp_path):
    from ffcv_go.memory_managers import OSCacheManager, ProcessCacheManager
    blobs = [bytes([k]) * (300_000 + 1000 * k) for k in range(20)]
    path = write(tmp_path / "m.beton", {"b": BytesField()}, [(b,) for b in blobs])
    reader = Reader(str(path))
    for cls in (OSCacheManager, ProcessCacheManager):
        m = cls(reader)
        pages = {s: {int(p) for p in ps} for s, ps in m.sample_to_pages.items()}
        assert sum(map(len, pages.values())) == len({(int(r["sample_id"]), int(r["ptr"]) // reader.page_size)
                                                     for r in reader.alloc_table})
        for row in reader.alloc_table:
            page = int(row["ptr"]) // reader.page_size
            assert page in pages[int(row["sample_id"])]
            assert int(row["sample_id"]) in m.page_to_samples[page]
            assert m.ptr_to_size[row["ptr"]] == row["size"] == len(blobs[int(row["sample_id"])])
        read = m.compile_reader()
        ctx = m.schedule_epoch([[0, 1]])
        with ctx:
            pass
        row = reader.alloc_table[reader.alloc_table["sample_id"] == 7][0]
        assert bytes(read(row["ptr"], ctx.state)) == blobs[7]


# ---- transforms ------------------------------------------------------------------------

def test_poison_with_per_pixel_alpha(tmp_path):
    from ffcv_go.transforms import Poison, ToTensor
    rng = np.random.default_rng(11)
    imgs = [rng.integers(0, 256, (8, 10, 3), dtype=np.uint8) for _ in range(4)]
    path = write(tmp_path / "p.beton", {"im": RGBImageField(write_mode="raw")}, [(im,) for im in imgs])
    mask = np.zeros((8, 10, 3))
    mask[:3, :4, 0] = 255
    alpha = np.linspace(0, 1, 80).reshape(8, 10)
    (batch,) = collect(Loader(str(path), batch_size=4, num_workers=1, order=OrderOption.SEQUENTIAL, pipelines={
        "im": [SimpleRGBImageDecoder(), Poison(mask, alpha, [1, 3]), ToTensor()]}))[0]
    batch = np.asarray(batch)
    a = alpha.astype(np.float32)[:, :, None]
    for k in range(4):
        want = imgs[k]
        if k in (1, 3):
            want = np.clip((1 - a) * imgs[k] + a * mask.astype(np.float32), 0, 255).astype(np.uint8)
        assert np.abs(batch[k].astype(int) - want).max() <= 1, k
        if k in (0, 2):
            assert np.array_equal(batch[k], imgs[k])


def test_to_torch_image_convert_int16(tmp_path):
    from ffcv_go.transforms import ToTensor, ToTorchImage
    halves = np.random.default_rng(2).standard_normal((3, 4, 5, 3)).astype(np.float16)
    path = write(tmp_path / "h.beton", {"x": NDArrayField(np.dtype("int16"), (4, 5, 3))},
                 [(h.view(np.int16),) for h in halves])
    op = ToTorchImage()
    assert op.convert_int16 is True and op.enable_int16conv is False
    (batch,) = collect(Loader(str(path), batch_size=3, num_workers=1, order=OrderOption.SEQUENTIAL,
                              pipelines={"x": [NDArrayDecoder(), ToTensor(), op]}))[0]
    assert op.enable_int16conv is True
    assert batch.dtype == np.float16 and batch.shape == (3, 3, 4, 5)
    assert np.array_equal(batch.transpose(0, 2, 3, 1), halves)
    off = ToTorchImage(convert_back_int16=False)
    off.convert_int16 = False
    (raw,) = collect(Loader(str(path), batch_size=3, num_workers=1, order=OrderOption.SEQUENTIAL,
                            pipelines={"x": [NDArrayDecoder(), ToTensor(), off]}))[0]
    assert raw.dtype == np.int16


def test_types_and_utils():
    from ffcv_go import types, utils
    assert types.HeaderType.itemsize == 24 and types.FieldDescType.itemsize == 1041
    assert types.TYPE_ID_HANDLER[4] is NDArrayField and types.TYPE_ID_HANDLER[255] is None
    md = types.get_metadata_type([IntField(), RGBImageField()])
    assert md.itemsize == 24
    assert list(utils.chunks(list(range(7)), 3)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert utils.is_power_of_2(1 << 21) and not utils.is_power_of_2(0) and not utils.is_power_of_2(6)
    assert utils.align_to_page(5, 4096) == 4096 and utils.align_to_page(8192, 4096) == 8192
    assert utils.decode_null_terminated_string(np.frombuffer(b"image\0\0x", np.uint8)) == "image"


def test_benchmarks_run_all():
    from ffcv_go.benchmarks import Benchmark, benchmark, run_all

    calls = []

    @benchmark({"n": [10, 20], "k": [1]})
    class Sum(Benchmark):
        def __init__(self, n, k):
            self.n = n

        def __enter__(self):
            return self

        def run(self):
            calls.append(self.n)
            return sum(range(self.n))

    results = run_all(runs=2, warm_up=1, pattern="Sum")
    assert [r["n"] for r in results["Sum"]] == [10, 20]
    assert all(r["time"] >= 0 and "it/sec" in r["throughput"] or "sec/it" in r["throughput"]
               for r in results["Sum"])
    assert calls == [10] * 3 + [20] * 3


# ---- against FFCV 1.0 itself (installed by `make ffcv`; skipped otherwise) ------------

def test_custom_field_files_interchange_with_ffcv(tmp_path):
    ffcv = pytest.importorskip("ffcv")
    from ffcv.fields.ndarray import NDArrayField as FNDArrayField
    from ffcv.reader import Reader as FReader
    from ffcv.writer import DatasetWriter as FWriter

    class FStringField(FNDArrayField):
        def __init__(self, max_len):
            self.max_len = max_len
            super().__init__(np.dtype("uint8"), (max_len,))

        def encode(self, destination, field, malloc):
            raw = field.encode("ascii")[:self.max_len].ljust(self.max_len, b"\0")
            return super().encode(destination, np.frombuffer(raw, dtype="uint8"), malloc)

    caps = [c[:24] for c in CAPTIONS]

    def captions(reader, name):
        data = np.fromfile(str(path_of[reader]), dtype=np.uint8)
        return [bytes(data[p:p + 24]).rstrip(b"\0").decode() for p in reader.metadata[name]]

    ours = write(tmp_path / "ours.beton", {"caption": StringField(24)}, [(c,) for c in CAPTIONS])
    theirs = tmp_path / "theirs.beton"
    FWriter(str(theirs), {"caption": FStringField(24)}, num_workers=1).from_indexed_dataset(
        [(c,) for c in CAPTIONS])
    f_reader = FReader(str(ours), custom_handlers={"caption": FStringField})
    g_reader = Reader(str(theirs), custom_handlers={"caption": StringField})
    path_of = {f_reader: ours, g_reader: theirs}
    assert captions(f_reader, "f0") == caps  # FFCV reads what ffcv_go wrote
    assert captions(g_reader, "f0") == caps  # and the other way round
    loader = Loader(str(theirs), batch_size=5, num_workers=1, order=OrderOption.SEQUENTIAL,
                    pipelines={"caption": [NDArrayDecoder()]}, custom_fields={"caption": StringField})
    (batch,) = next(iter(loader))
    assert [bytes(np.asarray(b)).rstrip(b"\0").decode() for b in batch] == caps


def test_rgb_image_helpers_encode_jpeg_and_resizer():
    from ffcv_go.fields.rgb_image import encode_jpeg, resizer, get_random_crop, get_center_crop
    _, photo = _photo_jpeg(max_side=200)
    jpg = encode_jpeg(photo, 95)
    assert jpg.dtype == np.uint8 and jpg.ndim == 1 and bytes(jpg[:2]) == b"\xff\xd8"
    back = np.asarray(Image.open(io.BytesIO(jpg.tobytes())).convert("RGB"))
    assert back.shape == photo.shape and np.abs(back.astype(int) - photo).mean() < 4
    h, w = photo.shape[:2]
    small = resizer(photo, 50)
    assert max(small.shape[:2]) <= 50 and small.shape[:2] == tuple(int(50 / max(h, w) * s) for s in (h, w))
    assert resizer(photo, 1000) is photo and resizer(photo, None) is photo
    # The crop generator's signature (height, width, scale, ratio); fast_crop's has no scale.
    assert get_center_crop(100, 200, None, 0.5) == (25, 75, 50, 50)
    from ffcv_go.transforms.utils.fast_crop import get_center_crop as fast_center
    assert fast_center(100, 200, 0.5) == (25, 75, 50, 50)
    for _ in range(20):
        i, j, ch_, cw = get_random_crop(100, 200, (0.08, 1.0), (3 / 4, 4 / 3))
        assert 0 <= i and i + ch_ <= 100 and 0 <= j and j + cw <= 200 and ch_ > 0 and cw > 0


# FFCV internals with no counterpart: its multiprocessing writer and process
# cache machinery, and numba helpers of its own orders; the loader/pipeline
# modules are checked with the loader's own tests.
_FFCV_INTERNAL = {
    "ffcv.memory_allocator", "ffcv.memory_managers.process_cache.page_reader",
    "ffcv.memory_managers.process_cache.schedule", "ffcv.writer.handle_sample", "ffcv.writer.SEEK_END",
    "ffcv.writer.worker_job_webdataset", "ffcv.writer.worker_job_indexed_dataset",
    "ffcv.traversal_order.quasi_random.generate_order_inner", "ffcv.fields.basics.BasicDecoder",
    "ffcv.benchmarks.__main__", "ffcv.benchmarks.suites",
    # The crop-generator base class belongs to the per-epoch pipeline rebuild.
    "ffcv.fields.rgb_image.ResizedCropRGBImageDecoder",
}


def test_public_names_and_signatures_match_ffcv():
    """Every public name of FFCV 1.0's modules (outside loader/pipeline) exists at
    the same ffcv_go path, with FFCV's parameters and defaults in order."""
    ffcv = pytest.importorskip("ffcv")
    import pkgutil
    problems = []
    names = ["ffcv"] + sorted(m.name for m in pkgutil.walk_packages(ffcv.__path__, "ffcv."))
    for name in names:
        if (name == "ffcv._libffcv" or name.startswith(("ffcv.loader", "ffcv.pipeline"))
                or any(name == i or name.startswith(i + ".") for i in _FFCV_INTERNAL)):
            continue
        fm = importlib.import_module(name)
        try:
            gm = importlib.import_module("ffcv_go" + name[4:])
        except ImportError as e:
            problems.append(f"module {name}: {e}")
            continue
        for attr, val in vars(fm).items():
            origin = getattr(val, "__module__", None) or ""
            if (attr.startswith("_") or attr == "TYPE_CHECKING" or inspect.ismodule(val)
                    or f"{name}.{attr}" in _FFCV_INTERNAL or attr in ("Loader", "OrderOption")
                    or not origin.startswith("ffcv") or origin.startswith(("ffcv.loader", "ffcv.pipeline"))):
                continue
            if origin != name and not name == "ffcv" and not fm.__file__.endswith("__init__.py"):
                continue  # an import used by the module, not its API
            if not hasattr(gm, attr):
                problems.append(f"missing {name}.{attr}")
                continue
            f, g = (val.__init__, getattr(gm, attr).__init__) if inspect.isclass(val) else (val, getattr(gm, attr))
            try:
                fp, gp = inspect.signature(f).parameters, inspect.signature(g).parameters
            except (TypeError, ValueError):
                continue
            if any(p.kind is p.VAR_POSITIONAL for p in fp.values()):
                continue  # FFCV's class has no __init__ of its own
            if attr == "RandomResizedCrop":
                continue  # FFCV's and FFCV-SSL's forms both: test_transform_signatures_match_ffcv
            theirs = [(p.name, p.default) for p in fp.values()]
            ours = [(p.name, p.default) for p in gp.values()]
            # Same names and FFCV's defaults in order; ours may add defaulted parameters after.
            extra = ours[len(theirs):]
            if [n for n, _ in ours[:len(theirs)]] != [n for n, _ in theirs] or any(
                    d is inspect.Parameter.empty for _, d in extra) or any(
                    d is not inspect.Parameter.empty and repr(d) != repr(od)
                    for (_, d), (_, od) in zip(theirs, ours)):
                problems.append(f"signature {name}.{attr}: FFCV {inspect.signature(f)}, ffcv_go {inspect.signature(g)}")
    assert not problems, "\n".join(problems)
