"""Multivariate Normal(P) as an exponential family with T(y) = (y, vech(y y^T)).

Convention (documented because several are in use):

* vech(M) lists the upper triangle row by row, M[i, j] for i <= j (``np.triu_indices(P)`` order):
  (y1 y1, y1 y2, ..., y1 yP, y2 y2, ..., yP yP).  T(y) uses plain products, no sqrt(2) factors,
  so the mean coordinate is eta* = (mu, vech(Sigma + mu mu^T)): the first and second moments.
* eta = (b, e) with b = Lambda mu (Lambda = Sigma^-1) and e_ii = -Lambda_ii / 2 on the diagonal,
  e_ij = -Lambda_ij for i < j (the off-diagonal entries are doubled), so that
  <eta, T(y)> = b^T y - y^T Lambda y / 2 exactly.
* A(eta) = b^T Sigma b / 2 - log det(Lambda) / 2,  log h(y) = -P log(2 pi) / 2,
  A*(eta*) = -P/2 - log det(Sigma) / 2  (mirror_vs_natural_boosting.tex, Sec. 1 geometry).
* The Fisher metric is Cov[T(y)] with the Gaussian moment identities
  Cov(y_k, y_i y_j) = mu_i S_kj + mu_j S_ki and
  Cov(y_i y_j, y_k y_l) = S_ik S_jl + S_il S_jk + mu_i mu_k S_jl + mu_i mu_l S_jk + mu_j mu_k S_il + mu_j mu_l S_ik.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from distviz.errors import ConfigError

from ._linalg import _cho_substitute, _chol, spd_inv_logdet, spd_ok
from .base import SPD_CENTRED, SPD_SCALED, ExponentialFamily, as_rng, box, finite_rows

__all__ = ["MultivariateNormal"]

_LOG_2PI = float(np.log(2.0 * np.pi))


class MultivariateNormal(ExponentialFamily):
    """P-variate Normal in natural coordinates (Lambda mu, vech of -Lambda/2 with doubled off-diagonals).

    T(y) = (y, vech(y y^T)) with vech the upper triangle row by row, eta = (Lambda mu, e) with e_ii = -Lambda_ii / 2
    and e_ij = -Lambda_ij (i < j), eta* = (mu, vech(Sigma + mu mu^T)), A(eta) = b^T Sigma b / 2 - log det(Lambda) / 2
    and A*(eta*) = -P/2 - log det(Sigma) / 2 (mirror_vs_natural_boosting.tex, Sec. 1; the conventions are in the
    module doc).  ``from_mean_cov`` and ``mean_cov`` convert between eta and (mu, Sigma).  y has shape (n, P).

    Parameters
    ----------
    P : int, default=2
        Output dimension, an integer P >= 1 (``ConfigError`` otherwise).
    margin : float or None, default=None
        Positive distance that ``project_mean`` / ``project_natural`` keep from the domain's boundary; None: the
        class's ``default_margin`` (1e-6).

    Attributes
    ----------
    P : int
        Output dimension.
    q : int
        P (P + 1) / 2, the length of vech of a P x P matrix.
    name : str
        Registry name, as :func:`distviz.families.get` accepts it.
    dim : int
        Length of T(y), of eta and of eta*.
    margin : float
        The ``margin`` in use.

    Examples
    --------
    >>> import numpy as np
    >>> from distviz.families import MultivariateNormal
    >>> fam = MultivariateNormal(P=2)
    >>> fam.dim
    5
    >>> eta = fam.from_mean_cov(np.zeros((1, 2)), np.eye(2)[None])
    >>> (eta + 0.0).tolist()
    [[0.0, 0.0, -0.5, 0.0, -0.5]]
    """

    name = "mvn"
    vector_y = True

    def __init__(self, P: int = 2, margin: float | None = None):
        """P >= 1 output dimensions."""
        try:
            p = int(P)
        except (TypeError, ValueError):
            p = -1
        if p != P or p < 1:
            raise ConfigError(f"mvn family needs an integer output dimension P >= 1, got P={P!r}; pass e.g. P=2.")
        self.P = p
        self.y_dim = p
        self.q = p * (p + 1) // 2
        self.dim = p + self.q
        self._iu = np.triu_indices(p)
        off = self._iu[0] != self._iu[1]
        self._to_prec = np.where(off, -1.0, -2.0)     # Lambda_vech = e * _to_prec
        self._from_prec = np.where(off, -1.0, -0.5)   # e = Lambda_vech * _from_prec
        super().__init__(margin)

    def __repr__(self):
        return f"MultivariateNormal(P={self.P})"

    @property
    def support(self):
        return f"y in R^{self.P}"

    @property
    def stat_names(self):
        i, j = self._iu
        return tuple(f"y{k + 1}" for k in range(self.P)) + tuple(f"y{a + 1}*y{b + 1}" for a, b in zip(i, j))

    # ------------------------------------------------------------------ helpers
    def vech(self, M) -> np.ndarray:
        """The upper triangle of symmetric matrices, row by row (``np.triu_indices(P)`` order).

        Parameters
        ----------
        M : array-like of shape (..., P, P)
            Matrices.

        Returns
        -------
        v : ndarray of shape (..., P (P + 1) / 2)
        """
        return np.asarray(M)[..., self._iu[0], self._iu[1]]

    def unvech(self, v) -> np.ndarray:
        """The symmetric matrices of given upper triangles (the inverse of :meth:`vech`).

        Parameters
        ----------
        v : array-like of shape (..., P (P + 1) / 2)
            Upper triangles, row by row.

        Returns
        -------
        M : ndarray of shape (..., P, P)
        """
        v = np.asarray(v, dtype=float)
        M = np.empty(v.shape[:-1] + (self.P, self.P))
        M[..., self._iu[0], self._iu[1]] = v
        M[..., self._iu[1], self._iu[0]] = v
        return M

    def precision(self, eta) -> np.ndarray:
        r"""The precision :math:`\Lambda = \Sigma^{-1}` of each row's natural parameter (the e part undone: diagonal
        :math:`-2 e_{ii}`, off-diagonal :math:`-e_{ij}`).

        Parameters
        ----------
        eta : array-like of shape (n, dim)
            Natural parameters, dim = P + P (P + 1) / 2.

        Returns
        -------
        precision : ndarray of shape (n, P, P)

        Raises
        ------
        ConfigError
            When the parameters' last axis is not dim = P + P (P + 1) / 2.
        """
        eta = self._params(eta)
        return self.unvech(eta[..., self.P:] * self._to_prec)

    def mean_cov(self, eta):
        r"""The mean and covariance :math:`(\mu, \Sigma)` of each row's natural parameter, :math:`\Sigma = \Lambda^{-1}`,
        :math:`\mu = \Sigma b`.

        Parameters
        ----------
        eta : array-like of shape (n, dim)
            Natural parameters, dim = P + P (P + 1) / 2.

        Returns
        -------
        mu : ndarray of shape (n, P)
        cov : ndarray of shape (n, P, P)
            NaN rows where the precision is not positive definite.

        Raises
        ------
        ConfigError
            When the parameters' last axis is not dim = P + P (P + 1) / 2.
        """
        eta = self._params(eta)
        S = spd_inv_logdet(self.precision(eta))[0]
        mu = np.einsum("...ij,...j->...i", S, eta[..., :self.P])
        return mu, S

    def from_mean_cov(self, mu, cov) -> np.ndarray:
        r"""The natural parameter :math:`\eta = (\Lambda \mu, e)` of given means and covariances (module doc conventions).

        Parameters
        ----------
        mu : array-like of shape (n, P)
            Means.
        cov : array-like of shape (n, P, P)
            Covariances.

        Returns
        -------
        eta : ndarray of shape (n, P + P (P + 1) / 2)
            NaN rows where ``cov`` is not positive definite.

        Examples
        --------
        >>> import numpy as np
        >>> from distviz.families import MultivariateNormal
        >>> fam = MultivariateNormal(P=2)
        >>> mu, cov = fam.mean_cov(fam.from_mean_cov(np.zeros((1, 2)), np.eye(2)[None]))
        >>> cov.round(12).tolist()
        [[[1.0, 0.0], [0.0, 1.0]]]
        """
        mu = np.asarray(mu, dtype=float)
        lam = spd_inv_logdet(np.asarray(cov, dtype=float))[0]
        b = np.einsum("...ij,...j->...i", lam, mu)
        return np.concatenate([b, self.vech(lam) * self._from_prec], axis=-1)

    def _moments(self, mean):
        m = self._params(mean)
        mu = m[..., :self.P]
        S = self.unvech(m[..., self.P:]) - mu[..., :, None] * mu[..., None, :]
        return mu, S

    # ------------------------------------------------------------------ geometry
    def _check_support(self, y):
        pass

    def sufficient_stats(self, y):
        y = self._y(y)
        i, j = self._iu
        return np.concatenate([y, y[:, i] * y[:, j]], axis=-1)

    def log_partition(self, eta):
        eta = self._params(eta)
        S, logdet_lam, _ = spd_inv_logdet(self.precision(eta))
        b = eta[..., :self.P]
        quad = np.einsum("...i,...ij,...j->...", b, S, b)
        return 0.5 * quad - 0.5 * logdet_lam

    def to_mean(self, eta):
        mu, S = self.mean_cov(eta)
        return np.concatenate([mu, self.vech(S + mu[..., :, None] * mu[..., None, :])], axis=-1)

    def to_natural(self, mean):
        mu, S = self._moments(mean)
        return self.from_mean_cov(mu, S)

    def conjugate(self, mean):
        _, S = self._moments(mean)
        _, logdet, ok = spd_inv_logdet(S)
        out = -0.5 * self.P - 0.5 * logdet
        if not ok.all():
            # +inf on the boundary (singular PSD covariance: infinite negative entropy), NaN outside
            bad = ~ok
            Sb = S[bad]
            fin = np.isfinite(Sb).all(axis=(-1, -2))
            w = np.linalg.eigvalsh(np.where(fin[:, None, None], Sb, 0.0))
            psd = fin & (w[:, 0] >= -1e-12 * np.maximum(np.abs(w[:, -1]), 1e-300))
            out[bad] = np.where(psd, np.inf, np.nan)
        return out

    def fisher(self, eta):
        r"""The Fisher metric :math:`\mathrm{Cov}[T(y)]` from the Gaussian moment identities (module doc), fused in numba.

        Parameters
        ----------
        eta : array-like of shape (n, dim)
            Natural parameters, dim = P + P (P + 1) / 2.

        Returns
        -------
        g : ndarray of shape (n, dim, dim)

        Raises
        ------
        ConfigError
            When the parameters' last axis is not dim.
        """
        mu, S = self.mean_cov(eta)
        lead = mu.shape[:-1]
        G = _fisher_batch(np.ascontiguousarray(mu.reshape(-1, self.P)),
                          np.ascontiguousarray(S.reshape(-1, self.P, self.P)), self._iu[0], self._iu[1])
        return G.reshape(lead + (self.dim, self.dim))

    def inverse_fisher(self, eta):
        return spd_inv_logdet(self.fisher(eta))[0]

    def solve_fisher(self, eta, v):
        r""":math:`g(\eta)^{-1} v` per row: the metric is built and Cholesky-solved row by row in numba (no (n, dim, dim)
        array).

        Parameters
        ----------
        eta : array-like of shape (n, dim)
            Natural parameters, dim = P + P (P + 1) / 2.
        v : array-like of shape (n, dim)
            One vector per row.

        Returns
        -------
        x : ndarray of shape (n, dim)
            The solution of :math:`g(\eta) x = v`.

        Raises
        ------
        ConfigError
            When the parameters' last axis is not dim = P + P (P + 1) / 2.
        """
        mu, S = self.mean_cov(eta)
        v = self._params(v)
        lead = mu.shape[:-1]
        x = _solve_fisher_batch(np.ascontiguousarray(mu.reshape(-1, self.P)),
                                np.ascontiguousarray(S.reshape(-1, self.P, self.P)), self._iu[0], self._iu[1],
                                np.ascontiguousarray(np.broadcast_to(v, lead + (self.dim,)).reshape(-1, self.dim)))
        return x.reshape(lead + (self.dim,))

    def log_base_measure(self, y):
        return np.full(self._y(y).shape[0], -0.5 * self.P * _LOG_2PI)

    def sample(self, eta, rng=None):
        mu, S = self.mean_cov(eta)
        L = np.linalg.cholesky(S)
        z = as_rng(rng).standard_normal(mu.shape)
        return mu + np.einsum("...ij,...j->...i", L, z)

    def in_natural_domain(self, eta):
        eta = self._params(eta)
        return spd_ok(self.precision(eta)) & finite_rows(eta)

    def in_mean_domain(self, mean):
        m = self._params(mean)
        ok = finite_rows(m)
        _, S = self._moments(np.where(ok[..., None], m, 0.0))
        return ok & spd_ok(S)

    def domain(self, coord):
        """The compiled domains: natural parameters whose precision is positive definite; means whose covariance is.

        Parameters
        ----------
        coord : {"natural", "mean"}
            The coordinate system.

        Returns
        -------
        Domain
            Bounds ``lo < x < hi`` and the extra condition of its ``kind``.
        """
        inf = [np.inf] * self.dim
        if coord == "natural":
            return box([-np.inf] * self.dim, inf, SPD_SCALED, self._to_prec)
        return box([-np.inf] * self.dim, inf, SPD_CENTRED)

    def project_natural(self, eta):
        """Clip the eigenvalues of the precision to at least ``margin``.

        Parameters
        ----------
        eta : array-like of shape (n, dim)
            Natural parameters, one row per law.

        Returns
        -------
        eta : ndarray of shape (n, dim)
            A projected copy.

        Raises
        ------
        ConfigError
            When the parameters' last axis is not dim.
        """
        eta = self._params(eta)
        lam = _clip_eig(self.precision(eta), self.margin)
        return np.concatenate([eta[..., :self.P], self.vech(lam) * self._from_prec], axis=-1)

    def project_mean(self, mean):
        r"""Keep :math:`\mu` and clip the eigenvalues of the covariance to at least ``margin``.

        Parameters
        ----------
        mean : array-like of shape (n, dim)
            Mean parameters :math:`\eta^* = E[T(y)]`, one row per law.

        Returns
        -------
        mean : ndarray of shape (n, dim)
            A projected copy.

        Raises
        ------
        ConfigError
            When the parameters' last axis is not dim.
        """
        mu, S = self._moments(mean)
        S = _clip_eig(S, self.margin)
        return np.concatenate([mu, self.vech(S + mu[..., :, None] * mu[..., None, :])], axis=-1)

    def mean_and_variance(self, eta):
        """The mean and covariance of y, as :meth:`mean_cov`.

        Parameters
        ----------
        eta : array-like of shape (n, dim)
            Natural parameters, dim = P + P (P + 1) / 2.

        Returns
        -------
        mean : ndarray of shape (n, P)
        cov : ndarray of shape (n, P, P)

        Raises
        ------
        ConfigError
            When the parameters' last axis is not dim = P + P (P + 1) / 2.
        """
        return self.mean_cov(eta)

    def _default_mean(self):
        return np.concatenate([np.zeros(self.P), self.vech(np.eye(self.P))])


def _clip_eig(M, eps):
    """Symmetric matrices with eigenvalues clipped to >= eps."""
    w, V = np.linalg.eigh(0.5 * (M + np.swapaxes(M, -1, -2)))
    w = np.maximum(w, eps)
    return np.einsum("...ij,...j,...kj->...ik", V, w, V)


@njit(cache=True)
def _fisher_row(mu, S, iu0, iu1, G):
    """Cov[(y, vech(y y^T))] of N(mu, S) into G (module docstring identities)."""
    P = mu.shape[0]
    q = iu0.shape[0]
    for a in range(P):
        for b in range(P):
            G[a, b] = S[a, b]
        for c in range(q):
            i, j = iu0[c], iu1[c]
            v = mu[i] * S[a, j] + mu[j] * S[a, i]
            G[a, P + c] = v
            G[P + c, a] = v
    for r in range(q):
        i, j = iu0[r], iu1[r]
        for c in range(r, q):
            k, l = iu0[c], iu1[c]  # noqa: E741  (the indices i, j, k, l of the formula)
            v = (S[i, k] * S[j, l] + S[i, l] * S[j, k] + mu[i] * mu[k] * S[j, l] + mu[i] * mu[l] * S[j, k]
                 + mu[j] * mu[k] * S[i, l] + mu[j] * mu[l] * S[i, k])
            G[P + r, P + c] = v
            G[P + c, P + r] = v


@njit(cache=True)
def _fisher_batch(mu, S, iu0, iu1):
    n, P = mu.shape
    d = P + iu0.shape[0]
    out = np.empty((n, d, d))
    for t in range(n):
        _fisher_row(mu[t], S[t], iu0, iu1, out[t])
    return out


@njit(cache=True)
def _solve_fisher_batch(mu, S, iu0, iu1, V):
    n, P = mu.shape
    d = P + iu0.shape[0]
    G = np.empty((d, d))
    L = np.zeros((d, d))
    y = np.empty(d)
    X = np.empty((n, d))
    for t in range(n):
        _fisher_row(mu[t], S[t], iu0, iu1, G)
        if not _chol(G, L):
            X[t, :] = np.nan
            continue
        _cho_substitute(L, V[t], y, X[t])
    return X
