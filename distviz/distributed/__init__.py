"""Fitting and predicting on a dask.distributed cluster: the trainer behind ``distviz.dask``'s estimators.

``DaskDistributionalBoosting.fit`` (and ``DaskNGB`` / ``DaskIndepNGB``'s, ``distviz.dask``) hands a dask array (or
chunked xarray DataArray / dask DataFrame) X to :func:`fit`, which runs the boosting loop on the workers of the
current ``dask.distributed.Client`` (``distviz.distributed.boosting``, ``distviz.distributed.ngb``): rows
never leave their workers, the client picks the splits and keeps the ordinary in-memory model.
Validation rows are ``eval_set`` or a seeded ``validation_fraction`` split made per chunk on the workers
(``split``).  ``predict_*`` on a dask array return a dask array (:func:`predict_blocks`, one ``map_blocks``
call).  dask is imported only when a dask collection is used.  The estimators (``distviz.estimators``) sit above
this package, which never imports them, and import it only when handed a dask collection.
"""

from __future__ import annotations

from .collections import is_dask_collection

__all__ = ["fit", "is_dask_collection", "predict_blocks"]


def fit(model, X, y, sample_weight=None, eval_set=None, progress=None, *, binner=None):
    """Fit `model` on the workers of the current dask.distributed Client from row-chunked dask collections.

    The trainer behind the ``fit`` of :class:`distviz.dask.DaskDistributionalBoosting`, :class:`distviz.dask.DaskNGB`
    and :class:`distviz.dask.DaskIndepNGB`: the boosting loop runs with the rows on the workers
    (``distviz.distributed.boosting`` for a ``DistributionalBoosting``, ``distviz.distributed.ngb`` for an
    ``NGBoost`` such as ``NGB`` or ``GB`` and for an ``IndepNGB``, whose P univariate fits run one after another
    on shared bin edges); the workers send node histograms and the client grows each tree and keeps the
    ordinary in-memory model.

    Parameters
    ----------
    model : DistributionalBoosting, NGBoost or IndepNGB
        The estimator to fit, in place (a ``distviz.dask`` class or its in-memory base class); its parameters
        are validated as in an in-memory fit. Any other class raises ``ConfigError``.
    X : dask array, dask DataFrame or dask-backed xarray DataArray of shape (n, p)
        The features, chunked by rows.
    y : dask collection
        The targets, one per row of ``X``: shape (n,), or (n, P) for ``IndepNGB`` and the multivariate laws.
    sample_weight : dask array of shape (n,) or None, default=None
        Row weights; None: every row weighs 1.
    eval_set : tuple or None, default=None
        ``(X_val, y_val[, w_val])`` as dask collections. None: a seeded ``validation_fraction`` share of the rows
        is held out on the workers (``distviz.distributed.split``) when ``model.validation_fraction`` is set
        (``DistributionalBoosting``) or ``model.early_stopping_rounds`` is set (``NGBoost``, ``IndepNGB``).
    progress : callable or None, default=None
        Called as ``progress(round, n_rounds)`` after each boosting round.
    binner : distviz.trees.Binner or None, default=None
        Keyword-only. A fitted ``Binner`` whose edges to use (e.g. ``Binner.from_edges``), checked against X's
        columns; None: the edges come from a distributed quantile sketch of X with ``model.max_bins`` bins.

    Returns
    -------
    model
        The same estimator, fitted.

    Raises
    ------
    ConfigError
        When ``model`` is of another class, when no Client runs, or when a parameter is unavailable on dask
        input (``NGBoost`` takes ``tree_mode="separate"`` and ``line_search`` "ngboost" or False only).
    """
    from distviz.errors import ConfigError

    # the estimator names its trainer (this package sits below the estimators and imports none of them)
    trainer = getattr(model, "_dask_trainer", None)
    if trainer == "distributional":
        from .boosting import fit_distributional as run
    elif trainer in ("ngboost", "indep_ngb"):
        from . import ngb
        run = ngb.fit_ngboost if trainer == "ngboost" else ngb.fit_indep_ngb
    else:
        raise ConfigError(f"{type(model).__name__} cannot fit on a dask array yet; pass numpy arrays "
                          "(X.compute()) or use DistributionalBoosting, NGB or IndepNGB.")
    return run(model, X, y, sample_weight=sample_weight, eval_set=eval_set, progress=progress, binner=binner)


def predict_blocks(method, X, n_out, **kw):
    """Apply a prediction method to every row chunk of a dask collection.

    Parameters
    ----------
    method : callable
        ``method(block, **kw)`` maps a numpy block of rows to one prediction per row.
    X : dask array or dask DataFrame of shape (n, p)
        The rows.
    n_out : int or None
        Columns of the output; None: the shape ``method`` returns, read from one probe row of zeros.
    **kw
        Keyword arguments passed on to ``method``.

    Returns
    -------
    dask array of float64
        Shape (n, n_out), or (n,) and so on as ``method`` returns it when ``n_out`` is None.
    """
    import numpy as np

    from .collections import as_dask_array

    X = as_dask_array(X, "X", 2)
    if n_out is None:
        tail = np.asarray(method(np.zeros((1, X.shape[1])), **kw)).shape[1:]
    else:
        tail = (int(n_out),)
    chunks = (X.chunks[0],) + tuple((d,) for d in tail)
    return X.map_blocks(lambda b: np.asarray(method(b, **kw), dtype=float), dtype=float, chunks=chunks,
                        drop_axis=[] if tail else [1])

