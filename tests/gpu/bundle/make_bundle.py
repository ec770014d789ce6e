#!/usr/bin/env python3
"""Collects build/gpu-bundle: everything a machine with torch + CUDA,
Python 3, no Go and no network needs to run tests/gpu and
bench/gpu_train.py (docs/guides/gpu.md). `make gpu-bundle` runs it after
`make wheel` and `make build`:

    PYTHONPATH=python python tests/gpu/bundle/make_bundle.py [--images 256]

    build/gpu-bundle/
      run.sh                    installs the wheel, runs the tests (and --bench)
      wheels/ffcv_go-*.whl      from dist/ (the newest x86_64 one)
      wheels/test/*.whl         pytest and its dependencies (requirements.txt)
      data/photos.beton         --images photos (crops of Debian wallpapers,
                                bench/make_dataset.py), JPEG, written by ffcv_go
      tests/gpu/                the tests, their fixture, pytest.ini
      bench/gpu_train.py        ResNet-50 fed by ffcv_go, synthetic data, DataLoader
      bench/loader_rate.py      the loader alone on the machine's cores
      MANIFEST.txt              commit, date, files and sizes

The photos and the downloaded wheels are kept in build/gpu-data between runs.
The bundle and the repository's tracked files together must stay under 64 MiB, what the device tool carries.
"""
import argparse
import datetime
import glob
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
OUT = ROOT / "build" / "gpu-bundle"
DATA = ROOT / "build" / "gpu-data"
# The device tool carries at most 64 MiB: the repository's tracked files
# (sized as files, holes of sparse fixtures included) and the bundle together.
CARRY_LIMIT = 64 << 20
TEST_FILES = ["conftest.py", "cuda_available.py", "pytest.ini", "rank_worker.py", "fixtures/normalize_fp16_ffcv.npz"]


def log(msg):
    print(f"[gpu-bundle] {msg}", flush=True)


def find_wheel():
    wheels = sorted(glob.glob(str(ROOT / "dist" / "ffcv_go-*x86_64*.whl")), key=os.path.getmtime)
    if not wheels:
        sys.exit("gpu-bundle: no dist/ffcv_go-*x86_64*.whl; run `make wheel` first")
    wheel = Path(wheels[-1])
    if "manylinux" not in wheel.name:
        log(f"WARNING: {wheel.name} is not a manylinux wheel: its library links this machine's libjpeg, "
            "which the GPU machine may lack")
    return wheel


def photo_beton(n):
    """build/gpu-data/photos-<n>.beton, written once from n photos."""
    beton = DATA / f"photos-{n}.beton"
    if beton.is_file():
        return beton
    sys.path.insert(0, str(ROOT / "bench"))
    import make_dataset
    from ffcv_go import DatasetWriter
    from ffcv_go.fields import IntField, RGBImageField
    folder = make_dataset.make_image_folder(DATA / f"folder-{n}", n, classes=10, seed=0, processes=2)
    tmp = beton.with_suffix(".tmp")
    # 2 MiB pages: 8 MiB ones, half empty at the end of each writer thread,
    # would make the file half again as large.
    DatasetWriter(str(tmp), {"image": RGBImageField(write_mode="jpg", jpeg_quality=90), "label": IntField()},
                  page_size=2 << 20, num_workers=2, progress=False).from_image_folder(folder)
    tmp.rename(beton)
    log(f"wrote {beton} ({beton.stat().st_size / 2**20:.1f} MiB)")
    return beton


def test_wheels():
    """pytest's wheels (requirements.txt), downloaded once into build/gpu-data/wheels."""
    dest = DATA / "wheels"
    pins = [line.split("#")[0].strip() for line in (HERE / "requirements.txt").read_text().splitlines()]
    pins = [p for p in pins if p]
    have = {w.name.split("-")[0].lower().replace("_", "-") + "==" + w.name.split("-")[1] for w in dest.glob("*.whl")}
    if not all(p.lower() in have for p in pins):
        log("downloading " + " ".join(pins))
        r = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                            "--python-version", "3.12", "-d", str(dest), *pins])
        if r.returncode != 0:
            log("WARNING: pytest's wheels could not be downloaded; run.sh will need pytest on the GPU machine")
            return []
    return [w for w in sorted(dest.glob("*.whl"))
            if any(w.name.lower().startswith(p.split("==")[0].lower() + "-" + p.split("==")[1]) for p in pins)]


def copy(src, dst):
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src, dst)


def git(*args):
    try:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    except OSError:
        return ""


def tracked_bytes():
    """The size of the repository's tracked files, as the device tool counts them."""
    names = git("ls-files", "-z")
    return sum((ROOT / n).stat().st_size for n in names.split("\0") if n and (ROOT / n).is_file())


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--images", type=int, default=256, help="photos in the .beton (default 256)")
    args = p.parse_args(argv)

    wheel = find_wheel()
    beton = photo_beton(args.images)
    tests = test_wheels()
    if OUT.exists():
        shutil.rmtree(OUT)
    copy(HERE / "run.sh", OUT / "run.sh")
    copy(wheel, OUT / "wheels" / wheel.name)
    for w in tests:
        copy(w, OUT / "wheels" / "test" / w.name)
    copy(beton, OUT / "data" / "photos.beton")
    gpu = ROOT / "tests" / "gpu"
    for name in TEST_FILES + sorted(f.name for f in gpu.glob("test_*.py")):
        copy(gpu / name, OUT / "tests" / "gpu" / name)
    for name in ("gpu_train.py", "loader_rate.py"):
        copy(ROOT / "bench" / name, OUT / "bench" / name)

    files = sorted(f for f in OUT.rglob("*") if f.is_file())
    total = sum(f.stat().st_size for f in files)
    dirty = " (with uncommitted changes)" if git("status", "--porcelain", "--untracked-files=no") else ""
    manifest = ["ffcv_go GPU bundle: bash build/gpu-bundle/run.sh [--bench]  (docs/guides/gpu.md)",
                f"commit {git('rev-parse', 'HEAD') or '?'}{dirty}",
                f"made {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}",
                f"wheel {wheel.name}", f"data/photos.beton: {args.images} photos", "",
                *(f"{f.stat().st_size:>10}  {f.relative_to(OUT)}" for f in files),
                f"{total:>10}  total"]
    (OUT / "MANIFEST.txt").write_text("\n".join(manifest) + "\n")
    log(f"{OUT.relative_to(ROOT)}: {len(files)} files, {total / 2**20:.1f} MiB")
    tree = tracked_bytes()
    if tree + total > CARRY_LIMIT:
        sys.exit(f"gpu-bundle: {total / 2**20:.1f} MiB beside the repository's {tree / 2**20:.1f} MiB of tracked "
                 f"files is over the {CARRY_LIMIT >> 20} MiB the device tool carries; use fewer --images")
    return 0


if __name__ == "__main__":
    sys.exit(main())
