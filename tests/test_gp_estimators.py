"""Gradient estimators of log E_q p(y|f): bMC bias, uPS unbiasedness, the tilted rejection sampler."""

import numpy as np
import pytest
from scipy import integrate, stats

from distviz.gp import estimators as E
from distviz.gp.likelihoods import make_likelihood

POIS = make_likelihood("poisson")
NOPAR = np.zeros(0)


def _rep(R, *vals):
    return [np.full(R, float(v)) for v in vals]


def test_quadrature_matches_adaptive_integration():
    for y, mu, s in [(5, 0.0, 1.0), (0, 1.0, 1.5), (20, 2.0, 0.3)]:
        q = E.quadrature(POIS, y, mu, s * s, NOPAR)
        def dens(f, k=0, y=y, mu=mu, s=s):
            return stats.norm.pdf(f, mu, s) * np.exp(POIS.log_p(y, f, NOPAR)) * ((f - mu) / s**2) ** k

        Z = integrate.quad(dens, mu - 12 * s, mu + 12 * s, epsabs=0, epsrel=1e-12)[0]
        d_mu = integrate.quad(dens, mu - 12 * s, mu + 12 * s, args=(1,), epsabs=0, epsrel=1e-12)[0] / Z
        assert q.value[0] == pytest.approx(np.log(Z), rel=1e-8)
        assert q.d_mu[0] == pytest.approx(d_mu, rel=1e-7, abs=1e-10)


@pytest.mark.parametrize("form", ["reparam", "price"])
def test_bmc_bias_shrinks_with_L(form):
    rng = np.random.default_rng(1)
    y, mu, s = 5.0, 0.0, 1.0
    q = E.quadrature(POIS, y, mu, s * s, NOPAR)
    bias = []
    for L in (1, 10, 100):
        R = 4000
        e = E.bmc(POIS, *_rep(R, y, mu, s * s), NOPAR, L, rng, form=form)
        bias.append((abs(e.d_mu.mean() - q.d_mu[0]), abs(e.d_v.mean() - q.d_v[0])))
    bias = np.array(bias)
    assert np.all(np.diff(bias[:, 0]) < 0), bias
    assert np.all(np.diff(bias[:, 1]) < 0), bias
    assert bias[0, 0] > 1.0 and bias[2, 0] < 0.05  # L = 1 is far off, L = 100 close (truth d_mu = 1.22)


@pytest.mark.parametrize("y,mu,s", [(5, 0.0, 1.0), (3, 1.0, 0.5), (20, 0.0, 1.0), (0, 1.0, 1.5)])
def test_ups_is_unbiased_within_three_standard_errors(y, mu, s):
    rng = np.random.default_rng(2)
    R, L = 3000, 5
    q = E.quadrature(POIS, y, mu, s * s, NOPAR)
    e = E.ups(POIS, *_rep(R, y, mu, s * s), NOPAR, L, rng, value=False)
    for est, truth in ((e.d_mu, q.d_mu[0]), (e.d_v, q.d_v[0])):
        se = est.std(ddof=1) / np.sqrt(R)
        assert abs(est.mean() - truth) < 3 * se, (est.mean(), truth, se)


def test_ups_gaussian_noise_gradient_unbiased():
    lik = make_likelihood("gaussian")
    par = np.array([np.log(0.3)])
    rng = np.random.default_rng(3)
    R = 3000
    q = E.quadrature(lik, 1.5, 0.2, 0.8, par)
    e = E.ups(lik, *_rep(R, 1.5, 0.2, 0.8), par, 4, rng, value=False)
    se = e.d_par.std(ddof=1) / np.sqrt(R)
    assert abs(e.d_par.mean() - q.d_par[0]) < 3 * se


@pytest.mark.parametrize("lik_name,y", [("poisson", 7.0), ("poisson", 0.0), ("probit", -1.0), ("gaussian", 2.0)])
def test_tilted_sampler_matches_target_distribution(lik_name, y):
    lik = make_likelihood(lik_name)
    par = np.array([np.log(0.5)]) if lik.n_par else NOPAR
    mu, v = 0.3, 1.2
    rng = np.random.default_rng(4)
    st = E.SamplerStats()
    f = E.sample_tilted(lik, np.array([y]), np.array([mu]), np.array([v]), par, 4000, rng, stats=st)[0]
    grid = np.linspace(mu - 10 * np.sqrt(v), mu + 10 * np.sqrt(v), 20001)
    logd = stats.norm.logpdf(grid, mu, np.sqrt(v)) + lik.log_p(y, grid, par)
    d = np.exp(logd - logd.max())
    cdf = np.cumsum(d)
    cdf /= cdf[-1]
    assert stats.kstest(f, lambda t: np.interp(t, grid, cdf)).pvalue > 1e-3
    assert st.proposals >= 4000


def test_paper_width_gives_a_valid_envelope():
    y = np.array([0.0, 3.0, 20.0, 50.0])
    mu = np.array([1.0, 1.0, 0.0, 4.0])
    v = np.array([1.5, 0.5, 1.0, 0.01])
    n = E.paper_width(POIS, y, mu, v, NOPAR)
    assert np.all((n >= 1) & (n <= 10))
    logk = POIS.log_max(y, NOPAR)
    for i in range(4):
        f = np.linspace(mu[i] - 30 * np.sqrt(n[i] * v[i]), mu[i] + 30 * np.sqrt(n[i] * v[i]), 5001)
        lhs = stats.norm.logpdf(f, mu[i], np.sqrt(n[i] * v[i])) + logk[i]
        rhs = stats.norm.logpdf(f, mu[i], np.sqrt(v[i])) + POIS.log_p(y[i], f, NOPAR)
        assert np.all(lhs >= rhs - 1e-9)
