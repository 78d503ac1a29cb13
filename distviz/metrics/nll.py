"""Weighted negative log-likelihood (mirror_vs_natural_boosting.tex, 'Monitoring during training')."""

from __future__ import annotations

import numpy as np

from ._util import weights, wmean

__all__ = ["nll", "nll_per_row"]


def nll_per_row(family, y, eta, log_h=None) -> np.ndarray:
    """Negative log-likelihood of every row under its natural parameter.

    Row i gets ``A(eta_i) - <eta_i, T(y_i)> - log h(y_i)``, the summand of the weighted empirical NLL
    of mirror_vs_natural_boosting.tex ('Boosting of MGD', paragraph 'Monitoring during training'),
    computed by the family's own ``nll`` (``distviz.families``).

    Parameters
    ----------
    family : str or ExponentialFamily
        The exponential family, by name (e.g. ``"normal"``, ``"poisson"``) or as an instance
        (``distviz.families.get`` resolves it).
    y : array-like of shape (n,) or (n, P)
        Observations, in the form the family's ``nll`` takes.
    eta : ndarray of shape (n, dim)
        Natural parameters, one row per observation.
    log_h : ndarray of shape (n,), optional
        Precomputed log carrier ``log h(y_i)``; pass it to skip recomputing it when the same ``y`` is
        scored many times (e.g. once per boosting round).

    Returns
    -------
    ndarray of shape (n,)
        The per-row negative log-likelihoods.

    Examples
    --------
    Poisson with eta = log(rate) = 0: ``A = exp(eta) = 1``, ``h(y) = 1 / y!``.

    >>> import numpy as np
    >>> from distviz.metrics import nll_per_row
    >>> np.round(nll_per_row("poisson", np.array([0.0, 2.0]), np.zeros((2, 1))), 4).tolist()
    [1.0, 1.6931]
    """
    from distviz.families import get

    return get(family).nll(y, eta, log_h=log_h)


def nll(family, y, eta, sample_weight=None, log_h=None) -> float:
    """Weighted mean negative log-likelihood.

    ``(1/W) sum_i w_i [A(eta_i) - <eta_i, T(y_i)> - log h(y_i)]`` with ``W = sum_i w_i``: the weighted
    empirical NLL of mirror_vs_natural_boosting.tex ('Boosting of MGD', paragraph 'Monitoring during
    training'); the per-row terms are those of `nll_per_row`.

    Parameters
    ----------
    family : str or ExponentialFamily
        The exponential family, by name or as an instance.
    y : array-like of shape (n,) or (n, P)
        Observations.
    eta : ndarray of shape (n, dim)
        Natural parameters, one row per observation.
    sample_weight : array-like of shape (n,), optional
        Finite non-negative row weights with a positive sum; None weighs every row 1.
    log_h : ndarray of shape (n,), optional
        Precomputed log carrier ``log h(y_i)`` (see `nll_per_row`).

    Returns
    -------
    float
        The weighted mean NLL.

    Raises
    ------
    distviz.errors.DataError
        If ``sample_weight`` is not one finite non-negative entry per row with a positive sum.

    Examples
    --------
    >>> import numpy as np
    >>> from distviz.metrics import nll
    >>> round(nll("poisson", np.array([0.0, 2.0]), np.zeros((2, 1)), sample_weight=[3.0, 1.0]), 4)
    1.1733
    """
    per = nll_per_row(family, y, eta, log_h=log_h)
    return wmean(per, weights(per.shape[0], sample_weight))
