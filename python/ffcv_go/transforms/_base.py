"""Shared machinery of the built-in transforms."""

from .._dtypes import numpy_dtype, torch_dtype  # noqa: F401 - the transforms' dtype helpers
from ..pipeline.operation import Operation
from ..pipeline.state import State


class BatchContext:
    """What a Python-side stage knows about the batch it transforms."""

    def __init__(self, indices, seed, epoch, batch, stage, pin=None, keep=None, pin_memory=False):
        self.indices, self.seed, self.epoch, self.batch, self.stage = indices, seed, epoch, batch, stage
        # pin(tensor) page-locks the batch memory under tensor if it is
        # loader memory (before an asynchronous host-to-device copy).
        self.pin = pin
        # keep: where a GPU copy leaves its CPU source, alive until the copy is
        # done (None: no asynchronous copy here). pin_memory: whether buffers
        # made for the batch should be pinned (it goes on to a GPU).
        self.keep = keep
        self.pin_memory = pin_memory


class Transform(Operation):
    """A built-in transform: run in Go when ``_go_spec`` gives a spec; the
    tensor-level ones (ToTensor, ToDevice, View, ...) by ``_apply`` instead."""

    _builtin = _transform = True

    def generate_code(self):
        apply = self._apply

        def code(inp, dst):
            return apply(inp, None)
        return code

    def declare_state_and_memory(self, previous_state):
        return previous_state, None

    def _apply(self, x, ctx):
        raise NotImplementedError

    def _runs_in_python(self, state):
        """Whether ``_apply`` may run this op on a batch in state (where Go
        cannot): tensor-level ops always, Go ops never."""
        return type(self)._apply is not Transform._apply


def replace_state(state, **kw):
    d = dict(jit_mode=state.jit_mode, device=state.device, shape=state.shape, dtype=state.dtype)
    d.update(kw)
    return State(**d)
