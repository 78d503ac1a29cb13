"""save / load of every estimator through distviz.persistence: bit-identical predictions, validated files.

Also checks that FlatForest predicts exactly what the fitted trees themselves predict (HistTree.predict,
scikit-learn's predict), so the flat representation changes no number.
"""

import numpy as np
import pytest

from distviz.baselines import skGB
from distviz.errors import ConfigError, DataError
from distviz.estimators import DistributionalBoosting, WGBoost
from distviz.estimators.ngboost import GB, NGB, IndepNGB, NGBoost
from distviz.persistence import load as load_any
from distviz.trees import HistTree
from distviz.trees.flat import FlatForest
from distviz.trees.record import TreeRecord

RNG = np.random.default_rng(0)
X = RNG.normal(size=(150, 3))
Y = np.c_[X[:, 0] + 0.3 * RNG.normal(size=150), X[:, 1] - X[:, 0] + 0.5 * RNG.normal(size=150)]
XT = RNG.normal(size=(40, 3))


def _fits():
    yield "db", DistributionalBoosting("normal", n_estimators=20), (X, Y[:, 0])
    yield "ngb", NGB(n_estimators=25, learning_rate=0.1, random_state=0, per_parameter_early_stopping=True,
                     early_stopping_rounds=5), (X, Y)
    yield "gb_shared", GB(n_estimators=15, learning_rate=0.1, tree_mode="shared", early_stopping_rounds=None), (X, Y)
    yield "ngboost", NGBoost("poisson", n_estimators=10, learning_rate=0.1, early_stopping_rounds=None), \
        (X, RNG.poisson(np.exp(X[:, 0])))
    yield "indep", IndepNGB(n_estimators=15, learning_rate=0.1, random_state=0), (X, Y)
    yield "skgb", skGB(n_estimators=20, learning_rate=0.1, random_state=0), (X, Y)
    yield "skgb_hist", skGB(n_estimators=20, learning_rate=0.1, random_state=0, backend="hist"), (X, Y)
    yield "wg_shared", WGBoost("normal", n_particles=4, n_estimators=8, init="normal", random_state=0), (X, Y[:, 0])
    yield "wg_pp", WGBoost("normal", n_particles=4, n_estimators=8, init="normal", tree_sharing="per_particle",
                           split_criterion="friedman_sum", random_state=0), (X, Y[:, 0])


def _outputs(m):
    """Every prediction path of a fitted estimator, as arrays."""
    if isinstance(m, DistributionalBoosting):
        return [m.predict_mean(XT), m.predict_natural(XT, max_iter=5), *m.staged_predict_mean(XT)]
    if isinstance(m, WGBoost):
        return [m.predict_particles(XT), m.predict_particles(XT, max_iter=3), *m.staged_predict_particles(XT)]
    if isinstance(m, NGBoost):
        return [m.predict_params(XT), m.predict_params(XT, "all"), *m.staged_predict_params(XT)]
    d = m.predict_dist(XT)
    return [d.mean(), d.cov(), m.predict_dist(XT, "all").mean(), *(g.mean() for g in m.staged_predict_dist(XT))]


@pytest.fixture(scope="module")
def fitted():
    return {name: est.fit(*data) for name, est, data in _fits()}


@pytest.mark.parametrize("name", [f[0] for f in _fits()])
def test_load_predicts_bit_identically(fitted, tmp_path, name):
    m = fitted[name]
    p = tmp_path / f"{name}.nc"
    m.save(p)
    back = type(m).load(p)
    for a, b in zip(_outputs(m), _outputs(back), strict=True):
        np.testing.assert_array_equal(a, b)
    assert type(load_any(p)) is type(m)


def test_sparse_gp_round_trip(tmp_path):
    from distviz.gp.model import SparseGP

    m = SparseGP(n_inducing=8, max_iter=30, random_state=0).fit(X[:80], Y[:80, 0])
    m.save(tmp_path / "gp.nc")
    back = SparseGP.load(tmp_path / "gp.nc")
    for a, b in zip(m.predict_latent(XT), back.predict_latent(XT)):
        np.testing.assert_array_equal(a, b)


def test_flat_forest_predicts_what_the_trees_predict():
    trees = [HistTree(max_depth=3).fit(X, Y + k) for k in range(3)]
    f = FlatForest.from_records([t.record_ for t in trees], multiplier=[0.5, 1.0, 2.0], n_features=3, n_outputs=2)
    want = 0.5 * trees[0].predict(XT) + trees[1].predict(XT) + 2.0 * trees[2].predict(XT)
    np.testing.assert_allclose(f.predict(XT), want, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(f.apply(XT)[1] - f.tree_offsets[1], trees[1].apply(XT))
    staged = list(f.staged_predict(XT, n_rounds=2))
    assert len(staged) == 3 and np.array_equal(staged[0], np.zeros((40, 2)))
    np.testing.assert_array_equal(staged[2], f.predict(XT, n_rounds=2))


def test_flat_forest_matches_sklearn_gradient_boosting():
    from sklearn.ensemble import GradientBoostingRegressor

    g = GradientBoostingRegressor(n_estimators=15, random_state=0).fit(X, Y[:, 0])
    f = FlatForest.from_records([TreeRecord.from_sklearn_tree(e) for e in g.estimators_[:, 0]],
                               multiplier=[g.learning_rate] * 15, n_features=3, float32_input=True)
    np.testing.assert_array_equal(f.predict(XT, init=g.init_.predict(XT[:1])[0])[:, 0], g.predict(XT))


def test_nan_goes_right_unless_the_node_says_left():
    f = FlatForest([0, -1, -1], [0.0, 0, 0], [0, 0, 0], [1, -1, -1], [2, -1, -1], [[0.0], [1.0], [2.0]], [0, 3],
                   n_features=1)
    assert f.predict(np.array([[np.nan], [-1.0], [1.0]]))[:, 0].tolist() == [2.0, 1.0, 2.0]
    f.missing_left[:] = 1
    assert f.predict(np.array([[np.nan]]))[0, 0] == 1.0


@pytest.mark.parametrize("field, value, problem", [
    ("left", 0, "does not point forward"), ("right", 99, "does not point forward"),
    ("feature", 3, "feature id outside"), ("feature", -2, "feature id outside"),
    ("threshold", np.nan, "threshold is not finite"), ("value", np.inf, "leaf value is not finite"),
    ("missing_left", 2, "neither 0 nor 1"),
])
def test_validation_names_the_file_and_the_first_problem(fitted, tmp_path, field, value, problem):
    import xarray as xr

    p = tmp_path / "m.nc"
    fitted["db"].save(p)
    with xr.open_dataset(p) as ds:
        ds = ds.load()
    a = ds[f"model_forest_{field}"].values.copy()
    a.reshape(-1)[0 if field != "value" else -1] = value
    ds[f"model_forest_{field}"].values = a
    q = tmp_path / "bad.nc"
    ds.to_netcdf(q)
    with pytest.raises(DataError, match=f"bad.nc is not a usable DistributionalBoosting model file: .*{problem}") as e:
        DistributionalBoosting.load(q)
    assert str(tmp_path) not in str(e.value)


def test_wrong_class_schema_and_chart_objects(fitted, tmp_path):
    fitted["ngb"].save(tmp_path / "ngb.nc")
    with pytest.raises(DataError, match="holds a NGB, not a GB"):
        GB.load(tmp_path / "ngb.nc")
    from distviz.families import charts

    m = NGBoost(charts.get("normal"), n_estimators=3, early_stopping_rounds=None).fit(X, Y[:, 0])
    with pytest.raises(ConfigError, match="chart object cannot be saved"):
        m.save(tmp_path / "c.nc")
