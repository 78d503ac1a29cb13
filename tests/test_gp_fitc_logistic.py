"""SparseGP's FITC objective and logistic likelihood (issue 30, item 5) against references.

FITC: the collapsed objective and the predictive against a dense computation with the FITC covariance
Q_ff + diag(K_ff - Q_ff) + s I built explicitly, its autograd gradient against finite differences, the
exact-GP limit.  Logistic: the quadratures against adaptive integration, the predictive probability
against Monte Carlo, the sampled DLM gradients against quadrature.
"""

import autograd.numpy as anp
import numpy as np
import pytest
from autograd import value_and_grad
from scipy import integrate, special, stats
from threadpoolctl import threadpool_limits

from distviz.errors import ConfigError
from distviz.families.dist import BernoulliDist, NormalDist
from distviz.gp import SparseGP
from distviz.gp import estimators as E
from distviz.gp.fitc import FITCObjective
from distviz.gp.kernels import rbf
from distviz.gp.likelihoods import make_likelihood
from distviz.gp.logistic_grad import loss_grad
from distviz.gp.objectives import Problem, loss_terms

pytestmark = pytest.mark.usefixtures("single_thread_blas")


def _data(n=30, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, (n, 2))
    return X, np.sin(X[:, 0]) + 0.5 * X[:, 1] + 0.2 * rng.normal(size=n)


def _dense(p, Xs, jitter):
    """The FITC prior covariance Q_ff + diag(K_ff - Q_ff) + s I, built explicitly, and K_uu, K_uf."""
    ell, sf2, s = np.exp(p["log_ell"]), float(np.exp(p["log_sf2"])), float(np.exp(p["lik"][0]))
    Z = p["Z"]
    Kuu = rbf(Z, Z, ell, sf2) + jitter * sf2 * np.eye(len(Z))
    Kuf = rbf(Z, Xs, ell, sf2)
    Q = Kuf.T @ np.linalg.solve(Kuu, Kuf)
    K = rbf(Xs, Xs, ell, sf2)
    return Q + np.diag(np.diag(K - Q)) + s * np.eye(len(Xs)), Kuu, Kuf


@pytest.fixture(scope="module")
def fitc():
    X, y = _data()
    with threadpool_limits(1, user_api="blas"):
        return SparseGP(objective="fitc", n_inducing=5, ard=True, max_iter=80, random_state=0).fit(X, y), X, y


def test_fitc_objective_gradient_and_predictive_match_the_dense_computation(fitc):
    model, X, y = fitc
    n = len(y)
    Xs = (X - model.x_mean_) / model.x_scale_
    p = model.params_
    C, Kuu, Kuf = _dense(p, Xs, model.jitter)
    c = float(p["mean"])
    # the objective at the fit, and at a perturbed point through the objective function itself
    assert model.objective_ == pytest.approx(-stats.multivariate_normal(np.full(n, c), C).logpdf(y) / n, rel=1e-10)
    free = {k: p[k] for k in ("Z", "log_ell", "log_sf2", "mean", "lik")}
    fun = FITCObjective(Problem(Xs, y, make_likelihood("gaussian"), "fitc", jitter=model.jitter), free)
    x = fun.flat0 + 0.05 * np.random.default_rng(1).normal(size=fun.flat0.size)
    q = fun.params(x)
    Cq = _dense(q, Xs, model.jitter)[0]
    val, g = fun(x)
    assert val == pytest.approx(-stats.multivariate_normal(np.full(n, float(q["mean"])), Cq).logpdf(y) / n, rel=1e-10)
    h = 1e-6
    fd = np.array([(fun(x + h * e)[0] - fun(x - h * e)[0]) / (2 * h) for e in np.eye(x.size)])
    np.testing.assert_allclose(g, fd, atol=1e-6)
    # FITC's predictive: N(c + Q_*f C^-1 r, K_** - Q_*f C^-1 Q_f*) (+ s for y)
    Xt = np.random.default_rng(2).uniform(-3.5, 3.5, (9, 2))
    Xts = (Xt - model.x_mean_) / model.x_scale_
    ell, sf2, s = np.exp(p["log_ell"]), float(np.exp(p["log_sf2"])), float(np.exp(p["lik"][0]))
    Qsf = rbf(Xts, p["Z"], ell, sf2) @ np.linalg.solve(Kuu, Kuf)
    mean = c + Qsf @ np.linalg.solve(C, y - c)
    var = sf2 - np.sum(Qsf * np.linalg.solve(C, Qsf.T).T, axis=1)
    mu, v = model.predict_latent(Xt)
    np.testing.assert_allclose(mu, mean, atol=1e-9)
    np.testing.assert_allclose(v, var, atol=1e-9)
    d = model.predict_dist(Xt)
    assert isinstance(d, NormalDist)
    np.testing.assert_allclose(d.mean(), mean, atol=1e-9)
    np.testing.assert_allclose(d.var(), var + s, atol=1e-9)


def test_fitc_replays_its_path_and_round_trips_through_a_file(fitc, tmp_path):
    model, X, y = fitc
    assert model.history_[-1] == pytest.approx(model.objective_) and model.history_[-1] < model.history_[0]
    last = model.at_iteration(len(model.path_) - 1)
    np.testing.assert_allclose(last.predict(X), model.predict(X), atol=1e-12)
    assert not np.allclose(model.at_iteration(0).predict(X), model.predict(X))
    model.save(tmp_path / "fitc.nc")
    np.testing.assert_array_equal(SparseGP.load(tmp_path / "fitc.nc").predict(X), model.predict(X))


def test_fitc_with_inducing_points_at_the_inputs_is_the_exact_gp():
    X, y = _data(n=12, seed=3)
    ell, sf2, noise, c = 0.9, 1.3, 0.05, 0.2
    m = SparseGP(objective="fitc", n_inducing=12, inducing=X, learn_inducing=False, fit_hyperparameters=False,
                 lengthscale=ell, variance=sf2, noise=noise, mean=c, normalize_X=False, jitter=1e-10).fit(X, y)
    assert m.n_iter_ == 0   # nothing is optimised: q(u) follows from the hyperparameters
    K = rbf(X, X, np.array([ell]), sf2) + noise * np.eye(12)
    assert m.objective_ == pytest.approx(-stats.multivariate_normal(np.full(12, c), K).logpdf(y) / 12, rel=1e-7)
    Xt = np.linspace(-3.5, 3.5, 7)[:, None] * np.ones((1, 2))
    Ks = rbf(Xt, X, np.array([ell]), sf2)
    mu, v = m.predict_latent(Xt)
    np.testing.assert_allclose(mu, c + Ks @ np.linalg.solve(K, y - c), atol=1e-6)
    np.testing.assert_allclose(v, sf2 - np.sum(Ks * np.linalg.solve(K, Ks.T).T, axis=1), atol=1e-6)


@pytest.mark.parametrize("kw,match", [(dict(likelihood="probit"), "likelihood='gaussian'"),
                                      (dict(gradient="bmc"), "gradient='exact'"),
                                      (dict(batch_size=5), "batch_size=None"),
                                      (dict(beta=0.5), "beta=1")])
def test_fitc_refuses_what_it_has_no_meaning_for(kw, match):
    X, y = _data(n=6)
    with pytest.raises(ConfigError, match=match):
        SparseGP(objective="fitc", **kw).fit(X, (y > 0).astype(float) if "likelihood" in kw else y)


# ------------------------------------------------------------------ logistic
LOGI = make_likelihood("logistic")
NOPAR = np.zeros(0)


@pytest.mark.parametrize("y,mu,v", [(1, 0.4, 0.5), (-1, 2.0, 3.0), (1, -3.0, 40.0), (-1, -30.0, 4.0), (1, 8.0, 400.0)])
def test_logistic_quadratures_match_adaptive_integration(y, mu, v):
    s, m = np.sqrt(v), y * mu
    pts = sorted([m - 40 * s, min(m, 0.0), max(m, 0.0), m + v, m + 40 * s])

    def integral(g):
        return sum(integrate.quad(lambda t: stats.norm.pdf(t, m, s) * g(t), a, b, epsabs=0, epsrel=1e-12,
                                  limit=200)[0] for a, b in zip(pts[:-1], pts[1:]))

    args = (np.array([float(y)]), np.array([mu]), np.array([v]), NOPAR)
    assert LOGI.log_pred(*args)[0] == pytest.approx(np.log(integral(special.expit)), abs=1e-9)
    assert LOGI.elbo_term(*args)[0] == pytest.approx(integral(lambda t: np.logaddexp(0, -t)), rel=1e-9)


@pytest.fixture(scope="module")
def logistic():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(60, 2))
    y = (X[:, 0] + 0.3 * rng.normal(size=60) > 0).astype(int)
    with threadpool_limits(1, user_api="blas"):
        return SparseGP(likelihood="logistic", objective="dlm_log", n_inducing=6, max_iter=60,
                        random_state=0).fit(X, y), X, y


def test_logistic_predictive_probability_matches_monte_carlo(logistic):
    model, X, y = logistic
    mu, v = model.predict_latent(X[:8])
    f = mu + np.sqrt(v) * np.random.default_rng(0).standard_normal((100_000, 8))
    mc = special.expit(f)
    p1 = model.predict_mean(X[:8])
    assert np.all(np.abs(p1 - mc.mean(axis=0)) < 4 * mc.std(axis=0) / np.sqrt(len(f)) + 1e-12)
    d = model.predict_dist(X[:8])
    assert isinstance(d, BernoulliDist)
    np.testing.assert_allclose(d.mean(), p1, rtol=1e-12)
    np.testing.assert_allclose(d.logpdf(y[:8]), model.log_predictive(X[:8], y[:8]), atol=1e-10)
    assert np.mean((model.predict(X) > 0.5) == (y == 1)) > 0.85


@pytest.mark.parametrize("objective", ["elbo", "dlm_log", "dlm_square"])
def test_logistic_hand_gradients_match_autograd(objective):
    # distviz.gp.logistic_grad against autograd's trace of the same quadratures, on rows of both branches
    rng = np.random.default_rng(3)
    n = 300
    y = rng.choice([-1.0, 1.0], n)
    mu = rng.normal(0, 3, n) * rng.choice([0.1, 1.0, 5.0], n)
    v = np.exp(rng.normal(0, 2, n))
    traced = value_and_grad(lambda a, b: anp.sum(loss_terms(objective, LOGI, y, a, b, NOPAR)), argnum=(0, 1))
    with np.errstate(over="ignore", invalid="ignore"):
        val, (g_mu, g_v) = traced(mu, v)
        hand = loss_grad(LOGI, objective, y, mu, v, NOPAR)
    assert hand[0] == pytest.approx(val, rel=1e-13)
    np.testing.assert_allclose(hand[1], g_mu, rtol=1e-9, atol=1e-13)
    np.testing.assert_allclose(hand[2], g_v, rtol=1e-9, atol=1e-12)
    assert hand[3].shape == (0,)


def test_logistic_sampled_dlm_gradients_match_quadrature():
    rng = np.random.default_rng(2)
    R = 3000
    yy, mm, vv = np.full(R, -1.0), np.full(R, 1.2), np.full(R, 2.0)
    q = E.quadrature(LOGI, -1.0, 1.2, 2.0, NOPAR)
    u = E.ups(LOGI, yy, mm, vv, NOPAR, 4, rng, value=False)
    for est, truth in ((u.d_mu, q.d_mu[0]), (u.d_v, q.d_v[0])):
        assert abs(est.mean() - truth) < 3 * est.std(ddof=1) / np.sqrt(R)
    b = E.bmc(LOGI, yy[:300], mm[:300], vv[:300], NOPAR, 200, rng)
    assert abs(b.d_mu.mean() - q.d_mu[0]) < 0.02 and abs(b.d_v.mean() - q.d_v[0]) < 0.02
