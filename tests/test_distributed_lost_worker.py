"""A dask worker process killed in the middle of a distributed fit: one sentence naming it, and nothing left behind.

Its own cluster of two worker processes (``processes=True``: the test kills one by its process id), apart from the
thread workers of ``test_distributed.py``.
"""

from __future__ import annotations

import os
import signal

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

from distviz.dask import DaskDistributionalBoosting  # noqa: E402
from distviz.errors import DistvizError  # noqa: E402


def test_a_worker_killed_mid_fit_raises_one_sentence_and_releases_the_fit():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 3))
    y = rng.poisson(np.exp(0.5 * X[:, 0])).astype(float)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as lc, \
            distributed.Client(lc) as client:
        victim = sorted(client.nthreads())[0]
        nanny = next(n for n in lc.workers.values() if n.worker_address == victim)
        pid = nanny.process.process.pid

        def kill_after_round_1(r, n):
            if r == 1:
                os.kill(pid, signal.SIGKILL)

        with pytest.raises(DistvizError, match=f"worker {victim} was lost during the fit.*rerun the fit"):
            DaskDistributionalBoosting("poisson", n_estimators=30, max_depth=3).fit(
                da.from_array(X, chunks=(250, 3)), da.from_array(y, chunks=250), progress=kill_after_round_1)

        def held(dask_scheduler):
            return sorted(str(k) for k, ts in dask_scheduler.tasks.items() if ts.who_wants)

        assert client.run_on_scheduler(held) == []
