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

from distviz.errors import ConfigError

from .base import ExponentialFamily, as_rng

__all__ = ["MultivariateNormal"]

_LOG_2PI = float(np.log(2.0 * np.pi))


class MultivariateNormal(ExponentialFamily):
    """P-variate Normal in natural coordinates (Lambda mu, vech of -Lambda/2 with doubled off-diagonals)."""

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
        """Upper triangle of (..., P, P) row by row, shape (..., P(P+1)/2)."""
        return np.asarray(M)[..., self._iu[0], self._iu[1]]

    def unvech(self, v) -> np.ndarray:
        """Symmetric (..., P, P) matrix from its vech."""
        v = np.asarray(v, dtype=float)
        M = np.empty(v.shape[:-1] + (self.P, self.P))
        M[..., self._iu[0], self._iu[1]] = v
        M[..., self._iu[1], self._iu[0]] = v
        return M

    def precision(self, eta) -> np.ndarray:
        """Lambda = Sigma^-1 from eta, shape (n, P, P)."""
        eta = self._params(eta)
        return self.unvech(eta[..., self.P:] * self._to_prec)

    def mean_cov(self, eta):
        """(mu (n, P), Sigma (n, P, P)) from eta."""
        eta = self._params(eta)
        S = np.linalg.inv(self.precision(eta))
        mu = np.einsum("...ij,...j->...i", S, eta[..., :self.P])
        return mu, S

    def from_mean_cov(self, mu, cov) -> np.ndarray:
        """eta from mean (n, P) and covariance (n, P, P)."""
        mu = np.asarray(mu, dtype=float)
        lam = np.linalg.inv(np.asarray(cov, dtype=float))
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
        lam = self.precision(eta)
        b = eta[..., :self.P]
        sign, logdet = np.linalg.slogdet(lam)
        with np.errstate(invalid="ignore"):
            quad = np.einsum("...i,...i->...", b, _solve(lam, b))
        return np.where(sign > 0, 0.5 * quad - 0.5 * logdet, np.nan)

    def to_mean(self, eta):
        mu, S = self.mean_cov(eta)
        return np.concatenate([mu, self.vech(S + mu[..., :, None] * mu[..., None, :])], axis=-1)

    def to_natural(self, mean):
        mu, S = self._moments(mean)
        return self.from_mean_cov(mu, S)

    def conjugate(self, mean):
        _, S = self._moments(mean)
        sign, logdet = np.linalg.slogdet(S)
        # +inf on the boundary (singular covariance: a point mass has infinite negative entropy)
        return np.where(sign > 0, -0.5 * self.P - 0.5 * logdet, np.where(sign == 0, np.inf, np.nan))

    def fisher(self, eta):
        mu, S = self.mean_cov(eta)
        i, j = self._iu
        P = self.P
        out = np.empty(mu.shape[:-1] + (self.dim, self.dim))
        out[..., :P, :P] = S
        cross = S[..., :, j] * mu[..., None, i] + S[..., :, i] * mu[..., None, j]
        out[..., :P, P:] = cross
        out[..., P:, :P] = np.swapaxes(cross, -1, -2)
        I, J, K, L = i[:, None], j[:, None], i[None, :], j[None, :]
        mI, mJ, mK, mL = mu[..., I], mu[..., J], mu[..., K], mu[..., L]
        Sik, Sjl, Sil, Sjk = S[..., I, K], S[..., J, L], S[..., I, L], S[..., J, K]
        out[..., P:, P:] = (Sik * Sjl + Sil * Sjk + mI * mK * Sjl + mI * mL * Sjk + mJ * mK * Sil + mJ * mL * Sik)
        return out

    def log_base_measure(self, y):
        return np.full(self._y(y).shape[0], -0.5 * self.P * _LOG_2PI)

    def sample(self, eta, rng=None):
        mu, S = self.mean_cov(eta)
        L = np.linalg.cholesky(S)
        z = as_rng(rng).standard_normal(mu.shape)
        return mu + np.einsum("...ij,...j->...i", L, z)

    def in_natural_domain(self, eta):
        eta = self._params(eta)
        return _pd_rows(self.precision(eta)) & np.isfinite(eta).all(axis=-1)

    def in_mean_domain(self, mean):
        m = self._params(mean)
        ok = np.isfinite(m).all(axis=-1)
        _, S = self._moments(np.where(ok[..., None], m, 0.0))
        return ok & _pd_rows(S)

    def project_natural(self, eta):
        """Clip the eigenvalues of the precision to >= margin."""
        eta = self._params(eta)
        lam = _clip_eig(self.precision(eta), self.margin)
        return np.concatenate([eta[..., :self.P], self.vech(lam) * self._from_prec], axis=-1)

    def project_mean(self, mean):
        """Keep mu and clip the eigenvalues of the covariance to >= margin."""
        mu, S = self._moments(mean)
        S = _clip_eig(S, self.margin)
        return np.concatenate([mu, self.vech(S + mu[..., :, None] * mu[..., None, :])], axis=-1)

    def mean_and_variance(self, eta):
        """(mean (n, P), covariance (n, P, P))."""
        return self.mean_cov(eta)

    def _default_mean(self):
        return np.concatenate([np.zeros(self.P), self.vech(np.eye(self.P))])


def _solve(A, b):
    """Batched solve A x = b for (n, P, P) and (n, P); NaN rows where A is singular."""
    try:
        return np.linalg.solve(A, b[..., None])[..., 0]
    except np.linalg.LinAlgError:
        out = np.full(b.shape, np.nan)
        for idx in np.ndindex(b.shape[:-1]):
            try:
                out[idx] = np.linalg.solve(A[idx], b[idx])
            except np.linalg.LinAlgError:
                pass
        return out


def _pd_rows(M) -> np.ndarray:
    """True per row where the symmetric (n, P, P) matrix is finite and positive definite."""
    ok = np.isfinite(M).all(axis=(-1, -2))
    M = np.where(ok[..., None, None], M, np.eye(M.shape[-1]))
    return ok & (np.linalg.eigvalsh(M)[..., 0] > 0)


def _clip_eig(M, eps):
    """Symmetric matrices with eigenvalues clipped to >= eps."""
    w, V = np.linalg.eigh(0.5 * (M + np.swapaxes(M, -1, -2)))
    w = np.maximum(w, eps)
    return np.einsum("...ij,...j,...kj->...ik", V, w, V)
