"""Classification metrics through scikit-learn: PR-AUC (average precision)."""

from __future__ import annotations

import numpy as np
from sklearn.metrics import auc, average_precision_score, precision_recall_curve

from distviz.errors import ConfigError, DataError

from ._util import weights

__all__ = ["pr_auc"]


def _binary(y, s, w, method):
    if method == "average_precision":
        return float(average_precision_score(y, s, sample_weight=w))
    if method == "trapezoid":
        p, r, _ = precision_recall_curve(y, s, sample_weight=w)
        return float(auc(r, p))
    raise ConfigError(f"unknown PR-AUC method {method!r}; choose 'average_precision' or 'trapezoid'.")


def pr_auc(y_true, score, sample_weight=None, method: str = "average_precision") -> float:
    """Area under the precision-recall curve (PR-AUC), computed with scikit-learn.

    Binary: labels in {0, 1} and one score per row (or (n, 2) class probabilities, of which the
    second column is used).  Multiclass: labels 0..K-1 and scores (n, K); the result is the
    unweighted (macro) mean of the one-vs-rest areas over the classes present in `y_true`.

    Parameters
    ----------
    y_true : array-like of shape (n,)
        Labels: 0/1 for binary scores, integers 0..K-1 for (n, K) scores.
    score : array-like of shape (n,), (n, 2) or (n, K)
        Scores (e.g. predicted probabilities); larger means more likely positive.
    sample_weight : array-like of shape (n,), optional
        Finite non-negative row weights with a positive sum; None weighs every row equally.
    method : {'average_precision', 'trapezoid'}, default='average_precision'
        ``sklearn.metrics.average_precision_score`` (the step-wise area, default) or the trapezoidal
        area under ``sklearn.metrics.precision_recall_curve`` (``sklearn.metrics.auc``).

    Returns
    -------
    float
        The area, in [0, 1].

    Raises
    ------
    distviz.errors.DataError
        If `y_true` is not 1-D with one score row per label, or the labels do not match the scores.
    distviz.errors.ConfigError
        If `method` is unknown.

    Examples
    --------
    >>> from distviz.metrics import pr_auc
    >>> round(pr_auc([0, 1, 1, 0], [0.1, 0.9, 0.4, 0.5]), 4)
    0.8333
    >>> pr_auc([0, 1, 2], [[0.8, 0.1, 0.1], [0.2, 0.7, 0.1], [0.3, 0.3, 0.4]])
    1.0
    """
    y = np.asarray(y_true)
    s = np.asarray(score, dtype=float)
    if y.ndim != 1 or s.shape[0] != y.shape[0]:
        raise DataError(f"y_true must be 1-D with one score row per label, got shapes {y.shape} and {s.shape}.")
    w = weights(y.shape[0], sample_weight)
    if s.ndim == 2 and s.shape[1] == 2:
        s = s[:, 1]
    if s.ndim == 1:
        if not np.isin(y, (0, 1)).all():
            raise DataError("binary PR-AUC needs labels 0 and 1; pass (n, K) scores for multiclass labels.")
        return _binary(y, s, w, method)
    K = s.shape[1]
    if not np.isin(y, np.arange(K)).all():
        raise DataError(f"labels must be integers 0..{K - 1} for scores with {K} columns.")
    present = [k for k in range(K) if (y == k).any()]
    return float(np.mean([_binary((y == k).astype(int), s[:, k], w, method) for k in present]))
