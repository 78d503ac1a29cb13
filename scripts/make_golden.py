"""Golden outputs of today's fits, pinned before the third-wave refactor (issue 26, deliverable 1).

Every case below fits one estimator on small fixed data (a seeded ``numpy.random.Generator``) and
records what a refactor must keep: the fitted trees (features, thresholds, missing-value directions,
children, leaf values, split gains), predictions on held-out rows (NaN rows included where the model
takes them) and the trace's NLL / entropy curves.  The groups are

* ``trees``: ``HistTree`` (variance criterion, weighted and unit weights, NaN, the Gain^ent record,
  the entropy criterion) and ``fit_many`` (independent and shared trees), on given targets;
* ``laws``: ``DistributionalBoosting`` with the five laws (mgd, ngd, gd, mgd_natural, ngd_mean) on the
  Poisson, Normal, Gamma, Bernoulli, Categorical (K=3) and MVN (P=2) families, weighted with NaN in X,
  and unweighted without NaN for mgd / ngd; an early-stopped fit and a fit on more rows than one
  row block of the fused Poisson pass;
* ``ngboost``: NGB, GB, IndepNGB and skGB (both backends);
* ``wgboost``: WGBoost SKA (shared and per-particle trees), FKA, NKA and Langevin;
* ``dask``: DistributionalBoosting and NGB fitted on a two-worker in-process dask cluster.

Each case runs at 1 and at 2 numba threads; the two must give the same bits (the code claims sums
whose order does not depend on the thread count), and the file holds one copy.

Usage (from the repository root)::

    .venv/bin/python scripts/make_golden.py              # (re)write tests/data/golden/<group>.npz
    .venv/bin/python scripts/make_golden.py --check      # compare today's fits with the files
    .venv/bin/python scripts/make_golden.py --perturb    # robustness of each case to last-bit exp / log

Regenerate the files only when a change of behaviour is intended, and say so in the commit.
``tests/test_golden.py`` recomputes every case and compares it with :func:`compare`.

Machine dependence: numpy computes float64 exp / log (and log1p, expm1, power, ...) with its own
vectorised kernels on CPUs with AVX-512 and with the C library elsewhere; the two differ in the last
bit for a few per cent of arguments, and OpenBLAS picks its kernels (so its summation order) per CPU.
``--perturb`` re-runs every case with those numpy functions, np.dot / matmul / einsum and np.linalg
returning a neighbouring float for a random 5 % of the elements (a proxy module assigned to the ``np``
of every loaded distviz module; the ``@`` operator and numba's kernels are not reached) and reports, per
case, which outputs changed and by how much.  From that run: integer outputs (tree structure, bins,
round counts) are compared exactly everywhere, and no case's tree structure moved; float outputs of
cases with tolerance 0 in :data:`CASES` (trees on given targets, scikit-learn's histogram trees) never reach
those functions and are compared bit for bit; the others to a relative and absolute 1e-12
(:data:`FLOAT_TOL`), since the last bits propagate into their leaf values, gains, NLLs and predictions.
The proxy does not reach numpy calls inside scikit-learn: its GradientBoostingRegressor (case ``skgb_gbr``)
sums with numpy's reductions, whose SIMD kernels numpy chooses per CPU (AVX2 or AVX-512 lanes sum in another
order: on an AVX-512 machine 51 of its 298 leaf values differ from the golden bits, written where numpy ran its
AVX2 kernels, by at most 4.4e-16, and ``NPY_DISABLE_CPU_FEATURES='X86_V4 AVX512_ICL'`` gives the golden bits
again), so that case is compared to :data:`FLOAT_TOL` too.  :data:`TOL_REASONS` names the one case that needs more.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
GOLDEN_DIR = ROOT / "tests" / "data" / "golden"
GROUPS = ("trees", "laws", "ngboost", "wgboost", "dask")

#: tolerance (relative and absolute) of the float outputs of cases that go through numpy's exp / log or BLAS:
#: their last bits differ between CPUs with and without AVX-512 (see the module docstring)
FLOAT_TOL = 1e-12

#: name -> (group, recorder, tol): tol 0.0 compares every float output bit for bit, else to rtol = atol = tol
CASES: dict = {}

#: cases with a tolerance other than FLOAT_TOL, and why
TOL_REASONS = {
    "mvn_gd_weighted_nan": "the raw-gradient law on the MVN family amplifies last-bit differences of BLAS "
                           "products and np.linalg (OpenBLAS picks its kernels per CPU) about 1e4-fold over five "
                           "rounds: with them perturbed, gains and leaf values move by up to 1e-11 relative",
}

FAMILIES = {"poisson": {}, "normal": {}, "gamma": {}, "bernoulli": {}, "categorical": {"K": 3}, "mvn": {"P": 2}}
LAWS = ("mgd", "ngd", "gd", "mgd_natural", "ngd_mean")


def _case(group, name, tol=FLOAT_TOL):
    def deco(fn):
        CASES[name] = (group, fn, tol)
        return fn
    return deco


# ---------------------------------------------------------------------------------------------- data
def features(n, p=4, seed=0, nan=0.0):
    """Continuous features (n, p), and NaN in feature 1 for a share `nan` of the rows."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    if nan:
        X[rng.uniform(size=n) < nan, 1] = np.nan
    return X


def family_y(family, X, seed):
    """Targets of `family` depending on X (NaN features read as 0)."""
    rng = np.random.default_rng(seed)
    Z = np.nan_to_num(X)
    n = X.shape[0]
    eta = 0.6 * Z[:, 0] - 0.5 * (Z[:, 1] > 0.2) + 0.3 * Z[:, 2] * Z[:, 3]
    if family == "poisson":
        return rng.poisson(np.exp(eta)).astype(float)
    if family == "normal":
        return eta + np.exp(0.3 * Z[:, 1]) * rng.normal(size=n)
    if family == "gamma":
        return rng.gamma(2.0, np.exp(eta) / 2.0)
    if family == "bernoulli":
        return (rng.uniform(size=n) < 1 / (1 + np.exp(-eta))).astype(float)
    if family == "categorical":
        logits = np.stack([eta, -eta, 0.5 * Z[:, 2]], axis=1)
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        return (rng.uniform(size=n)[:, None] > np.cumsum(p, axis=1)).sum(axis=1).clip(0, 2).astype(float)
    if family == "mvn":
        return bivariate_y(Z, rng)
    raise ValueError(family)


def bivariate_y(Z, rng):
    """Bivariate Normal targets with x-dependent means, scales and correlation."""
    n = Z.shape[0]
    mu = np.stack([Z[:, 0], 0.5 * Z[:, 1] - (Z[:, 2] > 0)], axis=1)
    rho = 0.8 * np.tanh(Z[:, 1])
    sd = np.stack([np.exp(0.3 * Z[:, 2]), np.full(n, 0.5)], axis=1)
    z = rng.normal(size=(n, 2))
    return mu + sd * np.stack([z[:, 0], rho * z[:, 0] + np.sqrt(1 - rho ** 2) * z[:, 1]], axis=1)


def weights(n, seed):
    """Positive sample weights in [0.5, 2)."""
    return np.random.default_rng(seed).uniform(0.5, 2.0, size=n)


# ---------------------------------------------------------------------------------------------- extraction
FLAT_KEYS = ("feature", "threshold", "missing_left", "left", "right", "value", "tree_offsets", "round_offsets",
             "multiplier", "out_col")


def flat_arrays(flat) -> dict:
    """The arrays of a distviz.trees.flat.FlatForest."""
    return {f"flat_{k}": np.asarray(getattr(flat, k)) for k in FLAT_KEYS}


NODE_KEYS = ("feature", "threshold", "bin", "left", "right", "missing_left", "weight", "n_samples", "value", "gain",
             "gain_reg", "gain_ent", "feature_gains")


def node_arrays(trees, prefix="node_") -> dict:
    """The node tables of HistTrees, concatenated (node_offsets says where each tree starts)."""
    out = {}
    tabs = [t.nodes_ for t in trees]
    for k in NODE_KEYS:
        out[prefix + k] = np.concatenate([np.asarray(getattr(tb, k)) for tb in tabs])
    out[prefix + "offsets"] = np.cumsum([0] + [len(tb.left) for tb in tabs])
    return out


# ---------------------------------------------------------------------------------------------- trees
def _tree_data(n=300, p=4, K=2, seed=1, nan=0.1):
    X = features(n + 60, p, seed, nan)
    rng = np.random.default_rng(seed + 100)
    Z = np.nan_to_num(X[:n])
    R = np.stack([np.sin(Z[:, 0]) + Z[:, 1] * (Z[:, 2] > 0) + 0.3 * rng.normal(size=n) for _ in range(K)], axis=1)
    R[:, 1:] += np.arange(1, K) * Z[:, [3]]
    return X[:n], R, X[n:]


def _tree_record(tree, Xh) -> dict:
    out = node_arrays([tree])
    out["predict"] = tree.predict(Xh)
    out["train_leaf"] = np.asarray(tree.train_leaf_)
    return out


@_case("trees", "hist_weighted_nan", tol=0.0)
def hist_weighted_nan():
    from distviz.trees import HistTree
    X, R, Xh = _tree_data()
    t = HistTree(max_depth=3, min_samples_leaf=8, max_bins=32).fit(X, R, sample_weight=weights(len(R), 2))
    return _tree_record(t, Xh)


@_case("trees", "hist_unit_exact_bins", tol=0.0)
def hist_unit_exact_bins():
    from distviz.trees import HistTree
    X, R, Xh = _tree_data(K=1, nan=0.0, seed=3)
    t = HistTree(max_depth=3, min_samples_leaf=8, max_bins="exact").fit(X, R[:, 0])
    return _tree_record(t, Xh)


@_case("trees", "hist_leaves_l2", tol=0.0)
def hist_leaves_l2():
    from distviz.trees import HistTree
    X, R, Xh = _tree_data(K=3, seed=4)
    t = HistTree(max_depth=None, max_leaves=6, l2=2.0, min_weight_leaf=5.0, max_bins=64).fit(
        X, R, sample_weight=weights(len(R), 5))
    return _tree_record(t, Xh)


@_case("trees", "hist_gain_ent_poisson")
def hist_gain_ent_poisson():
    from distviz.families import get
    from distviz.trees import HistTree
    X, _, Xh = _tree_data(seed=6)
    y = family_y("poisson", X, 7)
    fam = get("poisson")
    T = fam.sufficient_stats(y)
    t = HistTree(max_depth=3, min_samples_leaf=8, max_bins=32).fit(X, T - T.mean(), sample_weight=weights(len(y), 8),
                                                                   family=fam, T=T)
    return _tree_record(t, Xh)


@_case("trees", "hist_entropy_normal")
def hist_entropy_normal():
    from distviz.families import get
    from distviz.trees import HistTree
    X, _, Xh = _tree_data(seed=9)
    y = family_y("normal", X, 10)
    fam = get("normal")
    T = fam.sufficient_stats(y)
    t = HistTree(max_depth=3, min_samples_leaf=10, max_bins=32, criterion="entropy").fit(
        X, T - T.mean(axis=0), sample_weight=weights(len(y), 11), family=fam, T=T)
    return _tree_record(t, Xh)


@_case("trees", "fit_many_weighted_nan", tol=0.0)
def fit_many_weighted_nan():
    from distviz.trees import Binner, fit_many
    X, R, Xh = _tree_data(K=2, seed=12)
    rng = np.random.default_rng(13)
    Rb = R[None] + 0.5 * rng.normal(size=(3,) + R.shape)
    w = weights(len(R), 14)
    Xb = Binner(max_bins=32).fit(X, sample_weight=w).transform(X)
    f = fit_many(Xb, Rb, sample_weight=w, max_depth=3, min_samples_leaf=8)
    out = node_arrays(f.trees)   # each tree's first n_nodes_ rows: the (B, M) arrays are padded with uninitialised memory
    out["train_leaf"] = np.asarray(f.train_leaf_)
    out["predict"] = f.predict(Xh)
    return out


@_case("trees", "fit_many_shared", tol=0.0)
def fit_many_shared():
    from distviz.trees import fit_many
    X, R, Xh = _tree_data(K=2, seed=15, nan=0.0)
    Rb = R[None] + 0.5 * np.random.default_rng(16).normal(size=(3,) + R.shape)
    f = fit_many(X, Rb, shared=True, max_depth=3, min_samples_leaf=8)
    out = _tree_record(f.tree, Xh)
    out["predict"] = f.predict(Xh)
    return out


@_case("trees", "hist_many_rows", tol=0.0)
def hist_many_rows():
    """Enough rows and features that every parallel pass of the grower and predictor splits its work."""
    from distviz.trees import HistTree
    X, R, Xh = _tree_data(n=6000, p=6, K=1, seed=17)
    t = HistTree(max_depth=4, min_samples_leaf=20, max_bins=64).fit(X, R[:, 0], sample_weight=weights(6000, 18))
    out = _tree_record(t, Xh)
    out["train_leaf"] = out["train_leaf"][::50]
    return out


# ---------------------------------------------------------------------------------------------- laws
def _law_fit(family, law, weighted, nan, n=240, n_estimators=5, seed=20, **kw):
    from distviz.estimators import DistributionalBoosting
    X = features(n + 30, 4, seed, 0.1 if nan else 0.0)
    y = family_y(family, X, seed + 1)
    Xt, yt, Xv, yv = X[:n], y[:n], X[n:], y[n:]
    w = weights(n, seed + 2) if weighted else None
    params = {"law": law, "n_estimators": n_estimators, "learning_rate": 0.3, "max_depth": 3, "max_bins": 32,
              "min_weight_leaf": 8.0, "random_state": 0}
    params.update(kw)
    m = DistributionalBoosting(family, **params, family_params=FAMILIES[family])
    m.fit(Xt, yt, sample_weight=w, eval_set=None if "validation_fraction" in kw else (Xv, yv))
    return law_record(m, Xv)


def law_record(m, Xv) -> dict:
    """Trees, predictions and trace of a fitted DistributionalBoosting (Xv: held-out rows)."""
    out = flat_arrays(m.forest_.flat)
    out["init"] = np.asarray(m.forest_.init)
    tr = m.trace_
    for k in ("train_nll", "valid_nll", "entropy", "n_projected", "n_nonfinite", "step_scale", "node_gain",
              "node_gain_ent", "node_n_samples"):
        out[f"trace_{k}"] = tr[k].values
    out["rounds"] = np.array([m.n_iter_, m.best_iteration_])
    out["predict_natural"] = m.predict_natural(Xv)
    out["predict"] = m.predict(Xv)
    return out


def _register_laws():
    for family in FAMILIES:
        for law in LAWS:
            tol = 1e-9 if (family, law) == ("mvn", "gd") else FLOAT_TOL   # see TOL_REASONS
            CASES[f"{family}_{law}_weighted_nan"] = ("laws", lambda f=family, lw=law: _law_fit(f, lw, True, True), tol)
        for law in ("mgd", "ngd"):
            CASES[f"{family}_{law}_unit"] = ("laws", lambda f=family, lw=law: _law_fit(f, lw, False, False, seed=30),
                                             FLOAT_TOL)


_register_laws()


@_case("laws", "normal_mgd_early_stopping")
def normal_mgd_early_stopping():
    return _law_fit("normal", "mgd", True, True, n_estimators=40, learning_rate=0.8, early_stopping_rounds=2,
                    validation_fraction=0.25, seed=40)


@_case("laws", "poisson_mgd_many_rows")
def poisson_mgd_many_rows():
    """More rows than one block of the fused Poisson M-law pass (distviz.families.univariate._BLOCK)."""
    return _law_fit("poisson", "mgd", False, False, n=20000, n_estimators=4, seed=50, max_bins=64, min_weight_leaf=50.0)


# ---------------------------------------------------------------------------------------------- ngboost
def _ngb_data(n=240, seed=60, nan=True, P=2):
    X = features(n + 60, 3, seed, 0.08 if nan else 0.0)
    y = bivariate_y(np.nan_to_num(X), np.random.default_rng(seed + 1))[:, :P]
    return X[:n], y[:n], X[n:], y[n:]


def _ngb_trees(m) -> list:
    return [t for rnd in m.result_.rounds for t in rnd.trees]


def ngb_record(m, Xv, prefix="") -> dict:
    """Trees, gains, losses and the predicted Gaussian of a fitted NGBoost."""
    from distviz.families.dist import MultivariateNormalDist

    out = flat_arrays(m.forest_)
    out.update({k: v for k, v in node_arrays(_ngb_trees(m)).items() if k in ("node_gain", "node_offsets")})
    out["init_params"] = np.asarray(m.init_params_)
    out["train_loss"] = np.asarray(m.train_loss_)
    out["valid_loss"] = np.asarray(m.valid_loss_)
    out["scalings"] = np.asarray(m.scalings_)
    out["rounds"] = np.array([m.n_iter_, m.best_iteration_])
    d = m.predict_dist(Xv)
    if isinstance(d, MultivariateNormalDist):   # (IndepNGB's univariate Normal fits: their mean and cov are not kept)
        out["mean"], out["cov"] = d.mean(), d.cov()
    return {prefix + k: v for k, v in out.items()}


_NGB_KW = {"n_estimators": 8, "learning_rate": 0.1, "max_depth": 3, "min_samples_leaf": 8, "max_bins": 32,
           "early_stopping_rounds": 3, "random_state": 0}


@_case("ngboost", "ngb_weighted_nan")
def ngb_weighted_nan():
    from distviz.estimators.ngboost import NGB
    X, y, Xv, yv = _ngb_data()
    m = NGB(**_NGB_KW).fit(X, y, sample_weight=weights(len(y), 62), eval_set=(Xv, yv))
    return ngb_record(m, Xv)


@_case("ngboost", "ngb_shared_grow")
def ngb_shared_grow():
    from distviz.estimators.ngboost import NGB
    X, y, Xv, yv = _ngb_data(seed=63, nan=False)
    m = NGB(**{**_NGB_KW, "tree_mode": "shared", "line_search": "grow"}).fit(X, y, eval_set=(Xv, yv))
    return ngb_record(m, Xv)


@_case("ngboost", "gb_nan")
def gb_nan():
    from distviz.estimators.ngboost import GB
    X, y, Xv, yv = _ngb_data(seed=64)
    m = GB(**_NGB_KW).fit(X, y, eval_set=(Xv, yv))
    return ngb_record(m, Xv)


@_case("ngboost", "indep_ngb_weighted_nan")
def indep_ngb_weighted_nan():
    from distviz.estimators.ngboost import IndepNGB
    X, y, Xv, yv = _ngb_data(seed=65)
    m = IndepNGB(**_NGB_KW).fit(X, y, sample_weight=weights(len(y), 66), eval_set=(Xv, yv))
    out = {}
    for k, u in enumerate(m.models_):
        out.update({key: v for key, v in ngb_record(u, Xv, f"dim{k}_").items()
                    if not key.endswith(("mean", "cov"))})
    d = m.predict_dist(Xv)
    out["mean"], out["cov"] = d.mean(), d.cov()
    return out


def _skgb(backend, nan):
    from distviz.baselines import skGB
    X, y, Xv, yv = _ngb_data(seed=67, nan=nan)
    m = skGB(n_estimators=10, learning_rate=0.2, max_depth=3, early_stopping_rounds=3, random_state=0,
             backend=backend).fit(X, y, sample_weight=weights(len(y), 68), eval_set=(Xv, yv))
    out = flat_arrays(m.forest_)
    out["init"] = np.asarray(m.init_)
    out["var"], out["var_all"] = m.var_, m.var_all_
    out["rounds"] = np.stack([m.n_iter_, m.best_iterations_])
    d = m.predict_dist(Xv)
    out["mean"], out["cov"] = d.mean(), d.cov()
    return out


@_case("ngboost", "skgb_gbr")   # numpy sums inside scikit-learn: see TOL_REASONS
def skgb_gbr():
    return _skgb("gbr", False)


@_case("ngboost", "skgb_hist_nan", tol=0.0)
def skgb_hist_nan():
    return _skgb("hist", True)


# ---------------------------------------------------------------------------------------------- wgboost
def _wg_fit(method, **kw):
    from distviz.estimators import WGBoost
    X = features(260, 3, 70, 0.05)
    Z = np.nan_to_num(X)
    y = np.sin(2 * Z[:, 0]) + 0.5 * Z[:, 1] + 0.3 * np.random.default_rng(71).normal(size=260)
    params = {"method": method, "n_particles": 4, "n_estimators": 6, "learning_rate": 0.3, "max_depth": 2,
              "init_rounds": 30, "random_state": 7, "trace_rows": 12, "max_bins": 32}
    params.update(kw)
    m = WGBoost("normal", **params).fit(X[:200], y[:200], eval_set=(X[200:], y[200:]))
    out = flat_arrays(m.forest_)
    out["init_particles"] = m.init_particles_
    for k in ("particles", "train_nll", "valid_nll", "valid_rmse", "mmd2", "n_projected", "n_nonfinite"):
        out[f"trace_{k}"] = m.trace_[k].values
    out["rounds"] = np.array([m.n_iter_, m.best_iteration_])
    out["predict_particles"] = m.predict_particles(X[200:])
    return out


@_case("wgboost", "wg_ska")
def wg_ska():
    return _wg_fit("ska", subsample=0.8)


@_case("wgboost", "wg_ska_per_particle")
def wg_ska_per_particle():
    return _wg_fit("ska", tree_sharing="per_particle")


@_case("wgboost", "wg_fka")
def wg_fka():
    return _wg_fit("fka")


@_case("wgboost", "wg_nka")
def wg_nka():
    return _wg_fit("nka", learning_rate=1.0)


@_case("wgboost", "wg_langevin")
def wg_langevin():
    return _wg_fit("langevin", subsample=0.7)


# ---------------------------------------------------------------------------------------------- dask
_CLIENT = None


def dask_client():
    """A module-wide in-process LocalCluster(n_workers=2, threads_per_worker=1) and its Client (started once)."""
    global _CLIENT
    if _CLIENT is None:
        import distributed
        lc = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0")
        _CLIENT = distributed.Client(lc)
    return _CLIENT


def close_dask():
    """Close the cluster of dask_client (if started)."""
    global _CLIENT
    if _CLIENT is not None:
        cluster = _CLIENT.cluster
        _CLIENT.close()
        cluster.close()
        _CLIENT = None


def _chunked(a, chunks=4):
    import dask.array as da
    return da.from_array(a, chunks=(a.shape[0] // chunks,) + a.shape[1:])


@_case("dask", "dask_poisson_mgd_weighted_nan")
def dask_poisson_mgd_weighted_nan():
    import distviz.distributed as dd
    from distviz.estimators import DistributionalBoosting
    from distviz.trees import Binner
    dask_client()
    X = features(860, 4, 80, 0.1)
    y = family_y("poisson", X, 81)
    w = weights(800, 82)
    b0 = Binner(max_bins=32).fit(X[:800], sample_weight=w)
    b = Binner.from_edges(b0.bin_thresholds_, max_bins=32, has_missing=b0.has_missing_)
    kw = {"law": "mgd", "n_estimators": 4, "learning_rate": 0.3, "max_depth": 3, "max_bins": 32, "min_weight_leaf": 8.0,
          "random_state": 0}
    m = dd.fit(DistributionalBoosting("poisson", **kw), _chunked(X[:800]), _chunked(y[:800]),
               sample_weight=_chunked(w), eval_set=(_chunked(X[800:], 2), _chunked(y[800:], 2)), binner=b)
    return law_record(m, X[800:])


@_case("dask", "dask_ngb_nan")
def dask_ngb_nan():
    import distviz.distributed as dd
    from distviz.estimators.ngboost import NGB
    from distviz.trees import Binner
    dask_client()
    X, y, Xv, yv = _ngb_data(n=800, seed=83)
    b0 = Binner(max_bins=32).fit(X)
    b = Binner.from_edges(b0.bin_thresholds_, max_bins=32, has_missing=b0.has_missing_)
    m = dd.fit(NGB(**{**_NGB_KW, "n_estimators": 4}), _chunked(X), _chunked(y), eval_set=(_chunked(Xv, 2),
                                                                                          _chunked(yv, 2)), binner=b)
    return ngb_record(m, Xv)


# ---------------------------------------------------------------------------------------------- running
def run_case(name, threads) -> dict:
    """Outputs of case `name` at `threads` numba threads, as a dict of arrays."""
    import numba
    before = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        out = CASES[name][1]()
    finally:
        numba.set_num_threads(before)
    return {k: np.asarray(v) for k, v in out.items()}


def golden_path(group) -> Path:
    """The .npz file of a group."""
    return GOLDEN_DIR / f"{group}.npz"


def load_golden(group) -> dict:
    """{case: {output: array}} of a group's file."""
    out: dict = {}
    with np.load(golden_path(group), allow_pickle=False) as f:
        for key in f.files:
            case, out_key = key.split("/", 1)
            out.setdefault(case, {})[out_key] = f[key]
    return out


def differences(name, got, ref) -> list[str]:
    """What differs between outputs `got` of case `name` and the golden `ref`, one phrase per output."""
    tol = CASES[name][2]
    bad = []
    if sorted(got) != sorted(ref):
        bad.append(f"outputs {sorted(set(got) ^ set(ref))} present on one side only")
    for k in sorted(set(got) & set(ref)):
        a, b = got[k], ref[k]
        if a.shape != b.shape:
            bad.append(f"{k}: shape {a.shape} != {b.shape}")
        elif a.dtype.kind != "f" or tol == 0.0:
            if not np.array_equal(a, b, equal_nan=a.dtype.kind == "f"):
                bad.append(f"{k}: not bit-identical" + _worst(a, b))
        elif not np.allclose(a, b, rtol=tol, atol=tol, equal_nan=True):
            bad.append(f"{k}: beyond {tol:g}" + _worst(a, b))
    return bad


def _worst(a, b) -> str:
    if a.dtype.kind != "f" or a.shape != b.shape:
        return ""
    with np.errstate(all="ignore"):
        d = np.abs(a - b) / (np.abs(b) + 1e-300)
    d = d[~(np.isnan(a) & np.isnan(b))]
    return f" (largest relative difference {np.nanmax(d, initial=0):.2g})"


def compare(name, got, ref) -> None:
    """Assert that case `name`'s outputs equal the golden ones (see differences)."""
    bad = differences(name, got, ref)
    assert not bad, f"{name}: " + "; ".join(bad)


def same_bits(a: dict, b: dict) -> list[str]:
    """Outputs whose bits differ between two runs of one case."""
    return [k for k in a if k not in b or a[k].shape != b[k].shape
            or not np.array_equal(a[k], b[k], equal_nan=a[k].dtype.kind == "f")]


# ---------------------------------------------------------------------------------------------- perturbation
_PERTURBED = ("exp", "log", "log1p", "expm1", "power", "exp2", "log2", "log10", "tanh", "sinh", "cosh",
              "arctan", "arctan2", "sin", "cos", "logaddexp",
              # BLAS-backed products (OpenBLAS picks its kernels per CPU): perturbed as well
              "dot", "matmul", "einsum", "inner", "vdot")


def _nudge(r, rng):
    """r with a random 5 % of its finite float64 elements moved to a neighbouring float (in place; tuples too)."""
    if isinstance(r, tuple):
        return type(r)(*(_nudge(x, rng) for x in r)) if hasattr(r, "_fields") else tuple(_nudge(x, rng) for x in r)
    if isinstance(r, np.ndarray) and r.dtype == np.float64 and r.size:
        m = (rng.random(r.shape) < 0.05) & np.isfinite(r)
        r[m] = np.nextafter(r[m], np.where(rng.random(int(m.sum())) < 0.5, np.inf, -np.inf))
    return r


class _LastBitNumpy:
    """numpy, except that the functions of _PERTURBED and of np.linalg move a random 5 % of their results
    to a neighbouring float (the ``@`` operator cannot be intercepted this way)."""

    def __init__(self, rng, module=np):
        self._rng = rng
        self._module = module

    def __getattr__(self, k):
        f = getattr(self._module, k)
        if k == "linalg":
            return _LastBitNumpy(self._rng, np.linalg)
        if not callable(f) or isinstance(f, type) or (self._module is np and k not in _PERTURBED):
            return f

        def g(*a, **kw):
            return _nudge(f(*a, **kw), self._rng)
        return g


def _patch_numpy(rng):
    """Assign the proxy to the ``np`` of every loaded distviz module; returns the undo list."""
    proxy = _LastBitNumpy(rng)
    undo = []
    for name, mod in list(sys.modules.items()):
        if name.startswith("distviz") and getattr(mod, "np", None) is np:
            undo.append(mod)
            mod.np = proxy
    return undo


def perturb(names, seeds=3) -> None:
    """Re-run the cases with last-bit noise in numpy's exp / log (etc.) and print what changes and how much."""
    for name in names:
        run_case(name, 1)   # compile and import everything first: numba must never see the proxy
    goldens = {g: load_golden(g) for g in GROUPS if golden_path(g).exists()}
    for name in names:
        ref = goldens[CASES[name][0]][name]
        changed: dict = {}
        for seed in range(seeds):
            undo = _patch_numpy(np.random.default_rng(seed))
            try:
                got = run_case(name, 1)
            finally:
                for mod in undo:
                    mod.np = np
            for k in got:
                a, b = got[k], ref[k]
                if a.shape != b.shape:
                    changed[k] = np.inf
                elif not np.array_equal(a, b, equal_nan=a.dtype.kind == "f"):
                    if a.dtype.kind != "f":
                        changed[k] = np.inf
                    else:
                        with np.errstate(all="ignore"):
                            d = np.abs(a - b) / np.maximum(np.abs(b), 1.0)
                        changed[k] = max(changed.get(k, 0.0), float(np.nanmax(d)))
        worst = max(changed.values(), default=0.0)
        tol = CASES[name][2]
        verdict = ("unchanged" if not changed else f"within {max(tol, FLOAT_TOL):g}" if worst <= max(tol, FLOAT_TOL)
                   else f"BEYOND {max(tol, FLOAT_TOL):g}")
        detail = ", ".join(f"{k} {v:.1e}" for k, v in sorted(changed.items(), key=lambda kv: -kv[1])[:5])
        print(f"{name:36s} tol={tol:<6g} {verdict:14s} {detail}", flush=True)


# ---------------------------------------------------------------------------------------------- main
def main(argv=None) -> int:
    """Write, check or perturb the golden outputs (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare today's fits with the files")
    ap.add_argument("--perturb", action="store_true", help="last-bit exp / log robustness of every case")
    ap.add_argument("--group", action="append", choices=GROUPS, help="only these groups (repeatable)")
    ap.add_argument("--case", action="append", help="only these cases (with --check / --perturb)")
    args = ap.parse_args(argv)
    if args.case and not (args.check or args.perturb):
        ap.error("--case needs --check or --perturb (the files are written a whole group at a time)")
    groups = args.group or list(GROUPS)
    names = [n for n, c in CASES.items() if c[0] in groups and (not args.case or n in args.case)]
    try:
        if args.perturb:
            perturb(names)
            return 0
        status = 0
        goldens = {g: load_golden(g) for g in groups if args.check}
        by_group: dict = {g: {} for g in groups}
        for name in names:
            one, two = run_case(name, 1), run_case(name, 2)
            diff = same_bits(one, two)
            if diff:
                print(f"{name}: 1 and 2 threads differ in {diff}")
                status = 1
            if args.check:
                bad = differences(name, one, goldens[CASES[name][0]][name])
                print(f"{name}: {'ok' if not bad else '; '.join(bad)}", flush=True)
                status |= bool(bad)
            by_group[CASES[name][0]].update({f"{name}/{k}": v for k, v in one.items()})
        if not args.check:
            GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
            for g, arrays in by_group.items():
                if arrays:
                    np.savez_compressed(golden_path(g), **arrays)
                    print(f"{golden_path(g).relative_to(ROOT)}: {len(arrays)} arrays, "
                          f"{golden_path(g).stat().st_size / 1024:.0f} KiB")
        return status
    finally:
        close_dask()


if __name__ == "__main__":
    sys.exit(main())
