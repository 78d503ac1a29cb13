"""The estimators' shared contract (distviz.contract, issue 28): unknown keywords, parameter constraints, feature names.

Every estimator fitted on a pandas DataFrame keeps the column names end to end: ``feature_names_in_``, the trace
(its ``feature`` coordinate), the node table of the Split-gains page
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
from distviz.contract import ParameterError
from distviz.errors import ConfigError, DataError
from distviz.estimators import DistributionalBoosting
from distviz.estimators.ngboost import GB, NGB, IndepNGB, NGBoost
from distviz.estimators.wgboost import WGBoost
from distviz.gp.model import SparseGP

NAMES = ["alpha", "beta"]

#: name -> (small estimator, number of outputs of y)
MAKERS = {
    "DistributionalBoosting": (lambda: DistributionalBoosting("normal", n_estimators=3, validation_fraction=0.25), 1),
    "NGBoost": (lambda: NGBoost("normal", n_estimators=3, early_stopping_rounds=None), 1),
    "NGB": (lambda: NGB(n_estimators=3, early_stopping_rounds=2), 2),
    "GB": (lambda: GB(n_estimators=3, early_stopping_rounds=None), 2),
    "IndepNGB": (lambda: IndepNGB(n_estimators=3, early_stopping_rounds=None), 2),
    "skGB": (lambda: skGB(n_estimators=3, early_stopping_rounds=None), 2),
    "WGBoost": (lambda: WGBoost("normal", n_particles=3, n_estimators=3, init="normal", random_state=0), 1),
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
        DistributionalBoosting(n_estimators=2).fit(X, y[:, 0], eval_set=(X,))


def _rewrite(path, out, params=None, fitted=None, rename_vars=None):
    """Copy a model file with its params / fitted JSON changed (a file as an older distviz wrote it)."""
    import json

    import xarray as xr

    from distviz.modelfile import engine

    with xr.open_dataset(path, engine=engine()) as ds0:
        ds = ds0.load()
    for key, change in (("distviz_params", params), ("distviz_fitted", fitted)):
        if change is not None:
            ds.attrs[key] = json.dumps(change(json.loads(ds.attrs[key])))
    ds = ds.rename(rename_vars or {})
    ds.to_netcdf(out, engine=engine())


def test_model_files_with_the_names_before_issue_28_still_load(tmp_path):
    """n_rounds / display_size / family options as keywords / best_round in a file read as today's names."""
    X, y = _frame(40)
    db = DistributionalBoosting("categorical", n_estimators=3, family_params={"K": 3}).fit(X, np.arange(40) % 3)
    db.save(tmp_path / "db.nc")

    def old_db(p):
        p = {**p, "n_rounds": p.pop("n_estimators"), **p.pop("family_params")}
        return p

    _rewrite(tmp_path / "db.nc", tmp_path / "db_old.nc", old_db,
             lambda f: {**{k: v for k, v in f.items() if k != "n_iter"}, "n_rounds": f["n_iter"]})
    back = DistributionalBoosting.load(tmp_path / "db_old.nc")
    assert back.n_estimators == 3 and back.family_params == {"K": 3} and back.n_iter_ == 3
    np.testing.assert_array_equal(back.predict_mean(X), db.predict_mean(X))

    wg = WGBoost("normal", n_particles=3, n_estimators=3, init="normal", trace_rows=7).fit(X.to_numpy(), y[:, 0])
    wg.save(tmp_path / "wg.nc")
    _rewrite(tmp_path / "wg.nc", tmp_path / "wg_old.nc",
             lambda p: {**{k: v for k, v in p.items() if k not in ("n_estimators", "trace_rows")},
                        "n_rounds": p["n_estimators"], "display_size": p["trace_rows"]},
             lambda f: {**{k: v for k, v in f.items() if k not in ("n_iter", "best_iteration")},
                        "n_rounds": f["n_iter"], "best_round": f["best_iteration"]})
    back = WGBoost.load(tmp_path / "wg_old.nc")
    assert (back.n_estimators, back.trace_rows, back.n_iter_, back.best_iteration_) == (3, 7, 3, wg.best_iteration_)

    sk = skGB(n_estimators=3, early_stopping_rounds=None).fit(X.to_numpy(), y)
    sk.save(tmp_path / "sk.nc")
    _rewrite(tmp_path / "sk.nc", tmp_path / "sk_old.nc", rename_vars={"model_best_iterations": "model_best_iteration"})
    back = skGB.load(tmp_path / "sk_old.nc")
    np.testing.assert_array_equal(back.best_iterations_, sk.best_iterations_)
    assert back.best_iteration_ == sk.best_iteration_ == 3


def test_early_stopping_without_validation_rows_is_refused():
    """early_stopping_rounds with neither eval_set nor a validation split would never stop: one ConfigError."""
    X, y = _frame(30)
    for est in (DistributionalBoosting(n_estimators=2, early_stopping_rounds=2), WGBoost("normal", early_stopping_rounds=2)):
        with pytest.raises(ConfigError, match="early_stopping_rounds needs validation rows"):
            est.fit(X, y[:, 0])
    assert DistributionalBoosting(n_estimators=2, early_stopping_rounds=2, validation_fraction=0.3).fit(X, y[:, 0])


def test_many_long_feature_names_survive_the_model_file(tmp_path):
    """Names are a text variable of the file, not JSON in an attribute (whose length is capped at 64 Ki characters)."""
    rng = np.random.default_rng(3)
    names = [f"a rather long column name number {j:05d}" for j in range(2500)]   # 100 000 characters
    X = pd.DataFrame(rng.normal(size=(12, len(names))), columns=names)
    m = DistributionalBoosting(n_estimators=1, trace_rows=3, max_bins=4).fit(X, rng.normal(size=12))
    m.save(tmp_path / "wide.nc")
    assert list(DistributionalBoosting.load(tmp_path / "wide.nc").feature_names_in_) == names
