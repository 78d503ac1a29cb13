"""A dask worker preload that loads distviz's numba kernels from the cache while the worker starts.

A fresh worker process otherwise pays for its numba start-up and for loading every kernel from numba's cache
inside the first fit's first tasks.  Started with this preload, the worker does that work in a background thread
from the moment it has joined its scheduler, while the client sends its data and starts its fit:

- ``dask worker ADDRESS --preload distviz.distributed.preload`` (or the ``distributed.worker.preload`` setting
  of dask's configuration);
- ``LocalCluster(..., preload=["distviz.distributed.preload"])``.

The thread first imports ``dask.array`` (which a fit's first task needs on the worker; without xarray, which it would
import but a worker does not use), then makes the numba cache upkeep (:func:`distviz.trees.prepare_numba_cache`),
then, only where the cache is current (so that it loads rather than compiles), runs the worker's steps of two Poisson
``DistributionalBoosting`` rounds on 256 synthetic rows (:func:`warm_kernels`), which loads every kernel those steps
run, as a Poisson fit's first tasks would. Other families' and laws' own kernels, and a weighted fit's, load on their
first use. A fit's first call to the worker (:func:`ready`) waits for the thread; a worker without the preload makes
the cache upkeep there instead. A failure of the warm-up is logged and leaves the kernels to load on first use.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

__all__ = ["dask_setup", "ready", "warm_kernels"]

_LOG = logging.getLogger(__name__)
_WARMING: list[threading.Thread] = []   # the warm-up thread of this process, once started


def dask_setup(worker=None) -> None:
    """dask's preload hook: start the warm-up thread (once per process) and return at once."""
    if _WARMING:
        return
    t = threading.Thread(target=_warm, args=(worker,), name="distviz-warm-kernels", daemon=True)
    _WARMING.append(t)
    t.start()


def ready() -> None:
    """Run on every worker by a fit before its first step: wait for the preload's warm-up where it runs, else make the
    numba cache upkeep (which must precede the first kernel call)."""
    if _WARMING:
        _WARMING[0].join()
    else:
        from distviz.trees import prepare_numba_cache
        prepare_numba_cache()


def _started(worker, seconds: float = 30.0) -> None:
    """Return once `worker` runs (has joined its scheduler), or after `seconds`: the warm-up's imports hold the
    interpreter lock, which would otherwise slow the worker's own start and so the cluster's."""
    try:
        from distributed.core import Status
    except ImportError:   # pragma: no cover - dask.distributed without its Status enum
        return
    t0 = time.monotonic()
    while getattr(worker, "status", Status.running) not in (Status.running, Status.closing, Status.closed) \
            and time.monotonic() - t0 < seconds:
        time.sleep(0.05)


def _warm(worker) -> None:
    """The warm-up thread: once the worker runs, the imports and the cache upkeep, then :func:`warm_kernels` where the
    cache is current and not empty."""
    try:
        _started(worker)
        threads = getattr(getattr(worker, "state", None), "nthreads", None)
        # a fit's first task on a worker unpickles dask.array's chunk functions: the worker imports dask.array now,
        # before the fit asks, without the optional xarray (and its pandas) that dask.array would otherwise import
        _import_dask_array()

        import distviz.trees
        from distviz.trees._cache import cache_dirs

        current = distviz.trees.prepare_numba_cache()
        pkg = Path(distviz.trees.__file__).resolve().parent
        if current and any(next(d.glob("*.nbi"), None) is not None for d in cache_dirs(pkg)):
            warm_kernels(threads)
    except Exception:   # noqa: BLE001 - a warm-up must never take the worker down; the kernels load on first use
        _LOG.warning("distviz: loading the numba kernels at worker start failed; they load in the first fit",
                     exc_info=True)


def _import_dask_array() -> None:
    """Import ``dask.array`` without letting it import xarray, where xarray is not imported yet.

    ``dask.array.core`` imports xarray when it is installed (for one ``isinstance`` test in ``from_array``, which a
    worker never calls), and xarray imports pandas: most of the import's time and none of a worker's use.  For the
    import only, ``sys.modules["xarray"]`` holds ``None``, which dask reads as xarray not installed; the entry is
    removed afterwards, so any later ``import xarray`` on the worker (a study's NetCDF files) works as usual.
    """
    import sys

    if "dask.array" in sys.modules or "xarray" in sys.modules:
        import dask.array  # noqa: F401
        return
    sys.modules["xarray"] = None  # type: ignore[assignment]
    try:
        import dask.array  # noqa: F401
    finally:
        if sys.modules.get("xarray", 0) is None:
            del sys.modules["xarray"]


def warm_kernels(threads: int | None = None) -> None:
    """Run the worker's steps of two Poisson MGD rounds (depth 3, 255 bins, a feature with NaN) on 256 synthetic rows
    held in this process, as a distributed fit sends them (``shard.make_shard``, ``shard_step``, ``shard_level``; the
    splits chosen by the client's ``grow.LevelGrower``): every numba kernel those steps run is then loaded (or
    compiled where the cache lacks it).  The first round ends with the next round's histograms (the fused Poisson
    pass), the second as a fit's last round does.  Neither the estimators nor scikit-learn are imported (a worker
    does not need them).

    Parameters
    ----------
    threads : int or None, default=None
        The numba threads of the steps (the worker's thread count); None: numba's.
    """
    import functools

    import numpy as np

    from distviz.boosting.laws import make_law
    from distviz.families import get
    from distviz.trees import Binner

    from . import shard as sh
    from .grow import LevelGrower

    rng = np.random.default_rng(0)
    n, lr = 256, 0.1
    X = rng.normal(size=(n, 3))
    X[::7, 0] = np.nan
    y = rng.poisson(np.exp(0.5 * X[:, 1])).astype(np.float64)
    fam = get("poisson")
    law = make_law("mgd", fam)
    q = np.linspace(0.0, 100.0, 256)[1:-1]
    edges = [np.unique(np.nanpercentile(X[:, f], q)) for f in range(X.shape[1])]
    binner = Binner.from_edges(edges, max_bins=255, has_missing=np.isnan(X).any(axis=0))
    shard = sh.make_shard(X, y, None, binner, law, np.array([[0, 0], [1, 5]], np.int64),
                          functools.partial(sh.check_chunk, fam))
    if threads:
        sh._THREADS[:] = [max(1, int(threads))]
    nb, C = int(binner.n_hist_bins_), 1 + law.dim
    F0 = np.asarray(law.init(shard.data, None), dtype=np.float64).reshape(-1)   # the start F_0 of these rows
    out = sh.run_shards(sh.shard_step, [shard], law, None, F0, lr, True, nb, C, True)
    for last in (False, True):
        g = LevelGrower(out["hist"][0], binner, 1, law.dim, 3, 1e-3, 1.0, 0.0)
        while True:
            splits, build = g.choose()
            if not build:
                break
            g.receive(sh.run_shards(sh.shard_level, [shard], [splits], [build], nb, C, True)["hist"])
        tree = dict(g.arrays(), splits=splits, mult=lr, miss_code=int(binner.missing_bin_))
        out = sh.run_shards(sh.shard_step, [shard], law, tree, None, lr, not last, nb, C, True)
