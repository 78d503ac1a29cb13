"""Cholesky-of-precision chart of the P-variate Normal against ngboost, finite differences and Monte Carlo."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from distviz.errors import ConfigError, DataError
from distviz.families import charts
from distviz.families.mvn_cholesky import MVNCholesky, _kernel, get_chart

ngboost = pytest.importorskip("ngboost")
from ngboost.distns import MultivariateNormal  # noqa: E402
from ngboost.manifold import manifold  # noqa: E402
from ngboost.scores import LogScore  # noqa: E402


def _random(p, n=300, seed=0, scale=0.8):
    rng = np.random.default_rng(seed)
    ch = MVNCholesky(p)
    theta = rng.normal(size=(n, ch.dim)) * scale
    y = theta[:, :p] + rng.normal(size=(n, p)) * 1.5
    return ch, theta, y


def _ngb(p, theta):
    return manifold(LogScore, MultivariateNormal(p))(theta.T)


@pytest.mark.parametrize("p", [2, 3])
def test_matches_ngboost_score_gradient_fisher(p):
    ch, theta, y = _random(p, seed=p)
    D = _ngb(p, theta)
    np.testing.assert_allclose(ch.nll(y, theta), D.score(y), rtol=1e-10, atol=1e-8)
    np.testing.assert_allclose(ch.nll_grad(y, theta), D.d_score(y), rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(ch.fisher(theta), D.metric(), rtol=1e-8, atol=1e-8)
    nat_ref = np.linalg.solve(D.metric(), D.d_score(y)[..., None])[..., 0]
    np.testing.assert_allclose(ch.natural_gradient(y, theta), nat_ref, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(ch.cov(theta), D.cov, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(ch.mean(theta), D.loc)


@pytest.mark.parametrize("p", [2, 3])
def test_parameter_order_is_ngboosts(p):
    # ngboost: L = U^T lower triangular, parameters after the means follow np.tril_indices(p) of L.
    ch = MVNCholesky(p)
    assert ch.dim == p * (p + 3) // 2
    theta = np.arange(ch.dim, dtype=float)[None] * 0.1
    L_ngb = _ngb(p, theta).L[0]
    np.testing.assert_allclose(ch.U(theta)[0], L_ngb.T)
    expected = {2: ("mu1", "mu2", "v11", "v12", "v22"),
                3: ("mu1", "mu2", "mu3", "v11", "v12", "v22", "v13", "v23", "v33")}[p]
    assert ch.param_names == expected


def test_appendix_b_two_dimensional_example():
    # Paper eq. (3)-(4): U = [[exp(a11), a12], [0, exp(a22)]], Sigma^-1 = U^T U.
    ch = MVNCholesky(2, jitter=0.0)
    a11, a12, a22 = 0.3, -0.7, -0.2
    theta = np.array([[1.0, -2.0, a11, a12, a22]])
    e1, e2 = np.exp(a11), np.exp(a22)
    prec = np.array([[e1**2, e1 * a12], [e1 * a12, a12**2 + e2**2]])
    np.testing.assert_allclose(ch.precision(theta)[0], prec, rtol=1e-12)
    np.testing.assert_allclose(ch.cov(theta)[0], np.linalg.inv(prec), rtol=1e-12)
    # Fisher in closed form (A.6-A.9): mean block Sigma^-1, v-block by rows of U, 1 + a_ii^2 Sigma_ii
    S = np.linalg.inv(prec)
    F = ch.fisher(theta)[0]
    np.testing.assert_allclose(F[:2, :2], prec, rtol=1e-12)
    assert np.all(F[:2, 2:] == 0)
    np.testing.assert_allclose(F[2, 2], 1 + e1**2 * S[0, 0])
    np.testing.assert_allclose(F[2, 3], e1 * S[0, 1])
    np.testing.assert_allclose(F[3, 3], S[1, 1])
    np.testing.assert_allclose(F[4, 4], 1 + e2**2 * S[1, 1])
    assert F[2, 4] == 0 and F[3, 4] == 0


@pytest.mark.parametrize("p", [1, 2, 3, 4])
def test_gradient_matches_finite_differences(p):
    rng = np.random.default_rng(10 + p)
    ch = MVNCholesky(p, jitter=0.0)
    theta = rng.normal(size=(40, ch.dim)) * 0.6
    y = rng.normal(size=(40, p))
    g = ch.nll_grad(y, theta)
    eps = 1e-6
    fd = np.empty_like(g)
    for k in range(ch.dim):
        e = np.zeros(ch.dim)
        e[k] = eps
        fd[:, k] = (ch.nll(y, theta + e) - ch.nll(y, theta - e)) / (2 * eps)
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("p", [2, 3])
def test_fisher_equals_monte_carlo_outer_product(p):
    rng = np.random.default_rng(20 + p)
    ch = MVNCholesky(p, jitter=0.0)
    theta = rng.normal(size=(1, ch.dim)) * 0.5
    m = 200_000
    ys = ch.sample(theta, rng, size=m)[:, 0, :]
    G = ch.nll_grad(ys, theta)
    mc = G.T @ G / m
    F = ch.fisher(theta)[0]
    # standard error of each entry of the Monte Carlo mean
    se = np.sqrt(np.var(G[:, :, None] * G[:, None, :], axis=0) / m)
    assert np.all(np.abs(mc - F) < 5 * se + 1e-9)
    # the score has mean zero
    assert np.all(np.abs(G.mean(0)) < 5 * G.std(0) / np.sqrt(m))


@settings(deadline=None, max_examples=30)
@given(st.integers(1, 5), st.integers(0, 10_000))
def test_natural_gradient_solves_fisher_system(p, seed):
    rng = np.random.default_rng(seed)
    ch = MVNCholesky(p)
    theta = rng.normal(size=(7, ch.dim)) * 0.7
    y = rng.normal(size=(7, p)) * 2
    F = ch.fisher(theta)
    nat = ch.natural_gradient(y, theta)
    np.testing.assert_allclose(np.einsum("nij,nj->ni", F, nat), ch.nll_grad(y, theta), rtol=1e-7, atol=1e-7)
    nll, g, ng = ch.nll_and_grads(y, theta)
    np.testing.assert_allclose(ng, nat)
    np.testing.assert_allclose(g, ch.nll_grad(y, theta))
    np.testing.assert_allclose(nll, ch.nll(y, theta))


@pytest.mark.parametrize("jitter", [0.0, 1e-6, 0.5])
def test_unrolled_p2_kernel_equals_generic_kernel(jitter):
    ch, theta, y = _random(2, n=500, seed=3)
    ch = MVNCholesky(2, jitter=jitter)
    theta[:5, 2] = -30.0  # exp(v) far below the jitter: log(a) through log1p
    diag = np.ascontiguousarray(np.exp(theta[:, 2 + ch._diag]) + ch.jitter)
    logdet = np.log(diag).sum(1)
    gen = _kernel(y, theta, diag, logdet, 2, True, True, ch._urow, ch._ucol, ch._pos)
    fast = ch._run(y, theta, True, True)
    for a, b in zip(gen, fast):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-9)
    # line-search helper: mean NLL along F + s f, weighted and unweighted, P = 2 and generic P
    f = np.random.default_rng(0).normal(size=theta.shape)
    w = np.random.default_rng(1).uniform(size=500)
    for s in (0.0, 0.5, 2.0):
        ref = ch.nll(y, theta + s * f)
        assert ch._mean_nll_along(y, theta, f, s) == pytest.approx(ref.mean(), rel=1e-12)
        assert ch._mean_nll_along(y, theta, f, s, w) == pytest.approx(np.dot(w, ref) / w.sum(), rel=1e-12)
    ch3, th3, y3 = _random(3, n=50, seed=4)
    f3 = np.ones_like(th3) * 0.1
    assert ch3._mean_nll_along(y3, th3, f3, 2.0) == pytest.approx(ch3.nll(y3, th3 + 0.2).mean(), rel=1e-12)


@pytest.mark.filterwarnings("ignore:Using Multivariate normal with k=1")
@pytest.mark.parametrize("p", [1, 2, 3])
def test_init_theta_is_marginal_mle(p):
    rng = np.random.default_rng(5)
    A = rng.normal(size=(p, p))
    y = rng.normal(size=(2000, p)) @ A.T + np.arange(p)
    ch = MVNCholesky(p)
    th = ch.init_theta(y)
    np.testing.assert_allclose(ch.mean(th)[0], y.mean(0), atol=1e-12)
    np.testing.assert_allclose(ch.cov(th)[0], np.cov(y.T, bias=True).reshape(p, p), rtol=1e-8)
    # the gradient of the mean NLL vanishes at the MLE
    assert np.abs(ch.nll_grad(y, th).mean(0)).max() < 1e-5
    # ngboost's marginal fit agrees up to its handling of the 1e-6 jitter
    np.testing.assert_allclose(th, MultivariateNormal(p).fit(y), atol=1e-4)
    # weights: duplicating rows equals weighting them
    w = rng.integers(1, 4, size=y.shape[0]).astype(float)
    np.testing.assert_allclose(ch.init_theta(y, w), ch.init_theta(np.repeat(y, w.astype(int), axis=0)), atol=1e-9)


def test_moments_round_trip_and_sampling():
    rng = np.random.default_rng(7)
    ch = MVNCholesky(3)
    theta = rng.normal(size=(4, ch.dim)) * 0.5
    np.testing.assert_allclose(ch.from_moments(ch.mean(theta), ch.cov(theta)), theta, atol=1e-10)
    np.testing.assert_allclose(ch.from_natural(ch.to_natural(theta)), theta, atol=1e-9)
    s = ch.sample(theta, rng, size=100_000)
    assert s.shape == (100_000, 4, 3)
    np.testing.assert_allclose(s.mean(0), ch.mean(theta), atol=0.05 * np.sqrt(ch.cov(theta).max()) + 0.02)
    emp = np.einsum("kni,knj->nij", s - s.mean(0), s - s.mean(0)) / s.shape[0]
    np.testing.assert_allclose(emp, ch.cov(theta), rtol=0.05, atol=0.02)
    assert ch.sample(theta, 0).shape == (4, 3)
    R = ch.corr(theta)
    np.testing.assert_allclose(np.einsum("nii->ni", R), 1.0)


def test_chart_registry_and_bad_inputs():
    ch = charts.get("mvn_cholesky", P=3)
    assert isinstance(ch, MVNCholesky) and ch.p == 3 and ch.y_dim == 3
    assert get_chart(p=2).dim == 5
    with pytest.raises(ConfigError):
        MVNCholesky(0)
    with pytest.raises(ConfigError):
        MVNCholesky(2.5)
    with pytest.raises(ConfigError):
        MVNCholesky(2, jitter=-1)
    ch = MVNCholesky(2)
    theta = np.zeros((3, 5))
    with pytest.raises(DataError, match="theta must have shape"):
        ch.nll(np.zeros((3, 2)), np.zeros((3, 4)))
    with pytest.raises(DataError, match="y must have shape"):
        ch.nll(np.zeros((3, 3)), theta)
    with pytest.raises(DataError, match="rows"):
        ch.nll_grad(np.zeros((4, 2)), theta)
    with pytest.raises(DataError, match="NaN"):
        ch.natural_gradient(np.array([[np.nan, 0.0]] * 3), theta)
    with pytest.raises(DataError, match="positive definite"):
        ch.from_moments(np.zeros(2), -np.eye(2))
    with pytest.raises(DataError, match="at least"):
        ch.init_theta(np.zeros((2, 2)))
    # a single theta row broadcasts over y
    assert ch.nll(np.zeros((6, 2)), np.zeros(5)).shape == (6,)
