"""distviz.metrics.pit / coverage / crps on the predict_dist objects: closed forms against quadrature and Monte Carlo."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, stats

from distviz.errors import ConfigError, DataError
from distviz.families.dist import (
    BernoulliDist,
    CategoricalDist,
    EmpiricalDist,
    ExponentialDist,
    GammaDist,
    MixtureDist,
    MultivariateNormalDist,
    NormalDist,
    PoissonDist,
)
from distviz.metrics import coverage, crps, pit


def crps_quad(cdf, y, lo, hi):
    """int (F(x) - 1{x >= y})^2 dx by adaptive quadrature on [lo, hi], split at y."""
    f = lambda x: (cdf(x) - (x >= y)) ** 2   # noqa: E731
    return integrate.quad(f, lo, y, limit=200)[0] + integrate.quad(f, y, hi, limit=200)[0]


def test_crps_closed_forms_match_the_integral():
    y = np.array([-0.5, 0.3, 2.5])
    d = NormalDist([0.0, 1.0, -1.0], [1.0, 0.3, 2.0])
    ref = [crps_quad(lambda x, i=i: stats.norm.cdf(x, d.loc[i], d.scale[i]), y[i], -30, 30) for i in range(3)]
    np.testing.assert_allclose(crps(d, y), ref, rtol=1e-7)
    yg = np.array([0.2, 1.5, 7.0, -1.0])
    g = GammaDist([0.6, 2.0, 5.0, 3.0], [1.0, 2.0, 0.5, 1.0])
    ref = [crps_quad(lambda x, i=i: stats.gamma.cdf(x, g.shape[i], scale=1 / g.rate[i]), yg[i], -2, 80) for i in range(4)]
    np.testing.assert_allclose(crps(g, yg), ref, rtol=1e-6)
    e = ExponentialDist([0.5, 2.0])
    ref = [crps_quad(lambda x, i=i: stats.expon.cdf(x, scale=1 / e.rate[i]), [1.0, 0.1][i], -1, 100) for i in range(2)]
    np.testing.assert_allclose(crps(e, [1.0, 0.1]), ref, rtol=1e-6)
    mix = MixtureDist(stats.norm(np.array([[0.0, 2.0, 2.5], [1.0, -1.0, 0.0]]), np.array([[1.0, 0.5, 0.2], [0.3, 1.5, 1.0]])))
    ym = np.array([1.2, -3.0])
    ref = [crps_quad(lambda x, i=i: float(mix.cdf(np.full(2, x))[i]), ym[i], -30, 30) for i in range(2)]
    np.testing.assert_allclose(crps(mix, ym), ref, rtol=1e-6)


def test_crps_discrete_laws():
    lam = np.array([0.2, 3.0, 40.0])
    y = np.array([0.0, 5.0, 31.0])
    k = np.arange(0, 400)[:, None]
    brute = np.sum((stats.poisson.cdf(k, lam) - (k >= y)) ** 2, axis=0)   # unit cells over the support
    np.testing.assert_allclose(crps(PoissonDist(lam), y), brute, rtol=1e-9)
    # the generic sum over the support (a one-component mixture) agrees with the Poisson closed form
    one = MixtureDist(stats.poisson(lam[:, None]), discrete=True)
    np.testing.assert_allclose(crps(one, y), brute, rtol=1e-9)
    np.testing.assert_allclose(crps(one, y + 0.4), crps(PoissonDist(lam), y + 0.4), rtol=1e-9)   # off the integers
    p = np.array([0.1, 0.7])
    np.testing.assert_allclose(crps(BernoulliDist(p), [1.0, 0.0]), (np.array([1.0, 0.0]) - p) ** 2)   # the Brier score
    probs = np.array([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]])
    yc = np.array([0.0, 2.0])
    rps = np.sum((np.cumsum(probs, 1)[:, :2] - (np.arange(2)[None] >= yc[:, None])) ** 2, axis=1)
    np.testing.assert_allclose(crps(CategoricalDist(probs), yc), rps)


def test_crps_energy_forms():
    x = np.array([[0.0, 1.0, 3.0, 3.0], [-1.0, 2.0, 0.5, 0.7]])
    y = np.array([1.5, 0.0])
    brute = np.abs(x - y[:, None]).mean(1) - 0.5 * np.abs(x[:, :, None] - x[:, None, :]).mean((1, 2))
    np.testing.assert_allclose(crps(EmpiricalDist(x), y), brute)
    # a law without a closed form: the sampled energy form against quadrature
    gmix = MixtureDist(stats.gamma(np.array([[2.0, 5.0]]), scale=np.array([[1.0, 0.5]])))
    ref = crps_quad(lambda t: float(gmix.cdf(np.array([t]))[0]), 2.0, 0, 60)
    assert crps(gmix, [2.0], n_samples=200_000, random_state=0)[0] == pytest.approx(ref, rel=0.01)
    # the energy score of a one-output Normal is its CRPS
    mvn = MultivariateNormalDist(np.array([[0.0], [2.0]]), np.array([[[1.0]], [[0.25]]]))
    es = crps(mvn, np.array([[0.5], [1.0]]), n_samples=200_000, random_state=1)
    np.testing.assert_allclose(es, crps(NormalDist([0.0, 2.0], [1.0, 0.5]), [0.5, 1.0]), rtol=0.01)
    # a Normal's closed form against the sampled energy form of the same law
    d = NormalDist([0.0, 1.0], [1.0, 3.0])
    from distviz.metrics.crps import _crps_sampled
    np.testing.assert_allclose(_crps_sampled(d, np.array([0.2, 1.0]), 200_000, 2), crps(d, [0.2, 1.0]), rtol=0.01)


def test_pit_is_uniform_under_the_right_law():
    rng = np.random.default_rng(5)
    n = 4000
    cases = [NormalDist(rng.normal(size=n), np.exp(rng.normal(size=n))), GammaDist(np.full(n, 2.0), np.ones(n)),
             PoissonDist(np.exp(rng.normal(size=n))), BernoulliDist(rng.uniform(0.1, 0.9, n)),
             CategoricalDist(rng.dirichlet(np.ones(3), n)),
             MixtureDist(stats.poisson(np.exp(rng.normal(size=(n, 4)))), discrete=True)]
    for d in cases:
        y = d.sample(1, random_state=rng)[0]
        u = pit(d, y, random_state=0)
        assert u.shape == (n,) and np.all((u >= 0) & (u <= 1))
        assert stats.kstest(u, "uniform").pvalue > 1e-3, type(d).__name__
        if d.discrete:
            np.testing.assert_array_equal(u, pit(d, y, random_state=0))   # seeded
            assert np.all(u >= d.cdf_left(y) - 1e-12) and np.all(u <= d.cdf(y) + 1e-12)
        else:
            np.testing.assert_array_equal(u, d.cdf(y))
    mean = rng.normal(size=(n, 2))
    A = rng.normal(size=(n, 2, 2))
    cov = A @ A.transpose(0, 2, 1) + 0.1 * np.eye(2)
    mvn = MultivariateNormalDist(mean, cov)
    assert stats.kstest(pit(mvn, mvn.sample(1, random_state=3)[0]), "uniform").pvalue > 1e-3
    # a wrong law is seen: a too-narrow Normal piles PIT values at 0 and 1
    wrong = NormalDist(np.zeros(n), np.full(n, 0.3))
    assert stats.kstest(pit(wrong, rng.normal(size=n)), "uniform").pvalue < 1e-6


def test_coverage():
    rng = np.random.default_rng(6)
    n = 20000
    levels = (0.5, 0.8, 0.9)
    d = NormalDist(rng.normal(size=n), np.exp(rng.normal(size=n)))
    y = d.sample(1, random_state=rng)[0]
    c = coverage(d, y, levels)
    np.testing.assert_allclose(c, levels, atol=4 * np.sqrt(0.25 / n))
    lo, hi = d.interval(0.8)
    assert c[1] == np.mean((y >= lo) & (y <= hi))
    p = PoissonDist(np.full(n, 1.5))   # discrete intervals hold at least their level
    assert np.all(coverage(p, p.sample(1, random_state=rng)[0], levels) >= np.array(levels) - 4 * np.sqrt(0.25 / n))
    mvn = MultivariateNormalDist(np.zeros((n, 2)), np.tile([[1.0, 0.8], [0.8, 1.0]], (n, 1, 1)))
    np.testing.assert_allclose(coverage(mvn, mvn.sample(1, random_state=rng)[0], levels), levels, atol=4 * np.sqrt(0.25 / n))


def test_inputs_are_checked():
    d = NormalDist([0.0, 1.0], [1.0, 1.0])
    with pytest.raises(DataError, match="2 rows"):
        crps(d, [0.0, 1.0, 2.0])
    with pytest.raises(DataError, match="finite"):
        pit(d, [0.0, np.nan])
    with pytest.raises(ConfigError, match="between 0 and 1"):
        coverage(d, [0.0, 1.0], [0.9, 1.5])
    with pytest.raises(ConfigError, match="distribution object"):
        pit(np.zeros(2), [0.0, 1.0])
