"""Compile distviz's numba kernels once and leave them in numba's on-disk cache.

numba compiles a kernel at its first call in a process (about a minute of LLVM for the tree grower) and
writes the machine code next to the source, in the installed package's ``__pycache__`` (or under
``NUMBA_CACHE_DIR``); every later process, a Dask worker included, loads it in well under a second.
:func:`warm_kernels` makes those first calls with small fits of every common path, so that the cost is paid
once per installation (``make test``, ``distviz warm``), not by the first fit of each worker or test process.
On a Dask cluster whose workers run on other machines, each machine has its own installation and cache:
``distviz warm --scheduler ADDRESS`` runs :func:`warm_kernels` on every worker of that cluster once.

Groups: ``common`` is every usual fit on 8-bit bin codes (and a small fit on a Dask cluster of threads where dask
is installed); ``wide`` the tree grower on 16-bit codes
(``max_bins="exact"`` with more than 256 distinct values, as WGBoost's studies use), which numba compiles as a
separate specialisation.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np

from distviz.errors import ConfigError

__all__ = ["GROUPS", "check_groups", "warm_kernels"]


def _common() -> None:
    from distviz.estimators import DistributionalBoosting, WGBoost
    from distviz.estimators.ngboost import NGB, IndepNGB
    from distviz.families.posteriors import gaussian_location_target
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
                m = DistributionalBoosting(fam, law=law, n_estimators=3).fit(XX, y, sample_weight=ww)
                m.predict(XX[:50])
    DistributionalBoosting("categorical", family_params={"K": 3}, n_estimators=3).fit(X, rng.integers(0, 3, n).astype(float))
    Y2 = np.column_stack([ys["normal"], X[:, 1] + rng.normal(size=n)])
    for est in (NGB(n_estimators=3, early_stopping_rounds=None), IndepNGB(n_estimators=3, early_stopping_rounds=None)):
        est.fit(Xn, Y2).predict(Xn[:50])
    Xb = Binner(64).fit_transform(Xn)
    for ww in (None, w):
        HistTree(max_depth=3).fit(Xb, ys["normal"], sample_weight=ww).predict(Xn[:50])
        HistTree(max_depth=3, max_leaves=5).fit(Xb, Y2, sample_weight=ww)
    WGBoost(gaussian_location_target(0.5), n_estimators=3, max_depth=2, random_state=0).fit(X[:200], ys["normal"][:200])
    # early stopping on an eval_set: the binned prediction of the validation rows
    DistributionalBoosting("normal", n_estimators=3, early_stopping_rounds=2).fit(
        X[:1500], ys["normal"][:1500], eval_set=(Xn[1500:], ys["normal"][1500:]))
    _dask_fit(X[:800], ys["poisson"][:800])


def _dask_fit(X, y) -> None:
    """A small Poisson fit on a LocalCluster of two thread workers (the shard kernels), where dask is installed."""
    import importlib.util

    if importlib.util.find_spec("distributed") is None:
        return
    import dask.array as da
    from distributed import Client, LocalCluster, get_worker

    try:
        get_worker()
        return   # `distviz warm --scheduler`: on a worker, where no cluster is started inside the cluster
    except ValueError:
        pass

    from distviz.dask import DaskDistributionalBoosting

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        Xd, yd = da.from_array(X, chunks=(len(X) // 2, X.shape[1])), da.from_array(y, chunks=len(y) // 2)
        DaskDistributionalBoosting("poisson", n_estimators=2, max_depth=2, client=client).fit(Xd, yd)


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


#: the warm-up groups by name
GROUPS: dict[str, Callable[[], None]] = {"common": _common, "wide": _wide}


def check_groups(groups: Sequence[str]) -> None:
    """Raise ConfigError when a name is not among :data:`GROUPS`."""
    unknown = [g for g in groups if g not in GROUPS]
    if unknown:
        raise ConfigError(f"No kernel group named {', '.join(map(repr, unknown))}; the groups are "
                          f"{', '.join(GROUPS)} (give none to warm all).")


def warm_kernels(groups: Sequence[str] = ()) -> dict[str, float]:
    """Compile (or load from the cache) the kernels of the named groups; return the seconds each took.

    First drops cache files compiled from older sources (:func:`distviz.trees.prepare_numba_cache`).

    Parameters
    ----------
    groups : sequence of str
        Names among :data:`GROUPS` ("common", "wide"); empty: all of them.

    Returns
    -------
    dict
        Group name -> wall seconds of its small fits (about a minute each on a cold cache, under a second
        or two on a warm one).

    Raises
    ------
    ConfigError
        When a name is not a group.
    """
    check_groups(groups)
    from distviz.trees import prepare_numba_cache

    prepare_numba_cache()   # drop cache files compiled from older sources before loading or writing any
    seconds = {}
    for name in groups or list(GROUPS):
        t0 = time.perf_counter()
        GROUPS[name]()
        seconds[name] = time.perf_counter() - t0
    return seconds
