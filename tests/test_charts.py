"""Charts (unconstrained theta for NGBoost-style fitting): gradients, Fisher information, natural gradients.

Checked for every chart in distviz.families.charts (including the multivariate-Normal Cholesky chart
of the multivariate NGBoost paper, App. B): nll_grad equals finite differences of nll; natural_gradient
equals fisher^-1 nll_grad; fisher equals a Monte Carlo E[grad grad^T]; theta <-> eta round trips.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from distviz import families as F
from distviz.errors import ConfigError
from distviz.families import charts

SETTINGS = settings(max_examples=100, deadline=None)  # hypothesis' default number of examples

CHARTS = [("normal", {}), ("poisson", {}), ("gamma", {}), ("exponential", {}), ("eta:poisson", {}), ("eta:bernoulli", {}),
          ("eta:normal", {}), ("eta:gamma", {}), ("eta:exponential", {}), ("eta:categorical", {"K": 3}),
          ("eta:mvn", {"P": 2}), ("mvn_cholesky", {"P": 2})]
IDS = [c[0] for c in CHARTS]


def _floats(lo, hi):
    return st.floats(lo, hi, allow_nan=False, allow_infinity=False)


def _vec(draw, n, lo, hi):
    return np.array(draw(st.lists(_floats(lo, hi), min_size=n, max_size=n)))


def _draw_eta(draw, fam, n):
    """Valid natural parameters of `fam` in well-conditioned ranges."""
    if fam.name == "poisson":
        return _vec(draw, n, -3.0, 3.0)[:, None]
    if fam.name == "bernoulli":
        return _vec(draw, n, -5.0, 5.0)[:, None]
    if fam.name == "normal":
        return F.Normal.from_mu_sigma(_vec(draw, n, -5, 5), np.exp(_vec(draw, n, -1.5, 1.5)))
    if fam.name == "gamma":
        return F.Gamma.from_shape_rate(np.exp(_vec(draw, n, -1.0, 3.0)), np.exp(_vec(draw, n, -2.0, 2.0)))
    if fam.name == "exponential":
        return -np.exp(_vec(draw, n, -2.0, 2.0))[:, None]
    if fam.name == "categorical":
        return _vec(draw, n * fam.dim, -3.0, 3.0).reshape(n, fam.dim)
    P = fam.P
    mu = _vec(draw, n * P, -3.0, 3.0).reshape(n, P)
    L = _vec(draw, n * P * P, -1.0, 1.0).reshape(n, P, P)
    return fam.from_mean_cov(mu, L @ np.swapaxes(L, 1, 2) + 0.3 * np.eye(P))


@st.composite
def chart_theta_y(draw, name, kw):
    chart = charts.get(name, **kw)
    n = draw(st.integers(1, 4))
    eta = _draw_eta(draw, chart.family, n)
    theta = chart.from_natural(eta)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    y = chart.sample(theta, rng)
    return chart, theta, y


@pytest.mark.parametrize("name,kw", CHARTS, ids=IDS)
@SETTINGS
@given(data=st.data())
def test_chart_gradient_and_natural_gradient(name, kw, data):
    chart, theta, y = data.draw(chart_theta_y(name, kw))
    n = theta.shape[0]
    assert theta.shape == (n, chart.dim) and len(chart.param_names) == chart.dim
    # theta <-> eta round trip and agreement of the NLL with the family's
    eta = chart.to_natural(theta)
    np.testing.assert_allclose(chart.from_natural(eta), theta, rtol=1e-8, atol=1e-8)
    nll = chart.nll(y, theta)
    assert nll.shape == (n,)
    np.testing.assert_allclose(nll, chart.family.nll(y, eta), rtol=1e-9, atol=1e-9)
    # gradient against central finite differences of the NLL
    g = chart.nll_grad(y, theta)
    assert g.shape == theta.shape
    fd = np.empty_like(g)
    for k in range(chart.dim):
        h = 1e-6 * (1.0 + np.abs(theta[:, k]))
        tp, tm = theta.copy(), theta.copy()
        tp[:, k] += h
        tm[:, k] -= h
        fd[:, k] = (chart.nll(y, tp) - chart.nll(y, tm)) / (2 * h)
    assert np.all(np.abs(fd - g) <= 1e-5 * (1.0 + np.abs(g) + np.abs(nll)[:, None]))
    # natural gradient = fisher^-1 grad
    G = chart.fisher(theta)
    assert G.shape == (n, chart.dim, chart.dim)
    ng = chart.natural_gradient(y, theta)
    ref = np.linalg.solve(G, g[..., None])[..., 0]
    cond = np.linalg.cond(G)[:, None]
    assert np.all(np.abs(ng - ref) <= 1e-10 * cond * (1.0 + np.abs(ref)))


def _fisher_points():
    """A few fixed theta per chart for the Monte Carlo check of the Fisher information."""
    out = []
    for name, kw in CHARTS:
        chart = charts.get(name, **kw)
        fam = chart.family
        eta = fam.project_natural(fam.default_natural(1) + 0.3)
        out.append((name, kw, chart.from_natural(eta)[0]))
    return out


@pytest.mark.parametrize("name,kw,theta", _fisher_points(), ids=IDS)
def test_chart_fisher_is_expected_outer_product_of_scores(name, kw, theta):
    chart = charts.get(name, **kw)
    N = 40_000
    rng = np.random.default_rng(7)
    rows = np.repeat(theta[None, :], N, axis=0)
    y = chart.sample(rows, rng)
    g = chart.nll_grad(y, rows)
    outer = g[:, :, None] * g[:, None, :]
    mc = outer.mean(0)
    se = outer.std(0) / np.sqrt(N)
    G = chart.fisher(theta[None, :])[0]
    assert np.all(np.abs(mc - G) <= 6 * se + 1e-9), (mc, G)
    # the score has mean zero
    assert np.all(np.abs(g.mean(0)) <= 6 * g.std(0) / np.sqrt(N) + 1e-12)


@pytest.mark.parametrize("name,kw", CHARTS, ids=IDS)
def test_init_theta_is_marginal_mle(name, kw):
    chart = charts.get(name, **kw)
    fam = chart.family
    rng = np.random.default_rng(3)
    eta = fam.project_natural(fam.default_natural(1) + 0.2)
    y = chart.sample(np.repeat(chart.from_natural(eta), 500, axis=0), rng)
    w = rng.uniform(0.5, 2.0, size=500)
    th = chart.init_theta(y, sample_weight=w)
    assert th.shape == (chart.dim,)
    g = chart.nll_grad(y, np.repeat(th[None, :], 500, axis=0))
    np.testing.assert_allclose(w @ g / w.sum(), 0.0, atol=1e-6)


def test_normal_chart_is_ngboost_normal():
    ch = charts.get("normal")
    assert isinstance(ch, charts.NormalMeanLogScale) and ch.param_names == ["mu", "log sigma"]
    theta = np.array([[1.0, np.log(2.0)], [-1.0, 0.0]])
    np.testing.assert_allclose(ch.fisher(theta), [[[0.25, 0], [0, 2]], [[1, 0], [0, 2]]])
    y = np.array([3.0, -1.0])
    np.testing.assert_allclose(ch.natural_gradient(y, theta), [[-2.0, 0.5 * (1 - 1.0)], [0.0, 0.5]])
    np.testing.assert_allclose(ch.mean(theta), [1.0, -1.0])
    # the natural chart of the Normal is NGD boosting in eta
    nat = charts.get("eta:normal")
    assert isinstance(nat, charts.ExponentialFamilyChart) and isinstance(nat.family, F.Normal)


def test_chart_registry():
    names = charts.available()
    for required in ["normal", "poisson", "mvn_cholesky", "eta:poisson", "eta:mvn"]:
        assert required in names
    assert isinstance(charts.get("gaussian"), charts.NormalMeanLogScale)
    assert charts.get("eta:categorical", K=4).dim == 3
    assert charts.get("categorical", K=4).dim == 3 and charts.get("bernoulli").family.name == "bernoulli"
    np.testing.assert_allclose(charts.get("exponential").fisher(np.array([[0.3], [-2.0]])), 1.0)
    assert charts.get("natural:gamma").family.name == "gamma"
    assert isinstance(charts.get(F.get("poisson")), charts.ExponentialFamilyChart)
    mc = charts.get("mvn_cholesky", P=3)
    assert mc.dim == 3 + 6 and mc.y_dim == 3
    with pytest.raises(ConfigError):
        charts.get("weibull")
    with pytest.raises(ConfigError):
        charts.get("normal", K=3)


@pytest.mark.parametrize("name", ["normal", "poisson", "gamma"])
def test_charts_agree_with_ngboost(name):
    """Our ngboost-style charts give ngboost's own gradients and Fisher information (the peer)."""
    import ngboost as ngb
    from ngboost.manifold import manifold
    from ngboost.scores import LogScore

    dist = {"normal": ngb.distns.Normal, "poisson": ngb.distns.Poisson, "gamma": ngb.distns.Gamma}[name]
    D = manifold(LogScore, dist)
    chart = charts.get(name)
    rng = np.random.default_rng(11)
    fam = chart.family
    eta = fam.project_natural(fam.default_natural(50) + rng.normal(0, 0.3, (50, fam.dim)))
    theta = chart.from_natural(eta)
    y = chart.sample(theta, rng)
    d = D(theta.T)
    np.testing.assert_allclose(chart.nll_grad(y, theta), d.d_score(y), rtol=1e-7, atol=1e-7)
    np.testing.assert_allclose(chart.fisher(theta), d.metric(), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(chart.natural_gradient(y, theta), d.grad(y, natural=True), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(chart.nll(y, theta), d.score(y), rtol=1e-9)
