"""Pipelines: per-field chains of operations (FFCV 1.0's ffcv.pipeline)."""
from .allocation_query import AllocationQuery
from .compiler import Compiler
from .operation import Operation
from .pipeline import Pipeline
from .pipeline_spec import PipelineSpec
from .state import State


__all__ = ["Pipeline", "PipelineSpec", "Operation", "AllocationQuery", "State", "Compiler"]
