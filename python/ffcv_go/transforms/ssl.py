"""FFCV-SSL's transforms (its ``ffcv.transforms``): colour jitter, blur,
erasing, rotation, centre and corner crops, and the Label* operations that
report the parameters an image transform drew.

Pairing: an image transform given ``seed=s`` draws its randomness from a key
derived from ``s`` alone (not from its place in the pipeline), so the Label*
transform built with the same arguments and the same ``seed``, placed in
another pipeline (FFCV-SSL: the label's), draws the same numbers for each
sample. A Label* transform outputs its pipeline's values as float32 followed
by the parameters."""
import numbers

import numpy as np
import torch

from ..pipeline.operation import _ArgumentError, _check_spec
from ._base import Transform, replace_state
from .image import _RandomImage, _seed_arg, _seeded


def _number_or_pair(value, name):
    """A number as a float, a (min, max) pair as a list of two floats, None
    as None: the arguments torchvision takes either way (ColorJitter's
    components, GaussianBlur's sigma), which Go checks and turns into
    ranges."""
    if value is None:
        return None
    if isinstance(value, numbers.Number) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, (tuple, list)) and len(value) == 2:
        return [float(value[0]), float(value[1])]
    raise TypeError(f"{name} must be a number or a (min, max) pair, got {value!r}")


def _fill(fill, name="fill"):
    """None, a number or one number per channel, as a list (or None)."""
    if fill is None:
        return None
    if isinstance(fill, numbers.Number):
        return [float(fill)]
    if isinstance(fill, dict):
        raise ValueError(f"{name}: per-type fill dictionaries are not supported; give a number or a sequence")
    return [float(v) for v in fill]


def _interpolation(mode):
    """The name of a torchvision InterpolationMode or a string, lower case
    (Go takes 'nearest' and 'bilinear')."""
    return str(getattr(mode, "value", mode)).lower()


class RandomColorJitter(_RandomImage):
    """With probability jitter_prob, adjusts brightness, contrast, saturation
    and hue in a random order with factors drawn from their ranges, as
    torchvision's ColorJitter (hue shifted in HSV). Each argument is a number
    v (factor range [max(0, 1-v), 1+v], hue [-v, v]) or a (min, max) pair; a
    range that is just the identity leaves that adjustment out. Needs RGB or
    one-channel images."""

    def __init__(self, jitter_prob=0.5, brightness=0.8, contrast=0.4, saturation=0.4, hue=0.2, seed=None):
        super().__init__()
        self.jitter_prob = float(jitter_prob)
        self.brightness = _number_or_pair(brightness, "brightness")
        self.contrast = _number_or_pair(contrast, "contrast")
        self.saturation = _number_or_pair(saturation, "saturation")
        self.hue = _number_or_pair(hue, "hue")
        self.seed = _seed_arg(seed)
        self._check()

    def _spec(self):
        return _seeded({"op": "color_jitter", "p": self.jitter_prob, "brightness": self.brightness,
                        "contrast": self.contrast, "saturation": self.saturation, "hue": self.hue}, self.seed)


class GaussianBlur(_RandomImage):
    """With probability blur_prob, blurs with a Gaussian of sigma drawn from
    U(sigma) over kernel_size taps (odd), reflect padding, as torchvision's
    GaussianBlur."""

    def __init__(self, blur_prob, kernel_size=5, sigma=(0.1, 2.0), seed=None):
        super().__init__()
        self.blur_prob = float(blur_prob)
        self.kernel_size = int(kernel_size)
        self.sigma = _number_or_pair(sigma, "sigma")
        self.seed = _seed_arg(seed)
        self._check()

    def _spec(self):
        return _seeded({"op": "gaussian_blur", "p": self.blur_prob, "kernel_size": self.kernel_size,
                        "sigma": self.sigma}, self.seed)


class RandomErasing(_RandomImage):
    """FFCV-SSL's RandomErasing: with probability erase_prob, fills a
    rectangle with mean (one value per channel, or one for all). The
    rectangle is torchvision's: area fraction U(scale), aspect ratio
    log-uniform in ratio, 10 tries, nothing erased if all fail."""

    def __init__(self, erase_prob=0.5, scale=(0.08, 0.4), ratio=(0.3, 3), mean=[128, 128, 128], seed=None):
        super().__init__()
        self.erase_prob = float(erase_prob)
        self.scale, self.ratio = (float(scale[0]), float(scale[1])), (float(ratio[0]), float(ratio[1]))
        if isinstance(mean, str):
            raise TypeError(f"RandomErasing: mean {mean!r}: give numbers")
        self.mean = _fill(mean, "mean")
        self.seed = _seed_arg(seed)
        self._check()

    def _spec(self):
        return _seeded({"op": "random_erasing", "p": self.erase_prob, "scale": list(self.scale),
                        "ratio": list(self.ratio), "value": self.mean}, self.seed)


class Rotate(_RandomImage):
    """FFCV-SSL's Rotate: with probability rotate_prob, rotates by an angle
    drawn from U(-angle, angle) radians, as torchvision's rotate (about the
    centre, same size, nearest or bilinear, fill outside: None is black)."""

    def __init__(self, rotate_prob=0.5, angle=0.2, seed=None, interpolation="nearest", fill=None):
        super().__init__()
        self.rotate_prob = float(rotate_prob)
        self.angle = float(angle)
        self.interpolation, self.fill, self.seed = _interpolation(interpolation), _fill(fill), _seed_arg(seed)
        self._check()

    def _spec(self):
        return _seeded({"op": "rotate", "p": self.rotate_prob, "angle": self.angle,
                        "interpolation": self.interpolation, "fill": self.fill}, self.seed)


def _size(size):
    return (int(size), int(size)) if np.isscalar(size) else (int(size[0]), int(size[1]))


class CenterCrop(_RandomImage):
    """FFCV-SSL's CenterCrop: the centre square of side
    int(ratio * min(H, W)), area-resized to output_size. First in a
    pipeline it is the decoder (CenterCropRGBImageDecoder: only the square
    is decoded, at a reduced DCT scale where the output is smaller); later
    it crops decoded images."""

    _corner = None

    def __init__(self, output_size, ratio):
        super().__init__()
        self.output_size = _size(output_size)
        self.ratio = float(ratio)
        self._check()

    def _as_decoder(self):
        from ..fields.rgb_image import CenterCropRGBImageDecoder, _CornerCropRGBImageDecoder
        if self._corner is None:
            return CenterCropRGBImageDecoder(self.output_size, self.ratio)
        return _CornerCropRGBImageDecoder(self.output_size, self.ratio, self._corner)

    def declare_state_and_memory(self, previous_state):
        return replace_state(previous_state, shape=(*self.output_size, previous_state.shape[2])), None

    def _spec(self):
        spec = {"op": "center_crop", "size": list(self.output_size), "ratio": self.ratio}
        if self._corner is not None:
            spec.update(op="corner_crop", corner=self._corner)
        return spec


class CornerCrop(CenterCrop):
    """The square of side int(ratio * min(H, W)) at a corner ('top_left',
    'top_right', 'bottom_left', 'bottom_right'), area-resized to
    output_size; first in a pipeline, the decoder (as CenterCrop). Names
    mean what they say: FFCV-SSL's are upside down (its 'top_left' is the
    bottom-left square)."""

    def __init__(self, output_size, ratio, corner="top_left"):
        self._corner = str(corner)
        super().__init__(output_size, ratio)

    @property
    def corner(self):
        return self._corner


class _Label(Transform):
    """A Label* transform: float32 values of its pipeline, then the
    parameters its image transform drew. It holds that transform, built from
    the same arguments, and Go reports that transform's own draws under the
    shared seed."""

    def _reports(self, make):
        """Builds the image transform it reports on (make()), both checked
        in Go, errors naming this class."""
        try:
            self._of = make()
        except _ArgumentError as e:
            raise _ArgumentError(type(self).__name__, e.detail) from None
        self.seed = self._of.seed
        _check_spec(self, self._label_spec())

    def _label_spec(self):
        of = self._of._spec()
        of.pop("seed", None)
        return _seeded({"op": "label", "of": of}, self.seed)

    def declare_state_and_memory(self, previous_state):
        shape = previous_state.shape or (1,)
        n = int(np.prod(shape)) if len(shape) else 1
        jit = previous_state.jit_mode
        return replace_state(previous_state, shape=(n + self._n,),
                             dtype=np.dtype("<f4") if jit else torch.float32), None

    def _go_spec(self, state):
        if not state.jit_mode or state.shape is None or len(state.shape) > 1:
            return None
        return self._label_spec()

    def _misplaced(self, name, index, state):
        return (f"{name!r}: {type(self).__name__} (operation {index}) appends the parameters its image "
                f"transform drew to this pipeline's values, in Go, where they are CPU scalars or vectors (a "
                f"label right after its decoder); here its input is shape {state.shape}, dtype {state.dtype}, "
                f"on {state.device}. Put it right after the decoder, before ToDevice and the other tensor "
                f"operations.")


class LabelColorJitter(_Label):
    """Appends the (brightness, contrast, saturation, hue) factors
    RandomColorJitter drew, (1, 1, 1, 0) where it did not apply. Build it as
    the RandomColorJitter it reports on, with the same seed: its defaults
    are FFCV-SSL's, no jitter, not RandomColorJitter's."""

    _n = 4

    def __init__(self, jitter_prob=0.5, brightness=0, contrast=0, saturation=0, hue=0, seed=None):
        super().__init__()
        self._reports(lambda: RandomColorJitter(jitter_prob, brightness, contrast, saturation, hue, seed=seed))


class LabelGrayscale(_Label):
    """Appends 0 where RandomGrayscale(gray_prob, seed) turned the image
    grey and 1 elsewhere (FFCV-SSL's convention)."""

    _n = 1

    def __init__(self, gray_prob=0.2, seed=None):
        super().__init__()
        from .image import RandomGrayscale
        self._reports(lambda: RandomGrayscale(gray_prob, seed=seed))


class LabelSolarization(_Label):
    """Appends 1 where RandomSolarization(solarization_prob, threshold,
    seed) solarized the image, 0 elsewhere."""

    _n = 1

    def __init__(self, solarization_prob=0.5, threshold=128, seed=None):
        super().__init__()
        from .image import RandomSolarization
        self._reports(lambda: RandomSolarization(solarization_prob, threshold, seed=seed))


class LabelGaussianBlur(_Label):
    """Appends the sigma GaussianBlur drew, 0 where it did not blur."""

    _n = 1

    def __init__(self, blur_prob, kernel_size, sigma=(0.1, 2.0), seed=None):
        super().__init__()
        self._reports(lambda: GaussianBlur(blur_prob, kernel_size, sigma, seed=seed))


class LabelRotate(_Label):
    """Appends the angle (radians) Rotate drew, 0 where it did not rotate."""

    _n = 1

    def __init__(self, rotate_prob=0.5, angle=0.2, seed=None):
        super().__init__()
        self._reports(lambda: Rotate(rotate_prob, angle, seed=seed))


class LabelTranslate(_Label):
    """Appends FFCV-SSL's (dy + padding, dx + padding), in [0, 2 * padding],
    for the shift RandomTranslate(padding, fill, seed) drew: output pixel
    (y, x) is input pixel (y + dy, x + dx)."""

    _n = 2

    def __init__(self, padding, fill=(0, 0, 0), seed=None):
        super().__init__()
        from .image import RandomTranslate
        self._reports(lambda: RandomTranslate(padding, fill, seed=seed))


class LabelRandomHorizontalFlip(_Label):
    """Appends 1 where RandomHorizontalFlip(flip_prob, seed) flipped the
    image, 0 elsewhere."""

    _n = 1

    def __init__(self, flip_prob=0.5, seed=None):
        super().__init__()
        from .image import RandomHorizontalFlip
        self._reports(lambda: RandomHorizontalFlip(flip_prob, seed=seed))
