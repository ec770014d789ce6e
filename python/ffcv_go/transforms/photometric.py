"""Photometric: Python code that changes pixel values only, which targets
(boxes, keypoints, masks) that follow the image may pass by.

Targets follow the built-in operations of their image, which know where they
move each pixel. A Python stage after them (a custom operation, a torch
module) could move pixels where the targets do not follow, so the Loader
refuses one in a pipeline that targets follow, unless it is known to change
values, dtype or layout only: ffcv_go's tensor operations (ToTensor,
ToTorchImage, ToDevice, Convert, NormalizeImage, ...), torchvision's
photometric transforms (``PHOTOMETRIC_TORCHVISION``, matched by exact class,
and ``nn.Sequential``, ``Compose``, ``RandomApply``, ``RandomChoice`` and
``RandomOrder`` of them), and code wrapped in ``Photometric``.
"""
import torch

from ..pipeline.operation import Operation
from ._base import replace_state

__all__ = ["Photometric", "PHOTOMETRIC_TORCHVISION"]

#: The torchvision transforms (v1 ``torchvision.transforms`` and v2
#: ``torchvision.transforms.v2``, by class name) that change pixel values,
#: dtype or channels only, and may run after the built-in operations of an
#: image that targets follow. A subclass is not one of them: it may do more.
PHOTOMETRIC_TORCHVISION = (
    "Normalize", "ColorJitter", "Grayscale", "RandomGrayscale", "RGB", "GaussianBlur", "GaussianNoise",
    "RandomInvert", "RandomPosterize", "RandomSolarize", "RandomAdjustSharpness", "RandomAutocontrast",
    "RandomEqualize", "RandomPhotometricDistort", "RandomChannelPermutation", "ConvertImageDtype", "ToDtype",
    "RandomErasing", "Identity",
)

# Containers whose members run in turn, or one of them: photometric when
# every member is (their members are in .transforms).
_CONTAINERS = ("Compose", "RandomApply", "RandomChoice", "RandomOrder")


def _torchvision_classes(names):
    """The classes of torchvision's v1 and v2 transforms named in names
    (those this torchvision has); none without torchvision."""
    found = set()
    try:
        import torchvision.transforms as v1
    except ImportError:
        return found
    modules = [v1]
    try:
        import torchvision.transforms.v2 as v2
        modules.append(v2)
    except ImportError:
        pass
    for module in modules:
        for name in names:
            cls = getattr(module, name, None)
            if isinstance(cls, type):
                found.add(cls)
    return found


_classes = None


def _known():
    """(photometric classes, container classes), found once."""
    global _classes
    if _classes is None:
        _classes = (_torchvision_classes(PHOTOMETRIC_TORCHVISION) | {torch.nn.Identity},
                    _torchvision_classes(_CONTAINERS))
    return _classes


def _pixel_mover(fn):
    """None when fn (a torch module or callable run on the image batch) is
    known to leave every pixel where it is; otherwise fn, or the member of
    a container of fn, that may move them."""
    photometric, containers = _known()
    if isinstance(fn, Photometric) or type(fn) in photometric:
        return None
    if type(fn) is torch.nn.Sequential:
        members = list(fn)
    elif type(fn) in containers:
        members = list(fn.transforms)
    else:
        return fn
    for m in members:
        bad = _pixel_mover(m)
        if bad is not None:
            return bad
    return None


class Photometric(Operation):
    """Marks ``fn``, Python code of the user's, as changing pixel values only
    (colour, noise, normalization: no crop, flip, resize or shift), so that
    it may run after the built-in operations of an image that boxes,
    keypoints or masks follow; the Loader refuses any other Python stage
    there, since the targets would not follow what it does to the pixels.

    ``fn`` is a callable run on the batch tensor (a torch module, a function,
    a torchvision ``Compose``), as ``ModuleWrapper`` runs it, or a custom
    ``Operation``, which runs as it would unwrapped. Nothing checks that it
    does keep the pixels in place: that is what the wrapper asserts.

    ```python
    pipelines = {"image": [RandomResizedCropRGBImageDecoder((512, 512)), RandomHorizontalFlip(),
                           ToTensor(), ToTorchImage(), Photometric(my_colour_noise)],
                 "boxes": [RaggedDecoder()], "labels": [RaggedDecoder()]}
    ```
    """

    def __init__(self, fn):
        super().__init__()
        if isinstance(fn, Photometric):
            fn = fn.fn
        if isinstance(fn, Operation) and fn._builtin:
            raise TypeError(f"Photometric: {type(fn).__name__} is built in; the targets know what it does "
                            "to the pixels, use it unwrapped")
        if not isinstance(fn, Operation) and not callable(fn):
            raise TypeError(f"Photometric wraps a callable or an Operation, got a {type(fn).__name__}")
        self.fn = fn
        # A callable runs as a built-in tensor op (ModuleWrapper's way); an
        # Operation as the custom operation it is.
        self._custom = isinstance(fn, Operation)
        self._builtin = self._transform = not self._custom

    def __repr__(self):
        return f"Photometric({self.fn!r})"

    def accept_field(self, field):
        super().accept_field(field)
        if self._custom:
            self.fn.accept_field(field)

    def accept_globals(self, metadata, memory_read):
        super().accept_globals(metadata, memory_read)
        if self._custom:
            self.fn.accept_globals(metadata, memory_read)

    def generate_code(self):
        if self._custom:
            return self.fn.generate_code()
        apply = self._apply

        def code(inp, dst):
            return apply(inp, None)
        return code

    def declare_state_and_memory(self, previous_state):
        if self._custom:
            return self.fn.declare_state_and_memory(previous_state)
        return replace_state(previous_state, jit_mode=False), None

    def declare_shared_memory(self, previous_state):
        return self.fn.declare_shared_memory(previous_state) if self._custom else None

    def generate_code_for_shared_state(self):
        return self.fn.generate_code_for_shared_state() if self._custom else None

    _same_pixels = True  # what the wrapper asserts

    def _apply(self, x, ctx):
        return self.fn(x)
