"""Small batched linear algebra for the hot paths: Cholesky solves, inverses and log-determinants of
many small symmetric positive-definite matrices (one per row), and a fast trigamma.

numpy's batched ``np.linalg`` calls pay a LAPACK call per (d, d) block; for d <= 10 a fused Cholesky
loop compiled with numba is several times faster.  Rows whose matrix is not positive definite come
back as NaN (with ok = False) instead of raising for the whole batch.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["spd_solve", "spd_inv_logdet", "spd_ok", "trigamma"]


@njit(cache=True)
def _chol(M, L):
    """Lower Cholesky factor of the SPD matrix M into L; False when M is not positive definite."""
    d = M.shape[0]
    for j in range(d):
        s = M[j, j]
        for k in range(j):
            s -= L[j, k] * L[j, k]
        if not s > 0.0:
            return False
        ljj = np.sqrt(s)
        L[j, j] = ljj
        for r in range(j + 1, d):
            t = M[r, j]
            for k in range(j):
                t -= L[r, k] * L[j, k]
            L[r, j] = t / ljj
    return True


@njit(cache=True)
def _cho_substitute(L, v, y, x):
    """Write into x the solution of L L^T x = v, given the lower Cholesky factor L (y: scratch of length d)."""
    d = v.shape[0]
    for j in range(d):
        t = v[j]
        for k in range(j):
            t -= L[j, k] * y[k]
        y[j] = t / L[j, j]
    for j in range(d - 1, -1, -1):
        t = y[j]
        for k in range(j + 1, d):
            t -= L[k, j] * x[k]
        x[j] = t / L[j, j]


@njit(cache=True)
def _solve_batch(M, V):
    n, d = V.shape
    X = np.empty((n, d))
    L = np.zeros((d, d))
    y = np.empty(d)
    for i in range(n):
        if not _chol(M[i], L):
            X[i, :] = np.nan
            continue
        _cho_substitute(L, V[i], y, X[i])
    return X


@njit(cache=True)
def _inv_logdet_batch(M):
    n, d = M.shape[0], M.shape[1]
    inv = np.empty((n, d, d))
    logdet = np.empty(n)
    ok = np.empty(n, dtype=np.bool_)
    L = np.zeros((d, d))
    Li = np.zeros((d, d))
    for i in range(n):
        if not _chol(M[i], L):
            inv[i] = np.nan
            logdet[i] = np.nan
            ok[i] = False
            continue
        ok[i] = True
        s = 0.0
        for j in range(d):
            s += np.log(L[j, j])
        logdet[i] = 2.0 * s
        # Li = L^-1 (lower triangular)
        for c in range(d):
            for r in range(d):
                if r < c:
                    Li[r, c] = 0.0
                elif r == c:
                    Li[r, c] = 1.0 / L[r, r]
                else:
                    t = 0.0
                    for k in range(c, r):
                        t -= L[r, k] * Li[k, c]
                    Li[r, c] = t / L[r, r]
        # M^-1 = Li^T Li
        for r in range(d):
            for c in range(r, d):
                t = 0.0
                for k in range(c, d):
                    t += Li[k, r] * Li[k, c]
                inv[i, r, c] = t
                inv[i, c, r] = t
    return inv, logdet, ok


@njit(cache=True)
def _ok_batch(M):
    n, d = M.shape[0], M.shape[1]
    ok = np.empty(n, dtype=np.bool_)
    L = np.zeros((d, d))
    for i in range(n):
        ok[i] = _chol(M[i], L)
    return ok


def _flat(M):
    M = np.ascontiguousarray(M, dtype=np.float64)
    lead = M.shape[:-2]
    return M.reshape((-1,) + M.shape[-2:]), lead


def spd_solve(M, v) -> np.ndarray:
    """x with M x = v for (..., d, d) SPD M and (..., d) v; NaN rows where M is not positive definite."""
    Mf, lead = _flat(M)
    vf = np.ascontiguousarray(np.broadcast_to(v, lead + M.shape[-1:]), dtype=np.float64).reshape(-1, M.shape[-1])
    return _solve_batch(Mf, vf).reshape(lead + M.shape[-1:])


def spd_inv_logdet(M):
    """(M^-1, log det M, ok) for (..., d, d) SPD matrices; NaN where a matrix is not positive definite."""
    Mf, lead = _flat(M)
    inv, logdet, ok = _inv_logdet_batch(Mf)
    return inv.reshape(M.shape), logdet.reshape(lead), ok.reshape(lead)


def spd_ok(M) -> np.ndarray:
    """Boolean per matrix: finite and positive definite (Cholesky succeeds)."""
    Mf, lead = _flat(M)
    return _ok_batch(Mf).reshape(lead) & np.isfinite(Mf).all(axis=(1, 2)).reshape(lead)


_B = (1.0 / 6.0, -1.0 / 30.0, 1.0 / 42.0, -1.0 / 30.0, 5.0 / 66.0, -691.0 / 2730.0, 7.0 / 6.0)


def trigamma(x) -> np.ndarray:
    """psi_1(x) for x > 0, vectorised: recurrence to x + 10, then the asymptotic series (|rel err| < 1e-14)."""
    x = np.asarray(x, dtype=float)
    s = np.zeros_like(x)
    for k in range(10):
        xk = x + k
        s += 1.0 / (xk * xk)
    z = x + 10.0
    iz = 1.0 / z
    iz2 = iz * iz
    # sum_k B_2k / z^(2k+1)
    series = 0.0
    p = iz * iz2
    for b in _B:
        series = series + b * p
        p = p * iz2
    return s + iz + 0.5 * iz2 + series
