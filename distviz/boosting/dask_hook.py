"""The estimators' one door to their Dask backend, ``distviz.distributed``, which sits above them.

``distviz.distributed`` runs the boosting laws and NGBoost on the workers of a ``dask.distributed`` cluster and
so imports this package; this package never imports it back.  A fitted estimator asked to predict on a dask
collection (a dask array or DataFrame, a dask-backed xarray object) asks :func:`backend` for the module that
predicts it chunk by chunk (a fit on dask input is ``distviz.dask``'s, above this layer):
the one registered with :func:`register_backend` (``distviz.distributed`` registers itself when it is
imported), else the module named by ``BACKEND``, imported by that name then.  That deferred, named import is
the only way the estimators reach above their layer, and it happens only for dask input, so importing the
estimators imports no Dask module (``tests/test_layers.py`` checks both).
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

__all__ = ["BACKEND", "backend", "is_dask_collection", "register_backend"]

#: module imported by :func:`backend` when none has registered: it must call :func:`register_backend` on import
BACKEND = "distviz.distributed"
_backends: list[Any] = []


def is_dask_collection(x) -> bool:
    """True for a dask collection; False without importing anything when dask is not loaded (then there is none)."""
    dask = sys.modules.get("dask")
    if dask is None or not hasattr(dask, "is_dask_collection"):
        return False
    return bool(dask.is_dask_collection(x))


def register_backend(module: Any) -> None:
    """Make `module` the estimators' Dask backend: it provides ``fit(model, X, y, sample_weight, eval_set,
    progress)`` and ``predict_blocks(method, X, n_out, **kw)``."""
    for name in ("fit", "predict_blocks"):
        if not callable(getattr(module, name, None)):
            raise TypeError(f"a Dask backend must provide {name}(); {module!r} does not")
    if module not in _backends:
        _backends.append(module)


def backend() -> Any:
    """The registered Dask backend, importing ``BACKEND`` (which registers itself) the first time it is needed."""
    if not _backends:
        importlib.import_module(BACKEND)
    if not _backends:
        raise RuntimeError(f"{BACKEND} did not register itself as the estimators' Dask backend")
    return _backends[-1]
