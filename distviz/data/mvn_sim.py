"""Simulation of Section 4 of the multivariate NGBoost paper (O'Malley et al., 2023, eq. 5).

X ~ Uniform(0, pi) (the printed "Uniform(0, 7)" is a scanning error; the authors' code draws from
Uniform(0, pi) and only that reproduces their Table 1), Y | X ~ N2(mu(X), Sigma(X)) with

    mu1 = sin(2.5x) sin(1.5x) + x,            mu2 = cos(3.5x) cos(0.5x) - x^2,
    s1^2 = 0.01 + 0.25 (1 - sin(2.5x))^2,      s2^2 = 0.01 + 0.25 (1 - cos(3.5x))^2,
    rho = sin(2.5x) cos(0.5x),                 Sigma = [[s1^2, rho s1 s2], [rho s1 s2, s2^2]].

``vanilla=True`` drops the ``+ x`` and ``- x^2`` terms of the means: Williams' (1996) original
simulation, the supplement's "vanilla" variant (paper Sec. 4, last paragraphs; the authors'
``simulate_data(..., vanilla=True)``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from distviz.errors import ConfigError


def true_params(x, vanilla: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """True mean (n, 2) and covariance (n, 2, 2) of Y | X = x (paper eq. 5; without x, -x^2 when vanilla)."""
    x = np.asarray(x, dtype=np.float64).reshape(-1)
    mu = np.stack([np.sin(2.5 * x) * np.sin(1.5 * x), np.cos(3.5 * x) * np.cos(0.5 * x)], axis=1)
    if not vanilla:
        mu[:, 0] += x
        mu[:, 1] -= x**2
    v1 = 0.01 + 0.25 * (1.0 - np.sin(2.5 * x)) ** 2
    v2 = 0.01 + 0.25 * (1.0 - np.cos(3.5 * x)) ** 2
    rho = np.sin(2.5 * x) * np.cos(0.5 * x)
    c = rho * np.sqrt(v1 * v2)
    cov = np.empty((x.size, 2, 2))
    cov[:, 0, 0] = v1
    cov[:, 1, 1] = v2
    cov[:, 0, 1] = cov[:, 1, 0] = c
    return mu, cov


def simulate(n: int, rng=None, x_high: float = np.pi, vanilla: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Draw n pairs (X (n, 1), Y (n, 2)) from the Section 4 simulation, X ~ Uniform(0, x_high)."""
    if int(n) != n or n < 1:
        raise ConfigError(f"n must be a positive integer, got {n!r}.")
    rng = np.random.default_rng(rng)
    x = rng.uniform(0.0, x_high, size=int(n))
    mu, cov = true_params(x, vanilla)
    L = np.linalg.cholesky(cov)
    y = mu + np.einsum("nij,nj->ni", L, rng.standard_normal((int(n), 2)))
    return x[:, None], y


@dataclass
class SimSplit:
    """Train / validation / test draws of the simulation, with the test set's true moments."""

    X_train: np.ndarray
    y_train: np.ndarray
    X_val: np.ndarray
    y_val: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    mean_test: np.ndarray
    cov_test: np.ndarray


def simulate_split(n_train: int, n_val: int = 300, n_test: int = 1000, rng=None, vanilla: bool = False) -> SimSplit:
    """The paper's protocol: N training, 300 validation and 1000 test points (Section 4)."""
    rng = np.random.default_rng(rng)
    Xtr, ytr = simulate(n_train, rng, vanilla=vanilla)
    Xva, yva = simulate(n_val, rng, vanilla=vanilla)
    Xte, yte = simulate(n_test, rng, vanilla=vanilla)
    mu, cov = true_params(Xte[:, 0], vanilla)
    return SimSplit(Xtr, ytr, Xva, yva, Xte, yte, mu, cov)
