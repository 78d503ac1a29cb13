"""Today's fits reproduce the golden outputs of ``tests/data/golden/`` (issue 26: pinned before the refactor).

``scripts/make_golden.py`` defines every case (HistTree and fit_many, the five laws on six families,
NGB / GB / IndepNGB / skGB, WGBoost SKA / FKA / NKA / Langevin, two dask fits), wrote the files and says
how to regenerate them.  Each in-memory case runs here at 1 and at 2 numba threads: the two runs must give
the same bits, and the outputs must equal the golden ones, bit for bit for the cases with tolerance 0,
else to the case's tolerance (1e-12; the reason is in make_golden's module docstring and TOL_REASONS:
numpy's exp / log and BLAS differ in the last bit between CPUs).  Tree structure and every integer output
are compared exactly.

The dask cases run once, on one module-scoped in-process LocalCluster(n_workers=2, threads_per_worker=1):
their trees grow on the workers' threads, where numba's thread count is the workers' own.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

_SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "make_golden.py"


def _load_script():
    spec = importlib.util.spec_from_file_location("make_golden", _SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("make_golden", mod)
    spec.loader.exec_module(mod)
    return sys.modules["make_golden"]


G = _load_script()
_LOCAL = [n for n, c in G.CASES.items() if c[0] != "dask"]
_DASK = [n for n, c in G.CASES.items() if c[0] == "dask"]


@pytest.fixture(scope="module")
def golden():
    return {g: G.load_golden(g) for g in G.GROUPS}


@pytest.mark.parametrize("name", _LOCAL)
def test_case_matches_golden_at_1_and_2_threads(name, golden):
    one = G.run_case(name, 1)
    two = G.run_case(name, 2)
    assert G.same_bits(one, two) == [], f"{name}: 1 and 2 numba threads give different bits"
    G.compare(name, one, golden[G.CASES[name][0]][name])


@pytest.fixture(scope="module")
def dask_cluster():
    pytest.importorskip("dask.array")
    pytest.importorskip("distributed")
    G.dask_client()
    yield
    G.close_dask()


@pytest.mark.parametrize("name", _DASK)
def test_dask_case_matches_golden(name, golden, dask_cluster):
    G.compare(name, G.run_case(name, 1), golden["dask"][name])


def test_every_case_has_a_golden_record(golden):
    recorded = {name for cases in golden.values() for name in cases}
    assert recorded == set(G.CASES)
    assert set(G.TOL_REASONS) <= {n for n, c in G.CASES.items() if c[2] not in (0.0, G.FLOAT_TOL)}
