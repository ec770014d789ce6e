"""PipelineSpec: an extra loader output (FFCV's ffcv.pipeline.pipeline_spec)."""
from typing import List, Optional, Union

from .operation import Operation


class PipelineSpec:
    """An output computed from a field (source: its name), or from the output
    of an operation of another pipeline (source: that Operation), followed by
    decoder (for a field) and transforms."""

    def __init__(self, source: Union[str, Operation], decoder: Optional[Operation] = None,
                 transforms: Optional[List] = None):
        if not isinstance(source, (str, Operation)):
            raise TypeError(f"PipelineSpec source must be a field name or an Operation, got {source!r}")
        if isinstance(source, Operation) and decoder is not None:
            raise ValueError("a PipelineSpec taking an operation's output cannot have a decoder")
        self.source = source
        self.decoder = decoder
        self.transforms = list(transforms or [])

    def __repr__(self):
        return f"PipelineSpec(source={self.source!r}, decoder={self.decoder!r}, transforms={self.transforms!r})"
