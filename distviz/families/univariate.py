"""Scalar-output exponential families: Poisson, Bernoulli, Normal, Gamma, Exponential.

Each family is p(y|eta) = h(y) exp(<eta, T(y)> - A(eta)) (mirror_vs_natural_boosting.tex, Sec. 1);
eta* = grad A(eta), eta = grad A*(eta*), g(eta) = hess A(eta).  The Poisson example of the note
(Sec. "Poisson example") is the first family: T(y) = y, A(eta) = e^eta, A*(m) = m log m - m.
"""

from __future__ import annotations

import copy

import numpy as np
from numba import njit, prange
from scipy.special import digamma, expit, gammaln, xlogy

from ._linalg import trigamma
from ._rowmath import NORMAL_MIN, lane_sum, log_normal
from .base import LOG, MEAN_RANGE, PARABOLA, ExponentialFamily, as_rng, box, finite_rows

__all__ = ["Poisson", "Bernoulli", "Normal", "Gamma", "Exponential"]

_LOG_2PI = float(np.log(2.0 * np.pi))

# rows per block of the fused row kernels: partial sums are taken per fixed block and added in block
# order, so the result does not depend on the number of threads
_BLOCK = 1 << 14


@njit(cache=True, parallel=True, error_model="numpy")
def _poisson_mgd_round(F, leaf, value, mult, T, w, weighted, F_out, R_out):
    r"""One fused pass of a Poisson MGD round (iterate :math:`\eta^* = \lambda`): update, next targets and the NLL's sums.

    :math:`F'_i = F_i + \text{mult} \cdot \text{value}[\text{leaf}_i]` (the step of the round's tree), the next
    M-law target :math:`R_i = T(y_i) - F'_i` (mirror_vs_natural_boosting.tex, "Boosting of MGD"), and the two row sums
    of the training NLL :math:`A(\eta) - \eta T(y) - \log h(y)` at :math:`\eta = \log F'` (note, "Poisson example":
    :math:`A(\eta) = e^\eta = \lambda`): :math:`\sum_i w_i F'_i` and :math:`\sum_i w_i T_i \log F'_i`.
    Each block of rows runs loops without a running sum (they vectorise) and adds by ``lane_sum``; blocks of a fixed
    size are added in order, so the sums do not depend on the number of threads.

    Parameters
    ----------
    F : ndarray of float64, shape (n,)
        The current rates :math:`\eta^*_t` of the rows.
    leaf : ndarray of int, shape (n,)
        Each row's leaf in the round's tree.
    value : ndarray of float64, shape (n_leaves,)
        The tree's leaf values.
    mult : float
        The step's multiplier (learning rate times the line search's scale).
    T : ndarray of float64, shape (n,)
        The sufficient statistics :math:`T(y_i) = y_i`.
    w : ndarray of float64, shape (n,)
        Row weights (read only when ``weighted``).
    weighted : bool
        Whether the sums are weighted.
    F_out : ndarray of float64, shape (n,)
        Output: the updated rates.
    R_out : ndarray of float64, shape (n,)
        Output: the next round's targets.

    Returns
    -------
    n_bad : int
        Rows whose updated rate is not a finite normal positive float; when not 0 the sums are not computed and
        the caller falls back to the unfused update, which projects or backtracks those rows.
    sum_rate, sum_t_log_rate : float
        :math:`\sum_i w_i F'_i` and :math:`\sum_i w_i T_i \log F'_i`.
    """
    n = F.shape[0]
    nblk = (n + _BLOCK - 1) // _BLOCK
    part = np.zeros((nblk, 2))
    bad = np.zeros(nblk, dtype=np.int64)
    for blk in prange(nblk):
        lo = blk * _BLOCK
        hi = min(n, lo + _BLOCK)
        # views of the block, indexed from 0 (see _rowmath: loops over range(lo, hi) do not vectorise)
        f, lf, t, fo, ro = F[lo:hi], leaf[lo:hi], T[lo:hi], F_out[lo:hi], R_out[lo:hi]
        for i in range(hi - lo):
            fo[i] = f[i] + mult * value[lf[i]]
        nb = 0
        for i in range(hi - lo):
            nb += (fo[i] < NORMAL_MIN) | (fo[i] == np.inf) | (fo[i] != fo[i])
        bad[blk] = nb
        if nb == 0:
            if weighted:
                wb = w[lo:hi]
                for i in range(hi - lo):
                    ro[i] = (wb[i] * t[i]) * log_normal(fo[i])
                part[blk, 1] = lane_sum(ro)
                for i in range(hi - lo):
                    ro[i] = wb[i] * fo[i]
                part[blk, 0] = lane_sum(ro)
            else:
                for i in range(hi - lo):
                    ro[i] = t[i] * log_normal(fo[i])
                part[blk, 1] = lane_sum(ro)
                part[blk, 0] = lane_sum(fo)
        for i in range(hi - lo):
            ro[i] = t[i] - fo[i]
    s_A = 0.0
    s_TlogF = 0.0
    n_bad = 0
    for blk in range(nblk):
        s_A += part[blk, 0]
        s_TlogF += part[blk, 1]
        n_bad += bad[blk]
    return n_bad, s_A, s_TlogF


# -log k! for k = 0..1023, by the same gammaln call as for a single count (the same bits)
_NEG_LOG_FACTORIAL = -gammaln(np.arange(1024, dtype=np.float64) + 1.0)


@njit(cache=True)
def _log_factorial_from_table(y, table, out):
    """out[i] = table[y_i] for the whole counts y_i below the table's length; True when some y_i is not one."""
    m = table.shape[0]
    rest = False
    for i in range(y.shape[0]):
        v = y[i]
        if v >= 0.0 and v < m and v == np.floor(v):
            out[i] = table[np.uintp(v)]
        else:
            rest = True
    return rest


class Poisson(ExponentialFamily):
    """Poisson(lambda): T(y) = y, eta = log lambda, A = e^eta, h(y) = 1/y!.

    The counts family of mirror_vs_natural_boosting.tex ("Poisson example"): the mean coordinate is the rate,
    eta* = e^eta = lambda, the Fisher metric is g(eta) = e^eta = lambda, A*(lambda) = lambda log lambda - lambda
    and the mean domain is lambda > 0.  Targets must be whole, non-negative counts (``check_y``).

    Parameters
    ----------
    margin : float or None, default=None
        Positive distance that ``project_mean`` / ``project_natural`` keep from the domain's boundary; None: the
        class's ``default_margin`` (1e-6).

    Attributes
    ----------
    name : str
        Registry name, as :func:`distviz.families.get` accepts it.
    dim : int
        Length of T(y), of eta and of eta*.
    margin : float
        The ``margin`` in use.

    Examples
    --------
    >>> import numpy as np
    >>> from distviz.families import Poisson
    >>> fam = Poisson()
    >>> eta = fam.to_natural([[3.0]])
    >>> float(eta[0, 0]) == float(np.log(3.0))
    True
    >>> round(float(fam.fisher(eta)[0, 0, 0]), 9)
    3.0
    """

    name = "poisson"
    dim = 1
    stat_names = ("y",)
    support = "y in {0, 1, 2, ...}"

    @property
    def natural_names(self):
        return ["log rate"]

    @property
    def mean_names(self):
        return ["rate"]

    def _check_support(self, y):
        self._support_error(y, y < 0, "is negative",
                            "Poisson targets are counts 0, 1, 2, ...; remove negative values or choose another family")
        self._support_error(y, y != np.floor(y), "is not an integer",
                            "Poisson targets must be whole counts; round them or choose the Gamma or Normal family")

    def sufficient_stats(self, y):
        return self._y(y)[:, None]

    def log_partition(self, eta):
        return np.exp(self._params(eta)[..., 0])

    def to_mean(self, eta):
        return np.exp(self._params(eta))

    def to_natural(self, mean):
        with np.errstate(divide="ignore"):
            return np.log(self._params(mean))

    def conjugate(self, mean):
        r"""The Legendre conjugate :math:`A^*(m) = m \log m - m` (0 at m = 0, the boundary value used by Gain^ent).

        Parameters
        ----------
        mean : array-like of shape (n, 1)
            Mean parameters :math:`\eta^* = E[T(y)]`, one row per law.

        Returns
        -------
        A_star : ndarray of shape (n,)

        Raises
        ------
        ConfigError
            When the parameters' last axis is not 1.
        """
        m = self._params(mean)[..., 0]
        return xlogy(m, m) - m

    def fisher(self, eta):
        return np.exp(self._params(eta))[..., None]

    def inverse_fisher(self, eta):
        return np.exp(-self._params(eta))[..., None]

    def solve_fisher(self, eta, v):
        return self._params(v) * np.exp(-self._params(eta))

    def log_base_measure(self, y):
        r"""The log base measure :math:`\log h(y) = -\log y!` (counts below 1024 from a table of the same values).

        Parameters
        ----------
        y : array-like of shape (n,)
            Observations.

        Returns
        -------
        log_h : ndarray of shape (n,)
        """
        y = self._y(y)
        if y.ndim != 1 or y.shape[0] < 4096:
            return -gammaln(y + 1.0)
        out = np.empty(y.shape[0])
        if _log_factorial_from_table(y, _NEG_LOG_FACTORIAL, out):
            other = ~((y >= 0) & (y < _NEG_LOG_FACTORIAL.shape[0]) & (y == np.floor(y)))
            out[other] = -gammaln(y[other] + 1.0)
        return out

    def sample(self, eta, rng=None):
        return as_rng(rng).poisson(np.exp(self._params(eta)[..., 0])).astype(float)

    def in_mean_domain(self, mean):
        m = self._params(mean)[..., 0]
        return np.isfinite(m) & (m > 0)

    def domain(self, coord):
        """The compiled domains: rates (0, inf); natural parameters all of R.

        Parameters
        ----------
        coord : {"natural", "mean"}
            The coordinate system.

        Returns
        -------
        Domain
            Bounds ``lo < x < hi`` and the extra condition of its ``kind``.
        """
        return box([0.0], [np.inf]) if coord == "mean" else super().domain(coord)

    def project_mean(self, mean):
        return np.maximum(self._params(mean), self.margin)

    def mean_and_variance(self, eta):
        lam = np.exp(self._params(eta)[..., 0])
        return lam, lam.copy()

    def _default_mean(self):
        return np.array([3.0])

    #: fused row kernel of an MGD round (see _poisson_mgd_round), used by laws.MGD.fused_round
    fused_mgd_round = staticmethod(_poisson_mgd_round)


class Bernoulli(ExponentialFamily):
    """Bernoulli(p): T(y) = y, eta = logit p, A = log(1 + e^eta), h = 1.

    The mean coordinate is the probability eta* = p = 1 / (1 + e^-eta), the Fisher metric g(eta) = p (1 - p),
    A*(p) = p log p + (1 - p) log(1 - p) (mirror_vs_natural_boosting.tex, Sec. 1); the mean domain is 0 < p < 1.
    Targets must be 0 or 1.

    Parameters
    ----------
    margin : float or None, default=None
        Positive distance that ``project_mean`` / ``project_natural`` keep from the domain's boundary; None: the
        class's ``default_margin`` (1e-6).

    Attributes
    ----------
    name : str
        Registry name, as :func:`distviz.families.get` accepts it.
    dim : int
        Length of T(y), of eta and of eta*.
    margin : float
        The ``margin`` in use.

    Examples
    --------
    >>> from distviz.families import Bernoulli
    >>> fam = Bernoulli()
    >>> float(fam.to_mean([[0.0]])[0, 0]), float(fam.fisher([[0.0]])[0, 0, 0])
    (0.5, 0.25)
    """

    name = "bernoulli"
    dim = 1
    stat_names = ("y",)
    support = "y in {0, 1}"

    @property
    def natural_names(self):
        return ["logit p"]

    @property
    def mean_names(self):
        return ["p"]

    def _check_support(self, y):
        self._support_error(y, (y != 0) & (y != 1), "is not 0 or 1",
                            "Bernoulli targets are binary; encode the classes as 0 and 1 or choose the categorical family")

    def sufficient_stats(self, y):
        return self._y(y)[:, None]

    def log_partition(self, eta):
        return np.logaddexp(0.0, self._params(eta)[..., 0])

    def to_mean(self, eta):
        return expit(self._params(eta))

    def to_natural(self, mean):
        m = self._params(mean)
        with np.errstate(divide="ignore"):
            return np.log(m) - np.log1p(-m)

    def conjugate(self, mean):
        r"""The Legendre conjugate :math:`A^*(p) = p \log p + (1-p) \log(1-p)` (the negative Shannon entropy).

        Parameters
        ----------
        mean : array-like of shape (n, 1)
            Mean parameters :math:`\eta^* = E[T(y)]`, one row per law.

        Returns
        -------
        A_star : ndarray of shape (n,)

        Raises
        ------
        ConfigError
            When the parameters' last axis is not 1.
        """
        m = self._params(mean)[..., 0]
        return xlogy(m, m) + xlogy(1.0 - m, 1.0 - m)

    def fisher(self, eta):
        p = expit(self._params(eta))
        return (p * (1.0 - p))[..., None]

    def inverse_fisher(self, eta):
        return 1.0 / self.fisher(eta)

    def solve_fisher(self, eta, v):
        p = expit(self._params(eta))
        return self._params(v) / (p * (1.0 - p))

    def sample(self, eta, rng=None):
        p = expit(self._params(eta)[..., 0])
        return (as_rng(rng).random(p.shape) < p).astype(float)

    def in_mean_domain(self, mean):
        m = self._params(mean)[..., 0]
        return (m > 0) & (m < 1)

    def domain(self, coord):
        """The compiled domains: probabilities (0, 1); logits all of R.

        Parameters
        ----------
        coord : {"natural", "mean"}
            The coordinate system.

        Returns
        -------
        Domain
            Bounds ``lo < x < hi`` and the extra condition of its ``kind``.
        """
        return box([0.0], [1.0]) if coord == "mean" else super().domain(coord)

    def project_mean(self, mean):
        return np.clip(self._params(mean), self.margin, 1.0 - self.margin)

    def mean_and_variance(self, eta):
        p = expit(self._params(eta)[..., 0])
        return p, p * (1.0 - p)

    def _default_mean(self):
        return np.array([0.3])


class Normal(ExponentialFamily):
    """Normal(mu, sigma^2): T(y) = (y, y^2), eta = (mu/sigma^2, -1/(2 sigma^2)), h = (2 pi)^-1/2.

    Natural domain: eta_2 < 0.  An NGD fit (``distviz.boosting.laws.NGD.data_domain``) bounds it by the training
    targets' range [a, b] (:meth:`with_data_range`):
    the laws with mean a < mu < b and variance sigma^2 < (b - a)^2 / 4.  Every weighted maximum-likelihood Normal
    of a subset of the rows (a tree leaf's exact fit, the start) lies there: its mean is a weighted mean of the
    y_i, its variance that of a law on [a, b], at most (b - a)^2 / 4 (Popoviciu's inequality).  In eta the bound
    is three half-planes, eta_2 < -2 / (b - a)^2, eta_1 + 2 a eta_2 > 0 and eta_1 + 2 b eta_2 < 0, so the domain
    stays convex (the backtracking rule of ``distviz.boosting.laws`` needs that).  Unbounded, a row's
    eta_2 can reach 0- under NGD's leaf-shared steps (a leaf's step in eta_2 is large for a row whose variance is
    far above the leaf's), its variance then grows without limit and its mean eta_1 sigma^2 with it (issue 28:
    means of 2e3 for y of order 1).  :meth:`project_natural` maps a row that left
    the domain to the nearest law in (mean, variance): the mean clipped into (a, b), the variance to below the cap.

    In mean coordinates eta* = (mu, mu^2 + sigma^2) (mirror_vs_natural_boosting.tex, Sec. 1); ``from_mu_sigma``
    gives eta from a mean and a standard deviation.

    Parameters
    ----------
    margin : float or None, default=None
        Positive distance that ``project_mean`` / ``project_natural`` keep from the domain's boundary; None: the
        class's ``default_margin`` (1e-6).

    Attributes
    ----------
    name : str
        Registry name, as :func:`distviz.families.get` accepts it.
    dim : int
        Length of T(y), of eta and of eta*.
    margin : float
        The ``margin`` in use.
    y_range : tuple of float or None
        The training targets' range (a, b) that bounds the natural domain (set by :meth:`with_data_range`), None
        when unbounded.

    Examples
    --------
    >>> from distviz.families import Normal
    >>> fam = Normal()
    >>> eta = Normal.from_mu_sigma(1.0, 2.0)
    >>> eta.tolist()
    [0.25, -0.125]
    >>> fam.to_mean(eta).tolist()
    [[1.0, 5.0]]
    >>> [float(v[0]) for v in fam.mean_and_variance(eta)]
    [1.0, 4.0]
    """

    name = "normal"
    dim = 2
    stat_names = ("y", "y^2")
    support = "y in R"
    #: the training targets' range (lo, hi) that bounds the natural domain, None when unbounded
    y_range: tuple | None = None

    def with_data_range(self, lo: float, hi: float) -> "Normal":
        """A copy whose natural domain is bounded by the range [lo, hi] of the training targets (see the class doc).

        Parameters
        ----------
        lo, hi : float
            The least and greatest training target.

        Returns
        -------
        Normal
            The bounded copy (``y_range = (lo, hi)``); ``self`` when the range is not finite or has no width (constant
            y: no variance to bound).
        """
        lo, hi = float(lo), float(hi)
        if not (np.isfinite(lo) and np.isfinite(hi) and hi > lo):
            return self
        out = copy.copy(self)
        out.y_range = (lo, hi)
        return out

    def _eta2_cap(self) -> float:
        """The upper bound of eta_2: -2 / (b - a)^2 (variance below (b - a)^2 / 4), 0 when unbounded."""
        if self.y_range is None:
            return 0.0
        lo, hi = self.y_range
        return -2.0 / ((hi - lo) * (hi - lo))

    @property
    def natural_names(self):
        return ["mu/sigma^2", "-1/(2 sigma^2)"]

    @property
    def mean_names(self):
        return ["E[y]", "E[y^2]"]

    def sufficient_stats(self, y):
        y = self._y(y)
        return np.stack([y, y * y], axis=-1)

    def log_partition(self, eta):
        r"""The log-partition :math:`A(\eta) = -\eta_1^2 / (4 \eta_2) - \frac12 \log(-2 \eta_2)`.

        Parameters
        ----------
        eta : array-like of shape (n, 2)
            Natural parameters, one row per law.

        Returns
        -------
        A : ndarray of shape (n,)

        Raises
        ------
        ConfigError
            When the parameters' last axis is not 2.
        """
        eta = self._params(eta)
        e1, e2 = eta[..., 0], eta[..., 1]
        return -e1 * e1 / (4.0 * e2) - 0.5 * np.log(-2.0 * e2)

    def _mu_var(self, eta):
        eta = self._params(eta)
        var = -0.5 / eta[..., 1]
        return eta[..., 0] * var, var

    def to_mean(self, eta):
        mu, var = self._mu_var(eta)
        return np.stack([mu, mu * mu + var], axis=-1)

    def to_natural(self, mean):
        m = self._params(mean)
        var = m[..., 1] - m[..., 0] ** 2
        return np.stack([m[..., 0] / var, -0.5 / var], axis=-1)

    def conjugate(self, mean):
        r"""The Legendre conjugate :math:`A^*(\eta^*) = -\frac12 - \frac12 \log \sigma^2` with :math:`\sigma^2 = \eta^*_2 -
        (\eta^*_1)^2`.

        Parameters
        ----------
        mean : array-like of shape (n, 2)
            Mean parameters :math:`\eta^* = E[T(y)]`, one row per law.

        Returns
        -------
        A_star : ndarray of shape (n,)

        Raises
        ------
        ConfigError
            When the parameters' last axis is not 2.
        """
        m = self._params(mean)
        return -0.5 - 0.5 * np.log(m[..., 1] - m[..., 0] ** 2)

    def fisher(self, eta):
        r"""The Fisher metric :math:`\mathrm{Cov}[(y, y^2)] = \begin{pmatrix} s & 2\mu s \\ 2\mu s & 4\mu^2 s + 2 s^2
        \end{pmatrix}`, :math:`s = \sigma^2`.

        Parameters
        ----------
        eta : array-like of shape (n, 2)
            Natural parameters, one row per law.

        Returns
        -------
        g : ndarray of shape (n, 2, 2)

        Raises
        ------
        ConfigError
            When the parameters' last axis is not 2.
        """
        mu, s = self._mu_var(eta)
        c = 2.0 * mu * s
        out = np.empty(mu.shape + (2, 2))
        out[..., 0, 0] = s
        out[..., 0, 1] = c
        out[..., 1, 0] = c
        out[..., 1, 1] = 4.0 * mu * mu * s + 2.0 * s * s
        return out

    def inverse_fisher(self, eta):
        r"""The inverse Fisher metric in closed form, :math:`\begin{pmatrix} 2\mu^2 + s & -\mu \\ -\mu & 1/2 \end{pmatrix} /
        s^2`, :math:`s = \sigma^2`.

        Parameters
        ----------
        eta : array-like of shape (n, 2)
            Natural parameters, one row per law.

        Returns
        -------
        g_inv : ndarray of shape (n, 2, 2)

        Raises
        ------
        ConfigError
            When the parameters' last axis is not 2.
        """
        mu, s = self._mu_var(eta)
        s2 = s * s
        out = np.empty(mu.shape + (2, 2))
        out[..., 0, 0] = (2.0 * mu * mu + s) / s2
        out[..., 0, 1] = -mu / s2
        out[..., 1, 0] = -mu / s2
        out[..., 1, 1] = 0.5 / s2
        return out

    def solve_fisher(self, eta, v):
        mu, s = self._mu_var(eta)
        v = self._params(v)
        v1, v2 = v[..., 0], v[..., 1]
        s2 = s * s
        return np.stack([((2.0 * mu * mu + s) * v1 - mu * v2) / s2, (-mu * v1 + 0.5 * v2) / s2], axis=-1)

    def log_base_measure(self, y):
        return np.full(self._y(y).shape[0], -0.5 * _LOG_2PI)

    def sample(self, eta, rng=None):
        mu, s = self._mu_var(eta)
        return mu + np.sqrt(s) * as_rng(rng).standard_normal(mu.shape)

    def in_natural_domain(self, eta):
        r"""Whether :math:`\eta_2 < 0`, and with a data range [a, b] :math:`\eta_2 < -2 / (b - a)^2` and :math:`a < \mu < b`
        (class doc).

        Parameters
        ----------
        eta : array-like of shape (n, 2)
            Natural parameters, one row per law.

        Returns
        -------
        inside : ndarray of bool, shape (n,)

        Raises
        ------
        ConfigError
            When the parameters' last axis is not 2.
        """
        eta = self._params(eta)
        e1, e2 = eta[..., 0], eta[..., 1]
        ok = finite_rows(eta) & (e2 < self._eta2_cap())
        if self.y_range is not None:
            lo, hi = self.y_range
            with np.errstate(invalid="ignore", over="ignore"):
                ok &= (e1 + 2.0 * lo * e2 > 0.0) & (e1 + 2.0 * hi * e2 < 0.0)   # the compiled MEAN_RANGE test's terms
        return ok

    def domain(self, coord):
        r"""The compiled domains: natural parameters :math:`\mathbb{R} \times (-\infty, 0)` (with a data range: the three
        half-planes of the class doc); means with :math:`E[y^2] - E[y]^2 > 0`.

        Parameters
        ----------
        coord : {"natural", "mean"}
            The coordinate system.

        Returns
        -------
        Domain
            Bounds ``lo < x < hi`` and the extra condition of its ``kind``.
        """
        if coord == "natural":
            if self.y_range is None:
                return box([-np.inf, -np.inf], [np.inf, 0.0])
            return box([-np.inf, -np.inf], [np.inf, self._eta2_cap()], MEAN_RANGE, self.y_range)
        return box([-np.inf, -np.inf], [np.inf, np.inf], PARABOLA)

    def in_mean_domain(self, mean):
        m = self._params(mean)
        return finite_rows(m) & (m[..., 1] - m[..., 0] ** 2 > 0)

    def project_natural(self, eta):
        r"""A natural parameter inside the (bounded) natural domain.

        Without a data range: :math:`\eta_2` lowered to ``-margin``.  With one: a row outside the domain becomes the law of
        mean :math:`\mu` clipped into [a + m, b - m] and variance :math:`\min(\sigma^2, (1 - \text{margin}) (b - a)^2 / 4)`,
        m = margin (b - a) (a row with :math:`\eta_2 \ge 0` is no law: its mean is the limit of :math:`\mu` as
        :math:`\eta_2 \to 0^-`, the bound on :math:`\eta_1`'s side, its variance the cap); rows inside are returned as
        they are.

        Parameters
        ----------
        eta : array-like of shape (n, 2)
            Natural parameters, one row per law.

        Returns
        -------
        eta : ndarray of shape (n, 2)
            A projected copy.

        Raises
        ------
        ConfigError
            When the parameters' last axis is not 2.
        """
        eta = self._params(eta).copy()
        if self.y_range is None:
            eta[..., 1] = np.minimum(eta[..., 1], -self.margin)
            return eta
        out = ~self.in_natural_domain(eta)
        if not out.any():
            return eta
        lo, hi = self.y_range
        e1, e2 = eta[out, 0], eta[out, 1]
        law = e2 < 0.0
        var = np.full(e1.shape, np.inf)
        var[law] = -0.5 / e2[law]
        mu = np.where(e1 > 0.0, hi, np.where(e1 < 0.0, lo, 0.5 * (lo + hi)))
        mu[law] = e1[law] * var[law]
        m = self.margin * (hi - lo)
        mu = np.clip(mu, lo + m, hi - m)
        var = np.minimum(var, (1.0 - self.margin) * 0.25 * (hi - lo) ** 2)
        eta[out] = np.stack([mu / var, -0.5 / var], axis=-1)
        return eta

    def project_mean(self, mean):
        r"""Keep :math:`E[y]` and raise :math:`E[y^2]` so that the variance is at least ``margin``.

        Parameters
        ----------
        mean : array-like of shape (n, 2)
            Mean parameters :math:`\eta^* = E[T(y)]`, one row per law.

        Returns
        -------
        mean : ndarray of shape (n, 2)
            A projected copy.

        Raises
        ------
        ConfigError
            When the parameters' last axis is not 2.
        """
        m = self._params(mean).copy()
        m[..., 1] = np.maximum(m[..., 1], m[..., 0] ** 2 + self.margin)
        return m

    def mean_and_variance(self, eta):
        return self._mu_var(eta)

    @staticmethod
    def from_mu_sigma(mu, sigma):
        r"""The natural parameter :math:`\eta = (\mu / \sigma^2, -1 / (2 \sigma^2))` of given means and standard deviations.

        Parameters
        ----------
        mu : array-like of shape (n,)
            Means.
        sigma : array-like of shape (n,)
            Standard deviations (> 0); broadcast against ``mu``.

        Returns
        -------
        eta : ndarray of shape (n, 2)

        Examples
        --------
        >>> from distviz.families import Normal
        >>> Normal.from_mu_sigma([1.0], [2.0]).tolist()
        [[0.25, -0.125]]
        """
        mu, sigma = np.broadcast_arrays(np.asarray(mu, float), np.asarray(sigma, float))
        var = sigma * sigma
        return np.stack([mu / var, -0.5 / var], axis=-1)

    def _default_mean(self):
        return np.array([0.0, 1.0])


def _gamma_shape_from_s(s: np.ndarray) -> np.ndarray:
    """Solve log(a) - digamma(a) = s > 0 for the Gamma shape a (Minka 2002, generalised Newton on 1/a).

    Starts from Minka's closed-form approximation and converges to machine precision in 3-5
    vectorised steps; only the rows not yet converged are iterated.
    """
    s = np.asarray(s, dtype=float)
    a = (3.0 - s + np.sqrt((s - 3.0) ** 2 + 24.0 * s)) / (12.0 * s)
    idx = np.arange(a.size)
    flat = a.reshape(-1)
    sf = s.reshape(-1)
    for _ in range(12):
        if idx.size == 0:
            break
        ai, si = flat[idx], sf[idx]
        f = np.log(ai) - digamma(ai) - si
        fp = 1.0 / ai - trigamma(ai)
        inv = 1.0 / ai + f / (ai * ai * fp)
        a_new = np.where(inv > 0, 1.0 / np.where(inv > 0, inv, 1.0), 0.5 * ai)
        flat[idx] = a_new
        idx = idx[np.abs(a_new - ai) > 4e-16 * a_new]
    return flat.reshape(s.shape)


class Gamma(ExponentialFamily):
    """Gamma(alpha, rate beta): T(y) = (log y, y), eta = (alpha - 1, -beta), h = 1.

    A(eta) = log Gamma(alpha) - alpha log beta; the mean coordinate is eta* = (psi(alpha) - log beta, alpha / beta)
    (psi the digamma function), whose domain is E[log y] < log E[y] (Jensen); ``to_natural`` solves
    log alpha - psi(alpha) = log E[y] - E[log y] by Minka's (2002) Newton iteration, then beta = alpha / E[y]
    (mirror_vs_natural_boosting.tex, Sec. 1).  ``from_shape_rate`` gives eta
    from (alpha, beta).  Targets must be positive.

    Parameters
    ----------
    margin : float or None, default=None
        Positive distance that ``project_mean`` / ``project_natural`` keep from the domain's boundary; None: the
        class's ``default_margin`` (1e-6).

    Attributes
    ----------
    name : str
        Registry name, as :func:`distviz.families.get` accepts it.
    dim : int
        Length of T(y), of eta and of eta*.
    margin : float
        The ``margin`` in use.

    Examples
    --------
    >>> from distviz.families import Gamma
    >>> fam = Gamma()
    >>> eta = Gamma.from_shape_rate(2.0, 4.0)
    >>> eta.tolist()
    [1.0, -4.0]
    >>> [float(v[0]) for v in fam.mean_and_variance(eta)]
    [0.5, 0.125]
    """

    name = "gamma"
    dim = 2
    stat_names = ("log y", "y")
    support = "y > 0"

    @property
    def natural_names(self):
        return ["alpha - 1", "-beta"]

    @property
    def mean_names(self):
        return ["E[log y]", "E[y]"]

    def _check_support(self, y):
        self._support_error(y, y <= 0, "is not positive",
                            "Gamma targets must be > 0; shift or drop zeros and negatives or choose the Normal family")

    def sufficient_stats(self, y):
        y = self._y(y)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.stack([np.log(y), y], axis=-1)

    @staticmethod
    def _ab(eta):
        return eta[..., 0] + 1.0, -eta[..., 1]

    def log_partition(self, eta):
        r"""The log-partition :math:`A(\eta) = \log\Gamma(\alpha) - \alpha \log\beta`, :math:`\alpha = \eta_1 + 1`,
        :math:`\beta = -\eta_2`.

        Parameters
        ----------
        eta : array-like of shape (n, 2)
            Natural parameters, one row per law.

        Returns
        -------
        A : ndarray of shape (n,)

        Raises
        ------
        ConfigError
            When the parameters' last axis is not 2.
        """
        a, b = self._ab(self._params(eta))
        return gammaln(a) - a * np.log(b)

    def to_mean(self, eta):
        r"""The mean coordinate :math:`\eta^* = (\psi(\alpha) - \log\beta, \alpha / \beta)` (:math:`\psi` the digamma
        function).

        Parameters
        ----------
        eta : array-like of shape (n, 2)
            Natural parameters, one row per law.

        Returns
        -------
        mean : ndarray of shape (n, 2)

        Raises
        ------
        ConfigError
            When the parameters' last axis is not 2.
        """
        a, b = self._ab(self._params(eta))
        return np.stack([digamma(a) - np.log(b), a / b], axis=-1)

    def to_natural(self, mean):
        r"""Invert :math:`\eta^*` by solving :math:`\log\alpha - \psi(\alpha) = \log E[y] - E[\log y]` (Minka's Newton
        iteration), :math:`\beta = \alpha / E[y]`.

        Parameters
        ----------
        mean : array-like of shape (n, 2)
            Mean parameters :math:`\eta^* = E[T(y)]`, one row per law.

        Returns
        -------
        eta : ndarray of shape (n, 2)
            NaN or infinite outside the mean domain.

        Raises
        ------
        ConfigError
            When the parameters' last axis is not 2.
        """
        m = self._params(mean)
        with np.errstate(divide="ignore", invalid="ignore"):
            s = np.log(m[..., 1]) - m[..., 0]
        ok = np.isfinite(s) & (s > 0)
        a = np.full(s.shape, np.nan)
        if ok.any():
            a[ok] = _gamma_shape_from_s(s[ok])
        return np.stack([a - 1.0, -a / m[..., 1]], axis=-1)

    def conjugate(self, mean):
        r"""The Legendre conjugate :math:`A^*(\eta^*) = (\alpha - 1) E[\log y] - \alpha - \log\Gamma(\alpha) + \alpha
        \log\beta`; :math:`+\infty` on the Jensen boundary :math:`E[\log y] = \log E[y]`.

        Parameters
        ----------
        mean : array-like of shape (n, 2)
            Mean parameters :math:`\eta^* = E[T(y)]`, one row per law.

        Returns
        -------
        A_star : ndarray of shape (n,)

        Raises
        ------
        ConfigError
            When the parameters' last axis is not 2.
        """
        m = self._params(mean)
        eta = self.to_natural(m)
        a, b = self._ab(eta)
        with np.errstate(invalid="ignore", divide="ignore"):
            out = (a - 1.0) * m[..., 0] - a - gammaln(a) + a * np.log(b)
            boundary = (m[..., 1] > 0) & (m[..., 0] == np.log(m[..., 1]))
        return np.where(boundary, np.inf, out)

    def fisher(self, eta):
        r"""The Fisher metric :math:`\begin{pmatrix} \psi'(\alpha) & 1/\beta \\ 1/\beta & \alpha/\beta^2 \end{pmatrix}`
        (:math:`\psi'` the trigamma function).

        Parameters
        ----------
        eta : array-like of shape (n, 2)
            Natural parameters, one row per law.

        Returns
        -------
        g : ndarray of shape (n, 2, 2)

        Raises
        ------
        ConfigError
            When the parameters' last axis is not 2.
        """
        a, b = self._ab(self._params(eta))
        out = np.empty(a.shape + (2, 2))
        out[..., 0, 0] = trigamma(a)
        out[..., 0, 1] = out[..., 1, 0] = 1.0 / b
        out[..., 1, 1] = a / (b * b)
        return out

    def inverse_fisher(self, eta):
        r"""The inverse Fisher metric in closed form, :math:`\frac{\beta^2}{\alpha \psi'(\alpha) - 1} \begin{pmatrix}
        \alpha/\beta^2 & -1/\beta \\ -1/\beta & \psi'(\alpha) \end{pmatrix}`.

        Parameters
        ----------
        eta : array-like of shape (n, 2)
            Natural parameters, one row per law.

        Returns
        -------
        g_inv : ndarray of shape (n, 2, 2)

        Raises
        ------
        ConfigError
            When the parameters' last axis is not 2.
        """
        a, b = self._ab(self._params(eta))
        t = trigamma(a)
        c = b * b / (a * t - 1.0)
        out = np.empty(a.shape + (2, 2))
        out[..., 0, 0] = c * a / (b * b)
        out[..., 0, 1] = out[..., 1, 0] = -c / b
        out[..., 1, 1] = c * t
        return out

    def solve_fisher(self, eta, v):
        a, b = self._ab(self._params(eta))
        v = self._params(v)
        t = trigamma(a)
        c = 1.0 / (a * t - 1.0)
        v1, v2 = v[..., 0], v[..., 1]
        return np.stack([c * (a * v1 - b * v2), c * (-b * v1 + b * b * t * v2)], axis=-1)

    def sample(self, eta, rng=None):
        a, b = self._ab(self._params(eta))
        return as_rng(rng).gamma(a, 1.0 / b)

    def in_natural_domain(self, eta):
        eta = self._params(eta)
        return finite_rows(eta) & (eta[..., 0] > -1) & (eta[..., 1] < 0)

    def domain(self, coord):
        r"""The compiled domains: natural parameters :math:`(-1, \infty) \times (-\infty, 0)`; means with :math:`E[y] > 0` and
        :math:`E[\log y] < \log E[y]`.

        Parameters
        ----------
        coord : {"natural", "mean"}
            The coordinate system.

        Returns
        -------
        Domain
            Bounds ``lo < x < hi`` and the extra condition of its ``kind``.
        """
        if coord == "natural":
            return box([-1.0, -np.inf], [np.inf, 0.0])
        return box([-np.inf, 0.0], [np.inf, np.inf], LOG)

    def in_mean_domain(self, mean):
        m = self._params(mean)
        with np.errstate(divide="ignore", invalid="ignore"):
            return finite_rows(m) & (m[..., 1] > 0) & (m[..., 0] < np.log(m[..., 1]))

    def project_natural(self, eta):
        eta = self._params(eta).copy()
        eta[..., 0] = np.maximum(eta[..., 0], -1.0 + self.margin)
        eta[..., 1] = np.minimum(eta[..., 1], -self.margin)
        return eta

    def project_mean(self, mean):
        r"""Keep :math:`E[y] \ge` ``margin`` and lower :math:`E[\log y]` to at most :math:`\log E[y] -` ``margin`` (the Jensen
        gap).

        Parameters
        ----------
        mean : array-like of shape (n, 2)
            Mean parameters :math:`\eta^* = E[T(y)]`, one row per law.

        Returns
        -------
        mean : ndarray of shape (n, 2)
            A projected copy.

        Raises
        ------
        ConfigError
            When the parameters' last axis is not 2.
        """
        m = self._params(mean).copy()
        m[..., 1] = np.maximum(m[..., 1], self.margin)
        m[..., 0] = np.minimum(m[..., 0], np.log(m[..., 1]) - self.margin)
        return m

    def mean_and_variance(self, eta):
        a, b = self._ab(self._params(eta))
        return a / b, a / (b * b)

    @staticmethod
    def from_shape_rate(alpha, beta):
        r"""The natural parameter :math:`\eta = (\alpha - 1, -\beta)` of given shapes and rates.

        Parameters
        ----------
        alpha : array-like of shape (n,)
            Shapes (> 0).
        beta : array-like of shape (n,)
            Rates (> 0); broadcast against ``alpha``.

        Returns
        -------
        eta : ndarray of shape (n, 2)

        Examples
        --------
        >>> from distviz.families import Gamma
        >>> Gamma.from_shape_rate([2.0], [3.0]).tolist()
        [[1.0, -3.0]]
        """
        a, b = np.broadcast_arrays(np.asarray(alpha, float), np.asarray(beta, float))
        return np.stack([a - 1.0, -b], axis=-1)

    def _default_mean(self):
        return self.to_mean(np.array([[1.0, -1.0]]))[0]


class Exponential(ExponentialFamily):
    """Exponential(rate lambda): T(y) = y, eta = -lambda, A = -log(-eta), h = 1.

    The mean coordinate is eta* = -1 / eta = 1 / lambda, the Fisher metric g(eta) = 1 / eta^2
    (mirror_vs_natural_boosting.tex, Sec. 1); the natural domain is eta < 0.  Targets must be non-negative.

    Parameters
    ----------
    margin : float or None, default=None
        Positive distance that ``project_mean`` / ``project_natural`` keep from the domain's boundary; None: the
        class's ``default_margin`` (1e-6).

    Attributes
    ----------
    name : str
        Registry name, as :func:`distviz.families.get` accepts it.
    dim : int
        Length of T(y), of eta and of eta*.
    margin : float
        The ``margin`` in use.

    Examples
    --------
    >>> from distviz.families import Exponential
    >>> fam = Exponential()
    >>> [float(v[0]) for v in fam.mean_and_variance([[-2.0]])]
    [0.5, 0.25]
    """

    name = "exponential"
    dim = 1
    stat_names = ("y",)
    support = "y >= 0"

    @property
    def natural_names(self):
        return ["-rate"]

    @property
    def mean_names(self):
        return ["E[y]"]

    def _check_support(self, y):
        self._support_error(y, y < 0, "is negative",
                            "Exponential targets must be >= 0; drop negative values or choose the Normal family")

    def sufficient_stats(self, y):
        return self._y(y)[:, None]

    def log_partition(self, eta):
        return -np.log(-self._params(eta)[..., 0])

    def to_mean(self, eta):
        return -1.0 / self._params(eta)

    def to_natural(self, mean):
        return -1.0 / self._params(mean)

    def conjugate(self, mean):
        r"""The Legendre conjugate :math:`A^*(m) = -1 - \log m`.

        Parameters
        ----------
        mean : array-like of shape (n, 1)
            Mean parameters :math:`\eta^* = E[T(y)]`, one row per law.

        Returns
        -------
        A_star : ndarray of shape (n,)

        Raises
        ------
        ConfigError
            When the parameters' last axis is not 1.
        """
        return -1.0 - np.log(self._params(mean)[..., 0])

    def fisher(self, eta):
        e = self._params(eta)
        return (1.0 / (e * e))[..., None]

    def inverse_fisher(self, eta):
        e = self._params(eta)
        return (e * e)[..., None]

    def solve_fisher(self, eta, v):
        e = self._params(eta)
        return self._params(v) * e * e

    def sample(self, eta, rng=None):
        return as_rng(rng).exponential(-1.0 / self._params(eta)[..., 0])

    def in_natural_domain(self, eta):
        e = self._params(eta)[..., 0]
        return np.isfinite(e) & (e < 0)

    def in_mean_domain(self, mean):
        m = self._params(mean)[..., 0]
        return np.isfinite(m) & (m > 0)

    def domain(self, coord):
        r"""The compiled domains: natural parameters :math:`(-\infty, 0)`, means :math:`(0, \infty)`.

        Parameters
        ----------
        coord : {"natural", "mean"}
            The coordinate system.

        Returns
        -------
        Domain
            Bounds ``lo < x < hi`` and the extra condition of its ``kind``.
        """
        return box([-np.inf], [0.0]) if coord == "natural" else box([0.0], [np.inf])

    def project_natural(self, eta):
        return np.minimum(self._params(eta), -self.margin)

    def project_mean(self, mean):
        return np.maximum(self._params(mean), self.margin)

    def mean_and_variance(self, eta):
        m = -1.0 / self._params(eta)[..., 0]
        return m, m * m

    def _default_mean(self):
        return np.array([1.0])
