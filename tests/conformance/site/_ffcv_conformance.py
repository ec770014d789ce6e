"""Runs FFCV 1.0's own tests against ffcv_go.

install() makes every ``ffcv`` / ``ffcv.x.y`` import return the module
``ffcv_go`` / ``ffcv_go.x.y`` (the same object, so isinstance and identity
checks see one class), and applies the only substitutions this machine
forces, listed in SUBSTITUTIONS with their reasons. FFCV's test files are
read from the downloaded sdist as they are; nothing of them is edited.
"""
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys

SUBSTITUTIONS = {
    "torchvision.datasets.CIFAR10":
        "no network: CIFAR10(download=True) cannot download, so it is torchvision's FakeData "
        "of the same shape (50,000 / 10,000 PIL 32x32 RGB images, 10 classes)",
    "torch.distributed.init_process_group('nccl')":
        "NCCL needs CUDA devices: without one, the 'nccl' backend becomes 'gloo'",
    "CUDA tests":
        "tests that need a CUDA device are skipped when torch.cuda.is_available() is False "
        "(CUDA_TESTS below)",
}


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, target):
        self.target = target

    def create_module(self, spec):
        # The real module, imported under its own name; the import system
        # then also registers it as sys.modules['ffcv...'].
        return importlib.import_module(self.target)

    def exec_module(self, module):
        pass


class _AliasFinder(importlib.abc.MetaPathFinder):
    """Resolves ffcv[.sub] to ffcv_go[.sub]."""

    def find_spec(self, name, path=None, target=None):
        if name != "ffcv" and not name.startswith("ffcv."):
            return None
        real = "ffcv_go" + name[len("ffcv"):]
        try:
            real_spec = importlib.util.find_spec(real)
        except ModuleNotFoundError:
            return None
        if real_spec is None:
            return None
        return importlib.machinery.ModuleSpec(
            name, _AliasLoader(real), is_package=real_spec.submodule_search_locations is not None)


class _PostImport(importlib.abc.MetaPathFinder):
    """Calls patch(module) right after the named module is first imported."""

    def __init__(self, name, patch):
        self.name, self.patch, self.busy = name, patch, False

    def find_spec(self, name, path=None, target=None):
        if name != self.name or self.busy:
            return None
        self.busy = True
        try:
            spec = importlib.util.find_spec(name)
        finally:
            self.busy = False
        if spec is None or spec.loader is None:
            return spec
        real, patch = spec.loader, self.patch

        class _Loader(importlib.abc.Loader):
            def create_module(self, s):
                return real.create_module(s)

            def exec_module(self, module):
                real.exec_module(module)
                patch(module)

        spec.loader = _Loader()
        return spec


def _patch_torchvision_datasets(mod):
    fake = mod.FakeData

    class CIFAR10(fake):
        """No network here: FakeData with CIFAR-10's length, image size and classes."""

        def __init__(self, root=None, train=True, transform=None, target_transform=None, download=False):
            super().__init__(size=50000 if train else 10000, image_size=(3, 32, 32), num_classes=10,
                             transform=transform, target_transform=target_transform)

    mod.CIFAR10 = CIFAR10


def _patch_torch_distributed(mod):
    original = mod.init_process_group

    def init_process_group(backend=None, *args, **kwargs):
        if backend == "nccl" and not (mod.is_nccl_available() and _cuda_available()):
            backend = "gloo"
        return original(backend, *args, **kwargs)

    mod.init_process_group = init_process_group


def _cuda_available():
    import torch
    return torch.cuda.is_available()


def install():
    if any(isinstance(f, _AliasFinder) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _AliasFinder())
    sys.meta_path.insert(0, _PostImport("torchvision.datasets", _patch_torchvision_datasets))
    sys.meta_path.insert(0, _PostImport("torch.distributed", _patch_torch_distributed))


# --- pytest plugin (run.py loads this module with `-p _ffcv_conformance`) ---

# Tests that need a CUDA device; skipped without one (see SUBSTITUTIONS).
CUDA_TESTS = {
    "test_cuda_nonblocking.py::test_cuda",
    "test_image_normalization.py::test_gpu_normalization",
}

# FFCV tests that fail today, each with the reason; they run as non-strict
# xfails so the count stays honest while the work lands. Empty this as they
# pass (an XPASS in the summary says which can go).
KNOWN_FAILURES = {}


def pytest_collection_modifyitems(config, items):
    import pytest
    import torch
    cuda = torch.cuda.is_available()
    for item in items:
        test_id = item.nodeid.split("[")[0]
        if not cuda and test_id in CUDA_TESTS:
            item.add_marker(pytest.mark.skip(reason="needs CUDA; this machine has none"))
        if test_id in KNOWN_FAILURES:
            item.add_marker(pytest.mark.xfail(reason=KNOWN_FAILURES[test_id], strict=False))


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    stats = terminalreporter.stats
    n = {k: len(stats.get(k, [])) for k in ("passed", "failed", "error", "skipped", "xfailed", "xpassed")}
    terminalreporter.write_line(
        "conformance: FFCV 1.0.2 test suite on ffcv_go: {passed} passed, {failed} failed, {error} errors, "
        "{skipped} skipped, {xfailed} known failures, {xpassed} known failures now passing".format(**n))
    for what, why in SUBSTITUTIONS.items():
        terminalreporter.write_line(f"  substitution: {what}: {why}")
