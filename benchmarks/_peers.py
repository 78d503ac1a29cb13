"""Like-with-like peer timing: explicit equal thread counts, interleaved repeats, load average printed.

Every benchmark that times a multi-threaded peer (LightGBM, scikit-learn, ngboost) goes through this
module so that both sides run

* at the same explicit thread count (1, and the machine's cores): numba's pool through
  ``numba.set_num_threads``, BLAS / OpenMP pools through ``threadpoolctl``, and the peer's own
  ``num_threads`` argument, which the caller passes from ``threads``;
* in the same process, **interleaved** (case A, case B, case A, case B, ...), best of several, so a
  burst of load on a shared machine hits both sides alike;
* with the 1-minute load average printed before and after; a run during which the load exceeded
  half the cores is labelled "UNDER LOAD" in its output, because an OpenMP peer whose threads spin
  against other work can slow ten-fold and the ratio then measures oversubscription, not the code.
"""

from __future__ import annotations

import contextlib
import os
import time
from typing import Callable

import numpy as np

#: LightGBM's Poisson objective clamps each Newton step: poisson_max_delta_step (0.7 by default) multiplies the
#: hessian by exp(max_delta_step), about half the rate.  This value (LightGBM wants it > 0) turns the clamp off, for
#: the NLL comparison with ours, whose step is unclamped.
LGB_POISSON_NO_CLAMP = 1e-6


def cores() -> int:
    """Number of CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - non-Linux
        return os.cpu_count() or 1


def thread_counts() -> list[int]:
    """The thread counts every peer comparison is run at: 1 and the machine's cores."""
    return sorted({1, cores()})


def load_average() -> float:
    """The 1-minute load average of the machine."""
    return os.getloadavg()[0]


@contextlib.contextmanager
def threads(k: int):
    """Run numba kernels and BLAS / OpenMP pools of this process with exactly `k` threads."""
    import numba
    from threadpoolctl import threadpool_limits

    old = numba.get_num_threads()
    numba.set_num_threads(min(int(k), numba.config.NUMBA_NUM_THREADS))
    try:
        with threadpool_limits(limits=int(k)):
            yield int(k)
    finally:
        numba.set_num_threads(old)


def interleaved_best(cases: dict[str, Callable[[], object]], repeats: int = 3) -> tuple[dict[str, float], dict]:
    """Best wall time (s) of each case over `repeats` interleaved rounds (A, B, A, B, ...) and each case's last result."""
    best = {name: np.inf for name in cases}
    last: dict = {}
    for _ in range(int(repeats)):
        for name, fn in cases.items():
            t0 = time.perf_counter()
            last[name] = fn()
            best[name] = min(best[name], time.perf_counter() - t0)
    return best, last


def _others_cpu_seconds() -> float:
    """CPU seconds used so far by every process on the machine except this one and its descendants (from /proc).

    A benchmark's own worker processes (a Dask LocalCluster's workers, spawned by their nannies) are
    part of the benchmark, not other load; 0 where /proc is unavailable.
    """
    me = os.getpid()
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    try:
        pids = [int(d) for d in os.listdir("/proc") if d.isdigit()]
    except OSError:
        return 0.0
    parent, cpu = {}, {}
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            parent[pid] = int(fields[1])
            cpu[pid] = (int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])) / tick
        except (OSError, IndexError, ValueError):
            continue

    def ours(pid: int) -> bool:
        for _ in range(64):  # walk up the process tree to this benchmark (or to init)
            if pid == me:
                return True
            pid = parent.get(pid, 0)
            if pid <= 1:
                return False
        return False

    return sum(c for pid, c in cpu.items() if not ours(pid))


class LoadWatch:
    """Prints the load before and after a benchmark section and says whether it ran under load.

    Two figures: the machine's 1-minute load average (before: other work only; after: includes this
    benchmark's own threads) and the mean number of cores that *other* processes kept busy during the
    section (their CPU seconds from /proc over its wall time).  The section is labelled "UNDER LOAD"
    when the load before it or the other processes' share exceeded half the cores.
    """

    def __init__(self, title: str):
        self.title = title
        self.before = self.after = self.others = 0.0

    def __enter__(self) -> "LoadWatch":
        self.before = load_average()
        self._t0, self._c0 = time.perf_counter(), _others_cpu_seconds()
        print(f"\n== {self.title}")
        print(f"   load average before: {self.before:.2f} ({cores()} cores)")
        return self

    @property
    def under_load(self) -> bool:
        """True when the load before the section, or other processes during it, exceeded half the cores."""
        return max(self.before, self.others) > 0.5 * cores()

    def label(self) -> str:
        """The tag printed next to ratios: empty on a quiet machine, 'UNDER LOAD' otherwise."""
        return "  [UNDER LOAD: not a result]" if self.under_load else ""

    def __exit__(self, *exc) -> None:
        wall = max(time.perf_counter() - self._t0, 1e-9)
        self.others = max(_others_cpu_seconds() - self._c0, 0.0) / wall
        self.after = load_average()
        verdict = ("UNDER LOAD (> 0.5 x cores): the ratios of this section are not results; re-run on a quiet machine"
                   if self.under_load else "quiet machine")
        print(f"   load average after: {self.after:.2f} (includes this benchmark); other processes used "
              f"{self.others:.2f} cores meanwhile -> {verdict}")
