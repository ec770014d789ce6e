"""AllocationQuery: the memory an operation asks for (per sample shape)."""
from dataclasses import dataclass
from typing import Any, Optional, Tuple

import torch


@dataclass(frozen=True)
class AllocationQuery:
    shape: Tuple[int, ...]
    dtype: Any
    device: Optional[torch.device] = None
