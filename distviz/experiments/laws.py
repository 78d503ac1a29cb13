"""Study ``laws``: the five boosting laws of mirror_vs_natural_boosting.tex on a simulation with known truth.

``distviz study laws --family poisson [--n 4000] [--rounds 300] [--lr 0.1] [--json]`` fits
mgd, ngd, gd, mgd_natural and ngd_mean on a ``distviz.data.synthetic`` simulation (train n rows,
validation and test n/2 rows each, early stopping on the validation NLL) and reports train / test
NLL next to the oracle NLL of the true distribution on the same test rows.
"""

from __future__ import annotations

import functools
import time

from distviz.experiments import registry
from distviz.experiments.parallel import map_units

LAW_NAMES = ("mgd", "ngd", "gd", "mgd_natural", "ngd_mean")


def _fit_law(law, *, family, data, oracle, rounds, lr, gd_lr, depth, patience, seed, family_kwargs) -> dict:
    """Fit one boosting law on (train, validation, test) `data` and return its row of the study's table."""
    from distviz.estimators import DistributionalBoosting

    Xtr, ytr, Xva, yva, Xte, yte = data
    t0 = time.perf_counter()
    m = DistributionalBoosting(family, law=law, n_estimators=rounds, learning_rate=gd_lr if law == "gd" else lr,
                               max_depth=depth, min_weight_leaf=40.0, early_stopping_rounds=patience,
                               trace_rows=10, random_state=seed, family_params=family_kwargs)
    m.fit(Xtr, ytr, eval_set=(Xva, yva))
    test = -m.score(Xte, yte)  # score is the mean log-likelihood; the table reports the NLL
    return {
        "train_nll": float(m.trace_.train_nll.values[m.best_iteration_]),
        "test_nll": test,
        "oracle_nll": oracle,
        "excess_pct": 100.0 * (test - oracle) / abs(oracle),
        "best_iteration": int(m.best_iteration_),
        "rows_projected": int(m.trace_.n_projected.values.sum()),
        "seconds": time.perf_counter() - t0,
    }


@registry.study("laws", options=[
    registry.Option("family", str, "poisson", "simulation / family: poisson, bernoulli, normal, gamma, exponential, "
                                              "categorical, mvn"),
    registry.Option("n", int, 4000, "training rows (validation and test get n/2 each)"),
    registry.Option("rounds", int, 300, "maximum boosting rounds"),
    registry.Option("lr", float, 0.1, "learning rate of every law except gd"),
    registry.Option("gd_lr", float, 0.02, "learning rate of plain gd (it diverges at larger steps for Normal/Gamma)"),
    registry.Option("depth", int, 3, "tree depth"),
    registry.Option("patience", int, 20, "early-stopping rounds on the validation NLL"),
    registry.Option("seed", int, 0, "random seed of the simulation"),
])
def run(family="poisson", n=4000, rounds=300, lr=0.1, gd_lr=0.02, depth=3, patience=20, seed=0) -> dict:
    """Train / test / oracle NLL of the five laws on one simulation."""
    from distviz.data.synthetic import make_synthetic

    n = int(n)
    d = make_synthetic(family, n=2 * n, random_state=seed)
    idx = slice(0, n), slice(n, n + n // 2), slice(n + n // 2, 2 * n)
    Xtr, ytr = d.X[idx[0]], d.y[idx[0]]
    Xva, yva = d.X[idx[1]], d.y[idx[1]]
    Xte, yte = d.X[idx[2]], d.y[idx[2]]
    oracle = d.oracle_nll(Xte, yte)
    fit = functools.partial(_fit_law, family=family, data=(Xtr, ytr, Xva, yva, Xte, yte), oracle=oracle,
                            rounds=int(rounds), lr=lr, gd_lr=gd_lr, depth=int(depth), patience=int(patience), seed=seed,
                            family_kwargs=dict(d.family_kwargs))
    out: dict = dict(zip(LAW_NAMES, map_units(fit, LAW_NAMES)))  # one unit per law: serial or Dask tasks
    out["oracle"] = {"test_nll": oracle}
    out["setup"] = f"{d.description}; n={n} train, lr={lr} (gd {gd_lr}), depth {depth}, patience {patience}"
    return out
