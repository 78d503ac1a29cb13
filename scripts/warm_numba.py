"""Compile distviz's numba kernels once and leave them in numba's cache (small fits of every common path).

It first calls ``distviz.trees.prepare_numba_cache()`` (cache files compiled from older sources go).
``make test`` runs this beside ruff and mypy: on a fresh checkout the kernels are then compiled once, in the
background, instead of by each test worker at its first fit (about a minute of LLVM per process).  It only
warms a cache: any error here is reported and ignored, the tests themselves check the code.
Run: ``python scripts/warm_numba.py [common|wide]`` (both groups when none is named; ``make test`` runs the two
groups as two processes): ``common`` is every usual fit on 8-bit bin codes, ``wide`` the tree grower on 16-bit
codes (``max_bins="exact"`` with more than 256 distinct values, as WGBoost's studies use), which numba compiles
as a separate specialisation (about 75 s cold).
"""

from __future__ import annotations

import sys
import time
import traceback

import numpy as np


def _common() -> None:
    from distviz.boosting import DistributionalBoosting, WGBoost
    from distviz.boosting.ngboost import NGB, IndepNGB
    from distviz.boosting.wg_targets import gaussian_location_target
    from distviz.trees import Binner, HistTree

    rng = np.random.default_rng(0)
    n = 2000
    X = rng.normal(size=(n, 4))
    Xn = X.copy()
    Xn[rng.random((n, 4)) < 0.05] = np.nan
    w = rng.uniform(0.5, 2.0, n)
    eta = 0.3 * X[:, 0]
    ys = {"poisson": rng.poisson(np.exp(eta)).astype(float), "normal": eta + rng.normal(size=n),
          "bernoulli": (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(float),
          "gamma": rng.gamma(2.0, np.exp(eta) / 2.0)}
    for fam, y in ys.items():
        for law in ("mgd", "ngd"):
            for XX, ww in ((X, None), (Xn, w)):
                m = DistributionalBoosting(fam, law=law, n_rounds=3).fit(XX, y, sample_weight=ww)
                m.predict(XX[:50])
    DistributionalBoosting("categorical", K=3, n_rounds=3).fit(X, rng.integers(0, 3, n).astype(float))
    Y2 = np.column_stack([ys["normal"], X[:, 1] + rng.normal(size=n)])
    for est in (NGB(n_estimators=3, early_stopping_rounds=None), IndepNGB(n_estimators=3, early_stopping_rounds=None)):
        est.fit(Xn, Y2).predict(Xn[:50])
    Xb = Binner(64).fit_transform(Xn)
    for ww in (None, w):
        HistTree(max_depth=3).fit(Xb, ys["normal"], sample_weight=ww).predict(Xn[:50])
        HistTree(max_depth=3, max_leaves=5).fit(Xb, Y2, sample_weight=ww)
    WGBoost(gaussian_location_target(0.5), n_rounds=3, max_depth=2, random_state=0).fit(X[:200], ys["normal"][:200])


def _wide() -> None:
    from distviz.boosting.wg_trees import TreeLearner

    rng = np.random.default_rng(1)
    X = rng.uniform(size=(400, 3))          # 400 distinct values a column: 16-bit codes in exact mode
    R = rng.normal(size=(400, 4))
    for criterion in ("variance", "friedman_sum"):
        learner = TreeLearner(3, "exact", criterion)
        Xb = learner.prepare(X)
        learner.fit(Xb, R)[0].predict(X)
        learner.fit_many(Xb, np.stack([R[:, :2], R[:, 2:]]))


GROUPS = {"common": _common, "wide": _wide}


def main(argv: list[str]) -> int:
    """Run the named groups' small fits (all when none is named); print how long each took (or the error); return 0."""
    unknown = [a for a in argv if a not in GROUPS]
    if unknown:
        print(f"warm_numba: no group named {', '.join(unknown)} (groups: {', '.join(GROUPS)}); nothing warmed",
              file=sys.stderr)
        return 0
    from distviz.trees import prepare_numba_cache

    prepare_numba_cache()   # drop cache files compiled from older sources before loading or writing any
    for name in argv or list(GROUPS):
        t0 = time.perf_counter()
        try:
            GROUPS[name]()
        except Exception:   # a cache warmer must not fail the build: the tests report real errors
            traceback.print_exc(limit=3)
            print(f"warm_numba: a warm-up fit of {name!r} failed (ignored)", file=sys.stderr)
        print(f"warm_numba: {name} kernels compiled or loaded in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
