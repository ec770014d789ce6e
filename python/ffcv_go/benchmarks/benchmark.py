"""Benchmark: one timed configuration of a suite (FFCV's ffcv.benchmarks.benchmark)."""
from abc import ABCMeta, abstractmethod
from contextlib import AbstractContextManager


class Benchmark(AbstractContextManager, metaclass=ABCMeta):
    """Set up in __enter__, time run(), tear down in __exit__."""

    def __init__(self, **kwargs):
        pass

    def __exit__(self, *exc):
        return None

    @abstractmethod
    def run(self):
        """One timed run of the benchmark (called warm_up + runs times)."""
        raise NotImplementedError
