"""Gaussian KL divergences in both directions (multivariate_ngboost_drifters.txt Sec. 4, Table 1 reports KL(pred || true))."""

from __future__ import annotations

import numpy as np

from ._util import gaussian_args

__all__ = ["gaussian_kl", "kl_pred_true", "kl_true_pred"]


def gaussian_kl(mu_p, cov_p, mu_q, cov_q) -> np.ndarray:
    """KL(N(mu_p, cov_p) || N(mu_q, cov_q)) per row.

    = (tr(S_q^-1 S_p) + (mu_q - mu_p)^T S_q^-1 (mu_q - mu_p) - P + log det S_q - log det S_p) / 2.
    Univariate inputs: means (n,), variances (n,); multivariate: (n, P) and (n, P, P).
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
    """KL(predicted || true) per row: the direction of the multivariate NGBoost paper's Table 1."""
    return gaussian_kl(mu_pred, cov_pred, mu_true, cov_true)


def kl_true_pred(mu_pred, cov_pred, mu_true, cov_true) -> np.ndarray:
    """KL(true || predicted) per row (argument order as kl_pred_true: prediction first)."""
    return gaussian_kl(mu_true, cov_true, mu_pred, cov_pred)
