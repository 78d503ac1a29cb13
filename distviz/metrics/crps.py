"""Continuous ranked probability score of predictive distributions: closed forms where they exist, samples otherwise.

CRPS(F, y) = int (F(x) - 1{x >= y})^2 dx = E|X - y| - E|X - X'| / 2 with X, X' ~ F independent
(Gneiting & Raftery 2007, eq. 20-21); lower is better, in the units of y.  ``crps(dist, y)`` takes
the distribution objects of ``predict_dist`` (``distviz.families.dist``) and returns one score per
row:

- Normal: sigma (z (2 Phi(z) - 1) + 2 phi(z) - 1 / sqrt(pi)), z = (y - mu) / sigma (Gneiting & Raftery
  2007, eq. 5; Gneiting et al. 2005);
- Gamma(shape a, rate b) and the Exponential (a = 1): y (2 F_a(y) - 1) - (a / b)(2 F_{a+1}(y) - 1)
  - 1 / (b B(1/2, a)), F_a the Gamma(a, b) cdf (Scheuerer & Moeller 2015, eq. 9);
- Poisson(lambda): (y - lambda)(2 F(y) - 1) + 2 lambda f(floor y) - lambda e^{-2 lambda}
  (I_0(2 lambda) + I_1(2 lambda)) (Wei & Held 2014, Sec. 2.2);
- other laws on the integers 0, 1, 2, ... (Bernoulli, Categorical labels, Poisson mixtures): the
  integral summed exactly over unit cells, where F is constant, from min(0, y) up to the largest row's
  1 - 1e-12 quantile (the mass left out adds at most about 1e-12 per row);
- a mixture of Normals: the closed form of Grimit et al. (2006, eq. 3),
  sum_i w_i A(y - mu_i, s_i^2) - 1/2 sum_ij w_i w_j A(mu_i - mu_j, s_i^2 + s_j^2),
  A(m, s^2) = m (2 Phi(m / s) - 1) + 2 s phi(m / s);
- N point masses (particles): the energy form exactly, mean_i |x_i - y| - sum_ij |x_i - x_j| / (2 N^2);
- any other continuous law: the energy form on ``n_samples`` draws (two independent halves);
- a multivariate Normal: the energy score E||X - y|| - E||X - X'|| / 2 (Gneiting & Raftery 2007,
  eq. 22, beta = 1), the CRPS's multivariate generalisation, on ``n_samples`` draws.
"""

from __future__ import annotations

import numpy as np
from scipy import stats
from scipy.special import beta as beta_fn
from scipy.special import i0e, i1e

from distviz.families.base import as_rng
from distviz.families.dist import (
    EmpiricalDist,
    ExponentialDist,
    GammaDist,
    MixtureDist,
    MultivariateNormalDist,
    NormalDist,
    PoissonDist,
)

from .calibration import observed

__all__ = ["crps"]

#: upper tail left out of the sum over a discrete law's support
_TAIL = 1e-12


def crps(dist, y, n_samples: int = 2000, random_state=None) -> np.ndarray:
    r"""Continuous ranked probability score of each row's predictive law at its observed y (lower is better).

    .. math:: \mathrm{CRPS}(F, y) = \int (F(x) - 1\{x \ge y\})^2\,dx = E|X - y| - \tfrac12 E|X - X'|

    with :math:`X, X' \sim F` independent (Gneiting & Raftery 2007, eq. 20-21), in the units of y. Closed forms
    for the Normal (eq. 5), the Gamma and Exponential (Scheuerer & Moeller 2015, eq. 9), the Poisson (Wei & Held
    2014), a mixture of Normals (Grimit et al. 2006, eq. 3) and point masses; an exact sum over the support for
    other integer laws; the energy form on samples for any other continuous law; the energy score (eq. 22) for a
    multivariate Normal.

    Parameters
    ----------
    dist : distribution object
        The predicted laws, one per row (an estimator's ``predict_dist(X)``, a ``distviz.families.dist`` object).
    y : array-like of shape (rows,) or (rows, P)
        The observations, one per row (P columns for a multivariate Normal).
    n_samples : int, default=2000
        Draws used where no closed form applies (a continuous law other than those above, and the multivariate
        Normal's energy score).
    random_state : int, Generator or None, default=None
        Seed of those draws.

    Returns
    -------
    ndarray of shape (rows,)
    """
    y = observed(dist, y)
    if isinstance(dist, MultivariateNormalDist):
        return _energy_score(dist, y, n_samples, random_state)
    if isinstance(dist, NormalDist):
        return _crps_normal(dist.loc, dist.scale, y)
    if isinstance(dist, GammaDist):
        return _crps_gamma(dist.shape, dist.rate, y)
    if isinstance(dist, ExponentialDist):
        return _crps_gamma(np.ones_like(dist.rate), dist.rate, y)
    if isinstance(dist, PoissonDist):
        return _crps_poisson(dist.rate, y)
    if isinstance(dist, MixtureDist) and not dist.discrete and dist.components.dist.name == "norm":
        loc, scale = _norm_params(dist.components)
        return _crps_normal_mixture(loc, scale, dist.weights, y)
    if isinstance(dist, EmpiricalDist):
        return _crps_points(dist.points, y)
    if dist.discrete:
        return _crps_integer(dist, y)
    return _crps_sampled(dist, y, n_samples, random_state)


def _crps_normal(mu, sigma, y):
    z = (y - mu) / sigma
    return sigma * (z * (2.0 * stats.norm.cdf(z) - 1.0) + 2.0 * stats.norm.pdf(z) - 1.0 / np.sqrt(np.pi))


def _crps_gamma(a, b, y):
    yp = np.maximum(y, 0.0)   # below the support F_a(y) = 0: the same formula with F_a = 0
    return (y * (2.0 * stats.gamma.cdf(yp, a, scale=1.0 / b) - 1.0)
            - a / b * (2.0 * stats.gamma.cdf(yp, a + 1.0, scale=1.0 / b) - 1.0)
            - 1.0 / (b * beta_fn(0.5, a)))


def _crps_poisson(lam, y):
    fl = np.floor(y)
    F = stats.poisson.cdf(fl, lam)
    f = np.where(fl >= 0, stats.poisson.pmf(np.maximum(fl, 0.0), lam), 0.0)
    return (y - lam) * (2.0 * F - 1.0) + 2.0 * lam * f - lam * (i0e(2.0 * lam) + i1e(2.0 * lam))


def _norm_params(frozen):
    """(loc, scale) of a frozen scipy.stats.norm, however they were passed."""
    args = list(frozen.args) + [None, None]
    loc = frozen.kwds.get("loc", args[0] if args[0] is not None else 0.0)
    scale = frozen.kwds.get("scale", args[1] if args[1] is not None else 1.0)
    return np.asarray(loc, dtype=float), np.asarray(scale, dtype=float)


def _a(m, s):
    """A(m, s^2) = E|m + s Z| for Z ~ N(0, 1), written with s the standard deviation."""
    z = m / s
    return m * (2.0 * stats.norm.cdf(z) - 1.0) + 2.0 * s * stats.norm.pdf(z)


def _crps_normal_mixture(loc, scale, w, y):
    loc, scale = np.broadcast_arrays(loc, scale)
    first = np.sum(w * _a(y[:, None] - loc, scale), axis=1)
    pair = _a(loc[:, :, None] - loc[:, None, :], np.sqrt(scale[:, :, None] ** 2 + scale[:, None, :] ** 2))
    return first - 0.5 * np.einsum("ni,nij,nj->n", w, pair, w)


def _crps_points(x, y):
    """Energy form of N sorted point masses per row: sum_ij |x_i - x_j| = 2 sum_i (2 i - N + 1) x_(i)."""
    N = x.shape[1]
    first = np.mean(np.abs(x - y[:, None]), axis=1)
    pairs = 2.0 * (x @ (2.0 * np.arange(N) - N + 1.0))
    return first - pairs / (2.0 * N * N)


def _crps_integer(dist, y):
    """Sum over unit cells [k, k + 1) of a law on the integers, where F(x) = F(k)."""
    top = np.max(dist.ppf(np.full(len(dist), 1.0 - _TAIL)))
    lo = min(0.0, float(np.floor(np.min(y))))
    hi = max(float(top), float(np.ceil(np.max(y)))) + 1.0
    k = np.arange(lo, hi)[:, None]                      # (cells, 1)
    F = np.where(k < 0, 0.0, dist.cdf(k))               # (cells, rows)
    t = np.clip(y[None, :] - k, 0.0, 1.0)               # share of the cell below y, where the indicator is 0
    return np.sum(t * F * F + (1.0 - t) * (F - 1.0) ** 2, axis=0)


def _crps_sampled(dist, y, n_samples, random_state):
    h = max(int(n_samples) // 2, 1)
    draws = dist.sample(2 * h, random_state=as_rng(random_state))
    a, b = draws[:h], draws[h:]
    return 0.5 * (np.mean(np.abs(a - y), axis=0) + np.mean(np.abs(b - y), axis=0)) - 0.5 * np.mean(np.abs(a - b), axis=0)


def _energy_score(dist, y, n_samples, random_state):
    h = max(int(n_samples) // 2, 1)
    draws = dist.sample(2 * h, random_state=as_rng(random_state))
    a, b = draws[:h], draws[h:]
    first = 0.5 * (np.linalg.norm(a - y, axis=-1).mean(0) + np.linalg.norm(b - y, axis=-1).mean(0))
    return first - 0.5 * np.linalg.norm(a - b, axis=-1).mean(0)
