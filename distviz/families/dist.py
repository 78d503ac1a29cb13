"""Predictive distribution objects: what every estimator's ``predict_dist(X)`` returns, one law per row.

Univariate laws share one interface (``UnivariateDistribution``): ``mean()``, ``var()``, ``std()``,
``logpdf(y)`` (log density, or log mass for a discrete law), ``cdf(y)``, ``ppf(q)``,
``interval(level)`` -> (lower, upper) and ``sample(n, random_state)`` -> (n, rows), all vectorised
over the rows.  ``y`` and ``q`` broadcast against the rows as numpy does: shape (rows,) gives one
value per row, a scalar the same value for every row, shape (G, 1) a grid (G, rows).

- ``NormalDist``, ``PoissonDist``, ``BernoulliDist``, ``GammaDist``, ``ExponentialDist``: scipy.stats
  frozen distributions with one parameter per row (``.frozen``);
- ``CategoricalDist``: class probabilities (rows, K) on the labels 0..K-1;
- ``MixtureDist``: a weighted (default: equally weighted) mixture of N scipy components per row,
  e.g. WGBoost's predictive (1/N) sum_n p(y | theta_n(x)) (Matsubara, eq. 6);
- ``EmpiricalDist``: N equally weighted point masses per row (WGBoost particles of a target without
  an output likelihood).

Discrete laws follow scipy.stats: ``ppf(q)`` is the smallest support point k with ``cdf(k) >= q``
(so ``ppf(0)`` lies below the support: -1 for counts) and ``interval(level)`` is
``(ppf((1 - level) / 2), ppf((1 + level) / 2))``, which holds at least ``level`` of the mass.

``MultivariateNormalDist`` is the P-variate Normal per row: ``mean()`` (rows, P), ``cov()``
(rows, P, P), ``var()`` / ``std()`` (rows, P), ``corr()``, ``rho`` (correlation of the first two
outputs), ``logpdf(Y)``, ``sample(n, random_state)`` -> (n, rows, P) and ``marginal(j)``.

``from_natural(family, eta)`` builds the law of an exponential family (``distviz.families``) at
natural parameters eta.
"""

from __future__ import annotations

import numpy as np
from scipy import stats
from scipy.special import expit, logsumexp

from distviz.errors import ConfigError

from .base import as_rng

__all__ = ["UnivariateDistribution", "ScipyDistribution", "NormalDist", "PoissonDist", "BernoulliDist", "GammaDist",
           "ExponentialDist", "CategoricalDist", "MixtureDist", "EmpiricalDist", "MultivariateNormalDist",
           "from_natural"]

#: bisection steps of a continuous mixture's ppf: the bracket shrinks by 2^-200, below double resolution
_BISECT = 200


def _level(level):
    """The central probability `level` as an array in (0, 1]; ConfigError otherwise."""
    a = np.asarray(level, dtype=float)
    if not np.all((a > 0) & (a <= 1)):
        raise ConfigError(f"level must lie in (0, 1], got {level!r}; pass e.g. 0.9 for a central 90% interval.")
    return a


class UnivariateDistribution:
    """One scalar law per row: the shared interface and the methods derived from the others.

    Subclasses define ``__len__``, ``mean``, ``var``, ``logpdf``, ``cdf``, ``ppf`` and ``sample``;
    ``discrete`` says whether ``logpdf`` is a log mass (integer support for every discrete law here
    except ``EmpiricalDist``).
    """

    #: True for a law with a probability mass function (logpdf is then log P(Y = y))
    discrete: bool = False
    #: short name of the law, e.g. "normal"
    name: str = ""

    def __len__(self) -> int:
        raise NotImplementedError

    def mean(self) -> np.ndarray:
        """The mean :math:`E[Y]` of each row's law.

        Returns
        -------
        mean : ndarray of shape (rows,)
        """
        raise NotImplementedError

    def var(self) -> np.ndarray:
        r"""The variance :math:`\mathrm{Var}[Y]` of each row's law.

        Returns
        -------
        var : ndarray of shape (rows,)
        """
        raise NotImplementedError

    def std(self) -> np.ndarray:
        """The standard deviation of each row's law, the square root of :meth:`var`.

        Returns
        -------
        std : ndarray of shape (rows,)
        """
        return np.sqrt(self.var())

    def logpdf(self, y) -> np.ndarray:
        r"""The log density :math:`\log p(y)` (for a discrete law the log mass :math:`\log P(Y = y)`) of each row's law.

        Parameters
        ----------
        y : float or array-like broadcasting against (rows,)
            Values: a scalar, one per row, or a column (G, 1) for a grid of G values at every row.

        Returns
        -------
        logpdf : ndarray of the broadcast shape of y and (rows,)

        Raises
        ------
        ConfigError
            When the values do not broadcast against the rows.
        """
        raise NotImplementedError

    def cdf(self, y) -> np.ndarray:
        r"""The distribution function :math:`P(Y \le y)` of each row's law.

        Parameters
        ----------
        y : float or array-like broadcasting against (rows,)
            Values: a scalar, one per row, or a column (G, 1) for a grid of G values at every row.

        Returns
        -------
        cdf : ndarray of the broadcast shape of y and (rows,)

        Raises
        ------
        ConfigError
            When the values do not broadcast against the rows.
        """
        raise NotImplementedError

    def cdf_left(self, y) -> np.ndarray:
        r"""The left limit :math:`P(Y < y)` of the distribution function of each row's law.

        Equal to :meth:`cdf` for a continuous law; the randomised PIT of a discrete law needs both (for an integer
        support, :math:`P(Y < y) = P(Y \le \lceil y \rceil - 1)`).

        Parameters
        ----------
        y : float or array-like broadcasting against (rows,)
            Values: a scalar, one per row, or a column (G, 1) for a grid of G values at every row.

        Returns
        -------
        cdf_left : ndarray of the broadcast shape of y and (rows,)

        Raises
        ------
        ConfigError
            When the values do not broadcast against the rows.
        """
        if not self.discrete:
            return self.cdf(y)
        return self.cdf(np.ceil(np.asarray(y, dtype=float)) - 1.0)

    def ppf(self, q) -> np.ndarray:
        r"""The quantile function: the smallest y with :math:`\mathrm{cdf}(y) \ge q`, per row.

        Parameters
        ----------
        q : float or array-like broadcasting against (rows,)
            Probabilities in [0, 1]: a scalar, one per row, or a column (G, 1) for a grid.

        Returns
        -------
        y : ndarray of the broadcast shape of q and (rows,)

        Raises
        ------
        ConfigError
            When q does not broadcast against the rows.
        """
        raise NotImplementedError

    def interval(self, level=0.9):
        r"""The central interval of each row's law, :math:`(\mathrm{ppf}((1 - a)/2), \mathrm{ppf}((1 + a)/2))` for
        ``level`` a.

        Parameters
        ----------
        level : float or array-like, default=0.9
            The central probability, in (0, 1].

        Returns
        -------
        lower, upper : ndarray of shape (rows,) each
            (Of the broadcast shape of ``level`` and (rows,) for an array ``level``.)

        Raises
        ------
        ConfigError
            When ``level`` lies outside (0, 1].

        Examples
        --------
        >>> from distviz.families.dist import NormalDist
        >>> lo, hi = NormalDist([0.0], [1.0]).interval(0.95)
        >>> round(float(hi[0]), 2)
        1.96
        """
        a = _level(level)
        return self.ppf((1.0 - a) / 2.0), self.ppf((1.0 + a) / 2.0)

    def sample(self, n: int = 1, random_state=None) -> np.ndarray:
        """Independent draws from each row's law.

        Parameters
        ----------
        n : int, default=1
            Draws per row.
        random_state : numpy.random.Generator, int or None, default=None
            The random generator, or a seed for a new one.

        Returns
        -------
        y : ndarray of shape (n, rows)
        """
        raise NotImplementedError

    def _rows(self, a) -> np.ndarray:
        """a as float, checked to broadcast against the rows."""
        a = np.asarray(a, dtype=float)
        try:
            np.broadcast_shapes(a.shape, (len(self),))
        except ValueError:
            raise ConfigError(f"the values have shape {a.shape}, which does not broadcast against {len(self)} rows; "
                              f"pass one value per row, a scalar, or a column (G, 1) for a grid.") from None
        return a

    def __repr__(self) -> str:
        return f"{type(self).__name__}(rows={len(self)})"


class ScipyDistribution(UnivariateDistribution):
    """A scipy.stats frozen distribution whose parameters are arrays of shape (rows,): one law per row.

    Every method of ``UnivariateDistribution`` calls the frozen law's own (``logpmf`` for a discrete law),
    vectorised over the rows.

    Parameters
    ----------
    frozen : scipy.stats frozen distribution
        E.g. ``scipy.stats.norm(loc, scale)`` with loc, scale of shape (rows,); the rows are the broadcast
        shape of its parameters.
    discrete : bool, default=False
        Whether the law has a probability mass function (``logpdf`` is then ``frozen.logpmf``).

    Attributes
    ----------
    frozen : scipy.stats frozen distribution
        The law, as given.
    discrete : bool
        As given.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import stats
    >>> from distviz.families.dist import ScipyDistribution
    >>> d = ScipyDistribution(stats.norm(np.zeros(3), np.ones(3)))
    >>> len(d), d.cdf(0.0).tolist()
    (3, [0.5, 0.5, 0.5])
    """

    def __init__(self, frozen, discrete: bool = False):
        """frozen: e.g. ``scipy.stats.norm(loc, scale)`` with loc, scale of shape (rows,)."""
        self.frozen = frozen
        self.discrete = bool(discrete)
        self._n = int(np.broadcast(*frozen.args, *frozen.kwds.values()).shape[0])

    def __len__(self) -> int:
        return self._n

    def mean(self):
        return np.asarray(self.frozen.mean(), dtype=float)

    def var(self):
        return np.asarray(self.frozen.var(), dtype=float)

    def logpdf(self, y):
        y = self._rows(y)
        return self.frozen.logpmf(y) if self.discrete else self.frozen.logpdf(y)

    def cdf(self, y):
        return self.frozen.cdf(self._rows(y))

    def ppf(self, q):
        return self.frozen.ppf(self._rows(q))

    def interval(self, level=0.9):
        return self.frozen.interval(_level(level))

    def sample(self, n: int = 1, random_state=None):
        return np.asarray(self.frozen.rvs(size=(int(n), len(self)), random_state=as_rng(random_state)), dtype=float)


class NormalDist(ScipyDistribution):
    """Normal(loc, scale^2) per row (``scipy.stats.norm``).

    Parameters
    ----------
    loc : array-like of shape (rows,)
        Means.
    scale : array-like of shape (rows,)
        Standard deviations (not variances); broadcast against ``loc``.

    Attributes
    ----------
    loc, scale : ndarray of shape (rows,)
        The parameters as float arrays.
    frozen : scipy.stats frozen distribution
        ``scipy.stats.norm(loc, scale)``.

    Examples
    --------
    >>> from distviz.families.dist import NormalDist
    >>> d = NormalDist([0.0, 1.0], [1.0, 2.0])
    >>> d.mean().tolist(), d.var().tolist()
    ([0.0, 1.0], [1.0, 4.0])
    >>> lo, hi = d.interval(0.9)
    >>> lo.round(4).tolist()
    [-1.6449, -2.2897]
    """

    name = "normal"

    def __init__(self, loc, scale):
        """loc, scale: arrays of shape (rows,) (the standard deviation, not the variance)."""
        self.loc, self.scale = (np.atleast_1d(np.asarray(a, dtype=float)) for a in np.broadcast_arrays(loc, scale))
        super().__init__(stats.norm(self.loc, self.scale))


class PoissonDist(ScipyDistribution):
    """Poisson(rate) per row (``scipy.stats.poisson``), on the counts 0, 1, 2, ...

    Parameters
    ----------
    rate : array-like of shape (rows,)
        The rates (means).

    Attributes
    ----------
    rate : ndarray of shape (rows,)
        The rates as a float array.
    frozen : scipy.stats frozen distribution
        ``scipy.stats.poisson(rate)``.

    Examples
    --------
    >>> from distviz.families.dist import PoissonDist
    >>> PoissonDist([2.0]).ppf(0.5).tolist()
    [2.0]
    """

    name = "poisson"

    def __init__(self, rate):
        """rate: array of shape (rows,)."""
        self.rate = np.atleast_1d(np.asarray(rate, dtype=float))
        super().__init__(stats.poisson(self.rate), discrete=True)


class BernoulliDist(ScipyDistribution):
    """Bernoulli(p) per row (``scipy.stats.bernoulli``), on {0, 1}.

    Parameters
    ----------
    p : array-like of shape (rows,)
        P(Y = 1).

    Attributes
    ----------
    p : ndarray of shape (rows,)
        P(Y = 1) as a float array.
    frozen : scipy.stats frozen distribution
        ``scipy.stats.bernoulli(p)``.

    Examples
    --------
    >>> import numpy as np
    >>> from distviz.families.dist import BernoulliDist
    >>> np.exp(BernoulliDist([0.25]).logpdf(1)).tolist()
    [0.25]
    """

    name = "bernoulli"

    def __init__(self, p):
        """p = P(Y = 1): array of shape (rows,)."""
        self.p = np.atleast_1d(np.asarray(p, dtype=float))
        super().__init__(stats.bernoulli(self.p), discrete=True)


class GammaDist(ScipyDistribution):
    """Gamma(shape alpha, rate beta) per row (``scipy.stats.gamma(alpha, scale=1/beta)``).

    Parameters
    ----------
    shape : array-like of shape (rows,)
        Shapes alpha.
    rate : array-like of shape (rows,)
        Rates beta (the inverse of scipy's scale); broadcast against ``shape``.

    Attributes
    ----------
    shape, rate : ndarray of shape (rows,)
        The parameters as float arrays.
    frozen : scipy.stats frozen distribution
        ``scipy.stats.gamma(shape, scale=1 / rate)``.

    Examples
    --------
    >>> from distviz.families.dist import GammaDist
    >>> d = GammaDist([2.0], [4.0])
    >>> d.mean().tolist(), d.var().tolist()
    ([0.5], [0.125])
    """

    name = "gamma"

    def __init__(self, shape, rate):
        """shape, rate: arrays of shape (rows,)."""
        self.shape, self.rate = (np.atleast_1d(np.asarray(a, dtype=float)) for a in np.broadcast_arrays(shape, rate))
        super().__init__(stats.gamma(self.shape, scale=1.0 / self.rate))


class ExponentialDist(ScipyDistribution):
    """Exponential(rate) per row (``scipy.stats.expon(scale=1/rate)``).

    Parameters
    ----------
    rate : array-like of shape (rows,)
        The rates (inverse means).

    Attributes
    ----------
    rate : ndarray of shape (rows,)
        The rates as a float array.
    frozen : scipy.stats frozen distribution
        ``scipy.stats.expon(scale=1 / rate)``.

    Examples
    --------
    >>> from distviz.families.dist import ExponentialDist
    >>> d = ExponentialDist([2.0])
    >>> d.mean().tolist(), d.var().tolist()
    ([0.5], [0.25])
    """

    name = "exponential"

    def __init__(self, rate):
        """rate: array of shape (rows,)."""
        self.rate = np.atleast_1d(np.asarray(rate, dtype=float))
        super().__init__(stats.expon(scale=1.0 / self.rate))


class CategoricalDist(UnivariateDistribution):
    """Categorical law on the labels 0..K-1 per row, read as an integer-valued law (mean, cdf, ppf of the label).

    ``probs`` (rows, K) are the class probabilities; ``mean()`` / ``var()`` are those of the label
    (sum_k k p_k), ``cdf`` accumulates the classes in label order.

    Parameters
    ----------
    probs : array-like of shape (rows, K)
        Class probabilities, each row summing to 1 (not checked; the cumulative sum's last entry is set to 1).

    Attributes
    ----------
    probs : ndarray of shape (rows, K)
        The class probabilities as a float array.
    K : int
        Number of classes.

    Examples
    --------
    >>> from distviz.families.dist import CategoricalDist
    >>> d = CategoricalDist([[0.2, 0.3, 0.5]])
    >>> d.mean().tolist(), d.cdf(1).tolist(), d.ppf(0.6).tolist()
    ([1.3], [0.5], [2.0])
    """

    name = "categorical"
    discrete = True

    def __init__(self, probs):
        """probs: array (rows, K) of class probabilities, each row summing to 1."""
        self.probs = np.atleast_2d(np.asarray(probs, dtype=float))
        self.K = self.probs.shape[1]
        self._cum = np.cumsum(self.probs, axis=1)
        self._cum[:, -1] = 1.0

    def __len__(self):
        return self.probs.shape[0]

    def mean(self):
        return self.probs @ np.arange(self.K, dtype=float)

    def var(self):
        k = np.arange(self.K, dtype=float)
        return self.probs @ (k * k) - self.mean() ** 2

    def _gather(self, table, k):
        """table[row, k] with k (integers in 0..K-1) broadcast against the rows."""
        rows = np.broadcast_to(np.arange(len(self)), k.shape)
        return table[rows, k]

    def logpdf(self, y):
        y = self._rows(y)
        shape = np.broadcast_shapes(y.shape, (len(self),))
        yb = np.broadcast_to(y, shape)
        ok = (yb >= 0) & (yb <= self.K - 1) & (yb == np.floor(yb))
        k = np.where(ok, yb, 0).astype(np.int64)
        with np.errstate(divide="ignore"):
            return np.where(ok, np.log(self._gather(self.probs, k)), -np.inf)

    def cdf(self, y):
        y = self._rows(y)
        shape = np.broadcast_shapes(y.shape, (len(self),))
        k = np.floor(np.broadcast_to(y, shape))
        inside = np.clip(k, 0, self.K - 1).astype(np.int64)
        out = np.where(k < 0, 0.0, self._gather(self._cum, inside))
        return np.where(np.isnan(k), np.nan, out)

    def ppf(self, q):
        q = self._rows(q)
        shape = np.broadcast_shapes(q.shape, (len(self),))
        qb = np.broadcast_to(q, shape)
        # the number of labels whose cdf is below q is the smallest k with cdf(k) >= q
        k = (self._cum < qb[..., None]).sum(axis=-1).astype(float)
        k = np.where(qb == 0, -1.0, k)
        return np.where((qb < 0) | (qb > 1) | np.isnan(qb), np.nan, k)

    def sample(self, n: int = 1, random_state=None):
        u = as_rng(random_state).random((int(n), len(self)))
        return (u[..., None] > self._cum[None]).sum(axis=-1).astype(float)


class MixtureDist(UnivariateDistribution):
    """A mixture of N scipy components per row: p(y) = sum_n w_n p_n(y) (equal weights 1/N by default).

    ``components`` is a frozen scipy distribution whose parameters have shape (rows, N) (e.g.
    ``scipy.stats.norm(loc (rows, N), scale (rows, N))``).  mean and var combine the components' moments;
    ppf bisects the mixture cdf between the smallest and largest component quantile (a continuous
    law to double resolution, a discrete one over the integers).

    Parameters
    ----------
    components : scipy.stats frozen distribution
        The components, with parameters of shape (rows, N) (``ConfigError`` for another shape).
    weights : array-like of shape (rows, N) or None, default=None
        Mixture weights, broadcast to (rows, N) and normalised per row; None: 1/N each.
    discrete : bool, default=False
        Whether the components have a probability mass function.

    Attributes
    ----------
    components : scipy.stats frozen distribution
        As given.
    weights : ndarray of shape (rows, N)
        The normalised weights.
    discrete : bool
        As given.
    n_components : int
        N.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import stats
    >>> from distviz.families.dist import MixtureDist
    >>> d = MixtureDist(stats.norm(np.array([[-1.0, 1.0]]), np.ones((1, 2))))
    >>> d.n_components, d.mean().tolist(), d.var().tolist()
    (2, [0.0], [2.0])
    """

    name = "mixture"

    def __init__(self, components, weights=None, discrete: bool = False):
        """components: frozen scipy distribution with (rows, N) parameters; weights (rows, N) or None (1/N)."""
        self.components = components
        self.discrete = bool(discrete)
        shape = np.broadcast(*components.args, *components.kwds.values()).shape
        if len(shape) != 2:
            raise ConfigError(f"mixture components need parameters of shape (rows, N), got {shape}.")
        self._shape = shape
        w = np.full(shape, 1.0 / shape[1]) if weights is None else np.broadcast_to(np.asarray(weights, float), shape)
        self.weights = w / w.sum(axis=1, keepdims=True)
        with np.errstate(divide="ignore"):
            self._logw = np.log(self.weights)

    def __len__(self):
        return self._shape[0]

    @property
    def n_components(self) -> int:
        """N, the number of components per row."""
        return self._shape[1]

    def mean(self):
        return np.sum(self.weights * self.components.mean(), axis=1)

    def var(self):
        m = self.components.mean()
        second = np.sum(self.weights * (self.components.var() + m * m), axis=1)
        return np.maximum(second - self.mean() ** 2, 0.0)

    def logpdf(self, y):
        y = self._rows(y)[..., None]
        lp = self.components.logpmf(y) if self.discrete else self.components.logpdf(y)
        return logsumexp(lp + self._logw, axis=-1)

    def cdf(self, y):
        return np.sum(self.weights * self.components.cdf(self._rows(y)[..., None]), axis=-1)

    def ppf(self, q):
        q = self._rows(q)
        shape = np.broadcast_shapes(q.shape, (len(self),))
        qb = np.broadcast_to(q, shape)
        cq = self.components.ppf(qb[..., None])
        lo, hi = np.min(cq, axis=-1), np.max(cq, axis=-1)   # every component's cdf is <= q at lo and >= q at hi
        todo = (lo < hi) & (qb > 0) & (qb < 1)
        lo, hi = np.where(todo, lo, hi), hi.copy()
        if self.discrete:   # invariant: cdf(lo) < q <= cdf(hi), both integers
            lo = np.where(todo, lo - 1.0, lo)
            for _ in range(_BISECT):
                if not todo.any():
                    break
                mid = np.floor((lo + hi) / 2.0)
                below = self.cdf(mid) < qb
                lo, hi = np.where(todo & below, mid, lo), np.where(todo & ~below, mid, hi)
                todo &= hi - lo > 1
            return hi
        for _ in range(_BISECT):
            if not todo.any():
                break
            mid = 0.5 * (lo + hi)
            todo &= (mid > lo) & (mid < hi)   # no double between lo and hi: hi is the quantile
            below = self.cdf(mid) < qb
            lo, hi = np.where(todo & below, mid, lo), np.where(todo & ~below, mid, hi)
        return hi

    def sample(self, n: int = 1, random_state=None):
        rng = as_rng(random_state)
        n = int(n)
        u = rng.random((n, len(self)))
        pick = np.minimum((u[..., None] > np.cumsum(self.weights, axis=1)[None]).sum(axis=-1), self.n_components - 1)
        rows = np.arange(len(self))[None, :]

        def picked(a):   # each draw's component parameter, shape (n, rows)
            return np.broadcast_to(np.asarray(a, dtype=float), self._shape)[rows, pick]

        c = self.components
        args = [picked(a) for a in c.args]
        kwds = {k: picked(v) for k, v in c.kwds.items()}
        return np.asarray(c.dist.rvs(*args, **kwds, size=(n, len(self)), random_state=rng), dtype=float)


class EmpiricalDist(UnivariateDistribution):
    """N equally weighted point masses per row (the empirical law of N particles).

    A discrete law on real points: ``logpdf(y)`` is log of the share of points equal to y (-inf off
    the points), ``cdf`` the share at or below y, ``ppf(q)`` the ceil(q N)-th smallest point (-inf at
    q = 0), ``sample`` draws points with replacement.

    Parameters
    ----------
    points : array-like of shape (rows, N)
        The points of each row (sorted per row when stored).

    Attributes
    ----------
    points : ndarray of shape (rows, N)
        The points, sorted within each row.

    Examples
    --------
    >>> from distviz.families.dist import EmpiricalDist
    >>> d = EmpiricalDist([[3.0, 1.0, 2.0, 4.0]])
    >>> d.mean().tolist(), d.cdf(2.0).tolist(), d.ppf(0.5).tolist()
    ([2.5], [0.5], [2.0])
    """

    name = "empirical"
    discrete = True

    def __init__(self, points):
        """points: array (rows, N)."""
        self.points = np.sort(np.atleast_2d(np.asarray(points, dtype=float)), axis=1)

    def __len__(self):
        return self.points.shape[0]

    def mean(self):
        return self.points.mean(axis=1)

    def var(self):
        return self.points.var(axis=1)

    def logpdf(self, y):
        y = self._rows(y)[..., None]
        with np.errstate(divide="ignore"):
            return np.log(np.mean(self.points == y, axis=-1))

    def cdf(self, y):
        return np.mean(self.points <= self._rows(y)[..., None], axis=-1)

    def cdf_left(self, y):
        return np.mean(self.points < self._rows(y)[..., None], axis=-1)

    def ppf(self, q):
        q = self._rows(q)
        shape = np.broadcast_shapes(q.shape, (len(self),))
        qb = np.broadcast_to(q, shape)
        N = self.points.shape[1]
        k = np.clip(np.ceil(qb * N).astype(np.int64) - 1, 0, N - 1)
        rows = np.broadcast_to(np.arange(len(self)), shape)
        out = self.points[rows, np.where(np.isnan(qb), 0, k)]
        out = np.where(qb == 0, -np.inf, out)
        return np.where((qb < 0) | (qb > 1) | np.isnan(qb), np.nan, out)

    def sample(self, n: int = 1, random_state=None):
        idx = as_rng(random_state).integers(0, self.points.shape[1], size=(int(n), len(self)))
        return self.points[np.arange(len(self))[None, :], idx]


class MultivariateNormalDist:
    """A P-variate Normal per row: mean (rows, P), covariance (rows, P, P).

    Not a ``UnivariateDistribution``: ``mean()`` is (rows, P), ``cov()`` (rows, P, P), ``var()`` / ``std()``
    (rows, P), ``logpdf(Y)`` takes Y of shape (rows, P), ``sample`` returns (n, rows, P), and ``marginal(j)`` is
    the ``NormalDist`` of output j.

    Parameters
    ----------
    mean : array-like of shape (rows, P)
        Means, kept as given (``mean()`` returns this array).
    cov : array-like of shape (rows, P, P)
        Covariance matrices, kept as given (``ConfigError`` when the shapes disagree).

    Attributes
    ----------
    P : int
        Number of outputs.
    rho : ndarray of shape (rows,)
        Correlation of the first two outputs.

    Examples
    --------
    >>> import numpy as np
    >>> from distviz.families.dist import MultivariateNormalDist
    >>> d = MultivariateNormalDist(np.zeros((1, 2)), np.array([[[1.0, 0.5], [0.5, 4.0]]]))
    >>> d.P, d.rho.tolist(), d.std().tolist()
    (2, [0.25], [[1.0, 2.0]])
    """

    name = "mvn"

    def __init__(self, mean, cov):
        """mean (rows, P), cov (rows, P, P), kept as given (mean() and cov() return these arrays)."""
        self._mean = np.asarray(mean, dtype=float)
        self._cov = np.asarray(cov, dtype=float)
        if self._mean.ndim != 2 or self._cov.shape != self._mean.shape + (self._mean.shape[1],):
            raise ConfigError(f"a multivariate Normal needs mean (rows, P) and cov (rows, P, P), got "
                              f"{self._mean.shape} and {self._cov.shape}.")

    def __len__(self) -> int:
        return int(self._mean.shape[0])

    def __repr__(self) -> str:
        return f"MultivariateNormalDist(rows={len(self)}, P={self.P})"

    @property
    def P(self) -> int:
        """Number of outputs."""
        return int(self._mean.shape[1])

    def mean(self) -> np.ndarray:
        """The mean :math:`E[Y]` of each row's law.

        Returns
        -------
        mean : ndarray of shape (rows, P)
        """
        return self._mean

    def cov(self) -> np.ndarray:
        r"""The covariance :math:`\mathrm{Cov}[Y]` of each row's law.

        Returns
        -------
        cov : ndarray of shape (rows, P, P)
        """
        return self._cov

    def var(self) -> np.ndarray:
        """The marginal variances, the diagonals of :meth:`cov`.

        Returns
        -------
        var : ndarray of shape (rows, P)
        """
        return np.einsum("nii->ni", self._cov)

    def std(self) -> np.ndarray:
        """The marginal standard deviations.

        Returns
        -------
        std : ndarray of shape (rows, P)
        """
        return np.sqrt(self.var())

    def corr(self) -> np.ndarray:
        r"""The correlation matrices, :math:`\Sigma_{ij} / (\sigma_i \sigma_j)`.

        Returns
        -------
        corr : ndarray of shape (rows, P, P)
        """
        sd = self.std()
        return self._cov / (sd[:, :, None] * sd[:, None, :])

    @property
    def rho(self) -> np.ndarray:
        """Correlation of the first two outputs, shape (rows,) (the drifter paper's rho for P = 2)."""
        if self.P < 2:
            raise ConfigError("rho is the correlation of two outputs; this law has one.")
        sd = self.std()
        return self._cov[:, 0, 1] / (sd[:, 0] * sd[:, 1])

    def marginal(self, j: int) -> NormalDist:
        r"""The Normal law of one output.

        Parameters
        ----------
        j : int
            The output, in [0, P).

        Returns
        -------
        NormalDist
            :math:`N(\mu_j, \Sigma_{jj})` per row.
        """
        return NormalDist(self._mean[:, j], np.sqrt(self._cov[:, j, j]))

    def _y(self, Y) -> np.ndarray:
        Y = np.asarray(Y, dtype=float)
        if Y.ndim == 1 and self.P == 1:
            Y = Y[:, None]
        if Y.shape != self._mean.shape:
            raise ConfigError(f"Y must have shape {self._mean.shape} (one row of {self.P} outputs per law), "
                              f"got {Y.shape}.")
        return Y

    def mahalanobis2(self, Y) -> np.ndarray:
        r"""The squared Mahalanobis distance :math:`(Y - \mu)^\top \Sigma^{-1} (Y - \mu)` per row (chi-square with P
        degrees of freedom under the law).

        Parameters
        ----------
        Y : array-like of shape (rows, P), or (rows,) when P == 1
            One observation per row.

        Returns
        -------
        d2 : ndarray of shape (rows,)

        Raises
        ------
        ConfigError
            When Y does not have shape (rows, P).
        numpy.linalg.LinAlgError
            When a covariance is not positive definite.
        """
        L = np.linalg.cholesky(self._cov)
        z = np.linalg.solve(L, (self._y(Y) - self._mean)[..., None])[..., 0]
        return (z * z).sum(1)

    def logpdf(self, Y) -> np.ndarray:
        r"""The log density :math:`\log N(Y \mid \mu, \Sigma)` per row, by Cholesky factor.

        Parameters
        ----------
        Y : array-like of shape (rows, P), or (rows,) when P == 1
            One observation per row.

        Returns
        -------
        logpdf : ndarray of shape (rows,)

        Raises
        ------
        ConfigError
            When Y does not have shape (rows, P).
        numpy.linalg.LinAlgError
            When a covariance is not positive definite.

        Examples
        --------
        >>> import numpy as np
        >>> from distviz.families.dist import MultivariateNormalDist
        >>> d = MultivariateNormalDist(np.zeros((1, 2)), np.eye(2)[None])
        >>> round(float(d.logpdf(np.zeros((1, 2)))[0]), 6)   # -log(2 pi)
        -1.837877
        """
        L = np.linalg.cholesky(self._cov)
        z = np.linalg.solve(L, (self._y(Y) - self._mean)[..., None])[..., 0]
        return -(0.5 * (z * z).sum(1) + np.log(np.einsum("nii->ni", L)).sum(1) + 0.5 * self.P * np.log(2 * np.pi))

    def sample(self, n: int = 1, random_state=None) -> np.ndarray:
        """Independent draws from each row's law.

        Parameters
        ----------
        n : int, default=1
            Draws per row.
        random_state : numpy.random.Generator, int or None, default=None
            The random generator, or a seed for a new one.

        Returns
        -------
        Y : ndarray of shape (n, rows, P)

        Raises
        ------
        numpy.linalg.LinAlgError
            When a covariance is not positive definite.
        """
        L = np.linalg.cholesky(self._cov)
        eps = as_rng(random_state).standard_normal((int(n),) + self._mean.shape)
        return self._mean[None] + np.einsum("nij,knj->kni", L, eps)


def from_natural(family, eta):
    """The distribution object of an exponential family (``distviz.families``) at natural parameters eta.

    The family's own parameters from eta: Poisson rate e^eta, Bernoulli p = 1 / (1 + e^-eta), Normal mean and
    standard deviation (``mean_and_variance``; a row outside the domain gives a NaN law), Gamma shape eta_1 + 1
    and rate -eta_2, Exponential rate -eta, Categorical probabilities, multivariate Normal mean and covariance.

    Parameters
    ----------
    family : ExponentialFamily
        One of the families of ``distviz.families`` (matched by its ``name``).
    eta : array-like of shape (rows, dim)
        Natural parameters, one row per law.

    Returns
    -------
    UnivariateDistribution or MultivariateNormalDist
        ``PoissonDist``, ``BernoulliDist``, ``NormalDist``, ``GammaDist``, ``ExponentialDist``,
        ``CategoricalDist`` or ``MultivariateNormalDist`` with one law per row.

    Raises
    ------
    ConfigError
        For a family of another name.

    Examples
    --------
    >>> import numpy as np
    >>> from distviz.families import get
    >>> from distviz.families.dist import from_natural
    >>> d = from_natural(get("poisson"), np.log([[2.0], [3.0]]))
    >>> type(d).__name__, d.mean().round(6).tolist()
    ('PoissonDist', [2.0, 3.0])
    """
    name = getattr(family, "name", "")
    eta = family._params(eta)
    if name == "poisson":
        return PoissonDist(np.exp(eta[:, 0]))
    if name == "bernoulli":
        return BernoulliDist(expit(eta[:, 0]))
    if name == "normal":
        mu, var = family.mean_and_variance(eta)
        with np.errstate(invalid="ignore"):   # a row outside the domain (variance <= 0) is a NaN law
            return NormalDist(mu, np.sqrt(var))
    if name == "gamma":
        return GammaDist(eta[:, 0] + 1.0, -eta[:, 1])
    if name == "exponential":
        return ExponentialDist(-eta[:, 0])
    if name == "categorical":
        return CategoricalDist(family.probabilities(eta))
    if name == "mvn":
        return MultivariateNormalDist(*family.mean_cov(eta))
    raise ConfigError(f"no distribution object for the {name or family!r} family; "
                      f"use one of poisson, bernoulli, normal, gamma, exponential, categorical, mvn.")
