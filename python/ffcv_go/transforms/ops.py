"""Tensor-level transforms: ToTensor, ToDevice, ToTorchImage, Convert, View, Squeeze, ModuleWrapper."""
import numpy as np
import torch

from ._base import Transform, numpy_dtype, replace_state, torch_dtype
from .photometric import _pixel_mover


class ToTensor(Transform):
    """Marks the end of the numpy (jit) part; batches are torch tensors already."""

    _marker = _light = _same_pixels = True

    def declare_state_and_memory(self, previous_state):
        dtype = previous_state.dtype
        return replace_state(previous_state, jit_mode=False, dtype=torch_dtype(dtype)), None

    def _apply(self, x, ctx):
        return x if isinstance(x, torch.Tensor) else torch.from_numpy(np.asarray(x))


def _check_device(device):
    """Refuses a CUDA device this process cannot use, in a sentence: torch
    itself fails only at the first copy ("invalid argument to
    exchangeDevice")."""
    d = torch.device(device)
    if d.type != "cuda":
        return
    if not torch.cuda.is_available():
        raise ValueError(f"device {str(device)!r}: CUDA is not available here")
    n = torch.cuda.device_count()
    if d.index is not None and d.index >= n:
        raise ValueError(f"device {str(device)!r}: this machine has {n} CUDA device{'s' if n != 1 else ''} "
                         f"(cuda:0{f' to cuda:{n - 1}' if n > 1 else ''})")


class ToDevice(Transform):
    """Moves the batch to device. ``ToDevice('cuda')`` means the device that
    is current on the training thread when the epoch starts (``iter()``), as
    ``torch.cuda.set_device`` left it: under torchrun, Composer or Lightning,
    each rank's own GPU. With non_blocking the copy comes from page-locked
    batch memory on a side stream and overlaps compute; the training thread's
    stream waits for it when it receives the batch."""

    @property
    def _marker(self):
        # A copy to the CPU moves nothing: a layout marker, like ToTensor.
        return self.device.type == "cpu"

    _light = _marker
    _same_pixels = True

    def __init__(self, device, non_blocking=True):
        super().__init__()
        self.device = torch.device(device)
        self.non_blocking = non_blocking
        self._target = None  # the device resolved on the training thread

    def declare_state_and_memory(self, previous_state):
        # Called on the training thread at iter(): CUDA's current device is
        # per thread, and the loader's stage thread has none of its own.
        self._target = self.device
        if self.device.type == "cuda" and self.device.index is None and torch.cuda.is_available():
            self._target = torch.device("cuda", torch.cuda.current_device())
        return replace_state(previous_state, jit_mode=False, device=self._target,
                             dtype=torch_dtype(previous_state.dtype)), None

    def _apply(self, x, ctx):
        target = self._target or self.device
        if x.device == target:
            return x
        if self.non_blocking and target.type == "cuda" and x.device.type == "cpu" and ctx is not None \
                and ctx.keep is not None:
            if ctx.pin is not None:
                ctx.pin(x)  # page-locks the batch slot under x, once
            ctx.keep.append(x)  # x lives until the copy is done
            return x.to(target, non_blocking=True)
        return x.to(target)


class ToTorchImage(Transform):
    """(B, H, W, C) -> (B, C, H, W); a channels_last view by default."""

    _marker = _light = _chw = _same_pixels = True

    def __init__(self, channels_last=True, convert_back_int16=True):
        super().__init__()
        self.channels_last = channels_last
        self.convert_int16 = convert_back_int16  # FFCV's attribute name
        self.enable_int16conv = False  # set by declare_state_and_memory, as in FFCV

    @property
    def convert_back_int16(self):
        return self.convert_int16

    @convert_back_int16.setter
    def convert_back_int16(self, value):
        self.convert_int16 = value

    def declare_state_and_memory(self, previous_state):
        shape = previous_state.shape
        if shape is None or len(shape) != 3:
            raise ValueError(f"ToTorchImage needs (H, W, C) samples, got shape {shape}")
        dtype = torch_dtype(previous_state.dtype)
        self.enable_int16conv = bool(self.convert_int16 and dtype == torch.int16)
        if self.enable_int16conv:
            dtype = torch.float16
        return replace_state(previous_state, jit_mode=False, shape=(shape[2], shape[0], shape[1]), dtype=dtype), None

    def _apply(self, x, ctx):
        if self.convert_int16 and x.dtype == torch.int16:
            x = x.view(torch.float16)
        x = x.permute(0, 3, 1, 2)
        if not self.channels_last:
            x = x.contiguous()
        return x


class Convert(Transform):
    """Casts the batch to target_dtype (numpy or torch dtype)."""

    _light = _same_pixels = True

    def __init__(self, target_dtype):
        super().__init__()
        self.target_dtype = target_dtype

    def declare_state_and_memory(self, previous_state):
        return replace_state(previous_state, dtype=self.target_dtype), None

    def _apply(self, x, ctx):
        return x.to(torch_dtype(self.target_dtype))


class View(Convert):
    """Reinterprets the batch's bytes as target_dtype."""

    def _apply(self, x, ctx):
        return x.view(torch_dtype(self.target_dtype))

    def _keeps_pixels(self, state):
        # Another item size changes the last dimension: the pixels shift.
        try:
            return np.dtype(numpy_dtype(state.dtype)).itemsize == np.dtype(numpy_dtype(self.target_dtype)).itemsize
        except (TypeError, ValueError):
            return False


class Squeeze(Transform):
    """Removes size-1 dimensions (all of them, or the given ones)."""

    _light = _same_pixels = True

    def __init__(self, *dims):
        super().__init__()
        self.dims = dims

    def declare_state_and_memory(self, previous_state):
        shape = previous_state.shape
        if shape is not None:
            full = (None,) + tuple(shape)
            drop = set(d % len(full) for d in self.dims) if self.dims else {i for i, s in enumerate(full) if s == 1}
            shape = tuple(s for i, s in enumerate(full) if i not in drop or s != 1)[1:]
        return replace_state(previous_state, shape=shape), None

    def _apply(self, x, ctx):
        if not self.dims:
            return x.squeeze()
        for d in sorted((d % x.dim() for d in self.dims), reverse=True):
            x = x.squeeze(d)
        return x


class ModuleWrapper(Transform):
    """Runs a torch.nn.Module (or any callable) on the batch tensor."""

    def __init__(self, module):
        super().__init__()
        self.module = module

    def declare_state_and_memory(self, previous_state):
        return replace_state(previous_state, jit_mode=False), None

    def _apply(self, x, ctx):
        return self.module(x)

    def _keeps_pixels(self, state):
        return _pixel_mover(self.module) is None
