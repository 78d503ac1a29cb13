"""Recognising dask collections and turning them into row-chunked dask arrays (no dask import unless one is used)."""

from __future__ import annotations

import math
import sys

from distviz.errors import ConfigError, DataError

__all__ = ["as_dask_array", "current_client", "dask_eval_set", "dask_inputs", "held_results", "is_dask_collection"]


def is_dask_collection(x) -> bool:
    """Whether `x` is a dask collection: a dask array / DataFrame / Series or an xarray object backed by dask.

    This never loads dask: when no module has imported it yet, no object can be a dask collection and the answer
    is False at once.

    Parameters
    ----------
    x : object
        Any input, e.g. the ``X`` given to a ``fit`` or ``predict``.

    Returns
    -------
    bool
        ``dask.is_dask_collection(x)`` when dask is loaded, else False.

    Examples
    --------
    >>> import numpy as np
    >>> from distviz.distributed import is_dask_collection
    >>> is_dask_collection(np.zeros((3, 2)))
    False
    """
    if "dask" not in sys.modules:
        return False
    import dask
    return bool(dask.is_dask_collection(x))


def as_dask_array(x, name: str, ndim: int):
    """x (dask array, dask DataFrame / Series, xarray DataArray) as a dask array with ndim dims, one chunk across columns."""
    import dask.array as da

    if hasattr(x, "to_dask_array"):          # dask DataFrame / Series: chunk lengths are computed once
        x = x.to_dask_array(lengths=True)
    elif hasattr(x, "dims") and hasattr(x, "data"):   # xarray DataArray
        x = x.data
    x = da.asarray(x)
    if x.ndim == 1 and ndim == 2:
        x = x[:, None]
    if ndim == 1 and x.ndim == 2 and x.shape[1] == 1:
        x = x[:, 0]
    if x.ndim != ndim:
        raise DataError(f"{name} must have {ndim} dimension(s), got {x.ndim}; pass "
                        f"{'(n_samples, n_features)' if ndim == 2 else 'one value per row'}.")
    if any(math.isnan(c) for c in x.chunks[0]):
        raise DataError(f"{name} has chunks of unknown length; call compute_chunk_sizes() on it first.")
    if ndim == 2 and len(x.chunks[1]) > 1:
        x = x.rechunk({1: -1})
    return held_results(x)


def held_results(x):
    """x with every key that this process's Client already holds a future for (e.g. a copy the user persisted and
    kept, ``y.persist()``) read from that future instead of recomputed; the rest of the graph culled to what is
    still needed.

    The scheduler keeps one task per key: a graph sent under a held key with another task (the user's persist
    optimised and fused it, the fit sends its own graph) makes the scheduler log "Detected different run_spec" and
    can fail the fit.  Referring to the held result sends no task under that key.
    """
    if "distributed" not in sys.modules:
        return x
    from distributed import Future, default_client

    try:
        client = default_client()
    except ValueError:
        return x
    graph = dict(x.__dask_graph__())
    held = [k for k in graph if k in client.futures]
    if not held:
        return x
    import dask.array as da
    from dask.core import flatten
    from dask.optimization import cull

    for k in held:
        graph[k] = Future(k, client)
    graph, _ = cull(graph, list(flatten(x.__dask_keys__())))
    return da.Array(graph, x.name, x.chunks, meta=x._meta)


def _rows_like(X, y, w):
    """y and w (or None) rechunked to X's row chunks."""
    y = y.rechunk((X.chunks[0],) + (-1,) * (y.ndim - 1))
    return X, y, (None if w is None else w.rechunk((X.chunks[0],)))


def dask_inputs(X, y, sample_weight, y_ndim: int):
    """The training rows of a fit on dask collections: X (2-D), y (y_ndim dims) and the weights (or None) as dask
    arrays chunked as X's rows."""
    X = as_dask_array(X, "X", 2)
    y = as_dask_array(y, "y", y_ndim)
    if y.shape[0] != X.shape[0]:
        raise DataError(f"X has {X.shape[0]} rows but y has {y.shape[0]}; pass one target per row.")
    w = None if sample_weight is None else as_dask_array(sample_weight, "sample_weight", 1)
    return _rows_like(X, y, w)


def dask_eval_set(eval_set, X, y):
    """eval_set = (X_val, y_val[, w_val]) as dask arrays chunked as X_val's rows, with X's columns and y's dimensions
    (a malformed tuple: the in-memory fit's ConfigError, ``distviz.contract.parse_eval_set``)."""
    from distviz.contract import parse_eval_set  # not at import: the workers import this package, not scikit-learn

    eval_set = parse_eval_set(eval_set)   # the estimators' one reading of the tuple (distviz.contract)
    Xv = as_dask_array(eval_set[0], "X_val", 2)
    yv = as_dask_array(eval_set[1], "y_val", y.ndim)
    if Xv.shape[1] != X.shape[1]:
        raise DataError(f"X_val has {Xv.shape[1]} features but X has {X.shape[1]}; pass the same columns.")
    if yv.shape[0] != Xv.shape[0] or yv.shape[1:] != y.shape[1:]:
        raise DataError("y_val must have one row per row of X_val and the columns of y; pass matching arrays.")
    wv = None if eval_set[2] is None else as_dask_array(eval_set[2], "w_val", 1)
    return _rows_like(Xv, yv, wv)


def current_client():
    """The running dask.distributed Client; ConfigError with the fix when there is none."""
    try:
        from distributed import get_client
        return get_client()
    except (ImportError, ValueError):
        raise ConfigError("fitting on a dask array needs a running dask.distributed Client; start one with "
                          "Client() (or Client('tcp://scheduler:8786')) first.") from None
