"""torchvision's automatic augmentation policies (``torchvision.transforms.v2``
RandAugment, TrivialAugmentWide, AutoAugment, AugMix) with torchvision's
constructor signatures, operation sets and magnitude bins, run in Go on
uint8 (H, W, C) images; and AugmentOp, one of their operations with a fixed
magnitude. interpolation takes a torchvision InterpolationMode (NEAREST or
BILINEAR) or its name."""
import numbers

from .. import _lib
from .image import _RandomImage
from .ssl import _fill, _interpolation

#: The operations of the policies, as torchvision names them (the Go core's list).
AUGMENT_OPS = _lib.augment_ops()


def _int(value, name):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} {value!r} must be an integer")
    return int(value)


class _Policy(_RandomImage):
    """A policy; each subclass's constructor sets its own arguments, then
    checks them all in Go (_check)."""

    def __init__(self, interpolation, fill):
        super().__init__()
        self.interpolation, self.fill = interpolation, fill
        self._args = {"interpolation": _interpolation(interpolation), "fill": _fill(fill)}

    def _spec(self):
        return dict(self._args, op=self._op, **self._own())


class RandAugment(_Policy):
    """Applies num_ops operations drawn uniformly from torchvision's 14, each
    at magnitude bin `magnitude` of num_magnitude_bins, with a random sign
    where the operation has one."""

    _op = "rand_augment"

    def __init__(self, num_ops=2, magnitude=9, num_magnitude_bins=31, interpolation="nearest", fill=None):
        super().__init__(interpolation, fill)
        self.num_ops = _int(num_ops, "num_ops")
        self.num_magnitude_bins = _int(num_magnitude_bins, "num_magnitude_bins")
        self.magnitude = _int(magnitude, "magnitude")
        self._check()

    def _own(self):
        return {"num_ops": self.num_ops, "magnitude": self.magnitude, "num_magnitude_bins": self.num_magnitude_bins}


class TrivialAugmentWide(_Policy):
    """Applies one operation drawn uniformly from torchvision's 14 at a
    uniformly drawn magnitude bin of num_magnitude_bins (the wide ranges)."""

    _op = "trivial_augment_wide"

    def __init__(self, num_magnitude_bins=31, interpolation="nearest", fill=None):
        super().__init__(interpolation, fill)
        self.num_magnitude_bins = _int(num_magnitude_bins, "num_magnitude_bins")
        self._check()

    def _own(self):
        return {"num_magnitude_bins": self.num_magnitude_bins}


class AutoAugment(_Policy):
    """AutoAugment's learnt policies: one of the policy's 25 pairs of
    (operation, probability, magnitude) per image. policy: torchvision's
    AutoAugmentPolicy (IMAGENET, CIFAR10, SVHN) or its value ('imagenet',
    'cifar10', 'svhn')."""

    _op = "auto_augment"

    def __init__(self, policy="imagenet", interpolation="nearest", fill=None):
        super().__init__(interpolation, fill)
        self.policy, self._policy = policy, str(getattr(policy, "value", policy)).lower()
        self._check()

    def _own(self):
        return {"policy": self._policy}


class AugMix(_Policy):
    """AugMix: the image mixed with mixture_width chains of chain_depth
    operations (1 to 3 at random when chain_depth <= 0) at severity, with
    Dirichlet(alpha) and Beta(alpha, alpha) weights; all_ops=False leaves out
    Brightness, Color, Contrast and Sharpness. BILINEAR by default, as
    torchvision."""

    _op = "augmix"

    def __init__(self, severity=3, mixture_width=3, chain_depth=-1, alpha=1.0, all_ops=True,
                 interpolation="bilinear", fill=None):
        super().__init__(interpolation, fill)
        self.severity = _int(severity, "severity")
        self.mixture_width = _int(mixture_width, "mixture_width")
        self.chain_depth = _int(chain_depth, "chain_depth")
        self.alpha = float(alpha)
        self.all_ops = bool(all_ops)
        self._check()

    def _own(self):
        return {"severity": self.severity, "mixture_width": self.mixture_width, "chain_depth": self.chain_depth,
                "alpha": self.alpha, "all_ops": self.all_ops}


class AugmentOp(_Policy):
    """One policy operation (a name in AUGMENT_OPS) with a fixed signed
    magnitude, as torchvision applies it: shear factor, translation in pixels
    (truncated), rotation in degrees, enhancement factor 1 + magnitude,
    posterize bits, solarize threshold as a fraction of 255."""

    _op = "augment_op"

    def __init__(self, name, magnitude=0.0, interpolation="nearest", fill=None):
        super().__init__(interpolation, fill)
        self.name, self.magnitude = str(name), float(magnitude)
        self._check()

    def _own(self):
        return {"name": self.name, "magnitude": self.magnitude}
