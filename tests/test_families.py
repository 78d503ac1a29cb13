"""Exponential-family geometry: round trips, Legendre duality, Fisher metric, solve_fisher."""

import numpy as np
import pytest

from distviz import families as F

CASES = [("poisson", {}), ("bernoulli", {}), ("normal", {}), ("gamma", {}), ("exponential", {}),
         ("categorical", {"K": 4}), ("mvn", {"P": 3})]


@pytest.mark.parametrize("name,kw", CASES)
def test_smoke_geometry(name, kw):
    rng = np.random.default_rng(0)
    f = F.get(name, **kw)
    eta = f.project_natural(f.default_natural(5) + 0.1 * rng.standard_normal((5, f.dim)))
    m = f.to_mean(eta)
    np.testing.assert_allclose(f.to_natural(m), eta, atol=1e-9)
    np.testing.assert_allclose(f.log_partition(eta) + f.conjugate(m), (eta * m).sum(-1), atol=1e-9)
    G = f.fisher(eta)
    np.testing.assert_allclose(f.inverse_fisher(eta) @ G, np.broadcast_to(np.eye(f.dim), G.shape), atol=1e-8)
