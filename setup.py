"""Builds the Go core (go build -buildmode=c-shared) into the ffcv_go package.

Needs Go >= 1.22, a C compiler and libjpeg-turbo's headers (Debian:
libturbojpeg0-dev libjpeg62-turbo-dev). The library is loaded with ctypes, so
one build serves every CPython 3 and every torch version.

`make wheel` builds the library first, for each target, and passes it in:
FFCV_GO_LIB is a prebuilt _ffcv_go.so to package instead of building one, and
FFCV_GO_PLAT the wheel's platform tag (e.g. manylinux2014_aarch64), and
FFCV_GO_LICENCES a directory (relative to this one) of the licence texts of
what that library links in, which go into the wheel's .dist-info.
"""
import glob
import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
LIB = "_ffcv_go.so"


class BuildGo(build_py):
    def run(self):
        super().run()
        out = os.path.join(self.build_lib, "ffcv_go", LIB)
        prebuilt = os.environ.get("FFCV_GO_LIB")
        if prebuilt:
            shutil.copy(prebuilt, out)
            return
        go = shutil.which("go")
        if go is None:
            raise RuntimeError("ffcv-go needs Go (https://go.dev/dl/) to build its core library")
        os.makedirs(os.path.dirname(out), exist_ok=True)
        env = dict(os.environ, CGO_ENABLED="1")
        subprocess.check_call([go, "build", "-trimpath", "-ldflags=-w", "-buildmode=c-shared", "-o", out, "./export"],
                              cwd=HERE, env=env)
        header = os.path.splitext(out)[0] + ".h"
        if os.path.exists(header):
            os.remove(header)


class BinaryDistribution(Distribution):
    """The wheel carries a native library: mark it platform-specific."""

    def has_ext_modules(self):
        return True


try:
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # setuptools < 70.1
    from wheel.bdist_wheel import bdist_wheel


class Py3Wheel(bdist_wheel):
    """Tags the wheel py3-none-<platform>: the library is loaded with ctypes,
    not imported as an extension, so one wheel serves every CPython 3."""

    def get_tag(self):
        _, _, plat = super().get_tag()
        return "py3", "none", os.environ.get("FFCV_GO_PLAT") or plat


licences = os.environ.get("FFCV_GO_LICENCES")
# ffcv-go's own licence, then those of what the library links.
extra = {"license_files": ["LICENSE"] + (sorted(glob.glob(os.path.join(licences, "*"))) if licences else [])}
setup(cmdclass={"build_py": BuildGo, "bdist_wheel": Py3Wheel}, distclass=BinaryDistribution, **extra)
