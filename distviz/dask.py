"""Explicit Dask estimators: ``DaskDistributionalBoosting``, ``DaskNGB`` and ``DaskIndepNGB``.

Each is its in-memory class (the same parameters, the same fitted model) with one more parameter, ``client``
(a ``dask.distributed.Client``; None: the current one), whose ``fit`` takes row-chunked dask collections and runs
the distributed trainer, :func:`distviz.distributed.fit` (rows stay on the workers, the client picks the splits).
``eval_set`` is ``(X_val, y_val[, w_val])`` or a list holding one such tuple, as in lightgbm.dask; without it,
``validation_fraction`` holds out a seeded share of the rows on the workers (``distviz.distributed.split``), as
the in-memory fit does.  This is the lightgbm.dask / xgboost.dask convention: the core estimators' fit takes
in-memory arrays only and, handed a dask collection, names the class here to use.
"""

from __future__ import annotations

import contextlib
import inspect

from distviz.errors import ConfigError
from distviz.estimators.distributional import DistributionalBoosting
from distviz.estimators.ngboost import NGB, IndepNGB

__all__ = ["DaskDistributionalBoosting", "DaskIndepNGB", "DaskNGB"]


def _one_eval_set(eval_set):
    """eval_set as one tuple: a list or tuple of one (X_val, y_val[, w_val]) tuple is unwrapped."""
    if isinstance(eval_set, list):
        if len(eval_set) != 1:
            raise ConfigError(f"eval_set holds {len(eval_set)} validation sets; a Dask fit takes one: pass "
                              "[(X_val, y_val)] or (X_val, y_val).")
        return eval_set[0]
    return eval_set


def _dask_class(base, name: str):
    """The subclass of `base` with the keyword `client` and a fit that runs on the Dask workers."""
    sig = inspect.signature(base.__init__)
    params = [*sig.parameters.values(), inspect.Parameter("client", inspect.Parameter.KEYWORD_ONLY, default=None)]

    def __init__(self, *args, client=None, **kwargs):
        base.__init__(self, *args, **kwargs)
        self.client = client

    __init__.__signature__ = sig.replace(parameters=params)   # type: ignore[attr-defined]  # read by get_params

    def fit(self, X, y, sample_weight=None, eval_set=None, progress=None):
        """Fit on the workers of ``client`` (or the current Client) from row-chunked dask collections.

        Runs :func:`distviz.distributed.fit` inside ``client.as_current()`` (the current Client when ``client``
        is None): the rows stay on the workers, the client process picks the splits and keeps the fitted model.

        Parameters
        ----------
        X : dask array, dask DataFrame or dask-backed xarray DataArray of shape (n, p)
            The features, chunked by rows.
        y : dask array, dask Series / DataFrame or dask-backed DataArray
            The targets, one per row of ``X`` (shape (n,), or (n, P) for the multivariate laws).
        sample_weight : dask array of shape (n,) or None, default=None
            Row weights; None: every row weighs 1.
        eval_set : tuple or list of one tuple, or None, default=None
            ``(X_val, y_val[, w_val])`` as dask collections, or a list holding one such tuple (lightgbm.dask's
            form); a list of more than one raises ``ConfigError``. None: ``validation_fraction`` (or, for the
            NGBoost classes, ``early_stopping_rounds``) decides whether a seeded share of the rows is held out
            on the workers.
        progress : callable or None, default=None
            Called as ``progress(round, n_rounds)`` after each boosting round.

        Returns
        -------
        self
            The fitted estimator, with the same fitted attributes as an in-memory fit.
        """
        from distviz.distributed import fit as dask_fit

        ctx = self.client.as_current() if self.client is not None else contextlib.nullcontext()
        with ctx:
            return dask_fit(self, X, y, sample_weight=sample_weight, eval_set=_one_eval_set(eval_set),
                            progress=progress)

    def __sklearn_clone__(self):
        """scikit-learn's clone with the same Client (a Client cannot be deep-copied, and a clone should share it)."""
        client, self.client = self.client, None
        try:
            new = base.__sklearn_clone__(self)
        finally:
            self.client = client
        new.client = client
        return new

    def __getstate__(self):
        """The state without the Client (a prediction on dask rows ships the model to the workers; a Client does
        not pickle, and the workers need none)."""
        state = dict(base.__getstate__(self))
        state["client"] = None
        return state

    doc = f"""{base.__name__} fitted on a dask.distributed cluster: the same parameters and fitted model, and ``client``.

    :class:`distviz.boosting.{base.__name__}` with one more keyword-only parameter, ``client``. :meth:`fit` takes
    row-chunked dask collections and runs the distributed trainer, :func:`distviz.distributed.fit`: the rows stay
    on the workers, the client process picks every split from the workers' histograms and keeps the ordinary
    in-memory model, so the fitted estimator predicts, saves and loads as a
    :class:`distviz.boosting.{base.__name__}` does (``predict_*`` on a dask array return a dask array).

    Parameters
    ----------
    *args, **kwargs
        Every parameter of :class:`distviz.boosting.{base.__name__}`, with its defaults and meaning (see that
        class's Parameters section); ``get_params`` lists them with ``client``.
    client : dask.distributed.Client or None, default=None
        Keyword-only. The Client whose workers run :meth:`fit`; None: the current Client when ``fit`` is called
        (``ConfigError`` when none runs). It is not validated, is shared (not copied) by ``sklearn.clone``, and
        is dropped (None) when the estimator is pickled, e.g. when a prediction on dask rows ships the model to
        the workers.

    Attributes
    ----------
    client : dask.distributed.Client or None
        The ``client`` parameter, stored unchanged (None after unpickling).

    See Also
    --------
    distviz.boosting.{base.__name__} : The in-memory estimator and its fitted attributes.
    distviz.distributed.fit : The distributed trainer.

    Notes
    -----
    This follows lightgbm.dask / xgboost.dask: the core estimator's ``fit`` takes in-memory arrays only and,
    handed a dask collection, names this class. ``eval_set`` is ``(X_val, y_val[, w_val])`` or a list holding
    one such tuple; without it a seeded share of the rows is held out on the workers
    (``distviz.distributed.split``), as the in-memory fit does.

    Examples
    --------
    >>> from distviz.dask import {name}
    >>> est = {name}(n_estimators=10)
    >>> est.get_params()["client"] is None
    True
    >>> est.get_params()["n_estimators"]
    10
    """
    constraints = {**base._parameter_constraints, "client": "no_validation"}
    return type(name, (base,), {"__init__": __init__, "fit": fit, "__sklearn_clone__": __sklearn_clone__,
                                "__getstate__": __getstate__,
                                "__doc__": doc, "__module__": __name__, "_parameter_constraints": constraints})


DaskDistributionalBoosting = _dask_class(DistributionalBoosting, "DaskDistributionalBoosting")
DaskNGB = _dask_class(NGB, "DaskNGB")
DaskIndepNGB = _dask_class(IndepNGB, "DaskIndepNGB")
