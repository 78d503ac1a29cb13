"""Kernelised Wasserstein directions of WGBoost (SKA, FKA, NKA, Langevin) for batches of particle sets.

Gaussian kernel k(a, b) = exp(-|a - b|^2 / h). Sign convention (SVGD, Liu & Wang 2016): the repulsion
term is the gradient of k with respect to the particle being averaged over,
    grad_{theta^j} k(theta^j, theta^n) = -(2/h) (theta^j - theta^n) k,
so that the term -(2/h) sum_j (theta^j - theta^n) k pushes theta^n away from its neighbours.
All functions take theta, G = grad log pi, H = Hessian (diagonal or full) of shape (n, N, d[, d]).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from distviz.validation import kernel_array

_XMAX = 300.0  # kernel exponents beyond this give k < 1e-130: set to 0 (no subnormal arithmetic)


@njit(cache=True, fastmath={"reassoc", "contract", "nsz", "arcp"})
def _pair_exponents(thT, ih):
    """|theta^a - theta^b|^2 / h for the N(N-1)/2 pairs a < b of every row, from thT (n, d, N); shape (n, P)."""
    n, d, N = thT.shape
    P = N * (N - 1) // 2
    out = np.zeros((n, P))
    for i in range(n):
        for t in range(d):
            x = thT[i, t]
            p = 0
            for a in range(N):
                xa = x[a]
                for b in range(a + 1, N):
                    diff = xa - x[b]
                    out[i, p] += diff * diff
                    p += 1
        for p in range(P):
            out[i, p] = min(out[i, p] * ih, _XMAX)
    return out


@njit(cache=True, fastmath={"reassoc", "contract", "nsz", "arcp"})
def _accumulate(thT, GT, HT, E, c, want_psi):
    """phi = -G* (eq. 7) and psi = H* (eq. 8), shape (n, N, d), from inputs in (n, d, N) layout and pair kernels E.

    k(a, a) = 1; the repulsion on particle b from a is grad_{theta^a} k(theta^a, theta^b)
    = (2/h)(theta^b - theta^a) k (SVGD sign: pushes b away from a).
    """
    n, d, N = thT.shape
    phi = np.empty((n, N, d))
    psi = np.zeros((n, N, d))
    inv = 1.0 / N
    Km = np.empty((N, N))
    for i in range(n):
        p = 0
        for a in range(N):
            Km[a, a] = 1.0
            for b in range(a + 1, N):
                Km[a, b] = E[i, p]
                Km[b, a] = E[i, p]
                p += 1
        for t in range(d):
            th = thT[i, t]
            g = GT[i, t]
            hh = HT[i, t]
            for b in range(N):
                tb = th[b]
                kr = Km[b]
                a1 = 0.0
                a2 = 0.0
                if want_psi:
                    for a in range(N):
                        k = kr[a]
                        gk = c * k * (tb - th[a])
                        a1 += k * g[a] + gk
                        a2 += gk * gk - k * k * hh[a]
                    psi[i, b, t] = a2 * inv
                else:
                    for a in range(N):
                        k = kr[a]
                        a1 += k * g[a] + c * k * (tb - th[a])
                phi[i, b, t] = a1 * inv
    return phi, psi


def _T(a):
    return kernel_array(np.swapaxes(a, 1, 2))


def _phi_psi(theta, G, Hd, h, want_psi):
    """phi = -G* (eq. 7) and psi = H* (eq. 8) for every row and particle, shape (n, N, d) each.

    Compiled pairwise exponents, the N(N-1)/2 kernel values per row by numpy's vectorised exp, and
    compiled sums over the particle axis laid out contiguously (k(a, b) = k(b, a), k(a, a) = 1).
    """
    thT = _T(theta)
    X = _pair_exponents(thT, 1.0 / h)
    np.negative(X, out=X)
    np.exp(X, out=X)
    return _accumulate(thT, _T(G), _T(Hd) if want_psi else thT, X, 2.0 / h, want_psi)


def ska_direction(theta, G, Hd, h):
    """SKA target v = -G* / H* (diagonal approximate Wasserstein Newton direction, eq. 9 / Algorithm 3)."""
    phi, psi = _phi_psi(np.asarray(theta, dtype=np.float64), np.asarray(G, dtype=np.float64),
                        np.asarray(Hd, dtype=np.float64), float(h), True)
    return phi / psi


def fka_direction(theta, G, h):
    """FKA target v = -G* (first-order smoothed Wasserstein gradient, eq. 7)."""
    return _phi_psi(np.asarray(theta, dtype=np.float64), np.asarray(G, dtype=np.float64), None, float(h), False)[0]


NKA_RIDGE = 1e-6  # Levenberg ridge of the NKA solve, relative to the mean diagonal of each row's H


def pd_blocks(A):
    """Each symmetric matrix of A (..., d, d) if it is positive definite, else its diagonal clipped at 0.

    The modification NKA applies to a particle's -Hess log pi where the target is not log-concave there:
    that block falls back to the diagonal approximation of App. C.3 (eq. 18), which SKA uses throughout.
    """
    A = 0.5 * (A + np.swapaxes(A, -1, -2))
    if A.shape[-1] == 1:
        return np.maximum(A, 0.0)
    ok = np.linalg.eigvalsh(A)[..., 0] > 0
    if ok.all():
        return A
    idx = np.arange(A.shape[-1])
    D = np.zeros_like(A)
    D[..., idx, idx] = np.maximum(A[..., idx, idx], 0.0)
    return np.where(ok[..., None, None], A, D)


#: Bytes of temporaries one block of rows of `nka_direction` may hold (the (N d) x (N d) systems, the kernel
#: products): rows are solved in blocks of at most this size, so a round's peak memory does not grow with n.
NKA_BLOCK_BYTES = 32 * 2**20


def nka_block_rows(N: int, d: int, block_bytes: int = NKA_BLOCK_BYTES) -> int:
    """Rows per block of `nka_direction` so that its per-row temporaries (about 8 (N^3 + 6 N^2 d^2) bytes) fit
    `block_bytes`."""
    per_row = 8 * (N ** 3 + 6 * N * N * d * d + 4 * N * N * d)
    return max(1, int(block_bytes // per_row))


def nka_direction(theta, G, Hf, h, ridge=NKA_RIDGE):
    """NKA target by Algorithm 4: v = K H^{-1} (-G*) (eq. 17), with batched (N d) x (N d) solves per row.

    H_{nk} = (1/N) sum_j [-Hess log pi(theta^j) k(theta^n, theta^j) k(theta^k, theta^j)
                          + grad_j k(theta^j, theta^n) (x) grad_j k(theta^j, theta^k)],
    K_{nk} = I_d k(theta^n, theta^k).
    Regularised so that every solve is well posed (eq. 17 leaves the Hessian approximation open):
    a particle's -Hess log pi that is not positive definite (the normal target's posterior in
    (m, log sigma) is not log-concave; an indefinite H sends the Newton step uphill and the particles to
    sigma -> 0) is replaced by its diagonal clipped at 0, the App. C.3 approximation SKA uses, which makes
    H positive semi-definite; a Levenberg ridge mu I, mu = ridge * tr(H) / (N d) + 1e-12, makes it
    definite when particles coincide (the kernel blocks are then rank one: Poisson with 30 particles).
    With a log-concave target the ridge alone changes the direction, by O(ridge).
    Rows are independent; they are solved in blocks of `nka_block_rows` rows (the same result as one batch).
    """
    theta = np.asarray(theta, dtype=np.float64)
    G = np.asarray(G, dtype=np.float64)
    Hf = np.asarray(Hf, dtype=np.float64)
    n, N, d = theta.shape
    out = np.empty((n, N, d))
    step = nka_block_rows(N, d)
    for lo in range(0, n, step):
        hi = min(n, lo + step)
        out[lo:hi] = _nka_block(theta[lo:hi], G[lo:hi], Hf[lo:hi], h, ridge)
    return out


def _nka_block(theta, G, Hf, h, ridge):
    """`nka_direction` for one block of rows."""
    n, N, d = theta.shape
    diff = theta[:, :, None, :] - theta[:, None, :, :]          # [i, j, n] = theta^j - theta^n
    K = np.exp(-np.sum(diff * diff, -1) / h)                     # (n, N_j, N_n)
    gk = -(2.0 / h) * diff * K[..., None]                        # grad wrt theta^j, (n, j, n, d)
    del diff
    phi = (np.einsum("ijn,ijt->int", K, G) + gk.sum(1)) / N      # (n, N, d)
    A = pd_blocks(-Hf)                                           # (n, N_j, d, d), PSD
    # sum_j k_ja k_jb A_j as one batched matmul over j (the 3-operand einsum is slower)
    KK = (K[:, :, :, None] * K[:, :, None, :]).reshape(n, N, N * N)
    Hm = np.matmul(KK.transpose(0, 2, 1), A.reshape(n, N, d * d)).reshape(n, N, N, d, d).transpose(0, 1, 3, 2, 4)
    del KK
    Hm = (Hm + np.einsum("ijal,ijbm->ialbm", gk, gk)) / N
    Hm = Hm.reshape(n, N * d, N * d)
    diag = np.einsum("ikk->ik", Hm)
    mu = ridge * np.where(np.isfinite(diag), diag, 0.0).mean(1) + 1e-12
    diag += mu[:, None]
    rhs = phi.reshape(n, N * d, 1)
    ok = np.isfinite(Hm).all((1, 2)) & np.isfinite(rhs).all((1, 2))
    alpha = np.full((n, N * d), np.nan)
    if not ok.all():   # rows with NaN / inf entries keep a NaN direction (counted and skipped by the caller)
        Hm, rhs, mu = Hm[ok], rhs[ok], mu[ok]
    if Hm.shape[0]:
        try:
            sol = np.linalg.solve(Hm, rhs)[..., 0]
        except np.linalg.LinAlgError:  # numerically singular despite the ridge: eigenvalue floor per row
            lam, Q = np.linalg.eigh(Hm)
            lam = np.maximum(lam, mu[:, None])
            sol = np.einsum("iak,ik,ibk,ib->ia", Q, 1.0 / lam, Q, rhs[:, :, 0])
        alpha[ok] = sol
    return np.einsum("inj,ijt->int", K, alpha.reshape(n, N, d))


@njit(cache=True)
def _shift_rows(ll):
    """Row maxima m (finite, else 0) and ll - m."""
    n, N = ll.shape
    m = np.empty(n)
    out = np.empty((n, N))
    for i in range(n):
        mx = ll[i, 0]
        for j in range(1, N):
            mx = max(mx, ll[i, j])
        if not np.isfinite(mx):
            mx = 0.0
        m[i] = mx
        for j in range(N):
            out[i, j] = ll[i, j] - mx
    return m, out


@njit(cache=True)
def _mean_neg_log_mean(E, m):
    n, N = E.shape
    tot = 0.0
    for i in range(n):
        s = 0.0
        for j in range(N):
            s += E[i, j]
        tot += m[i] + np.log(s / N)
    return -tot / n


def mixture_nll(ll):
    """Mean negative log of the particle-averaged likelihood (eq. 6) from log p(y_i | theta_i^n), shape (n, N)."""
    m, E = _shift_rows(np.ascontiguousarray(ll, dtype=np.float64))
    np.exp(E, out=E)  # numpy's vectorised exp
    return float(_mean_neg_log_mean(E, m))


def langevin_direction(G, learning_rate, rng):
    """LGBoost target grad log pi + sqrt(2 / nu) xi with xi ~ N(0, I) (App. B, Algorithm 2)."""
    return G + np.sqrt(2.0 / learning_rate) * rng.standard_normal(G.shape)


@njit(cache=True)
def _mmd2_gaussian_1d(theta, mu, sd, h):
    n, N, _ = theta.shape
    out = np.empty(n)
    for i in range(n):
        s2 = sd[i] * sd[i]
        a = float(N)
        for p in range(N):
            for q in range(p + 1, N):
                dd = theta[i, p, 0] - theta[i, q, 0]
                x = dd * dd / h
                if x < _XMAX:
                    a += 2.0 * np.exp(-x)
        b = 0.0
        c1 = np.sqrt(h / (h + 2.0 * s2))
        for p in range(N):
            dd = theta[i, p, 0] - mu[i]
            x = dd * dd / (h + 2.0 * s2)
            if x < _XMAX:
                b += c1 * np.exp(-x)
        out[i] = a / (N * N) - 2.0 * b / N + np.sqrt(h / (h + 4.0 * s2))
    return out


def mmd2_gaussian_rows(theta, mean, sd, h=0.025):
    """MMD^2 per row between the particles theta (n, N, d) and independent Gaussians N(mean, sd^2).

    Closed form for k = exp(-|a-b|^2 / h): E k(theta, Z) = prod_t sqrt(h/(h+2 s_t^2)) exp(-(theta_t-m_t)^2/(h+2 s_t^2)),
    E k(Z, Z') = prod_t sqrt(h/(h+4 s_t^2)) (App. E uses h = 0.025).
    """
    theta = np.ascontiguousarray(theta, dtype=np.float64)
    mean = np.asarray(mean, dtype=np.float64).reshape(theta.shape[0], -1)
    sd = np.asarray(sd, dtype=np.float64).reshape(theta.shape[0], -1)
    if theta.shape[2] == 1:
        return _mmd2_gaussian_1d(theta, np.ascontiguousarray(mean[:, 0]), np.ascontiguousarray(sd[:, 0]),
                                 float(h))
    N = theta.shape[1]
    diff = theta[:, :, None, :] - theta[:, None, :, :]
    a = np.exp(-np.sum(diff ** 2, -1) / h).sum((1, 2)) / N ** 2
    s2 = sd[:, None, :] ** 2
    b = np.prod(np.sqrt(h / (h + 2 * s2)) * np.exp(-(theta - mean[:, None, :]) ** 2 / (h + 2 * s2)), -1).mean(1)
    c = np.prod(np.sqrt(h / (h + 4 * sd ** 2)), -1)
    return a - 2 * b + c
