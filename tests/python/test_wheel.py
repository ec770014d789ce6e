"""The x86-64 wheel (`make wheel`) installs and works without Go or system libraries.

It is installed with --no-deps into a fresh venv that sees the test venv's
packages (torch, numpy) through a .pth file, and used with `go` absent from
PATH and no PYTHONPATH: it writes and reads a JPEG .beton, and its library
has libjpeg-turbo linked in (nothing to resolve but glibc). The aarch64
wheel is tested under emulation (tests/aarch64, make test-aarch64).
"""
import json
import os
import site
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import json, shutil, sys
import numpy as np
import ffcv_go
from ffcv_go import DatasetWriter, Loader
from ffcv_go.fields import IntField, RGBImageField
from ffcv_go.fields.decoders import IntDecoder, SimpleRGBImageDecoder

path = sys.argv[1]
rng = np.random.default_rng(0)
ramp = np.add.outer(np.arange(64), np.arange(80))[:, :, None].repeat(3, 2)
imgs = [np.clip(ramp + 2 * i + rng.normal(0, 8, ramp.shape), 0, 255).astype(np.uint8) for i in range(10)]
w = DatasetWriter(path, {"image": RGBImageField(write_mode="jpg", jpeg_quality=95), "label": IntField()})
w.from_indexed_dataset([(im, i) for i, im in enumerate(imgs)])
loader = Loader(path, batch_size=4, drop_last=False, pipelines={"image": [SimpleRGBImageDecoder()], "label": [IntDecoder()]})
err, labels = 0.0, []
for x, y in loader:
    for im, lab in zip(x.numpy(), y.numpy().reshape(-1)):
        err = max(err, float(np.abs(im.astype(int) - imgs[lab].astype(int)).mean()))
        labels.append(int(lab))
print(json.dumps({"module": ffcv_go.__file__, "go": shutil.which("go"), "labels": labels, "err": err}))
"""


def _wheel():
    wheels = sorted((ROOT / "dist").glob("ffcv_go-*-py3-none-manylinux2014_x86_64.whl"))
    if not wheels:
        pytest.fail("no dist/ffcv_go-*-py3-none-manylinux2014_x86_64.whl: run `make wheel` (make test does)")
    return wheels[-1]


def test_wheel_installs_and_works_without_go(tmp_path):
    whl = _wheel()
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "FFCV_GO_LIBRARY", "GOROOT")}
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, env=clean)
    py = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps", "--no-index",
                    str(whl)], check=True, env=clean)
    purelib = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                  check=True, capture_output=True, text=True).stdout.strip())
    # torch and numpy from the test venv, after the wheel's own packages.
    (purelib / "zz_test_venv.pth").write_text("\n".join(site.getsitepackages()) + "\n")

    # PATH without any directory that holds a `go` executable.
    dirs = [d for d in os.environ.get("PATH", "").split(os.pathsep) if d and not (Path(d) / "go").exists()]
    env = dict(clean)
    env["PATH"] = os.pathsep.join([str(venv / "bin")] + dirs)
    script = tmp_path / "use.py"
    script.write_text(textwrap.dedent(SCRIPT))
    proc = subprocess.run([str(py), str(script), str(tmp_path / "w.beton")], capture_output=True, text=True,
                          timeout=300, env=env, cwd=tmp_path)
    if proc.returncode != 0:
        info = subprocess.run([str(py), "-c", "import sys; print(sys.path)"], capture_output=True, text=True, env=env)
        pytest.fail(f"{proc.stderr}\nsys.path: {info.stdout}{info.stderr}\ninstalled: {os.listdir(purelib)}")
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    assert res["go"] is None, res
    assert Path(res["module"]).is_relative_to(purelib), res  # the installed copy, not the source tree
    assert sorted(res["labels"]) == list(range(10)), res
    assert 0 < res["err"] < 8, res  # lossy: the images went through JPEG (q95)

    # libjpeg-turbo is linked in: the library needs nothing but glibc.
    lib = purelib / "ffcv_go" / "_ffcv_go.so"
    ldd = subprocess.run(["ldd", str(lib)], check=True, capture_output=True, text=True).stdout
    assert "not found" not in ldd and "jpeg" not in ldd, ldd
    assert not (purelib / "ffcv_go.libs").exists()
    assert (purelib / "ffcv_go" / "_lib.py").exists() and not (purelib / "ffcv_go" / "_ffcv_go.h").exists()


def test_wheel_is_one_library_for_every_python(tmp_path):
    """py3-none: one .so loaded with ctypes, no CPython extension, nothing
    bundled beside it; auditwheel finds it manylinux_2_17 (manylinux2014)."""
    whl = _wheel()
    import zipfile
    names = zipfile.ZipFile(whl).namelist()
    sos = [n for n in names if ".so" in Path(n).name]
    assert sos == ["ffcv_go/_ffcv_go.so"], sos
    auditwheel = ROOT / "build" / "tools" / "bin" / "auditwheel"  # make wheel's tools
    if not auditwheel.exists():
        pytest.skip("no build/tools/bin/auditwheel: run `make wheel`")
    show = subprocess.run([str(auditwheel), "show", str(whl)], capture_output=True, text=True)
    assert show.returncode == 0, show.stderr
    assert '"manylinux_2_17_x86_64"' in " ".join(show.stdout.split()), show.stdout
