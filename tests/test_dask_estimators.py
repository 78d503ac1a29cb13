"""The explicit Dask estimators of ``distviz.dask``: the distributed trainer's model, scikit-learn's parameters with
``client``, and ``validation_fraction`` as a seeded split of each chunk's rows on the workers.

The session's LocalCluster of two thread workers (``conftest.dask_client``); small fits (1200 rows, 4 chunks).
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

import distviz.distributed as dd  # noqa: E402
from distviz.dask import DaskDistributionalBoosting, DaskIndepNGB, DaskNGB  # noqa: E402
from distviz.distributed.split import split_counts, validation_split_chunks  # noqa: E402
from distviz.estimators import DistributionalBoosting  # noqa: E402
from distviz.estimators.ngboost import NGB, IndepNGB  # noqa: E402

N = 1200


@pytest.fixture
def client(dask_client):
    """The suite's LocalCluster of two thread workers and its Client (``conftest.dask_client``)."""
    return dask_client


def _chunked(a):
    return da.from_array(a, chunks=(N // 4,) + a.shape[1:])


@pytest.mark.parametrize("dask_cls,core_cls,kw,y_cols", [
    (DaskDistributionalBoosting, DistributionalBoosting, {"family": "poisson", "n_estimators": 4}, 0),
    (DaskNGB, NGB, {"n_estimators": 4, "learning_rate": 0.1}, 1),
    (DaskIndepNGB, IndepNGB, {"n_estimators": 4, "learning_rate": 0.1}, 2),
])
def test_dask_estimator_equals_the_distributed_fit_of_the_core_estimator(client, dask_cls, core_cls, kw, y_cols):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(N, 3))
    if y_cols == 0:
        y = rng.poisson(np.exp(0.5 * X[:, 0])).astype(float)
    else:
        y = X[:, :y_cols] + rng.normal(size=(N, y_cols))
    Xd, yd = _chunked(X), _chunked(y)
    ev = (_chunked(X[:300]), _chunked(y[:300]))
    common = {"max_depth": 2, "max_bins": 16, "early_stopping_rounds": 10, **kw}
    m0 = dd.fit(core_cls(**common), Xd, yd, eval_set=ev)
    m1 = dask_cls(**common, client=client)
    assert m1.get_params()["client"] is client and clone(m1).get_params()["client"] is client
    m1.fit(Xd, yd, eval_set=[ev])        # lightgbm.dask's form: a list of one tuple
    np.testing.assert_array_equal(m1.predict(X), m0.predict(X))
    if dask_cls is DaskDistributionalBoosting:   # a dask array of predictions, chunk by chunk on the workers: the
        # tasks carry the model without its Client (a Client does not pickle)
        np.testing.assert_array_equal(m1.predict_mean(Xd).compute(), m0.predict_mean(X))
    with pytest.raises(TypeError):
        dask_cls(no_such_option=1)


def test_validation_split_holds_out_the_in_memory_share_seeded_per_chunk():
    """round(fraction * n) rows held out, shared among the chunks by their lengths; X, y and w lose the same rows;
    the parts keep the rows' order, partition the rows, and are fixed by the seed (another seed: other rows)."""
    counts = split_counts((300, 300, 301, 1), 0.1)
    assert counts.tolist() == [30, 30, 30, 0] and counts.sum() == round(0.1 * 902)
    assert split_counts((5, 5, 5), 0.1).tolist() == [1, 1, 0]   # 1.5 of 15 rounds to 2: the first ties get them
    X = np.arange(3 * N, dtype=float).reshape(N, 3)
    w = np.arange(N) + 0.5
    parts = validation_split_chunks(_chunked(X), _chunked(X[:, 0]), _chunked(w), 0.2, 7)
    Xt, yt, wt = (p.compute() for p in parts[:3])
    Xv, yv, wv = (p.compute() for p in parts[3])
    assert Xv.shape == (round(0.2 * N), 3) and Xt.shape == (N - Xv.shape[0], 3)
    np.testing.assert_array_equal(yv, Xv[:, 0])
    np.testing.assert_array_equal(wv, Xv[:, 0] / 3 + 0.5)
    np.testing.assert_array_equal(yt, Xt[:, 0])
    np.testing.assert_array_equal(np.sort(np.concatenate([yt, yv])), X[:, 0])
    assert (np.diff(yt) > 0).all() and (np.diff(yv) > 0).all()
    again = validation_split_chunks(_chunked(X), _chunked(X[:, 0]), None, 0.2, 7)
    np.testing.assert_array_equal(again[3][1].compute(), yv)
    assert again[3][2] is None
    other = validation_split_chunks(_chunked(X), _chunked(X[:, 0]), None, 0.2, 8)
    assert not np.array_equal(other[3][1].compute(), yv)


def test_validation_fraction_on_dask_input_is_an_eval_set_of_the_split_rows(client):
    """DaskDistributionalBoosting(validation_fraction=...) fits what the same model fits with the seeded split's rows
    passed as eval_set (early stopping included); DaskNGB()'s defaults (early stopping on 10% of the rows) run."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(N, 3))
    y = rng.poisson(np.exp(0.5 * X[:, 0])).astype(float)
    kw = {"n_estimators": 30, "learning_rate": 0.5, "max_depth": 2, "max_bins": 16, "early_stopping_rounds": 2}
    m1 = DaskDistributionalBoosting("poisson", validation_fraction=0.25, random_state=3, **kw).fit(_chunked(X),
                                                                                                 _chunked(y))
    Xt, yt, _, (Xv, yv, _) = validation_split_chunks(_chunked(X), _chunked(y), None, 0.25, np.random.default_rng(3))
    m2 = DaskDistributionalBoosting("poisson", random_state=3, **kw).fit(Xt, yt, eval_set=(Xv, yv))
    assert m1.result_.stop_reason.startswith("early stopping") and m1.n_iter_ == m2.n_iter_ < 30
    np.testing.assert_allclose(m1.result_.valid_loss, m2.result_.valid_loss, rtol=1e-12)
    np.testing.assert_allclose(m1.predict(X), m2.predict(X), rtol=1e-12)
    m3 = DaskNGB(n_estimators=3, max_depth=2, max_bins=16, random_state=0).fit(_chunked(X), _chunked(y))
    assert m3.n_iter_ == 3 and np.isfinite(m3.valid_loss_).all() and m3.valid_loss_.size == 4
