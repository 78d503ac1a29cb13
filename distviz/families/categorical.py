"""Categorical(K) as an exponential family with T(y) = one-hot of the first K-1 classes.

eta_k = log(p_k / p_K) for k < K (class K-1 in 0-based labels is the reference class; ngboost's
k_categorical instead fixes class 0's logit at 0, so its K-1 parameters are log(p_k / p_0) for k = 1..K-1
and the two charts differ by a linear change of coordinates),
A(eta) = log(1 + sum_k e^{eta_k}), eta* = (p_0, ..., p_{K-2}), A*(p) = sum_{k<K} p_k log p_k
(mirror_vs_natural_boosting.tex, Sec. 1 geometry).  The Fisher metric diag(p) - p p^T has the
closed-form inverse diag(1/p) + 1 1^T / p_K (Sherman-Morrison).
"""

from __future__ import annotations

import numpy as np
from scipy.special import xlogy

from distviz.errors import ConfigError

from .base import SIMPLEX, ExponentialFamily, as_rng, box, finite_rows

__all__ = ["Categorical"]


class Categorical(ExponentialFamily):
    """Categorical over labels 0..K-1, logits against the LAST class (ngboost's k_categorical: class 0).

    T(y) is the one-hot vector of the first K-1 classes, eta_k = log(p_k / p_{K-1}) for k < K-1,
    A(eta) = log(1 + sum_k e^eta_k), eta* = (p_0, ..., p_{K-2}) and A*(p) = sum_k p_k log p_k
    (mirror_vs_natural_boosting.tex, Sec. 1); the Fisher metric diag(p) - p p^T has the closed-form inverse
    diag(1/p) + 1 1^T / p_{K-1} (Sherman-Morrison; see the module doc).  Targets are the integer labels 0..K-1.

    Parameters
    ----------
    K : int, default=3
        Number of classes, an integer K >= 2 (``ConfigError`` otherwise).
    margin : float or None, default=None
        Positive distance that ``project_mean`` / ``project_natural`` keep from the domain's boundary; None: the
        class's ``default_margin`` (1e-6).

    Attributes
    ----------
    K : int
        Number of classes.
    name : str
        Registry name, as :func:`distviz.families.get` accepts it.
    dim : int
        Length of T(y), of eta and of eta*.
    margin : float
        The ``margin`` in use.

    Examples
    --------
    >>> from distviz.families import Categorical
    >>> fam = Categorical(K=3)
    >>> fam.dim
    2
    >>> fam.probabilities([[0.0, 0.0]]).round(4).tolist()
    [[0.3333, 0.3333, 0.3333]]
    """

    name = "categorical"
    y_dim = 1

    def __init__(self, K: int = 3, margin: float | None = None):
        """K >= 2 classes labelled 0..K-1."""
        try:
            k = int(K)
        except (TypeError, ValueError):
            k = -1
        if k != K or k < 2:
            raise ConfigError(f"categorical family needs an integer number of classes K >= 2, got K={K!r}; pass e.g. K=3.")
        self.K = k
        self.dim = k - 1
        super().__init__(margin)

    def __repr__(self):
        return f"Categorical(K={self.K})"

    @property
    def support(self):
        return f"y in {{0, ..., {self.K - 1}}}"

    @property
    def stat_names(self):
        return tuple(f"[y={k}]" for k in range(self.K - 1))

    @property
    def natural_names(self):
        return [f"log(p{k}/p{self.K - 1})" for k in range(self.K - 1)]

    @property
    def mean_names(self):
        return [f"p{k}" for k in range(self.K - 1)]

    def _check_support(self, y):
        self._support_error(y, (y < 0) | (y > self.K - 1) | (y != np.floor(y)), f"is not a class label in 0..{self.K - 1}",
                            f"encode the classes as integers 0..K-1 or pass the right K (now K={self.K})")

    def sufficient_stats(self, y):
        y = self._y(y).astype(np.int64)
        return (y[:, None] == np.arange(self.K - 1)[None, :]).astype(float)

    def _full_logits(self, eta):
        eta = self._params(eta)
        return np.concatenate([eta, np.zeros(eta.shape[:-1] + (1,))], axis=-1)

    def probabilities(self, eta) -> np.ndarray:
        r"""All K class probabilities, the softmax of the logits :math:`(\eta_1, \dots, \eta_{K-1}, 0)` (class K the
        reference), computed stably.

        Parameters
        ----------
        eta : array-like of shape (n, K - 1)
            Natural parameters (log-odds against class K), one row per law.

        Returns
        -------
        p : ndarray of shape (n, K)
            Rows summing to 1.

        Raises
        ------
        ConfigError
            When the parameters' last axis is not K - 1.
        """
        eta = self._params(eta)
        mx = np.maximum(eta.max(axis=-1, keepdims=True), 0.0)
        e = np.empty(eta.shape[:-1] + (self.K,))
        np.exp(eta - mx, out=e[..., :-1])
        np.exp(-mx, out=e[..., -1:])
        e /= e.sum(axis=-1, keepdims=True)
        return e

    def log_partition(self, eta):
        r"""The log-partition :math:`A(\eta) = \log(1 + \sum_k e^{\eta_k})`, computed stably.

        Parameters
        ----------
        eta : array-like of shape (n, K - 1)
            Natural parameters, one row per law.

        Returns
        -------
        A : ndarray of shape (n,)

        Raises
        ------
        ConfigError
            When the parameters' last axis is not K - 1.
        """
        eta = self._params(eta)
        mx = np.maximum(eta.max(axis=-1), 0.0)
        return mx + np.log(np.exp(-mx) + np.exp(eta - mx[..., None]).sum(axis=-1))

    def to_mean(self, eta):
        return self.probabilities(eta)[..., :-1]

    def to_natural(self, mean):
        m = self._params(mean)
        pk = 1.0 - m.sum(axis=-1, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log(m) - np.log(pk)

    def conjugate(self, mean):
        r"""The Legendre conjugate :math:`A^*(p) = \sum_{k=1}^K p_k \log p_k` over all K classes (the negative Shannon
        entropy).

        Parameters
        ----------
        mean : array-like of shape (n, K - 1)
            Mean parameters :math:`\eta^* = E[T(y)]`, one row per law.

        Returns
        -------
        A_star : ndarray of shape (n,)

        Raises
        ------
        ConfigError
            When the parameters' last axis is not K - 1.
        """
        m = self._params(mean)
        pk = 1.0 - m.sum(axis=-1)
        return xlogy(m, m).sum(axis=-1) + xlogy(pk, pk)

    def fisher(self, eta):
        p = self.to_mean(eta)
        out = -p[..., :, None] * p[..., None, :]
        idx = np.arange(self.dim)
        out[..., idx, idx] += p
        return out

    def inverse_fisher(self, eta):
        r"""The inverse Fisher metric in closed form, :math:`\mathrm{diag}(1/p) + \mathbf{1}\mathbf{1}^\top / p_K`.

        Parameters
        ----------
        eta : array-like of shape (n, K - 1)
            Natural parameters, one row per law.

        Returns
        -------
        g_inv : ndarray of shape (n, K - 1, K - 1)

        Raises
        ------
        ConfigError
            When the parameters' last axis is not K - 1.
        """
        P = self.probabilities(eta)
        p, pk = P[..., :-1], P[..., -1]
        out = np.broadcast_to((1.0 / pk)[..., None, None], p.shape + (self.dim,)).copy()
        idx = np.arange(self.dim)
        out[..., idx, idx] += 1.0 / p
        return out

    def solve_fisher(self, eta, v):
        P = self.probabilities(eta)
        v = self._params(v)
        return v / P[..., :-1] + (v.sum(axis=-1) / P[..., -1])[..., None]

    def logpdf(self, y, eta):
        z = self._full_logits(eta)
        yi = self._y(y).astype(np.int64)
        return np.take_along_axis(z, yi[:, None], axis=-1)[:, 0] - self.log_partition(eta)

    def sample(self, eta, rng=None):
        P = self.probabilities(eta)
        u = as_rng(rng).random(P.shape[:-1])
        c = np.cumsum(P, axis=-1)
        return np.minimum((u[..., None] > c).sum(axis=-1), self.K - 1).astype(float)

    def in_mean_domain(self, mean):
        m = self._params(mean)
        return finite_rows(m) & (m > 0).all(axis=-1) & (m.sum(axis=-1) < 1)

    def domain(self, coord):
        r"""The compiled domains: natural parameters all of :math:`\mathbb{R}^{K-1}`; means with positive entries summing to
        less than 1.

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
            return super().domain(coord)
        return box([0.0] * self.dim, [np.inf] * self.dim, SIMPLEX)

    def project_mean(self, mean):
        r"""Probabilities at least ``margin`` each.

        Clip negative probabilities (all K, the reference class included) to 0, renormalise, and mix rows with a
        probability below ``margin`` towards uniform so every probability is at least ``margin``; NaN rows stay NaN.

        Parameters
        ----------
        mean : array-like of shape (n, K - 1)
            Mean parameters :math:`\eta^* = E[T(y)]`, one row per law.

        Returns
        -------
        mean : ndarray of shape (n, K - 1)
            A projected copy.

        Raises
        ------
        ConfigError
            When the parameters' last axis is not K - 1.
        """
        m = self._params(mean)
        P = np.concatenate([m, 1.0 - m.sum(axis=-1, keepdims=True)], axis=-1)
        P = np.maximum(P, 0.0)
        s = P.sum(axis=-1, keepdims=True)
        P = np.where(s > 0, P / np.where(s > 0, s, 1.0), 1.0 / self.K)
        eps = self.margin
        P = np.where((P < eps).any(axis=-1, keepdims=True), eps + (1.0 - self.K * eps) * P, P)
        P[np.isnan(m).any(axis=-1)] = np.nan
        return P[..., :-1]

    def mean_and_variance(self, eta):
        r"""The mean and covariance of the one-hot vector of y.

        Parameters
        ----------
        eta : array-like of shape (n, K - 1)
            Natural parameters, one row per law.

        Returns
        -------
        p : ndarray of shape (n, K)
            The class probabilities.
        cov : ndarray of shape (n, K, K)
            :math:`\mathrm{diag}(p) - p p^\top`.

        Raises
        ------
        ConfigError
            When the parameters' last axis is not K - 1.
        """
        P = self.probabilities(eta)
        cov = -P[..., :, None] * P[..., None, :]
        idx = np.arange(self.K)
        cov[..., idx, idx] += P
        return P, cov

    def _default_mean(self):
        return np.full(self.K - 1, 1.0 / self.K)
