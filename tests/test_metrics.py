"""distviz.metrics against direct computations: scipy, Monte Carlo, scikit-learn and brute force."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from scipy.special import gamma as gamma_fn
from sklearn.metrics import average_precision_score, mean_squared_error

from distviz import families as F
from distviz import metrics as M
from distviz.errors import ConfigError, DataError

SETTINGS = settings(max_examples=100, deadline=None)  # hypothesis' default number of examples


def _floats(lo, hi):
    return st.floats(lo, hi, allow_nan=False, allow_infinity=False)


@st.composite
def gaussians(draw, n, P):
    """n random P-variate Gaussians (means (n, P), well-conditioned covariances (n, P, P))."""
    mu = np.array(draw(st.lists(_floats(-3, 3), min_size=n * P, max_size=n * P))).reshape(n, P)
    L = np.array(draw(st.lists(_floats(-1, 1), min_size=n * P * P, max_size=n * P * P))).reshape(n, P, P)
    return mu, L @ L.transpose(0, 2, 1) + 0.3 * np.eye(P)


def _random_cov(rng, n, P):
    L = rng.standard_normal((n, P, P))
    return L @ L.transpose(0, 2, 1) + 0.5 * np.eye(P)


# ---------------------------------------------------------------- NLL, RMSE
def test_nll_weighted_and_log_h():
    fam = F.get("poisson")
    rng = np.random.default_rng(0)
    eta = rng.normal(0, 1, (50, 1))
    y = fam.sample(eta, rng)
    w = rng.uniform(0, 2, 50)
    ref = -stats.poisson.logpmf(y, np.exp(eta[:, 0]))
    assert np.isclose(M.nll("poisson", y, eta), ref.mean())
    assert np.isclose(M.nll(fam, y, eta, sample_weight=w), (w * ref).sum() / w.sum())
    assert np.isclose(M.nll(fam, y, eta, log_h=fam.log_base_measure(y)), ref.mean())
    with pytest.raises(DataError):
        M.nll(fam, y, eta, sample_weight=-w)


def test_nll_mvn_matches_scipy():
    fam = F.get("mvn", P=2)
    rng = np.random.default_rng(1)
    mu, cov = rng.standard_normal((20, 2)), _random_cov(rng, 20, 2)
    eta = fam.from_mean_cov(mu, cov)
    y = fam.sample(eta, rng)
    ref = -np.mean([stats.multivariate_normal.logpdf(y[i], mu[i], cov[i]) for i in range(20)])
    assert np.isclose(M.nll(fam, y, eta), ref)


def test_rmse_matches_sklearn():
    rng = np.random.default_rng(2)
    y, p, w = rng.standard_normal(40), rng.standard_normal(40), rng.uniform(0.1, 1, 40)
    assert np.isclose(M.rmse(y, p), np.sqrt(mean_squared_error(y, p)))
    assert np.isclose(M.rmse(y, p, sample_weight=w), np.sqrt(mean_squared_error(y, p, sample_weight=w)))
    Y, Pm = rng.standard_normal((40, 2)), rng.standard_normal((40, 2))
    assert np.isclose(M.rmse(Y, Pm), np.sqrt(((Y - Pm) ** 2).sum(1).mean()))
    assert np.isclose(M.rmse(Y, Pm, multioutput="pooled"), np.sqrt(mean_squared_error(Y, Pm)))
    np.testing.assert_allclose(M.rmse(Y, Pm, multioutput="raw_values"),
                               np.sqrt(mean_squared_error(Y, Pm, multioutput="raw_values")))
    with pytest.raises(ConfigError):
        M.rmse(Y, Pm, multioutput="nope")
    with pytest.raises(DataError):
        M.rmse(y, p[:-1])


# ---------------------------------------------------------------- KL
@SETTINGS
@given(data=st.data())
def test_kl_matches_exponential_family_bregman(data):
    """Two independent formulas: the closed-form Gaussian KL and the Bregman divergence of the MVN's A."""
    P = data.draw(st.integers(1, 3))
    n = data.draw(st.integers(1, 3))
    mp, Sp = data.draw(gaussians(n, P))
    mt, St = data.draw(gaussians(n, P))
    fam = F.get("mvn", P=P)
    kl_pt = M.kl_pred_true(mp, Sp, mt, St)
    kl_tp = M.kl_true_pred(mp, Sp, mt, St)
    ep, et = fam.from_mean_cov(mp, Sp), fam.from_mean_cov(mt, St)
    scale = 1e-8 * (1 + np.abs(kl_pt) + np.abs(fam.log_partition(ep)) + np.abs(fam.log_partition(et)))
    assert np.all(np.abs(kl_pt - fam.kl(ep, et)) <= scale)
    assert np.all(np.abs(kl_tp - fam.kl(et, ep)) <= scale * (1 + kl_tp))
    assert np.all(kl_pt >= -1e-10) and np.all(kl_tp >= -1e-10)


def test_kl_monte_carlo_and_univariate():
    rng = np.random.default_rng(3)
    mp, mt = np.array([[0.5, -1.0]]), np.array([[0.0, 0.0]])
    Sp, St = np.array([[[1.0, 0.3], [0.3, 0.5]]]), np.array([[[2.0, -0.4], [-0.4, 1.0]]])
    x = rng.multivariate_normal(mp[0], Sp[0], size=200_000)
    mc = np.mean(stats.multivariate_normal.logpdf(x, mp[0], Sp[0]) - stats.multivariate_normal.logpdf(x, mt[0], St[0]))
    assert abs(M.kl_pred_true(mp, Sp, mt, St)[0] - mc) < 0.01
    # univariate: means (n,), variances (n,)
    k = M.kl_pred_true(np.array([1.0]), np.array([4.0]), np.array([0.0]), np.array([1.0]))[0]
    assert np.isclose(k, np.log(1 / 2) + (4 + 1) / 2 - 0.5)
    assert np.isclose(M.kl_true_pred(np.array([1.0]), np.array([4.0]), np.array([0.0]), np.array([1.0]))[0],
                      np.log(2) + (1 + 1) / 8 - 0.5)


# ---------------------------------------------------------------- MMD
def _mmd2_brute(a, b, h):
    def km(u, v):
        return np.mean([[np.exp(-np.sum((x - z) ** 2) / h) for z in v] for x in u])
    return km(a, a) - 2 * km(a, b) + km(b, b)


def test_mmd2_matches_brute_force():
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((3, 6, 2)), rng.standard_normal((3, 5, 2)) + 0.5
    out = M.mmd2(a, b, h=0.7)
    assert out.shape == (3,)
    np.testing.assert_allclose(out, [_mmd2_brute(a[i], b[i], 0.7) for i in range(3)], rtol=1e-12)
    # scalar particles (n, N)
    np.testing.assert_allclose(M.mmd2(a[..., 0], b[..., 0], 0.1), [_mmd2_brute(a[i, :, :1], b[i, :, :1], 0.1) for i in range(3)])
    np.testing.assert_allclose(M.mmd2(a, a, 0.3), 0.0, atol=1e-14)
    with pytest.raises(ConfigError):
        M.mmd2(a, b, h=0.0)


@pytest.mark.parametrize("d", [1, 2])
def test_mmd2_gaussian_closed_form_vs_monte_carlo(d):
    rng = np.random.default_rng(5 + d)
    n, N, Ms, h = 3, 8, 200_000, 0.5
    x = rng.standard_normal((n, N, d))
    mean = rng.standard_normal((n, d)) * 0.5
    cov = _random_cov(rng, n, d) * 0.5
    exact = M.mmd2_gaussian(x, mean, cov, h)
    for i in range(n):
        Y = rng.multivariate_normal(mean[i], cov[i], size=Ms)
        Y2 = rng.multivariate_normal(mean[i], cov[i], size=Ms)
        kxx = M.gaussian_kernel_mean(x[i:i + 1], x[i:i + 1], h)[0]
        cross = np.mean(np.exp(-((x[i][:, None, :] - Y[None, :5000, :]) ** 2).sum(-1) / h))
        kyy = np.mean(np.exp(-((Y - Y2) ** 2).sum(-1) / h))
        assert abs(exact[i] - (kxx - 2 * cross + kyy)) < 0.02
    # univariate call form: particles (n, N), mean (n,), variance (n,) as in WGBoost App. E
    if d == 1:
        np.testing.assert_allclose(M.mmd2_gaussian(x[..., 0], mean[:, 0], cov[:, 0, 0], h), exact)
    # particles drawn from the target have small MMD^2; the closed form is the limit of the V-statistic
    tgt = rng.multivariate_normal(mean[0], cov[0], size=(1, 3000))
    assert M.mmd2_gaussian(tgt, mean[:1], cov[:1], h)[0] < 2e-3


# ---------------------------------------------------------------- prediction regions
@pytest.mark.parametrize("P,level", [(1, 0.9), (2, 0.9), (2, 0.7), (3, 0.5)])
def test_region_coverage_of_true_model_is_nominal(P, level):
    rng = np.random.default_rng(10 + P)
    n = 40_000
    mu = rng.standard_normal((n, P))
    cov = np.repeat(_random_cov(rng, 1, P), n, axis=0)
    y = mu + np.einsum("nij,nj->ni", np.linalg.cholesky(cov), rng.standard_normal((n, P)))
    if P == 1:
        cov_ = cov[:, 0, 0]
        cov_arg, mu_arg, y_arg = cov_, mu[:, 0], y[:, 0]
    else:
        cov_arg, mu_arg, y_arg = cov, mu, y
    cover = M.region_coverage(y_arg, mu_arg, cov_arg, level)
    assert abs(cover - level) < 4 * np.sqrt(level * (1 - level) / n)
    # inflating the prediction shrinks nothing: bigger covariance covers more
    assert M.region_coverage(y_arg, mu_arg, 4 * cov_arg, level) > cover


def test_region_area_formulas():
    q2 = stats.chi2.ppf(0.9, 2)
    cov = np.array([[[2.0, 0.5], [0.5, 1.0]]])
    np.testing.assert_allclose(M.region_area(cov, 0.9), np.pi * q2 * np.sqrt(np.linalg.det(cov)))
    # P = 1: the central interval mu +- z sigma
    np.testing.assert_allclose(M.region_area(np.array([4.0]), 0.9), 2 * stats.norm.ppf(0.95) * 2.0)
    # P = 3: 4/3 pi r^3 for an identity covariance, and the general formula of the drifter paper's code
    q3 = stats.chi2.ppf(0.5, 3)
    np.testing.assert_allclose(M.region_area(np.eye(3)[None], 0.5), 4 / 3 * np.pi * q3 ** 1.5)
    S = np.diag([1.0, 2.0, 3.0, 4.0])[None]
    q4 = stats.chi2.ppf(0.8, 4)
    np.testing.assert_allclose(M.region_area(S, 0.8), 2 * np.pi ** 2 / gamma_fn(2) / 4 * np.sqrt(24.0) * q4 ** 2)
    assert np.isclose(M.mean_region_area(np.repeat(cov, 3, 0), 0.9), M.region_area(cov, 0.9)[0])
    with pytest.raises(ConfigError):
        M.region_area(cov, 1.5)


def test_region_area_monte_carlo_p2():
    # fraction of a bounding box inside the ellipse
    rng = np.random.default_rng(12)
    cov = np.array([[[1.0, 0.6], [0.6, 2.0]]])
    u = rng.uniform(-6, 6, size=(400_000, 2))
    inside = M.in_region(u, np.zeros((len(u), 2)), np.repeat(cov, len(u), 0), 0.9)
    assert abs(inside.mean() * 144 - M.region_area(cov, 0.9)[0]) < 0.1


# ---------------------------------------------------------------- PR-AUC
def test_pr_auc_matches_sklearn():
    rng = np.random.default_rng(13)
    y = rng.integers(0, 2, 200)
    s = y + rng.normal(0, 1, 200)
    w = rng.uniform(0.5, 1.5, 200)
    assert np.isclose(M.pr_auc(y, s), average_precision_score(y, s))
    assert np.isclose(M.pr_auc(y, s, sample_weight=w), average_precision_score(y, s, sample_weight=w))
    assert 0 < M.pr_auc(y, s, method="trapezoid") <= 1
    yk = rng.integers(0, 3, 200)
    S = np.eye(3)[yk] + rng.uniform(0, 1.2, (200, 3))
    ref = np.mean([average_precision_score(yk == k, S[:, k]) for k in range(3)])
    assert np.isclose(M.pr_auc(yk, S), ref)
    with pytest.raises(DataError):
        M.pr_auc(np.array([0, 2]), np.array([0.1, 0.2]))


# ---------------------------------------------------------------- generalised entropy
@pytest.mark.parametrize("name,kw", [("poisson", {}), ("bernoulli", {}), ("normal", {}), ("gamma", {}),
                                     ("exponential", {}), ("categorical", {"K": 3}), ("mvn", {"P": 2})])
def test_generalised_entropy_is_nll_of_exact_leaf_fit(name, kw):
    """Note, 'Entropy and the exact leafwise NLL criterion': refit leaves give NLL - E[-log h] = H_A(P)."""
    fam = F.get(name, **kw)
    rng = np.random.default_rng(14)
    n = 300
    ids = rng.integers(0, 4, n)
    eta_true = fam.project_natural(fam.default_natural(4) + rng.normal(0, 0.3, (4, fam.dim)))
    y = fam.sample(eta_true[ids], rng)
    T = fam.sufficient_stats(y)
    w = rng.uniform(0.5, 2.0, n)
    H = M.generalised_entropy(fam, T, ids, sample_weight=w)
    cells, WJ, means = M.partition_means(T, ids, w)
    eta_leaf = fam.to_natural(means)
    per_row = fam.log_partition(eta_leaf[ids]) - (eta_leaf[ids] * T).sum(1)
    assert np.isclose(H, (w * per_row).sum() / w.sum(), rtol=1e-9, atol=1e-9)
    # any other leaf values do worse (the exact fit is the minimiser)
    worse = fam.log_partition(eta_true[ids]) - (eta_true[ids] * T).sum(1)
    assert (w * worse).sum() / w.sum() >= H - 1e-12
    # a finer partition never increases the entropy
    H_one = M.generalised_entropy(fam, T, np.zeros(n), sample_weight=w)
    assert H <= H_one + 1e-12


def test_generalised_entropy_boundary_cells():
    fam = F.get("poisson")
    T = fam.sufficient_stats(np.array([0.0, 0.0, 3.0, 5.0]))
    # the all-zero leaf has A*(0) = 0
    assert np.isclose(M.generalised_entropy(fam, T, [0, 0, 1, 1]), -0.5 * (4 * np.log(4) - 4))
    nf = F.get("normal")
    T = nf.sufficient_stats(np.array([1.0, 2.0, 3.0]))
    with np.errstate(divide="ignore"):
        assert M.generalised_entropy(nf, T, [0, 1, 1]) == -np.inf
    assert np.isfinite(M.generalised_entropy(nf, T, [0, 1, 1], project=True))
