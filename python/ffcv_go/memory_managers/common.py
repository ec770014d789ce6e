"""Types shared by the memory managers (FFCV's ffcv.memory_managers.common)."""
from typing import Sequence

BATCHES_TYPE = Sequence[Sequence[int]]
