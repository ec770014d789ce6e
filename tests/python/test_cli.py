"""The ffcv-go command line (python -m ffcv_go): convert, info, verify, bench."""
import os
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from ffcv_go.reader import Reader

from conftest import FIXTURES

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def cli(*args):
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
    return subprocess.run([sys.executable, "-m", "ffcv_go", *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=120)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """3 classes; JPEG, PNG and grayscale images of varying sizes."""
    root = tmp_path_factory.mktemp("folder")
    rng = np.random.default_rng(0)
    for c, name in enumerate(["cat", "dog", "eel"]):
        (root / name).mkdir()
        for k in range(5):
            h, w = int(rng.integers(40, 300)), int(rng.integers(40, 300))
            y, x = np.mgrid[0:h, 0:w]
            img = np.stack([(x * 255 // w), (y * 255 // h), np.full((h, w), 60 * c)], -1).astype(np.uint8)
            if k == 3:
                Image.fromarray(img[..., 0]).save(root / name / f"{k}.jpg", quality=90)  # grayscale
            elif k == 4:
                Image.fromarray(img).save(root / name / f"{k}.png")
            else:
                Image.fromarray(img).save(root / name / f"{k}.jpg", quality=90)
        (root / name / "notes.txt").write_text("not an image")
    return root


def test_convert_info_verify_bench(folder, tmp_path):
    out = tmp_path / "ds.beton"
    r = cli("convert", folder, out, "--max-resolution", "128", "--write-mode", "jpg", "--quiet")
    assert r.returncode == 0, r.stderr
    assert "wrote 15 images of 3 classes" in r.stdout
    reader = Reader(out)
    meta = reader.metadata
    assert reader.num_samples == 15
    assert meta["f1"].tolist() == [0] * 5 + [1] * 5 + [2] * 5  # labels by sorted folder name
    assert (np.maximum(meta["f0"]["width"], meta["f0"]["height"]) <= 128).all()
    assert (meta["f0"]["mode"] == 0).all()

    r = cli("info", out)
    assert r.returncode == 0, r.stderr
    assert "samples     15" in r.stdout and "RGBImageField" in r.stdout and "15 JPEG, 0 raw" in r.stdout

    r = cli("verify", out)
    assert r.returncode == 0 and "0 corrupt" in r.stdout, r.stdout + r.stderr

    r = cli("bench", out, "--res", "32", "--batch-size", "4", "--epochs", "1", "--workers", "2")
    assert r.returncode == 0, r.stderr
    assert "epoch 0: 12 samples" in r.stdout


def test_verify_names_the_corrupt_sample(folder, tmp_path):
    out = tmp_path / "ds.beton"
    assert cli("convert", folder, out, "--quiet").returncode == 0
    reader = Reader(out)
    ptr = int(reader.metadata["f0"]["data_ptr"][7])
    del reader
    data = bytearray(out.read_bytes())
    data[ptr:ptr + 16] = bytes(16)  # no SOI marker: not a JPEG any more
    out.write_bytes(bytes(data))
    r = cli("verify", out)
    assert r.returncode == 1
    assert "sample 7, field 'image'" in r.stdout and "1 corrupt (7)" in r.stdout


def test_errors_are_reported_not_raised(tmp_path):
    r = cli("info", tmp_path / "missing.beton")
    assert r.returncode == 2 and "missing.beton" in r.stderr and "Traceback" not in r.stderr
    bad = tmp_path / "bad"
    (bad / "a").mkdir(parents=True)
    (bad / "a" / "x.jpg").write_bytes(b"\xff\xd8 this is not really a jpeg")
    r = cli("convert", bad, tmp_path / "o.beton", "--quiet")
    assert r.returncode == 2 and "x.jpg" in r.stderr, r.stderr
    assert not (tmp_path / "o.beton").exists()


def test_info_names_our_fields_and_their_metadata(tmp_path):
    """TextField and VideoField by name (not "type 102/103"), with the
    tokenizer, frames and frame rate."""
    from ffcv_go import DatasetWriter
    from ffcv_go.fields import Frames, IntField, TextField, VideoField
    tok = lambda text: [ord(c) % 50 + 1 for c in text]  # noqa: E731 - a tokenizer is any callable
    out = tmp_path / "tv.beton"
    g = np.random.default_rng(0)
    items = [(["a cat", "the cat sits"], Frames(g.integers(0, 255, (n, 24, 32, 3), dtype=np.uint8), 12.5), k)
             for k, n in enumerate([3, 5])]
    DatasetWriter(out, {"caption": TextField(tok, sot=60, eot=61, vocab_size=64), "video": VideoField(),
                        "label": IntField()}).from_indexed_dataset(items)
    r = cli("info", out)
    assert r.returncode == 0, r.stderr
    assert "type 10" not in r.stdout
    assert "TextField tokenizer" in r.stdout and "vocabulary 64" in r.stdout, r.stdout
    assert "captions a sample: 2" in r.stdout
    assert "VideoField" in r.stdout and "frames: 3-5" in r.stdout and "fps: 12.5" in r.stdout, r.stdout
    assert "mean size 32 x 24" in r.stdout


def test_info_on_a_directory_lists_its_files(tmp_path):
    src = FIXTURES / "scalars.beton"
    for k in range(2):
        (tmp_path / f"part-{k}.beton").write_bytes(src.read_bytes())
    r = cli("info", tmp_path)
    assert r.returncode == 0, r.stderr
    assert "(a directory)" in r.stdout and "in 2 .beton files" in r.stdout, r.stdout
    assert f"{tmp_path / 'part-1.beton'}: {Reader(src).num_samples} samples" in r.stdout
    assert "4.0 KiB" not in r.stdout


def test_info_on_a_jpeg_says_it_is_not_a_beton(tmp_path):
    photo = tmp_path / "photo.jpg"
    Image.fromarray(np.zeros((8, 8, 3), np.uint8)).save(photo)
    r = cli("info", photo)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "does not begin with a .beton header: it is a JPEG image" in r.stderr, r.stderr
    assert "version" not in r.stderr


def test_convert_without_class_folders_is_a_sentence(tmp_path):
    flat = tmp_path / "flat"
    flat.mkdir()
    Image.fromarray(np.zeros((8, 8, 3), np.uint8)).save(flat / "1.jpg")
    r = cli("convert", flat, tmp_path / "o.beton", "--quiet")
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert "has no class folders" in r.stderr and "<class>" in r.stderr


def test_verify_names_the_shard_and_its_index(folder, tmp_path):
    shards = tmp_path / "shards"
    shards.mkdir()
    for k in range(2):
        assert cli("convert", folder, shards / f"s{k}.beton", "--quiet").returncode == 0
    bad = shards / "s1.beton"
    reader = Reader(bad)
    ptr = int(reader.metadata["f0"]["data_ptr"][4])
    del reader
    data = bytearray(bad.read_bytes())
    data[ptr:ptr + 16] = bytes(16)
    bad.write_bytes(bytes(data))
    r = cli("verify", shards)
    assert r.returncode == 1
    assert f"{bad} sample 4, field 'image'" in r.stdout, r.stdout
    assert f"1 corrupt ({bad} sample 4)" in r.stdout and "sample 19" not in r.stdout


def test_a_closed_pipe_ends_quietly():
    """`ffcv-go info x | head -1`: no "[Errno 32] Broken pipe", exit 0."""
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
    p = subprocess.Popen([sys.executable, "-m", "ffcv_go", "info", str(FIXTURES / "images_jpg_var.beton")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    p.stdout.close()  # as head does after its lines: every write meets a closed pipe
    err = p.stderr.read().decode()
    assert p.wait(timeout=120) == 0, err
    assert "Broken pipe" not in err and "Traceback" not in err, err
