"""The fit cost models: predicted CPU seconds and peak memory of a Lab fit from its settings alone (no Streamlit).

Each algorithm of the registry (distviz.ui.algorithms) holds one of these models with its own coefficients; the
fit governor (distviz.ui.jobs.check_budget / check_memory) holds a fit to the predictions before it starts and
to its measured CPU time while it runs.  The coefficients were fitted to timed fits on one machine;
`machine_speed` scales them to this one.  scripts/calibrate_costs.py prints predicted against measured CPU.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .fits import FitConfig

#: Output coordinates a tree predicts per row for each family (categorical: K - 1; mvn with P = 2: 2 + 3).
OUTPUT_DIM = {"poisson": 1, "bernoulli": 1, "exponential": 1, "normal": 2, "gamma": 2, "mvn": 5}
#: CPU seconds of `reference_work` on the machine the coefficients were timed on (best of 3, the same load).
REFERENCE_CPU = 0.075
#: seconds after which machine_speed() times its workload again (keeping the least: contention only slows it)
SPEED_REFRESH_S = 600.0
_SPEED: list[float] = []      # [speed, monotonic time of the last timing]
_SPEED_LOCK = threading.Lock()   # one timing at a time: the sessions that ask meanwhile wait for its answer


def reference_work() -> float:
    """CPU seconds of a fixed small workload like a fit's (a depth-6 tree on 60,000 rows x 10 outputs through the
    numba kernels, then numpy exponentials and a batched matrix product), best of 3 after one warm-up."""
    from distviz.trees import HistTree

    rng = np.random.default_rng(0)
    X, Y = rng.standard_normal((60_000, 5)), rng.standard_normal((60_000, 10))
    A = rng.standard_normal((1_500, 60, 60))
    best = np.inf
    for i in range(4):
        t0 = time.process_time()
        HistTree(max_depth=6).fit(X, Y)
        np.exp(-np.abs(X), out=np.empty_like(X))
        np.matmul(A, A)
        if i:
            best = min(best, time.process_time() - t0)
    return float(best)


def machine_speed() -> float:
    """How much slower (> 1) or faster (< 1) this machine runs a fit's kind of work than the one the cost model was
    timed on: `reference_work` over `REFERENCE_CPU`, clamped to [0.5, 4].

    Timed at the first call and again after `SPEED_REFRESH_S`, keeping the least value seen: a timing taken while
    other fits share the cores runs slow, and one such timing must not inflate every later prediction.  Callers
    that ask while it is timed wait for that timing (a class arriving at once times it once, not once each).
    """
    with _SPEED_LOCK:
        if not _SPEED or time.monotonic() - _SPEED[1] > SPEED_REFRESH_S:
            speed = float(np.clip(reference_work() / REFERENCE_CPU, 0.5, 4.0))
            _SPEED[:] = [min(speed, _SPEED[0]) if _SPEED else speed, time.monotonic()]
        return _SPEED[0]


def speed_known() -> bool:
    """Whether this server has timed `machine_speed` yet (a later timing, every `SPEED_REFRESH_S`, takes a fraction
    of a second).  The first timing after a server starts waits for the numba kernels its tree fit uses; after an
    installation, with no numba cache yet, that is their compilation, which the pages
    say while they wait (distviz.ui.lab.fit_model)."""
    return bool(_SPEED)


def rows_phrase(cfg: "FitConfig") -> str:
    """'the rows' (of the upload, when `cfg` fits one): the knob every cost model names first."""
    return "the rows" if cfg.dataset != "upload" else "the rows of the upload"


def output_dim(cfg: "FitConfig") -> int:
    """Coordinates a tree of a boosting law or NGBoost predicts per row on `cfg`'s family (`OUTPUT_DIM`)."""
    return OUTPUT_DIM.get(cfg.family, max(int(cfg.K) - 1, 1))


@dataclass(frozen=True)
class LawCost:
    """Cost of a boosting law or NGBoost: CPU seconds per round c0 + m D (c1 p depth + c2 + extra) + c3 m p^2 depth,
    with m = 0.8 n training rows (20% held out) and D outputs: the histograms of D gradient columns, the law's
    per-row terms, the split scans.

    Fitted (relative error, the Lab's widest uploads weighted 3x) to 34 timed fits at (n, p, depth) in
    {(5000, 5, 6), (2000, 1, 3)} over the laws x families and 9 at n = 20000, p = 50 and 200, depth 6 (uploads with
    many columns: the only law fits that reach the budget).

    Parameters
    ----------
    coef : tuple of float
        (c0, c1, c2, c3).
    extra : tuple of (str, float)
        (family, extra CPU seconds per training row and round): laws with costlier special functions there.
    """

    coef: tuple[float, float, float, float]
    extra: tuple[tuple[str, float], ...] = ()

    def seconds(self, cfg: "FitConfig", n: int, p: int) -> float:
        """Predicted CPU seconds of the whole fit `cfg` on n rows and p features, on the calibration machine."""
        R, depth = max(int(cfg.n_estimators), 1), max(int(cfg.max_depth), 1)
        c0, c1, c2, c3 = self.coef
        m, D = 0.8 * n, output_dim(cfg)
        extra = dict(self.extra).get(cfg.family, 0.0)
        return R * (c0 + m * (extra + D * (c1 * p * depth + c2) + c3 * p * p * depth))

    def words(self, cfg: "FitConfig", n: int, p: int) -> float:
        """Peak 8-byte words beyond the data: iterates and targets, and about n D words each round keeps."""
        D = output_dim(cfg)
        return 30.0 * n * D + 1.2 * n * D * max(int(cfg.n_estimators), 1)

    def knobs(self, cfg: "FitConfig") -> str:
        """The settings a user lowers to make the fit cheaper."""
        return f"{rows_phrase(cfg)}, the boosting rounds or the tree depth"


@dataclass(frozen=True)
class WGCost:
    """Cost of WGBoost: CPU seconds per round sum_j c_j f_j with features
    f = (1, n N d p depth, n N^2 d, n N d, [categorical] n N d, [poisson] n N d, n N^3 d, n N^2 d^2):
    the tree on N d outputs, the kernel sums over particle pairs, the per-particle target terms (the categorical
    and Poisson targets' special functions cost more), NKA's kernel products and (N d) x (N d) solves per row.

    Non-negative least squares on the relative error of 64 timed fits: normal, Poisson and categorical targets,
    (n, p, depth, N) in {(5000, 5, 6, 30), (5000, 5, 6, 10), (2000, 1, 3, 30), (1000, 2, 4, 20)}, per round =
    CPU of a fit of 1 + k rounds minus that of 1 round (one BLAS thread, OMP_WAIT_POLICY=PASSIVE as the app runs).
    `scale` is a method's correction, timed on 2026-11-28 on an AMD EPYC whose numpy has AVX-512 kernels: there
    WGBoost's rounds (numpy's exp over particle pairs) ran 1.2-1.8x faster against `reference_work` than on the
    machine the coefficients were fitted on; scale = 1 / the geometric mean of predicted / measured CPU per round
    over the method's three targets in tests/test_fit_deadline.py (quiet machine).

    Parameters
    ----------
    coef : tuple of float
        (c_1, ..., c_8).
    scale : float
        Factor on the whole model (see above).
    blocked_solves : bool
        Whether the method holds NKA's blocked (N d) x (N d) solves.
    cheaper : str
        A cheaper choice to name among the knobs ('' for none).
    """

    coef: tuple[float, ...]
    scale: float = 1.0
    blocked_solves: bool = False
    cheaper: str = ""

    def round_seconds(self, n: int, n_particles: int, d: int, p: int, depth: int, family: str = "normal") -> float:
        """Predicted CPU seconds of one round on the machine `scale` was timed on: n rows, N particles of dimension
        d, p features, trees of depth `depth`."""
        N = max(int(n_particles), 1)
        cat, poi = float(family == "categorical"), float(family == "poisson")
        f = (1.0, n * N * d * p * depth, n * N * N * d, n * N * d, cat * n * N * d, poi * n * N * d, n * N ** 3 * d,
             n * N * N * d * d)
        return self.scale * float(sum(ci * fi for ci, fi in zip(self.coef, f)))

    def seconds(self, cfg: "FitConfig", n: int, p: int) -> float:
        """Predicted CPU seconds of the whole fit `cfg` on n rows and p features, on the machine `scale` was timed on."""
        R, depth = max(int(cfg.n_estimators), 1), max(int(cfg.max_depth), 1)
        return R * self.round_seconds(n, int(cfg.n_particles), particle_dim(cfg), p, depth, cfg.family)

    def words(self, cfg: "FitConfig", n: int, p: int) -> float:
        """Peak 8-byte words beyond the data: particles, gradients, targets and pair kernels, NKA's blocked solves
        (bounded by `distviz.boosting.wg_kernels.NKA_BLOCK_BYTES`) and the trace's displayed particles."""
        d, N = particle_dim(cfg), max(int(cfg.n_particles), 1)
        words = 8.0 * n * N * d + 0.5 * n * N * N
        if self.blocked_solves:
            from distviz.boosting.wg_kernels import NKA_BLOCK_BYTES
            words += 0.25 * NKA_BLOCK_BYTES / 8
        return words + 120.0 * N * d * max(int(cfg.n_estimators), 1)

    def knobs(self, cfg: "FitConfig") -> str:
        """The settings a user lowers to make the fit cheaper."""
        return f"the particles per input, {rows_phrase(cfg)} or the boosting rounds" + (
            f", or choose {self.cheaper}" if self.cheaper else "")


def particle_dim(cfg: "FitConfig") -> int:
    """Particle dimension of WGBoost on `cfg`'s family (the synthetic categorical data have 3 classes)."""
    if cfg.family == "categorical":
        return 2 if cfg.dataset == "synthetic" else max(int(cfg.K) - 1, 1)
    return {"normal": 2, "poisson": 1}.get(cfg.family, 1)


@dataclass(frozen=True)
class GPCost:
    """Cost of a sparse GP (20 inducing points, at most 200 L-BFGS steps): 0.15 + c n (1 + 0.2 (p - 1)) CPU seconds
    in all, c by family from fits at n = 5000, p = 5 (scripts/calibrate_costs.py --only sgp).

    Parameters
    ----------
    per_row : tuple of (str, float)
        (family, c) pairs.
    default : float
        c for a family not timed.
    """

    per_row: tuple[tuple[str, float], ...]
    default: float = 1.15e-3

    def seconds(self, cfg: "FitConfig", n: int, p: int) -> float:
        """Predicted CPU seconds of the whole fit `cfg` on n rows and p features, on the calibration machine."""
        return 0.15 + dict(self.per_row).get(cfg.family, self.default) * n * (1 + 0.2 * (p - 1))

    def words(self, cfg: "FitConfig", n: int, p: int) -> float:
        """Peak 8-byte words beyond the data: the n x m kernel blocks of 20 inducing points."""
        return 10.0 * n * 20 + 20.0 * n

    def knobs(self, cfg: "FitConfig") -> str:
        """The settings a user lowers to make the fit cheaper."""
        return rows_phrase(cfg)
