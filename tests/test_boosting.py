"""Tests of exponential-family boosting (distviz.boosting: engine, laws, estimator, trace, io)."""

import numpy as np
import pytest

from distviz.boosting.engine import BoostingEngine, predict_raw
from distviz.boosting.laws import LAWS, make_law, partition_entropy
from distviz.data.synthetic import make_synthetic
from distviz.errors import ConfigError, DataError
from distviz.estimators import DistributionalBoosting
from distviz.families import get
from distviz.trees import Binner

ALL_LAWS = ["mgd", "ngd", "gd", "mgd_natural", "ngd_mean"]


def _grouped(family, n_x=6, reps=25, seed=0):
    """Distinct x values, each repeated, with y drawn from a family whose eta* varies with x."""
    rng = np.random.default_rng(seed)
    x = np.repeat(np.arange(n_x, dtype=float), reps)
    if family == "poisson":
        y = rng.poisson(2.0 + x)
    elif family == "normal":
        y = np.sin(x) + (0.5 + 0.2 * x) * rng.standard_normal(len(x))
    elif family == "categorical":
        y = (np.arange(len(x)) + np.repeat(np.arange(n_x), reps)) % 3
        y[rng.uniform(size=len(x)) < 0.3 + 0.1 * (x % 2)] = 2
    else:
        raise ValueError(family)
    return x[:, None], y.astype(float)


def _group_mean_T(fam, x, y):
    T = fam.sufficient_stats(y)
    out = np.empty_like(T)
    for v in np.unique(x[:, 0]):
        s = x[:, 0] == v
        out[s] = T[s].mean(axis=0)
    return out


@pytest.mark.parametrize("family", ["poisson", "normal", "categorical"])
def test_mgd_infinitely_expressive_limit(family):
    """Exact bins, one leaf per distinct x: eta*_{t+1} = (1 - lr) eta*_t + lr mean(T(y) | x) (note, 'Infinitely expressive')."""
    X, y = _grouped(family)
    kw = {"K": 3} if family == "categorical" else {}
    lr = 0.3
    m = DistributionalBoosting(family, law="mgd", n_estimators=4, learning_rate=lr, max_depth=6, max_bins="exact",
                               min_weight_leaf=1.0, family_params=kw).fit(X, y)
    fam = get(family, **kw)
    target = _group_mean_T(fam, X, y)
    es = m.trace_.eta_star.values
    assert es.shape[0] == 5 and m.trace_.n_projected.values.sum() == 0
    for t in range(4):
        np.testing.assert_allclose(es[t + 1], (1 - lr) * es[t] + lr * target, rtol=0, atol=1e-12)


@pytest.mark.parametrize("family", ["poisson", "normal"])
def test_ngd_and_mgd_agree_to_first_order(family):
    """From the same start, the one-round eta* difference between NGD and MGD is O(lr^2): halving lr quarters it."""
    X, y = _grouped(family, seed=3)
    diffs = []
    for lr in (0.02, 0.01):
        es = {}
        for law in ("mgd", "ngd"):
            m = DistributionalBoosting(family, law=law, n_estimators=1, learning_rate=lr, max_depth=6,
                                       max_bins="exact").fit(X, y)
            es[law] = m.predict_mean(X)
        diffs.append(np.abs(es["mgd"] - es["ngd"]).max())
    assert diffs[1] > 0
    assert diffs[0] / diffs[1] == pytest.approx(4.0, abs=0.5)


@pytest.mark.parametrize("family", ["poisson", "normal", "gamma"])
def test_partition_identity_after_one_full_mgd_round(family):
    """One MGD round with lr = 1 from the constant start: weighted NLL == H - mean_w(log h(y)) (note, 'Entropy')."""
    d = make_synthetic(family, n=600, random_state=4)
    w = np.random.default_rng(0).uniform(0.5, 2.0, size=600)
    m = DistributionalBoosting(family, law="mgd", n_estimators=1, learning_rate=1.0, max_depth=3,
                               min_weight_leaf=20.0).fit(d.X, d.y, sample_weight=w)
    fam = get(family)
    tr = m.trace_
    assert tr.n_projected.values[1] == 0
    nll = float(np.average(fam.nll(d.y, m.predict_natural(d.X)), weights=w))
    H = float(tr.entropy.values[1])
    lh = float(np.average(fam.log_base_measure(d.y), weights=w))
    assert tr.train_nll.values[1] == pytest.approx(nll, abs=1e-10)
    assert nll == pytest.approx(H - lh, abs=1e-10)


@pytest.mark.parametrize("family,n,lr", [("poisson", 4000, 0.1), ("bernoulli", 4000, 0.1), ("gamma", 4000, 0.2),
                                          ("normal", 6000, 0.1)])
def test_laws_on_simulations_reach_the_oracle(family, n, lr):
    """All five laws reduce training NLL; MGD and NGD get a test NLL within 2% of the true model's.

    Plain GD in eta needs a smaller step (0.02): at 0.1 it diverges for the Normal and the Gamma,
    which is the coordinate dependence the note describes.
    """
    d = make_synthetic(family, n=2 * n, random_state=11)
    tr, te = d.split(0.5, random_state=0)
    h = n // 2
    for law in ALL_LAWS:
        matched = law in ("mgd", "ngd")
        m = DistributionalBoosting(family, law=law, n_estimators=300 if matched else 40,
                                   learning_rate=0.02 if law == "gd" else lr, max_depth=3, min_weight_leaf=40.0,
                                   early_stopping_rounds=20 if matched else None, trace_rows=50)
        m.fit(tr.X, tr.y, eval_set=(te.X[:h], te.y[:h]) if matched else None)
        tn = m.trace_.train_nll.values
        assert np.isfinite(tn).all()
        assert tn[m.best_iteration_] < tn[0] - 0.01, law
        if matched:
            test = -m.score(te.X[h:], te.y[h:])  # score is the mean log-likelihood
            orc = te.oracle_nll(te.X[h:], te.y[h:])
            assert abs(test - orc) <= 0.02 * abs(orc), (law, test, orc)


def test_trace_variables_and_dimensions():
    d = make_synthetic("normal", n=300, random_state=0)
    m = DistributionalBoosting("normal", law="ngd", n_estimators=7, trace_rows=100, random_state=0)
    m.fit(d.X, d.y, eval_set=(d.X[:50], d.y[:50]))
    tr = m.trace_
    for v in ("train_nll", "valid_nll", "entropy", "n_projected"):
        assert tr[v].dims == ("round",) and tr.sizes["round"] == 8
    for v in ("eta", "eta_star"):
        assert tr[v].dims == ("round", "obs", "param") and tr[v].shape == (8, 100, 2)
    for v in ("node_feature", "node_threshold", "node_weight", "node_gain", "node_gain_ent", "node_is_leaf"):
        assert tr[v].dims == ("round", "node")
    assert tr["node_value"].dims == ("round", "node", "param")
    assert tr.attrs["gain_name"] == "Gain^NGD" and tr.attrs["law"] == "ngd" and tr.attrs["family"] == "normal"
    assert np.isnan(tr.entropy.values[0]) and np.isfinite(tr.entropy.values[1:]).all()
    T = get("normal").sufficient_stats(d.y)
    for r, rnd in enumerate(m.result_.rounds, start=1):   # telescoped Gain^ent == direct leaf sums
        assert rnd.trees[0].train_leaf_ is None   # released after the round (the engine's memory note)
        leaf = rnd.trees[0].apply(d.X)
        assert tr.entropy.values[r] == pytest.approx(partition_entropy(get("normal"), leaf, T), abs=1e-12)
    # the stored eta is the model's eta on the display rows
    rows = tr.obs_index.values
    np.testing.assert_allclose(tr.eta.values[-1], m.predict_natural(d.X[rows], max_iter=7), rtol=1e-12)
    # root weight of each tree is the total training weight
    assert np.allclose(tr.node_weight.values[1:, 0], 300)
    m2 = DistributionalBoosting("poisson", law="mgd", n_estimators=3).fit(d.X, np.abs(np.round(d.y)))
    assert m2.trace_.attrs["gain_name"] == "Gain^reg" and m2.trace_.sizes["obs"] == 300


def test_save_load_bit_identical(tmp_path):
    d = make_synthetic("categorical", n=400, p=2, random_state=1)
    m = DistributionalBoosting("categorical", law="mgd_natural", n_estimators=15, family_params={"K": 3}).fit(d.X, d.y)
    p = tmp_path / "model.nc"
    m.save(p)
    m2 = DistributionalBoosting.load(p)
    Xn = np.random.default_rng(0).uniform(-4, 4, size=(200, 2))
    np.testing.assert_array_equal(m.predict_mean(Xn), m2.predict_mean(Xn))
    np.testing.assert_array_equal(m.predict_natural(Xn, max_iter=5), m2.predict_natural(Xn, max_iter=5))
    assert m2.get_params() == m.get_params()
    np.testing.assert_array_equal(m.trace_.eta.values, m2.trace_.eta.values)
    assert m2.trace_.attrs["law"] == "mgd_natural"


def test_bad_inputs_raise_data_and_config_errors():
    X = np.zeros((4, 1))
    with pytest.raises(DataError):
        DistributionalBoosting("poisson", n_estimators=2).fit(X, [1, 2, -1, 0])
    with pytest.raises(DataError):
        DistributionalBoosting("bernoulli", n_estimators=2).fit(X, [0, 1, 2, 0])
    with pytest.raises(DataError):
        DistributionalBoosting("normal", n_estimators=2).fit(X, [0, 1, np.nan, 0])
    with pytest.raises(DataError):
        DistributionalBoosting("normal", n_estimators=2).fit(X, [0, 1, 2])
    with pytest.raises(DataError):
        DistributionalBoosting("normal", n_estimators=2).fit([[np.inf]] * 4, [0, 1, 2, 3])
    with pytest.raises(ConfigError):
        DistributionalBoosting("normal", law="adam").fit(X, [0, 1, 2, 3])
    with pytest.raises(ConfigError):
        DistributionalBoosting("normal").predict_mean(X)


def test_early_stopping_keeps_the_best_round():
    d = make_synthetic("poisson", n=600, random_state=5)
    m = DistributionalBoosting("poisson", law="mgd", n_estimators=400, learning_rate=0.5, max_depth=4,
                               early_stopping_rounds=5, validation_fraction=0.3, random_state=0,
                               min_weight_leaf=1.0).fit(d.X, d.y)
    v = m.trace_.valid_nll.values
    assert m.best_iteration_ == int(np.argmin(v))
    assert m.n_iter_ == m.best_iteration_ + 5 < 400
    np.testing.assert_array_equal(m.predict_mean(d.X), m.predict_mean(d.X, max_iter=m.best_iteration_))
    staged = list(m.staged_predict_mean(d.X))
    assert len(staged) == m.n_iter_
    np.testing.assert_array_equal(staged[m.best_iteration_ - 1], m.predict_mean(d.X))


@pytest.mark.parametrize("law", ALL_LAWS)
@pytest.mark.parametrize("family", ["mvn", "categorical", "exponential"])
def test_every_law_and_family_stays_finite(law, family):
    """Projection keeps every iterate in the domain (never NaN), also for mvn and the crossed laws.

    lr = 0.5 is deliberately aggressive: several laws leave the domain and the NLL may grow, but
    nothing becomes NaN and every prediction is a valid distribution.
    """
    d = make_synthetic(family, n=300, random_state=2)
    m = DistributionalBoosting(family, law=law, n_estimators=20, learning_rate=0.5, max_depth=3, min_weight_leaf=5.0,
                               family_params=d.family_kwargs).fit(d.X, d.y)
    fam = get(family, **d.family_kwargs)
    assert np.isfinite(m.trace_.train_nll.values).all()
    assert np.isfinite(m.trace_.eta.values).all() and np.isfinite(m.trace_.eta_star.values).all()
    mean, eta = m.predict_mean(d.X), m.predict_natural(d.X)
    assert np.isfinite(mean).all() and np.isfinite(eta).all()
    if LAWS[law].coord == "mean":
        assert fam.in_mean_domain(mean).all()
    else:
        assert fam.in_natural_domain(eta).all()


def test_mgd_projection_counts_rows_that_leave_the_domain():
    """A shared leaf mean pushes some Poisson rates below zero in round 2; those rows are projected and counted."""
    x1 = np.repeat([0.0, 0.0, 1.0, 1.0], 25)
    x2 = np.repeat([0.0, 1.0, 0.0, 1.0], 25)
    y = np.concatenate([np.tile([0.0, 1.0], 13)[:25], np.tile([0.0, 1.0], 13)[:25], np.full(25, 5.0), np.full(25, 35.0)])
    X = np.c_[x1, x2]
    m = DistributionalBoosting("poisson", law="mgd", n_estimators=3, learning_rate=1.0, max_depth=1,
                               max_bins="exact").fit(X, y)
    tr = m.trace_
    assert list(tr.node_feature.values[1:3, 0]) == [0, 1]   # round 1 splits on x1, round 2 on x2
    assert tr.n_projected.values[2] == 25                    # cell x1 = 0, x2 = 0: 0.5 - 7.5 < 0
    mean = m.predict_mean(X)
    assert np.isfinite(mean).all() and (mean > 0).all()
    assert np.isfinite(tr.train_nll.values).all()


def test_engine_interface_separate_trees_line_search_and_masks():
    """The generic loop: per-coordinate trees, NGBoost line search, callbacks freezing coordinates."""
    d = make_synthetic("normal", n=400, random_state=3)
    fam = get("normal")
    law = make_law("ngd", fam)
    Xb = Binner(63).fit_transform(d.X)
    frozen_at = {}

    def freeze(info):
        if info.round == 3:
            info.active[1] = False
            frozen_at["F"] = info.F_train[:, 1].copy()
        return False

    eng = BoostingEngine(law, n_rounds=6, learning_rate=0.1, tree_params={"max_depth": 2}, tree_mode="separate",
                         line_search=True)
    res = eng.fit(Xb, d.y, callbacks=[freeze])
    assert res.n_rounds == 6 and list(res.n_trees) == [6, 3]
    np.testing.assert_array_equal(res.F_train[:, 1], frozen_at["F"])
    assert all(s > 0 for s in res.scales[1:])
    assert np.all(np.diff(res.train_loss) <= 1e-12)
    np.testing.assert_allclose(predict_raw(res, law, Xb), res.F_train, rtol=0, atol=0)
    with pytest.raises(ConfigError):
        BoostingEngine(law, tree_mode="forest")


@pytest.mark.parametrize("coord", ["mean", "natural"])
def test_in_domain_equals_the_masked_reference(coord):
    """The laws' domain test (whole-F fast path when every row is finite) marks the rows the masked test marks."""
    from distviz.boosting.laws import _in_domain

    rng = np.random.default_rng(12)
    for fam, K in (("poisson", 1), ("normal", 2), ("gamma", 2), ("bernoulli", 1), ("exponential", 1)):
        family = get(fam)
        f = family.in_mean_domain if coord == "mean" else family.in_natural_domain
        for with_nonfinite in (False, True):
            F = rng.normal(size=(3000, K)) * 2
            if with_nonfinite:
                F[::13, 0] = np.nan
                F[::17, -1] = np.inf
            want = np.isfinite(F).all(axis=1)
            want[want] = np.asarray(f(F[want]), dtype=bool)
            np.testing.assert_array_equal(_in_domain(family, F, coord), want)


@pytest.mark.parametrize("coord", ["mean", "natural"])
def test_compiled_domain_is_the_domain_test(coord):
    """The compiled domain test of prediction admits a row only where the family's test does, and agrees with it
    exactly except LOG / SIMPLEX rows within their stated margins of the boundary (rejected: replayed, exact)."""
    from distviz.families.base import LOG, SIMPLEX
    from distviz.trees.flat import _inside

    rng = np.random.default_rng(13)
    for fam, kw in (("poisson", {}), ("normal", {}), ("gamma", {}), ("bernoulli", {}), ("exponential", {}),
                    ("categorical", {"K": 4}), ("mvn", {}), ("mvn", {"P": 3})):
        family = get(fam, **kw)
        kind, lo, hi, scale = family.domain(coord)
        f = family.in_mean_domain if coord == "mean" else family.in_natural_domain
        F = rng.normal(size=(4000, family.dim)) * 2
        if fam == "categorical" and coord == "mean":
            F = np.abs(F) / 4
        F[::13, 0], F[::17, -1], F[::19, 0] = np.nan, np.inf, -1.0   # -1: the Gamma's boundary
        if fam == "normal" and coord == "mean":
            F[::23, 1] = F[::23, 0] ** 2   # on the boundary: variance exactly 0
        P = getattr(family, "P", 0)
        M, L = np.zeros((P, P)), np.zeros((P, P))
        got = np.array([_inside(row, kind, lo, hi, scale, M, L) for row in F])
        want = np.asarray(f(F), dtype=bool) & np.isfinite(F).all(axis=1)
        assert not (got & ~want).any(), fam
        if kind in (LOG, SIMPLEX):
            assert (got == want).mean() > 0.99, fam
        else:
            np.testing.assert_array_equal(got, want, err_msg=fam)
        assert want.any() and (~want).any(), fam


@pytest.mark.parametrize("family, law, domain", [("exponential", "mgd", "project"), ("poisson", "ngd_mean", "backtrack"),
                                                 ("normal", "mgd", "backtrack"), ("normal", "gd", "project"),
                                                 ("mvn", "ngd", "backtrack"), ("categorical", "mgd", "project"),
                                                 ("gamma", "mgd", "project"), ("mvn", "mgd", "project"),
                                                 ("normal", "ngd", "project"), ("normal", "ngd", "backtrack")])
def test_compiled_prediction_equals_the_round_by_round_update(family, law, domain):
    """predict's one compiled pass (the domain test in the pass) plus the
    replay of the rows that left the domain gives training's iterates and the round-by-round update's, bit for bit,
    also where many rows were projected or backtracked and on rows with missing values outside the training range."""
    from distviz.boosting.predict import replay_iterate, start_iterate

    rng = np.random.default_rng(0)
    n = 3000
    X = rng.uniform(-2, 2, size=(n, 4))
    X[::11, 1] = np.nan
    z = np.sin(2 * X[:, 0]) + X[:, 2]
    y = {"poisson": rng.poisson(np.exp(0.5 + z)).astype(float), "exponential": rng.exponential(np.exp(0.5 * z)),
         "normal": z + 0.3 * rng.standard_normal(n) * np.exp(0.5 * X[:, 3]), "categorical": np.clip(np.round(z + 1), 0, 2),
         "mvn": np.stack([z + 0.3 * rng.standard_normal(n), -z + 0.5 * rng.standard_normal(n)], 1),
         "gamma": rng.gamma(2.0, np.exp(0.5 * z))}[family]
    kw = {"K": 3} if family == "categorical" else {}
    m = DistributionalBoosting(family, law=law, n_estimators=15, learning_rate=1.5, max_depth=3, min_weight_leaf=1.0,
                               domain=domain, family_params=kw).fit(X, y)
    assert sum(m.result_.n_projected) > 0   # the replay is exercised
    np.testing.assert_array_equal(m._raw(X, m.n_iter_), m.result_.F_train)
    Xn = X[rng.permutation(X.shape[0])] * 1.5
    Xn[::7, -1] = np.nan
    for r in (0, 1, m.n_iter_):
        ref = replay_iterate(m.forest_.flat, start_iterate(m._law, m.forest_.init), m._law, Xn, r)
        np.testing.assert_array_equal(m._raw(Xn, r), ref)


def test_flat_walk_of_unbalanced_trees_reaches_the_branching_walks_leaves():
    """The fixed-depth walk (leaves looping to themselves) ends at the leaf a plain walk reaches, NaN included."""
    from distviz.trees.flat import FlatForest

    # tree 0: a chain to depth 3 on the left, a leaf on the right; tree 1: a single leaf (depth 0)
    left = [1, 3, -1, 5, -1, -1, -1, -1]
    right = [2, 4, -1, 6, -1, -1, -1, -1]
    feature = [0, 1, -1, 0, -1, -1, -1, -1]
    thr = [0.0, 0.5, 0, -1.0, 0, 0, 0, 0]
    ml = [1, 0, 0, 1, 0, 0, 0, 0]
    value = [[0.0], [0.0], [1.0], [0.0], [2.0], [3.0], [4.0], [10.0]]
    f = FlatForest(feature, thr, ml, left, right, value, [0, 7, 8], multiplier=[1.0, 0.5], n_features=2)
    rng = np.random.default_rng(3)
    X = rng.normal(size=(5000, 2)) * 2
    X[::5, 0] = np.nan
    X[::7, 1] = np.nan

    def walk(x):
        g = 0
        while left[g] >= 0:
            v = x[feature[g]]
            go_left = bool(ml[g]) if np.isnan(v) else v <= thr[g]
            g = left[g] if go_left else right[g]
        return value[g][0]

    want = np.array([walk(x) for x in X]) + 5.0
    np.testing.assert_array_equal(f.predict(X)[:, 0], want)
    leaves = f.apply(X)
    np.testing.assert_array_equal(np.asarray(value)[leaves[0], 0], want - 5.0)
    assert (leaves[1] == 7).all()


@pytest.mark.parametrize("weighted", [False, True])
def test_root_entropy_without_leaf_ids_is_the_one_leaf_partition(weighted):
    """partition_entropy(leaf=None), the engine's root term, gives the bits of the all-zeros leaf partition."""
    rng = np.random.default_rng(9)
    T = np.c_[rng.normal(size=5000), rng.normal(size=5000) ** 2]
    w = rng.uniform(0.0, 2.0, 5000) if weighted else None
    for fam, TT in (("normal", T), ("poisson", rng.poisson(2.0, (5000, 1)).astype(float))):
        zeros = np.zeros(TT.shape[0], dtype=np.int64)
        assert partition_entropy(get(fam), None, TT, w) == partition_entropy(get(fam), zeros, TT, w)


def test_partition_entropy_matches_direct_formula():
    fam = get("poisson")
    y = np.array([0.0, 1, 2, 3, 4, 5])
    leaf = np.array([1, 1, 1, 2, 2, 2])
    T = fam.sufficient_stats(y)
    H = partition_entropy(fam, leaf, T)
    means = np.array([[1.0], [4.0]])
    assert H == pytest.approx(-0.5 * fam.conjugate(means).sum(), abs=1e-14)


def test_get_set_params_round_trip():
    m = DistributionalBoosting("categorical", law="ngd", n_estimators=3, family_params={"K": 4})
    p = m.get_params()
    assert p["family_params"] == {"K": 4} and p["law"] == "ngd"
    m.set_params(n_estimators=5, family_params={"K": 3})
    assert m.n_estimators == 5 and m.get_params()["family_params"] == {"K": 3}
    assert set(LAWS) == set(ALL_LAWS)


def test_laws_study_reports_every_law():
    from distviz.experiments.laws import run

    out = run(family="bernoulli", n=400, rounds=10, depth=2, patience=5)
    assert set(out) >= set(ALL_LAWS) | {"oracle"}
    for law in ALL_LAWS:
        r = out[law]
        assert np.isfinite(r["test_nll"]) and r["oracle_nll"] == out["oracle"]["test_nll"]
        assert 0 <= r["best_iteration"] <= 10


def test_backtrack_goes_at_most_half_way_to_the_boundary():
    """domain="backtrack": rows whose step leaves the domain keep at least half their slack; others take the full step."""
    from distviz.boosting.laws import _backtrack

    fam = get("normal")
    rng = np.random.default_rng(0)
    m1 = rng.normal(size=200)
    v0 = rng.uniform(0.1, 2.0, size=200)
    F = np.c_[m1, v0 + m1 ** 2]
    step = rng.normal(scale=2.0, size=(200, 2))
    Fn, changed = _backtrack(fam, F, step, "mean")
    left = ~fam.in_mean_domain(F + step)
    assert left.any() and (~left).any()
    np.testing.assert_array_equal(changed, left)
    np.testing.assert_array_equal(Fn[~left], (F + step)[~left])
    v1 = Fn[:, 1] - Fn[:, 0] ** 2
    assert (v1[left] >= 0.5 * v0[left] * (1 - 1e-12)).all()       # concave slack: at most half way out
    s = (Fn[left] - F[left])[:, 0] / step[left, 0]
    assert np.allclose(np.log2(s), np.round(np.log2(s))) and (s <= 0.5).all()


def test_default_domain_keeps_mgd_normal_with_noise_features_stable():
    """Regression: MGD, Normal, p = 3 used to reach train NLL ~5000 (rows projected to variance 1e-6); now it stays moderate.

    The exits themselves are real MGD behaviour (shared leaf means) and remain visible in n_projected and with
    domain="project"; without exits both settings give identical fits.
    """
    d = make_synthetic("normal", n=500, p=3, random_state=0)
    kw = dict(n_estimators=100, learning_rate=0.1, validation_fraction=0.2, random_state=0)
    safe = DistributionalBoosting("normal", law="mgd", **kw).fit(d.X, d.y)
    proj = DistributionalBoosting("normal", law="mgd", domain="project", **kw).fit(d.X, d.y)
    assert safe.domain == "backtrack"
    assert safe.trace_.n_projected.values.sum() > 0
    assert proj.trace_.train_nll.values.max() > 100
    assert safe.trace_.train_nll.values.max() < 10
    d1 = make_synthetic("normal", n=300, p=1, random_state=0)
    a = DistributionalBoosting("normal", law="mgd", n_estimators=30).fit(d1.X, d1.y)
    b = DistributionalBoosting("normal", law="mgd", n_estimators=30, domain="project").fit(d1.X, d1.y)
    assert a.trace_.n_projected.values.sum() == 0
    np.testing.assert_array_equal(a.predict_natural(d1.X), b.predict_natural(d1.X))


def test_engine_line_search_stops_instead_of_stalling():
    """Regression: when no step along a round's trees lowers the NLL (s = 0), the engine stops instead of refitting
    the same trees with s = 0 for every remaining round; the loss never rises and the reason is recorded."""
    d = make_synthetic("normal", n=500, random_state=0)
    Xb = Binner(255).fit_transform(d.X)
    res = BoostingEngine(make_law("mgd", get("normal")), n_rounds=100, learning_rate=0.1,
                         tree_params=dict(max_depth=3), line_search=True).fit(Xb, d.y)
    assert res.n_rounds < 100 and "line search" in res.stop_reason
    assert all(s > 0 for s in res.scales[1:])
    assert np.all(np.diff(res.train_loss) <= 1e-12)
    full = BoostingEngine(make_law("mgd", get("normal")), n_rounds=5, learning_rate=0.1,
                          tree_params=dict(max_depth=3)).fit(Xb, d.y)
    assert full.n_rounds == 5 and full.stop_reason == ""


def _poisson_round_inputs(seed=0, n=40_000):
    """An MGD iterate, a tree's leaf values / leaves, and the Poisson data of a fused-round test."""
    rng = np.random.default_rng(seed)
    y = rng.poisson(3.0, n).astype(float)
    law = make_law("mgd", get("poisson"))
    data = law.prepare(y)
    F = rng.uniform(0.5, 5.0, (n, 1))
    value = rng.normal(0.0, 1.0, 8)
    leaf = rng.integers(0, 8, n).astype(np.int32)
    w = rng.uniform(0.0, 2.0, n)
    return law, data, F, value, leaf, w


@pytest.mark.parametrize("weighted", [False, True])
def test_fused_mgd_round_equals_update_loss_and_targets(weighted):
    """Poisson MGD's fused pass gives update, weighted NLL and next targets of the unfused law (NLL to 1e-12)."""
    law, data, F, value, leaf, w = _poisson_round_inputs()
    w = w if weighted else None
    F_new, loss, R_new = law.fused_round(F, leaf, value, 0.1, data, w)
    F_ref, proj = law.update(F, 0.1 * value[leaf][:, None])
    assert not proj.any()
    np.testing.assert_array_equal(F_new, F_ref)
    np.testing.assert_array_equal(R_new, law.targets(F_ref, data, 0.1))
    from distviz.boosting.engine import weighted_mean

    ref = weighted_mean(law.loss(F_ref, data), w)
    assert abs(loss - ref) <= 1e-12 * abs(ref)
    # a row that leaves the mean domain: no fused result, the engine takes the projecting update
    value[3] = -1e3
    assert law.fused_round(F, leaf, value, 0.1, data, w) is None
    assert make_law("mgd", get("normal")).fused_round(F, leaf, value, 0.1, data, w) is None


@pytest.mark.parametrize("weighted", [False, True])
def test_engine_fused_rounds_equal_unfused_rounds(weighted):
    """The engine's fused Poisson MGD rounds give the unfused engine's trees, iterates and (to 1e-12) NLL trace."""
    rng = np.random.default_rng(5)
    X = rng.uniform(-2, 2, size=(4000, 3))
    y = rng.poisson(np.exp(0.5 + np.sin(X[:, 0]))).astype(float)
    w = rng.uniform(0.0, 2.0, 4000) if weighted else None
    Xb = Binner(255).fit_transform(X)
    tp = {"max_depth": 3, "min_weight_leaf": 1e-3}
    steps, fused, kept_a, kept_b = [], [], [], []
    law = make_law("mgd", get("poisson"))
    kernel = law.fused_round

    def counted(*args, **kw):
        out = kernel(*args, **kw)
        fused.append(out is not None)
        return out

    law.fused_round = counted

    def keep(store):  # keeps every round's iterate and targets: the engine must not write into them again
        return lambda info: store.append((info.F_train, info.targets, info.F_train.copy(), info.targets.copy()))

    a = BoostingEngine(law, n_rounds=12, learning_rate=0.5, tree_params=tp).fit(
        Xb, y, sample_weight=w, callbacks=[lambda info: steps.append(info.step), keep(kept_a)])
    assert len(fused) == 12 and sum(fused) >= 6  # the rest: a row left the domain
    law_u = make_law("mgd", get("poisson"))
    law_u.fused_round = lambda *args, **kw: None  # every round takes the unfused update
    b = BoostingEngine(law_u, n_rounds=12, learning_rate=0.5, tree_params=tp).fit(Xb, y, sample_weight=w,
                                                                                  callbacks=[keep(kept_b)])
    for (Fa, Ra, Fa0, Ra0), (Fb, Rb, _, _) in zip(kept_a, kept_b):
        np.testing.assert_array_equal(Fa, Fa0)
        np.testing.assert_array_equal(Ra, Ra0)
        np.testing.assert_array_equal(Fa, Fb)
        np.testing.assert_array_equal(Ra, Rb)
    # without callbacks holding them, the arrays of past rounds are reused: same results
    c = BoostingEngine(make_law("mgd", get("poisson")), n_rounds=12, learning_rate=0.5, tree_params=tp).fit(
        Xb, y, sample_weight=w)
    np.testing.assert_array_equal(c.F_train, b.F_train)
    np.testing.assert_array_equal(a.F_train, b.F_train)
    np.testing.assert_allclose(a.train_loss, b.train_loss, rtol=1e-12)
    np.testing.assert_array_equal(a.entropy, b.entropy)
    assert a.n_projected == b.n_projected
    for ra, rb in zip(a.rounds, b.rounds):
        np.testing.assert_array_equal(ra.trees[0].value_, rb.trees[0].value_)
    np.testing.assert_array_equal(steps[-1], 0.5 * b.rounds[-1].trees[0].predict(Xb))


_BLAS_THREADS_PROBE = """
import json
import numpy as np
from threadpoolctl import threadpool_limits
from distviz.estimators import DistributionalBoosting
from distviz.boosting.engine import weighted_mean
rng = np.random.default_rng(0)
v = rng.normal(size=1_000_003)
w = rng.uniform(0.0, 2.0, v.size)
X = rng.normal(size=(200_000, 3))
y = rng.poisson(np.exp(0.5 * X[:, 0])).astype(float)
ww = rng.uniform(0.0, 2.0, y.size)
out = []
for k in (1, 2):
    with threadpool_limits(limits=k, user_api="blas"):
        m = DistributionalBoosting("poisson", n_estimators=3, random_state=0).fit(X, y, sample_weight=ww)
        out.append([weighted_mean(v, w), m.trace_["train_nll"].values.tolist()])
print(json.dumps(out))
"""


def test_weighted_nll_does_not_depend_on_the_blas_threads():
    """A weighted fit's training NLL and weighted_mean give the same bits with 1 and 2 BLAS threads.

    Run in a fresh interpreter without the suite's OPENBLAS_NUM_THREADS=1, so that BLAS may use two
    threads: np.dot splits a long dot product among them (its last bits then change with the count).
    """
    import json
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    run = subprocess.run([sys.executable, "-c", _BLAS_THREADS_PROBE], capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    (m1, nll1), (m2, nll2) = json.loads(run.stdout.strip().splitlines()[-1])
    assert m1 == m2
    assert nll1 == nll2


def test_normal_natural_domain_bounded_by_the_data_range():
    """Normal.with_data_range(a, b): the domain is mean in (a, b) and variance below (b - a)^2 / 4, the compiled test
    (MEAN_RANGE) is the Python one, a row outside is projected inside with its mean clipped and its variance capped,
    a row inside is left as it is; unbounded (or a range of no width) the family is as before."""
    from distviz.families.univariate import Normal
    from distviz.trees.flat import _inside

    assert get("normal").with_data_range(1.0, 1.0).y_range is None and Normal().y_range is None
    fam = get("normal").with_data_range(-2.0, 3.0)
    rng = np.random.default_rng(3)
    mu, var = rng.uniform(-4, 5, 4000), np.exp(rng.uniform(-3, 3, 4000))
    eta = np.c_[mu / var, -0.5 / var]
    eta[::9, 1] = rng.uniform(-0.01, 0.5, eta[::9].shape[0])   # eta_2 near or above 0: no law, or a huge variance
    eta[::31, 0] = np.nan
    want = (mu > -2) & (mu < 3) & (var < 6.25) & np.isfinite(eta).all(axis=1)
    want[::9] = False
    ok = fam.in_natural_domain(eta)
    np.testing.assert_array_equal(ok, want)
    kind, lo, hi, scale = fam.domain("natural")
    M = np.zeros((0, 0))
    np.testing.assert_array_equal([_inside(r, kind, lo, hi, scale, M, M) for r in eta], ok)
    fin = np.isfinite(eta).all(axis=1)
    proj = fam.project_natural(eta[fin])
    assert fam.in_natural_domain(proj).all()
    np.testing.assert_array_equal(proj[ok[fin]], eta[fin][ok[fin]])
    pm, pv = fam.mean_and_variance(proj)
    law = fin & (eta[:, 1] < 0) & ~ok   # laws outside: their mean clipped, their variance capped
    v = -0.5 / eta[law, 1]
    np.testing.assert_allclose(pm[law[fin]], np.clip(eta[law, 0] * v, -2 + 5e-6, 3 - 5e-6), rtol=1e-9)
    np.testing.assert_allclose(pv[law[fin]], np.minimum(v, 6.25 * (1 - 1e-6)), rtol=1e-9)


def test_ngd_normal_stays_near_its_best_nll_with_sane_means(tmp_path):
    """Issue 28: Normal NGD with weights, NaN and an eval_set (the data of test_distributed's equality test, 20,000
    rows) reached train NLL 2.4 with predicted means of 6e4 for y of order 1 (domain="project": rows projected to
    variance 5e5), and 1e6 with domain="backtrack" at 25 rounds.  With the domain bounded by the targets' range the NLL stays
    at its best and every predicted mean lies in the range of y; the model file keeps the range."""
    n = 20_000

    def data(seed):
        r = np.random.default_rng(seed)
        X = r.normal(size=(n, 4))
        y = 0.5 * X[:, 0] - 0.4 * (X[:, 1] > 0.3) + 0.2 * X[:, 2] * X[:, 3] + np.exp(0.3 * X[:, 1]) * r.normal(size=n)
        return X, y

    (X, y), (Xv, yv) = data(1), data(3)
    rng = np.random.default_rng(2)
    w = rng.uniform(0.2, 2.0, n)
    X[rng.uniform(size=n) < 0.1, 0] = np.nan
    Xv[rng.uniform(size=n) < 0.1, 0] = np.nan
    for es, domain in ((2, "project"), (None, "backtrack")):
        m = DistributionalBoosting("normal", law="ngd", domain=domain, n_estimators=14 if es else 25,
                                   learning_rate=0.5, max_depth=2, max_bins=16, early_stopping_rounds=es,
                                   min_weight_leaf=5.0, random_state=0).fit(X, y, sample_weight=w, eval_set=(Xv, yv))
        tl = m.result_.train_loss
        assert sum(m.result_.n_projected) > 0 and m.family_.y_range == (y.min(), y.max())
        assert tl[-1] < min(tl) + 0.01 < 1.48, (es, domain, tl[-1])
        mean = m.predict(X, max_iter=m.n_iter_)
        assert (mean > y.min()).all() and (mean < y.max()).all()
    m.save(tmp_path / "ngd.nc")
    m2 = DistributionalBoosting.load(tmp_path / "ngd.nc")
    assert m2.family_.y_range == m.family_.y_range
    np.testing.assert_array_equal(m2.predict_natural(Xv, max_iter=m.n_iter_), m.predict_natural(Xv, max_iter=m.n_iter_))
