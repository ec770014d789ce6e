"""`make conformance`: FFCV 1.0.2's own test suite, run against ffcv_go.

1. Downloads FFCV 1.0.2's source distribution from PyPI with pip (once; it
   is cached under build/conformance/ and checked against its sha256).
2. Extracts its tests/ folder next to it, untouched.
3. Runs them with pytest in a child interpreter whose PYTHONPATH holds
   python/ (ffcv_go) and tests/conformance/site/, whose sitecustomize.py
   makes every `ffcv` import resolve to `ffcv_go` and applies the
   substitutions this machine forces (site/_ffcv_conformance.py lists them
   with their reasons), also in processes the tests spawn.
4. Prints the pass count; exits non-zero if any test fails.
"""
import os
import subprocess
import sys
import tarfile
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CACHE = os.path.join(ROOT, "build", "conformance")
VERSION = "1.0.2"
SDIST = f"ffcv-{VERSION}.tar.gz"
SHA256 = "42766a487c8a659b543d070f24732c4b65aab8d96980f5792c63e91e55511f00"
SITE = os.path.join(ROOT, "tests", "conformance", "site")
TIMEOUT_S = 900


def _sha256(path):
    import hashlib
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def download():
    """The sdist's path, downloading it with pip if it is not cached yet."""
    path = os.path.join(CACHE, SDIST)
    if os.path.exists(path) and _sha256(path) == SHA256:
        return path
    os.makedirs(CACHE, exist_ok=True)
    # pip prepares an sdist's metadata by running its setup.py, and FFCV's
    # asks pkg-config for opencv4 and libturbojpeg before anything else.
    # Nothing is built here, so where they are missing, metadata-only .pc
    # files (searched after the real ones) satisfy it.
    pc = os.path.join(CACHE, "pkgconfig")
    os.makedirs(pc, exist_ok=True)
    for name, lib in (("opencv4", "opencv_core"), ("libturbojpeg", "turbojpeg")):
        with open(os.path.join(pc, name + ".pc"), "w") as f:
            f.write(f"Name: {name}\nDescription: metadata only\nVersion: 4.0.0\nLibs: -l{lib}\nCflags:\n")
    env = dict(os.environ)
    env["PKG_CONFIG_PATH"] = os.pathsep.join(p for p in (env.get("PKG_CONFIG_PATH"), pc) if p)
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
               f"ffcv=={VERSION}", "-d", tmp]
        r = subprocess.run(cmd, env=env)
        got = os.path.join(tmp, SDIST)
        if r.returncode != 0 or not os.path.exists(got):
            sys.exit(f"conformance: `{' '.join(cmd)}` failed (exit {r.returncode}); no FFCV sdist to test")
        if _sha256(got) != SHA256:
            sys.exit(f"conformance: {SDIST} from PyPI has sha256 {_sha256(got)}, expected {SHA256}")
        os.replace(got, path)
    return path


def extract(sdist):
    """Extracts the sdist's tests/ (only) and returns that folder."""
    dest = os.path.join(CACHE, f"ffcv-{VERSION}")
    tests = os.path.join(dest, "tests")
    stamp = os.path.join(dest, ".extracted")
    if os.path.exists(stamp):
        return tests
    prefix = f"ffcv-{VERSION}/tests/"
    with tarfile.open(sdist) as tar:
        members = [m for m in tar.getmembers() if m.name.startswith(prefix) and (m.isfile() or m.isdir())]
        tar.extractall(CACHE, members=members, filter="data")
    open(stamp, "w").close()
    return tests


def main(argv):
    tests = extract(download())
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([SITE, os.path.join(ROOT, "python")] +
                                        ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "_ffcv_conformance", "-p", "no:cacheprovider",
           "-W", "ignore::pytest.PytestAssertRewriteWarning", "--continue-on-collection-errors",
           "--rootdir", tests, tests] + argv
    print(f"conformance: FFCV {VERSION} tests from {tests}, `ffcv` imports resolved to ffcv_go", flush=True)
    try:
        r = subprocess.run(cmd, env=env, cwd=tests, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        sys.exit(f"conformance: FFCV's tests did not finish in {TIMEOUT_S} s")
    return r.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
