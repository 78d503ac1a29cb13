"""Exponential-family geometry of distviz.families, checked by hypothesis over random valid parameters.

Properties (mirror_vs_natural_boosting.tex, Sec. 1): to_natural(to_mean(eta)) == eta; Legendre duality
A(eta) + A*(eta*) == <eta, eta*>; fisher == Jacobian of to_mean; inverse_fisher @ fisher == I;
logpdf == scipy.stats; the sample mean of T(y) matches eta*; bad y raises DataError.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from scipy.special import gammaln

from distviz import families as F
from distviz.errors import ConfigError, DataError

SETTINGS = settings(max_examples=100, deadline=None)  # hypothesis' default number of examples
NAMES = ["poisson", "bernoulli", "normal", "gamma", "exponential", "categorical", "mvn"]


def _floats(lo, hi):
    return st.floats(lo, hi, allow_nan=False, allow_infinity=False)


def _vec(draw, n, lo, hi):
    return np.array(draw(st.lists(_floats(lo, hi), min_size=n, max_size=n)))


@st.composite
def family_eta(draw, name):
    """A family (K, P drawn when needed) and a batch of valid natural parameters, built from
    interpretable parameters in well-conditioned ranges."""
    n = draw(st.integers(1, 4))
    if name == "poisson":
        fam = F.get(name)
        eta = _vec(draw, n, -5.0, 5.0)[:, None]
    elif name == "bernoulli":
        fam = F.get(name)
        eta = _vec(draw, n, -8.0, 8.0)[:, None]
    elif name == "normal":
        fam = F.get(name)
        eta = F.Normal.from_mu_sigma(_vec(draw, n, -10, 10), np.exp(_vec(draw, n, -2.5, 2.5)))
    elif name == "gamma":
        fam = F.get(name)
        eta = F.Gamma.from_shape_rate(np.exp(_vec(draw, n, -2.0, 4.5)), np.exp(_vec(draw, n, -4.0, 4.0)))
    elif name == "exponential":
        fam = F.get(name)
        eta = -np.exp(_vec(draw, n, -4.0, 4.0))[:, None]
    elif name == "categorical":
        K = draw(st.integers(2, 5))
        fam = F.get(name, K=K)
        eta = _vec(draw, n * (K - 1), -5.0, 5.0).reshape(n, K - 1)
    else:
        P = draw(st.integers(1, 3))
        fam = F.get(name, P=P)
        mu = _vec(draw, n * P, -3.0, 3.0).reshape(n, P)
        L = _vec(draw, n * P * P, -1.0, 1.0).reshape(n, P, P)
        cov = L @ np.swapaxes(L, 1, 2) + 0.2 * np.eye(P)
        eta = fam.from_mean_cov(mu, cov)
    return fam, eta


def _scale(x):
    return 1.0 + np.abs(x)


@pytest.mark.parametrize("name", NAMES)
@SETTINGS
@given(data=st.data())
def test_dual_coordinates(name, data):
    """Round trip eta -> eta* -> eta, domains, and Legendre duality A + A* = <eta, eta*>."""
    fam, eta = data.draw(family_eta(name))
    assert fam.in_natural_domain(eta).all()
    m = fam.to_mean(eta)
    assert m.shape == eta.shape
    assert fam.in_mean_domain(m).all()
    back = fam.to_natural(m)
    assert np.all(np.abs(back - eta) <= 1e-7 * _scale(eta))
    A, Astar = fam.log_partition(eta), fam.conjugate(m)
    assert A.shape == Astar.shape == (eta.shape[0],)
    tol = 1e-8 * (1.0 + np.abs(A) + np.abs(Astar) + np.abs(eta * m).sum(-1))
    assert np.all(np.abs(A + Astar - (eta * m).sum(-1)) <= tol)


@pytest.mark.parametrize("name", NAMES)
@SETTINGS
@given(data=st.data())
def test_fisher_metric(name, data):
    """fisher == finite-difference Jacobian of to_mean; grad A == to_mean; inverse and solve."""
    fam, eta = data.draw(family_eta(name))
    G = fam.fisher(eta)
    assert G.shape == eta.shape + (fam.dim,)
    np.testing.assert_allclose(G, np.swapaxes(G, 1, 2), rtol=1e-12, atol=1e-12)
    J = np.empty_like(G)
    dA = np.empty_like(eta)
    for k in range(fam.dim):
        h = 1e-6 * _scale(eta[:, k])
        e_plus, e_minus = eta.copy(), eta.copy()
        e_plus[:, k] += h
        e_minus[:, k] -= h
        J[:, :, k] = (fam.to_mean(e_plus) - fam.to_mean(e_minus)) / (2 * h)[:, None]
        dA[:, k] = (fam.log_partition(e_plus) - fam.log_partition(e_minus)) / (2 * h)
    scale = np.abs(G).max(axis=(1, 2), keepdims=True)
    assert np.all(np.abs(J - G) <= 1e-5 * scale + 1e-9)
    m = fam.to_mean(eta)
    assert np.all(np.abs(dA - m) <= 1e-5 * (1 + np.abs(m).max(-1, keepdims=True)))
    # inverse_fisher @ fisher == I, and solve_fisher solves g x = v
    Ginv = fam.inverse_fisher(eta)
    cond = np.linalg.cond(G)[:, None, None]
    assert np.all(np.abs(Ginv @ G - np.eye(fam.dim)) <= 1e-11 * cond + 1e-9)
    v = data.draw(st.lists(_floats(-3, 3), min_size=eta.size, max_size=eta.size))
    v = np.array(v).reshape(eta.shape)
    x = fam.solve_fisher(eta, v)
    assert x.shape == v.shape
    resid = np.einsum("nij,nj->ni", G, x) - v
    assert np.all(np.abs(resid) <= 1e-10 * cond[:, :, 0] * (1 + np.abs(v).max()))


def _scipy_logpdf(fam, y, eta):
    """Reference log-density from scipy.stats (categorical from the direct formula)."""
    if fam.name == "poisson":
        return stats.poisson.logpmf(y, np.exp(eta[:, 0]))
    if fam.name == "bernoulli":
        return stats.bernoulli.logpmf(y, 1.0 / (1.0 + np.exp(-eta[:, 0])))
    if fam.name == "normal":
        mu, var = fam.mean_and_variance(eta)
        return stats.norm.logpdf(y, mu, np.sqrt(var))
    if fam.name == "gamma":
        a, b = eta[:, 0] + 1.0, -eta[:, 1]
        return stats.gamma.logpdf(y, a, scale=1.0 / b)
    if fam.name == "exponential":
        return stats.expon.logpdf(y, scale=-1.0 / eta[:, 0])
    if fam.name == "categorical":
        z = np.concatenate([eta, np.zeros((eta.shape[0], 1))], axis=1)
        p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
        return np.log(p[np.arange(len(y)), y.astype(int)])
    mu, cov = fam.mean_cov(eta)
    return np.array([stats.multivariate_normal.logpdf(y[i], mu[i], cov[i]) for i in range(len(y))])


@pytest.mark.parametrize("name", NAMES)
@SETTINGS
@given(data=st.data())
def test_logpdf_matches_scipy(name, data):
    fam, eta = data.draw(family_eta(name))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    y = fam.sample(eta, rng)
    assert y.shape == ((eta.shape[0], fam.y_dim) if fam.vector_y else (eta.shape[0],))
    y = fam.check_y(y)
    lp = fam.logpdf(y, eta)
    ref = _scipy_logpdf(fam, y, eta)
    np.testing.assert_allclose(lp, ref, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(fam.nll(y, eta, log_h=fam.log_base_measure(y)), -ref, rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize("name", NAMES)
@SETTINGS
@given(data=st.data())
def test_projections_and_kl(name, data):
    """project_* land inside the domains (and fix interior points); KL is a non-negative Bregman divergence."""
    fam, eta = data.draw(family_eta(name))
    # arbitrary points (possibly outside the domains) are projected inside
    raw = np.array(data.draw(st.lists(_floats(-20, 20), min_size=eta.size, max_size=eta.size))).reshape(eta.shape)
    assert fam.in_natural_domain(fam.project_natural(raw)).all()
    pm = fam.project_mean(raw)
    assert fam.in_mean_domain(pm).all()
    assert np.isfinite(fam.to_natural(pm)).all()
    # points well inside do not move
    np.testing.assert_allclose(fam.project_natural(eta), eta, rtol=1e-9, atol=1e-9)
    m = fam.to_mean(eta)
    if fam.name in ("poisson", "exponential", "normal", "mvn", "categorical"):
        np.testing.assert_allclose(fam.project_mean(m), m, rtol=1e-7, atol=1e-9 * _scale(m).max())
    # KL(p || q) is the Bregman divergence of A: >= 0 and 0 at p == q
    kl = fam.kl(eta, eta[::-1])
    assert np.all(kl >= -1e-9 * (1 + np.abs(fam.log_partition(eta)).max()))
    np.testing.assert_allclose(fam.kl(eta, eta), 0.0, atol=1e-9 * (1 + np.abs(fam.log_partition(eta)).max()))


SAMPLE_POINTS = [
    ("poisson", {}, F.Poisson().to_natural(np.array([[0.3], [4.0], [25.0]]))),
    ("bernoulli", {}, np.array([[-2.0], [0.0], [1.5]])),
    ("normal", {}, F.Normal.from_mu_sigma([0.0, -3.0, 10.0], [1.0, 0.2, 4.0])),
    ("gamma", {}, F.Gamma.from_shape_rate([0.5, 2.0, 30.0], [1.0, 0.1, 5.0])),
    ("exponential", {}, np.array([[-0.5], [-1.0], [-10.0]])),
    ("categorical", {"K": 4}, np.array([[0.0, 0.0, 0.0], [1.0, -1.0, 2.0]])),
    ("mvn", {"P": 2}, F.MultivariateNormal(P=2).from_mean_cov(np.array([[1.0, -2.0]]), np.array([[[2.0, 0.8], [0.8, 1.0]]]))),
    ("mvn", {"P": 3}, F.MultivariateNormal(P=3).from_mean_cov(np.array([[0.0, 1.0, 2.0]]),
                                                              np.array([[[1.0, 0.3, -0.2], [0.3, 0.5, 0.1], [-0.2, 0.1, 2.0]]]))),
]


@pytest.mark.parametrize("name,kw,eta", SAMPLE_POINTS, ids=[f"{p[0]}{p[1]}" for p in SAMPLE_POINTS])
def test_sample_mean_of_T_matches_to_mean(name, kw, eta):
    fam = F.get(name, **kw)
    N = 100_000
    rng = np.random.default_rng(1234)
    for i in range(eta.shape[0]):
        rows = np.repeat(eta[i:i + 1], N, axis=0)
        T = fam.sufficient_stats(fam.sample(rows, rng))
        se = np.sqrt(np.diag(fam.fisher(eta[i:i + 1])[0]) / N)
        z = np.abs(T.mean(0) - fam.to_mean(eta[i:i + 1])[0]) / se
        assert np.all(z < 5.0), (name, i, z)
        # the sample covariance of T is the Fisher metric
        np.testing.assert_allclose(np.cov(T.T).reshape(fam.dim, fam.dim), fam.fisher(eta[i:i + 1])[0],
                                   rtol=0.1, atol=0.05 * np.abs(fam.fisher(eta[i:i + 1])[0]).max())


BAD_Y = [
    ("poisson", {}, [1, 2, -1], "y[2] = -1 is negative"),
    ("poisson", {}, [1, 2.5], "y[1] = 2.5 is not an integer"),
    ("poisson", {}, [np.nan, 1], "y[0] = nan is not a finite number"),
    ("poisson", {}, [1, np.inf], "y[1] = inf is not a finite number"),
    ("bernoulli", {}, [0, 1, 2], "y[2] = 2 is not 0 or 1"),
    ("bernoulli", {}, [0, 0.5], "y[1] = 0.5 is not 0 or 1"),
    ("normal", {}, [0.0, -np.inf], "y[1] = -inf is not a finite number"),
    ("normal", {}, [[1.0, 2.0], [3.0, 4.0]], "must be one-dimensional"),
    ("gamma", {}, [1.0, 0.0], "y[1] = 0 is not positive"),
    ("gamma", {}, [-2.0], "y[0] = -2 is not positive"),
    ("exponential", {}, [1.0, -0.1], "y[1] = -0.1 is negative"),
    ("categorical", {"K": 3}, [0, 1, 3], "y[2] = 3 is not a class label in 0..2"),
    ("categorical", {"K": 3}, [0, -1], "y[1] = -1 is not a class label"),
    ("categorical", {"K": 3}, [0, 1.5], "y[1] = 1.5 is not a class label"),
    ("mvn", {"P": 2}, [1.0, 2.0, 3.0], "must have shape (n, 2)"),
    ("mvn", {"P": 2}, [[1.0, 2.0, 3.0]], "must have shape (n, 2)"),
    ("mvn", {"P": 2}, [[1.0, 2.0], [np.nan, 0.0]], "y[1] = [nan, 0] is not a finite number"),
    ("normal", {}, [], "y is empty"),
    ("normal", {}, ["a", "b"], "must be numeric"),
]


@pytest.mark.parametrize("name,kw,y,msg", BAD_Y)
def test_bad_y_raises_dataerror(name, kw, y, msg):
    fam = F.get(name, **kw)
    with pytest.raises(DataError) as err:
        fam.check_y(y)
    text = str(err.value)
    assert msg in text
    assert text.startswith(fam.name)
    assert ";" in text  # says how to fix it


def test_good_y_passes_and_is_float():
    assert F.get("poisson").check_y([0, 3, 7]).dtype == float
    assert F.get("bernoulli").check_y(np.array([True, False])).tolist() == [1.0, 0.0]
    assert F.get("categorical", K=3).check_y([0, 2]).tolist() == [0.0, 2.0]
    assert F.get("mvn", P=2).check_y([[0.0, 1.0]]).shape == (1, 2)
    assert F.get("normal").check_y(np.ones((3, 1))).shape == (3,)


def test_registry_names_aliases_and_errors():
    assert F.available() == ["poisson", "bernoulli", "normal", "gamma", "exponential", "categorical", "mvn"]
    assert isinstance(F.get("gaussian"), F.Normal)
    assert isinstance(F.get("Multivariate-Normal", P=3), F.MultivariateNormal)
    assert F.get("mvn", P=3).dim == 9 and F.get("mvn", P=3).y_dim == 3
    assert F.get("categorical", K=5).dim == 4
    fam = F.get("gamma")
    assert F.get(fam) is fam
    for bad in [lambda: F.get("weibull"), lambda: F.get("poisson", K=3), lambda: F.get("categorical", K=1),
                lambda: F.get("mvn", P=0), lambda: F.get("normal", margin=-1.0)]:
        with pytest.raises(ConfigError):
            bad()
    for name in F.available():
        f = F.get(name)
        assert len(f.param_names) == len(f.natural_names) == len(f.mean_names) == f.dim
        assert f.name in f.describe()
        eta = f.default_natural(3)
        assert eta.shape == (3, f.dim) and f.in_natural_domain(eta).all()


def test_parameter_shape_conventions():
    pois = F.get("poisson")
    assert pois.to_mean(np.array([0.0, 1.0])).shape == (2, 1)  # 1-D is n rows when dim == 1
    norm = F.get("normal")
    assert norm.to_mean(np.array([0.0, -0.5])).shape == (1, 2)  # 1-D is one row otherwise
    with pytest.raises(ConfigError):
        norm.to_mean(np.zeros((3, 3)))


def test_boundary_conjugates_used_by_entropy():
    # leaves whose data sit on the boundary of the mean domain
    assert F.get("poisson").conjugate(np.array([[0.0]]))[0] == 0.0
    np.testing.assert_allclose(F.get("bernoulli").conjugate(np.array([[0.0], [1.0]])), 0.0)
    assert F.get("categorical", K=3).conjugate(np.array([[1.0, 0.0]]))[0] == 0.0
    with np.errstate(divide="ignore"):
        assert F.get("normal").conjugate(np.array([[2.0, 4.0]]))[0] == np.inf
    assert F.get("gamma").conjugate(np.array([[np.log(2.0), 2.0]]))[0] == np.inf
    assert F.get("mvn", P=2).conjugate(np.array([[0.0, 0.0, 1.0, 1.0, 1.0]]))[0] == np.inf


def test_poisson_example_of_the_note():
    # note, 'Poisson example': A(eta) = exp(eta), A*(m) = m log m - m, g(eta) = exp(eta)
    f = F.get("poisson")
    eta = np.array([[np.log(3.0)]])
    np.testing.assert_allclose(f.log_partition(eta), 3.0)
    np.testing.assert_allclose(f.conjugate(np.array([[3.0]])), 3 * np.log(3) - 3)
    np.testing.assert_allclose(f.fisher(eta)[0, 0, 0], 3.0)
    np.testing.assert_allclose(f.log_base_measure(np.array([4.0])), -gammaln(5.0))
    # NLL gradient is eta* - T(y); natural gradient is (lambda - y) / lambda
    np.testing.assert_allclose(f.natural_gradient(np.array([5.0]), eta), [[(3.0 - 5.0) / 3.0]])


def test_mvn_natural_convention_is_exact_quadratic_form():
    f = F.get("mvn", P=3)
    rng = np.random.default_rng(0)
    mu = rng.standard_normal((4, 3))
    L = rng.standard_normal((4, 3, 3))
    cov = L @ L.transpose(0, 2, 1) + np.eye(3)
    eta = f.from_mean_cov(mu, cov)
    y = rng.standard_normal((4, 3))
    lam = np.linalg.inv(cov)
    expected = np.einsum("nij,nj,ni->n", lam, mu, y) - 0.5 * np.einsum("ni,nij,nj->n", y, lam, y)
    np.testing.assert_allclose((eta * f.sufficient_stats(y)).sum(1), expected, rtol=1e-10)
    m2, c2 = f.mean_and_variance(eta)
    np.testing.assert_allclose(m2, mu, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(c2, cov, rtol=1e-10)
    assert f.stat_names[:4] == ("y1", "y2", "y3", "y1*y1")


@SETTINGS
@given(x=st.lists(st.floats(1e-3, 1e6, allow_nan=False), min_size=1, max_size=20))
def test_trigamma_matches_scipy(x):
    from scipy.special import polygamma

    from distviz.families._linalg import trigamma
    x = np.array(x)
    np.testing.assert_allclose(trigamma(x), polygamma(1, x), rtol=1e-13)


def test_spd_kernels_match_numpy_and_flag_bad_rows():
    from distviz.families._linalg import spd_inv_logdet, spd_ok, spd_solve
    rng = np.random.default_rng(5)
    for d in (1, 2, 5, 9):
        L = rng.standard_normal((6, d, d))
        M = L @ L.transpose(0, 2, 1) + 0.1 * np.eye(d)
        M[2] = -np.eye(d)  # not positive definite
        v = rng.standard_normal((6, d))
        x = spd_solve(M, v)
        inv, logdet, ok = spd_inv_logdet(M)
        good = np.arange(6) != 2
        np.testing.assert_allclose(x[good], np.linalg.solve(M[good], v[good][..., None])[..., 0], rtol=1e-9, atol=1e-10)
        np.testing.assert_allclose(inv[good], np.linalg.inv(M[good]), rtol=1e-9, atol=1e-10)
        np.testing.assert_allclose(logdet[good], np.linalg.slogdet(M[good])[1], rtol=1e-10)
        assert np.isnan(x[2]).all() and np.isnan(inv[2]).all() and not ok[2] and ok[good].all()
        assert spd_ok(M).tolist() == good.tolist()
    mvn = F.get("mvn", P=2)
    bad_eta = np.array([[0.0, 0.0, 0.5, 0.0, 0.5]])  # precision -I
    assert not mvn.in_natural_domain(bad_eta)[0]
    assert np.isnan(mvn.to_mean(bad_eta)).all() and np.isnan(mvn.log_partition(bad_eta)).all()


def test_poisson_log_base_measure_table_gives_gammalns_bits():
    """-log y! from the table of small counts is bit for bit -gammaln(y + 1), and other values still go to gammaln."""
    rng = np.random.default_rng(2)
    y = rng.poisson(4.0, 20_000).astype(float)
    y[:6] = [0.0, 1023.0, 1024.0, 5000.0, 2.5, -1.0]
    y[6:9] = [np.nan, np.inf, 1e300]
    got = F.get("poisson").log_base_measure(y)
    want = -gammaln(y + 1.0)
    assert np.array_equal(got.view(np.int64)[9:], want.view(np.int64)[9:])
    np.testing.assert_array_equal(got, want)   # NaN where gammaln gives NaN


def test_finite_rows_equals_numpys_all_over_the_last_axis():
    """finite_rows (column by column for a short last axis) gives np.isfinite(a).all(axis=-1) for every shape."""
    from distviz.families.base import finite_rows

    rng = np.random.default_rng(8)
    for shape in [(50,), (50, 1), (50, 2), (50, 3), (7, 5, 4), (20, 17), (5, 0)]:
        a = rng.normal(size=shape)
        if a.size:
            a.flat[rng.integers(0, a.size, 5)] = np.nan
            a.flat[rng.integers(0, a.size, 3)] = -np.inf
        np.testing.assert_array_equal(finite_rows(a), np.isfinite(a).all(axis=-1))
