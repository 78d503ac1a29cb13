"""predict_dist on every estimator: the distribution objects against scipy (closed forms) and Monte Carlo.

Every method of every object (mean, var, std, logpdf, cdf, ppf, interval, sample; cov, rho, marginal for the
multivariate Normal) is checked once through ``check_univariate`` / ``check_mvn``: moments and cdf against
draws of ``sample``, the pmf / density against differences / derivatives of the cdf, the quantile convention
(scipy's for discrete laws), and where scipy.stats has the law, every method against it.  The estimators are
small fits shared per module; each one's object is also tied to its own predict / log-likelihood.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

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
    UnivariateDistribution,
)
from distviz.metrics import coverage, crps, pit

N_DRAWS = 20000
QS = np.array([0.05, 0.3, 0.5, 0.8, 0.95])


def check_univariate(d, y=None, seed=0):
    """All methods of a univariate law against Monte Carlo draws and its own cdf (module docstring)."""
    assert isinstance(d, UnivariateDistribution)
    n = len(d)
    m, v, s = d.mean(), d.var(), d.std()
    assert m.shape == v.shape == s.shape == (n,)
    np.testing.assert_allclose(s, np.sqrt(v))
    draws = d.sample(N_DRAWS, random_state=seed)
    assert draws.shape == (N_DRAWS, n)
    np.testing.assert_array_equal(draws, d.sample(N_DRAWS, random_state=seed))   # seeded
    se = np.sqrt(v / N_DRAWS)
    assert np.all(np.abs(draws.mean(0) - m) <= 5 * se + 1e-12), (draws.mean(0), m)
    # the sample variance within 5 standard errors; a discrete law with one rare outcome (a Bernoulli with p near 0)
    # may not draw it at all, so its error is bounded by the theoretical sqrt(v / N) of a unit-spaced rare outcome
    se_var = np.std((draws - draws.mean(0)) ** 2, axis=0) / np.sqrt(N_DRAWS)
    if d.discrete:
        se_var = np.maximum(se_var, np.sqrt(v / N_DRAWS))
    assert np.all(np.abs(draws.var(0) - v) <= 5 * se_var + 1e-12), (draws.var(0), v)
    # quantiles: cdf(ppf(q)) = q (continuous) or the scipy convention for a discrete law
    for q in QS:
        k = d.ppf(q)
        assert k.shape == (n,)
        F = d.cdf(k)
        if d.discrete:
            assert np.all(F >= q - 1e-12)
            assert np.all(d.cdf_left(k) < q + 1e-12)
        else:
            np.testing.assert_allclose(F, q, atol=1e-8)
        # the cdf against the share of draws at or below the quantile
        assert np.all(np.abs(np.mean(draws <= k, axis=0) - F) < 0.02)
    lo, hi = d.interval(0.8)
    np.testing.assert_allclose(lo, d.ppf(0.1), rtol=1e-12)   # (1 - 0.8) / 2 rounds below 0.1
    np.testing.assert_allclose(hi, d.ppf(0.9), rtol=1e-12)
    assert np.all(lo <= hi)
    # log density / mass against the cdf, at the median and at the observed y
    pts = [d.ppf(0.5)] + ([] if y is None else [np.asarray(y, float)])
    for t in pts:
        lp = d.logpdf(t)
        assert lp.shape == (n,)
        if d.discrete:
            np.testing.assert_allclose(np.exp(lp), d.cdf(t) - d.cdf_left(t), atol=1e-12)
        else:
            h = 1e-5 * np.maximum(s, 1e-3)
            np.testing.assert_allclose(np.exp(lp), (d.cdf(t + h) - d.cdf(t - h)) / (2 * h), rtol=1e-4, atol=1e-9)
    # a grid broadcasts against the rows
    assert d.cdf(np.array([[0.0], [1.0]])).shape == (2, n)


def check_model_checks(d, y):
    """pit, coverage and crps run on the object (their values are tested in test_model_checks.py)."""
    n = len(d)
    u = pit(d, y, random_state=0)
    assert u.shape == (n,) and np.all((u >= 0) & (u <= 1))
    c = coverage(d, y, (0.5, 0.9))
    assert c.shape == (2,) and c[0] <= c[1]
    s = crps(d, y, random_state=0)
    assert s.shape == (n,) and np.all(np.isfinite(s)) and np.all(s >= -1e-12)


def check_scipy(d, frozen):
    """A law against the scipy.stats frozen law with the same parameters (closed forms)."""
    logp = frozen.logpmf if d.discrete else frozen.logpdf
    y = frozen.ppf(0.37)
    np.testing.assert_allclose(d.mean(), frozen.mean())
    np.testing.assert_allclose(d.var(), frozen.var())
    np.testing.assert_allclose(d.logpdf(y), logp(y))
    np.testing.assert_allclose(d.cdf(y), frozen.cdf(y))
    np.testing.assert_allclose(d.ppf(0.37), y)
    for a, b in zip(d.interval(0.9), frozen.interval(0.9)):
        np.testing.assert_allclose(a, b)


def check_mvn(d, Y=None, seed=0):
    """A multivariate Normal law against scipy.stats.multivariate_normal and Monte Carlo."""
    assert isinstance(d, MultivariateNormalDist)
    n, P = d.mean().shape
    C = d.cov()
    assert C.shape == (n, P, P)
    np.testing.assert_allclose(d.var(), np.einsum("nii->ni", C))
    np.testing.assert_allclose(d.std(), np.sqrt(d.var()))
    Y = d.mean() + 0.3 * d.std() if Y is None else np.asarray(Y, float).reshape(n, P)
    ref = [stats.multivariate_normal(d.mean()[i], C[i]).logpdf(Y[i]) for i in range(n)]
    np.testing.assert_allclose(d.logpdf(Y), ref, rtol=1e-9)
    draws = d.sample(N_DRAWS, random_state=seed)
    assert draws.shape == (N_DRAWS, n, P)
    se = np.sqrt(d.var() / N_DRAWS)
    assert np.all(np.abs(draws.mean(0) - d.mean()) <= 5 * se + 1e-12)
    emp = np.einsum("kni,knj->nij", draws - d.mean(), draws - d.mean()) / N_DRAWS
    sd = d.std()
    np.testing.assert_allclose(emp / (sd[:, :, None] * sd[:, None, :]), d.corr(), atol=0.05)
    if P >= 2:
        np.testing.assert_allclose(d.rho, d.corr()[:, 0, 1])
        np.testing.assert_allclose(d.rho, C[:, 0, 1] / np.sqrt(C[:, 0, 0] * C[:, 1, 1]))
    m0 = d.marginal(0)
    np.testing.assert_allclose(m0.mean(), d.mean()[:, 0])
    np.testing.assert_allclose(m0.var(), C[:, 0, 0])


# ---------------------------------------------------------------------------------------------- the objects
def test_scipy_laws_match_scipy_and_monte_carlo():
    rng = np.random.default_rng(0)
    cases = [
        (NormalDist([0.0, 2.0, -1.0], [1.0, 0.5, 3.0]), stats.norm([0.0, 2.0, -1.0], [1.0, 0.5, 3.0])),
        (PoissonDist([0.3, 4.0, 25.0]), stats.poisson([0.3, 4.0, 25.0])),
        (BernoulliDist([0.1, 0.5, 0.9]), stats.bernoulli([0.1, 0.5, 0.9])),
        (GammaDist([0.7, 2.0, 9.0], [1.0, 3.0, 0.5]), stats.gamma([0.7, 2.0, 9.0], scale=1 / np.array([1.0, 3.0, 0.5]))),
        (ExponentialDist([0.5, 2.0, 10.0]), stats.expon(scale=1 / np.array([0.5, 2.0, 10.0]))),
    ]
    for d, frozen in cases:
        check_scipy(d, frozen)
        check_univariate(d, y=frozen.rvs(random_state=rng))


def test_categorical_matches_rv_discrete():
    probs = np.array([[0.2, 0.3, 0.5], [0.7, 0.2, 0.1], [0.05, 0.9, 0.05]])
    d = CategoricalDist(probs)
    check_univariate(d, y=np.array([2.0, 0.0, 1.0]))
    for i in range(3):
        r = stats.rv_discrete(values=(np.arange(3), probs[i]))
        assert d.mean()[i] == pytest.approx(r.mean())
        assert d.var()[i] == pytest.approx(r.var())
        for q in (0.1, 0.2, 0.5, 0.95):
            assert d.ppf(q)[i] == r.ppf(q)
        for y in (-1.0, 0.0, 1.5, 2.0, 3.0):
            assert d.cdf(y)[i] == pytest.approx(r.cdf(y))
        assert d.logpdf(1.0)[i] == pytest.approx(r.logpmf(1))
        assert d.interval(0.6)[0][i] == r.interval(0.6)[0] and d.interval(0.6)[1][i] == r.interval(0.6)[1]
    assert np.all(d.logpdf(1.5) == -np.inf) and np.all(d.logpdf(3.0) == -np.inf)


def test_mixtures_and_point_masses():
    loc = np.array([[0.0, 3.0, 3.5], [1.0, 1.0, 1.0]])
    scale = np.array([[1.0, 0.5, 0.2], [0.3, 2.0, 1.0]])
    d = MixtureDist(stats.norm(loc, scale))
    check_univariate(d, y=np.array([2.0, 0.0]))
    y = np.array([0.7, -0.4])
    np.testing.assert_allclose(d.logpdf(y), np.log(stats.norm(loc, scale).pdf(y[:, None]).mean(1)))
    w = np.array([[0.2, 0.3, 0.5]])
    dw = MixtureDist(stats.norm(loc, scale), weights=w)
    np.testing.assert_allclose(dw.mean(), (loc * w).sum(1))
    np.testing.assert_allclose(dw.cdf(y), (stats.norm(loc, scale).cdf(y[:, None]) * w).sum(1))
    check_univariate(MixtureDist(stats.poisson(np.array([[0.5, 6.0], [3.0, 3.0]])), discrete=True), y=np.array([4.0, 0.0]))
    e = EmpiricalDist([[3.0, 1.0, 2.0, 4.0], [0.5, 0.5, 1.0, -1.0]])
    np.testing.assert_array_equal(e.ppf(0.5), [2.0, 0.5])            # the ceil(q N)-th smallest point
    np.testing.assert_array_equal(e.cdf([2.0, 0.5]), [0.5, 0.75])
    np.testing.assert_allclose(np.exp(e.logpdf([2.0, 0.5])), [0.25, 0.5])
    np.testing.assert_array_equal(e.interval(0.5), ([1.0, -1.0], [3.0, 0.5]))
    assert e.ppf(0.0)[0] == -np.inf
    check_univariate(e, y=np.array([2.0, 0.5]))


def test_multivariate_normal_object():
    mean = np.array([[0.0, 1.0], [2.0, -1.0]])
    cov = np.array([[[1.0, 0.6], [0.6, 2.0]], [[0.5, -0.2], [-0.2, 0.3]]])
    d = MultivariateNormalDist(mean, cov)
    check_mvn(d)
    assert d.mean() is d._mean and d.cov() is d._cov   # stored as given (golden predictions unchanged)
    with pytest.raises(Exception, match="two outputs"):
        _ = MultivariateNormalDist(mean[:, :1], cov[:, :1, :1]).rho


# ---------------------------------------------------------------------------------------------- the estimators
def _xy(n=160, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, 2))
    return rng, X


@pytest.fixture(scope="module")
def boosted():
    """One small DistributionalBoosting fit per family: {family: (model, X, y)}."""
    from distviz.estimators import DistributionalBoosting

    rng, X = _xy()
    f = 0.5 * np.sin(X[:, 0])
    ys = {"poisson": rng.poisson(np.exp(1 + f)).astype(float), "bernoulli": (rng.random(len(X)) < 0.5 + 0.3 * f).astype(float),
          "normal": f + rng.normal(0, 0.5, len(X)), "gamma": rng.gamma(3.0, np.exp(f)), "exponential": rng.exponential(np.exp(f)),
          "categorical": rng.integers(0, 3, len(X)).astype(float), "mvn": np.c_[f, -f] + rng.normal(0, 0.5, (len(X), 2))}
    out = {}
    for fam, y in ys.items():
        kw = {"K": 3} if fam == "categorical" else {"P": 2} if fam == "mvn" else {}
        law = "ngd" if fam in ("categorical", "mvn") else "mgd"
        out[fam] = (DistributionalBoosting(fam, law=law, n_estimators=5, learning_rate=0.2, max_depth=2,
                                           family_params=kw).fit(X, y), X, y)
    return out


@pytest.mark.parametrize("family", ["poisson", "bernoulli", "normal", "gamma", "exponential", "categorical", "mvn"])
def test_distributional_boosting(boosted, family):
    m, X, y = boosted[family]
    Xt, yt = X[:12], y[:12]
    d = m.predict_dist(Xt)
    expected = {"poisson": PoissonDist, "bernoulli": BernoulliDist, "normal": NormalDist, "gamma": GammaDist,
                "exponential": ExponentialDist, "categorical": CategoricalDist, "mvn": MultivariateNormalDist}[family]
    assert type(d) is expected
    np.testing.assert_allclose(d.logpdf(yt), -m.nll(Xt, yt), rtol=1e-9, atol=1e-12)
    if family == "mvn":
        np.testing.assert_allclose(d.mean(), m.predict(Xt))
        check_mvn(d, yt)
        check_model_checks(d, yt)
        return
    check_model_checks(d, yt)
    if family == "categorical":
        np.testing.assert_allclose(d.probs, m.predict(Xt))
    else:
        np.testing.assert_allclose(d.mean(), m.predict(Xt))
        np.testing.assert_allclose(d.var(), m.predict_moments(Xt)["variance"])
        check_scipy(d, d.frozen)
    check_univariate(d, yt)
    d3 = m.predict_dist(Xt, max_iter=3)   # the rounds argument as predict_natural's
    assert not np.allclose(d3.logpdf(yt), d.logpdf(yt))


@pytest.fixture(scope="module")
def ngboosts():
    """Small fits of the NGBoost family: {name: (model, X, y)}."""
    from distviz.baselines import MVNNetwork, skGB
    from distviz.estimators import GB, NGB, IndepNGB, NGBoost

    rng, X = _xy(seed=1)
    f = np.sin(X[:, 0])
    Y = np.c_[f, 0.5 * f] + rng.multivariate_normal([0, 0], [[0.3, 0.15], [0.15, 0.3]], len(X))
    kw = {"n_estimators": 6, "learning_rate": 0.3, "early_stopping_rounds": None}
    yp = rng.poisson(np.exp(0.5 + 0.3 * f)).astype(float)
    return {"NGB": (NGB(**kw).fit(X, Y), X, Y), "GB": (GB(**kw).fit(X, Y), X, Y),
            "IndepNGB": (IndepNGB(**kw).fit(X, Y), X, Y),
            "skGB": (skGB(n_estimators=6, early_stopping_rounds=None).fit(X, Y), X, Y),
            "MVNNetwork": (MVNNetwork(hidden_layer_sizes=(8,), max_epochs=5, patience=None, random_state=0).fit(X, Y), X, Y),
            "NGBoost-normal": (NGBoost("normal", **kw).fit(X, Y[:, 0]), X, Y[:, 0]),
            "NGBoost-poisson": (NGBoost("poisson", **kw).fit(X, yp), X, yp)}


@pytest.mark.parametrize("name", ["NGB", "GB", "IndepNGB", "skGB", "MVNNetwork", "NGBoost-normal", "NGBoost-poisson"])
def test_ngboost_family_and_network(ngboosts, name):
    m, X, Y = ngboosts[name]
    Xt, Yt = X[:10], Y[:10]
    d = m.predict_dist(Xt)
    np.testing.assert_allclose(d.logpdf(Yt), -m.nll(Xt, Yt), rtol=1e-8)
    np.testing.assert_allclose(d.mean(), m.predict(Xt))
    check_model_checks(d, Yt)
    if name == "NGBoost-normal":
        assert type(d) is NormalDist
        F = m.predict_params(Xt)
        check_scipy(d, stats.norm(F[:, 0], np.exp(F[:, 1])))
        check_univariate(d, Yt)
    elif name == "NGBoost-poisson":
        assert type(d) is PoissonDist
        check_scipy(d, stats.poisson(np.exp(m.predict_params(Xt)[:, 0])))
        check_univariate(d, Yt)
    else:
        check_mvn(d, Yt)
        if name in ("IndepNGB", "skGB"):
            np.testing.assert_allclose(d.rho, 0.0)
    if hasattr(m, "staged_predict_dist"):
        last = list(m.staged_predict_dist(Xt))[-1]
        np.testing.assert_allclose(last.mean(), d.mean())


@pytest.mark.parametrize("chart", ["gamma", "exponential", "bernoulli", "categorical"])
def test_ngboost_charts_give_their_family_law(chart):
    from distviz.estimators import NGBoost
    from distviz.families import charts

    rng, X = _xy(n=120, seed=4)
    f = 0.4 * np.sin(X[:, 0])
    y = {"gamma": rng.gamma(2.0, np.exp(f)), "exponential": rng.exponential(np.exp(f)),
         "bernoulli": (rng.random(len(X)) < 0.5 + f).astype(float),
         "categorical": rng.integers(0, 3, len(X)).astype(float)}[chart]
    ch = charts.get(chart, K=3) if chart == "categorical" else chart
    m = NGBoost(ch, n_estimators=5, learning_rate=0.3, early_stopping_rounds=None).fit(X, y)
    d = m.predict_dist(X[:10])
    assert type(d) is {"gamma": GammaDist, "exponential": ExponentialDist, "bernoulli": BernoulliDist,
                       "categorical": CategoricalDist}[chart]
    np.testing.assert_allclose(d.logpdf(y[:10]), -m.nll(X[:10], y[:10]), rtol=1e-9)
    check_univariate(d, y[:10])
    check_model_checks(d, y[:10])


@pytest.fixture(scope="module")
def wgboosts():
    """Small WGBoost fits, one per target kind: {name: (model, X, y)}."""
    from distviz.estimators import WGBoost
    from distviz.families.posteriors import gaussian_location_target

    rng, X = _xy(n=80, seed=2)
    f = np.sin(X[:, 0])
    kw = {"n_particles": 5, "n_estimators": 4, "init": "normal", "max_depth": 2, "random_state": 0}
    yc = rng.integers(0, 3, len(X)).astype(float)
    return {"normal": (WGBoost("normal", **kw).fit(X, f + rng.normal(0, 0.3, len(X))), X, None),
            "poisson": (WGBoost("poisson", **kw).fit(X, rng.poisson(np.exp(f)).astype(float)), X, None),
            "categorical": (WGBoost("categorical", **kw).fit(X, yc), X, yc),
            "location": (WGBoost(gaussian_location_target(0.5), **kw).fit(X, f), X, None)}


@pytest.mark.parametrize("name", ["normal", "poisson", "categorical", "location"])
def test_wgboost_particle_laws(wgboosts, name):
    m, X, y = wgboosts[name]
    Xt = X[:8]
    d = m.predict_dist(Xt)
    P = m.predict_particles(Xt)
    if name == "location":
        assert type(d) is EmpiricalDist
        np.testing.assert_array_equal(d.points, np.sort(P[..., 0], axis=1))
        np.testing.assert_allclose(d.mean(), m.predict(Xt)[:, 0])   # a location target predicts (n, 1)
        check_univariate(d, P[:, 0, 0])
        check_model_checks(d, P[:, 0, 0])
        return
    if name == "categorical":
        assert type(d) is CategoricalDist
        np.testing.assert_allclose(d.probs, m.predict(Xt))
        check_univariate(d, y[:8])
        np.testing.assert_allclose(d.logpdf(y[:8]), m.predict_logpdf(Xt, y[:8]), rtol=1e-9)
        check_model_checks(d, y[:8])
        return
    assert type(d) is MixtureDist and d.n_components == P.shape[1]
    np.testing.assert_allclose(d.mean(), m.predict(Xt))
    yt = np.round(d.ppf(0.6))
    np.testing.assert_allclose(d.logpdf(yt), m.predict_logpdf(Xt, yt), rtol=1e-9)
    grid = np.arange(0.0, 6.0) if name == "poisson" else np.linspace(-2, 2, 5)
    np.testing.assert_allclose(np.exp(d.logpdf(grid[:, None])).T, m.predict_density(Xt, grid), rtol=1e-9)
    check_univariate(d, yt)
    check_model_checks(d, yt)


@pytest.fixture(scope="module")
def gps():
    """Small sparse-GP fits per likelihood: {likelihood: (model, X, y)}."""
    pytest.importorskip("autograd")
    from distviz.gp import SparseGP

    rng, X = _xy(n=60, seed=3)
    f = np.sin(X[:, 0])
    ys = {"gaussian": f + rng.normal(0, 0.3, len(X)), "probit": (f + rng.normal(0, 0.5, len(X)) > 0).astype(float),
          "poisson": rng.poisson(np.exp(f)).astype(float)}
    ys["logistic"] = ys["probit"]
    return {k: (SparseGP(k, n_inducing=6, max_iter=15, random_state=0).fit(X, y), X, y) for k, y in ys.items()}


@pytest.mark.parametrize("lik", ["gaussian", "probit", "logistic", "poisson"])
def test_sparse_gp_predictive(gps, lik):
    m, X, y = gps[lik]
    Xt, yt = X[:10], y[:10]
    d = m.predict_dist(Xt)
    assert type(d) is {"gaussian": NormalDist, "probit": BernoulliDist, "logistic": BernoulliDist,
                       "poisson": MixtureDist}[lik]
    np.testing.assert_allclose(d.mean(), m.predict(Xt), rtol=1e-6)
    np.testing.assert_allclose(d.logpdf(yt), m.log_predictive(Xt, yt), rtol=1e-6, atol=1e-9)
    if lik != "poisson":
        check_scipy(d, d.frozen)
    check_univariate(d, yt)
    check_model_checks(d, yt)
