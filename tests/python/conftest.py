"""Shared helpers for the ffcv_go Python test suite.

Fixture files (written by FFCV 1.0.1) live in tests/fixtures/ffcv-1.0 (or
$FFCV_FIXTURES). They are required: a missing fixture fails the tests that
need it.
"""
import gc
import json
import os
import sys
import threading
import time
from pathlib import Path

# Under pytest-xdist the workers share the cores: torch's intra-op pool of
# one thread a core in each (and in the examples they start) would make
# every process spin against the others.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
import pytest

MiB = 1 << 20

FIXTURES = Path(os.environ.get("FFCV_FIXTURES") or Path(__file__).parents[1] / "fixtures/ffcv-1.0")

FIXTURE_NAMES = ["scalars", "arrays", "images_raw_fixed", "images_raw_var", "images_jpg_var",
                 "images_smart_var", "images_proportion_var", "pages_2mib"]


def fixture_file(name):
    """(path of NAME.beton, its npz content); fails the test if missing."""
    beton, npz = FIXTURES / f"{name}.beton", FIXTURES / f"{name}.npz"
    if not beton.is_file() or not npz.is_file():
        pytest.fail(f"fixture {name} missing: {beton} / {npz} (set FFCV_FIXTURES)")
    with np.load(npz) as z:
        content = {k: z[k] for k in z.files}
    return beton, content


def ffcv_relaid(path):
    """The bytes of FFCV's file at path in the layout ffcv_go's writer gives
    the same content (docs/design/format.md, "Heap pages"): FFCV's pages up
    to the last heap byte, not padded to a whole page; and a heap that fits
    after the tables in their page moved there, every pointer into it with it."""
    from ffcv_go.reader import Reader
    data = Path(path).read_bytes()
    r = Reader(str(path))
    ps, dtype, n, allocs = r.page_size, r.metadata.dtype, r.num_samples, r.alloc_table.copy()
    r.close()
    meta_off = 24 + 1041 * len(dtype.names)
    tables = meta_off + n * dtype.itemsize
    rows = bytearray(data[meta_off:tables])  # its padding bytes as they are
    meta = np.frombuffer(rows, dtype=dtype)
    first = -(-tables // ps) * ps  # FFCV's heap: the page after the tables
    used = allocs[allocs["size"] > 0]
    end = max([tables] + (used["ptr"] + used["size"]).tolist())
    out = data[:end]
    if first < end and tables + end - first <= ps:
        def move(ptrs):
            moved = ptrs >= first
            ptrs[moved] = ptrs[moved] - np.uint64(first) + np.uint64(tables)
        for name in meta.dtype.names:
            col = meta[name]
            if col.dtype.names:
                for sub in ("ptr", "data_ptr"):
                    if sub in col.dtype.names:
                        move(col[sub])
            elif col.dtype == np.dtype("<u8"):  # NDArray, TorchTensor: the pointer alone
                move(col)
        move(allocs["ptr"])
        out = data[:meta_off] + bytes(rows) + data[first:end]
        end = tables + end - first
    return out[:16] + np.uint64(end).tobytes() + out[24:] + allocs.tobytes()


def split_concat(concat, lengths):
    """Splits the end-to-end concatenation of blobs into a list of arrays."""
    ends = np.cumsum(lengths)
    starts = ends - lengths
    assert ends[-1] == len(concat) if len(lengths) else True
    return [concat[s:e] for s, e in zip(starts, ends)]


def fixture_docs(content):
    return [json.loads(s) for s in content["doc_json"]]


def fixture_blobs(content):
    return split_concat(content["blob_concat"], content["blob_lengths"])


def fixture_images(content):
    """The stored pixels of a *_var image fixture, one (H, W, 3) array per sample."""
    sizes = content["heights"] * content["widths"] * 3
    flat = split_concat(content["pixels_concat"], sizes)
    return [p.reshape(h, w, 3) for p, h, w in zip(flat, content["heights"], content["widths"])]


class ListDataset:
    """An indexed dataset over a list of sample tuples."""

    def __init__(self, items):
        self.items = list(items)

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


class FnDataset:
    """An indexed dataset whose item i is fn(i)."""

    def __init__(self, n, fn):
        self.n, self.fn = n, fn

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return self.fn(i)


def write(path, fields, dataset, page_size=2 * MiB, num_workers=1):
    """Writes dataset (a list of tuples or an indexed dataset) to path; returns path."""
    from ffcv_go import DatasetWriter
    if isinstance(dataset, list):
        dataset = ListDataset(dataset)
    DatasetWriter(str(path), fields, page_size=page_size, num_workers=num_workers,
                  progress=False).from_indexed_dataset(dataset)
    return Path(path)


def to_numpy(batch):
    return tuple(x.numpy() if hasattr(x, "numpy") else np.asarray(x) for x in batch)


def collect(loader_or_iter):
    """Every batch of an epoch, as tuples of numpy copies."""
    return [tuple(np.array(x) for x in to_numpy(b)) for b in loader_or_iter]


def ids(batches, col=0):
    """The concatenated (B, 1) or (B,) integer column col of a list of batches."""
    if not batches:
        return np.zeros(0, dtype=np.int64)
    return np.concatenate([np.asarray(b[col]).reshape(len(b[col]), -1)[:, 0] for b in batches]).astype(np.int64)


def same_batches(a, b):
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if len(x) != len(y):
            return False
        for u, v in zip(x, y):
            if u.dtype != v.dtype or u.shape != v.shape or not np.array_equal(u, v):
                return False
    return True


# ---- datasets built once per session -------------------------------------------

N_INDEX = 103


def index_sample(i):
    return (i, i * 0.5 - 3.0, np.array([i, 2 * i, -i], dtype=np.int32))


@pytest.fixture(scope="session")
def index_file(tmp_path_factory):
    """103 samples: index (Int, = sample id), value (Float), vec (NDArray int32 (3,))."""
    from ffcv_go.fields import IntField, FloatField, NDArrayField
    path = tmp_path_factory.mktemp("index") / "index.beton"
    fields = {"index": IntField(), "value": FloatField(), "vec": NDArrayField(np.int32, (3,))}
    return write(path, fields, FnDataset(N_INDEX, index_sample))


PAGED_N = 320


def paged_blob(i):
    """Sample i's blob: 90-110 KB, first 8 bytes the id, the rest i % 251."""
    size = 90_000 + (i * 7919) % 20_000
    b = np.full(size, i % 251, dtype=np.uint8)
    b[:8] = np.frombuffer(np.int64(i).tobytes(), dtype=np.uint8)
    return b


@pytest.fixture(scope="session")
def paged_file(tmp_path_factory):
    """320 samples of ~100 KB blobs over ~16 heap pages of 2 MiB: blob (Bytes), index (Int)."""
    from ffcv_go.fields import BytesField, IntField
    path = tmp_path_factory.mktemp("paged") / "paged.beton"
    return write(path, {"blob": BytesField(), "index": IntField()},
                 FnDataset(PAGED_N, lambda i: (paged_blob(i), i)), page_size=2 * MiB, num_workers=2)


def check_paged_batch(blob, index):
    """Asserts a (blob, index) batch of paged_file holds the right bytes."""
    blob, index = np.asarray(blob), np.asarray(index).reshape(-1)
    assert blob.dtype == np.uint8 and blob.shape[0] == index.shape[0]
    for row, i in zip(blob, index.tolist()):
        want = paged_blob(i)
        assert np.array_equal(row[:len(want)], want), f"sample {i}: wrong blob bytes"
        assert not row[len(want):].any(), f"sample {i}: padding not zero"


def sample_pages(path):
    """The heap page of every sample of a file whose first field has a heap pointer."""
    from ffcv_go.reader import Reader
    r = Reader(path)
    col = r.metadata["f0"]
    ptr = col["ptr"] if col.dtype.names else col
    pages = (np.asarray(ptr, dtype=np.uint64) // np.uint64(r.page_size)).astype(np.int64)
    r.close()
    return pages


# ---- resource accounting ---------------------------------------------------------

def settle():
    for _ in range(3):
        gc.collect()


def resources():
    """(live library objects, Python threads, OS threads, open fds, goroutines)."""
    from ffcv_go import _lib
    settle()
    return (_lib.live_objects(), threading.active_count(), len(os.listdir("/proc/self/task")),
            len(os.listdir("/proc/self/fd")), _lib.goroutines())


def check_resources_back(before):
    """Fails unless resources() returns to before within 5 s (a closed loader's
    workers exit just after they signal it). Leaked work shows as goroutines;
    OS threads only get a loose bound, because the Go runtime keeps an idle
    thread for every goroutine that was ever in a C call at once, so loaders
    run side by side leave more than a warm-up did."""
    deadline = time.monotonic() + 5
    while True:
        after = resources()
        exact = [k for k in (0, 1, 3, 4) if after[k] != before[k]]
        if not exact and after[2] <= before[2] + 16:
            return
        if time.monotonic() > deadline:
            pytest.fail(f"(objects, Python threads, OS threads, fds, goroutines) {before} -> {after}")
        time.sleep(0.02)


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.fixture
def no_jit():
    """Runs custom operations as plain Python (FFCV's Compiler.set_enabled(False))."""
    from ffcv_go.pipeline.compiler import Compiler
    was = Compiler.is_enabled
    Compiler.set_enabled(False)
    yield
    Compiler.set_enabled(was)


def printed_results(text):
    """The JSON objects printed after 'RESULT ' in a program's output. Ranks of
    a torchrun share one pipe, so a rank's line may run on into another's."""
    dec, out = json.JSONDecoder(), []
    i = text.find("RESULT ")
    while i >= 0:
        obj, end = dec.raw_decode(text, i + len("RESULT "))
        out.append(obj)
        i = text.find("RESULT ", end)
    return out


@pytest.fixture(scope="session")
def photo_folder(tmp_path_factory):
    """An ImageFolder of 24 real photos (crops of Debian wallpapers) in 3 classes."""
    sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
    import make_dataset
    photos = make_dataset.find_photos()[:3]
    if not photos:
        pytest.skip("no photos installed (Debian wallpaper packages)")
    root = tmp_path_factory.mktemp("folder")
    make_dataset.make_image_folder(root, 24, classes=3, processes=1, photos=photos, verbose=False)
    return root


@pytest.fixture(scope="session")
def photo_beton(photo_folder, tmp_path_factory):
    """The 24 photos of photo_folder in a .beton (image: JPEG, label: int)."""
    from ffcv_go import DatasetWriter
    from ffcv_go.fields import IntField, RGBImageField
    path = tmp_path_factory.mktemp("photo_beton") / "photos.beton"
    DatasetWriter(str(path), {"image": RGBImageField(write_mode="jpg"), "label": IntField()},
                  num_workers=2, progress=False).from_image_folder(str(photo_folder))
    return path


# ---- files and helpers shared by the reliability suites ----------------------------
# (test_corrupt_data, test_writer_faults, test_loader_faults, test_c_abi_misuse,
# test_concurrency, test_file_changes)

# What a test's subprocess needs on sys.path: the package and this folder (conftest).
PYTHONPATH = os.pathsep.join([str(Path(__file__).resolve().parents[2] / "python"), str(Path(__file__).parent)])


def last_json(proc):
    """The JSON object a subprocess printed last, after checking it did not crash."""
    assert proc.returncode == 0, f"exit code {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


N_JPEG = 48


def noise_image(i, side=300):
    """Incompressible pixels: about 100 KB as a JPEG, so the file spans pages."""
    return np.random.default_rng(i).integers(0, 256, (side, side, 3), dtype=np.uint8)


@pytest.fixture(scope="session")
def jpeg_file(tmp_path_factory):
    """N_JPEG noise JPEGs (image) with their index (label) on several 2 MiB pages."""
    from ffcv_go.fields import IntField, RGBImageField
    path = tmp_path_factory.mktemp("rel") / "jpeg.beton"
    return write(path, {"image": RGBImageField(write_mode="jpg", jpeg_quality=90), "label": IntField()},
                 FnDataset(N_JPEG, lambda i: (noise_image(i), i)), num_workers=2)


@pytest.fixture(scope="session")
def jpeg_info(jpeg_file):
    """Where each sample's image lives: (metadata offset, row size, page size, ptrs, sizes, file bytes)."""
    from ffcv_go.reader import Reader
    r = Reader(jpeg_file)
    ptrs = np.asarray(r.metadata["f0"]["data_ptr"], dtype=np.int64)
    table = {int(p): int(s) for p, s in zip(r.alloc_table["ptr"], r.alloc_table["size"])}
    info = dict(meta=r._info["metadata_offset"], row=r._info["row_size"], page=r.page_size, ptrs=ptrs,
                sizes=np.array([table[int(p)] for p in ptrs]), data=jpeg_file.read_bytes())
    r.close()
    assert len(np.unique(ptrs // info["page"])) >= 2, "the JPEG fixture should span several pages"
    return info


@pytest.fixture(scope="session")
def small_jpeg_file(tmp_path_factory):
    """64 small JPEGs (40x48) with their index."""
    from ffcv_go.fields import IntField, RGBImageField
    path = tmp_path_factory.mktemp("rel_small") / "small.beton"
    rng = np.random.default_rng(5)
    imgs = [np.clip(rng.normal(128, 40, (40, 48, 3)), 0, 255).astype(np.uint8) for _ in range(64)]
    return write(path, {"image": RGBImageField(write_mode="jpg"), "label": IntField()},
                 FnDataset(64, lambda i: (imgs[i], i)))


@pytest.fixture(scope="module")
def warmed(small_jpeg_file):
    """Loaders of every kind have run once, so their one-time allocations are not counted as leaks."""
    from ffcv_go import Loader
    for workers in (1, 2, 4):
        for os_cache in (True, False):
            collect(Loader(small_jpeg_file, batch_size=8, num_workers=workers, os_cache=os_cache))
    settle()


@pytest.fixture
def no_leaks(warmed):
    """Fails the test if library objects, threads, fds or goroutines outlive it."""
    before = resources()
    yield
    check_resources_back(before)
