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

    With weights normalised to ``sum_i w_i = 1`` (uniform ``1/n`` without ``sample_weight``), the
    per-output mean squared errors are ``m_j = sum_i w_i (y_ij - yhat_ij)^2``, and

    * ``'euclidean'`` (default): ``sqrt(sum_j m_j) = sqrt(mean_i ||y_i - yhat_i||^2)``, the RMSE of
      multivariate_ngboost_drifters.txt Sec. 5.2 (its Table 2);
    * ``'pooled'``: ``sqrt(mean_j m_j)``, the root of the mean over all n*P entries;
    * ``'uniform_average'``: ``mean_j sqrt(m_j)``, the mean of the per-output RMSEs;
    * ``'raw_values'``: ``sqrt(m_j)`` per output.

    All four agree for one output.

    Parameters
    ----------
    y_true : array-like of shape (n,) or (n, P)
        Observed values.
    y_pred : array-like of the shape of `y_true`
        Point predictions (e.g. predicted means).
    sample_weight : array-like of shape (n,), optional
        Finite non-negative row weights with a positive sum; None weighs every row equally.
    multioutput : {'euclidean', 'pooled', 'uniform_average', 'raw_values'}, default='euclidean'
        How the P outputs are pooled (see above).

    Returns
    -------
    float or ndarray of shape (P,)
        The RMSE; an array of per-output RMSEs for ``multioutput='raw_values'`` (shape (1,) for 1-D
        inputs).

    Raises
    ------
    distviz.errors.DataError
        If the shapes of `y_true` and `y_pred` differ, or the weights are invalid.
    distviz.errors.ConfigError
        If `multioutput` is not one of the four names.

    Examples
    --------
    >>> from distviz.metrics import rmse
    >>> y, yhat = [[0.0, 0.0], [1.0, 1.0]], [[1.0, 0.0], [1.0, 2.0]]
    >>> rmse(y, yhat)
    1.0
    >>> [round(float(r), 4) for r in rmse(y, yhat, multioutput="raw_values")]
    [0.7071, 0.7071]
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
    """Mean absolute error; for (n, P) outputs the error of a row is its Euclidean norm.

    ``sum_i w_i ||y_i - yhat_i|| / sum_i w_i`` (unweighted: the plain mean over rows); for one
    output ``||y_i - yhat_i|| = |y_i - yhat_i|``.

    Parameters
    ----------
    y_true : array-like of shape (n,) or (n, P)
        Observed values.
    y_pred : array-like of the shape of `y_true`
        Point predictions.
    sample_weight : array-like of shape (n,), optional
        Finite non-negative row weights with a positive sum; None weighs every row equally.

    Returns
    -------
    float
        The (weighted) mean absolute error.

    Raises
    ------
    distviz.errors.DataError
        If the shapes of `y_true` and `y_pred` differ, or the weights are invalid.

    Examples
    --------
    >>> from distviz.metrics import mae
    >>> mae([0.0, 1.0, 2.0], [0.0, 2.0, 4.0])
    1.0
    """
    yt, yp = _pair(y_true, y_pred)
    w = weights(yt.shape[0], sample_weight)
    d = np.sqrt(((yt - yp) ** 2).sum(axis=1))
    return float(np.mean(d) if w is None else w @ d / w.sum())
