"""FFCV's micro-benchmark harness (ffcv.benchmarks): register Benchmark
classes with @benchmark, time them with run_all. ffcv_go's own comparisons
live in the repository's bench/ folder."""
from .benchmark import Benchmark
from .decorator import benchmark, run_all, ALL_SUITES

__all__ = ["Benchmark", "benchmark", "run_all", "ALL_SUITES"]
