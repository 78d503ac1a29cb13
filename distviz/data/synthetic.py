"""Simulations with a known truth eta(x) for every exponential family (the app's "known truth" datasets).

Each generator draws ``X`` (n, p) uniform on [-3, 3]; only the first feature x1 drives the
truth (the other p - 1 columns are irrelevant noise features, useful to see that trees ignore
them), so with the default p = 1 every truth can be drawn as curves over x1.  A generator returns
a :class:`SyntheticData` holding X, y, the true natural parameter eta (n, d), the true mean
parameter eta* = E[T(y) | x] (n, d), the y-scale mean E[y | x], and the truth as functions of X so
that pages can draw it on a grid.  ``SYNTHETIC`` maps family names to generators.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from distviz.errors import ConfigError

__all__ = ["SYNTHETIC", "SyntheticData", "make_synthetic", "make_poisson", "make_bernoulli", "make_normal",
           "make_gamma", "make_exponential", "make_categorical", "make_mvn"]

X_LOW, X_HIGH = -3.0, 3.0


@dataclass
class SyntheticData:
    """A simulated data set with its true conditional distribution."""

    name: str
    family: str
    family_kwargs: dict
    X: np.ndarray
    y: np.ndarray
    eta: np.ndarray
    eta_star: np.ndarray
    mean: np.ndarray
    eta_fn: Callable[[np.ndarray], np.ndarray] = field(repr=False)
    description: str = ""

    def get_family(self):
        """The distviz family object of this simulation."""
        from distviz.families import get
        return get(self.family, **self.family_kwargs)

    def truth_eta(self, X) -> np.ndarray:
        """True natural parameter eta(x) at rows X, shape (n, d)."""
        return self.eta_fn(_as_2d(X))

    def truth_mean(self, X) -> np.ndarray:
        """True mean parameter eta*(x) = E[T(y) | x] at rows X, shape (n, d)."""
        return self.get_family().to_mean(self.truth_eta(X))

    def grid(self, n: int = 200) -> np.ndarray:
        """Rows X on an even grid of x1 over [-3, 3] (other features at 0), shape (n, p)."""
        G = np.zeros((n, self.X.shape[1]))
        G[:, 0] = np.linspace(X_LOW, X_HIGH, n)
        return G

    def oracle_nll(self, X=None, y=None) -> float:
        """Mean NLL of the true distribution on (X, y) (the training sample by default)."""
        X = self.X if X is None else _as_2d(X)
        y = self.y if y is None else y
        return float(np.mean(self.get_family().nll(y, self.truth_eta(X))))

    def split(self, test_fraction: float = 0.5, random_state=None):
        """(train, test) SyntheticData halves drawn at random."""
        rng = np.random.default_rng(random_state)
        idx = rng.permutation(len(self.y))
        k = int(round(len(idx) * (1 - test_fraction)))
        return self._subset(idx[:k]), self._subset(idx[k:])

    def _subset(self, i):
        return SyntheticData(self.name, self.family, dict(self.family_kwargs), self.X[i], self.y[i], self.eta[i],
                             self.eta_star[i], self.mean[i], self.eta_fn, self.description)


def _as_2d(X) -> np.ndarray:
    X = np.asarray(X, dtype=float)
    return X[:, None] if X.ndim == 1 else X


def _design(n, p, rng):
    n, p = int(n), int(p)
    if n < 1:
        raise ConfigError(f"n must be a positive integer, got {n}; pass e.g. n=1000.")
    if p < 1:
        raise ConfigError(f"p must be a positive integer (number of features), got {p}; pass e.g. p=1.")
    return rng.uniform(X_LOW, X_HIGH, size=(n, p))


def _finish(name, family, fam_kw, X, y, eta_fn, y_mean_fn, description):
    from distviz.families import get
    fam = get(family, **fam_kw)
    eta = eta_fn(X)
    return SyntheticData(name, family, fam_kw, X, y, eta, fam.to_mean(eta), y_mean_fn(X), eta_fn, description)


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


# ---------------------------------------------------------------------- generators
def _pois_log_rate(X):
    x = X[:, 0]
    return 1.0 + np.sin(1.5 * x) + 0.1 * x


def make_poisson(n: int = 1000, p: int = 1, random_state=None) -> SyntheticData:
    """Poisson counts with log-rate 1 + sin(1.5 x1) + 0.1 x1 (rates ~0.3 to ~9)."""
    rng = np.random.default_rng(random_state)
    X = _design(n, p, rng)
    y = rng.poisson(np.exp(_pois_log_rate(X))).astype(float)
    return _finish("poisson", "poisson", {}, X, y, lambda Z: _pois_log_rate(Z)[:, None],
                   lambda Z: np.exp(_pois_log_rate(Z)), "Poisson: log mu(x) = 1 + sin(1.5 x1) + 0.1 x1")


def _bern_logit(X):
    x = X[:, 0]
    return 2.5 * np.sin(x) + 0.3 * x


def make_bernoulli(n: int = 1000, p: int = 1, random_state=None) -> SyntheticData:
    """Bernoulli labels with logit 2.5 sin(x1) + 0.3 x1 (probabilities ~0.05 to ~0.95)."""
    rng = np.random.default_rng(random_state)
    X = _design(n, p, rng)
    y = (rng.uniform(size=len(X)) < _sigmoid(_bern_logit(X))).astype(float)
    return _finish("bernoulli", "bernoulli", {}, X, y, lambda Z: _bern_logit(Z)[:, None],
                   lambda Z: _sigmoid(_bern_logit(Z)), "Bernoulli: logit p(x) = 2.5 sin(x1) + 0.3 x1")


def _normal_mu_sigma(X):
    x = X[:, 0]
    return 2.0 * np.sin(x), 0.5 + 0.4 * (1.0 + np.sin(0.8 * x))


def _normal_eta(X):
    mu, s = _normal_mu_sigma(X)
    return np.stack([mu / s**2, -0.5 / s**2], axis=1)


def make_normal(n: int = 1000, p: int = 1, random_state=None) -> SyntheticData:
    """Heteroscedastic Normal: mean 2 sin(x1), standard deviation 0.5 + 0.4 (1 + sin(0.8 x1)) (0.5 to 1.3)."""
    rng = np.random.default_rng(random_state)
    X = _design(n, p, rng)
    mu, s = _normal_mu_sigma(X)
    y = mu + s * rng.standard_normal(len(X))
    return _finish("normal", "normal", {}, X, y, _normal_eta, lambda Z: _normal_mu_sigma(Z)[0],
                   "Normal: mu(x) = 2 sin(x1), sigma(x) = 0.5 + 0.4 (1 + sin(0.8 x1))")


def _gamma_shape_rate(X):
    x = X[:, 0]
    shape = 3.0 + 2.0 * np.sin(x)            # 1 .. 5
    mean = np.exp(0.5 + 0.4 * x)             # 0.5 .. 5.5
    return shape, shape / mean


def make_gamma(n: int = 1000, p: int = 1, random_state=None) -> SyntheticData:
    """Gamma with shape 3 + 2 sin(x1) and mean exp(0.5 + 0.4 x1) (skewness changes with x1)."""
    rng = np.random.default_rng(random_state)
    X = _design(n, p, rng)
    a, b = _gamma_shape_rate(X)
    y = rng.gamma(a, 1.0 / b)

    def eta_fn(Z):
        a, b = _gamma_shape_rate(Z)
        return np.stack([a - 1.0, -b], axis=1)

    def mean_fn(Z):
        a, b = _gamma_shape_rate(Z)
        return a / b

    return _finish("gamma", "gamma", {}, X, y, eta_fn, mean_fn,
                   "Gamma: shape(x) = 3 + 2 sin(x1), mean(x) = exp(0.5 + 0.4 x1)")


def _exp_mean(X):
    x = X[:, 0]
    return np.exp(0.6 * np.cos(1.2 * x) + 0.25 * x)


def make_exponential(n: int = 1000, p: int = 1, random_state=None) -> SyntheticData:
    """Exponential waiting times with mean exp(0.6 cos(1.2 x1) + 0.25 x1)."""
    rng = np.random.default_rng(random_state)
    X = _design(n, p, rng)
    y = rng.exponential(_exp_mean(X))
    return _finish("exponential", "exponential", {}, X, y, lambda Z: (-1.0 / _exp_mean(Z))[:, None], _exp_mean,
                   "Exponential: mean(x) = exp(0.6 cos(1.2 x1) + 0.25 x1)")


def _cat_scores(X):
    x = X[:, 0]
    return np.stack([2.0 * np.sin(x), 0.9 * x, np.zeros_like(x)], axis=1)


def make_categorical(n: int = 1000, p: int = 1, random_state=None) -> SyntheticData:
    """Three classes with scores (2 sin x1, 0.9 x1, 0); eta_k = score_k - score_2 (reference class 2)."""
    rng = np.random.default_rng(random_state)
    X = _design(n, p, rng)
    s = _cat_scores(X)
    P = np.exp(s - s.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    u = rng.uniform(size=len(X))
    y = (u[:, None] > np.cumsum(P, axis=1)[:, :-1]).sum(axis=1).astype(float)

    def eta_fn(Z):
        sc = _cat_scores(Z)
        return sc[:, :2] - sc[:, 2:]

    def mean_fn(Z):
        sc = _cat_scores(Z)
        e = np.exp(sc - sc.max(axis=1, keepdims=True))
        return (e / e.sum(axis=1, keepdims=True)) @ np.arange(3.0)

    return _finish("categorical", "categorical", {"K": 3}, X, y, eta_fn, mean_fn,
                   "Categorical(3): class scores (2 sin x1, 0.9 x1, 0)")


def _mvn_mu_cov(X):
    x = X[:, 0]
    mu = np.stack([np.sin(x), np.cos(x)], axis=1)
    s1 = 0.3 + 0.15 * (x + 3.0)
    s2 = np.full_like(x, 0.5)
    rho = 0.8 * np.sin(0.8 * x)
    C = np.empty((len(x), 2, 2))
    C[:, 0, 0], C[:, 1, 1] = s1**2, s2**2
    C[:, 0, 1] = C[:, 1, 0] = rho * s1 * s2
    return mu, C


def _mvn_eta(X):
    mu, C = _mvn_mu_cov(X)
    L = np.linalg.inv(C)
    b = np.einsum("nij,nj->ni", L, mu)
    # e = (-L11/2, -L12, -L22/2) in triu order (distviz.families.mvn convention)
    return np.stack([b[:, 0], b[:, 1], -0.5 * L[:, 0, 0], -L[:, 0, 1], -0.5 * L[:, 1, 1]], axis=1)


def make_mvn(n: int = 1000, p: int = 1, random_state=None) -> SyntheticData:
    """Bivariate Normal: mean (sin x1, cos x1), sds (0.3 + 0.15 (x1 + 3), 0.5), correlation 0.8 sin(0.8 x1)."""
    rng = np.random.default_rng(random_state)
    X = _design(n, p, rng)
    mu, C = _mvn_mu_cov(X)
    Lc = np.linalg.cholesky(C)
    y = mu + np.einsum("nij,nj->ni", Lc, rng.standard_normal((len(X), 2)))
    return _finish("mvn", "mvn", {"P": 2}, X, y, _mvn_eta, lambda Z: _mvn_mu_cov(Z)[0],
                   "mvn(2): mean (sin x1, cos x1), correlation 0.8 sin(0.8 x1), growing first sd")


SYNTHETIC: dict[str, Callable[..., SyntheticData]] = {
    "poisson": make_poisson,
    "bernoulli": make_bernoulli,
    "normal": make_normal,
    "gamma": make_gamma,
    "exponential": make_exponential,
    "categorical": make_categorical,
    "mvn": make_mvn,
}


def make_synthetic(name: str, n: int = 1000, p: int = 1, random_state=None) -> SyntheticData:
    """The simulation called `name` (a key of SYNTHETIC); ConfigError for unknown names."""
    if name not in SYNTHETIC:
        raise ConfigError(f"Unknown synthetic data set {name!r}; choose one of: {', '.join(SYNTHETIC)}.")
    return SYNTHETIC[name](n=n, p=p, random_state=random_state)
