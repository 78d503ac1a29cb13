"""The scikit-learn estimator contract (issue 15, item 1): check_estimator, NotFittedError, score, predict.

Every estimator runs scikit-learn's ``check_estimator`` with small, fast settings; the checks it may
fail are listed below with the reason, every other check must pass.  Then: methods used before fit
raise ``distviz.errors.NotFittedError``, parameters are keyword-only and round-trip through
``get_params`` / ``set_params`` / ``clone``, ``score`` is higher-is-better (so ``GridSearchCV``
picks the better learning rate) and ``predict`` is an array (so ``cross_val_score`` works).
"""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError as SklearnNotFittedError
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score
from sklearn.utils.estimator_checks import check_estimator

from distviz.baselines import skGB
from distviz.baselines.mvn_network import MVNNetwork
from distviz.errors import ConfigError, NotFittedError
from distviz.estimators import DistributionalBoosting
from distviz.estimators.ngboost import GB, NGB, IndepNGB, NGBoost
from distviz.estimators.wgboost import WGBoost
from distviz.gp.model import SparseGP
from distviz.trees.tree import HistTree

# small, fast settings: check_estimator fits each estimator a few dozen times
FACTORIES = {
    "DistributionalBoosting": lambda: DistributionalBoosting("normal", n_estimators=5),
    "NGBoost": lambda: NGBoost("normal", n_estimators=5, early_stopping_rounds=None),
    "NGB": lambda: NGB(n_estimators=5, early_stopping_rounds=None),
    "GB": lambda: GB(n_estimators=5, early_stopping_rounds=None),
    "IndepNGB": lambda: IndepNGB(n_estimators=5, early_stopping_rounds=None),
    "skGB": lambda: skGB(n_estimators=5, early_stopping_rounds=None),
    "WGBoost": lambda: WGBoost("normal", n_particles=3, n_estimators=5, init="normal"),
    "SparseGP": lambda: SparseGP(n_inducing=5, max_iter=20),
    "HistTree": lambda: HistTree(),
    "MVNNetwork": lambda: MVNNetwork(hidden_layer_sizes=(5,), max_epochs=5, patience=None),
}

# Failures by design, per estimator.
_BY_DESIGN = {
    # 1-D X is read as one feature (documented in every estimator), so fitting it does not raise
    "*": {"check_fit1d": "1-D X is one feature by design",
          # sparse X is refused with one sentence (distviz/validation.py): the trees bin dense columns
          "check_sample_weight_equivalence_on_sparse_data": "sparse X is refused by design"},
    # a univariate family / chart models one output: a 5-column y is refused with one sentence
    "DistributionalBoosting": {"check_regressor_multioutput": "the normal family models one output (mvn takes 2-D y)"},
    "NGBoost": {"check_regressor_multioutput": "the normal chart models one output (mvn_cholesky takes 2-D y)"},
    # with the plain gradient two near-tied splits are ranked differently by weighted and by repeated-row
    # sums (floating-point order), which moves 2 of 15 test rows; NGB, the same code, passes
    "GB": {"check_sample_weight_equivalence_on_dense_data": "near-tied splits under the plain gradient"},
    # skGB wraps GradientBoostingRegressor, which scikit-learn itself lists as failing this check
    "skGB": {"check_sample_weight_equivalence_on_dense_data": "GradientBoostingRegressor is not weight-equivalent"},
}


def _allowed(name: str) -> dict:
    return {**_BY_DESIGN["*"], **_BY_DESIGN.get(name, {})}


@pytest.mark.parametrize("name", list(FACTORIES))
def test_check_estimator(name):
    """Every scikit-learn check passes except the commented, allowed ones."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(FACTORIES[name](), expected_failed_checks=_allowed(name), on_fail=None,
                                  on_skip=None)
    failed = sorted({f"{r['check_name']}: {type(r['exception']).__name__}: {str(r['exception'])[:200]}"
                     for r in results if r["status"] == "failed"})
    assert not failed, failed
    # an allowed failure that passes is a stale entry: the lists above stay exact
    stale = sorted({r["check_name"] for r in results if r["status"] == "passed" and r["expected_to_fail"]})
    assert not stale, f"remove from the allowed failures: {stale}"
    assert sum(r["status"] == "passed" for r in results) >= 40


# ---------------------------------------------------------------------------------------------
def _data(n=60, P=1, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, (n, 2))
    y = np.sin(X[:, 0])[:, None] + 0.3 * rng.standard_normal((n, P))
    return X, (y[:, 0] if P == 1 else y)


def _call(est, name, X, y):
    """Call a predict / score / staged method with the arguments its signature asks for; drain generators."""
    need = [p for p in inspect.signature(getattr(est, name)).parameters.values()
            if p.default is p.empty and p.kind is p.POSITIONAL_OR_KEYWORD]
    out = getattr(est, name)(*([X, y][: len(need)]))
    if inspect.isgenerator(out):
        out = list(out)
    return out


@pytest.mark.parametrize("name", list(FACTORIES))
def test_methods_before_fit_raise_not_fitted(name):
    """Every predict / score / staged / nll method raises NotFittedError (ConfigError and scikit-learn's) before fit."""
    est = FACTORIES[name]()
    P = 2 if name in ("NGB", "GB", "MVNNetwork") else 1
    X, y = _data(P=P)
    methods = [m for m in dir(est) if m.startswith(("predict", "staged", "score", "nll", "log_predictive", "ood",
                                                    "apply")) and callable(getattr(est, m))]
    assert "predict" in methods
    for m in methods:
        with pytest.raises(NotFittedError, match=r"^This model is not fitted yet; call fit\(X, y\) first\.$"):
            _call(est, m, X, y)
    err = NotFittedError("x")
    assert isinstance(err, ConfigError) and isinstance(err, SklearnNotFittedError)


@pytest.mark.parametrize("name", list(FACTORIES))
def test_params_keyword_only_and_round_trip(name):
    """Parameters after the model-naming one are keyword-only; get_params / set_params / clone round-trip."""
    est = FACTORIES[name]()
    sig = inspect.signature(type(est).__init__)
    positional = [p.name for p in sig.parameters.values()
                  if p.kind is p.POSITIONAL_OR_KEYWORD and p.name != "self"]
    assert positional in ([], ["family"], ["chart"], ["target"], ["likelihood"]), positional
    params = est.get_params()
    c = clone(est)
    assert c.get_params() == params and c is not est
    key = "learning_rate" if "learning_rate" in params else "max_depth"
    c.set_params(**{key: 0.123 if key == "learning_rate" else 5})
    assert c.get_params()[key] == (0.123 if key == "learning_rate" else 5) and est.get_params() == params


def test_family_options_and_positional_family():
    """DistributionalBoosting("poisson", n_estimators=40) works; family options are the family_params dict; law is
    keyword-only; an unknown keyword is a TypeError at construction."""
    m = DistributionalBoosting("categorical", n_estimators=3, family_params={"K": 3})
    assert m.get_params()["family_params"] == {"K": 3} and clone(m).get_params() == m.get_params()
    with pytest.raises(TypeError):
        DistributionalBoosting("poisson", K=3)
    with pytest.raises(TypeError):
        DistributionalBoosting("normal", "mgd")


def test_score_is_mean_log_likelihood_and_predict_is_the_mean():
    """score = minus the mean NLL everywhere; predict returns E[y|x] as an (n,) / (n, P) array."""
    X, y = _data(n=80)
    db = DistributionalBoosting("normal", n_estimators=20).fit(X, y)
    assert db.score(X, y) == pytest.approx(-np.mean(db.nll(X, y)))
    assert db.predict(X).shape == (80,)
    np.testing.assert_allclose(db.predict(X), db.predict_moments(X)["mean"])
    gp = SparseGP(n_inducing=8, max_iter=30).fit(X, y)
    assert gp.score(X, y) == pytest.approx(np.mean(gp.log_predictive(X, y)))
    w = np.random.default_rng(0).uniform(0.5, 2, 80)
    assert gp.score(X, y, sample_weight=w) == pytest.approx(np.average(gp.log_predictive(X, y), weights=w))
    wg = WGBoost("normal", n_particles=4, n_estimators=10, init="normal", random_state=0).fit(X, y)
    assert wg.score(X, y) == pytest.approx(np.mean(wg.predict_logpdf(X, y)))
    X2, Y2 = _data(n=80, P=2)
    ngb = NGB(n_estimators=10, early_stopping_rounds=None).fit(X2, Y2)
    assert ngb.predict(X2).shape == (80, 2)
    np.testing.assert_array_equal(ngb.predict(X2), ngb.predict_dist(X2).mean())
    assert ngb.score(X2, Y2) == pytest.approx(-np.mean(ngb.nll(X2, Y2)))


def test_grid_search_picks_the_better_learning_rate():
    """score is higher-is-better, so GridSearchCV picks lr 0.3 (held-out NLL far lower) over 0.005."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, (300, 2))
    y = rng.poisson(np.exp(1.0 + np.sin(2 * X[:, 0])))
    search = GridSearchCV(DistributionalBoosting("poisson", n_estimators=40), {"learning_rate": [0.005, 0.3]},
                          cv=KFold(3, shuffle=True, random_state=0)).fit(X, y)
    assert search.best_params_ == {"learning_rate": 0.3}
    s = search.cv_results_["mean_test_score"]
    assert s[1] > s[0]
    # the held-out NLL of the chosen model is the lower one
    nll = {lr: np.mean(DistributionalBoosting("poisson", n_estimators=40, learning_rate=lr).fit(X[:200], y[:200])
                        .nll(X[200:], y[200:])) for lr in (0.005, 0.3)}
    assert nll[0.3] < nll[0.005]


@pytest.mark.parametrize("name", ["DistributionalBoosting", "NGB", "IndepNGB", "WGBoost", "SparseGP"])
def test_cross_val_score_with_regression_scorers(name):
    """cross_val_score works with neg_mean_squared_error and r2 (predict is the mean, an array)."""
    est = {"DistributionalBoosting": DistributionalBoosting("normal", n_estimators=20),
           "NGB": NGB(n_estimators=20, learning_rate=0.1, early_stopping_rounds=None),
           "IndepNGB": IndepNGB(n_estimators=20, learning_rate=0.1, early_stopping_rounds=None),
           "WGBoost": WGBoost("normal", n_particles=4, n_estimators=20, init="normal", random_state=0),
           "SparseGP": SparseGP(n_inducing=8, max_iter=40)}[name]
    X, y = _data(n=90, P=2 if name in ("NGB", "IndepNGB") else 1, seed=1)
    cv = KFold(3, shuffle=True, random_state=0)
    for scoring in ("neg_mean_squared_error", "r2"):
        s = cross_val_score(est, X, y, scoring=scoring, cv=cv, error_score="raise")
        assert s.shape == (3,) and np.isfinite(s).all(), (scoring, s)
    assert np.isfinite(cross_val_score(est, X, y, cv=cv, error_score="raise")).all()  # the estimator's own score
