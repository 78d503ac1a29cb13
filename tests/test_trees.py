"""Tests of distviz.trees: exactness against scikit-learn, recorded gains, weights, batching, binning."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats
from sklearn.tree import DecisionTreeRegressor

from distviz.errors import ConfigError, DataError
from distviz.trees import BinnedX, Binner, HistTree, fit_many


# -- small local families (A* only): the protocol is family.conjugate(mean (m, d)) -> (m,) ----------
class LocalPoisson:
    """Poisson with T = y: A*(m) = m log m - m."""

    def conjugate(self, mean):
        m = np.asarray(mean)[:, 0]
        return np.where(m > 0, m * np.log(np.where(m > 0, m, 1.0)), 0.0) - m


class LocalNormal:
    """Normal with T = (y, y^2): A*(m) = -1/2 log(2 pi e (m2 - m1^2))."""

    def conjugate(self, mean):
        m = np.asarray(mean)
        return -0.5 * np.log(2 * np.pi * np.e * (m[:, 1] - m[:, 0] ** 2))


class Quadratic:
    """A*(m) = |m|^2: then W * Gain^ent is exactly Gain^reg with T = R."""

    def conjugate(self, mean):
        return (np.asarray(mean) ** 2).sum(axis=1)


def _poisson_families():
    fams = [LocalPoisson()]
    try:  # the project's own family, when present
        from distviz.families import Poisson

        fams.append(Poisson())
    except ImportError:
        pass
    return fams


def _f32(a):
    """Values exactly representable in float32 (scikit-learn trees work in float32)."""
    return np.asarray(a, dtype=np.float32).astype(np.float64)


def _data(rng, n=250, p=4, K=3, discrete=False):
    if discrete:
        X = rng.integers(0, 6, size=(n, p)).astype(np.float64)
    else:
        X = _f32(rng.normal(size=(n, p)))
    R = np.sin(X[:, :1] * 1.7) + X[:, 1:2] * np.arange(1, K + 1) + rng.normal(scale=0.5, size=(n, K))
    w = rng.uniform(0.2, 3.0, size=n)
    return X, R, w


def _wsse(pred, R, w):
    return float((w[:, None] * (R - pred) ** 2).sum())


def _members(tree, X):
    """Boolean membership (n_nodes, n) of every row in every node, by descending the raw thresholds."""
    nodes = tree.nodes_
    M = np.zeros((nodes.n_nodes, X.shape[0]), dtype=bool)
    M[0] = True
    for j in range(nodes.n_nodes):
        if not nodes.is_leaf[j]:
            go_left = X[:, nodes.feature[j]] <= nodes.threshold[j]
            M[nodes.left[j]] = M[j] & go_left
            M[nodes.right[j]] = M[j] & ~go_left
    return M


# -- exactness against scikit-learn -------------------------------------------------------------------
@pytest.mark.parametrize(
    "seed, depth, msl, mwf, discrete",
    [(0, 3, 1, 0.0, False), (1, 4, 5, 0.0, False), (2, 3, 1, 0.05, False), (3, 5, 3, 0.02, True), (4, 1, 1, 0.0, False)],
)
def test_exact_mode_matches_sklearn(seed, depth, msl, mwf, discrete):
    rng = np.random.default_rng(seed)
    X, R, w = _data(rng, discrete=discrete)
    sk = DecisionTreeRegressor(
        criterion="squared_error", max_depth=depth, min_samples_leaf=msl, min_weight_fraction_leaf=mwf, random_state=0
    ).fit(X, R, sample_weight=w)
    ours = HistTree(max_depth=depth, max_bins="exact", min_samples_leaf=msl, min_weight_leaf=mwf * w.sum()).fit(
        X, R, sample_weight=w
    )
    p_sk = sk.predict(X).reshape(len(X), -1)
    p_ours = ours.predict(X)
    assert p_ours.shape == R.shape
    if not np.allclose(p_sk, p_ours, rtol=0, atol=1e-9):  # ties broken differently: same quality
        assert _wsse(p_ours, R, w) == pytest.approx(_wsse(p_sk, R, w), rel=1e-9)
    assert ours.n_leaves_ == sk.get_n_leaves()
    assert ours.depth_ == sk.get_depth()


@pytest.mark.parametrize("msl", [1, 4])
def test_exact_mode_matches_sklearn_unweighted(msl):
    rng = np.random.default_rng(6)
    X, R, _ = _data(rng, n=250, K=2)
    sk = DecisionTreeRegressor(max_depth=4, min_samples_leaf=msl, random_state=0).fit(X, R)
    ours = HistTree(max_depth=4, max_bins="exact", min_samples_leaf=msl).fit(X, R)
    np.testing.assert_allclose(ours.predict(X), sk.predict(X), atol=1e-9)
    # constant weights: same tree, gains scale with the weight
    two = HistTree(max_depth=4, max_bins="exact", min_samples_leaf=msl).fit(X, R, sample_weight=np.full(250, 2.0))
    np.testing.assert_allclose(two.predict(X), ours.predict(X), atol=1e-12)
    np.testing.assert_allclose(two.nodes_.gain, 2 * ours.nodes_.gain, rtol=1e-10)
    np.testing.assert_array_equal(two.nodes_.n_samples, ours.nodes_.n_samples)


def test_exact_mode_single_output_and_1d_targets():
    rng = np.random.default_rng(7)
    X, R, w = _data(rng, n=200, K=1)
    sk = DecisionTreeRegressor(max_depth=3, random_state=0).fit(X, R[:, 0], sample_weight=w)
    ours = HistTree(max_depth=3, max_bins="exact", min_weight_leaf=0.0).fit(X, R[:, 0], sample_weight=w)
    assert ours.predict(X).shape == (200, 1)
    np.testing.assert_allclose(ours.predict(X)[:, 0], sk.predict(X), atol=1e-9)


# -- recorded gains ----------------------------------------------------------------------------------
@pytest.mark.parametrize("l2", [0.0, 2.5])
def test_gain_reg_is_weighted_sse_reduction(l2):
    rng = np.random.default_rng(11)
    X, R, w = _data(rng, n=250, K=3)
    tree = HistTree(max_depth=3, max_bins=32, l2=l2).fit(X, R, sample_weight=w)
    nodes = tree.nodes_
    M = _members(tree, X)

    def penalised_sse(mask):  # min_v sum w |R - v|^2 + l2 |v|^2, attained at v = S / (W + l2)
        W = w[mask].sum()
        S = (w[mask, None] * R[mask]).sum(axis=0)
        v = S / (W + l2)
        return (w[mask, None] * (R[mask] - v) ** 2).sum() + l2 * (v**2).sum(), v

    internal = np.flatnonzero(~nodes.is_leaf)
    assert internal.size == 7
    for j in internal:
        sj, vj = penalised_sse(M[j])
        sl, _ = penalised_sse(M[nodes.left[j]])
        sr, _ = penalised_sse(M[nodes.right[j]])
        assert nodes.gain_reg[j] == pytest.approx(sj - sl - sr, rel=1e-9, abs=1e-9)
        assert nodes.gain[j] == nodes.gain_reg[j]
        np.testing.assert_allclose(nodes.value[j], vj, rtol=1e-12, atol=1e-12)
        assert nodes.weight[j] == pytest.approx(w[M[j]].sum(), rel=1e-12)
        assert nodes.n_samples[j] == M[j].sum()
        # the chosen split is the best one on its own feature
        assert nodes.feature_gains[j, nodes.feature[j]] == pytest.approx(nodes.gain[j], rel=1e-12)
        assert nodes.gain[j] >= np.nanmax(nodes.feature_gains[j]) * (1 - 1e-12)
    if l2 == 0.0:  # the paper's form W_L |Rbar_L|^2 + W_R |Rbar_R|^2 - W_J |Rbar_J|^2
        for j in internal:
            L, Rr = nodes.left[j], nodes.right[j]
            form = sum(nodes.weight[c] * (nodes.value[c] ** 2).sum() for c in (L, Rr)) - nodes.weight[j] * (
                nodes.value[j] ** 2
            ).sum()
            assert nodes.gain_reg[j] == pytest.approx(form, rel=1e-9)
    assert np.isnan(nodes.gain_ent).all()


@pytest.mark.parametrize("family", _poisson_families(), ids=lambda f: type(f).__module__ + "." + type(f).__name__)
def test_gain_ent_root_equals_poisson_nll_drop(family):
    rng = np.random.default_rng(5)
    n = 400
    X = rng.uniform(-2, 2, size=(n, 3))
    y = rng.poisson(np.exp(0.8 * X[:, 0] - 0.3 * X[:, 1])).astype(float)
    w = rng.uniform(0.5, 2.0, size=n)
    R = y - y.mean()
    tree = HistTree(max_depth=2).fit(X, R, sample_weight=w, family=family, T=y[:, None])
    nodes = tree.nodes_
    M = _members(tree, X)

    def refit_nll(mask):  # weighted NLL with the leafwise MLE rate (carrier term included; it cancels)
        lam = np.average(y[mask], weights=w[mask])
        return -(w[mask] * stats.poisson.logpmf(y[mask], lam)).sum()

    W = w.sum()
    for j in np.flatnonzero(~nodes.is_leaf):
        drop = (refit_nll(M[j]) - refit_nll(M[nodes.left[j]]) - refit_nll(M[nodes.right[j]])) / W
        assert nodes.gain_ent[j] == pytest.approx(drop, rel=1e-9, abs=1e-12)
    assert np.isnan(nodes.gain_ent[nodes.is_leaf]).all()


def _root_candidates(X, T, w, conj, min_cnt=1):
    """All root splits (feature, threshold) with Gain^ent computed directly, on distinct values."""
    W = w.sum()
    aJ = conj((w @ T / W)[None])[0]
    out = []
    for f in range(X.shape[1]):
        u = np.unique(X[:, f])
        for thr in 0.5 * (u[:-1] + u[1:]):
            L = X[:, f] <= thr
            if L.sum() < min_cnt or (~L).sum() < min_cnt:
                continue
            g = 0.0
            for m in (L, ~L):
                Wm = w[m].sum()
                g += Wm * conj((w[m] @ T[m] / Wm)[None])[0]
            out.append(((g - W * aJ) / W, f, thr))
    return out


def test_entropy_criterion_picks_the_best_gain_ent_split():
    rng = np.random.default_rng(8)
    n = 120
    X = np.round(rng.uniform(-2, 2, size=(n, 2)), 2)
    y = rng.normal(0.0, np.exp(0.7 * X[:, 1]))  # the scale, not the mean, depends on x_1
    T = np.stack([y, y * y], axis=1)
    w = rng.uniform(0.5, 2.0, size=n)
    fam = LocalNormal()
    tree = HistTree(max_depth=2, max_bins="exact", criterion="entropy", min_samples_leaf=5).fit(
        X, y, sample_weight=w, family=fam, T=T
    )
    nodes = tree.nodes_
    cands = _root_candidates(X, T, w, fam.conjugate, min_cnt=5)
    g_best = max(c[0] for c in cands)
    assert nodes.gain[0] == pytest.approx(g_best, rel=1e-9)
    assert nodes.gain_ent[0] == pytest.approx(g_best, rel=1e-9)
    assert nodes.feature[0] == 1
    # the variance criterion is blind to a scale change: it records a smaller Gain^ent at the root
    var_tree = HistTree(max_depth=2, max_bins="exact", min_samples_leaf=5).fit(X, y, sample_weight=w, family=fam, T=T)
    assert var_tree.nodes_.gain_ent[0] <= g_best + 1e-12
    # values are still the weighted means of R
    M = _members(tree, X)
    for j in range(nodes.n_nodes):
        assert nodes.value[j, 0] == pytest.approx(np.average(y[M[j]], weights=w[M[j]]), rel=1e-10, abs=1e-12)


def test_entropy_with_quadratic_conjugate_equals_variance_tree():
    rng = np.random.default_rng(9)
    X, R, w = _data(rng, n=300, K=2)
    a = HistTree(max_depth=3, max_bins=64).fit(X, R, sample_weight=w)
    b = HistTree(max_depth=3, max_bins=64, criterion="entropy").fit(X, R, sample_weight=w, family=Quadratic(), T=R)
    na, nb = a.nodes_, b.nodes_
    np.testing.assert_array_equal(na.feature, nb.feature)
    np.testing.assert_array_equal(na.bin, nb.bin)
    np.testing.assert_allclose(na.value, nb.value, rtol=1e-12, atol=1e-12)
    internal = ~na.is_leaf
    np.testing.assert_allclose(nb.gain[internal] * w.sum(), na.gain[internal], rtol=1e-9)
    np.testing.assert_allclose(nb.gain_reg, na.gain_reg, rtol=1e-9)


# -- weights -------------------------------------------------------------------------------------------
def test_integer_weights_equal_repeated_rows():
    rng = np.random.default_rng(12)
    X, R, _ = _data(rng, n=150, K=2)
    reps = rng.integers(1, 4, size=150)
    Xr, Rr = np.repeat(X, reps, axis=0), np.repeat(R, reps, axis=0)
    a = HistTree(max_depth=4, max_bins="exact").fit(X, R, sample_weight=reps.astype(float))
    b = HistTree(max_depth=4, max_bins="exact").fit(Xr, Rr)
    np.testing.assert_allclose(a.predict(X), b.predict(X), atol=1e-12)
    np.testing.assert_array_equal(a.nodes_.threshold, b.nodes_.threshold)
    np.testing.assert_allclose(a.nodes_.gain, b.nodes_.gain, rtol=1e-10)
    np.testing.assert_allclose(a.nodes_.weight, b.nodes_.weight, rtol=1e-12)


@pytest.mark.parametrize("max_bins", ["exact", 16])
def test_zero_weight_equals_dropping_rows(max_bins):
    rng = np.random.default_rng(13)
    X, R, w = _data(rng, n=250, K=2)
    w[rng.random(250) < 0.3] = 0.0
    keep = w > 0
    a = HistTree(max_depth=4, max_bins=max_bins).fit(X, R, sample_weight=w)
    b = HistTree(max_depth=4, max_bins=max_bins).fit(X[keep], R[keep], sample_weight=w[keep])
    Xnew = _f32(rng.normal(size=(100, X.shape[1])))
    np.testing.assert_allclose(a.predict(X), b.predict(X), atol=1e-12)
    np.testing.assert_allclose(a.predict(Xnew), b.predict(Xnew), atol=1e-12)
    np.testing.assert_allclose(a.nodes_.gain, b.nodes_.gain, rtol=1e-10)
    np.testing.assert_array_equal(a.nodes_.n_samples, b.nodes_.n_samples)
    # zero-weight rows still get a leaf and a training prediction
    np.testing.assert_array_equal(a.train_leaf_, a.apply(X))


# -- batching and binned input -------------------------------------------------------------------------
def test_binned_input_equals_raw_input():
    rng = np.random.default_rng(14)
    X, R, w = _data(rng, n=400, K=3)
    Xb = Binner(max_bins=255).fit_transform(X)
    a = HistTree(max_depth=3).fit(X, R, sample_weight=w)
    b = HistTree(max_depth=3).fit(Xb, R, sample_weight=w)
    for key in ("feature", "bin", "threshold", "gain", "weight"):
        np.testing.assert_array_equal(a.nodes_[key], b.nodes_[key])
    np.testing.assert_array_equal(b.predict(Xb), b.predict(X))
    np.testing.assert_array_equal(b.train_leaf_, b.apply(X))
    np.testing.assert_array_equal(b.train_predict_, a.predict(X))


@pytest.mark.parametrize("K", [1, 3])
def test_unweighted_binned_fit_with_the_kept_root_counts_equals_raw_input(K):
    """An unweighted fit on a BinnedX takes the root's count column kept on it (BinnedX.unit_root_lead): same tree
    as on raw X (which sums the counts in its root pass), on the first fit and on the next (cached) one."""
    rng = np.random.default_rng(16)
    X, R, _ = _data(rng, n=3000, K=K)
    X[::13, 1] = np.nan
    Xb = Binner(max_bins=255).fit_transform(X)
    a = HistTree(max_depth=4).fit(X, R)
    for _ in range(2):
        b = HistTree(max_depth=4).fit(Xb, R)
        for key in ("feature", "bin", "gain", "weight", "value"):
            np.testing.assert_array_equal(np.asarray(a.nodes_[key].tolist()), np.asarray(b.nodes_[key].tolist()))
        np.testing.assert_array_equal(b.train_leaf_, a.train_leaf_)
    assert "unit_root_lead" in Xb._cache


@pytest.mark.parametrize("n", [200, 3000])
def test_fit_many_equals_separate_fits(n):
    rng = np.random.default_rng(15)
    X, _, w = _data(rng, n=n, K=1)
    Xb = Binner(64).fit_transform(X)
    B, K = 6, 3
    Rb = rng.normal(size=(B, n, K)) + np.sin(3 * X[None, :, :1] * rng.normal(size=(B, 1, K)))
    forest = fit_many(Xb, Rb, sample_weight=w, max_depth=3, min_samples_leaf=3)
    pred = forest.predict(Xb)
    assert pred.shape == (B, n, K)
    np.testing.assert_array_equal(forest.train_predict_, pred)
    np.testing.assert_array_equal(forest.predict(X), pred)
    for t in range(B):
        single = HistTree(max_depth=3, min_samples_leaf=3).fit(Xb, Rb[t], sample_weight=w)
        np.testing.assert_allclose(pred[t], single.predict(Xb), rtol=1e-12, atol=1e-12)
        nt, ns = forest[t].nodes_, single.nodes_
        np.testing.assert_array_equal(nt.feature, ns.feature)
        np.testing.assert_allclose(nt.gain, ns.gain, rtol=1e-10)
        np.testing.assert_array_equal(forest.train_leaf_[t], single.train_leaf_)


def test_fit_many_shared_is_one_tree_on_all_columns():
    rng = np.random.default_rng(16)
    X, _, _ = _data(rng, n=300, K=1)
    B, K = 4, 2
    Rb = rng.normal(size=(B, 300, K)) + X[None, :, :1]
    sf = fit_many(X, Rb, shared=True, max_depth=3)
    ref = HistTree(max_depth=3).fit(X, Rb.transpose(1, 0, 2).reshape(300, B * K))
    pred = sf.predict(X)
    assert pred.shape == (B, 300, K)
    np.testing.assert_allclose(pred, ref.predict(X).reshape(300, B, K).transpose(1, 0, 2))
    np.testing.assert_allclose(sf.train_predict_, pred)


# -- growth rules, leaf values, binning -----------------------------------------------------------------
def test_max_leaves_expands_best_leaf_first():
    rng = np.random.default_rng(17)
    X, R, w = _data(rng, n=500, K=2)
    full = HistTree(max_depth=2).fit(X, R, sample_weight=w).nodes_
    three = HistTree(max_depth=None, max_leaves=3).fit(X, R, sample_weight=w)
    assert three.n_leaves_ == 3
    n3 = three.nodes_
    g_children = full.gain[[full.left[0], full.right[0]]]
    expanded = [full.left[0], full.right[0]][int(np.argmax(g_children))]
    assert n3.feature[0] == full.feature[0] and n3.threshold[0] == full.threshold[0]
    second = n3.left[0] if not n3.is_leaf[n3.left[0]] else n3.right[0]
    assert n3.gain[second] == pytest.approx(full.gain[expanded])
    assert n3.threshold[second] == full.threshold[expanded]
    same = HistTree(max_depth=2, max_leaves=4).fit(X, R, sample_weight=w).nodes_
    np.testing.assert_allclose(np.sort(same.gain[~same.is_leaf]), np.sort(full.gain[~full.is_leaf]))


def test_set_leaf_values_and_node_table():
    rng = np.random.default_rng(18)
    X, R, w = _data(rng, n=200, K=2)
    tree = HistTree(max_depth=2).fit(X, R, sample_weight=w)
    leaves = tree.leaf_ids_
    new = np.arange(2 * leaves.size, dtype=float).reshape(-1, 2)
    tree.set_leaf_values(new)
    np.testing.assert_array_equal(tree.predict(X), new[np.searchsorted(leaves, tree.apply(X))])
    full = np.zeros((tree.node_count_, 2))
    full[leaves] = 7.0
    tree.set_leaf_values(full)
    assert (tree.predict(X) == 7.0).all() and (tree.train_predict_ == 7.0).all()
    with pytest.raises(DataError):
        tree.set_leaf_values(np.zeros((leaves.size + 1, 3)))
    df = tree.nodes_.to_dataframe()
    assert len(df) == tree.node_count_ and {"gain", "gain_ent", "value_0", "value_1", "threshold"} <= set(df.columns)
    assert (df["value_0"].to_numpy()[leaves] == 7.0).all()
    d = tree.nodes_.as_dict()
    assert d["value"].shape == (tree.node_count_, 2)


def test_binner_codes_agree_with_thresholds():
    rng = np.random.default_rng(19)
    X = np.column_stack([rng.normal(size=5000), rng.integers(0, 3, 5000), np.full(5000, 2.0)])
    binner = Binner(max_bins=20).fit(X)
    assert list(binner.n_bins_) == [20, 3, 1]
    codes = binner.transform(X).codes
    assert codes.dtype == np.uint8 and codes.shape == X.shape
    for f in range(3):
        thr = binner.threshold_table_[f]
        for b in range(binner.n_bins_[f]):
            np.testing.assert_array_equal(codes[:, f] <= b, X[:, f] <= thr[b])
    counts = np.bincount(codes[:, 0], minlength=20)
    assert counts.min() > 150  # quantile bins are balanced
    ex = Binner("exact").fit(X)
    assert list(ex.n_bins_) == [5000, 3, 1]
    assert ex.transform(X).codes.dtype == np.uint16
    # a constant feature is never split; a tree on it is a single leaf
    t = HistTree(max_depth=3).fit(X[:, 2:], rng.normal(size=5000))
    assert t.n_leaves_ == 1 and t.depth_ == 0


def test_errors_are_one_sentence():
    X = np.zeros((10, 2))
    with pytest.raises(ConfigError):
        HistTree(max_depth=-1).fit(X, np.zeros(10))
    with pytest.raises(ConfigError):
        HistTree(criterion="gini").fit(X, np.zeros(10))
    with pytest.raises(ConfigError):
        HistTree(criterion="entropy").fit(X, np.zeros(10))
    with pytest.raises(ConfigError):
        Binner(max_bins=1).fit(X)
    with pytest.raises(DataError):
        HistTree().fit(np.full((10, 2), np.inf), np.zeros(10))  # NaN is a missing value, inf is refused
    with pytest.raises(DataError):
        HistTree().fit(X, np.zeros(9))
    with pytest.raises(DataError):
        HistTree().fit(X, np.zeros(10), sample_weight=-np.ones(10))
    t = HistTree().fit(X, np.zeros(10))
    with pytest.raises(DataError):
        t.predict(np.zeros((3, 5)))
    with pytest.raises(DataError):
        t.predict(Binner().fit_transform(X))  # codes of another binner
    assert isinstance(Binner().fit_transform(X), BinnedX)



def test_parallel_histogram_kernel_equals_serial():
    from distviz.trees.histogram import hist_parallel, hist_serial, row_stats

    rng = np.random.default_rng(21)
    X, R, w = _data(rng, n=500, K=3)
    Xb = Binner(64).fit_transform(X)
    rows = rng.permutation(500).astype(np.int32)
    for o, ww in ((1, np.ones(500)), (2, w)):
        G = row_stats(R, ww, o)
        a = np.empty((X.shape[1], 64, o + 3))
        b = np.empty_like(a)
        hist_serial(Xb.codes_T, rows, 100, 400, G, 1, o == 1, a)
        hist_parallel(Xb.codes_T, rows, 100, 400, G, 1, o == 1, b)
        np.testing.assert_array_equal(a, b)
        sel = rows[100:400]
        ref = np.zeros_like(a)
        for f in range(X.shape[1]):
            np.add.at(ref[f, :, o:], Xb.codes[sel, f], (ww[sel, None] * R[sel]))
            np.add.at(ref[f, :, 0], Xb.codes[sel, f], ww[sel])
            if o == 2:
                np.add.at(ref[f, :, 1], Xb.codes[sel, f], (ww[sel] > 0).astype(float))
        np.testing.assert_allclose(a, ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("K", [1, 3])
def test_row_major_histogram_kernel_equals_gathered_column_kernel(K):
    """hist_rows (row-major codes, no gather; features in 1-3 groups), hist_indexed (one output: feature pairs read by
    row index) and the root from cached weight columns (serial or the features split among threads) equal the old
    kernels bit for bit."""
    from distviz.trees.histogram import (
        gather_rows,
        hist_indexed,
        hist_root_targets,
        hist_rows,
        hist_serial,
        lead_hist,
        row_stats,
    )

    rng = np.random.default_rng(22)
    X, R, w = _data(rng, n=700, K=K)
    Xb = Binner(64).fit_transform(X)
    codes_R = np.ascontiguousarray(Xb.codes_T.T)
    rows = np.sort(rng.permutation(700)[:450]).astype(np.int32)
    for o, ww in ((1, np.ones(700)), (2, w)):
        lead = 0 if o == 1 else 2
        G = row_stats(np.column_stack([R, R[:, ::-1]]), ww, o)  # two blocks of K targets: use the second
        col_off = lead + K
        buf = np.empty((450, lead + K))
        gather_rows(G, rows, 0, 450, col_off, lead, K, buf)
        ref = np.empty((X.shape[1], 64, o + K))
        hist_serial(Xb.codes_T, rows, 0, 450, buf, 2, o == 1, ref)
        for groups in (1, 2, 3):
            out = np.full_like(ref, np.nan)
            hist_rows(codes_R, rows, 0, 450, G, col_off, lead, K, o == 1, out, groups)
            np.testing.assert_array_equal(out, ref)
        if K == 1:  # one output: feature pairs read by row index, serial or shared among 2, 3 or (all) threads
            for groups in (1, 2, 3, 50):
                out = np.full_like(ref, np.nan)
                hist_indexed(Xb.codes_T, rows, 0, 450, G, col_off, o == 1, out, groups)
                np.testing.assert_array_equal(out, ref)
        # the root: cached leading columns + the K target columns equal the full pass
        all_rows = np.arange(700, dtype=np.int32)
        ref = np.empty((X.shape[1], 64, o + K))
        hist_serial(Xb.codes_T, all_rows, 0, 700, row_stats(R[:, ::-1], ww, o), 0, o == 1, ref)
        lead_cols, lead_tot = lead_hist(Xb.codes_T, ww, o, 64)
        seq = np.zeros(o + K)  # the grower's sequential root totals
        for i in range(700):
            seq[:o] += [1.0] if o == 1 else [ww[i], float(ww[i] > 0)]
            seq[o:] += G[i, col_off:col_off + K]
        np.testing.assert_array_equal(lead_tot, seq[:o])
        for n_threads in (0, 1, 2, 3, 50):  # serial, then the features split among 2, 3 or (all of them) threads
            out = np.full_like(ref, np.nan)
            tot = np.full(K, np.nan)
            hist_root_targets(Xb.codes_T, G, col_off, o, K, lead_cols, out, tot, n_threads)
            np.testing.assert_array_equal(out, ref)
            np.testing.assert_array_equal(tot, seq[o:])


@settings(deadline=None, max_examples=30, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(2, 60),
    p=st.integers(1, 3),
    K=st.integers(1, 3),
    depth=st.integers(1, 4),
    msl=st.integers(1, 4),
    weighted=st.booleans(),
    seed=st.integers(0, 2**31 - 1),
)
def test_property_exact_mode_matches_sklearn_sse(n, p, K, depth, msl, weighted, seed):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 5, size=(n, p)).astype(float)  # many ties, in values and in gains
    R = rng.normal(size=(n, K)).round(2)
    w = rng.integers(1, 4, size=n).astype(float) if weighted else None
    sk = DecisionTreeRegressor(max_depth=depth, min_samples_leaf=msl, random_state=0).fit(X, R, sample_weight=w)
    ours = HistTree(max_depth=depth, max_bins="exact", min_samples_leaf=msl, min_weight_leaf=0.0).fit(
        X, R, sample_weight=w
    )
    ww = np.ones(n) if w is None else w
    assert _wsse(ours.predict(X), R, ww) == pytest.approx(_wsse(sk.predict(X).reshape(n, K), R, ww), rel=1e-9, abs=1e-9)
    np.testing.assert_array_equal(ours.train_leaf_, ours.apply(X))


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("criterion", ["variance", "entropy"])
def test_fit_context_equals_fit(weighted, criterion):
    """A tree grown through a FitContext (X, weights and T checked once per boosting fit) equals fit()."""
    from distviz.families import get
    from distviz.trees import FitContext

    rng = np.random.default_rng(3)
    X = rng.uniform(-2, 2, size=(3000, 4))
    y = rng.poisson(np.exp(0.3 + np.sin(X[:, 0]))).astype(float)
    T = y[:, None]
    R = np.column_stack([T[:, 0] - 1.5, rng.standard_normal(3000)])
    w = rng.uniform(0.0, 2.0, 3000) if weighted else None
    fam = get("poisson")
    Xb = Binner(64).fit_transform(X)
    ctx = FitContext.make(Xb, w, family=fam, T=T)
    for rep in range(3):  # the context is reused across trees; from the second on with row codes and root lead
        if rep == 1:  # row-major codes for trees with several outputs only (one output reads the columns by row index)
            assert ctx.for_rounds().row_codes(2).shape == (3000, 4)
            assert ctx.row_codes(1).shape == (0, 4)
        a = HistTree(max_depth=3, criterion=criterion).fit(Xb, R, sample_weight=w, family=fam, T=T)
        b = HistTree(max_depth=3, criterion=criterion).fit_context(ctx, R)
        na, nb = a.nodes_, b.nodes_
        for key in ("feature", "bin", "left", "right", "weight", "n_samples", "value", "gain", "gain_reg", "gain_ent",
                    "feature_gains"):
            np.testing.assert_array_equal(na[key], nb[key], err_msg=key)
        np.testing.assert_array_equal(a.train_leaf_, b.train_leaf_)
    with pytest.raises(DataError):
        HistTree(max_depth=3).fit_context(ctx, R[:10])
    with pytest.raises(DataError):
        FitContext.make(X, w)


def test_parallel_leaf_assignment_equals_serial():
    """assign_children_parallel labels every row of a node like the serial kernel."""
    from distviz.trees.splitting import assign_children, assign_children_parallel

    rng = np.random.default_rng(23)
    codes = rng.integers(0, 50, 5000).astype(np.uint8)
    rows = np.sort(rng.permutation(5000)[:3000]).astype(np.int32)
    a = np.full(5000, -1, dtype=np.int32)
    b = a.copy()
    assign_children(codes, rows, 100, 2900, 20, 3, 4, a)
    assign_children_parallel(codes, rows, 100, 2900, 20, 3, 4, b)
    np.testing.assert_array_equal(a, b)
    assert set(np.unique(a[rows[100:2900]])) == {3, 4}


@pytest.mark.parametrize("threads", [0, 1, 2])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("missing", [False, True])
def test_grower_node_sums_of_extra_columns_equal_node_sums(threads, weighted, missing):
    """The grower's per-node sums of extra columns (Gain^ent's T) equal node_sums over train_leaf bit for bit, and the
    leaves it labels in the same pass (final splits, missing values left or right) are those of a grow without them."""
    from distviz.trees.grower import NO_AUX, NO_ROOT_LEAD, NO_ROOT_TOT, grow_batch, no_row_codes, node_sums
    from distviz.trees.histogram import row_stats
    from distviz.trees.record import NODE_DTYPE

    rng = np.random.default_rng(24)
    X, R, w = _data(rng, n=900, K=1)
    if missing:
        X[::5, 0] = np.nan
        X[::7, 1] = np.nan
    Xb = Binner(32).fit_transform(X)
    o = 2 if weighted else 1
    ww = w if weighted else np.ones(900)
    aux = row_stats(rng.poisson(3.0, (900, 2)).astype(float), ww, 2) if weighted else rng.normal(size=(900, 1))
    work = np.empty((2, 900), dtype=np.int32)  # partition scratch shared by the trees
    nan_left = 0
    for depth, leaves in ((3, 1 << 62), (4, 5), (2, 1 << 62), (1, 1 << 62)):
        grown = [(nodes, *grow_batch(
            Xb.codes_T, no_row_codes(Xb.codes_T), NO_ROOT_LEAD, NO_ROOT_TOT, Xb.binner.n_bins_, Xb.binner.n_hist_bins_,
            R[None], ww, o, 31, depth, leaves, 1e-3, 1.0, 0.0, threads, extra, work, Xb.binner.threshold_table_, nodes,
        )) for extra, nodes in ((aux, np.empty((1, 31), NODE_DTYPE)), (NO_AUX, np.empty((1, 31), NODE_DTYPE)))]
        nodes, nn, value, fgains, tl, S = grown[0]
        n = int(nn[0])
        ref = node_sums(tl[0], aux, nodes[0, :n]["left"], nodes[0, :n]["right"], n)
        np.testing.assert_array_equal(S[0, :n], ref)
        other = grown[1]
        assert int(other[1][0]) == n
        for k in NODE_DTYPE.names:
            np.testing.assert_array_equal(nodes[0, :n][k], other[0][0, :n][k])
        np.testing.assert_array_equal(value[0, :n], other[2][0, :n])
        np.testing.assert_array_equal(fgains[0, :n], other[3][0, :n])
        np.testing.assert_array_equal(tl, other[4])
        nan_left += int(nodes[0, :n]["missing_left"].sum())
    assert nan_left > 0 or not missing  # some split sends the missing values left (the labelling's other branch)


def test_parallel_partition_equals_serial():
    """partition_parallel gives partition()'s stable result and boundary for any number of blocks, missing code or not."""
    from distviz.trees.splitting import partition, partition_parallel

    rng = np.random.default_rng(25)
    codes = rng.integers(0, 40, 3000).astype(np.uint8)
    base = np.sort(rng.permutation(3000)[:2500]).astype(np.int32)
    for b, miss in ((0, -1), (7, -1), (20, -1), (39, -1), (7, 39), (-1, 39)):
        ref = base.copy()
        mid = partition(codes, ref, 50, 2400, b, np.empty(3000, dtype=np.int32), miss)
        for blocks in (1, 2, 3, 8, 5000):
            out = base.copy()
            assert partition_parallel(codes, out, 50, 2400, b, np.empty(3000, dtype=np.int32), blocks, miss) == mid
            np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("max_bins", [2, 17, 255, 1000, "exact"])
def test_row_order_binning_kernel_equals_column_kernel(max_bins):
    """Binning X in its row order (parallel row blocks, padded search table) gives the column kernel's codes."""
    from distviz.trees.binning import _bin_codes, _bin_codes_rows

    rng = np.random.default_rng(26)
    X = np.round(rng.normal(size=(20_000, 3)) * 50) / 50
    X[:5] = [[-1e9, 0.0, 1e9]] * 5  # beyond the fitted range
    b = Binner(max_bins).fit(X[5:3000])
    codes = b.transform(X).codes_T
    ref = np.empty_like(codes)
    _bin_codes(np.ascontiguousarray(X.T), b._edge_table, b.n_bins_ - 1, ref, b.missing_bin_)  # as transform calls it
    np.testing.assert_array_equal(codes, ref)
    direct = np.empty_like(ref)
    _bin_codes_rows(X, b._search_table, b._search_top, direct, b.missing_bin_)
    np.testing.assert_array_equal(direct, ref)
    np.testing.assert_array_equal(b.transform(np.asfortranarray(X)).codes_T, ref)  # the transposing path


def test_one_tree_record_behind_every_view():
    """HistTree, fit_many's Forest and FlatForest read one TreeRecord: no copies, leaves masked, sklearn trees too."""
    from distviz.trees import NODE_DTYPE, TreeRecord
    from distviz.trees.flat import FlatForest

    rng = np.random.default_rng(31)
    X, R, w = _data(rng, n=400, K=2)
    t = HistTree(max_depth=3).fit(X, R, sample_weight=w)
    rec = t.record_
    assert t.nodes_ is rec and rec.nodes.dtype == NODE_DTYPE and t.value_ is rec.value
    leaf = rec.is_leaf
    assert (rec.feature[leaf] == -1).all() and np.isnan(rec.gain[leaf]).all() and np.isnan(rec.feature_gains[leaf]).all()
    assert (rec.feature[~leaf] >= 0).all() and np.isfinite(rec.threshold[~leaf]).all()
    np.testing.assert_array_equal(rec.depth[rec.left[~leaf]], rec.depth[~leaf] + 1)
    df = rec.to_dataframe()
    assert list(df.columns[:9]) == ["feature", "threshold", "bin", "left", "right", "is_leaf", "depth", "weight",
                                    "n_samples"] and len(df) == rec.n_nodes
    t.set_leaf_values(np.ones((t.n_leaves_, 2)))
    assert t.record_.nodes is rec.nodes and (t.predict(X) == 1.0).all()   # new values, the same node rows
    F = fit_many(X, np.stack([R, -R]), max_depth=2)
    assert np.shares_memory(F[1].record_.nodes, F.nodes)
    np.testing.assert_array_equal(F[1].predict(X), F.predict(X)[1])
    flat = FlatForest.from_records([F.record(0), F.record(1)], n_features=X.shape[1], n_outputs=2)
    np.testing.assert_array_equal(flat.predict(X), F.predict(X).sum(axis=0))
    s = DecisionTreeRegressor(max_depth=4, random_state=0).fit(X, R[:, 0])
    srec = TreeRecord.from_sklearn_tree(s)
    assert srec.depth.max() == s.get_depth() and srec.n_samples[0] == X.shape[0]
    np.testing.assert_array_equal(srec.value[s.apply(X.astype(np.float32)), 0], s.predict(X))
