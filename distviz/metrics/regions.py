"""Prediction regions of P-variate Gaussians: coverage and volume (multivariate_ngboost_drifters.txt eq. 6-7).

y lies in the a% region iff (y - mu)^T Sigma^-1 (y - mu) <= chi2_P^-1(a) = q  (eq. 6); the region is a
hyper-ellipsoid of volume pi^{P/2} / Gamma(P/2 + 1) q^{P/2} sqrt(det Sigma)  (eq. 7; pi q sqrt(det Sigma)
for P = 2, an interval of length 2 sqrt(q sigma^2) for P = 1).
"""

from __future__ import annotations

import numpy as np
from scipy.special import gammaln
from scipy.stats import chi2

from distviz.errors import ConfigError, DataError

from ._util import gaussian_args, weights, wmean

__all__ = ["region_quantile", "mahalanobis2", "in_region", "region_coverage", "region_area", "mean_region_area"]


def region_quantile(P: int, level: float = 0.9) -> float:
    """chi-square quantile q = chi2_P^-1(level) bounding the squared Mahalanobis distance."""
    level = float(level)
    if not 0.0 < level < 1.0:
        raise ConfigError(f"prediction-region level must lie strictly between 0 and 1, got {level!r}; e.g. 0.9.")
    return float(chi2.ppf(level, int(P)))


def mahalanobis2(y, mu, cov) -> np.ndarray:
    """(y - mu)^T Sigma^-1 (y - mu) per row; y (n,) or (n, P) matching mu."""
    m, S = gaussian_args(mu, cov)
    y = np.asarray(y, dtype=float)
    y = y[:, None] if y.ndim == 1 else y
    if y.shape != m.shape:
        raise DataError(f"y must have the shape of the predicted means {m.shape}, got {y.shape}.")
    r = y - m
    return np.einsum("ni,ni->n", r, np.linalg.solve(S, r[..., None])[..., 0])


def in_region(y, mu, cov, level: float = 0.9) -> np.ndarray:
    """Boolean per row: y inside the level prediction region (eq. 6)."""
    m = np.asarray(mu)
    P = 1 if m.ndim <= 1 else m.shape[1]
    return mahalanobis2(y, mu, cov) <= region_quantile(P, level)


def region_coverage(y, mu, cov, level: float = 0.9, sample_weight=None) -> float:
    """Weighted fraction of rows whose y lies in the level prediction region (paper Table 2 'PR cov')."""
    inside = in_region(y, mu, cov, level).astype(float)
    return wmean(inside, weights(inside.shape[0], sample_weight))


def region_area(cov, level: float = 0.9) -> np.ndarray:
    """Volume of the level prediction region per row (eq. 7); covariances (n, P, P) or variances (n,)."""
    cov = np.asarray(cov, dtype=float)
    if cov.ndim <= 1:
        cov = np.atleast_1d(cov)[:, None, None]
    P = cov.shape[-1]
    q = region_quantile(P, level)
    sign, logdet = np.linalg.slogdet(cov)
    logvol = 0.5 * P * np.log(np.pi) - gammaln(0.5 * P + 1.0) + 0.5 * P * np.log(q) + 0.5 * logdet
    return np.where(sign > 0, np.exp(logvol), np.nan)


def mean_region_area(cov, level: float = 0.9, sample_weight=None) -> float:
    """Weighted average region volume (paper Table 2 'PR area')."""
    a = region_area(cov, level)
    return wmean(a, weights(a.shape[0], sample_weight))
