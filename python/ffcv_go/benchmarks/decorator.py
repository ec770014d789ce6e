"""@benchmark(arg_values) registers a Benchmark class for every combination
of its arguments; run_all times them (FFCV's ffcv.benchmarks.decorator)."""
import pathlib
from collections import defaultdict
from itertools import product
from time import perf_counter

import numpy as np

from .benchmark import Benchmark  # noqa: F401  (FFCV's module path)

ALL_SUITES = {}


class FakeSink:
    """A file-like object that discards what is written."""

    def write(self, *args):
        """Discards its arguments."""

    def writelines(self, *args):
        """Discards its arguments."""

    def flush(self, *args):
        """Does nothing."""

    def close(self, *args):
        """Does nothing."""


def benchmark(arg_values={}):
    """Registers the decorated Benchmark class with one run per combination
    of arg_values (name -> list of values)."""
    runs = [dict(zip(arg_values.keys(), combo)) for combo in product(*arg_values.values())]

    def register(cls):
        ALL_SUITES[cls.__name__] = (cls, runs)
        return cls
    return register


def run_all(runs=3, warm_up=1, pattern="*"):
    """Times every registered suite whose name matches pattern: warm_up
    untimed runs, then the median of runs. Returns {suite: [args + 'time' +
    'throughput']}; throughput is n / time when the arguments have an 'n'."""
    results = defaultdict(list)
    for name, (cls, arg_list) in ALL_SUITES.items():
        if not pathlib.PurePath(name).match(pattern):
            continue
        for args in arg_list:
            with cls(**args) as bench:
                for _ in range(warm_up):
                    bench.run()
                timings = []
                for _ in range(runs):
                    start = perf_counter()
                    bench.run()
                    timings.append(perf_counter() - start)
            median = float(np.median(timings))
            entry = {**args, "time": median}
            if "n" in args and median > 0:
                rate = args["n"] / median
                entry["throughput"] = (f"{round(rate, 1)} it/sec" if rate >= 1
                                       else f"{round(1 / rate, 1)} sec/it")
            results[name].append(entry)
    return results
