"""Charts: unconstrained coordinates theta of an output distribution, for NGBoost-style fitting.

A chart provides the per-row negative log-likelihood, its gradient and the Fisher information in
theta, so that a boosting law can step along fisher(theta)^-1 grad (the natural gradient,
Duan et al.'s NGBoost; multivariate_ngboost_drifters.txt Sec. 2).  NGD boosting in eta
(mirror_vs_natural_boosting.tex, 'Boosting of NGD') is NGBoost in the chart theta = eta, which is
``ExponentialFamilyChart``; ngboost's own Normal is ``NormalMeanLogScale``.  Different charts of the
same family give different boosting paths: that is what the app shows side by side.

Protocol (every chart, including ``distviz.families.mvn_cholesky``):
``dim, param_names, family, y_dim, name``; ``init_theta(y, sample_weight) -> (dim,)``;
``nll(y, theta) -> (n,)``; ``nll_grad(y, theta) -> (n, dim)``; ``fisher(theta) -> (n, dim, dim)``;
``natural_gradient(y, theta) -> (n, dim)``; ``to_natural(theta)``, ``from_natural(eta)``;
``mean(theta)``, ``sample(theta, rng)``; ``check_y(y)``.
"""

from __future__ import annotations

import importlib
import importlib.util

import numpy as np

from distviz.errors import ConfigError

from .base import ExponentialFamily, as_rng

__all__ = ["Chart", "ExponentialFamilyChart", "DiagonalChart", "NormalMeanLogScale", "PoissonLogRate",
           "GammaLogShapeLogRate", "ExponentialLogScale", "get", "available"]

_LOG_2PI = float(np.log(2.0 * np.pi))


class Chart:
    """Base class of charts: unconstrained parameters theta, NLL, gradient and Fisher information."""

    name: str = ""
    dim: int = 1
    y_dim: int = 1
    vector_y: bool = False
    param_names: list = []
    family: ExponentialFamily | None = None

    def _theta(self, theta) -> np.ndarray:
        """Coerce theta to float (n, dim) (a 1-D array is n rows when dim == 1, else one row)."""
        t = np.asarray(theta, dtype=float)
        if t.ndim == 0:
            t = t.reshape(1, 1)
        elif t.ndim == 1:
            t = t[:, None] if self.dim == 1 else t[None, :]
        if t.shape[-1] != self.dim:
            raise ConfigError(f"{self.name} chart: theta needs {self.dim} columns, got shape {t.shape}; "
                              f"pass an array of shape (n, {self.dim}).")
        return t

    def check_y(self, y) -> np.ndarray:
        """Validate targets (through the family when there is one).

        Parameters
        ----------
        y : array-like of shape (n,) or (n, y_dim)
            Targets.

        Returns
        -------
        y : ndarray of float, shape (n,) or (n, y_dim)

        Raises
        ------
        DataError
            Naming the first value outside the family's support, or a y of the wrong shape.
        """
        if self.family is not None:
            return self.family.check_y(y)
        raise NotImplementedError

    def init_theta(self, y, sample_weight=None) -> np.ndarray:
        """The marginal maximum-likelihood (or moment-matching) start value of theta, the boosting's round 0.

        Parameters
        ----------
        y : array-like of shape (n,) or (n, y_dim)
            Training targets.
        sample_weight : array-like of shape (n,) or None, default=None
            Non-negative row weights with a positive sum; None weighs every row equally.

        Returns
        -------
        theta0 : ndarray of shape (dim,)

        Raises
        ------
        ConfigError
            When ``sample_weight`` is not n finite non-negative numbers with a positive sum.
        """
        raise NotImplementedError

    def nll(self, y, theta) -> np.ndarray:
        r"""The per-row negative log-likelihood :math:`-\log p(y \mid \theta)`.

        Parameters
        ----------
        y : array-like of shape (n,), or (n, y_dim) for a vector y
            Observations, one per row of theta.
        theta : array-like of shape (n, dim)
            Chart coordinates, one row per law (a 1-D array is n rows when dim == 1, one row otherwise).

        Returns
        -------
        nll : ndarray of shape (n,)

        Raises
        ------
        ConfigError
            When theta's last axis is not ``dim``.
        """
        raise NotImplementedError

    def nll_grad(self, y, theta) -> np.ndarray:
        r"""The gradient of the per-row NLL in theta, :math:`\partial(-\log p(y \mid \theta)) / \partial\theta`.

        Parameters
        ----------
        y : array-like of shape (n,), or (n, y_dim) for a vector y
            Observations, one per row of theta.
        theta : array-like of shape (n, dim)
            Chart coordinates, one row per law (a 1-D array is n rows when dim == 1, one row otherwise).

        Returns
        -------
        grad : ndarray of shape (n, dim)

        Raises
        ------
        ConfigError
            When theta's last axis is not ``dim``.
        """
        raise NotImplementedError

    def fisher(self, theta) -> np.ndarray:
        r"""The Fisher information :math:`I(\theta) = E[\nabla \nabla^\top]` of the NLL in theta
        (multivariate_ngboost_drifters.txt Sec. 2).

        Parameters
        ----------
        theta : array-like of shape (n, dim)
            Chart coordinates, one row per law (a 1-D array is n rows when dim == 1, one row otherwise).

        Returns
        -------
        fisher : ndarray of shape (n, dim, dim)

        Raises
        ------
        ConfigError
            When theta's last axis is not ``dim``.
        """
        raise NotImplementedError

    def natural_gradient(self, y, theta) -> np.ndarray:
        r"""The natural gradient :math:`I(\theta)^{-1} \nabla_\theta \mathrm{NLL}` per row (Duan et al.'s NGBoost;
        multivariate_ngboost_drifters.txt Sec. 2), by a batched solve.

        Parameters
        ----------
        y : array-like of shape (n,), or (n, y_dim) for a vector y
            Observations, one per row of theta.
        theta : array-like of shape (n, dim)
            Chart coordinates, one row per law (a 1-D array is n rows when dim == 1, one row otherwise).

        Returns
        -------
        nat_grad : ndarray of shape (n, dim)

        Raises
        ------
        ConfigError
            When theta's last axis is not ``dim``.
        """
        g = self.nll_grad(y, theta)
        return np.linalg.solve(self.fisher(theta), g[..., None])[..., 0]

    def to_natural(self, theta) -> np.ndarray:
        r"""The family's natural parameter :math:`\eta` of each theta.

        Parameters
        ----------
        theta : array-like of shape (n, dim)
            Chart coordinates, one row per law (a 1-D array is n rows when dim == 1, one row otherwise).

        Returns
        -------
        eta : ndarray of shape (n, family.dim)

        Raises
        ------
        ConfigError
            When theta's last axis is not ``dim``.
        """
        raise NotImplementedError

    def from_natural(self, eta) -> np.ndarray:
        r"""The chart coordinates theta of each natural parameter :math:`\eta` (the inverse of :meth:`to_natural`).

        Parameters
        ----------
        eta : array-like of shape (n, family.dim)
            Natural parameters of the family.

        Returns
        -------
        theta : ndarray of shape (n, dim)

        Raises
        ------
        ConfigError
            When eta's last axis is not the family's ``dim``.
        """
        raise NotImplementedError

    def mean(self, theta) -> np.ndarray:
        """The mean :math:`E[y]` of each row's law.

        Parameters
        ----------
        theta : array-like of shape (n, dim)
            Chart coordinates, one row per law (a 1-D array is n rows when dim == 1, one row otherwise).

        Returns
        -------
        mean : ndarray of shape (n,), or (n, y_dim) for a vector y

        Raises
        ------
        ConfigError
            When theta's last axis is not ``dim``.
        """
        raise NotImplementedError

    def sample(self, theta, rng=None) -> np.ndarray:
        """One draw of y from each row's law.

        Parameters
        ----------
        theta : array-like of shape (n, dim)
            Chart coordinates, one row per law (a 1-D array is n rows when dim == 1, one row otherwise).
        rng : numpy.random.Generator, int or None, default=None
            The random generator, or a seed for a new one.

        Returns
        -------
        y : ndarray of shape (n,), or (n, y_dim) for a vector y

        Raises
        ------
        ConfigError
            When theta's last axis is not ``dim``.
        """
        raise NotImplementedError

    def __repr__(self):
        return f"{type(self).__name__}()"


def _weights(n, sample_weight):
    if sample_weight is None:
        return np.full(n, 1.0 / n)
    w = np.asarray(sample_weight, dtype=float)
    if w.shape != (n,) or not np.isfinite(w).all() or (w < 0).any() or w.sum() <= 0:
        raise ConfigError(f"sample_weight must be {n} finite non-negative numbers with a positive sum; "
                          f"got shape {w.shape}.")
    return w / w.sum()


class ExponentialFamilyChart(Chart):
    """The natural chart theta = eta of an exponential family (NGBoost here is NGD boosting in eta).

    Every chart method is the family's own in eta: the per-row NLL A(eta) - <eta, T(y)> - log h(y), its gradient
    eta* - T(y), the Fisher metric hess A(eta) and the natural gradient g(eta)^-1 (eta* - T(y)), so NGBoost in
    this chart is the NGD boosting of mirror_vs_natural_boosting.tex ("Boosting of NGD").  ``init_theta`` is the
    moment-matching start eta = grad A*(weighted mean of T(y)), projected into the mean domain first.

    Parameters
    ----------
    family : ExponentialFamily
        The family whose natural parameters are the chart's coordinates (``ConfigError`` for anything else).

    Attributes
    ----------
    family : ExponentialFamily
        The wrapped family.
    dim : int
        Number of coordinates, the family's ``dim``.
    y_dim : int
        Dimension of one observation, the family's ``y_dim``.
    vector_y : bool
        Whether y has shape (n, y_dim), as the family's.
    name : str
        ``"eta:<family name>"`` (the registry's ``get`` renames the charts it builds, e.g. "bernoulli").
    param_names : list of str
        The family's ``natural_names``.

    Examples
    --------
    >>> import numpy as np
    >>> from distviz.families import Poisson
    >>> from distviz.families.charts import ExponentialFamilyChart
    >>> chart = ExponentialFamilyChart(Poisson())
    >>> theta = chart.init_theta(np.array([1, 2, 3]))
    >>> bool(np.isclose(theta[0], np.log(2.0)))
    True
    >>> chart.natural_gradient(np.array([3.0]), theta[None]).tolist()
    [[-0.5]]
    """

    def __init__(self, family: ExponentialFamily):
        """Wrap an ExponentialFamily instance."""
        if not isinstance(family, ExponentialFamily):
            raise ConfigError(f"ExponentialFamilyChart needs an ExponentialFamily, got {family!r}.")
        self.family = family
        self.dim = family.dim
        self.y_dim = family.y_dim
        self.vector_y = family.vector_y
        self.name = f"eta:{family.name}"

    @property
    def param_names(self):
        return self.family.natural_names

    def __repr__(self):
        return f"ExponentialFamilyChart({self.family!r})"

    def init_theta(self, y, sample_weight=None):
        r"""The moment-matching start :math:`\eta = \nabla A^*(\bar T)`, :math:`\bar T` the weighted mean of
        :math:`T(y)` projected into the mean domain (the marginal maximum-likelihood :math:`\eta`).

        Parameters
        ----------
        y : array-like of shape (n,) or (n, y_dim)
            Training targets.
        sample_weight : array-like of shape (n,) or None, default=None
            Non-negative row weights with a positive sum; None weighs every row equally.

        Returns
        -------
        theta0 : ndarray of shape (dim,)

        Raises
        ------
        ConfigError
            When ``sample_weight`` is not n finite non-negative numbers with a positive sum.
        """
        t = self.family.sufficient_stats(y)
        w = _weights(t.shape[0], sample_weight)
        m = self.family.project_mean((w @ t)[None, :])
        return self.family.to_natural(m)[0]

    def nll(self, y, theta):
        return self.family.nll(y, self._theta(theta))

    def nll_grad(self, y, theta):
        return self.family.nll_grad(y, self._theta(theta))

    def fisher(self, theta):
        return self.family.fisher(self._theta(theta))

    def natural_gradient(self, y, theta):
        return self.family.natural_gradient(y, self._theta(theta))

    def to_natural(self, theta):
        return self._theta(theta)

    def from_natural(self, eta):
        return self.family._params(eta)

    def mean(self, theta):
        return self.family.mean_and_variance(self._theta(theta))[0]

    def sample(self, theta, rng=None):
        return self.family.sample(self._theta(theta), rng)


class PoissonLogRate(ExponentialFamilyChart):
    """Poisson in theta = log rate (ngboost's Poisson), which is also its natural chart."""

    def __init__(self):
        from .univariate import Poisson
        super().__init__(Poisson())
        self.name = "poisson"

    @property
    def param_names(self):
        return ["log rate"]

    def __repr__(self):
        return "PoissonLogRate()"


class NormalMeanLogScale(Chart):
    """Normal in theta = (mu, log sigma), as ngboost's Normal; Fisher = diag(1/sigma^2, 2)."""

    name = "normal"
    dim = 2
    y_dim = 1
    param_names = ["mu", "log sigma"]

    def __init__(self):
        from .univariate import Normal
        self.family = Normal()

    def init_theta(self, y, sample_weight=None):
        r"""The weighted marginal MLE :math:`(\bar y, \log s)`, s the weighted standard deviation (its variance floored
        at 1e-12).

        Parameters
        ----------
        y : array-like of shape (n,) or (n, y_dim)
            Training targets.
        sample_weight : array-like of shape (n,) or None, default=None
            Non-negative row weights with a positive sum; None weighs every row equally.

        Returns
        -------
        theta0 : ndarray of shape (dim,)

        Raises
        ------
        ConfigError
            When ``sample_weight`` is not n finite non-negative numbers with a positive sum.
        """
        y = self.family._y(y)
        w = _weights(y.shape[0], sample_weight)
        mu = w @ y
        var = max(float(w @ (y - mu) ** 2), 1e-12)
        return np.array([mu, 0.5 * np.log(var)])

    def nll(self, y, theta):
        t = self._theta(theta)
        z = (self.family._y(y) - t[..., 0]) * np.exp(-t[..., 1])
        return 0.5 * _LOG_2PI + t[..., 1] + 0.5 * z * z

    def nll_grad(self, y, theta):
        r"""The gradient of the per-row NLL in :math:`(\mu, \log\sigma)`: :math:`(-(y - \mu)/\sigma^2,
        1 - (y - \mu)^2/\sigma^2)`.

        Parameters
        ----------
        y : array-like of shape (n,), or (n, y_dim) for a vector y
            Observations, one per row of theta.
        theta : array-like of shape (n, dim)
            Chart coordinates, one row per law (a 1-D array is n rows when dim == 1, one row otherwise).

        Returns
        -------
        grad : ndarray of shape (n, dim)

        Raises
        ------
        ConfigError
            When theta's last axis is not ``dim``.
        """
        t = self._theta(theta)
        r = self.family._y(y) - t[..., 0]
        iv = np.exp(-2.0 * t[..., 1])
        return np.stack([-r * iv, 1.0 - r * r * iv], axis=-1)

    def fisher(self, theta):
        t = self._theta(theta)
        out = np.zeros(t.shape[:-1] + (2, 2))
        out[..., 0, 0] = np.exp(-2.0 * t[..., 1])
        out[..., 1, 1] = 2.0
        return out

    def natural_gradient(self, y, theta):
        r"""The natural gradient in closed form, :math:`(-(y - \mu), (1 - (y - \mu)^2/\sigma^2) / 2)` (the Fisher
        information is :math:`\mathrm{diag}(1/\sigma^2, 2)`).

        Parameters
        ----------
        y : array-like of shape (n,), or (n, y_dim) for a vector y
            Observations, one per row of theta.
        theta : array-like of shape (n, dim)
            Chart coordinates, one row per law (a 1-D array is n rows when dim == 1, one row otherwise).

        Returns
        -------
        nat_grad : ndarray of shape (n, dim)

        Raises
        ------
        ConfigError
            When theta's last axis is not ``dim``.
        """
        t = self._theta(theta)
        r = self.family._y(y) - t[..., 0]
        return np.stack([-r, 0.5 * (1.0 - r * r * np.exp(-2.0 * t[..., 1]))], axis=-1)

    def to_natural(self, theta):
        t = self._theta(theta)
        iv = np.exp(-2.0 * t[..., 1])
        return np.stack([t[..., 0] * iv, -0.5 * iv], axis=-1)

    def from_natural(self, eta):
        mu, var = self.family.mean_and_variance(eta)
        return np.stack([mu, 0.5 * np.log(var)], axis=-1)

    def mean(self, theta):
        return self._theta(theta)[..., 0].copy()

    def sample(self, theta, rng=None):
        t = self._theta(theta)
        return t[..., 0] + np.exp(t[..., 1]) * as_rng(rng).standard_normal(t.shape[:-1])


class DiagonalChart(Chart):
    """A chart whose coordinates map one-to-one onto eta: eta_k = phi_k(theta_k) (chain rule with a diagonal Jacobian).

    nll_grad = J (eta* - T(y)), fisher = J g(eta) J and natural gradient = J^-1 g(eta)^-1 (eta* - T(y)),
    with J = diag(phi'(theta)); subclasses give _eta(theta), _jac(theta) and _theta_of(eta).
    """

    def init_theta(self, y, sample_weight=None):
        """The weighted marginal MLE by moment matching in the family's mean coordinates, mapped to theta.

        Parameters
        ----------
        y : array-like of shape (n,) or (n, y_dim)
            Training targets.
        sample_weight : array-like of shape (n,) or None, default=None
            Non-negative row weights with a positive sum; None weighs every row equally.

        Returns
        -------
        theta0 : ndarray of shape (dim,)

        Raises
        ------
        ConfigError
            When ``sample_weight`` is not n finite non-negative numbers with a positive sum.
        """
        eta = ExponentialFamilyChart(self.family).init_theta(y, sample_weight)
        return self.from_natural(eta[None, :])[0]

    def nll(self, y, theta):
        return self.family.nll(y, self.to_natural(theta))

    def nll_grad(self, y, theta):
        t = self._theta(theta)
        return self.family.nll_grad(y, self._eta(t)) * self._jac(t)

    def fisher(self, theta):
        t = self._theta(theta)
        J = self._jac(t)
        return self.family.fisher(self._eta(t)) * J[..., :, None] * J[..., None, :]

    def natural_gradient(self, y, theta):
        r"""The natural gradient :math:`J^{-1} g(\eta)^{-1} (\eta^* - T(y))`, J the diagonal Jacobian of
        :math:`\eta(\theta)`, with the family's closed-form ``solve_fisher``.

        Parameters
        ----------
        y : array-like of shape (n,), or (n, y_dim) for a vector y
            Observations, one per row of theta.
        theta : array-like of shape (n, dim)
            Chart coordinates, one row per law (a 1-D array is n rows when dim == 1, one row otherwise).

        Returns
        -------
        nat_grad : ndarray of shape (n, dim)

        Raises
        ------
        ConfigError
            When theta's last axis is not ``dim``.
        """
        t = self._theta(theta)
        eta = self._eta(t)
        return self.family.solve_fisher(eta, self.family.nll_grad(y, eta)) / self._jac(t)

    def to_natural(self, theta):
        return self._eta(self._theta(theta))

    def from_natural(self, eta):
        return self._theta_of(self.family._params(eta))

    def mean(self, theta):
        return self.family.mean_and_variance(self.to_natural(theta))[0]

    def sample(self, theta, rng=None):
        return self.family.sample(self.to_natural(theta), rng)


class GammaLogShapeLogRate(DiagonalChart):
    """Gamma in theta = (log alpha, log beta), as ngboost's Gamma: eta = (e^theta1 - 1, -e^theta2)."""

    name = "gamma"
    dim = 2
    y_dim = 1
    param_names = ["log alpha", "log beta"]

    def __init__(self):
        from .univariate import Gamma
        self.family = Gamma()

    def _eta(self, t):
        return np.stack([np.exp(t[..., 0]) - 1.0, -np.exp(t[..., 1])], axis=-1)

    def _jac(self, t):
        return np.stack([np.exp(t[..., 0]), -np.exp(t[..., 1])], axis=-1)

    def _theta_of(self, e):
        return np.stack([np.log(e[..., 0] + 1.0), np.log(-e[..., 1])], axis=-1)

    def mean(self, theta):
        t = self._theta(theta)
        return np.exp(t[..., 0] - t[..., 1])


class ExponentialLogScale(DiagonalChart):
    """Exponential in theta = log scale = -log rate, as ngboost's Exponential: eta = -e^-theta, Fisher = 1."""

    name = "exponential"
    dim = 1
    y_dim = 1
    param_names = ["log scale"]

    def __init__(self):
        from .univariate import Exponential
        self.family = Exponential()

    def _eta(self, t):
        return -np.exp(-t)

    def _jac(self, t):
        return np.exp(-t)

    def _theta_of(self, e):
        return -np.log(-e)

    def mean(self, theta):
        return np.exp(self._theta(theta)[..., 0])


_MVN_CHOLESKY_MODULE = "distviz.families.mvn_cholesky"


def _mvn_cholesky(**kwargs):
    """Import the multivariate-Normal Cholesky chart lazily (module written separately)."""
    if importlib.util.find_spec(_MVN_CHOLESKY_MODULE) is None:
        raise ConfigError("the mvn_cholesky chart is not available in this installation; use 'eta:mvn' instead.")
    mod = importlib.import_module(_MVN_CHOLESKY_MODULE)
    for attr in ("get_chart", "MVNCholesky"):
        if hasattr(mod, attr):
            return getattr(mod, attr)(**kwargs)
    raise ConfigError("distviz.families.mvn_cholesky defines no chart class this registry knows; "
                      "expected get_chart(P=...) or MVNCholesky(P=...).")


def _natural(name):
    def make(**kw):
        from . import get as fam_get
        chart = ExponentialFamilyChart(fam_get(name, **kw))
        chart.name = name
        return chart
    return make


_CHARTS = {
    "normal": lambda **kw: NormalMeanLogScale(**kw),
    "poisson": lambda **kw: PoissonLogRate(**kw),
    "gamma": lambda **kw: GammaLogShapeLogRate(**kw),
    "exponential": lambda **kw: ExponentialLogScale(**kw),
    "bernoulli": _natural("bernoulli"),      # logit = natural parameter (ngboost's Bernoulli)
    # K=...: the K-1 logits against the LAST class (ngboost's k_categorical takes class 0 as the reference)
    "categorical": _natural("categorical"),
    "mvn_cholesky": _mvn_cholesky,
}
_TAKES_KWARGS = {"mvn_cholesky", "categorical"}
_CHART_ALIASES = {
    "gaussian": "normal", "normal_mean_log_scale": "normal", "mu_log_sigma": "normal",
    "poisson_log_rate": "poisson", "log_rate": "poisson",
    "gamma_log_shape_log_rate": "gamma", "exponential_log_scale": "exponential", "logit": "bernoulli",
    "k_categorical": "categorical", "multiclass": "categorical",
    "mvn": "mvn_cholesky", "cholesky": "mvn_cholesky", "multivariate_normal": "mvn_cholesky",
    "mvn_chol": "mvn_cholesky",
}


def available() -> list[str]:
    """Names accepted by get(): the named charts plus 'eta:<family>' for every family."""
    from . import available as fam_available
    return list(_CHARTS) + [f"eta:{f}" for f in fam_available()]


def get(name, **kwargs) -> Chart:
    """A chart by name, for NGBoost-style fitting.

    Parameters
    ----------
    name : str, Chart or ExponentialFamily
        One of ngboost's charts 'normal' (mu, log sigma), 'poisson' (log rate), 'gamma' (log alpha, log beta),
        'exponential' (log scale), 'bernoulli' (logit), 'categorical' (the K-1 logits log(p_k / p_K) against the
        last class K-1, where ngboost's k_categorical takes class 0 as the reference), 'mvn_cholesky' (the
        multivariate Normal's Cholesky-of-precision chart), or 'eta:<family>' (the natural chart
        :class:`ExponentialFamilyChart` of that family; 'natural:' works too); aliases such as 'gaussian',
        'logit' or 'mvn' are accepted, case, spaces and hyphens ignored (see :func:`available`).  A Chart is
        returned unchanged, an ExponentialFamily wrapped in its natural chart.
    **kwargs
        Options of the charts that take them: ``K`` for 'categorical', ``P`` for 'mvn_cholesky', the family's
        options (``K``, ``P``, ``margin``) for 'eta:<family>'; the other charts take none (``ConfigError``).

    Returns
    -------
    Chart
        A new chart object (or ``name`` itself when it is a Chart).

    Raises
    ------
    ConfigError
        For an unknown name, a name that is not a string, or options the chart does not take.

    Examples
    --------
    >>> from distviz.families import charts
    >>> charts.get("normal").param_names
    ['mu', 'log sigma']
    >>> charts.get("eta:categorical", K=3)
    ExponentialFamilyChart(Categorical(K=3))
    """
    if isinstance(name, Chart):
        return name
    if isinstance(name, ExponentialFamily):
        return ExponentialFamilyChart(name)
    if not isinstance(name, str):
        raise ConfigError(f"chart name must be a string, got {name!r}; choose one of {', '.join(available())}.")
    key = name.strip().lower().replace("-", "_").replace(" ", "_")
    for prefix in ("eta:", "natural:", "eta_", "natural_"):
        if key.startswith(prefix):
            from . import get as fam_get
            return ExponentialFamilyChart(fam_get(key[len(prefix):], **kwargs))
    key = _CHART_ALIASES.get(key, key)
    if key not in _CHARTS:
        raise ConfigError(f"unknown chart {name!r}; choose one of {', '.join(available())}.")
    if key not in _TAKES_KWARGS and kwargs:
        raise ConfigError(f"chart {name!r} takes no options, got {sorted(kwargs)}; remove them.")
    return _CHARTS[key](**kwargs)
