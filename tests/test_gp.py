"""SparseGP: objective gradients, the exact-GP limit, fitting, beta selection, input validation."""

import numpy as np
import pytest
from autograd import grad

from distviz.errors import ConfigError, DataError
from distviz.gp import SparseGP, beta_grid, compare_1d, select_beta
from distviz.gp import objectives as obj
from distviz.gp.kernels import rbf
from distviz.gp.likelihoods import make_likelihood

RNG = np.random.default_rng(0)


pytestmark = pytest.mark.usefixtures("single_thread_blas")

X3 = RNG.normal(size=(30, 3))
TARGETS = {"gaussian": RNG.normal(size=30), "poisson": RNG.poisson(2.0, 30).astype(float),
           "probit": RNG.integers(0, 2, 30).astype(float)}
TARGETS["logistic"] = TARGETS["probit"]


def _objective(lik_name, objective, ard=False, fit_hyper=True, gradient="exact", n_samples=10):
    rng = np.random.default_rng(1)
    lik = make_likelihood(lik_name)
    y = lik.validate(TARGETS[lik_name])
    est = SparseGP(likelihood=lik_name, objective=objective, n_inducing=6, ard=ard, beta=0.7,
                   fit_hyperparameters=fit_hyper)
    free, fixed = est._init_params(X3, y, lik, rng)
    free["m"] = rng.normal(size=6) * 0.5
    free["Lw"] = np.tril(rng.normal(size=(6, 6))) * 0.3
    pb = obj.Problem(X3, y, lik, objective, 0.7, gradient, n_samples, "reparam", 1e-6, fixed)
    f = obj.Objective(pb, free)
    return f, f.flat0 + 0.01 * rng.normal(size=f.flat0.size)


@pytest.mark.parametrize("lik_name", ["gaussian", "probit", "logistic", "poisson"])
@pytest.mark.parametrize("objective", ["elbo", "dlm_log", "dlm_square"])
def test_objective_gradients_match_finite_differences(lik_name, objective):
    f, x = _objective(lik_name, objective, ard=(lik_name == "poisson"))
    _, g = f(x)
    h = 1e-6
    fd = np.array([(f(x + h * e)[0] - f(x - h * e)[0]) / (2 * h) for e in np.eye(x.size)])
    np.testing.assert_allclose(g, fd, atol=1e-5)
    # the hand-derived reverse pass agrees with autograd through the whole objective
    np.testing.assert_allclose(g, grad(f._exact)(x, np.arange(30)), atol=1e-10)


def test_fixed_hyperparameter_gradient_has_only_variational_blocks():
    f, x = _objective("gaussian", "dlm_log", fit_hyper=False)
    assert f.unflatten.keys == ["Lw", "Z", "m"]
    _, g = f(x)
    fd = np.array([(f(x + 1e-6 * e)[0] - f(x - 1e-6 * e)[0]) / 2e-6 for e in np.eye(x.size)])
    np.testing.assert_allclose(g, fd, atol=1e-5)


def test_sampled_gradients_average_to_the_exact_one():
    rng = np.random.default_rng(5)
    f_ex, x = _objective("poisson", "dlm_log")
    _, g_ex = f_ex(x)
    for gradient in ("bmc", "ups"):
        f, _ = _objective("poisson", "dlm_log", gradient=gradient, n_samples=200)
        g = np.mean([f(x, None, rng)[1] for _ in range(10)], axis=0)
        assert np.max(np.abs(g - g_ex)) < 0.02 * np.max(np.abs(g_ex)) + 1e-3


def test_elbo_with_inducing_points_at_inputs_recovers_exact_gp():
    rng = np.random.default_rng(2)
    X = np.sort(rng.uniform(-3, 3, 12))[:, None]
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=12)
    ell, sf2, noise, c = 0.9, 1.3, 0.05, 0.2
    m = SparseGP(n_inducing=12, inducing=X, learn_inducing=False, fit_hyperparameters=False, lengthscale=ell,
                 variance=sf2, noise=noise, mean=c, normalize_X=False, jitter=1e-10, max_iter=5000, tol=1e-12)
    m.fit(X, y)
    Xt = np.linspace(-3.5, 3.5, 25)[:, None]
    K = rbf(X, X, np.array([ell]), sf2) + noise * np.eye(12)
    Ks = rbf(Xt, X, np.array([ell]), sf2)
    exact_mean = c + Ks @ np.linalg.solve(K, y - c)
    exact_var = sf2 - np.sum(Ks * np.linalg.solve(K, Ks.T).T, axis=1)
    mu, v = m.predict_latent(Xt)
    np.testing.assert_allclose(mu, exact_mean, atol=1e-4)
    np.testing.assert_allclose(v, exact_var, atol=1e-4)


def _dlm_log_objective(model, X, y):
    mu, v = model.predict_latent(X)
    lp = np.asarray(model.lik_.log_pred(y, mu, v, model.params_["lik"]))
    Lw, m = obj.lower(model.params_["Lw"]), model.params_["m"]
    kl = 0.5 * (np.sum(Lw**2) + m @ m - len(m)) - np.sum(np.log(np.diag(Lw)))
    return (-lp.sum() + model.beta * kl) / len(y)


def test_fixed_hyperparameter_dlm_improves_its_objective_over_the_elbo_posterior():
    rng = np.random.default_rng(3)
    X = rng.uniform(-3, 3, (80, 1))
    y = np.sin(2 * X[:, 0]) + 0.3 * rng.standard_normal(80)
    elbo = SparseGP(n_inducing=8, max_iter=200, random_state=0).fit(X, y)
    hp = elbo.hyperparameters_
    dlm = SparseGP(objective="dlm_log", n_inducing=8, max_iter=200, fit_hyperparameters=False,
                   learn_inducing=False, random_state=0, **hp).fit(X, y)
    assert dlm.objective_ == pytest.approx(_dlm_log_objective(dlm, X, y), rel=1e-9)
    assert dlm.objective_ < _dlm_log_objective(elbo, X, y) - 0.01
    assert dlm.hyperparameters_["noise"] == pytest.approx(hp["noise"])
    np.testing.assert_allclose(dlm.hyperparameters_["inducing"], hp["inducing"])
    np.testing.assert_allclose(dlm.predict_latent(X)[0], elbo.predict_latent(X)[0], atol=0.3)


@pytest.mark.parametrize("gradient", ["bmc", "ups"])
def test_poisson_dlm_with_sampled_gradients_fits(gradient):
    rng = np.random.default_rng(4)
    X = rng.uniform(-3, 3, (100, 1))
    y = rng.poisson(np.exp(np.sin(2 * X[:, 0])))
    m = SparseGP(likelihood="poisson", objective="dlm_log", gradient=gradient, n_inducing=8, max_iter=150,
                 learning_rate=0.03, random_state=0).fit(X, y)
    null = -np.mean(make_likelihood("poisson").log_p(y, np.log(y.mean()), np.zeros(0)))
    assert m.history_.shape == (150,)
    assert -m.score(X, y) < null - 0.05  # score is the mean log predictive; -score the log-loss
    pmf = m.predict_density(X[:5], np.arange(60))
    np.testing.assert_allclose(pmf.sum(axis=1), 1.0, atol=1e-6)
    assert np.all(m.predict_mean(X[:5]) > 0)


def test_probit_predictions_and_density():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(60, 2))
    y = (X[:, 0] + 0.3 * rng.normal(size=60) > 0).astype(int)
    m = SparseGP(likelihood="probit", objective="dlm_log", n_inducing=6, max_iter=100, random_state=0).fit(X, y)
    p1 = m.predict_mean(X)
    assert np.mean((p1 > 0.5) == (y == 1)) > 0.85
    d = m.predict_density(X, [0, 1])
    np.testing.assert_allclose(d.sum(axis=1), 1.0, atol=1e-10)
    np.testing.assert_allclose(d[:, 1], p1, atol=1e-10)


def test_beta_grid_and_select_beta():
    g = beta_grid(100)
    assert g[0] == 100 and g[-1] == 0.01 and all(a / b == 2 for a, b in zip(g[:-2], g[1:-1]))
    rng = np.random.default_rng(7)
    X = rng.uniform(-3, 3, (60, 1))
    y = np.sin(2 * X[:, 0]) + 0.3 * rng.standard_normal(60)
    base = SparseGP(n_inducing=6, max_iter=60, random_state=0)
    est, best, scores = select_beta(base, X[:40], y[:40], X[40:], y[40:], grid=[10.0, 1.0, 0.1], refit=False)
    assert best == min(scores, key=scores.get) and est.beta == best and set(scores) == {10.0, 1.0, 0.1}


def test_compare_1d_shapes_and_bands():
    rng = np.random.default_rng(8)
    X = rng.uniform(-3, 3, 50)
    y = np.sin(X) + 0.2 * rng.normal(size=50)
    xg = np.linspace(-3, 3, 30)
    ds = compare_1d(X, y, xg, objectives=("elbo", "dlm_log", "dlm_square"), n_inducing=6, max_iter=60)
    assert ds["mean"].shape == (3, 30)
    assert np.all(ds["lower"].values < ds["mean"].values) and np.all(ds["mean"].values < ds["upper"].values)
    assert list(ds.objective.values) == ["elbo", "dlm_log", "dlm_square"]


def test_get_set_params_roundtrip():
    m = SparseGP(objective="dlm_log", beta=0.5)
    assert m.get_params()["beta"] == 0.5
    assert m.set_params(beta=2.0).beta == 2.0


@pytest.mark.parametrize("lik_name,X,y,match", [
    ("gaussian", [[0.0], [np.nan]], [1.0, 2.0], "NaN"),
    ("gaussian", [[0.0], [1.0]], [1.0, np.nan], "NaN"),
    ("poisson", [[0.0], [1.0]], [1.0, -2.0], "non-negative integer"),
    ("poisson", [[0.0], [1.0]], [1.0, 2.5], "non-negative integer"),
    ("probit", [[0.0], [1.0]], [0.0, 2.0], "labels"),
    ("gaussian", [[0.0], [1.0]], [1.0, 2.0, 3.0], "one value per row"),
])
def test_input_validation(lik_name, X, y, match):
    with pytest.raises(DataError, match=match):
        SparseGP(likelihood=lik_name, max_iter=2).fit(np.array(X), np.array(y))


def test_config_validation():
    X, y = np.zeros((3, 1)), np.zeros(3)
    with pytest.raises(ConfigError, match="objective"):
        SparseGP(objective="map").fit(X, y)
    with pytest.raises(ConfigError, match="L-BFGS"):
        SparseGP(likelihood="poisson", objective="dlm_log", gradient="bmc", optimizer="lbfgs").fit(X, y)
    with pytest.raises(ConfigError, match="beta"):
        SparseGP(beta=-1.0).fit(X, y)
    with pytest.raises(ConfigError, match="not fitted"):
        SparseGP().predict_latent(X)


def _easy_regression(n=80, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, (n, 1))
    return X, np.sin(X[:, 0]) + 0.1 * rng.standard_normal(n)


def test_adam_convergence_window_stops_early_and_records_it():
    """The paper's rule (Appendix D): stop when the loss's range over the last I steps is <= tol, else at the cap."""
    X, y = _easy_regression()
    # q(u) alone (fixed hyperparameters and inducing inputs): a convex problem that Adam at 0.1 settles
    kw = dict(n_inducing=5, optimizer="adam", learning_rate=0.1, max_iter=3000, random_state=0,
              fit_hyperparameters=False, learn_inducing=False, lengthscale=1.0, noise=0.01)
    gp = SparseGP(convergence_window=20, tol=1e-4, **kw).fit(X, y)
    assert gp.converged_ and 20 <= gp.n_iter_ < 3000
    assert gp.history_.shape == (gp.n_iter_,)
    last = gp.history_[-20:]
    assert last.max() - last.min() <= 1e-4
    if gp.n_iter_ > 20:   # one step earlier the rule did not hold yet
        prev = gp.history_[-21:-1]
        assert prev.max() - prev.min() > 1e-4
    capped = SparseGP(convergence_window=20, tol=0.0, **{**kw, "max_iter": 120}).fit(X, y)
    assert capped.n_iter_ == 120 and not capped.converged_ and capped.history_.shape == (120,)
    plain = SparseGP(**{**kw, "max_iter": 120}).fit(X, y)   # the default: every step, as before
    assert plain.n_iter_ == 120 and plain.converged_
    np.testing.assert_array_equal(plain.history_, capped.history_)
    # L-BFGS ignores the window
    lb = SparseGP(n_inducing=5, max_iter=30, convergence_window=20, tol=1e-6, random_state=0).fit(X, y)
    ref = SparseGP(n_inducing=5, max_iter=30, random_state=0).fit(X, y)
    np.testing.assert_array_equal(lb.predict(X), ref.predict(X))


def test_zero_mean_function_keeps_the_prior_mean_at_zero():
    X, y = _easy_regression()
    y = y + 3.0
    const = SparseGP(n_inducing=5, max_iter=40, random_state=0).fit(X, y)
    zero = SparseGP(n_inducing=5, max_iter=40, mean_function="zero", random_state=0).fit(X, y)
    assert zero.hyperparameters_["mean"] == 0.0 and zero.params_["mean"] == 0.0
    assert abs(const.hyperparameters_["mean"]) > 0.5
    with pytest.raises(ConfigError, match="mean_function='zero'"):
        SparseGP(mean_function="zero", mean=1.0).fit(X, y)
    with pytest.raises(ValueError):
        SparseGP(mean_function="linear").fit(X, y)
    with pytest.raises(ValueError):
        SparseGP(convergence_window=1).fit(X, y)
