"""The explicit Dask estimators of ``distviz.dask`` fit what the core estimators fit on the same dask input.

One module-scoped LocalCluster of two thread workers (as ``test_distributed.py``); small fits (1200 rows, 4 chunks).
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

from distviz.boosting import DistributionalBoosting  # noqa: E402
from distviz.boosting.ngboost import NGB, IndepNGB  # noqa: E402
from distviz.dask import DaskDistributionalBoosting, DaskIndepNGB, DaskNGB  # noqa: E402

N = 1200


@pytest.fixture(scope="module")
def client():
    """A LocalCluster(n_workers=2, threads_per_worker=1) in this process, and its Client."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0") as lc, \
            distributed.Client(lc) as c:
        yield c


def _chunked(a):
    return da.from_array(a, chunks=(N // 4,) + a.shape[1:])


@pytest.mark.parametrize("dask_cls,core_cls,kw,y_cols", [
    (DaskDistributionalBoosting, DistributionalBoosting, {"family": "poisson", "n_estimators": 4}, 0),
    (DaskNGB, NGB, {"n_estimators": 4, "learning_rate": 0.1}, 1),
    (DaskIndepNGB, IndepNGB, {"n_estimators": 4, "learning_rate": 0.1}, 2),
])
def test_dask_estimator_equals_the_core_estimators_dask_fit(client, dask_cls, core_cls, kw, y_cols):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(N, 3))
    if y_cols == 0:
        y = rng.poisson(np.exp(0.5 * X[:, 0])).astype(float)
    else:
        y = X[:, :y_cols] + rng.normal(size=(N, y_cols))
    Xd, yd = _chunked(X), _chunked(y)
    ev = (_chunked(X[:300]), _chunked(y[:300]))
    common = {"max_depth": 2, "max_bins": 16, "early_stopping_rounds": 10, **kw}
    m0 = core_cls(**common).fit(Xd, yd, eval_set=ev)
    m1 = dask_cls(**common, client=client)
    assert m1.get_params()["client"] is client and clone(m1).get_params()["client"] is client
    m1.fit(Xd, yd, eval_set=[ev])        # lightgbm.dask's form: a list of one tuple
    np.testing.assert_array_equal(m1.predict(X), m0.predict(X))
    with pytest.raises(TypeError):
        dask_cls(no_such_option=1)
