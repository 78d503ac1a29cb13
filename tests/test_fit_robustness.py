"""Issue 14, item 4 (library side): fits end in a result or one sentence, never a traceback or a silent NaN.

NKA on the normal and Poisson targets, WGBoost and law fault counters, a constant GP target, Normal / Gamma
targets whose spread is tiny against their level, and numeric parameters passed as text.
"""

import numpy as np
import pytest

from distviz.boosting import wg_kernels as K
from distviz.boosting.engine import BoostingEngine
from distviz.boosting.laws import make_law
from distviz.data.synthetic import make_normal, make_poisson
from distviz.errors import ConfigError, DataError
from distviz.estimators import DistributionalBoosting, WGBoost
from distviz.estimators.ngboost import NGBoost
from distviz.families import get
from distviz.families.posteriors import CallableTarget, gaussian_location_target
from distviz.gp import SparseGP


@pytest.fixture(scope="module")
def normal_data():
    d = make_normal(n=200, p=1, random_state=0)
    return d.X, d.y


def test_nka_fits_the_normal_target_and_app_e(normal_data):
    X, y = normal_data
    for lr in (0.01, 0.5):   # every rate diverged at round 2 before the eq. 17 solve was regularised
        est = WGBoost("normal", method="nka", n_estimators=25, learning_rate=lr, init_rounds=200, random_state=0).fit(X, y)
        nll = est.trace_["train_nll"].values
        assert est.n_iter_ == 25 and np.all(np.isfinite(nll)) and nll[-1] < nll[0]
        assert est.trace_.attrs["stop_reason"] == ""
        assert np.all(np.isfinite(est.predict_density(X[:3], np.linspace(-5, 5, 11))))
    # App. E (200 inputs, N = 10, h = 0.1, depth 3, lr 0.1): the ridge leaves the paper's figure intact
    Xe = np.linspace(-3.5, 3.5, 200)[:, None]
    est = WGBoost(gaussian_location_target(0.5), method="nka", n_estimators=50, init=np.linspace(-10, 10, 10)[:, None],
                  max_bins="exact", random_state=1).fit(Xe, np.sin(Xe[:, 0]))
    P = est.predict_particles(Xe)
    assert float(K.mmd2_gaussian_rows(P, np.sin(Xe[:, 0]), np.full(200, 0.5), 0.025).mean()) < 0.01


def test_nka_poisson_with_30_particles_and_coinciding_particles():
    d = make_poisson(n=500, p=1, random_state=0)
    est = WGBoost("poisson", method="nka", n_particles=30, n_estimators=20, max_depth=6, learning_rate=1.0,
                  init_rounds=1000, random_state=0).fit(d.X, d.y)
    nll = est.trace_["train_nll"].values
    assert np.all(np.isfinite(nll)) and nll[-1] < nll[0]
    assert est.trace_["n_projected"].values.sum() > 0   # lr 1.0: the trust region damped some steps
    # identical particles make every kernel block rank one: the unregularised solve is singular
    theta = np.zeros((4, 6, 1))
    G, H = np.ones((4, 6, 1)), -np.ones((4, 6, 1, 1))
    v = K.nka_direction(theta, G, H, 0.1)
    assert np.all(np.isfinite(v))


def test_wgboost_trace_counts_nonfinite_directions_and_keeps_fitting(normal_data):
    X, y = normal_data
    bad = y > np.quantile(y, 0.9)   # these rows' gradient is NaN: they get no update, the rest fit

    def grad(theta, yy):
        g = -theta + yy[:, :1, None]
        g[yy[:, 0] > np.quantile(y, 0.9)] = np.nan
        return g

    tgt = CallableTarget(grad, hess_diag=lambda t, yy: -np.ones_like(t), d=1)
    est = WGBoost(tgt, n_estimators=5, init="zeros", random_state=0).fit(X, y)
    tr = est.trace_
    for name in ("n_projected", "n_nonfinite"):
        assert tr[name].dims == ("round",) and tr[name].shape == (6,)
    assert list(tr["n_nonfinite"].values[1:]) == [int(bad.sum())] * 5
    assert tr.attrs["stop_reason"] == ""
    every = CallableTarget(lambda t, yy: np.full_like(t, np.nan), hess_diag=lambda t, yy: -np.ones_like(t), d=1)
    est = WGBoost(every, n_estimators=5, init="zeros").fit(X, y)
    assert est.n_iter_ == 0 and "learning_rate" in est.trace_.attrs["stop_reason"]
    assert "ska" not in est.trace_.attrs["stop_reason"]


def test_law_trace_flags_a_round_that_makes_the_nll_nonfinite():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 1))
    y = 3 + X[:, 0] + rng.normal(size=300)
    law = make_law("ngd", get("normal"))
    loss, calls = law.loss, []

    def nan_from_round_6(F, data):   # NaN after a few rounds (the law may call loss more than once per round)
        calls.append(1)
        out = loss(F, data)
        return out if len(calls) <= 6 else np.full_like(out, np.nan)

    law.loss = nan_from_round_6
    res = BoostingEngine(law, n_rounds=20, learning_rate=0.1).fit(X, y)
    assert 0 < res.n_rounds < 20 and f"round {res.n_rounds + 1} made" in res.stop_reason
    assert "non-finite" in res.stop_reason
    assert np.all(np.isfinite(res.train_loss)) and len(res.n_nonfinite) == res.n_rounds + 1
    m = DistributionalBoosting("normal", n_estimators=3, random_state=0).fit(X, y)
    assert m.trace_["n_nonfinite"].values.tolist() == [0, 0, 0, 0] and m.trace_.attrs["stop_reason"] == ""


def test_sparse_gp_constant_target_is_one_sentence():
    X = np.linspace(0, 1, 60)[:, None]
    with pytest.raises(DataError, match="constant") as e:
        SparseGP(n_inducing=10, max_iter=100, random_state=0).fit(X, np.full(60, 3.0))
    assert "\n" not in str(e.value) and "Error" not in str(e.value)
    m = SparseGP(likelihood="poisson", n_inducing=10, max_iter=100, random_state=0).fit(X, np.full(60, 2.0))
    assert np.allclose(m.predict(X[:3]), 2.0, rtol=0.05)


@pytest.mark.parametrize("family", ["normal", "gamma"])
def test_tiny_spread_against_the_level_is_refused_and_scale_is_free(family):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 1))
    e = np.abs(X[:, 0] + rng.normal(size=300)) + 1.0
    for level in (1e12, 1e-12):
        with pytest.raises(DataError, match="too little") as err:   # NaN NLL and NaN NGD means before
            DistributionalBoosting(family, law="ngd", n_estimators=5).fit(X, level * (1 + 1e-9 * e))
        assert "\n" not in str(err.value)
        # a target near 1e12 / 1e-12 with an ordinary spread fits as y / level does: finite NLL shifted by
        # log(level) (equal up to the trees' scale-dependent split thresholds)
        kw = dict(law="ngd", n_estimators=10, validation_fraction=0.2, random_state=0)
        big = DistributionalBoosting(family, **kw).fit(X, level * e)
        unit = DistributionalBoosting(family, **kw).fit(X, e)
        shifted = big.trace_["train_nll"].values - np.log(level)
        assert np.all(np.isfinite(big.trace_["valid_nll"].values)) and big.trace_.attrs["stop_reason"] == ""
        np.testing.assert_allclose(shifted, unit.trace_["train_nll"].values, atol=0.05)
        assert np.all(np.isfinite(big.predict_mean(X[:5])))


def test_ngboost_tiny_normal_target_is_refused():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 1))
    with pytest.raises(DataError, match="multiply y"):
        NGBoost(chart="normal", n_estimators=5).fit(X, 1e-12 * (X[:, 0] + rng.normal(size=100)))


@pytest.mark.parametrize("make", [
    lambda **kw: DistributionalBoosting("normal", n_estimators=2, **kw),
    lambda **kw: WGBoost("normal", n_estimators=2, init_rounds=5, **kw),
    lambda **kw: NGBoost(chart="normal", n_estimators=2, **kw),
    lambda **kw: SparseGP(n_inducing=5, max_iter=5, **kw),
], ids=["laws", "wgboost", "ngboost", "sparse_gp"])
def test_numeric_parameters_given_as_text_are_one_config_sentence(make):
    X = np.random.default_rng(0).normal(size=(40, 1))
    y = X[:, 0] + 1.0
    for bad in ("0.1", None, True, float("nan")):
        with pytest.raises(ConfigError, match="learning_rate") as e:
            make(learning_rate=bad).fit(X, y)
        assert "\n" not in str(e.value)
    with pytest.raises(ConfigError, match="pass a number"):
        make(learning_rate="0.1").fit(X, y)


def test_whole_number_parameters_given_as_text_say_to_drop_the_quotes():
    X = np.random.default_rng(0).normal(size=(40, 1))
    for name in ("n_particles", "n_estimators", "max_depth", "init_rounds"):
        with pytest.raises(ConfigError, match=f"'{name}' parameter of WGBoost must be an int.*without quotes"):
            WGBoost("normal", **{name: "10"}).fit(X, X[:, 0])
    with pytest.raises(ConfigError, match="'max_depth' parameter of DistributionalBoosting must be an int.*without quotes"):
        DistributionalBoosting("normal", max_depth="3").fit(X, X[:, 0])
    with pytest.raises(ConfigError, match="'n_estimators' parameter of NGBoost must be an int.*without quotes"):
        NGBoost(chart="normal", n_estimators="5").fit(X, X[:, 0])
