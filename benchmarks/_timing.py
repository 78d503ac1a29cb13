"""Timing helper shared by the benchmark scripts."""

import time

import numpy as np


def best_of(fn, repeats=3):
    """Least wall time of `repeats` calls of fn() and its last return value."""
    best, out = np.inf, None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def best_cpu_of(fn, repeats=3):
    """Least CPU time of this process (all threads) over `repeats` calls of fn(), in seconds."""
    best = np.inf
    for _ in range(repeats):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best
