"""Calibration of predictive distributions: the probability integral transform (PIT) and interval coverage.

Both take the distribution objects of ``predict_dist`` (``distviz.families.dist``) and the observed
y, one per row.  Under a calibrated model the PIT values are uniform on (0, 1) (Dawid 1984; Gneiting,
Balabdaoui & Raftery 2007, Sec. 3) and the share of rows inside the central ``level`` interval is
``level``.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import chi2

from distviz.errors import ConfigError, DataError
from distviz.families.base import as_rng
from distviz.families.dist import MultivariateNormalDist, UnivariateDistribution

__all__ = ["pit", "coverage", "observed"]


def observed(dist, y) -> np.ndarray:
    """y checked against the rows of `dist`: finite floats of shape (rows,) (or (rows, P) for a multivariate law)."""
    try:
        a = np.asarray(y, dtype=float)
    except (TypeError, ValueError):
        raise DataError("y must be numeric; convert the target column to numbers.") from None
    want: tuple[int, ...]
    if isinstance(dist, MultivariateNormalDist):
        if a.ndim == 1 and dist.P == 1:
            a = a[:, None]
        want = (len(dist), dist.P)
    elif isinstance(dist, UnivariateDistribution):
        if a.ndim == 2 and a.shape[1] == 1:
            a = a[:, 0]
        want = (len(dist),)
    else:
        raise ConfigError(f"expected a distribution object from predict_dist, got {type(dist).__name__}.")
    if a.shape != want:
        raise DataError(f"y has shape {a.shape} but the predicted distribution has {len(dist)} rows; pass y of "
                        f"shape {want}, one observation per predicted row.")
    if not np.all(np.isfinite(a)):
        i = int(np.argmin(np.isfinite(a).reshape(len(a), -1).all(axis=1)))
        raise DataError(f"y[{i}] is not a finite number; drop rows with missing targets before scoring.")
    return a


def pit(dist, y, random_state=None) -> np.ndarray:
    """Probability integral transform per row, shape (rows,): uniform on (0, 1) when the law is right.

    Continuous laws: F(y).  Discrete laws: the randomised PIT F(y-) + u (F(y) - F(y-)) with u ~ U(0, 1)
    drawn from ``random_state`` (Czado, Gneiting & Held 2009, eq. 1), uniform when the law is right.
    A multivariate Normal: the chi-square cdf (P degrees of freedom) of the squared Mahalanobis
    distance of y, uniform under the law.

    Parameters
    ----------
    dist : distribution object
        The predicted laws, one per row (an estimator's ``predict_dist(X)``, a ``distviz.families.dist`` object).
    y : array-like of shape (rows,) or (rows, P)
        The observations, one per row (P columns for a multivariate Normal).
    random_state : int, Generator or None, default=None
        Seed of the uniform draws of a discrete law's randomised PIT.

    Returns
    -------
    ndarray of shape (rows,)
        Values in [0, 1].
    """
    y = observed(dist, y)
    if isinstance(dist, MultivariateNormalDist):
        return chi2.cdf(dist.mahalanobis2(y), dist.P)
    hi = np.asarray(dist.cdf(y), dtype=float)
    if not dist.discrete:
        return hi
    lo = np.asarray(dist.cdf_left(y), dtype=float)
    return lo + as_rng(random_state).random(len(dist)) * (hi - lo)


def coverage(dist, y, levels=(0.5, 0.8, 0.9, 0.95)) -> np.ndarray:
    """Share of rows whose y lies in the central interval ``dist.interval(level)``, one value per level.

    Intervals are closed (lower <= y <= upper); a discrete law's interval holds at least ``level`` of
    its mass, so its coverage can exceed the level even for a right law.  A multivariate Normal uses
    its ``level`` prediction ellipsoid, squared Mahalanobis distance <= chi2_P^-1(level)
    (``distviz.metrics.regions``).

    Parameters
    ----------
    dist : distribution object
        The predicted laws, one per row (an estimator's ``predict_dist(X)``, a ``distviz.families.dist`` object).
    y : array-like of shape (rows,) or (rows, P)
        The observations, one per row (P columns for a multivariate Normal).
    levels : sequence of float, default=(0.5, 0.8, 0.9, 0.95)
        Nominal levels, each strictly between 0 and 1.

    Returns
    -------
    ndarray of shape (len(levels),)
        The share of rows covered at each level.
    """
    y = observed(dist, y)
    lv = np.atleast_1d(np.asarray(levels, dtype=float))
    if lv.ndim != 1 or not np.all((lv > 0) & (lv < 1)):
        raise ConfigError(f"levels must lie strictly between 0 and 1, got {levels!r}; e.g. (0.5, 0.9).")
    if isinstance(dist, MultivariateNormalDist):
        d2 = dist.mahalanobis2(y)
        return np.array([np.mean(d2 <= chi2.ppf(a, dist.P)) for a in lv])
    out = np.empty(lv.shape[0])
    for i, a in enumerate(lv):
        lo, hi = dist.interval(a)
        out[i] = np.mean((y >= lo) & (y <= hi))
    return out
