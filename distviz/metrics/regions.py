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
    """Chi-square quantile ``q = chi2_P^-1(level)`` that bounds the squared Mahalanobis distance.

    The right-hand side of multivariate_ngboost_drifters.txt eq. 6: ``y`` lies in the `level`
    prediction region of ``N(mu, Sigma)`` iff ``(y - mu)^T Sigma^-1 (y - mu) <= q``.

    Parameters
    ----------
    P : int
        Dimension of the Gaussian (degrees of freedom of the chi-square law).
    level : float, default=0.9
        Probability content of the region, strictly between 0 and 1.

    Returns
    -------
    float
        The quantile ``q``.

    Raises
    ------
    distviz.errors.ConfigError
        If `level` is not strictly between 0 and 1.

    Examples
    --------
    >>> from distviz.metrics import region_quantile
    >>> round(region_quantile(1, 0.95), 4)   # 1.96 ** 2
    3.8415
    >>> round(region_quantile(2, 0.9), 4)    # -2 log(0.1)
    4.6052
    """
    level = float(level)
    if not 0.0 < level < 1.0:
        raise ConfigError(f"prediction-region level must lie strictly between 0 and 1, got {level!r}; e.g. 0.9.")
    return float(chi2.ppf(level, int(P)))


def mahalanobis2(y, mu, cov) -> np.ndarray:
    """Squared Mahalanobis distance ``(y - mu)^T Sigma^-1 (y - mu)`` of every row.

    The left-hand side of multivariate_ngboost_drifters.txt eq. 6, computed with one batched linear
    solve per row (no explicit inverse).

    Parameters
    ----------
    y : array-like of shape (n,) or (n, P)
        Observations, of the shape of `mu`.
    mu : array-like of shape (n,) or (n, P)
        Gaussian means.
    cov : array-like of shape (n,) or (n, P, P)
        Variances (univariate) or covariance matrices; a single (P, P) matrix broadcasts over rows.

    Returns
    -------
    ndarray of shape (n,)
        The squared distances.

    Raises
    ------
    distviz.errors.DataError
        If `y` does not have the shape of `mu`.
    distviz.errors.ConfigError
        If `mu` and `cov` have incompatible shapes.

    Examples
    --------
    >>> from distviz.metrics import mahalanobis2
    >>> mahalanobis2([1.0, 2.0], [0.0, 0.0], [1.0, 4.0]).tolist()
    [1.0, 1.0]
    """
    m, S = gaussian_args(mu, cov)
    y = np.asarray(y, dtype=float)
    y = y[:, None] if y.ndim == 1 else y
    if y.shape != m.shape:
        raise DataError(f"y must have the shape of the predicted means {m.shape}, got {y.shape}.")
    r = y - m
    return np.einsum("ni,ni->n", r, np.linalg.solve(S, r[..., None])[..., 0])


def in_region(y, mu, cov, level: float = 0.9) -> np.ndarray:
    """Whether each row's observation lies inside its `level` prediction region.

    ``mahalanobis2(y, mu, cov) <= region_quantile(P, level)`` (multivariate_ngboost_drifters.txt
    eq. 6); for P = 1 the region is the central interval ``mu +- sqrt(q sigma^2)``.

    Parameters
    ----------
    y : array-like of shape (n,) or (n, P)
        Observations.
    mu : array-like of shape (n,) or (n, P)
        Predicted means.
    cov : array-like of shape (n,) or (n, P, P)
        Predicted variances or covariance matrices.
    level : float, default=0.9
        Probability content of the region, strictly between 0 and 1.

    Returns
    -------
    ndarray of bool, shape (n,)
        True where ``y`` is inside the region (the boundary counts as inside).

    Examples
    --------
    >>> from distviz.metrics import in_region
    >>> in_region([1.0, 3.0], [0.0, 0.0], [1.0, 1.0], level=0.9).tolist()
    [True, False]
    """
    m = np.asarray(mu)
    P = 1 if m.ndim <= 1 else m.shape[1]
    return mahalanobis2(y, mu, cov) <= region_quantile(P, level)


def region_coverage(y, mu, cov, level: float = 0.9, sample_weight=None) -> float:
    """Weighted fraction of rows whose observation lies in its `level` prediction region.

    ``sum_i w_i 1{y_i in region_i} / sum_i w_i`` with the regions of `in_region`: the '90% PR cov'
    row of multivariate_ngboost_drifters.txt Table 2 (Sec. 5.2, the coverage of eq. 6).  A
    calibrated model's coverage is close to `level`.

    Parameters
    ----------
    y : array-like of shape (n,) or (n, P)
        Observations.
    mu : array-like of shape (n,) or (n, P)
        Predicted means.
    cov : array-like of shape (n,) or (n, P, P)
        Predicted variances or covariance matrices.
    level : float, default=0.9
        Probability content of the regions, strictly between 0 and 1.
    sample_weight : array-like of shape (n,), optional
        Finite non-negative row weights with a positive sum; None weighs every row equally.

    Returns
    -------
    float
        The covered fraction, in [0, 1].

    Examples
    --------
    >>> from distviz.metrics import region_coverage
    >>> round(region_coverage([1.0, 2.0, 3.0], [0.0, 0.0, 0.0], [1.0, 4.0, 1.0]), 4)
    0.6667
    """
    inside = in_region(y, mu, cov, level).astype(float)
    return wmean(inside, weights(inside.shape[0], sample_weight))


def region_area(cov, level: float = 0.9) -> np.ndarray:
    """Volume of every row's `level` prediction region.

    The region of eq. 6 is a hyper-ellipsoid of volume
    ``pi^(P/2) / Gamma(P/2 + 1) q^(P/2) sqrt(det Sigma)`` with ``q = region_quantile(P, level)``
    (multivariate_ngboost_drifters.txt eq. 7): ``pi q sqrt(det Sigma)`` for P = 2, the interval
    length ``2 sqrt(q sigma^2)`` for P = 1.  It is computed in log space from
    ``numpy.linalg.slogdet``.

    Parameters
    ----------
    cov : array-like of shape (n,) or (n, P, P)
        Variances (univariate) or covariance matrices.
    level : float, default=0.9
        Probability content of the region, strictly between 0 and 1.

    Returns
    -------
    ndarray of shape (n,)
        The volumes (lengths for P = 1, areas for P = 2); NaN where a matrix's determinant is not
        positive.

    Examples
    --------
    >>> import numpy as np
    >>> from distviz.metrics import region_area
    >>> np.round(region_area([1.0, 4.0], level=0.9), 4).tolist()   # 2 * 1.6449 * sigma
    [3.2897, 6.5794]
    >>> np.round(region_area(np.eye(2)[None], level=0.9), 4).tolist()   # pi * 4.6052
    [14.4676]
    """
    cov = np.asarray(cov, dtype=float)
    if cov.ndim <= 1:
        cov = np.atleast_1d(cov)[:, None, None]
    P = cov.shape[-1]
    q = region_quantile(P, level)
    sign, logdet = np.linalg.slogdet(cov)
    logvol = 0.5 * P * np.log(np.pi) - gammaln(0.5 * P + 1.0) + 0.5 * P * np.log(q) + 0.5 * logdet
    return np.where(sign > 0, np.exp(logvol), np.nan)


def mean_region_area(cov, level: float = 0.9, sample_weight=None) -> float:
    """Weighted mean volume of the rows' `level` prediction regions.

    ``sum_i w_i region_area(cov_i) / sum_i w_i``: the '90% PR area' row of
    multivariate_ngboost_drifters.txt Table 2 (Sec. 5.2, eq. 7).  Smaller is sharper at equal
    coverage.  A row with a non-positive determinant has volume NaN, which makes the mean NaN.

    Parameters
    ----------
    cov : array-like of shape (n,) or (n, P, P)
        Predicted variances or covariance matrices.
    level : float, default=0.9
        Probability content of the regions, strictly between 0 and 1.
    sample_weight : array-like of shape (n,), optional
        Finite non-negative row weights with a positive sum; None weighs every row equally.

    Returns
    -------
    float
        The mean volume.

    Examples
    --------
    >>> from distviz.metrics import mean_region_area
    >>> round(mean_region_area([1.0, 4.0], level=0.9), 4)
    4.9346
    """
    a = region_area(cov, level)
    return wmean(a, weights(a.shape[0], sample_weight))
