"""Square-loss DLM with m in closed form (dlm_sparse_gp.txt Section 2 and Appendix D; distviz.gp.square_dlm).

The closed-form m against a dense ridge solve in the unwhitened coordinates; the profiled objective against the
joint objective of distviz.gp.objectives at that m (equal value, zero gradient in m, equal gradient in the
hyperparameters: the envelope theorem); the docs' statement that the objective keeps falling as the kernel
variance grows.
"""

import numpy as np
import pytest

from distviz.gp import SparseGP
from distviz.gp import objectives as obj
from distviz.gp.kernels import rbf
from distviz.gp.likelihoods import make_likelihood
from distviz.gp.square_dlm import SquareDLMObjective, profile_objective

pytestmark = pytest.mark.usefixtures("single_thread_blas")


def _data(n=40, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, (n, 2))
    return X, np.sin(X[:, 0]) + 0.5 * X[:, 1] + 0.2 * rng.normal(size=n)


@pytest.mark.parametrize("optimizer", ["lbfgs", "adam"])
@pytest.mark.parametrize("beta", [0.5, 7.0])
def test_fixed_variant_is_one_closed_form_step_equal_to_the_dense_ridge_solution(optimizer, beta):
    X, y = _data()
    model = SparseGP(objective="dlm_square", beta=beta, n_inducing=7, fit_hyperparameters=False, learn_inducing=False,
                     optimizer=optimizer, convergence_window=20, tol=1e-4, random_state=0).fit(X, y)
    assert model.n_iter_ == 0 and model.converged_
    p = model.params_
    Xs = (X - model.x_mean_) / model.x_scale_
    ell, sf2, c = np.exp(p["log_ell"]), float(np.exp(p["log_sf2"])), float(p["mean"])
    Kuu = rbf(p["Z"], p["Z"], ell, sf2) + model.jitter * sf2 * np.eye(7)
    Kuf = rbf(p["Z"], Xs, ell, sf2)
    # argmin_m 1/2 |K_fu K_uu^-1 m - r|^2 + beta/2 m^T K_uu^-1 m: m = K_uu a, (K_uf K_fu + beta K_uu) a = K_uf r
    m = Kuu @ np.linalg.solve(Kuf @ Kuf.T + beta * Kuu, Kuf @ (y - c))
    m_fit, S_fit = model.q_u_
    np.testing.assert_allclose(m_fit - c, m, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(S_fit, Kuu, rtol=1e-8, atol=1e-12)   # S = K_uu: the KL's S-part at its minimum
    r = Kuf.T @ np.linalg.solve(Kuu, m) - (y - c)
    expected = (0.5 * r @ r + 0.5 * beta * m @ np.linalg.solve(Kuu, m)) / len(y)
    assert model.objective_ == pytest.approx(expected, rel=1e-10)


def test_profile_matches_the_joint_objective_at_its_closed_form_m():
    X, y = _data(seed=1)
    Xs = (X - X.mean(0)) / X.std(0)
    rng = np.random.default_rng(3)
    hyp = {"Z": Xs[rng.choice(len(y), 6, replace=False)] + 0.1, "log_ell": np.array([0.2]), "log_sf2": np.array(0.4),
           "mean": np.array(0.3)}
    pb = obj.Problem(Xs, y, make_likelihood("gaussian"), "dlm_square", beta=2.0, jitter=1e-6,
                     fixed={"lik": np.array([np.log(0.1)])})
    prof = SquareDLMObjective(pb, dict(hyp, m=np.zeros(6), Lw=np.zeros((6, 6))))
    val, g = prof(prof.flat0)
    p = prof.params(prof.flat0)
    joint = obj.Objective(pb, {k: p[k] for k in ("Z", "log_ell", "log_sf2", "mean", "m", "Lw")})
    jval, jg = joint(joint.unflatten.flatten(p))
    assert val == pytest.approx(jval, rel=1e-10)
    jgrad = joint.unflatten(jg)
    np.testing.assert_allclose(jgrad["m"], 0.0, atol=1e-10)     # m* is the minimiser in m
    np.testing.assert_allclose(jgrad["Lw"], 0.0, atol=1e-10)    # and L_w = I in the factor
    pgrad = prof.unflatten(g)
    for k in ("Z", "log_ell", "log_sf2", "mean"):                # the envelope theorem
        np.testing.assert_allclose(pgrad[k], jgrad[k], rtol=1e-6, atol=1e-10)


def test_the_objective_keeps_falling_as_the_kernel_variance_grows():
    """docs/user_guide/sparse_gp.rst: the joint variant has no minimum in the variance."""
    X, y = _data(seed=2)
    Xs = (X - X.mean(0)) / X.std(0)
    p = {"Z": Xs[:6], "log_ell": np.array([0.0]), "mean": np.array(0.0)}
    vals = [float(profile_objective(dict(p, log_sf2=np.array(s)), Xs, y, 1.0, 1e-6)) for s in np.linspace(-2, 12, 15)]
    assert np.all(np.diff(vals) < 0)
    # and the joint fit's variance runs away from its start
    model = SparseGP(objective="dlm_square", n_inducing=6, max_iter=60, random_state=0).fit(X, y)
    assert model.hyperparameters_["variance"] > 100 * np.var(y)


def test_minibatches_and_other_likelihoods_keep_the_joint_form():
    X, y = _data(seed=4)
    mb = SparseGP(objective="dlm_square", n_inducing=5, batch_size=20, max_iter=30, random_state=0).fit(X, y)
    assert mb.n_iter_ == 30 and np.isfinite(mb.objective_)
    counts = np.random.default_rng(0).poisson(np.exp(0.3 * X[:, 0]))
    pois = SparseGP("poisson", objective="dlm_square", n_inducing=5, max_iter=30, random_state=0).fit(X, counts)
    assert np.all(np.isfinite(pois.predict(X)))
    assert not np.allclose(obj.lower(pois.params_["Lw"]), np.eye(5))   # S is optimised there


def test_joint_fit_replays_its_path_and_round_trips_through_a_file(tmp_path):
    X, y = _data(seed=5)
    model = SparseGP(objective="dlm_square", n_inducing=6, max_iter=15, random_state=0).fit(X, y)
    assert model.history_[-1] < model.history_[0]
    np.testing.assert_allclose(model.at_iteration(len(model.path_) - 1).predict(X), model.predict(X), atol=1e-12)
    assert not np.allclose(model.at_iteration(0).predict(X), model.predict(X))
    model.save(tmp_path / "sq.nc")
    back = SparseGP.load(tmp_path / "sq.nc")
    np.testing.assert_array_equal(back.predict(X), model.predict(X))
    np.testing.assert_array_equal(back.predict_dist(X).var(), model.predict_dist(X).var())
