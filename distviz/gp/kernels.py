"""Squared-exponential (RBF) kernel, isotropic or ARD, written in autograd-traceable numpy."""

from __future__ import annotations

import autograd.numpy as anp


def rbf(X1, X2, lengthscale, variance):
    """RBF kernel matrix k(x, x') = variance * exp(-|x - x'|^2_ell / 2) (Rasmussen & Williams eq. 2.31).

    `lengthscale` is a scalar-like array of shape (1,) (isotropic) or (d,) (ARD).
    """
    A = X1 / lengthscale
    B = X2 / lengthscale
    d2 = anp.sum(A * A, axis=1)[:, None] + anp.sum(B * B, axis=1)[None, :] - 2.0 * anp.dot(A, B.T)
    return variance * anp.exp(-0.5 * anp.maximum(d2, 0.0))
