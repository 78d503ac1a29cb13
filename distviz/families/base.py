"""Base class of the exponential families: the dually flat geometry of the mirror-vs-natural note.

Every family is written as (mirror_vs_natural_boosting.tex, Sec. 1)

    p(y | eta) = h(y) exp(<eta, T(y)> - A(eta)),    eta* = grad A(eta),    eta = grad A*(eta*),

with the Fisher metric g(eta) = hess A(eta) = Cov[T(y)] and the Legendre conjugate
A*(eta*) = <eta, eta*> - A(eta).  All maps are batched over rows: parameters have shape
(n, dim) (a 1-D array is read as n rows when dim == 1 and as one row otherwise), metrics have
shape (n, dim, dim) and y has shape (n,) (or (n, P) for the multivariate Normal).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from distviz.errors import ConfigError, DataError


def finite_rows(a) -> np.ndarray:
    """np.isfinite(a).all(axis=-1), taken column by column when the last axis is short.

    numpy's reduction over a short last axis is slower than a few column-wise passes.
    """
    a = np.asarray(a)
    if a.ndim >= 1 and 1 <= a.shape[-1] <= 16:
        ok = np.isfinite(a[..., 0])
        for k in range(1, a.shape[-1]):
            ok &= np.isfinite(a[..., k])
        return ok
    return np.isfinite(a).all(axis=-1)

__all__ = ["ExponentialFamily", "as_rng"]


def as_rng(rng=None) -> np.random.Generator:
    """Return a numpy Generator from a Generator, a seed or None."""
    if isinstance(rng, np.random.Generator):
        return rng
    return np.random.default_rng(rng)


class Domain(NamedTuple):
    """An open domain in the form compiled prediction tests (``distviz.trees.flat``): the open box lo < x < hi
    entrywise (which also asks every entry to be finite) and, by ``kind``, one more condition:

    * ``BOX``: none;
    * ``PARABOLA``: x[1] - x[0]^2 > 0 (Normal means: a positive variance);
    * ``LOG``: x[0] < log x[1] (Gamma means: E[log y] < log E[y]);
    * ``SIMPLEX``: sum(x) < 1 (Categorical means: the reference class's probability is positive);
    * ``SPD_SCALED``: the symmetric matrix with upper triangle (row by row) x[P:] * scale is positive definite
      (multivariate Normal natural parameters: the precision);
    * ``SPD_CENTRED``: the matrix with upper triangle x[P:] minus x[:P] x[:P]^T is positive definite
      (multivariate Normal means: the covariance);
    * ``MEAN_RANGE``: x[0] + 2 scale[0] x[1] > 0 and x[0] + 2 scale[1] x[1] < 0 (Normal natural parameters with
      x[1] < 0: the mean -x[0] / (2 x[1]) lies in (scale[0], scale[1])).
    """

    kind: int
    lo: np.ndarray
    hi: np.ndarray
    scale: np.ndarray


BOX, PARABOLA, LOG, SIMPLEX, SPD_SCALED, SPD_CENTRED, MEAN_RANGE = range(7)


def box(lo, hi, kind: int = BOX, scale=()) -> Domain:
    """The open box (lo, hi), one entry per coordinate, with the extra condition ``kind`` (see ``Domain``)."""
    return Domain(int(kind), np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64),
                  np.asarray(scale, dtype=np.float64))


class ExponentialFamily:
    """A regular exponential family in natural coordinates eta and mean coordinates eta*.

    The base class of every family: p(y | eta) = h(y) exp(<eta, T(y)> - A(eta)) with the mean coordinate
    eta* = grad A(eta), its inverse eta = grad A*(eta*), the Fisher metric g(eta) = hess A(eta) = Cov[T(y)] and the
    Legendre conjugate A*(eta*) = <eta, eta*> - A(eta) (mirror_vs_natural_boosting.tex, Sec. 1 and "Natural gradient
    descent").  A subclass defines T (``sufficient_stats``), A (``log_partition``), both coordinate maps, the Fisher
    metric, log h, sampling and its domains; this class derives the log-likelihood, the NLL
    A(eta) - <eta, T(y)> - log h(y) and its gradient eta* - T(y), the natural gradient g(eta)^-1 (eta* - T(y)) and
    the KL divergence (the Bregman divergence of A).  Every map is batched over rows: parameters have shape
    (n, dim), metrics (n, dim, dim), y (n,) (or (n, P) for the multivariate Normal).

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
    y_dim : int
        Dimension of one observation y (P for the multivariate Normal, else 1).
    vector_y : bool
        True when y has shape (n, y_dim) (the multivariate Normal), False for y of shape (n,).
    support : str
        The support of y, in words.

    See Also
    --------
    get : A family by name.
    distviz.families.dist.from_natural : The predictive distribution object at natural parameters.

    Examples
    --------
    >>> import numpy as np
    >>> from distviz.families import Poisson
    >>> fam = Poisson()
    >>> eta = np.log([[2.0], [5.0]])
    >>> fam.to_mean(eta)[:, 0].round(6).tolist()
    [2.0, 5.0]
    >>> (fam.nll_grad([1, 5], eta)[:, 0].round(6) + 0.0).tolist()
    [1.0, 0.0]
    """

    #: registry name, e.g. "poisson"
    name: str = ""
    #: length of T(y) == length of eta == length of eta*
    dim: int = 1
    #: dimension of one observation y (1, or P for the multivariate Normal)
    y_dim: int = 1
    #: True when y has shape (n, y_dim) (multivariate Normal, even for P = 1), False for y of shape (n,)
    vector_y: bool = False
    #: human-readable support of y
    support: str = ""
    #: default margin used by project_mean / project_natural
    default_margin: float = 1e-6

    def __init__(self, margin: float | None = None):
        """Create the family; `margin` is the distance project_* keeps from the domain boundary."""
        m = self.default_margin if margin is None else float(margin)
        if not np.isfinite(m) or m <= 0:
            raise ConfigError(f"margin must be a positive finite number, got {margin!r}; pass e.g. margin=1e-6.")
        self.margin = m

    # ------------------------------------------------------------------ labels
    @property
    def param_names(self) -> list[str]:
        """Labels of the components of T(y); they index both eta and eta* (eta*_j = E[T_j(y)])."""
        return list(self.stat_names)

    stat_names: tuple = ("y",)

    @property
    def natural_names(self) -> list[str]:
        """Labels of the natural coordinates eta (for plots)."""
        return [f"eta[{s}]" for s in self.param_names]

    @property
    def mean_names(self) -> list[str]:
        """Labels of the mean coordinates eta* = E[T(y)] (for plots)."""
        return [f"E[{s}]" for s in self.param_names]

    def describe(self) -> str:
        """One sentence describing the family, its sufficient statistic and support.

        Returns
        -------
        str
            E.g. "poisson family: T(y) = (y), 1 natural parameters, support y in {0, 1, 2, ...}."
        """
        return (f"{self.name} family: T(y) = ({', '.join(self.param_names)}), "
                f"{self.dim} natural parameters, support {self.support}.")

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    # ------------------------------------------------------------------ coercion
    def _params(self, a) -> np.ndarray:
        """Coerce a parameter array (eta or eta*) to float with last axis dim."""
        a = np.asarray(a, dtype=float)
        if a.ndim == 0:
            a = a.reshape(1, 1)
        elif a.ndim == 1:
            a = a[:, None] if self.dim == 1 else a[None, :]
        if a.shape[-1] != self.dim:
            raise ConfigError(
                f"{self.name} family: parameters need {self.dim} columns (one per component of T(y)), "
                f"got shape {a.shape}; pass an array of shape (n, {self.dim}).")
        return a

    def _y(self, y) -> np.ndarray:
        """Coerce y to float of shape (n,) or (n, P) without validation (hot path)."""
        y = np.asarray(y, dtype=float)
        if not self.vector_y:
            if y.ndim == 2 and y.shape[1] == 1:
                y = y[:, 0]
            elif y.ndim == 0:
                y = y.reshape(1)
        elif y.ndim <= 1:
            y = y.reshape(-1, 1) if self.y_dim == 1 else y.reshape(1, -1)
        return y

    # ------------------------------------------------------------------ validation
    def check_y(self, y) -> np.ndarray:
        """Validate targets against the family's shape and support.

        Parameters
        ----------
        y : array-like of shape (n,), or (n, P) for the multivariate Normal
            Targets (a column vector is read as (n,) for a scalar family).

        Returns
        -------
        y : ndarray of float, shape (n,) or (n, P)
            The targets as a float array.

        Raises
        ------
        DataError
            Naming the first bad value: non-numeric, of the wrong shape, empty, not finite, or outside the support
            (a negative or fractional count, a non-binary Bernoulli target, ...).
        """
        try:
            a = np.asarray(y, dtype=float)
        except (TypeError, ValueError):
            raise DataError(
                f"{self.name} family: y must be numeric, got values of type {np.asarray(y).dtype}; "
                f"convert the target column to numbers.") from None
        if not self.vector_y:
            if a.ndim == 2 and a.shape[1] == 1:
                a = a[:, 0]
            if a.ndim != 1:
                raise DataError(
                    f"{self.name} family: y must be one-dimensional of shape (n,), got shape {a.shape}; "
                    f"pass a single target column.")
        else:
            if a.ndim != 2 or a.shape[1] != self.y_dim:
                raise DataError(
                    f"{self.name} family: y must have shape (n, {self.y_dim}) (one column per output), "
                    f"got shape {a.shape}; pass a 2-D array with {self.y_dim} columns or "
                    f"choose P={a.shape[-1] if a.ndim else 1}.")
        if a.shape[0] == 0:
            raise DataError(f"{self.name} family: y is empty; pass at least one observation.")
        finite = np.isfinite(a) if a.ndim == 1 else finite_rows(a)
        if not finite.all():
            i = int(np.argmin(finite))
            raise DataError(
                f"{self.name} family: y[{i}] = {_fmt(a[i])} is not a finite number; "
                f"drop or impute missing and infinite targets before fitting.")
        self._check_support(a)
        return a

    def _check_support(self, y: np.ndarray) -> None:
        """Raise DataError when a finite y lies outside the support (family-specific)."""

    def _support_error(self, y: np.ndarray, bad: np.ndarray, why: str, fix: str) -> None:
        """Raise the DataError for the first True entry of `bad`."""
        if bad.any():
            i = int(np.argmax(bad))
            raise DataError(f"{self.name} family: y[{i}] = {_fmt(y[i])} {why}; {fix}.")

    # ------------------------------------------------------------------ geometry (override)
    def sufficient_stats(self, y) -> np.ndarray:
        """The sufficient statistic :math:`T(y)` of every observation (mirror_vs_natural_boosting.tex, Sec. 1).

        Parameters
        ----------
        y : array-like of shape (n,), or (n, P) for the multivariate Normal
            Observations, one per row of the parameters.

        Returns
        -------
        T : ndarray of shape (n, dim)
        """
        raise NotImplementedError

    def log_partition(self, eta) -> np.ndarray:
        r"""The log-partition function :math:`A(\eta) = \log \int h(y) e^{\langle \eta, T(y) \rangle} dy` (Sec. 1).

        Parameters
        ----------
        eta : array-like of shape (n, dim)
            Natural parameters, one row per law (a 1-D array is n rows when dim == 1, one row otherwise).

        Returns
        -------
        A : ndarray of shape (n,)

        Raises
        ------
        ConfigError
            When the parameters' last axis is not ``dim``.
        """
        raise NotImplementedError

    def to_mean(self, eta) -> np.ndarray:
        r"""The mean coordinate :math:`\eta^* = \nabla A(\eta) = E[T(y)]` (Sec. 1, the mirror map).

        Parameters
        ----------
        eta : array-like of shape (n, dim)
            Natural parameters, one row per law (a 1-D array is n rows when dim == 1, one row otherwise).

        Returns
        -------
        mean : ndarray of shape (n, dim)

        Raises
        ------
        ConfigError
            When the parameters' last axis is not ``dim``.
        """
        raise NotImplementedError

    def to_natural(self, mean) -> np.ndarray:
        r"""The natural coordinate :math:`\eta = \nabla A^*(\eta^*)`, the inverse of :meth:`to_mean` (Sec. 1).

        Parameters
        ----------
        mean : array-like of shape (n, dim)
            Mean parameters :math:`\eta^* = E[T(y)]`, one row per law (1-D read as for ``eta``).

        Returns
        -------
        eta : ndarray of shape (n, dim)
            NaN or infinite where ``mean`` lies outside the mean domain.

        Raises
        ------
        ConfigError
            When the parameters' last axis is not ``dim``.
        """
        raise NotImplementedError

    def fisher(self, eta) -> np.ndarray:
        r"""The Fisher metric :math:`g(\eta) = \nabla^2 A(\eta) = \mathrm{Cov}[T(y)]` (Sec. 1).

        Parameters
        ----------
        eta : array-like of shape (n, dim)
            Natural parameters, one row per law (a 1-D array is n rows when dim == 1, one row otherwise).

        Returns
        -------
        g : ndarray of shape (n, dim, dim)
            Symmetric positive definite inside the natural domain.

        Raises
        ------
        ConfigError
            When the parameters' last axis is not ``dim``.
        """
        raise NotImplementedError

    def log_base_measure(self, y) -> np.ndarray:
        r"""The log base measure :math:`\log h(y)` (0 unless the family overrides it).

        Parameters
        ----------
        y : array-like of shape (n,), or (n, P) for the multivariate Normal
            Observations, one per row of the parameters.

        Returns
        -------
        log_h : ndarray of shape (n,)
        """
        return np.zeros(self._y(y).shape[0])

    def sample(self, eta, rng=None) -> np.ndarray:
        r"""One draw of y from each row's law :math:`p(y \mid \eta)`.

        Parameters
        ----------
        eta : array-like of shape (n, dim)
            Natural parameters, one row per law (a 1-D array is n rows when dim == 1, one row otherwise).
        rng : numpy.random.Generator, int or None, default=None
            The random generator, or a seed for a new one.

        Returns
        -------
        y : ndarray of float, shape (n,), or (n, P) for the multivariate Normal

        Raises
        ------
        ConfigError
            When the parameters' last axis is not ``dim``.
        """
        raise NotImplementedError

    def in_natural_domain(self, eta) -> np.ndarray:
        """Whether each row of eta lies in the open natural domain :math:`N` (all finite vectors unless overridden).

        Parameters
        ----------
        eta : array-like of shape (n, dim)
            Natural parameters, one row per law (a 1-D array is n rows when dim == 1, one row otherwise).

        Returns
        -------
        inside : ndarray of bool, shape (n,)

        Raises
        ------
        ConfigError
            When the parameters' last axis is not ``dim``.
        """
        eta = self._params(eta)
        return finite_rows(eta)

    def in_mean_domain(self, mean) -> np.ndarray:
        r"""Whether each row lies in the open mean domain :math:`N^*`, the interior of the convex hull of :math:`T`.

        Parameters
        ----------
        mean : array-like of shape (n, dim)
            Mean parameters :math:`\eta^* = E[T(y)]`, one row per law (1-D read as for ``eta``).

        Returns
        -------
        inside : ndarray of bool, shape (n,)

        Raises
        ------
        ConfigError
            When the parameters' last axis is not ``dim``.
        """
        raise NotImplementedError

    def domain(self, coord: str) -> Domain:
        """The open domain of a coordinate in the compiled form (``Domain``).

        The compiled test admits a row only where ``in_natural_domain`` / ``in_mean_domain`` does; it may reject a row at
        the boundary that they admit (prediction then replays that row's update, which is exact).  Compiled prediction
        checks iterates with it (``distviz.boosting.predict``).  By default the natural domain is all finite vectors when
        ``in_natural_domain`` is the base class's.

        Parameters
        ----------
        coord : {"natural", "mean"}
            The coordinate system.

        Returns
        -------
        Domain
            Bounds ``lo < x < hi`` and the extra condition of its ``kind``.

        Raises
        ------
        NotImplementedError
            When the family gives no compiled domain for ``coord``.
        """
        if coord == "natural" and type(self).in_natural_domain is ExponentialFamily.in_natural_domain:
            return box([-np.inf] * self.dim, [np.inf] * self.dim)
        raise NotImplementedError(f"{type(self).__name__} gives no compiled {coord} domain")

    def with_data_range(self, lo: float, hi: float) -> "ExponentialFamily":
        """This family with its domain bounded by the training targets' range (a copy).

        Only families whose domain a fit bounds (``Normal``, whose NGD iterate must keep its mean within the range)
        override it; the others return themselves.

        Parameters
        ----------
        lo, hi : float
            The least and greatest training target.

        Returns
        -------
        ExponentialFamily
            ``self`` here; a bounded copy for ``Normal``.
        """
        return self

    def project_natural(self, eta) -> np.ndarray:
        """A nearby natural parameter at least ``margin`` inside the natural domain (NaN rows stay NaN).

        Parameters
        ----------
        eta : array-like of shape (n, dim)
            Natural parameters, one row per law (a 1-D array is n rows when dim == 1, one row otherwise).

        Returns
        -------
        eta : ndarray of shape (n, dim)
            A copy of eta here (the natural domain is all finite vectors); families with a bounded domain clip it.

        Raises
        ------
        ConfigError
            When the parameters' last axis is not ``dim``.
        """
        return self._params(eta).copy()

    def project_mean(self, mean) -> np.ndarray:
        r"""A nearby mean parameter at least ``margin`` inside the mean domain (NaN rows stay NaN).

        Parameters
        ----------
        mean : array-like of shape (n, dim)
            Mean parameters :math:`\eta^* = E[T(y)]`, one row per law (1-D read as for ``eta``).

        Returns
        -------
        mean : ndarray of shape (n, dim)

        Raises
        ------
        ConfigError
            When the parameters' last axis is not ``dim``.
        """
        raise NotImplementedError

    def mean_and_variance(self, eta):
        r"""The mean and variance of y on its own scale, :math:`(E[y], \mathrm{Var}[y])`.

        Parameters
        ----------
        eta : array-like of shape (n, dim)
            Natural parameters, one row per law (a 1-D array is n rows when dim == 1, one row otherwise).

        Returns
        -------
        mean, variance : ndarray of shape (n,) each
            (Categorical: probabilities (n, K) and the one-hot covariance (n, K, K); multivariate Normal: mean (n, P)
            and covariance (n, P, P).)

        Raises
        ------
        ConfigError
            When the parameters' last axis is not ``dim``.
        """
        raise NotImplementedError

    # ------------------------------------------------------------------ generic derived maps
    def conjugate(self, mean) -> np.ndarray:
        r"""The Legendre conjugate :math:`A^*(\eta^*) = \langle \eta, \eta^* \rangle - A(\eta)` with
        :math:`\eta = \nabla A^*(\eta^*)`, the generalised negative entropy (Sec. 1).

        Parameters
        ----------
        mean : array-like of shape (n, dim)
            Mean parameters :math:`\eta^* = E[T(y)]`, one row per law (1-D read as for ``eta``).

        Returns
        -------
        A_star : ndarray of shape (n,)

        Raises
        ------
        ConfigError
            When the parameters' last axis is not ``dim``.
        """
        mean = self._params(mean)
        eta = self.to_natural(mean)
        return np.einsum("...i,...i->...", eta, mean) - self.log_partition(eta)

    def inverse_fisher(self, eta) -> np.ndarray:
        r"""The inverse Fisher metric :math:`g(\eta)^{-1} = \nabla^2 A^*(\eta^*)` (Sec. 1), by batched Cholesky.

        Parameters
        ----------
        eta : array-like of shape (n, dim)
            Natural parameters, one row per law (a 1-D array is n rows when dim == 1, one row otherwise).

        Returns
        -------
        g_inv : ndarray of shape (n, dim, dim)

        Raises
        ------
        ConfigError
            When the parameters' last axis is not ``dim``.
        """
        from ._linalg import spd_inv_logdet
        return spd_inv_logdet(self.fisher(eta))[0]

    def solve_fisher(self, eta, v) -> np.ndarray:
        r""":math:`g(\eta)^{-1} v` per row without forming the inverse (batched Cholesky).

        Parameters
        ----------
        eta : array-like of shape (n, dim)
            Natural parameters, one row per law (a 1-D array is n rows when dim == 1, one row otherwise).
        v : array-like of shape (n, dim)
            One vector per row (e.g. a gradient in :math:`\eta`).

        Returns
        -------
        x : ndarray of shape (n, dim)
            The solution of :math:`g(\eta) x = v`.

        Raises
        ------
        ConfigError
            When the parameters' last axis is not ``dim``.
        """
        from ._linalg import spd_solve
        return spd_solve(self.fisher(eta), self._params(v))

    def logpdf(self, y, eta) -> np.ndarray:
        r"""The log-density :math:`\log p(y \mid \eta) = \log h(y) + \langle \eta, T(y) \rangle - A(\eta)` (Sec. 1).

        Parameters
        ----------
        y : array-like of shape (n,), or (n, P) for the multivariate Normal
            Observations, one per row of the parameters.
        eta : array-like of shape (n, dim)
            Natural parameters, one row per law (a 1-D array is n rows when dim == 1, one row otherwise).

        Returns
        -------
        logpdf : ndarray of shape (n,)

        Raises
        ------
        ConfigError
            When the parameters' last axis is not ``dim``.

        Examples
        --------
        >>> from distviz.families import Poisson
        >>> round(float(Poisson().logpdf([2.0], [[0.0]])[0]), 6)   # log(e^-1 / 2!)
        -1.693147
        """
        eta = self._params(eta)
        t = self.sufficient_stats(y)
        return self.log_base_measure(y) + np.einsum("...i,...i->...", eta, t) - self.log_partition(eta)

    def nll(self, y, eta, log_h=None) -> np.ndarray:
        r"""The per-row negative log-likelihood :math:`A(\eta) - \langle \eta, T(y) \rangle - \log h(y)`
        (mirror_vs_natural_boosting.tex, "Monitoring").

        Parameters
        ----------
        y : array-like of shape (n,), or (n, P) for the multivariate Normal
            Observations, one per row of the parameters.
        eta : array-like of shape (n, dim)
            Natural parameters, one row per law (a 1-D array is n rows when dim == 1, one row otherwise).
        log_h : array-like of shape (n,) or None, default=None
            :math:`\log h(y)` when already computed (a fit's loop reuses it); None computes it.

        Returns
        -------
        nll : ndarray of shape (n,)

        Raises
        ------
        ConfigError
            When the parameters' last axis is not ``dim``.
        """
        eta = self._params(eta)
        t = self.sufficient_stats(y)
        lh = self.log_base_measure(y) if log_h is None else np.asarray(log_h, dtype=float)
        return self.log_partition(eta) - np.einsum("...i,...i->...", eta, t) - lh

    def nll_grad(self, y, eta) -> np.ndarray:
        r"""The gradient of the per-row NLL in :math:`\eta`: :math:`\eta^* - T(y)` (Sec. 1).

        Parameters
        ----------
        y : array-like of shape (n,), or (n, P) for the multivariate Normal
            Observations, one per row of the parameters.
        eta : array-like of shape (n, dim)
            Natural parameters, one row per law (a 1-D array is n rows when dim == 1, one row otherwise).

        Returns
        -------
        grad : ndarray of shape (n, dim)

        Raises
        ------
        ConfigError
            When the parameters' last axis is not ``dim``.
        """
        return self.to_mean(eta) - self.sufficient_stats(y)

    def natural_gradient(self, y, eta) -> np.ndarray:
        r"""The natural gradient of the per-row NLL in :math:`\eta`: :math:`g(\eta)^{-1} (\eta^* - T(y))`
        (Sec. 1, "Natural gradient descent").

        Parameters
        ----------
        y : array-like of shape (n,), or (n, P) for the multivariate Normal
            Observations, one per row of the parameters.
        eta : array-like of shape (n, dim)
            Natural parameters, one row per law (a 1-D array is n rows when dim == 1, one row otherwise).

        Returns
        -------
        nat_grad : ndarray of shape (n, dim)

        Raises
        ------
        ConfigError
            When the parameters' last axis is not ``dim``.
        """
        return self.solve_fisher(eta, self.nll_grad(y, eta))

    def kl(self, eta_p, eta_q) -> np.ndarray:
        r"""The Kullback-Leibler divergence :math:`KL(p \| q) = A(\eta_q) - A(\eta_p) - \langle \eta_q - \eta_p,
        \eta^*_p \rangle`, the Bregman divergence of A (Sec. 1).

        Parameters
        ----------
        eta_p, eta_q : array-like of shape (n, dim)
            Natural parameters of p and of q, row by row.

        Returns
        -------
        kl : ndarray of shape (n,)
            Non-negative; 0 where p = q.

        Raises
        ------
        ConfigError
            When the parameters' last axis is not ``dim``.

        Examples
        --------
        >>> from distviz.families import Poisson
        >>> float(Poisson().kl([[0.0]], [[0.0]])[0])
        0.0
        """
        eta_p, eta_q = self._params(eta_p), self._params(eta_q)
        return (self.log_partition(eta_q) - self.log_partition(eta_p)
                - np.einsum("...i,...i->...", eta_q - eta_p, self.to_mean(eta_p)))

    def default_natural(self, n: int = 1) -> np.ndarray:
        r"""A typical natural parameter (for UIs and smoke tests), the family's default mean mapped to :math:`\eta`.

        Parameters
        ----------
        n : int, default=1
            Number of rows.

        Returns
        -------
        eta : ndarray of shape (n, dim)
            n equal rows.
        """
        return np.repeat(self.to_natural(self.project_mean(self._default_mean()[None, :])), n, axis=0)

    def _default_mean(self) -> np.ndarray:
        raise NotImplementedError


def _fmt(v) -> str:
    """Format a value (scalar or row) for an error message."""
    v = np.asarray(v)
    if v.ndim == 0:
        f = float(v)
        return str(int(f)) if np.isfinite(f) and f == int(f) and abs(f) < 1e15 else repr(f)
    return "[" + ", ".join(_fmt(x) for x in v) + "]"
