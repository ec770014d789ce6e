"""Image and label transforms. Each is implemented once, in Go: the loader
runs it in the per-sample program, or on the batch when it follows a Python
stage (see ffcv_go.pipeline.pipeline). The Python classes only describe them
(``_go_spec``), have Go check their arguments when they are constructed
(``_check_spec``) and declare their output state. Two have a torch path:
NormalizeImage on a GPU tensor (as FFCV's does) and MixupToOneHot (FFCV's is
torch only)."""
import weakref

import numpy as np
import torch

from .. import _lib
from ..pipeline.operation import _ArgumentError, _check_spec, _seed_arg
from ._base import Transform, numpy_dtype, replace_state, torch_dtype


def _is_cpu_image(state):
    return state.jit_mode and state.shape is not None and len(state.shape) == 3 and np.dtype(state.dtype) == np.uint8


def _seeded(spec, seed):
    """spec with the pairing seed of the Label* transforms (see transforms.ssl)."""
    if seed is not None:
        spec["seed"] = _seed_arg(seed)
    return spec


def _as_named(op, make):
    """make() (an operation's decoder form), its argument errors naming op's
    class, the one the user wrote."""
    try:
        return make()
    except _ArgumentError as e:
        raise _ArgumentError(type(op).__name__, e.detail) from None
    except ValueError as e:
        head, sep, rest = str(e).partition(": ")
        raise ValueError(f"{type(op).__name__}: {rest}" if sep else str(e)) from None


class _RandomImage(Transform):
    """A built-in transform of uint8 images, described by ``_spec()``;
    ``_check()`` (each constructor's last step) checks it in Go."""

    def _go_spec(self, state):
        return self._spec() if _is_cpu_image(state) else None

    def _check(self):
        _check_spec(self, self._spec())


class RandomHorizontalFlip(_RandomImage):
    """Flips each image left-right with probability flip_prob; seed pairs it
    with a LabelRandomHorizontalFlip."""

    def __init__(self, flip_prob=0.5, seed=None):
        super().__init__()
        self.flip_prob = float(flip_prob)
        self.seed = _seed_arg(seed)
        self._check()

    def _spec(self):
        return _seeded({"op": "flip_h", "p": self.flip_prob}, self.seed)



class RandomVerticalFlip(_RandomImage):
    """Flips each image upside down with probability flip_prob."""

    def __init__(self, flip_prob=0.5, seed=None):
        super().__init__()
        self.flip_prob = float(flip_prob)
        self.seed = _seed_arg(seed)
        self._check()

    def _spec(self):
        return _seeded({"op": "flip_v", "p": self.flip_prob}, self.seed)



class RandomTranslate(_RandomImage):
    """Pads by `padding` with fill and takes a random window of the original
    size; seed pairs it with a LabelTranslate."""

    def __init__(self, padding, fill=(0, 0, 0), seed=None):
        super().__init__()
        self.padding, self.fill, self.seed = int(padding), tuple(int(v) for v in fill), _seed_arg(seed)
        self._check()

    def _spec(self):
        return _seeded({"op": "translate", "padding": self.padding, "fill": list(self.fill)}, self.seed)



class Cutout(_RandomImage):
    """Fills a random crop_size square (inside the image) with fill."""

    def __init__(self, crop_size, fill=(0, 0, 0)):
        super().__init__()
        self.crop_size, self.fill = int(crop_size), tuple(int(v) for v in fill)
        self._check()

    def _spec(self):
        return {"op": "cutout", "size": self.crop_size, "fill": list(self.fill)}



class _Blend(_RandomImage):
    _kind = None

    def __init__(self, magnitude, p=0.5):
        super().__init__()
        self.magnitude, self.p = float(magnitude), float(p)
        self._check()

    def _spec(self):
        return {"op": self._kind, "magnitude": self.magnitude, "p": self.p}



class RandomBrightness(_Blend):
    """Scales each image by U(max(0, 1-m), 1+m) with probability p."""
    _kind = "brightness"


class RandomContrast(_Blend):
    """Blends each image with its mean grey level, with probability p."""
    _kind = "contrast"


class RandomSaturation(_Blend):
    """Blends each image with its greyscale version, with probability p."""
    _kind = "saturation"


class RandomGrayscale(_RandomImage):
    """Turns each image grey (ITU-R 601 luma in every channel) with
    probability gray_prob (FFCV-SSL's signature); seed pairs it with a
    LabelGrayscale."""

    def __init__(self, gray_prob=0.2, seed=None):
        super().__init__()
        self.gray_prob, self.seed = float(gray_prob), _seed_arg(seed)
        self._check()

    def _spec(self):
        return _seeded({"op": "grayscale", "p": self.gray_prob}, self.seed)


class RandomSolarization(_RandomImage):
    """Inverts the pixels >= threshold with probability solarization_prob
    (FFCV-SSL's signature and argument order); seed pairs it with a
    LabelSolarization."""

    def __init__(self, solarization_prob=0.5, threshold=128, seed=None):
        super().__init__()
        self.solarization_prob, self.threshold = float(solarization_prob), int(threshold)
        self.seed = _seed_arg(seed)
        self._check()

    def _spec(self):
        return _seeded({"op": "solarize", "threshold": self.threshold, "p": self.solarization_prob}, self.seed)


class RandomCrop(_RandomImage):
    """Pads by padding (zeros) and takes a random size window (torchvision's RandomCrop)."""

    def __init__(self, size, padding=0, seed=None):
        super().__init__()
        self.size = (int(size), int(size)) if np.isscalar(size) else (int(size[0]), int(size[1]))
        self.padding = int(padding)
        self.seed = _seed_arg(seed)
        self._check()

    def declare_state_and_memory(self, previous_state):
        shape = previous_state.shape
        return replace_state(previous_state, shape=(*self.size, shape[2])), None

    def _spec(self):
        return _seeded({"op": "random_crop", "size": list(self.size), "padding": self.padding}, self.seed)



class NormalizeImage(Transform):
    """(x - mean) / std per channel, as `type` (np.float16 or np.float32), from
    a lookup table computed in float64 from mean and std as given and rounded
    once, as FFCV's: the values are FFCV's to the bit. uint8 (B, H, W, C) on
    the CPU is done in Go; a uint8 tensor on the GPU (after ToDevice and
    ToTorchImage) looks the same table up there."""

    _same_pixels = True

    def __init__(self, mean, std, type):
        super().__init__()
        self.mean = np.asarray(mean, dtype=np.float64)
        self.std = np.asarray(std, dtype=np.float64)
        self.type = type
        if self.mean.ndim != 1 or self.std.ndim != 1:
            raise ValueError("NormalizeImage: mean and std need one value per channel")
        _check_spec(self, self._spec())
        self._tables = {}  # device -> the (channels x 256) table there

    def declare_state_and_memory(self, previous_state):
        dt = numpy_dtype(self.type) if previous_state.jit_mode else torch_dtype(self.type)
        return replace_state(previous_state, dtype=dt), None

    def _spec(self):
        return {"op": "normalize", "mean": self.mean.tolist(), "std": self.std.tolist(),
                "dtype": numpy_dtype(self.type).str}

    def _go_spec(self, state):
        return self._spec() if _is_cpu_image(state) else None

    def _runs_in_python(self, state):
        return torch.device(state.device).type != "cpu"  # the GPU path; on the CPU, Go

    def _table(self, device):
        """The Go core's table on device, channel-major, moved there once."""
        table = self._tables.get(device)
        if table is None:
            lut = _lib.normalize_table(self.mean, self.std, numpy_dtype(self.type))  # (256, channels)
            table = torch.tensor(np.ascontiguousarray(lut.T)).reshape(-1).to(device)
            self._tables[device] = table
        return table

    def _apply(self, x, ctx):
        if x.dtype != torch.uint8:
            raise TypeError(f"NormalizeImage: expected uint8 images, got {x.dtype}")
        c = len(self.mean)
        chw = x.dim() == 4 and x.shape[1] == c and x.shape[-1] != c
        hwc = x.permute(0, 2, 3, 1) if chw else x  # a view: no copy of a channels_last batch
        if hwc.shape[-1] != c:
            raise ValueError(f"NormalizeImage: {c} channels in mean and std, images of shape {tuple(x.shape)}")
        offsets = torch.arange(c, device=x.device) * 256
        out = torch.take(self._table(x.device), hwc.long() + offsets)
        return out.permute(0, 3, 1, 2) if chw else out


class ReplaceLabel(Transform):
    """Sets the label of the samples in indices to new_label."""

    def __init__(self, indices, new_label):
        super().__init__()
        self.indices = np.asarray(indices, dtype=np.int64).reshape(-1)
        self.new_label = int(new_label)
        _check_spec(self, self._spec())

    def _spec(self):
        return {"op": "replace_label", "indices": self.indices.tolist(), "label": self.new_label}

    def _go_spec(self, state):
        if state.jit_mode and tuple(state.shape or ()) == (1,) and np.dtype(state.dtype) == np.int64:
            return self._spec()
        return None



class Poison(Transform):
    """Blends the images of the samples in indices with mask:
    clip((1 - alpha) * x + alpha * mask, *clamp)."""

    def __init__(self, mask, alpha, indices, clamp=(0, 255)):
        super().__init__()
        self.mask = np.asarray(mask, dtype=np.float32)
        # alpha: FFCV's H×W array (one weight per pixel), or one number.
        a = np.asarray(alpha, dtype=np.float32)
        if a.ndim not in (0, 2):
            raise ValueError(f"Poison: alpha must be an H×W array or a number, got shape {a.shape}")
        if a.ndim == 2 and (self.mask.ndim != 3 or a.shape != self.mask.shape[:2]):
            raise ValueError(f"Poison: alpha of shape {a.shape} does not match the mask's {self.mask.shape}")
        self.alpha = float(a) if a.ndim == 0 else a
        self.indices = np.asarray(indices, dtype=np.int64).reshape(-1)
        self.clamp = (float(clamp[0]), float(clamp[1]))
        _check_spec(self, self._spec())

    def _spec(self):
        spec = {"op": "poison", "mask": self.mask.reshape(-1).tolist(), "indices": self.indices.tolist(),
                "clamp": list(self.clamp)}
        if isinstance(self.alpha, np.ndarray):
            spec["alpha_map"] = self.alpha.reshape(-1).tolist()
        else:
            spec["alpha"] = self.alpha
        return spec

    def _go_spec(self, state):
        if not _is_cpu_image(state) or tuple(self.mask.shape) != tuple(state.shape):
            return None
        return self._spec()



class ImageMixup(Transform):
    """Mixes image i with image i-1 of the batch: lam*x_i + (1-lam)*x_{i-1},
    lam ~ Beta(alpha, alpha) (one per batch with same_lambda)."""
    _batch = True

    def __init__(self, alpha, same_lambda):
        super().__init__()
        self.alpha, self.same_lambda = float(alpha), bool(same_lambda)
        _check_spec(self, self._spec())

    def _spec(self):
        return {"op": "image_mixup", "alpha": self.alpha, "same_lambda": self.same_lambda}

    def _go_spec(self, state):
        return self._spec() if _is_cpu_image(state) else None



class LabelMixup(Transform):
    """Turns labels into [y_i, y_{i-1}, lam] (float32) matching ImageMixup."""
    _batch = True

    def __init__(self, alpha, same_lambda):
        super().__init__()
        self.alpha, self.same_lambda = float(alpha), bool(same_lambda)
        _check_spec(self, self._spec())

    def declare_state_and_memory(self, previous_state):
        return replace_state(previous_state, shape=(3,), dtype=np.dtype("<f4")
                             if previous_state.jit_mode else torch.float32), None

    def _spec(self):
        return {"op": "label_mixup", "alpha": self.alpha, "same_lambda": self.same_lambda}

    def _go_spec(self, state):
        if state.jit_mode and tuple(state.shape or ()) == (1,) and np.dtype(state.dtype) == np.int64:
            return self._spec()
        return None



class MixupToOneHot(Transform):
    """[y1, y2, lam] -> lam*onehot(y1) + (1-lam)*onehot(y2), (B, num_classes)."""

    def __init__(self, num_classes):
        super().__init__()
        self.num_classes = int(num_classes)
        self._eyes = {}  # device -> identity matrix, made once

    def declare_state_and_memory(self, previous_state):
        return replace_state(previous_state, shape=(self.num_classes,)), None

    def _apply(self, x, ctx):
        y1, y2, lam = x[:, 0].long(), x[:, 1].long(), x[:, 2:3].float()
        eye = self._eyes.get(x.device)
        if eye is None:
            eye = self._eyes[x.device] = torch.eye(self.num_classes, device=x.device)
        return lam * eye[y1] + (1 - lam) * eye[y2]


class RandomResizedCrop(_RandomImage):
    """Random crop (torchvision's sampling), area-resized to size.

    Two call forms, as the two FFCVs spell it: FFCV 1.0's
    ``RandomResizedCrop(scale, ratio, size)``, and FFCV-SSL's
    ``RandomResizedCrop(output_size, scale=(0.08, 1.0), ratio=(3/4, 4/3))``.
    Either works anywhere: first in a pipeline it is the decoder
    (``RandomResizedCropRGBImageDecoder``, which decodes only the crop's
    pixels), later it crops decoded images.

    seed pairs it with a LabelRandomResizedCrop; second_seed (FFCV-SSL's
    non-overlapping crops, with a seed) names the seed of another view's
    crop: this crop is drawn beside that one, never overlapping it (see
    the views guide).
    """

    def __init__(self, *args, seed=None, second_seed=None, **kwargs):
        super().__init__()
        self.seed, self.second_seed = _seed_arg(seed), _seed_arg(second_seed)
        if len(args) == 3 or "size" in kwargs:  # FFCV 1.0: (scale, ratio, size)
            names = ("scale", "ratio", "size")
            a = dict(zip(names, args), **kwargs)
            if set(a) != set(names) or len(args) > 3:
                raise TypeError(f"RandomResizedCrop(scale, ratio, size) got {sorted(a)}")
            scale, ratio, size = a["scale"], a["ratio"], a["size"]
        else:  # FFCV-SSL: (output_size, scale, ratio)
            names = ("output_size", "scale", "ratio")
            a = dict(zip(names, args), **kwargs)
            if "output_size" not in a or not set(a) <= set(names) or len(args) > 3:
                raise TypeError(f"RandomResizedCrop(output_size, scale=..., ratio=...) got {sorted(a)}")
            size, scale, ratio = a["output_size"], a.get("scale", (0.08, 1.0)), a.get("ratio", (3 / 4, 4 / 3))
        self.scale, self.ratio = (float(scale[0]), float(scale[1])), (float(ratio[0]), float(ratio[1]))
        self.size = (int(size), int(size)) if np.isscalar(size) else (int(size[0]), int(size[1]))
        self._check()

    @property
    def output_size(self):
        """FFCV-SSL's name for size (its training script sets it each epoch)."""
        return self.size

    @output_size.setter
    def output_size(self, value):
        size = (int(value), int(value)) if np.isscalar(value) else (int(value[0]), int(value[1]))
        _check_spec(self, dict(self._spec(), size=list(size)))
        self.size = size
        for d in self.__dict__.get("_decoders", ()):
            d.output_size = self.size

    def _as_decoder(self):
        """The decoder it becomes first in a loader's pipeline; it follows
        later changes of output_size."""
        from ..fields.rgb_image import RandomResizedCropRGBImageDecoder
        d = RandomResizedCropRGBImageDecoder(self.size, self.scale, self.ratio, seed=self.seed,
                                             second_seed=self.second_seed)
        self.__dict__.setdefault("_decoders", weakref.WeakSet()).add(d)
        return d

    def declare_state_and_memory(self, previous_state):
        return replace_state(previous_state, shape=(*self.size, previous_state.shape[2])), None

    def _spec(self):
        spec = _seeded({"op": "rrc", "size": list(self.size), "scale": list(self.scale), "ratio": list(self.ratio)},
                       self.seed)
        if self.second_seed is not None:
            spec["second_seed"] = self.second_seed
        return spec
