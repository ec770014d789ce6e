"""One pipeline: rebuilt per epoch, built-in operations in Go wherever they
sit, Python stages on the loader's thread."""
import threading
import traceback

import numpy as np
import pytest
import torch

from conftest import fixture_file, settle

from ffcv_go import Loader, _lib
from ffcv_go.fields.decoders import IntDecoder
from ffcv_go.fields.rgb_image import CenterCropRGBImageDecoder, RandomResizedCropRGBImageDecoder
from ffcv_go.loader import OrderOption
from ffcv_go.pipeline.operation import Operation
from ffcv_go.transforms import (Cutout, ImageMixup, LabelMixup, NormalizeImage, RandomBrightness, RandomContrast,
                                RandomHorizontalFlip, RandomResizedCrop, RandomSaturation, RandomTranslate,
                                ToTensor, ToTorchImage)


@pytest.fixture(scope="module")
def images():
    """30 real JPEGs of varied sizes (FFCV 1.0's fixture) with labels 0..29."""
    path, _ = fixture_file("images_jpg_var")
    return path




class Noop(Operation):
    """A custom operation that hands its input on unchanged; it records the
    threads it ran on."""

    def __init__(self, threads=None):
        super().__init__()
        self.threads = threads

    def declare_state_and_memory(self, previous_state):
        return previous_state, None

    def generate_code(self):
        threads = self.threads

        def code(inp, dst):
            if threads is not None:
                threads.add(threading.get_ident())
            return inp
        return code


def epochs(loader, n):
    return [[tuple(x.clone() for x in b) for b in loader] for _ in range(n)]


def assert_same(a, b, what):
    assert len(a) == len(b), what
    for e, (ea, eb) in enumerate(zip(a, b)):
        assert len(ea) == len(eb), what
        for k, (ba, bb) in enumerate(zip(ea, eb)):
            for x, y in zip(ba, bb):
                assert x.dtype == y.dtype and x.shape == y.shape, f"{what}: epoch {e} batch {k}"
                assert torch.equal(x, y), f"{what}: epoch {e} batch {k} differs"


MEAN, STD = np.array([120.0, 110.0, 100.0]), np.array([60.0, 55.0, 50.0])

PIPELINES = {
    "rrc decoder": lambda: [RandomResizedCropRGBImageDecoder((28, 28)), RandomHorizontalFlip(),
                            RandomTranslate(padding=3), Cutout(6, fill=(7, 8, 9)), RandomBrightness(0.5, p=0.7),
                            RandomContrast(0.5, p=0.7), RandomSaturation(0.5, p=0.7), ImageMixup(0.4, False),
                            NormalizeImage(MEAN, STD, np.float32), ToTensor(), ToTorchImage()],
    "rrc transform": lambda: [CenterCropRGBImageDecoder((40, 40), ratio=0.9),
                              RandomResizedCrop((0.2, 1.0), (0.75, 4 / 3), 24), RandomHorizontalFlip(),
                              ImageMixup(0.4, True), RandomTranslate(padding=2), ToTensor(), ToTorchImage()],
}


@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_noop_custom_op_anywhere_changes_nothing(images, no_jit, name):
    """A custom op inserted at any position (images and labels) leaves every
    pixel and mixup weight as it is without it: the built-in ops after it run
    in Go under the same random keys."""
    def loader(image_ops, label_ops):
        return Loader(images, batch_size=8, num_workers=2, order=OrderOption.RANDOM, seed=5, drop_last=False,
                      pipelines={"image": image_ops, "label": label_ops})
    label_ops = [IntDecoder(), LabelMixup(0.4, name == "rrc transform"), ToTensor()]
    want = epochs(loader(PIPELINES[name](), label_ops), 2)
    n = len(PIPELINES[name]())
    for pos in range(1, n + 1):
        ops = PIPELINES[name]()
        ops.insert(pos, Noop())
        labels = [IntDecoder(), LabelMixup(0.4, name == "rrc transform"), ToTensor()]
        labels.insert(min(pos, len(labels)), Noop())
        l = loader(ops, labels)
        assert l._build.python_steps
        assert_same(epochs(l, 2), want, f"{name}: no-op at {pos}")


def test_noop_custom_op_compiled(images):
    """The same with the custom op compiled by numba (when installed)."""
    ops = PIPELINES["rrc decoder"]
    base = Loader(images, batch_size=8, num_workers=2, seed=2, pipelines={"image": ops()})
    ops2 = ops()
    ops2.insert(2, Noop())
    assert_same(epochs(Loader(images, batch_size=8, num_workers=2, seed=2, pipelines={"image": ops2}), 1),
                epochs(base, 1), "compiled no-op")


@pytest.mark.parametrize("python_stage", [False, True])
@pytest.mark.parametrize("kind", ["rrc", "center"])
def test_output_size_changed_between_epochs(images, no_jit, kind, python_stage):
    """ffcv-imagenet's progressive resizing: decoder.output_size set before an
    epoch takes effect at that epoch, equal to a loader built at that size."""
    def make(size):
        dec = RandomResizedCropRGBImageDecoder(size) if kind == "rrc" else CenterCropRGBImageDecoder(size)
        ops = [dec] + ([Noop()] if python_stage else []) + [RandomHorizontalFlip(), ToTensor(), ToTorchImage()]
        return dec, Loader(images, batch_size=8, num_workers=2, order=OrderOption.RANDOM, seed=3,
                           pipelines={"image": ops, "label": [IntDecoder(), ToTensor()]})
    dec, loader = make((16, 16))
    held = next(iter(loader))[0]
    kept = held.clone()
    for epoch, res in enumerate([16, 24, 24, 20]):
        dec.output_size = (res, res)
        got = [b[0].clone() for b in loader]
        assert all(x.shape == (8, 3, res, res) for x in got), (epoch, res, [x.shape for x in got])
        _, fresh = make((res, res))
        fresh.load_state_dict({"epoch": epoch + 1, "batch": 0, "seed": 3})
        assert all(torch.equal(a, b[0]) for a, b in zip(got, fresh))
    assert torch.equal(held, kept)  # a batch held across rebuilds stays valid


def test_unchanged_epoch_reuses_the_build(images, no_jit):
    dec = RandomResizedCropRGBImageDecoder((16, 16))
    loader = Loader(images, batch_size=8, pipelines={"image": [dec, Noop(), RandomHorizontalFlip()]})
    first = loader._build
    list(loader)
    list(loader)
    assert loader._build is first
    dec.output_size = (20, 20)
    list(loader)
    assert loader._build is not first
    tails = [s for p in loader._build.plans for s in p.steps if hasattr(s, "out_shape")]
    assert [t.out_shape for t in tails] == [(20, 20, 3)]


def test_resume_after_resize(images, no_jit):
    """state_dict() resumes at the exact next batch, at the size then set."""
    dec = RandomResizedCropRGBImageDecoder((16, 16))
    ops = [dec, Noop(), RandomHorizontalFlip()]
    loader = Loader(images, batch_size=4, seed=9, order=OrderOption.RANDOM, pipelines={"image": ops})
    list(loader)
    dec.output_size = (24, 24)
    it = iter(loader)
    next(it)
    state = loader.state_dict()
    rest = [b[0].clone() for b in it]
    dec2 = RandomResizedCropRGBImageDecoder((24, 24))
    other = Loader(images, batch_size=4, seed=9, order=OrderOption.RANDOM,
                   pipelines={"image": [dec2, Noop(), RandomHorizontalFlip()]})
    other.load_state_dict(state)
    again = [b[0] for b in other]
    assert len(again) == len(rest) and all(torch.equal(a, b) for a, b in zip(again, rest))


def test_python_stages_run_on_the_loader_thread(images, no_jit):
    threads = set()
    loader = Loader(images, batch_size=8, batches_ahead=2,
                    pipelines={"image": [CenterCropRGBImageDecoder((16, 16)), Noop(threads), ToTensor()]})
    assert len(list(loader)) == 3
    assert threads and threading.get_ident() not in threads
    plain = Loader(images, batch_size=8, pipelines={"image": [CenterCropRGBImageDecoder((16, 16)), ToTensor()]})
    assert not plain._build.python_steps  # nothing to overlap: no thread


class Fails(Operation):
    def declare_state_and_memory(self, previous_state):
        return previous_state, None

    def generate_code(self):
        def user_code_that_fails(inp, dst):
            if (inp[:, 0] >= 8).any():
                raise ArithmeticError("user code failed")
            return inp
        return user_code_that_fails


def test_exception_keeps_the_original_traceback(images, no_jit):
    before = threading.active_count()
    loader = Loader(images, batch_size=8, pipelines={"label": [IntDecoder(), Fails(), ToTensor()], "image": None})
    it = iter(loader)
    next(it)
    with pytest.raises(ArithmeticError, match="user code failed") as e:
        next(it)
    names = [f.name for f in traceback.extract_tb(e.value.__traceback__)]
    assert "user_code_that_fails" in names
    del it, e
    settle()
    assert threading.active_count() == before


def test_go_op_after_torch_image_layout_is_refused(images, no_jit):
    with pytest.raises(ValueError, match="RandomHorizontalFlip.*ToTorchImage"):
        Loader(images, batch_size=8, pipelines={"image": [CenterCropRGBImageDecoder((16, 16)), ToTensor(),
                                                          ToTorchImage(), Noop(), RandomHorizontalFlip()]})
