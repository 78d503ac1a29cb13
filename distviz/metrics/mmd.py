"""Squared maximum mean discrepancy with the Gaussian kernel k(a, b) = exp(-|a - b|^2 / h).

wasserstein_gradient_boosting.md, App. E ('MMD^2' of the particles against the pointwise target;
the figure's "MMD" is MMD^2, DESIGN.md).  Inputs are batched over inputs x_i: particle sets of shape
(n, N, d), or (n, N) for scalar particles.
"""

from __future__ import annotations

import numpy as np

from distviz.errors import ConfigError

from ._util import gaussian_args

__all__ = ["gaussian_kernel_mean", "mmd2", "mmd2_gaussian"]


def _particles(a, what: str) -> np.ndarray:
    a = np.asarray(a, dtype=float)
    if a.ndim == 2:
        a = a[..., None]
    if a.ndim != 3:
        raise ConfigError(f"{what} must have shape (n, N, d) or (n, N) (one particle set per input), got {a.shape}; "
                          f"add a leading axis for a single set.")
    return a


def _check_h(h) -> float:
    h = float(h)
    if not np.isfinite(h) or h <= 0:
        raise ConfigError(f"kernel scale h must be a positive number, got {h!r}; the WGBoost paper uses h = 0.025 for MMD.")
    return h


def gaussian_kernel_mean(a, b, h) -> np.ndarray:
    """mean_{j,k} exp(-|a_ij - b_ik|^2 / h) per input i, for a (n, N, d) and b (n, M, d)."""
    a, b = _particles(a, "a"), _particles(b, "b")
    if a.shape[0] != b.shape[0] or a.shape[2] != b.shape[2]:
        raise ConfigError(f"particle sets must agree in inputs and dimension, got {a.shape} and {b.shape}.")
    h = _check_h(h)
    d2 = np.zeros((a.shape[0], a.shape[1], b.shape[1]))
    for k in range(a.shape[2]):  # exact differences, memory (n, N, M); d is small
        diff = a[:, :, None, k] - b[:, None, :, k]
        d2 += diff * diff
    return np.exp(-d2 / h).mean(axis=(1, 2))


def mmd2(a, b, h) -> np.ndarray:
    """V-statistic MMD^2 = mean k(a, a') - 2 mean k(a, b) + mean k(b, b') per input, shape (n,)."""
    return gaussian_kernel_mean(a, a, h) - 2.0 * gaussian_kernel_mean(a, b, h) + gaussian_kernel_mean(b, b, h)


def mmd2_gaussian(particles, mean, cov, h) -> np.ndarray:
    """MMD^2 between particle sets and Gaussian targets N(mean_i, cov_i) in closed form, shape (n,).

    With k(x, y) = exp(-|x - y|^2 / h) = (pi h)^{d/2} N(y; x, (h/2) I):
      E_Y k(x, Y)   = det(I + 2 S / h)^{-1/2} exp(-(x - m)^T (S + (h/2) I)^{-1} (x - m) / 2),
      E_{Y,Y'} k(Y, Y') = det(I + 4 S / h)^{-1/2}   (Y - Y' ~ N(0, 2 S)),
    so MMD^2 = mean_{j,k} k(x_j, x_k) - 2 mean_j E k(x_j, Y) + E k(Y, Y')  (WGBoost App. E).
    Univariate: particles (n, N), mean (n,), cov = variance (n,); multivariate: (n, N, d), (n, d), (n, d, d).
    """
    x = _particles(particles, "particles")
    h = _check_h(h)
    m, S = gaussian_args(mean, cov)
    if m.shape[0] != x.shape[0] and m.shape[0] == 1:
        m = np.broadcast_to(m, (x.shape[0], m.shape[1]))
        S = np.broadcast_to(S, (x.shape[0],) + S.shape[1:])
    if m.shape != (x.shape[0], x.shape[2]):
        raise ConfigError(f"target means must have shape (n, d) = {(x.shape[0], x.shape[2])}, got {m.shape}.")
    d = x.shape[2]
    eye = np.eye(d)
    B = S + 0.5 * h * eye
    r = x - m[:, None, :]
    sol = np.linalg.solve(B[:, None, :, :], r[..., None])[..., 0]
    quad = np.einsum("njd,njd->nj", r, sol)
    c1 = np.linalg.det(eye + 2.0 * S / h) ** -0.5
    c2 = np.linalg.det(eye + 4.0 * S / h) ** -0.5
    cross = c1 * np.exp(-0.5 * quad).mean(axis=1)
    return gaussian_kernel_mean(x, x, h) - 2.0 * cross + c2
