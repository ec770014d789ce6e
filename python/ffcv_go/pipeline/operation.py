"""Operation: a stage of a field's pipeline (FFCV 1.0's ffcv.pipeline.operation).

Built-in operations carry a ``_go_spec()`` and run fused in Go, per sample.
Any other Operation subclass runs in Python on whole batches through its
``generate_code()``, exactly as FFCV users write them.
"""
from abc import ABC, abstractmethod
from typing import Callable, Optional, Tuple

from .allocation_query import AllocationQuery
from .state import State

__all__ = ["Operation", "AllocationQuery"]


class Operation(ABC):

    def __init__(self):
        self.metadata = None
        self.memory_read = None

    def accept_field(self, field):
        self.field = field

    def accept_globals(self, metadata, memory_read):
        self.metadata = metadata
        self.memory_read = memory_read

    @abstractmethod
    def generate_code(self) -> Callable:
        raise NotImplementedError

    @abstractmethod
    def declare_state_and_memory(self, previous_state: State) -> Tuple[State, Optional[AllocationQuery]]:
        raise NotImplementedError

    def declare_shared_memory(self, previous_state: State) -> Optional[AllocationQuery]:
        """Memory for state shared by the samples of a batch (FFCV protocol);
        passed to generate_code()'s function as its last argument."""
        return None

    def generate_code_for_shared_state(self) -> Optional[Callable]:
        """A function that fills the shared memory before each batch, or None."""
        return None

    # Built-in operations return {"op": name, ...params} for the Go program;
    # None means the operation runs in Python.
    def _go_spec(self, previous_state: State):
        return None
