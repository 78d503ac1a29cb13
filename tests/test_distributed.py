"""Distributed boosting on a dask LocalCluster gives the in-memory model (issue 19).

The cluster runs its two workers as threads of the test process (``processes=False``): no worker
processes to spawn under pytest-xdist and no numba re-compilation per process, while every task still
goes through the scheduler and the pinning of chunks to workers.  One cluster for the session (``conftest``), closed at
the end; every fit is small (4000 rows in 8 chunks, a few depth-3 rounds).
"""

from __future__ import annotations

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

import distviz.distributed as dd  # noqa: E402  (after the importorskip of dask)
from distviz.dask import DaskDistributionalBoosting  # noqa: E402
from distviz.errors import ConfigError, DataError  # noqa: E402
from distviz.estimators import DistributionalBoosting  # noqa: E402
from distviz.trees import Binner  # noqa: E402

N, P, CHUNKS = 4000, 4, 8


@pytest.fixture
def client(dask_client):
    """The suite's LocalCluster of two thread workers and its Client (``conftest.dask_client``)."""
    return dask_client


def _data(family, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, P))
    eta = 0.5 * X[:, 0] - 0.4 * (X[:, 1] > 0.3) + 0.2 * X[:, 2] * X[:, 3]
    if family == "poisson":
        y = rng.poisson(np.exp(eta)).astype(float)
    elif family == "normal":
        y = eta + np.exp(0.3 * X[:, 1]) * rng.normal(size=N)
    elif family == "gamma":
        y = rng.gamma(2.0, np.exp(eta) / 2.0)
    else:
        y = (rng.uniform(size=N) < 1 / (1 + np.exp(-eta))).astype(float)
    return X, y


def _chunked(a):
    return da.from_array(a, chunks=(N // CHUNKS,) + a.shape[1:])


def _same(m0, m1, X):
    f0, f1 = m0.forest_.flat, m1.forest_.flat
    for k in ("tree_offsets", "feature", "left", "right", "missing_left"):
        np.testing.assert_array_equal(getattr(f0, k), getattr(f1, k), err_msg=k)
    for k in ("threshold", "value", "multiplier"):
        np.testing.assert_allclose(getattr(f1, k), getattr(f0, k), rtol=1e-9, atol=1e-12, err_msg=k)
    np.testing.assert_allclose(m1.forest_.init, m0.forest_.init, rtol=1e-9)
    r0, r1 = m0.result_, m1.result_
    for k in ("train_loss", "valid_loss", "entropy"):
        np.testing.assert_allclose(getattr(r1, k), getattr(r0, k), rtol=1e-9, atol=1e-12, err_msg=k)
    assert r1.n_projected == r0.n_projected and m1.best_iteration_ == m0.best_iteration_
    np.testing.assert_allclose(m1.predict_mean(X), m0.predict_mean(X), rtol=1e-9, atol=1e-12)
    for v in ("node_gain_ent", "node_weight", "node_feature_gains", "eta"):
        np.testing.assert_allclose(m1.trace_[v].values, m0.trace_[v].values, rtol=1e-9, atol=1e-12, err_msg=v)
    # the display rows' raw X (NaN included) and y, kept by the shards when they binned their chunks
    np.testing.assert_array_equal(m1.trace_["obs_index"].values, m0.trace_["obs_index"].values)
    for v in ("X", "y", "T"):
        np.testing.assert_array_equal(m1.trace_[v].values, m0.trace_[v].values, err_msg=v)


@pytest.mark.parametrize("family,law", [("poisson", "mgd"), ("normal", "ngd"), ("gamma", "mgd"),
                                        ("bernoulli", "ngd"), ("normal", "gd"), ("poisson", "mgd_natural"),
                                        ("gamma", "ngd_mean")])
def test_same_trees_and_predictions_as_in_memory(client, family, law):
    """Same bin edges, 8 chunks on 2 workers: the trees, NLL curves, entropies and predictions of the in-memory fit."""
    X, y = _data(family)
    kw = {"law": law, "n_estimators": 6, "max_depth": 3, "max_bins": 32, "trace_rows": 300, "random_state": 0}
    m0 = DistributionalBoosting(family, **kw).fit(X, y)
    b = Binner.from_edges(Binner(max_bins=32).fit(X).bin_thresholds_, max_bins=32)
    m1 = dd.fit(DistributionalBoosting(family, **kw), _chunked(X), _chunked(y), binner=b)
    assert m1.result_.F_train is None    # the iterates stayed on the workers
    _same(m0, m1, X)


@pytest.mark.parametrize("weighted,lr", [(True, 0.3), (False, 1.9)])
def test_poisson_fused_pass_weighted_and_projected(client, weighted, lr):
    """The workers' fused Poisson M-law pass (update, NLL, next targets in one pass): weighted rows, and a rate
    so large that some rows leave the mean domain (the pass then falls back to the projecting update)."""
    X, y = _data("poisson", 6)
    w = np.random.default_rng(3).uniform(0.2, 2.0, N) if weighted else None
    kw = {"law": "mgd", "n_estimators": 6, "learning_rate": lr, "max_depth": 3, "max_bins": 32, "random_state": 0}
    m0 = DistributionalBoosting("poisson", **kw).fit(X, y, sample_weight=w)
    b0 = Binner(max_bins=32).fit(X, sample_weight=w)
    b = Binner.from_edges(b0.bin_thresholds_, max_bins=32)
    m1 = dd.fit(DistributionalBoosting("poisson", **kw), _chunked(X), _chunked(y),
                sample_weight=None if w is None else _chunked(w), binner=b)
    assert weighted or sum(m0.result_.n_projected) > 0    # the fallback ran
    _same(m0, m1, X)


def test_a_failed_fit_and_a_finished_fit_leave_nothing_on_the_cluster(client):
    """A chunk with a negative count fails the fit with the family's sentence; neither that fit's shards and actors
    (held by the error's traceback) nor a finished fit's stay on the workers."""
    import gc

    X, y = _data("poisson", 7)
    bad = y.copy()
    bad[N - 3] = -1.0
    first = (N - 3) // (N // CHUNKS) * (N // CHUNKS)   # the failing chunk's first row in the whole array
    with pytest.raises(DataError, match=f"In rows {first:,}-{first + N // CHUNKS - 1:,} of the dask array.*negative"):
        DaskDistributionalBoosting("poisson", n_estimators=2).fit(_chunked(X), _chunked(bad))
    DaskDistributionalBoosting("poisson", n_estimators=2).fit(_chunked(X), _chunked(y))
    gc.collect()

    def left(dask_scheduler):
        return sorted(str(k) for k, ts in dask_scheduler.tasks.items() if ts.state in ("memory", "erred"))

    assert client.run_on_scheduler(left) == []


def test_workers_come_from_the_scheduler_not_the_clients_cache(client, monkeypatch):
    """The fit asks the scheduler for its workers: dask's Client.scheduler_info() can return its background cache,
    which holds totals only (no workers), and a CI run failed a fit with "no workers" that way; a cluster with
    none gets the sentence."""
    from distviz.distributed.boosting import _Cluster

    monkeypatch.setattr(type(client), "scheduler_info", lambda self, *a, **k: {"workers": {}})
    assert len(_Cluster(client).workers) == 2
    monkeypatch.undo()
    with distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=":0") as lc, \
            distributed.Client(lc) as empty:
        with pytest.raises(ConfigError, match="has no workers; start at least one"):
            _Cluster(empty)


@pytest.mark.parametrize("law,lr", [("mgd", 0.5), ("ngd", 0.8)])
def test_weights_missing_values_eval_set_early_stopping_and_dask_predict(client, law, lr):
    """Weighted rows, NaN in X and a validation set with early stopping: the same model, Normal NGD included (rows
    leave its domain, bounded by the range of y, which the Dask fit finds by a pass over the dask y); predict on
    dask gives dask."""
    X, y = _data("normal", 1)
    rng = np.random.default_rng(2)
    w = rng.uniform(0.2, 2.0, N)
    X[rng.uniform(size=N) < 0.1, 0] = np.nan
    Xv, yv = _data("normal", 3)
    Xv[rng.uniform(size=N) < 0.1, 0] = np.nan
    kw = {"law": law, "n_estimators": 40, "learning_rate": lr, "max_depth": 2, "max_bins": 16, "early_stopping_rounds": 2,
              "min_weight_leaf": 5.0, "random_state": 0}
    m0 = DistributionalBoosting("normal", **kw).fit(X, y, sample_weight=w, eval_set=(Xv, yv))
    b0 = Binner(max_bins=16).fit(X, sample_weight=w)
    b = Binner.from_edges(b0.bin_thresholds_, max_bins=16, has_missing=b0.has_missing_)
    m1 = dd.fit(DistributionalBoosting("normal", **kw), _chunked(X), _chunked(y), sample_weight=_chunked(w),
                eval_set=(_chunked(Xv), _chunked(yv)), binner=b)
    assert m0.result_.stop_reason.startswith("early stopping") and m1.result_.stop_reason == m0.result_.stop_reason
    assert law == "mgd" or (sum(m0.result_.n_projected) > 0 and m1.family_.y_range == m0.family_.y_range)
    _same(m0, m1, X)
    assert m1.forest_.flat.missing_left.any()    # some split sends the NaN rows left
    pd = m1.predict_mean(_chunked(Xv))
    assert dd.is_dask_collection(pd) and pd.shape == (N, 2)
    np.testing.assert_array_equal(pd.compute(), m1.predict_mean(Xv))
    py = m1.predict(_chunked(Xv))
    assert dd.is_dask_collection(py) and py.shape == (N,)
    np.testing.assert_array_equal(py.compute(), m1.predict(Xv))


def test_dask_estimator_fits_with_sketched_edges_and_the_core_one_points_to_it(client):
    """DaskDistributionalBoosting fits on the workers with sketched edges, as good as in memory; the in-memory
    estimator handed dask arrays says, in one sentence, which class to use."""
    from distviz.errors import InputTypeError

    X, y = _data("poisson", 4)
    kw = {"law": "mgd", "n_estimators": 10, "max_depth": 3, "max_bins": 64, "random_state": 0}
    m0 = DistributionalBoosting("poisson", **kw).fit(X, y)
    m1 = DaskDistributionalBoosting("poisson", **kw).fit(_chunked(X), _chunked(y))
    assert m1.result_.F_train is None and m1.trace_.sizes["round"] == 11
    assert abs(m1.result_.train_loss[-1] - m0.result_.train_loss[-1]) < 0.01 * m0.result_.train_loss[-1]
    with pytest.raises(InputTypeError, match=r"^DistributionalBoosting.fit takes in-memory arrays, not a dask "
                                             r"collection; .*distviz.dask.DaskDistributionalBoosting") as e:
        DistributionalBoosting("poisson", **kw).fit(_chunked(X), _chunked(y))
    assert isinstance(e.value, TypeError) and str(e.value).count(". ") == 0
    with pytest.raises(ConfigError, match="early_stopping_rounds needs validation rows"):
        DaskDistributionalBoosting("poisson", early_stopping_rounds=2).fit(_chunked(X), _chunked(y))


def test_shard_holds_28_bytes_a_row_and_the_same_nll():
    """A Poisson shard keeps T, F, targets (float64) and an int32 partition: 28 bytes a row besides its bin codes
    (log h as its sum; partition scratch and leaf labels per worker thread); its NLL sum is the in-memory one."""
    from distviz.boosting.laws import make_law
    from distviz.distributed.shard import make_shard, shard_step
    from distviz.families import get

    X, y = _data("poisson", 5)
    fam = get("poisson")
    law = make_law("mgd", fam)
    b = Binner(max_bins=16).fit(X)
    s = make_shard(X, y, None, b, law, np.zeros((0, 2), np.int64), lambda X, y, w: (X, y, w))
    F0 = np.array([0.7])
    out = shard_step(s, law, None, F0, 0.1, True, int(b.n_hist_bins_), 2, True)
    assert s.nbytes() == {"codes": X.size, "rows": 28 * N}
    F = np.full((N, 1), 0.7)
    np.testing.assert_allclose(out["stats"][0], law.loss(law.update(F, 0 * F)[0], law.prepare(y, None)).sum(),
                               rtol=1e-12)


def _poisson_target(b):
    """One chunk's Poisson counts from its rows (a map_blocks function: the user's persist fuses it with X's tasks)."""
    return np.random.default_rng(int(1e6 * abs(b[0, 0]))).poisson(np.exp(0.5 * b[:, 0])).astype(float)


def test_inputs_persisted_and_kept_by_the_user_fit_cleanly(client):
    """The user persists X and y and keeps the persisted copies, then fits on the collections themselves: the
    scheduler already holds their keys (with the fused tasks of the persist), and the fit must read those results,
    not send other tasks under the same keys (once "Detected different run_spec" and an AssertionError)."""
    X = _chunked(_data("poisson", 8)[0]) * 1.0
    y = X.map_blocks(_poisson_target, drop_axis=1, dtype=float)
    kw = {"n_estimators": 3, "max_depth": 3, "max_bins": 32, "random_state": 0}
    m0 = DaskDistributionalBoosting("poisson", **kw).fit(X, y)
    kept = (y.persist(), X.persist())
    distributed.wait(list(kept))
    def complaints():
        return sum("run_spec" in str(line) or "ERROR" in str(line) for line in client.get_scheduler_logs(n=100000))

    before = complaints()
    m1 = DaskDistributionalBoosting("poisson", **kw).fit(X, y)
    assert complaints() == before
    assert all(f.status == "finished" for f in distributed.futures_of(kept))   # the user's copies stay
    _same(m0, m1, X.compute())
