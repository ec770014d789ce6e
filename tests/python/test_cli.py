"""The ffcv-go command line (python -m ffcv_go): convert, info, verify, bench."""
import os
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from ffcv_go.reader import Reader

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
