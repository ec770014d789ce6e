"""AllocationQuery: the memory an operation asks for (per sample shape)."""
from dataclasses import dataclass
from typing import Any, Optional, Tuple

import torch


@dataclass(frozen=True)
class AllocationQuery:
    """Memory an operation asks for: one buffer of ``shape`` and ``dtype``
    per sample of a batch, on ``device`` (None: the CPU). The loader
    allocates it, batch dimension first, and passes it as ``dst``."""
    shape: Tuple[int, ...]
    dtype: Any
    device: Optional[torch.device] = None
