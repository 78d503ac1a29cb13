"""P-variate Normal in the Cholesky-of-precision chart of multivariate NGBoost (O'Malley et al., 2023).

The chart (paper Sec. 3.2 and App. B): ``Sigma^-1 = U^T U`` with ``U`` upper triangular,
``U_ii = a_ii = exp(v_ii) + jitter`` and ``U_ij = v_ij`` for ``i < j``.  The parameter vector is
``theta = (mu_1, ..., mu_P, v...)`` with the ``v`` entries in the order the ``ngboost`` package
uses: ngboost stores ``L = U^T`` and walks ``numpy.tril_indices(P)`` of ``L``, so for ``P = 2`` the
order is ``(mu1, mu2, v11, v12, v22)`` and for ``P = 3``
``(mu1, mu2, mu3, v11, v12, v22, v13, v23, v33)`` (``U`` column by column).

``jitter`` (default 1e-6) is the "practical adjustment" of Sec. 3.3.  As in the paper's App. B and
in ngboost, derivatives are taken with respect to ``log a_ii`` (``d a_ii / d v_ii = a_ii``), which is
exact for ``jitter = 0`` and differs from the derivative in ``v_ii`` by the factor
``exp(v_ii) / a_ii = 1 - O(jitter / a_ii)`` otherwise.

All functions are batched over rows: ``theta`` is ``(n, dim)``, ``y`` is ``(n, P)``.  The scores are
negative log-likelihoods (NGBoost's LogScore), so gradients point uphill in the NLL and boosting
subtracts them.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from distviz.errors import ConfigError, DataError
from distviz.families.charts import Chart
from distviz.validation import kernel_array

__all__ = ["MVNCholesky", "get_chart"]


def _u_index(p: int) -> tuple[np.ndarray, np.ndarray]:
    """Row and column in U of each v-parameter, in ngboost's order (tril of L = U^T)."""
    r, c = np.tril_indices(p)
    return c.astype(np.int64), r.astype(np.int64)


@njit(cache=True, error_model="numpy")
def _kernel(y, theta, diag, logdet, p, want_grad, want_nat, urow, ucol, pos):
    """Fused per-row NLL, gradient (A.3-A.5) and natural gradient (Fisher A.6-A.9 inverted per row).

    `diag` holds a_ii = exp(v_ii) + jitter and `logdet` sum_i log a_ii (computed vectorised outside);
    `pos[i, j]` is the theta column of U_ij.  The v-block of the Fisher matrix is block diagonal over
    the rows of U (A.8, A.9 vanish across rows); the block of row i is D S D + e1 e1^T with
    S = Sigma[i:, i:] = (U_ii^T U_ii)^-1, U_ii = U[i:, i:], D = diag(a_ii, 1, ...), so Sherman-Morrison
    gives its inverse from U alone without forming Sigma.
    """
    n = theta.shape[0]
    m = theta.shape[1]
    nll = np.empty(n)
    grad = np.empty((n if want_grad else 0, m))
    nat = np.empty((n if want_nat else 0, m))
    half_log2pi = 0.5 * np.log(2.0 * np.pi)
    U = np.zeros((p, p))
    z = np.zeros(p)
    eta = np.zeros(p)
    h = np.zeros(p)
    u = np.zeros(p)
    for r in range(n):
        for i in range(p):
            U[i, i] = diag[r, i]
            for j in range(i + 1, p):
                U[i, j] = theta[r, pos[i, j]]
        for i in range(p):
            z[i] = theta[r, i] - y[r, i]
        q = 0.0
        for i in range(p):
            s = 0.0
            for j in range(i, p):
                s += U[i, j] * z[j]
            eta[i] = s
            q += s * s
        nll[r] = 0.5 * q - logdet[r] + p * half_log2pi
        if want_grad:
            for k in range(p):
                s = 0.0
                for i in range(k + 1):
                    s += U[i, k] * eta[i]
                grad[r, k] = s  # A.3: Sigma^-1 (mu - y)
            for i in range(p):
                grad[r, pos[i, i]] = eta[i] * z[i] * U[i, i] - 1.0  # A.4
                for j in range(i + 1, p):
                    grad[r, pos[i, j]] = eta[i] * z[j]  # A.5
        if want_nat:
            for i in range(p):
                nat[r, i] = z[i]  # Sigma Sigma^-1 z (A.6)
            for i in range(p):
                a = U[i, i]
                # h = D^-1 g_i = eta_i z[i:] - e1 / a
                for j in range(i, p):
                    h[j] = eta[i] * z[j]
                h[i] -= 1.0 / a
                # u = U[i:, i:] h, first entry halved (Sherman-Morrison); w = U[i:, i:]^T u
                for k in range(i, p):
                    s = 0.0
                    for j in range(k, p):
                        s += U[k, j] * h[j]
                    u[k] = s
                u[i] *= 0.5
                for j in range(i, p):
                    s = 0.0
                    for k in range(i, j + 1):
                        s += U[k, j] * u[k]
                    if j == i:
                        nat[r, pos[i, i]] = s / a
                    else:
                        nat[r, pos[i, j]] = s
    return nll, grad, nat


@njit(cache=True, inline="always")
def _log_a(v, e, jitter):
    """log(exp(v) + jitter) from v and e = exp(v) without a log call in the common case."""
    if jitter == 0.0:
        return v
    x = jitter / e
    if x < 1e-8:
        return v + x - 0.5 * x * x
    return v + np.log1p(x)


@njit(cache=True, error_model="numpy")
def _kernel2(y, theta, E, jitter, want_grad, want_nat):
    """`_kernel` unrolled for P = 2, theta = (mu1, mu2, v11, v12, v22); E = exp(theta[:, [2, 4]])."""
    n = theta.shape[0]
    nll = np.empty(n)
    grad = np.empty((n if want_grad else 0, 5))
    nat = np.empty((n if want_nat else 0, 5))
    c = np.log(2.0 * np.pi)
    for r in range(n):
        a1 = E[r, 0] + jitter
        a2 = E[r, 1] + jitter
        b = theta[r, 3]
        z1 = theta[r, 0] - y[r, 0]
        z2 = theta[r, 1] - y[r, 1]
        e1 = a1 * z1 + b * z2
        e2 = a2 * z2
        logdet = _log_a(theta[r, 2], E[r, 0], jitter) + _log_a(theta[r, 4], E[r, 1], jitter)
        nll[r] = 0.5 * (e1 * e1 + e2 * e2) - logdet + c
        if want_grad:
            grad[r, 0] = a1 * e1
            grad[r, 1] = b * e1 + a2 * e2
            grad[r, 2] = e1 * z1 * a1 - 1.0
            grad[r, 3] = e1 * z2
            grad[r, 4] = e2 * z2 * a2 - 1.0
        if want_nat:
            nat[r, 0] = z1
            nat[r, 1] = z2
            h1 = e1 * z1 - 1.0 / a1
            h2 = e1 * z2
            u1 = 0.5 * (a1 * h1 + b * h2)
            u2 = a2 * h2
            nat[r, 2] = u1
            nat[r, 3] = b * u1 + a2 * u2
            nat[r, 4] = 0.5 * (e2 * z2 * a2 - 1.0)
    return nll, grad, nat


@njit(cache=True, error_model="numpy")
def _nll_sum2(y, F, f, s, E, jitter, w):
    """Sum (weighted when w is non-empty) of the P = 2 NLL at theta = F + s f, E = exp(theta[:, [2, 4]])."""
    n = F.shape[0]
    c = np.log(2.0 * np.pi)
    tot = 0.0
    for r in range(n):
        a1 = E[r, 0] + jitter
        a2 = E[r, 1] + jitter
        b = F[r, 3] + s * f[r, 3]
        z1 = F[r, 0] + s * f[r, 0] - y[r, 0]
        z2 = F[r, 1] + s * f[r, 1] - y[r, 1]
        e1 = a1 * z1 + b * z2
        e2 = a2 * z2
        logdet = _log_a(F[r, 2] + s * f[r, 2], E[r, 0], jitter) + _log_a(F[r, 4] + s * f[r, 4], E[r, 1], jitter)
        v = 0.5 * (e1 * e1 + e2 * e2) - logdet + c
        tot += v * w[r] if w.shape[0] > 0 else v
    return tot


class MVNCholesky(Chart):
    """P-variate Normal chart theta = (mu, v) with Sigma^-1 = U^T U (paper Sec. 3.2, App. B)."""

    def __init__(self, P: int = 2, jitter: float = 1e-6):
        """P output dimensions; `jitter` is added to the diagonal of U (paper Sec. 3.3)."""
        try:
            ok = int(P) == P and P >= 1
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise ConfigError(f"MVNCholesky needs an integer dimension P >= 1, got {P!r}; pass e.g. P=2.")
        try:
            ok = float(jitter) >= 0 and np.isfinite(float(jitter))
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise ConfigError(f"jitter must be a finite number >= 0, got {jitter!r}; pass e.g. jitter=1e-6.")
        self.p = self.P = int(P)
        self.jitter = float(jitter)
        self.y_dim = self.p
        self.dim = self.p * (self.p + 3) // 2
        self._urow, self._ucol = _u_index(self.p)
        self._diag = np.flatnonzero(self._urow == self._ucol)
        self._pos = np.zeros((self.p, self.p), dtype=np.int64)
        self._pos[self._urow, self._ucol] = self.p + np.arange(self.dim - self.p)
        names = [f"mu{i + 1}" for i in range(self.p)]
        for i, j in zip(self._urow, self._ucol):
            names.append(f"v{i + 1}{j + 1}" if self.p < 10 else f"v{i + 1}_{j + 1}")
        self.param_names = tuple(names)  # type: ignore[assignment]  # Chart declares a list
        self.name = "mvn_cholesky"
        self._family = None

    def __repr__(self):
        return f"MVNCholesky(P={self.p}, jitter={self.jitter:g})"

    @property
    def family(self):
        """The exponential family this chart covers (``MultivariateNormal(P)``)."""
        if self._family is None:
            from distviz.families.mvn import MultivariateNormal
            self._family = MultivariateNormal(self.p)
        return self._family

    def check_y(self, y) -> np.ndarray:
        """Validate y as finite (n, P) floats."""
        return self._y(y)

    def to_natural(self, theta) -> np.ndarray:
        """The family's natural parameter eta (``MultivariateNormal`` convention) for theta."""
        return self.family.from_mean_cov(self.mean(theta), self.cov(theta))

    def from_natural(self, eta) -> np.ndarray:
        """theta for the family's natural parameter eta."""
        mu, S = self.family.mean_cov(eta)
        return self.from_moments(mu, S)

    # ------------------------------------------------------------------ validation
    def _theta(self, theta) -> np.ndarray:
        th = np.asarray(theta, dtype=np.float64)
        if th.ndim == 1:
            th = th[None, :]
        if th.ndim != 2 or th.shape[1] != self.dim:
            raise DataError(
                f"theta must have shape (n, {self.dim}) for a {self.p}-variate Normal, got {np.shape(theta)}."
            )
        if not np.all(np.isfinite(th)):
            raise DataError("theta contains NaN or infinite values; check the fitted model or the inputs.")
        return np.ascontiguousarray(th)

    def _y(self, y, n=None) -> np.ndarray:
        yy = np.asarray(y, dtype=np.float64)
        if yy.ndim == 1 and self.p == 1:
            yy = yy[:, None]
        if yy.ndim != 2 or yy.shape[1] != self.p:
            raise DataError(f"y must have shape (n, {self.p}), got {np.shape(y)}; pass one column per output.")
        if n is not None and yy.shape[0] != n:
            raise DataError(f"y has {yy.shape[0]} rows but theta has {n}; pass one parameter row per observation.")
        if not np.all(np.isfinite(yy)):
            raise DataError("y contains NaN or infinite values; drop or impute those rows first.")
        return np.ascontiguousarray(yy)

    def _run(self, y, theta, want_grad, want_nat):
        yy, th = self._pair(y, theta)
        return self._run_unchecked(yy, th, want_grad, want_nat)

    def _run_unchecked(self, yy, th, want_grad, want_nat):
        """(nll, grad, natural gradient) for validated C-contiguous float arrays (boosting hot path)."""
        yy, th = kernel_array(yy), kernel_array(th)
        if th.shape[0] == 1 and yy.shape[0] > 1:
            th = np.ascontiguousarray(np.broadcast_to(th, (yy.shape[0], self.dim)))
        if self.p == 2:
            return _kernel2(yy, th, np.exp(th[:, 2::2]), self.jitter, want_grad, want_nat)
        diag = np.exp(th[:, self.p + self._diag]) + self.jitter
        logdet = np.log(diag).sum(axis=1)
        return _kernel(yy, th, np.ascontiguousarray(diag), logdet, self.p, want_grad, want_nat, self._urow,
                       self._ucol, self._pos)

    def _mean_nll_along(self, yy, F, f, s, w=None) -> float:
        """(Weighted) mean NLL at theta = F + s f without forming theta (line-search hot path)."""
        if self.p == 2:
            E = np.exp(F[:, 2::2] + s * f[:, 2::2])
            ww = np.empty(0) if w is None else w
            tot = _nll_sum2(yy, F, f, float(s), E, self.jitter, ww)
            return tot / (F.shape[0] if w is None else float(w.sum()))
        nll = self._run_unchecked(yy, F + s * f, False, False)[0]
        return float(np.mean(nll) if w is None else np.dot(w, nll) / w.sum())

    def _pair(self, y, theta):
        th = self._theta(theta)
        yy = self._y(y)
        if th.shape[0] == 1 and yy.shape[0] > 1:
            th = np.ascontiguousarray(np.broadcast_to(th, (yy.shape[0], self.dim)))
        if th.shape[0] != yy.shape[0]:
            raise DataError(f"y has {yy.shape[0]} rows but theta has {th.shape[0]}; pass one parameter row per observation.")
        return yy, th

    # ------------------------------------------------------------------ maps
    def U(self, theta) -> np.ndarray:
        """Upper-triangular factor U with Sigma^-1 = U^T U, shape (n, P, P) (paper eq. 3)."""
        th = self._theta(theta)
        n = th.shape[0]
        U = np.zeros((n, self.p, self.p))
        v = th[:, self.p:].copy()
        v[:, self._diag] = np.exp(v[:, self._diag]) + self.jitter
        U[:, self._urow, self._ucol] = v
        return U

    def precision(self, theta) -> np.ndarray:
        """Precision matrix Sigma^-1 = U^T U, shape (n, P, P)."""
        U = self.U(theta)
        return np.einsum("nki,nkj->nij", U, U)

    def cov(self, theta) -> np.ndarray:
        """Covariance Sigma = U^-1 U^-T, shape (n, P, P)."""
        U = self.U(theta)
        Ui = np.linalg.inv(U)
        return np.einsum("nik,njk->nij", Ui, Ui)

    def mean(self, theta) -> np.ndarray:
        """Mean vector mu, shape (n, P)."""
        return self._theta(theta)[:, : self.p].copy()

    def corr(self, theta) -> np.ndarray:
        """Correlation matrices Sigma_ij / sqrt(Sigma_ii Sigma_jj), shape (n, P, P)."""
        S = self.cov(theta)
        sd = np.sqrt(np.einsum("nii->ni", S))
        return S / (sd[:, :, None] * sd[:, None, :])

    def from_moments(self, mean, cov) -> np.ndarray:
        """Chart coordinates theta of N(mean, cov) (inverse of mean/cov; jitter is subtracted)."""
        mean = np.asarray(mean, dtype=np.float64)
        cov = np.asarray(cov, dtype=np.float64)
        if mean.ndim == 1:
            mean = mean[None]
        if cov.ndim == 2:
            cov = cov[None]
        if mean.shape[1:] != (self.p,) or cov.shape[1:] != (self.p, self.p):
            raise DataError(f"mean must be (n, {self.p}) and cov (n, {self.p}, {self.p}); got {mean.shape} and {cov.shape}.")
        try:
            L = np.linalg.cholesky(np.linalg.inv(cov))  # L L^T = Sigma^-1, U = L^T
        except np.linalg.LinAlgError as exc:
            raise DataError("cov must be symmetric positive definite; check the covariance matrices.") from exc
        Lv = L[:, np.tril_indices(self.p)[0], np.tril_indices(self.p)[1]].copy()
        d = L[:, self._diag_pos(), self._diag_pos()] - self.jitter
        if np.any(d <= 0):
            raise DataError("cov has a precision factor below the jitter; rescale y or lower jitter.")
        Lv[:, self._diag] = np.log(d)
        mean = np.broadcast_to(mean, (max(mean.shape[0], Lv.shape[0]), self.p))
        Lv = np.broadcast_to(Lv, (mean.shape[0], Lv.shape[1]))
        return np.concatenate([mean, Lv], axis=1)

    def _diag_pos(self):
        """Row (= column) indices of U's diagonal."""
        return np.arange(self.p)

    # ------------------------------------------------------------------ scores
    def nll(self, y, theta) -> np.ndarray:
        """Negative log-density -log N(y | mu, Sigma) per row, shape (n,) (App. B, eq. A.2)."""
        return self._run(y, theta, False, False)[0]

    def nll_grad(self, y, theta) -> np.ndarray:
        """Gradient of the NLL in theta, shape (n, dim) (App. B, eqs. A.3-A.5)."""
        return self._run(y, theta, True, False)[1]

    def natural_gradient(self, y, theta) -> np.ndarray:
        """Natural gradient Fisher(theta)^-1 grad NLL, shape (n, dim) (paper eq. 1 with A.6-A.9)."""
        return self._run(y, theta, False, True)[2]

    def nll_and_grads(self, y, theta, natural: bool = True):
        """NLL (n,), gradient (n, dim) and, if `natural`, natural gradient (n, dim) in one pass."""
        nll, g, ng = self._run(y, theta, True, natural)
        return nll, g, (ng if natural else None)

    def fisher(self, theta) -> np.ndarray:
        """Fisher information in theta, shape (n, dim, dim), closed form of App. B (A.6-A.9)."""
        th = self._theta(theta)
        n, p = th.shape[0], self.p
        U = self.U(th)
        S = self.cov(th)
        F = np.zeros((n, self.dim, self.dim))
        F[:, :p, :p] = np.einsum("nki,nkj->nij", U, U)  # A.6; A.7 (mean x v) is zero
        cvec = np.ones((n, self.dim - p))
        cvec[:, self._diag] = np.einsum("nii->ni", U)
        same_row = (self._urow[:, None] == self._urow[None, :]).astype(np.float64)
        Ssub = S[:, self._ucol[:, None], self._ucol[None, :]]
        Fv = same_row[None] * cvec[:, :, None] * cvec[:, None, :] * Ssub  # A.8, A.9
        Fv[:, self._diag, self._diag] += 1.0  # A.8 with E[eta_i z_i] = (U Sigma)_ii a_ii = 1
        F[:, p:, p:] = Fv
        return F

    # ------------------------------------------------------------------ fitting helpers
    def init_theta(self, y, sample_weight=None) -> np.ndarray:
        """Marginal maximum-likelihood theta (weighted mean and 1/N covariance), shape (dim,)."""
        yy = self._y(y)
        n = yy.shape[0]
        if n < self.p + 1:
            raise DataError(f"Need at least {self.p + 1} rows to fit a {self.p}-variate Normal, got {n} "
                            f"sample{'s' if n != 1 else ''}.")
        w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
        if w.shape != (n,) or np.any(w < 0) or not np.all(np.isfinite(w)) or w.sum() <= 0:
            raise DataError("sample_weight must be n finite non-negative numbers with a positive sum.")
        w = w / w.sum()
        m = w @ yy
        d = yy - m
        S = (d * w[:, None]).T @ d
        S = S + 1e-12 * np.trace(S) / self.p * np.eye(self.p)
        return self.from_moments(m, S)[0]

    def sample(self, theta, rng=None, size: int | None = None) -> np.ndarray:
        """Draws from N(mu, Sigma) per row: shape (n, P), or (size, n, P) when `size` is given."""
        rng = np.random.default_rng(rng)
        th = self._theta(theta)
        U = self.U(th)
        n = th.shape[0]
        k = 1 if size is None else int(size)
        eps = rng.standard_normal((k, n, self.p))
        # x = mu + U^-1 eps has covariance U^-1 U^-T = Sigma
        Ui = np.linalg.inv(U)
        x = th[None, :, : self.p] + np.einsum("nij,knj->kni", Ui, eps)
        return x[0] if size is None else x


def get_chart(P: int = 2, jitter: float = 1e-6, **kwargs) -> MVNCholesky:
    """Factory used by ``distviz.families.charts.get('mvn_cholesky', P=...)`` (``p`` accepted too)."""
    if "p" in kwargs:
        P = kwargs.pop("p")
    if kwargs:
        raise ConfigError(f"mvn_cholesky chart takes P and jitter, got {sorted(kwargs)}; remove them.")
    return MVNCholesky(P, jitter)
