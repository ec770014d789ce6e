"""The C ABI as _lib.py binds it: constants and functions match
include/ffcv_go.h, a stale library fails at import, unknown JSON keys are
rejected with a clear exception."""
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import FnDataset, write

from ffcv_go import Loader, _lib
from ffcv_go.fields import IntField, RGBImageField
from ffcv_go.fields.decoders import SimpleRGBImageDecoder
from ffcv_go.transforms import RandomHorizontalFlip

ROOT = Path(__file__).resolve().parents[2]
HEADER = (ROOT / "include" / "ffcv_go.h").read_text()


def test_constants_match_header():
    defines = dict(re.findall(r"#define (FFCV_\w+)\s+\(?(-?\d+)\)?", HEADER))
    codes = {k: int(v) for k, v in defines.items() if k.startswith("FFCV_ERR_")}
    assert len(codes) == 6, codes
    for name, value in codes.items():
        assert getattr(_lib, name[len("FFCV_"):]) == value, name
    assert int(defines["FFCV_GO_ABI_VERSION"]) == _lib.ABI_VERSION == _lib.lib.ffcv_abi_version()


def test_every_header_function_is_bound():
    declared = set(re.findall(r"^\w[\w ]*?\**\s*\*?(ffcv_\w+)\(", HEADER, re.M))
    assert len(declared) > 20, declared
    assert declared == set(_lib.SIGNATURES), declared ^ set(_lib.SIGNATURES)


@pytest.mark.parametrize("lib,message", [("/lib/x86_64-linux-gnu/libc.so.6", "lacks ffcv_version"),
                                         ("/nonexistent/_ffcv_go.so", "is missing")])
def test_stale_or_missing_library_fails_at_import(lib, message):
    proc = subprocess.run([sys.executable, "-c", "import ffcv_go"], capture_output=True, text=True, timeout=60,
                          env={"PYTHONPATH": str(ROOT / "python"), "FFCV_GO_LIBRARY": lib, "PATH": "/usr/bin:/bin"})
    assert proc.returncode != 0 and "ImportError" in proc.stderr and message in proc.stderr, proc.stderr


class MisspeltFlip(RandomHorizontalFlip):
    """A flip whose spec names its probability "prob" (Go's key is "p")."""

    def _spec(self):
        return {"op": "flip_h", "prob": 1.0}


def test_unknown_spec_key_is_a_clear_error(tmp_path):
    rng = np.random.default_rng(0)
    path = write(tmp_path / "img.beton", {"image": RGBImageField(), "label": IntField()},
                 FnDataset(4, lambda i: (rng.integers(0, 256, (8, 8, 3), dtype=np.uint8), i)))
    # The op's spec is checked in Go when it is constructed.
    with pytest.raises(ValueError, match=r'MisspeltFlip: arguments: json: unknown field "prob"'):
        Loader(path, batch_size=2, pipelines={"image": [SimpleRGBImageDecoder(), MisspeltFlip()]})
    spec = b'{"path": "x", "batch_size": 2, "bogus": 1}'
    with pytest.raises(ValueError, match=r'unknown field "bogus"'):
        _lib.call("ffcv_loader_create", spec, None, 0)
