"""Gaussian KL divergences in both directions (multivariate_ngboost_drifters.txt Sec. 4, Table 1 reports KL(pred || true))."""

from __future__ import annotations

import numpy as np

from ._util import gaussian_args

__all__ = ["gaussian_kl", "kl_pred_true", "kl_true_pred"]


def gaussian_kl(mu_p, cov_p, mu_q, cov_q) -> np.ndarray:
    """Kullback-Leibler divergence KL(N(mu_p, cov_p) || N(mu_q, cov_q)) of two Gaussians per row.

    ``(tr(S_q^-1 S_p) + (mu_q - mu_p)^T S_q^-1 (mu_q - mu_p) - P + log det S_q - log det S_p) / 2``,
    the closed form behind the KL columns of multivariate_ngboost_drifters.txt Sec. 4 (Table 1).
    ``S_q^-1 S_p`` and ``S_q^-1 (mu_q - mu_p)`` come from one batched linear solve; ``log det S_q``
    from its Cholesky factor (so `cov_q` must be positive definite) and ``log det S_p`` from
    ``numpy.linalg.slogdet``.

    Parameters
    ----------
    mu_p : array-like of shape (n,) or (n, P)
        Means of the first distribution (univariate: shape (n,)).
    cov_p : array-like of shape (n,) or (n, P, P)
        Its variances (univariate; a scalar broadcasts) or covariance matrices (a single (P, P)
        broadcasts over rows).
    mu_q : array-like of shape (n,) or (n, P)
        Means of the second distribution.
    cov_q : array-like of shape (n,) or (n, P, P)
        Its variances or covariance matrices, positive definite.

    Returns
    -------
    ndarray of shape (n,)
        The divergence of every row (non-negative, zero where the two Gaussians agree).

    Raises
    ------
    distviz.errors.ConfigError
        If means and covariances have incompatible shapes.
    numpy.linalg.LinAlgError
        If a `cov_q` matrix is not positive definite.

    See Also
    --------
    kl_pred_true, kl_true_pred : the two directions with the prediction passed first.

    Examples
    --------
    ``KL(N(0, 1) || N(0, 2)) = (1/2 - 1 + log 2) / 2`` and ``KL(N(1, 1) || N(0, 1)) = 1/2``:

    >>> import numpy as np
    >>> from distviz.metrics import gaussian_kl
    >>> np.round(gaussian_kl([0.0, 1.0], [1.0, 1.0], [0.0, 0.0], [2.0, 1.0]), 4).tolist()
    [0.0966, 0.5]
    """
    mp, Sp = gaussian_args(mu_p, cov_p)
    mq, Sq = gaussian_args(mu_q, cov_q)
    P = mp.shape[1]
    Lq = np.linalg.cholesky(Sq)
    d = mq - mp
    # S_q^-1 S_p and S_q^-1 d through one batched solve
    rhs = np.concatenate([Sp, d[..., None]], axis=-1)
    sol = np.linalg.solve(Sq, rhs)
    tr = np.trace(sol[..., :P], axis1=-2, axis2=-1)
    quad = np.einsum("ni,ni->n", d, sol[..., P])
    logdet_q = 2.0 * np.log(np.diagonal(Lq, axis1=-2, axis2=-1)).sum(-1)
    logdet_p = np.linalg.slogdet(Sp)[1]
    return 0.5 * (tr + quad - P + logdet_q - logdet_p)


def kl_pred_true(mu_pred, cov_pred, mu_true, cov_true) -> np.ndarray:
    """KL(predicted || true) per row, the direction of multivariate_ngboost_drifters.txt Table 1.

    ``gaussian_kl(mu_pred, cov_pred, mu_true, cov_true)``: the divergence from the predicted Gaussian
    to the true one (the simulation study of Sec. 4, where the true law is known).

    Parameters
    ----------
    mu_pred : array-like of shape (n,) or (n, P)
        Predicted means.
    cov_pred : array-like of shape (n,) or (n, P, P)
        Predicted variances or covariance matrices.
    mu_true : array-like of shape (n,) or (n, P)
        True means.
    cov_true : array-like of shape (n,) or (n, P, P)
        True variances or covariance matrices (positive definite).

    Returns
    -------
    ndarray of shape (n,)
        ``KL(N(mu_pred, cov_pred) || N(mu_true, cov_true))`` per row.

    See Also
    --------
    gaussian_kl : the formula.
    kl_true_pred : the other direction.

    Examples
    --------
    >>> from distviz.metrics import kl_pred_true
    >>> kl_pred_true([0.0], [1.0], [1.0], [1.0]).tolist()
    [0.5]
    """
    return gaussian_kl(mu_pred, cov_pred, mu_true, cov_true)


def kl_true_pred(mu_pred, cov_pred, mu_true, cov_true) -> np.ndarray:
    """KL(true || predicted) per row; the arguments come in `kl_pred_true`'s order, prediction first.

    ``gaussian_kl(mu_true, cov_true, mu_pred, cov_pred)``: the expected log-ratio under the true law,
    which penalises predicted distributions that are too narrow.

    Parameters
    ----------
    mu_pred : array-like of shape (n,) or (n, P)
        Predicted means.
    cov_pred : array-like of shape (n,) or (n, P, P)
        Predicted variances or covariance matrices (positive definite).
    mu_true : array-like of shape (n,) or (n, P)
        True means.
    cov_true : array-like of shape (n,) or (n, P, P)
        True variances or covariance matrices.

    Returns
    -------
    ndarray of shape (n,)
        ``KL(N(mu_true, cov_true) || N(mu_pred, cov_pred))`` per row.

    See Also
    --------
    gaussian_kl : the formula.
    kl_pred_true : the other direction.

    Examples
    --------
    A predicted variance of 1 against a true variance of 2: ``(2 - 1 - log 2) / 2``.

    >>> import numpy as np
    >>> from distviz.metrics import kl_true_pred
    >>> np.round(kl_true_pred([0.0], [1.0], [0.0], [2.0]), 4).tolist()
    [0.1534]
    """
    return gaussian_kl(mu_true, cov_true, mu_pred, cov_pred)
