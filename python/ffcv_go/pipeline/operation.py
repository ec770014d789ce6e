"""Operation: a stage of a field's pipeline (FFCV 1.0's ffcv.pipeline.operation).

Built-in operations carry a ``_go_spec()`` and run fused in Go, per sample.
Any other Operation subclass runs in Python on whole batches through its
``generate_code()``, exactly as FFCV users write them.
"""
from abc import ABC, abstractmethod
from typing import Callable, Optional, Tuple

import numpy as np

from .allocation_query import AllocationQuery
from .state import State

__all__ = ["Operation", "AllocationQuery"]


class Operation(ABC):
    """A stage of a field's pipeline: a decoder or a transform (FFCV's protocol).

    ffcv_go's built-in operations run in Go. Subclass Operation to write your
    own: the Loader asks it for its output state and memory each epoch
    (``declare_state_and_memory``), then runs the function ``generate_code``
    returns on whole batches, in Python (numba-compiled when numba is
    installed and the state is in jit mode), on a loader thread ahead of
    training. See the custom operations guide.
    """

    def __init__(self):
        self.metadata = None
        self.memory_read = None

    def accept_field(self, field):
        """Receives the Field whose pipeline this operation is in (kept as
        ``self.field``)."""
        self.field = field

    def accept_globals(self, metadata, memory_read):
        """Receives the field's metadata column (one row per sample) and
        ``memory_read(address, storage_state)``, which returns the heap
        allocation starting at ``address`` as a uint8 array: what a decoder
        written in Python needs to find a sample's bytes."""
        self.metadata = metadata
        self.memory_read = memory_read

    @abstractmethod
    def generate_code(self) -> Callable:
        """The function that runs this operation on a batch.

        A decoder's is ``f(batch_indices, destination, metadata,
        storage_state)``; a transform's is ``f(inp, dst)``, plus the batch's
        sample ids as a third argument when the function has the attribute
        ``with_indices = True``. ``dst`` is the memory the operation's
        AllocationQuery asked for (None if none), and the function returns its
        output. Loop over samples with ``Compiler.get_iterator()``; set
        ``is_parallel = True`` on the function to let numba run that loop in
        parallel.
        """
        raise NotImplementedError

    @abstractmethod
    def declare_state_and_memory(self, previous_state: State) -> Tuple[State, Optional[AllocationQuery]]:
        """The state after this operation, and the memory it needs.

        Called again before every epoch, so an attribute changed between
        epochs (a decoder's ``output_size``) takes effect at the next one.

        Args:
            previous_state: the state of the previous operation's output
                (``initial_state()`` for a decoder).

        Returns:
            ``(state, query)``: the output's State, and an AllocationQuery
            for the per-sample output buffer (or a list of them, or None).
        """
        raise NotImplementedError

    def declare_shared_memory(self, previous_state: State) -> Optional[AllocationQuery]:
        """Memory for state shared by the samples of a batch (FFCV protocol);
        passed to generate_code()'s function as its last argument."""
        return None

    def generate_code_for_shared_state(self) -> Optional[Callable]:
        """A function that fills the shared memory before each batch, or None."""
        return None

    # What the loader's planner asks of an operation; this library's decoders
    # and transforms set them, an operation of the user's keeps these defaults.
    _builtin = False  # a decoder or transform of this library: reads no memory itself
    _decoder = False  # a decoder of this library
    _transform = False  # a transform of this library: Go runs it per sample, or _apply on batches
    _marker = False  # a layout marker, moved past the built-in operations after it
    _chw = False  # turns (H, W, C) samples into (C, H, W) views, which Go operations cannot follow
    _light = False  # a view or cast: run on the training thread, not worth a thread of its own
    _same_pixels = False  # run in Python, leaves every pixel where it is (see _keeps_pixels)

    # Built-in operations return {"op": name, ...params} for the Go program;
    # None means the operation runs in Python.
    def _go_spec(self, previous_state: State):
        return None

    def _runs_in_python(self, state: State) -> bool:
        """Whether the operation runs in Python on batches in state, after
        the per-sample Go program: an operation of the user's always does."""
        return True

    def _keeps_pixels(self, state: State) -> bool:
        """Whether the operation, run in Python on batches in state, leaves
        every pixel where it is (changes values, dtype or memory layout only),
        so that targets following the image may pass it by. What cannot be
        told does not: an operation of the user's says so by being wrapped in
        ``ffcv_go.transforms.Photometric``."""
        return self._same_pixels


def _seed_arg(seed):
    """A built-in operation's seed argument, checked: None or an int in
    [0, 2**32). A seed replaces the operation's randomness key, which pairs
    an operation with the Label* transform given the same seed."""
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2 ** 32:
        raise ValueError(f"seed {seed!r} must be an integer in [0, 2**32)")
    return int(seed)


class _ArgumentError(ValueError):
    """A built-in operation's bad argument: ``"{operation}: {detail}"``,
    detail the Go core's message, which names the argument."""

    def __init__(self, operation, detail):
        super().__init__(f"{operation}: {detail}")
        self.detail = detail


def _check_spec(op, spec):
    """Checks a built-in operation's arguments, given as its Go spec, where
    every operation's arguments are checked: in the Go core
    (``ffcv_op_check``). A bad one raises ValueError naming op's class and
    the argument. Every built-in operation's constructor calls it, so a bad
    argument fails where it is written; Python only coerces the arguments'
    types and shapes into the spec."""
    from .. import _lib
    try:
        _lib.check_op(spec)
    except ValueError as e:
        raise _ArgumentError(type(op).__name__, str(e)) from None
