"""Shared input handling of the metrics."""

from __future__ import annotations

import numpy as np

from distviz.errors import ConfigError, DataError


def weights(n: int, sample_weight) -> np.ndarray | None:
    """Validated sample weights of length n (None stays None)."""
    if sample_weight is None:
        return None
    w = np.asarray(sample_weight, dtype=float)
    if w.ndim != 1 or w.shape[0] != n:
        raise DataError(f"sample_weight must have one entry per row ({n}), got shape {w.shape}; pass a 1-D array of length {n}.")
    if not np.isfinite(w).all() or (w < 0).any():
        i = int(np.argmax(~np.isfinite(w) | (w < 0)))
        raise DataError(f"sample_weight[{i}] = {w[i]!r} is not a finite non-negative number; fix or drop that weight.")
    if w.sum() <= 0:
        raise DataError("sample_weight sums to zero; give at least one row a positive weight.")
    return w


def wmean(x: np.ndarray, w: np.ndarray | None) -> float:
    """Weighted mean over the first axis."""
    x = np.asarray(x, dtype=float)
    if w is None:
        return float(np.mean(x))
    return float(np.sum(w * x) / np.sum(w))


def gaussian_args(mu, cov):
    """Return (mu (n, P), cov (n, P, P)) from univariate (n,), (n,) or multivariate (n, P), (n, P, P) inputs."""
    mu = np.asarray(mu, dtype=float)
    cov = np.asarray(cov, dtype=float)
    if mu.ndim <= 1:
        mu = np.atleast_1d(mu)
        cov = np.broadcast_to(np.atleast_1d(cov), mu.shape)
        return mu[:, None], cov[:, None, None]
    if mu.ndim != 2:
        raise ConfigError(f"Gaussian means must have shape (n,) or (n, P), got {mu.shape}.")
    P = mu.shape[1]
    if cov.shape[-2:] != (P, P):
        raise ConfigError(f"covariances must have shape (n, {P}, {P}) for means of shape {mu.shape}, got {cov.shape}.")
    cov = np.broadcast_to(cov, mu.shape[:1] + (P, P))
    return mu, cov
