"""Suite-wide fixtures."""

from __future__ import annotations

import os
import sys

import pytest

# idle OpenMP threads (numba's) sleep instead of spinning, as in `make test` and the app (distviz.ui.serve)
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

_MAIN = sys.modules.get("__main__")


def pytest_configure(config):
    """Drop numba cache files compiled from older sources once, in the controlling process, before any test runs.

    ``distviz.trees`` no longer does that when imported (``prepare_numba_cache`` is an explicit call); the xdist
    workers start after this hook and find the cache checked.
    """
    if not hasattr(config, "workerinput"):
        from distviz.trees import prepare_numba_cache

        prepare_numba_cache()


@pytest.fixture(autouse=True)
def _restore_main_module():
    """Put the real ``__main__`` back after each test.

    Streamlit's AppTest runs a page script as a fresh ``__main__`` module and leaves it in
    ``sys.modules``; a later test that starts worker processes (a Dask LocalCluster, which spawns)
    would then re-run that page script in every worker and the workers would fail to start.
    """
    yield
    if _MAIN is not None and sys.modules.get("__main__") is not _MAIN:
        sys.modules["__main__"] = _MAIN


@pytest.fixture
def fresh(monkeypatch):
    """A fresh process-wide fit governor (cap 2) and result store for one test: `distviz.ui.jobs`."""
    from distviz.ui import jobs

    monkeypatch.setattr(jobs, "_GOVERNOR", jobs.Governor(cap=2))
    monkeypatch.setattr(jobs, "_STORE", jobs.ResultStore(max_bytes=2**30))
    return jobs


@pytest.fixture(scope="session")
def dask_client():
    """One LocalCluster(n_workers=2, threads_per_worker=1) of thread workers (``processes=False``: no process start-up
    under pytest-xdist) and its Client, shared by the Dask tests of this process."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0") as lc, \
            distributed.Client(lc) as c:
        yield c
