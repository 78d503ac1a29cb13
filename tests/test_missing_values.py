"""Native missing values: NaN gets its own bin, each split learns where missing values go (as HistGradientBoosting)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.ensemble import HistGradientBoostingRegressor

from distviz.trees import Binner, HistTree, fit_many


class Quadratic:
    """A*(m) = |m|^2: W * Gain^ent is then Gain^reg with T = R, so both criteria choose the same splits."""

    def conjugate(self, mean):
        return (np.asarray(mean) ** 2).sum(axis=1)


def _gappy(seed: int, y_missing: float, n: int = 240):
    """x0 on 10 levels with 15% NaN, x1 on 8 levels; y steps in x0 (and a little in x1); NaN rows have mean y_missing."""
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.integers(0, 10, n), rng.integers(0, 8, n)]).astype(float)
    y = 1.0 + 4.0 * (X[:, 0] > 4) + 0.8 * (X[:, 1] > 3) + rng.normal(0, 0.1, n)
    miss = rng.random(n) < 0.15
    X[miss, 0] = np.nan
    y[miss] = y_missing + 0.8 * (X[miss, 1] > 3) + rng.normal(0, 0.1, miss.sum())
    return X, y


def _hgb_splits(hgb):
    """(depth, feature, threshold, missing_go_to_left) of the internal nodes of HGB's single tree, sorted."""
    nodes = hgb._predictors[0][0].nodes
    depth = np.zeros(len(nodes), dtype=int)
    out = []
    for j in range(len(nodes)):
        if not nodes["is_leaf"][j]:
            depth[nodes["left"][j]] = depth[nodes["right"][j]] = depth[j] + 1
            out.append((int(depth[j]), int(nodes["feature_idx"][j]), float(nodes["num_threshold"][j]),
                        int(nodes["missing_go_to_left"][j])))
    return sorted(out)


def _our_splits(tree):
    nd = tree.nodes_
    return sorted((int(nd.depth[j]), int(nd.feature[j]), float(nd.threshold[j]), int(nd.missing_left[j]))
                  for j in np.flatnonzero(~nd.is_leaf))


@pytest.mark.parametrize("y_missing, root_missing_left", [(5.3, 0), (0.7, 1)])
def test_tree_with_nan_agrees_with_hist_gradient_boosting(y_missing, root_missing_left):
    """One depth-2 tree, learning rate 1, no L2: the same splits, missing directions and predictions as HGB."""
    X, y = _gappy(3, y_missing)
    ours = HistTree(max_depth=2, min_samples_leaf=1, l2=0.0).fit(X, y)
    hgb = HistGradientBoostingRegressor(max_iter=1, learning_rate=1.0, max_depth=2, max_leaf_nodes=4, min_samples_leaf=1,
                                        l2_regularization=0.0, early_stopping=False, max_bins=255).fit(X, y)
    assert _our_splits(ours) == _hgb_splits(hgb)
    nd = ours.nodes_
    assert (nd.feature[0], int(nd.missing_left[0])) == (0, root_missing_left)
    Xq = np.array([[np.nan, 0.0], [np.nan, 7.0], [2.0, np.nan], [9.0, 5.0], [np.nan, np.nan]])
    for Z in (X, Xq):  # HGB sums float32 gradients: equal to ~1e-8
        np.testing.assert_allclose(ours.predict(Z)[:, 0], hgb.predict(Z), rtol=1e-6)
    # the training rows' leaves (grower partition) match the raw and binned traversals
    np.testing.assert_array_equal(ours.apply(X), ours.train_leaf_)
    np.testing.assert_array_equal(ours.apply(ours.binner_.transform(X)), ours.train_leaf_)


def test_missing_bin_is_the_last_code_and_fits_uint8():
    X = np.column_stack([np.arange(1000.0), np.arange(1000.0)])
    X[::7, 0] = np.nan
    b = Binner(255).fit(X)
    codes = b.transform(X).codes
    assert codes.dtype == np.uint8 and b.missing_bin_ == 255 == b.n_bins_max_ and b.n_hist_bins_ == 256
    assert list(b.has_missing_) == [True, False]
    assert (codes[::7, 0] == 255).all() and codes[1:7, 0].max() < 255
    assert (b.transform(np.array([[np.nan, np.nan]])).codes == 255).all()  # NaN in a feature without NaN at fit
    clean = Binner(255).fit(np.arange(1000.0)[:, None])
    assert clean.n_hist_bins_ == clean.n_bins_max_ and not clean.has_missing_.any()


@pytest.mark.parametrize("weighted", [False, True])
def test_feature_missing_only_at_predict_time_goes_to_the_heavier_child(weighted):
    """No NaN in training: a NaN goes to the child with more training weight (not more rows, when weighted)."""
    rng = np.random.default_rng(4)
    x = rng.uniform(0, 10, 400)
    y = np.where(x > 7, 3.0, 0.0) + rng.normal(0, 0.05, 400)
    w = np.where(x > 7, 10.0, 1.0) if weighted else None  # ~30% of rows, but ~80% of the weight when weighted
    tree = HistTree(max_depth=1).fit(x[:, None], y, sample_weight=w)
    nd = tree.nodes_
    heavy_left = nd.weight[nd.left[0]] > nd.weight[nd.right[0]]
    assert heavy_left == (not weighted)
    assert nd.missing_left[0] == int(heavy_left)
    heavy = nd.left[0] if heavy_left else nd.right[0]
    assert tree.apply(np.array([[np.nan]]))[0] == heavy
    assert tree.apply(tree.binner_.transform(np.array([[np.nan]])))[0] == heavy
    if not weighted:  # HGB's rule (more samples) agrees
        hgb = HistGradientBoostingRegressor(max_iter=1, learning_rate=1.0, max_depth=1, min_samples_leaf=1,
                                            l2_regularization=0.0, early_stopping=False).fit(x[:, None], y)
        assert hgb.predict([[np.nan]])[0] == pytest.approx(tree.predict(np.array([[np.nan]]))[0, 0], rel=1e-6, abs=1e-6)


def test_entropy_criterion_routes_missing_values_like_the_variance_criterion():
    """With A*(m) = |m|^2 Gain^ent is Gain^reg / W: the two criteria give the same tree, missing directions included."""
    X, y = _gappy(5, 0.7)
    w = np.random.default_rng(6).uniform(0.5, 2.0, y.size)
    a = HistTree(max_depth=3).fit(X, y, sample_weight=w)
    b = HistTree(max_depth=3, criterion="entropy").fit(X, y, sample_weight=w, family=Quadratic(), T=y[:, None])
    for k in ("feature", "bin", "left", "missing_left"):
        np.testing.assert_array_equal(a.nodes_[k], b.nodes_[k])
    assert a.nodes_.missing_left.any()
    np.testing.assert_array_equal(a.train_leaf_, b.train_leaf_)


def test_forests_expose_and_follow_missing_left():
    X, y = _gappy(7, 0.7)
    F = fit_many(X, np.stack([y, -y, 2 * y]), max_depth=2)
    ml = F.nodes["missing_left"]
    assert ml.dtype == np.uint8 and ml.shape == F.nodes.shape and ml.any()
    np.testing.assert_array_equal(F.apply(X), F.train_leaf_)
    np.testing.assert_array_equal(F.apply(F.binner_.transform(X)), F.train_leaf_)
    t = F[1]
    np.testing.assert_array_equal(t.nodes_.missing_left, ml[1, : t.node_count_])
    S = fit_many(X, np.stack([y, -y]), max_depth=2, shared=True)
    np.testing.assert_array_equal(S.apply(X), S.train_leaf_)


def test_estimators_fit_and_predict_with_nan():
    from distviz.estimators import DistributionalBoosting
    from distviz.estimators.ngboost import NGB
    from distviz.estimators.wgboost import WGBoost

    rng = np.random.default_rng(8)
    n = 200
    X = rng.normal(size=(n, 3))
    X[rng.random(n) < 0.2, 0] = np.nan
    X[rng.random(n) < 0.1, 2] = np.nan
    y = rng.poisson(np.exp(0.5 * np.nan_to_num(X[:, 1])))
    Y = rng.normal(size=(n, 2)) + np.nan_to_num(X[:, :1], nan=2.0)
    Xq = np.array([[np.nan, 0.1, np.nan], [0.3, np.nan, 1.0]])
    m = DistributionalBoosting("poisson", n_estimators=8, max_depth=2).fit(X, y, eval_set=(X[:50], y[:50]))
    assert np.isfinite(m.predict(X)).all() and np.isfinite(m.predict(Xq)).all()
    assert np.isfinite(NGB(n_estimators=8, max_depth=2).fit(X, Y).predict(Xq)).all()
    assert np.isfinite(WGBoost("normal", n_estimators=4, max_depth=2).fit(X, Y[:, 0]).predict(Xq)).all()


def test_drifter_study_runs_with_gaps_in_a_feature():
    """A tiny drifter comparison with 10% of one feature knocked out completes with finite test NLL."""
    from distviz.data.drifters import load_drifters
    from distviz.experiments import drifters as st

    d = load_drifters("sample", bbox=(-82.0, -50.0, 24.0, 45.0))
    j = len(d.feature_names) - 1  # a field feature, not a position
    d.X = d.X.copy()
    d.X[np.random.default_rng(0).random(len(d)) < 0.1, j] = np.nan
    res = st.run_drifter_comparison(d, rounds=3, learning_rate=0.1, methods=("NGB", "IndepNGB", "MGD-MVN"), seed=0,
                                    max_train=1500, mixture_samples=10)
    for m in ("NGB", "IndepNGB", "MGD-MVN"):
        assert np.isfinite(res.table[m]["NLL"]), (m, res.table[m])
