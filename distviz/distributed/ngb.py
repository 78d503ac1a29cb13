"""``NGBoost`` (``NGB``) and ``IndepNGB`` fitted on the workers of a dask.distributed cluster; the result is the
in-memory model.

The loop is the engine's own (``BoostingEngine.run``, configured by ``NGBoost._engine``: tree_mode "separate",
ngboost's line search, early stopping on the validation NLL) over the rows on the workers
(``rows.ChartRows``): each round grows one tree per chart parameter from histograms, then one round trip
evaluates the training NLL at F + s f for a batch of scales and the engine's line search runs on those values,
choosing the scale the in-memory fit chooses (see ``rows``).  One round costs ``max_depth + 1`` round trips.
Each scale of the batch costs a pass over the rows, so the batch holds the scales fits reach (see ``rows``).
The start theta^(0) is the chart's own
``init_theta`` on 2P points with the rows' weighted mean and 1/N covariance (the marginal MLE of the Normal and
MVN charts depends on y only through those).  ``IndepNGB`` fits its P univariate NGBoosts this way one after
another, sharing the bin edges.
"""

from __future__ import annotations

import functools
import time

import numpy as np

from distviz.errors import ConfigError, DataError

from . import ngb_shard
from .boosting import _Cluster, releases_workers
from .collections import current_client, dask_inputs
from .rows import ChartRows
from .sketch import fit_binner
from .split import validation_rows

__all__ = ["fit_arrays_on_workers", "fit_indep_ngb", "fit_ngboost"]


def _start_theta(chart, mean, cov):
    """chart.init_theta on 2P equally weighted points with this mean and (1/N) covariance: m +- sqrt(P l_j) v_j."""
    vals, vecs = np.linalg.eigh(cov)
    d = (np.sqrt(np.maximum(vals, 0.0) * mean.size) * vecs).T
    pts = np.concatenate([mean + d, mean - d])
    return np.asarray(chart.init_theta(pts if chart.y_dim > 1 else pts[:, 0], None), dtype=float)


def _rows(cl, X, y, w, binner, law, check, K):
    """Shards of (X, y[, w]) on the workers (y and w chunked as X's rows); returns (shards, where)."""
    return cl.shards(X, y, w, binner, law, [np.zeros((0, 2), np.int64)] * len(X.chunks[0]), check, K)


@releases_workers
def fit_ngboost(model, X, y, sample_weight=None, eval_set=None, progress=None, binner=None):
    """Fit an NGBoost (NGB, GB) on the current Client's workers (see module doc); returns the model."""
    from distviz.boosting.charts import ChartLaw, check_normal_spread, resolve_chart, select_rounds_per_param
    from distviz.families.mvn_cholesky import MVNCholesky

    t_fit = time.perf_counter()
    model._validate_params()
    if model.line_search not in ("ngboost", False, None):
        raise ConfigError(f"line_search={model.line_search!r} is not available for a fit on a dask array; use "
                          "'ngboost' (the default) or False.")
    if model.tree_mode != "separate":
        raise ConfigError("a fit on a dask array grows one tree per parameter; pass tree_mode='separate'.")
    cl = _Cluster()
    client = cl.client
    X, y, w = dask_inputs(X, y, sample_weight, 2)
    X, y, w, ev = validation_rows(model, X, y, w, eval_set, split=model.early_stopping_rounds is not None)
    P = int(y.shape[1])
    chart = resolve_chart(model.chart, P)
    if not (isinstance(chart, MVNCholesky) or getattr(chart, "name", "") == "normal"):
        raise ConfigError(f"the {getattr(chart, 'name', 'given')} chart cannot fit on a dask array; use 'normal' or "
                          "'mvn_cholesky', or pass numpy arrays (X.compute()).")
    if chart.y_dim != P:
        raise DataError(f"the {chart.name} chart models {chart.y_dim} output(s) but y has {P} columns; pass "
                        "matching y or another chart.")
    law = ChartLaw(chart, model.natural_gradient)
    K = law.dim
    binner = fit_binner(X, model.max_bins, binner)
    check = functools.partial(ngb_shard.check_chunk, chart)
    shards, where = _rows(cl, X, y, w, binner, law, check, K)
    vshards = vwhere = None
    if ev is not None:
        vshards, vwhere = _rows(cl, ev[0], ev[1], ev[2], binner, law, check, 0)

    # the start: weighted mean and 1/N covariance (two passes, as the in-memory formulas)
    n = int(X.shape[0])
    m1 = cl.run(ngb_shard.moments, shards, where)
    W, mw, mu = float(m1[1]), m1[2:2 + P] / m1[1], m1[2 + P:] / n
    m2 = cl.run(ngb_shard.moments, shards, where, (mw, mu))
    cov, ss = m2[:P * P].reshape(P, P) / W, m2[P * P:]
    check_normal_spread(chart, float(np.sqrt(ss[0] / n)) if chart.name == "normal" else 1.0)
    init = _start_theta(chart, mw, cov).reshape(K)

    unit = w is None
    o = 1 if unit else 2
    Wv = float(cl.run(ngb_shard.moments, vshards, vwhere)[1]) if vshards is not None else 1.0
    engine = model._engine(law)   # the in-memory fit's loop, rules and bookkeeping, over the shards
    rows = ChartRows(engine, cl, shards, where, vshards, vwhere, binner, init, W, Wv, n, unit, o, o + 1)
    res = engine.run(rows, (), progress)
    del shards, vshards, rows   # the workers drop the chunks' state
    cl.close()
    model.binner_ = binner
    model._set_result(res, chart, law, int(X.shape[1]), P, ev is not None)
    if model.per_parameter_early_stopping:
        if ev is None:
            raise ConfigError("per_parameter_early_stopping needs validation data: pass eval_set.")
        model.best_iteration_per_param_ = select_rounds_per_param(model, *_valid_subset(client, ev))
    model.fit_seconds_ = time.perf_counter() - t_fit
    return model


def _valid_subset(client, ev, max_rows=4000):
    """The validation rows select_rounds_per_param reads (its own fixed subset of at most max_rows), gathered."""
    Xv, yv, wv = ev
    nv = int(Xv.shape[0])
    keep = np.arange(nv)
    if nv > max_rows:
        keep = np.sort(np.random.default_rng(0).choice(nv, max_rows, replace=False))
    parts = [Xv[keep], yv[keep]] + ([] if wv is None else [wv[keep]])
    got = [np.asarray(a) for a in client.compute(parts, sync=True)]
    return got[0], got[1], (got[2] if wv is not None else None)


def fit_indep_ngb(model, X, y, sample_weight=None, eval_set=None, progress=None, binner=None):
    """Fit an IndepNGB on the current Client's workers: its P univariate NGBoosts one after another (shared edges)."""
    t0 = time.perf_counter()
    model._validate_params()
    X, y, w = dask_inputs(X, y, sample_weight, 2)
    # the validation rows once, shared by the P fits (as in memory)
    X, y, w, ev = validation_rows(model, X, y, w, eval_set, split=model.early_stopping_rounds is not None)
    binner = fit_binner(X, model.max_bins, binner)
    model.n_outputs_, model.n_features_in_ = int(y.shape[1]), int(X.shape[1])

    def fit_one(m, k, prog, evk):
        return fit_ngboost(m, X, y[:, k], w, evk, prog, binner)
    return model._fit_outputs(model.n_outputs_, ev, fit_one, progress, t0)


def fit_arrays_on_workers(model, X, y, eval_set, progress=None, n_chunks=None):
    """Fit NGB / IndepNGB on in-memory arrays with the work on the current Client's workers: the rows are sent
    once as chunked dask arrays, the bin edges are the in-memory fit's (``Binner`` on X), so the model is the
    in-memory one (to rounding); eval_set = (X_val, y_val)."""
    import dask.array as da

    from distviz.trees import Binner

    client = current_client()
    k = n_chunks or 2 * max(1, len(client.nthreads()))

    def chunked(a):
        a = np.asarray(a, dtype=float)
        return da.from_array(a, chunks=(max(1, -(-a.shape[0] // k)),) + a.shape[1:])

    b0 = Binner(model.max_bins).fit(np.asarray(X, dtype=float))
    binner = Binner.from_edges(b0.bin_thresholds_, max_bins=model.max_bins, has_missing=b0.has_missing_)
    ev = tuple(chunked(a) for a in eval_set)
    from . import fit
    return fit(model, chunked(X), chunked(y), None, ev, progress, binner=binner)
