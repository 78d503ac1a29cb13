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
    r"""Mean Gaussian kernel between two particle sets, per input.

    .. math:: \frac{1}{N M} \sum_{j,k} \exp(-\lVert a_{ij} - b_{ik} \rVert^2 / h)

    Parameters
    ----------
    a : array of shape (n, N, d) or (n, N)
        N particles per input (a 2-D array: scalar particles).
    b : array of shape (n, M, d) or (n, M)
        M particles per input, of the same dimension d.
    h : float
        Kernel scale, positive.

    Returns
    -------
    ndarray of shape (n,)
        The mean kernel value of each input.
    """
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
    """V-statistic of the squared MMD between two particle sets, per input.

    ``MMD^2 = mean k(a, a') - 2 mean k(a, b) + mean k(b, b')`` with the Gaussian kernel ``k(x, y) = exp(-|x - y|^2 / h)``.

    Parameters
    ----------
    a, b : array of shape (n, N, d) or (n, N)
        Particle sets per input (their sizes N may differ, their dimension d may not).
    h : float
        Kernel scale, positive.

    Returns
    -------
    ndarray of shape (n,)
    """
    return gaussian_kernel_mean(a, a, h) - 2.0 * gaussian_kernel_mean(a, b, h) + gaussian_kernel_mean(b, b, h)


def mmd2_gaussian(particles, mean, cov, h) -> np.ndarray:
    r"""Squared MMD between particle sets and Gaussian targets :math:`N(m_i, S_i)`, in closed form.

    With :math:`k(x, y) = \exp(-\lVert x - y \rVert^2 / h) = (\pi h)^{d/2} N(y; x, (h/2) I)` and
    :math:`Y, Y' \sim N(m, S)` independent (so :math:`Y - Y' \sim N(0, 2 S)`):

    .. math::

       E_Y\, k(x, Y) &= \det(I + 2 S / h)^{-1/2} \exp\left(-\tfrac12 (x - m)^T (S + \tfrac{h}{2} I)^{-1} (x - m)\right),

       E_{Y,Y'}\, k(Y, Y') &= \det(I + 4 S / h)^{-1/2},

    so :math:`\mathrm{MMD}^2 = \operatorname{mean}_{j,k} k(x_j, x_k) - 2 \operatorname{mean}_j E\, k(x_j, Y)
    + E\, k(Y, Y')` (WGBoost paper, App. E).

    Parameters
    ----------
    particles : array of shape (n, N) or (n, N, d)
        N particles per input, scalar or d-dimensional.
    mean : array of shape (n,) or (n, d)
        Target means.
    cov : array of shape (n,) or (n, d, d)
        Target variances (scalar particles) or covariance matrices.
    h : float
        Kernel scale, positive.

    Returns
    -------
    ndarray of shape (n,)
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
