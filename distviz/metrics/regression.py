"""Point-prediction errors: RMSE (multivariate_ngboost_drifters.txt Sec. 5.2)."""

from __future__ import annotations

import numpy as np

from distviz.errors import ConfigError, DataError

from ._util import weights

__all__ = ["rmse", "mae"]


def _pair(y_true, y_pred):
    yt = np.asarray(y_true, dtype=float)
    yp = np.asarray(y_pred, dtype=float)
    if yt.shape != yp.shape:
        raise DataError(f"y_true and y_pred must have the same shape, got {yt.shape} and {yp.shape}.")
    if yt.ndim == 1:
        yt, yp = yt[:, None], yp[:, None]
    return yt, yp


def rmse(y_true, y_pred, sample_weight=None, multioutput: str = "euclidean"):
    """Root mean squared error; for (n, P) outputs `multioutput` picks the pooling.

    'euclidean' (default): sqrt(mean_i ||y_i - yhat_i||^2) (the drifter paper's RMSE, Sec. 5.2);
    'pooled': sqrt of the mean over all n*P entries; 'uniform_average': mean of the per-output
    RMSEs; 'raw_values': the per-output RMSEs.  All agree for one output.
    """
    yt, yp = _pair(y_true, y_pred)
    w = weights(yt.shape[0], sample_weight)
    w = np.full(yt.shape[0], 1.0 / yt.shape[0]) if w is None else w / w.sum()
    se = (yt - yp) ** 2
    per_out = w @ se
    if multioutput == "euclidean":
        return float(np.sqrt(per_out.sum()))
    if multioutput == "pooled":
        return float(np.sqrt(per_out.mean()))
    if multioutput == "uniform_average":
        return float(np.sqrt(per_out).mean())
    if multioutput == "raw_values":
        return np.sqrt(per_out)
    raise ConfigError(f"unknown multioutput {multioutput!r}; choose 'euclidean', 'pooled', 'uniform_average' or 'raw_values'.")


def mae(y_true, y_pred, sample_weight=None) -> float:
    """Mean absolute error (Euclidean norm per row for multivariate outputs)."""
    yt, yp = _pair(y_true, y_pred)
    w = weights(yt.shape[0], sample_weight)
    d = np.sqrt(((yt - yp) ** 2).sum(axis=1))
    return float(np.mean(d) if w is None else w @ d / w.sum())
