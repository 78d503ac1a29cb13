"""WGBoost on the shared boosting engine: the same particles, trace and fault counters as its own loop had.

``tests/data/wg_engine_golden.npz`` holds what WGBoost's own fit loop (before it ran on
``distviz.boosting.engine.BoostingEngine``) produced for each case below: predicted particles on held-out
rows, the trace's particles / NLL / RMSE / MMD^2 / fault counters, and the kept and best rounds.  The
engine-based fit must reproduce them to 1e-12 (relative and absolute).  Regenerate (only when a
behaviour change is intended) with ``python tests/test_wg_engine.py --write``.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

from distviz.boosting import WGBoost

GOLDEN = os.path.join(os.path.dirname(__file__), "data", "wg_engine_golden.npz")
TRACE_VARS = ("particles", "train_nll", "valid_nll", "valid_rmse", "mmd2", "n_projected", "n_nonfinite")

# name: (target, estimator parameters, with an eval set); every case is a few milliseconds of boosting
CASES = {
    "ska": ("normal", dict(method="ska", subsample=0.8), True),
    "fka": ("normal", dict(method="fka"), True),
    "nka": ("normal", dict(method="nka", learning_rate=1.0), True),
    "langevin": ("normal", dict(method="langevin", subsample=0.7), True),
    "ska_per_particle": ("normal", dict(method="ska", tree_sharing="per_particle"), True),
    "fka_friedman": ("normal", dict(method="fka", split_criterion="friedman_sum"), False),
    "nka_friedman_per_particle": ("normal", dict(method="nka", split_criterion="friedman_sum",
                                                 tree_sharing="per_particle"), True),
    "langevin_poisson": ("poisson", dict(method="langevin", tree_sharing="per_particle", subsample=0.9), True),
    "ska_early_both": ("normal", dict(method="ska", n_rounds=60, learning_rate=0.7, early_stopping_rounds=4,
                                      early_stopping_metric="both"), True),
    "ska_early_rmse": ("normal", dict(method="ska", n_rounds=60, learning_rate=0.7, early_stopping_rounds=4,
                                      early_stopping_metric="rmse"), True),
}


def _data(target):
    rng = np.random.default_rng(3)
    X = rng.uniform(-2, 2, size=(90, 2))
    mu = np.sin(2 * X[:, 0]) + 0.5 * X[:, 1]
    y = rng.poisson(np.exp(0.5 * mu)).astype(float) if target == "poisson" else mu + 0.3 * rng.standard_normal(90)
    return X[:60], y[:60], X[60:], y[60:]


def _fit(name):
    target, kw, with_eval = CASES[name]
    X, y, Xv, yv = _data(target)
    params = dict(n_particles=4, n_rounds=8, learning_rate=0.3, init_rounds=30, random_state=7, display_size=12)
    params.update(kw)
    est = WGBoost(target, **params)
    return est.fit(X, y, eval_set=(Xv, yv) if with_eval else None), Xv


def _record(name) -> dict:
    est, Xv = _fit(name)
    out = {"predict": est.predict_particles(Xv), "init": est.init_particles_,
           "rounds": np.array([est.n_rounds_, est.best_round_, len(est.trace_["round"]) - 1]),
           "best_rounds": np.array([-1 if est.best_rounds_.get(m) is None else est.best_rounds_[m]
                                    for m in ("nll", "rmse")] if est.best_rounds_ else [-2, -2])}
    for v in TRACE_VARS:
        out[v] = est.trace_[v].values
    return out


@pytest.fixture(scope="module")
def golden():
    with np.load(GOLDEN, allow_pickle=False) as f:
        return {k: f[k] for k in f.files}


@pytest.mark.parametrize("name", list(CASES))
def test_engine_fit_reproduces_wgboosts_own_loop(name, golden):
    got = _record(name)
    for key, value in got.items():
        ref = golden[f"{name}/{key}"]
        assert value.shape == ref.shape, (name, key)
        if value.dtype.kind in "iu":
            np.testing.assert_array_equal(value, ref, err_msg=f"{name}/{key}")
        else:
            np.testing.assert_allclose(value, ref, rtol=1e-12, atol=1e-12, equal_nan=True, err_msg=f"{name}/{key}")


def _write():
    os.makedirs(os.path.dirname(GOLDEN), exist_ok=True)
    arrays = {f"{name}/{k}": v for name in CASES for k, v in _record(name).items()}
    np.savez_compressed(GOLDEN, **arrays)
    print(f"wrote {len(arrays)} arrays to {GOLDEN}")


if __name__ == "__main__" and "--write" in sys.argv:
    _write()
