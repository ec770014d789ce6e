"""State: what flows between pipeline stages (FFCV 1.0's ffcv.pipeline.state)."""
from dataclasses import dataclass
from typing import Any, Optional, Tuple

import numpy as np
import torch


@dataclass
class State:
    """What flows between two operations of a pipeline.

    Attributes:
        jit_mode: the data is a numpy array on the CPU that numba-compiled
            code may work on (a torch dtype or a non-CPU device then is an
            error).
        device: where the data is (``torch.device``).
        shape: the shape of one sample's data (no batch dimension).
        dtype: a numpy dtype in jit mode, else a numpy or torch dtype.
    """
    jit_mode: bool
    device: torch.device
    shape: Optional[Tuple[int, ...]]
    dtype: Any

    def __post_init__(self):
        if self.jit_mode and torch.device(self.device).type != "cpu":
            raise AssertionError("Can't be in JIT mode and on the GPU")
        if self.jit_mode and isinstance(self.dtype, torch.dtype):
            raise AssertionError("Can't allocate a torch tensor in JIT mode")


def initial_state():
    """The state a decoder starts from: jit mode, CPU, no shape, uint8."""
    return State(jit_mode=True, device=torch.device("cpu"), shape=None, dtype=np.dtype("uint8"))
