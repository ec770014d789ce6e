"""Pipelines: per-field chains of operations (FFCV 1.0's ffcv.pipeline)."""
from dataclasses import dataclass, field as _field
from typing import List, Optional

from .allocation_query import AllocationQuery
from .compiler import Compiler
from .operation import Operation
from .state import State


@dataclass
class PipelineSpec:
    """An extra loader output computed from an existing field."""
    source: str
    decoder: Optional[Operation] = None
    transforms: List = _field(default_factory=list)

    def __init__(self, source, decoder=None, transforms=None):
        if not isinstance(source, str):
            raise TypeError("PipelineSpec source must be a field name")
        self.source = source
        self.decoder = decoder
        self.transforms = list(transforms or [])


__all__ = ["PipelineSpec", "Operation", "AllocationQuery", "State", "Compiler"]
