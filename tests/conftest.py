"""Suite-wide fixtures."""

from __future__ import annotations

import os
import sys

import pytest

# idle OpenMP threads (numba's) sleep instead of spinning, as in `make test` and the app (distviz.ui.serve)
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# the app servers the tests start do not fit the lessons' views in the background (distviz.ui.warm_start): that would
# take CPU from the tests beside them; tests/test_warm_start.py checks the warm start itself
os.environ.setdefault("DISTVIZ_WARM_START", "0")

_MAIN = sys.modules.get("__main__")


def pytest_configure(config):
    """Drop numba cache files compiled from older sources once, in the controlling process, before any test runs.

    ``distviz.trees`` no longer does that when imported (``prepare_numba_cache`` is an explicit call); the xdist
    workers start after this hook and find the cache checked.
    """
    if not hasattr(config, "workerinput"):
        from distviz.trees import prepare_numba_cache

        prepare_numba_cache()


#: test files whose tests run on one xdist worker, as one unit (`make test` passes ``--dist loadgroup``): the browser
#: tests, which share that worker's app server (the session fixture `server` below)
BROWSER_FILES = "tests/test_browser"


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadgroup``: every test on its own, as ``--dist load`` does, except the tests of the files named
    tests/test_browser*.py, which go to one worker together, first (the largest unit is scheduled first).

    pytest-xdist's own loadgroup (tests grouped by an ``xdist_group`` mark) finds no groups under pytest 9: it renames
    the collected items' ``_nodeid``, which pytest 9 no longer reads.
    """
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class BrowserTogether(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return "browser" if nodeid.startswith(BROWSER_FILES) else nodeid

    return BrowserTogether(config, log)


@pytest.fixture
def single_thread_blas():
    """One BLAS thread for the test, as SparseGP.fit() uses (objective calls outside fit() included)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1, user_api="blas"):
        yield


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


@pytest.fixture(scope="session")
def server():
    """`distviz app` of this checkout on a free 127.0.0.1 port, shared by the browser tests of this process (they run
    on one worker: :func:`pytest_xdist_make_scheduler`)."""
    from test_browser import CHROMIUM, ROOT, serving

    if CHROMIUM is None:
        pytest.skip("Debian's chromium is not installed (apt-get install -y chromium); the browser test needs it")
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
    with serving([sys.executable, "-m", "distviz"], ROOT) as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    """A headless Chromium launched through Playwright (never downloads a browser), for one module's browser tests.

    Module-scoped, unlike `server`: Playwright's sync API keeps an event loop running in this thread while it is open,
    and a later test of the same worker that calls ``asyncio.run`` would fail (seen: tests/test_server.py)."""
    from test_browser import CHROMIUM, CHROMIUM_ARGS

    if CHROMIUM is None:
        pytest.skip("Debian's chromium is not installed (apt-get install -y chromium); the browser test needs it")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()
