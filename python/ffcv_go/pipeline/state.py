"""State: what flows between pipeline stages (FFCV 1.0's ffcv.pipeline.state)."""
from dataclasses import dataclass
from typing import Any, Optional, Tuple

import numpy as np
import torch


@dataclass
class State:
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
    return State(jit_mode=True, device=torch.device("cpu"), shape=None, dtype=np.dtype("uint8"))
