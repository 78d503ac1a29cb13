"""The estimators' shared contract (distviz.contract, issue 28): unknown keywords, parameter constraints, feature names.

Every estimator fitted on a pandas DataFrame keeps the column names end to end: ``feature_names_in_``, the trace
(its ``feature`` coordinate and ``feature_names`` attribute), the node table of the Split-gains page
(``distviz.viz.trees.top_splits``) and the model file; predicting on an array warns as scikit-learn does, and
columns renamed since the fit are one DataError sentence.  The fits are tiny and shared by module fixtures.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.utils._param_validation import InvalidParameterError

from distviz.baselines import skGB
from distviz.baselines.mvn_network import MVNNetwork
from distviz.boosting import DistributionalBoosting
from distviz.boosting.ngboost import GB, NGB, IndepNGB, NGBoost
from distviz.boosting.wgboost import WGBoost
from distviz.contract import ParameterError
from distviz.errors import ConfigError, DataError
from distviz.gp.model import SparseGP

NAMES = ["alpha", "beta"]

#: name -> (small estimator, number of outputs of y)
MAKERS = {
    "DistributionalBoosting": (lambda: DistributionalBoosting("normal", n_rounds=3, validation_fraction=0.25), 1),
    "NGBoost": (lambda: NGBoost("normal", n_estimators=3, early_stopping_rounds=None), 1),
    "NGB": (lambda: NGB(n_estimators=3, early_stopping_rounds=2), 2),
    "GB": (lambda: GB(n_estimators=3, early_stopping_rounds=None), 2),
    "IndepNGB": (lambda: IndepNGB(n_estimators=3, early_stopping_rounds=None), 2),
    "skGB": (lambda: skGB(n_estimators=3, early_stopping_rounds=None), 2),
    "WGBoost": (lambda: WGBoost("normal", n_particles=3, n_rounds=3, init="normal", random_state=0), 1),
    "SparseGP": (lambda: SparseGP(n_inducing=4, max_iter=5), 1),
    "MVNNetwork": (lambda: MVNNetwork(hidden_layer_sizes=(3,), max_epochs=2, patience=None), 2),
}


def _frame(n=60, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.uniform(-2, 2, (n, 2)), columns=NAMES)
    y = np.sin(X["alpha"].to_numpy())[:, None] + 0.3 * rng.standard_normal((n, 2))
    return X, y


@pytest.fixture(scope="module")
def fitted():
    X, y = _frame()
    out = {}
    for name, (make, P) in MAKERS.items():
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)   # fitting on a DataFrame warns about no names
            out[name] = make().fit(X, y[:, 0] if P == 1 else y)
    return out, X


@pytest.mark.parametrize("name", list(MAKERS))
def test_unknown_keyword_is_a_type_error_at_construction(name):
    cls = type(MAKERS[name][0]())
    with pytest.raises(TypeError, match="unexpected keyword argument 'n_bogus'"):
        cls(n_bogus=3)


def test_parameter_constraints_are_config_errors_and_sklearns():
    X, y = _frame(20)
    for est in (DistributionalBoosting(max_depth=0), NGB(tree_mode="mixed"), WGBoost("normal", method="x"),
                SparseGP(beta=-1.0), MVNNetwork(activation="sigmoid"), skGB(backend="x"),
                DistributionalBoosting(learning_rate=True)):
        with pytest.raises(ParameterError) as e:
            est.fit(X, y)
        assert isinstance(e.value, ConfigError) and isinstance(e.value, InvalidParameterError)
        assert "\n" not in str(e.value)


@pytest.mark.parametrize("name", list(MAKERS))
def test_feature_names_end_to_end(name, fitted, tmp_path):
    models, X = fitted
    m = models[name]
    assert list(m.feature_names_in_) == NAMES and m.n_features_in_ == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pred = m.predict(X)
    with pytest.warns(UserWarning, match="does not have valid feature names"):
        np.testing.assert_array_equal(m.predict(X.to_numpy()), pred)
    with pytest.raises(DataError, match="feature names of X should match.*unseen in fit: gamma"):
        m.predict(X.rename(columns={"beta": "gamma"}))
    trace = getattr(m, "trace_", None)
    if trace is not None:
        assert list(trace["feature"].values) == NAMES
    if name == "DistributionalBoosting":
        from distviz.viz import trees as vt

        assert vt.trace_feature_names(trace) == NAMES
        assert set(vt.top_splits(trace, 5)["feature"]) <= set(NAMES)
    if name in ("DistributionalBoosting", "IndepNGB", "WGBoost", "MVNNetwork"):   # every file layout once
        m.save(tmp_path / "m.nc")
        back = type(m).load(tmp_path / "m.nc")
        assert list(back.feature_names_in_) == NAMES
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            np.testing.assert_array_equal(back.predict(X), pred)


def test_eval_set_takes_a_frame_and_checks_its_columns():
    X, y = _frame()
    m = NGBoost("normal", n_estimators=3, early_stopping_rounds=2).fit(X[:40], y[:40, 0],
                                                                       eval_set=(X[40:], y[40:, 0]))
    assert list(m.feature_names_in_) == NAMES and m.valid_loss_.size == 4
    with pytest.raises(DataError, match="X_val has 1 features"):
        NGBoost("normal", n_estimators=3).fit(X[:40], y[:40, 0], eval_set=(X[40:][["alpha"]], y[40:, 0]))
    with pytest.raises(ConfigError, match="eval_set must be a pair"):
        DistributionalBoosting(n_rounds=2).fit(X, y[:, 0], eval_set=(X,))
