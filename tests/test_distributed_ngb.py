"""NGB and IndepNGB on a dask LocalCluster give the in-memory model (issue 19).

Same set-up as tests/test_distributed.py: one module-scoped LocalCluster(n_workers=2, threads_per_worker=1,
processes=False), 8 chunks, given bin edges; small fits (a few depth-3 rounds with the ngboost line search
and early stopping on an eval_set).
"""

from __future__ import annotations

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

import distviz.distributed as dd  # noqa: E402  (after importorskip)
from distviz.boosting.ngboost import NGB, IndepNGB  # noqa: E402  (after importorskip)
from distviz.errors import ConfigError  # noqa: E402  (after importorskip)
from distviz.trees import Binner  # noqa: E402  (after importorskip)

N, P, CHUNKS = 2400, 3, 8


@pytest.fixture(scope="module")
def client():
    """A LocalCluster(n_workers=2, threads_per_worker=1) in this process, and its Client."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0") as lc, \
            distributed.Client(lc) as c:
        yield c


def _data(seed):
    """Bivariate Normal y with x-dependent means, scales and correlation; NaN in one feature."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, P))
    mu = np.stack([X[:, 0], 0.5 * X[:, 1] - (X[:, 2] > 0)], axis=1)
    rho = 0.8 * np.tanh(X[:, 1])
    sd = np.stack([np.exp(0.3 * X[:, 2]), np.full(N, 0.5)], axis=1)
    z = rng.normal(size=(N, 2))
    y = mu + sd * np.stack([z[:, 0], rho * z[:, 0] + np.sqrt(1 - rho ** 2) * z[:, 1]], axis=1)
    X[rng.uniform(size=N) < 0.05, 1] = np.nan
    return X, y


def _chunked(a):
    return da.from_array(a, chunks=(N // CHUNKS,) + a.shape[1:])


def _binner(X):
    b0 = Binner(max_bins=24).fit(X)
    return Binner.from_edges(b0.bin_thresholds_, max_bins=24, has_missing=b0.has_missing_)


def _same(m0, m1, X):
    f0, f1 = m0.forest_, m1.forest_
    for k in ("tree_offsets", "feature", "left", "right", "missing_left"):
        np.testing.assert_array_equal(getattr(f0, k), getattr(f1, k), err_msg=k)
    for k in ("threshold", "value", "multiplier"):
        np.testing.assert_allclose(getattr(f1, k), getattr(f0, k), rtol=1e-9, atol=1e-12, err_msg=k)
    np.testing.assert_allclose(m1.init_params_, m0.init_params_, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(m1.scalings_, m0.scalings_)
    for k in ("train_loss_", "valid_loss_"):
        np.testing.assert_allclose(getattr(m1, k), getattr(m0, k), rtol=1e-9, atol=1e-12, err_msg=k)
    assert m1.best_iteration_ == m0.best_iteration_ and m1.n_iter_ == m0.n_iter_
    np.testing.assert_array_equal(m1.best_iteration_per_param_, m0.best_iteration_per_param_)
    assert m1.result_.stop_reason == m0.result_.stop_reason
    np.testing.assert_allclose(m1.predict_params(X), m0.predict_params(X), rtol=1e-9, atol=1e-12)


def test_ngb_same_trees_scales_and_predictions_as_in_memory(client):
    """NGB (MVN Cholesky chart, ngboost line search, early stopping, per-parameter rounds): the in-memory model."""
    X, y = _data(0)
    Xv, yv = _data(1)
    kw = dict(n_estimators=25, learning_rate=0.3, max_bins=24, early_stopping_rounds=3,
              per_parameter_early_stopping=True)
    m0 = NGB(**kw).fit(X, y, eval_set=(Xv, yv))
    m1 = dd.fit(NGB(**kw), _chunked(X), _chunked(y), eval_set=(_chunked(Xv), _chunked(yv)), binner=_binner(X))
    assert len(set(m0.scalings_)) > 1   # the line search chose more than one scale
    _same(m0, m1, X)


def test_indep_ngb_same_as_in_memory_and_dispatch(client):
    """IndepNGB.fit on dask arrays (weighted rows) fits its P Normal NGBoosts on the workers; with given edges, the
    in-memory model."""
    X, y = _data(2)
    Xv, yv = _data(3)
    w = np.random.default_rng(4).uniform(0.2, 2.0, N)   # weighted rows: the [w, 1{w>0}, w r] histograms
    kw = dict(n_estimators=8, learning_rate=0.5, max_bins=24, early_stopping_rounds=2)
    m0 = IndepNGB(**kw).fit(X, y, sample_weight=w, eval_set=(Xv, yv))
    m1 = dd.fit(IndepNGB(**kw), _chunked(X), _chunked(y), sample_weight=_chunked(w),
                eval_set=(_chunked(Xv), _chunked(yv)), binner=_binner(X))
    for a, b in zip(m0.models_, m1.models_):
        _same(a, b, X)
    np.testing.assert_allclose(m1.predict_dist(Xv).cov, m0.predict_dist(Xv).cov, rtol=1e-9)
    m2 = IndepNGB(**kw).fit(_chunked(X), _chunked(y), eval_set=(_chunked(Xv), _chunked(yv)))   # sketched edges
    assert abs(m2.score(Xv, yv) - m0.score(Xv, yv)) < 0.02 * abs(m0.score(Xv, yv))
    with pytest.raises(ConfigError, match="eval_set"):
        NGB(n_estimators=2).fit(_chunked(X), _chunked(y))


def test_line_search_replay_halves_past_the_first_batch():
    """The client's replay of ngboost's rule asks for more scales below 2^-30 and picks the rule's own scale."""
    from distviz.boosting.ngboost import ngboost_scale
    from distviz.distributed import ngb

    W, n, norm = 7.0, 10, 1e12

    def loss(s):   # only a tiny step lowers the NLL below the start (1.0)
        return 0.999 if s <= 2.0 ** -35 else 2.0

    class Cluster:
        def run(self, fn, shards, where, law, scales):
            assert fn is ngb.ngb_shard.more_scales
            return {"ls": np.array([loss(s) * W for s in scales])}

    first = {"ls": np.array([loss(s) * W for s in 2.0 ** np.arange(-30, 10)]), "norm": np.array([norm * n])}
    s = ngb._scale(Cluster(), None, None, None, first, W, n, 1.0, 1e-4)
    assert s == ngboost_scale(loss, norm, 1.0, 1e-4) == 2.0 ** -35


def test_drifter_study_fits_on_the_workers(client, monkeypatch):
    """With a scheduler active, the drifter study's NGB and IndepNGB fit on the workers: the same training NLL
    curves and line-search scales to 1e-9; the test NLL to 1% only, since on 1500 rows splits of small nodes that
    separate the training rows identically tie in gain, and rounding (chunk sums) picks which feature routes
    the test rows."""
    from distviz.experiments import drifters, parallel

    made, calls = [], []
    make, real = drifters._make_model, dd.fit
    monkeypatch.setattr(drifters, "_make_model", lambda *a, **k: made.append(make(*a, **k)) or made[-1])
    monkeypatch.setattr(dd, "fit", lambda *a, **k: calls.append(type(a[0]).__name__) or real(*a, **k))
    kw = dict(methods=("NGB", "IndepNGB"), rounds=4, max_train=1500, learning_rate=0.3)
    serial = drifters.run_drifter_comparison("sample", **kw)
    assert not calls
    monkeypatch.setattr(parallel, "_ACTIVE", [client])
    on_workers = drifters.run_drifter_comparison("sample", **kw)
    assert calls == ["NGB", "IndepNGB"]
    pairs = [(made[0], made[2])] + list(zip(made[1].models_, made[3].models_))
    for m0, m1 in pairs:
        np.testing.assert_allclose(m1.train_loss_, m0.train_loss_, rtol=1e-9)
        np.testing.assert_array_equal(m1.scalings_, m0.scalings_)
    for m in ("NGB", "IndepNGB"):
        assert abs(on_workers.table[m]["NLL"] - serial.table[m]["NLL"]) <= 0.01 * serial.table[m]["NLL"]
