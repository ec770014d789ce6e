"""The writer's fast paths: parallel fetching (auto, processes, threads) and
the Go-native path for torchvision ImageFolder datasets. Every path must
write the same bytes a plain serial write does."""
import hashlib
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from ffcv_go import DatasetWriter
from ffcv_go.fields import BytesField, IntField, RGBImageField
from ffcv_go.reader import Reader
from ffcv_go.writer import _path_items

from conftest import MiB

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))


class SlowDataset:
    """Python-heavy items (a busy loop of about 0.3 ms each)."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        t = time.perf_counter()
        while time.perf_counter() - t < 3e-4:
            pass
        rng = np.random.default_rng(i)
        return rng.integers(0, 256, size=int(rng.integers(1, 5000)), dtype=np.uint8), i


def digest(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def test_every_pool_writes_the_same_file(tmp_path):
    fields = lambda: {"blob": BytesField(), "label": IntField()}  # noqa: E731
    out = {}
    for pool, workers in [(None, None), ("auto", None), ("auto", 3), ("process", 1), ("process", 3),
                          ("thread", 1), ("thread", 4)]:
        p = tmp_path / f"{pool}-{workers}.beton"
        DatasetWriter(str(p), fields(), page_size=2 * MiB, num_workers=2, progress=False).from_indexed_dataset(
            SlowDataset(300), pool=pool, pool_workers=workers, chunksize=7)
        out[(pool, workers)] = digest(p)
    assert len(set(out.values())) == 1, out


def image_fields(max_resolution=None, mode="raw"):
    return {"image": RGBImageField(write_mode=mode, max_resolution=max_resolution), "label": IntField()}


class PlainFolder:
    """The items of an ImageFolder, seen as an opaque dataset (Python path)."""

    def __init__(self, ds):
        self.ds = ds

    def __len__(self):
        return len(self.ds)

    def __getitem__(self, i):
        return self.ds[i]


@pytest.mark.parametrize("max_resolution", [None, 300])
def test_image_folder_goes_native(tmp_path, photo_folder, max_resolution):
    torchvision = pytest.importorskip("torchvision")
    ds = torchvision.datasets.ImageFolder(str(photo_folder))
    native, python, folder = tmp_path / "native.beton", tmp_path / "python.beton", tmp_path / "folder.beton"
    DatasetWriter(str(native), image_fields(max_resolution), progress=False).from_indexed_dataset(ds)
    DatasetWriter(str(python), image_fields(max_resolution), progress=False).from_indexed_dataset(
        PlainFolder(ds), pool=None)
    DatasetWriter(str(folder), image_fields(max_resolution), progress=False).from_image_folder(str(photo_folder))
    assert digest(native) == digest(folder)
    # Go's libjpeg decode and PIL's give the same pixels; the resize (under
    # 2x here) is INTER_AREA on both paths.
    a, b = Reader(str(native)), Reader(str(python))
    assert a.metadata["f1"].tolist() == b.metadata["f1"].tolist() == [s[1] for s in ds.samples]
    for i in range(len(ds)):
        x, y = a.read(i, "image"), b.read(i, "image")
        assert x.shape == y.shape
        assert np.abs(x.astype(int) - y.astype(int)).max() <= 1, i


def test_native_path_only_when_nothing_else_runs(photo_folder):
    torchvision = pytest.importorskip("torchvision")
    from torchvision.datasets import ImageFolder
    idx = np.arange(3)

    class Sub(ImageFolder):
        def __getitem__(self, i):
            return super().__getitem__(i)

    root = str(photo_folder)
    assert _path_items(ImageFolder(root), idx, image_fields()) is not None
    for ds, fields in [
        (ImageFolder(root, transform=lambda im: im), image_fields()),
        (ImageFolder(root, target_transform=lambda t: t), image_fields()),
        (ImageFolder(root, loader=lambda p: torchvision.datasets.folder.pil_loader(p)), image_fields()),
        (Sub(root), image_fields()),
        (ImageFolder(root), {"label": IntField(), "image": RGBImageField()}),
        (PlainFolder(ImageFolder(root)), image_fields()),
    ]:
        assert _path_items(ds, idx, fields) is None, ds


def test_native_path_reports_a_corrupt_file(tmp_path, photo_folder):
    torchvision = pytest.importorskip("torchvision")
    import shutil
    root = tmp_path / "copy"
    shutil.copytree(photo_folder, root)
    ds = torchvision.datasets.ImageFolder(str(root))
    bad = Path(ds.samples[5][0])
    bad.write_bytes(bad.read_bytes()[:300])
    with pytest.raises(Exception, match=bad.name):
        DatasetWriter(str(tmp_path / "x.beton"), image_fields(), progress=False).from_indexed_dataset(ds)
    assert not (tmp_path / "x.beton").exists()


def test_jpeg_sources_are_transcoded(tmp_path, photo_folder):
    """JPEG files that need no resize are re-encoded at jpeg_quality in the DCT
    domain by default: no further from the source than FFCV's decode and
    re-encode (jpeg_transcode=False), and the same bytes for any worker count."""
    def write(name, workers=2, **kw):
        p = tmp_path / f"{name}.beton"
        fields = {"image": RGBImageField(write_mode=kw.pop("mode", "jpg"), **kw), "label": IntField()}
        DatasetWriter(str(p), fields, num_workers=workers, progress=False).from_image_folder(str(photo_folder))
        return p

    def images(path):
        import io
        from PIL import Image
        r = Reader(str(path))
        meta = r.metadata["f0"]
        out = []
        for i in range(r.num_samples):
            b = np.asarray(r.read(i, "image"))
            if meta["mode"][i] == 0:  # JPEG
                out.append(np.asarray(Image.open(io.BytesIO(b.tobytes())).convert("RGB"), dtype=float))
            else:
                out.append(b.reshape(meta["height"][i], meta["width"][i], 3).astype(float))
        return out

    raw = images(write("raw", mode="raw"))
    tc, tc1, px = write("transcoded"), write("transcoded-1", workers=1), write("pixels", jpeg_transcode=False)
    assert digest(tc) == digest(tc1)
    assert digest(tc) != digest(px)
    err_tc = err_px = 0.0
    for i, (ref, a, b) in enumerate(zip(raw, images(tc), images(px))):
        assert a.shape == b.shape == ref.shape
        assert np.abs(a - ref).mean() < 3, i
        err_tc, err_px = err_tc + ((a - ref) ** 2).mean(), err_px + ((b - ref) ** 2).mean()
    assert err_tc <= err_px, (err_tc, err_px)


def _restart_interval(jpeg):
    """The restart interval a JPEG's DRI segment sets before its scan, or 0."""
    head = jpeg[:jpeg.find(b"\xff\xda")]
    i = head.find(b"\xff\xdd\x00\x04")
    return 0 if i < 0 else int.from_bytes(head[i + 4:i + 6], "big")


def test_stored_jpegs_have_restart_markers(tmp_path, photo_folder):
    """Every stored JPEG has restart markers lined up with its rows of MCUs by
    default; restart_markers=False keeps the sources' own scans (PIL writes
    no markers). Both decode to the same pixels, and the loader's random
    crops, cut out at the markers in one file, equal those of the other."""
    import io
    import torch
    from PIL import Image
    from ffcv_go import Loader
    from ffcv_go.fields.decoders import IntDecoder, RandomResizedCropRGBImageDecoder
    from ffcv_go.loader import OrderOption
    from ffcv_go.transforms import RandomHorizontalFlip, ToTensor

    paths = {}
    for markers in (True, False):
        p = paths[markers] = tmp_path / f"markers-{markers}.beton"
        fields = {"image": RGBImageField(write_mode="jpg", restart_markers=markers), "label": IntField()}
        DatasetWriter(str(p), fields, progress=False).from_image_folder(str(photo_folder))
    with_markers, kept = Reader(str(paths[True])), Reader(str(paths[False]))
    widths = with_markers.metadata["f0"]["width"]
    for i in range(with_markers.num_samples):
        a = np.asarray(with_markers.read(i, "image")).tobytes()
        b = np.asarray(kept.read(i, "image")).tobytes()
        mcus_per_row = (int(widths[i]) + 15) // 16
        r = _restart_interval(a)
        assert r and mcus_per_row % r == 0 and r <= 4, (i, r, mcus_per_row)
        assert _restart_interval(b) == 0 and b != a, i
        assert np.array_equal(np.asarray(Image.open(io.BytesIO(a))), np.asarray(Image.open(io.BytesIO(b)))), i

    def epoch(path):
        loader = Loader(str(path), batch_size=8, num_workers=2, order=OrderOption.RANDOM, seed=5,
                        pipelines={"image": [RandomResizedCropRGBImageDecoder((64, 64)), RandomHorizontalFlip(),
                                             ToTensor()],
                                   "label": [IntDecoder(), ToTensor()]})
        return [(img.clone(), label.clone()) for img, label in loader]
    for (x, lx), (y, ly) in zip(epoch(paths[True]), epoch(paths[False]), strict=True):
        assert torch.equal(lx, ly) and torch.equal(x, y)


class ModeFolder:
    """Photos as PIL images in every mode RGBImageField takes (RGB, L, RGBA,
    and P and CMYK, which it converts to RGB), with list items for some."""

    MODES = ["RGB", "L", "RGBA", "P", "CMYK"]

    def __init__(self, ds):
        self.ds = ds

    def __len__(self):
        return len(self.ds)

    def __getitem__(self, i):
        im, label = self.ds[i]
        im = im.convert(self.MODES[i % len(self.MODES)])
        return [im, label] if i % 2 else (im, label)


@pytest.mark.parametrize("mode", ["raw", "jpg"])
def test_pil_items_from_processes_write_the_serial_file(tmp_path, photo_folder, mode):
    """Fetch processes send a PIL image as its pixel array (out of band): the
    file is the one a serial write of the PIL images gives."""
    torchvision = pytest.importorskip("torchvision")
    ds = ModeFolder(torchvision.datasets.ImageFolder(str(photo_folder)))
    out = {}
    for pool, workers in [(None, None), ("process", 1), ("process", 3), ("thread", 2)]:
        p = tmp_path / f"{pool}-{workers}.beton"
        DatasetWriter(str(p), image_fields(mode=mode), page_size=2 * MiB, progress=False).from_indexed_dataset(
            ds, pool=pool, pool_workers=workers, chunksize=5)
        out[(pool, workers)] = digest(p)
    assert len(set(out.values())) == 1, out
    r = Reader(str(tmp_path / "None-None.beton"))
    if mode == "raw":
        for i in range(len(ds)):
            want = np.asarray(ds[i][0].convert("RGB") if ds[i][0].mode in ("P", "CMYK") else ds[i][0])
            if want.ndim == 3 and want.shape[2] == 3:  # RGB, and P and CMYK converted
                assert np.array_equal(r.read(i, "image").reshape(-1), want.reshape(-1)), i


class OwnEncodeImage(RGBImageField):
    """A subclass with its own encode(): it must get the dataset's PIL image
    itself, also from a fetch process (only built-in encoders take arrays)."""

    def encode(self, destination, field, malloc):
        from PIL import Image
        if not isinstance(field, Image.Image):
            raise TypeError(f"expected a PIL image, got {type(field).__name__}")
        data = field.tobytes()
        destination["mode"] = 0
        destination["width"], destination["height"] = field.size
        destination["data_ptr"], buf = malloc(len(data))
        buf[:] = np.frombuffer(data, np.uint8)


def test_own_encode_gets_the_pil_image_from_processes(tmp_path, photo_folder):
    torchvision = pytest.importorskip("torchvision")
    ds = PlainFolder(torchvision.datasets.ImageFolder(str(photo_folder)))
    paths = []
    for pool in [None, "process"]:
        p = tmp_path / f"{pool}.beton"
        DatasetWriter(str(p), {"image": OwnEncodeImage(), "label": IntField()}, progress=False).from_indexed_dataset(
            ds, pool=pool, pool_workers=2, chunksize=4)
        paths.append(p)
    assert digest(paths[0]) == digest(paths[1])


def test_fetch_messages_round_trip():
    """_forked's messages: arrays (contiguous, strided, empty), bytes, tensors
    and nested containers come back equal, in order."""
    import multiprocessing
    from ffcv_go import _forked
    torch = pytest.importorskip("torch")
    import socket
    a, b = multiprocessing.get_context("fork").Pipe()
    sa, sb = socket.socketpair()
    base = np.arange(60, dtype=np.uint8).reshape(3, 4, 5)
    obj = ("ok", [(base, 1), (base[:, ::2], b"x" * 70000), (np.zeros((0, 3), np.float32), torch.arange(5)),
                  {"k": [np.ones(3, np.int64), np.asfortranarray(base.astype(np.float64))]}])
    import threading
    t = threading.Thread(target=_forked._send, args=(a, sa, obj))  # the socket holds less than obj
    t.start()
    got = _forked._recv(b, sb)
    t.join()
    assert got[0] == "ok"
    assert np.array_equal(got[1][0][0], base) and got[1][0][1] == 1
    assert np.array_equal(got[1][1][0], base[:, ::2]) and got[1][1][1] == b"x" * 70000
    assert got[1][2][0].shape == (0, 3) and got[1][2][0].dtype == np.float32
    assert torch.equal(got[1][2][1], torch.arange(5))
    assert np.array_equal(got[1][3]["k"][0], np.ones(3, np.int64))
    f = got[1][3]["k"][1]
    assert np.array_equal(f, base) and f.dtype == np.float64 and f.flags.f_contiguous
    assert got[1][0][0].flags.writeable
