"""`distviz study NAME --scheduler local|ADDRESS`: the same JSON as the serial run (distviz.experiments.parallel)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from distviz.cli import main
from distviz.errors import ConfigError
from distviz.experiments.parallel import map_units, use_scheduler

LAWS = ["study", "laws", "--n", "200", "--rounds", "6", "--json"]
MVN = ["study", "mvn-sim", "--n", "60", "--reps", "3", "--methods", "NGB,IndepNGB", "--n-estimators", "6",
       "--n-val", "30", "--n-test", "40", "--quiet", "1", "--json"]
DRIFTERS = ["study", "drifters", "--protocol", "paper", "--reps", "2", "--methods", "NGB", "--rounds", "4",
            "--grid-depth", "2", "--grid-min-leaf", "20", "--max-train", "600", "--json"]


def _run(argv, capsys) -> dict:
    """The study's JSON with wall-clock fields ('seconds' in the key) removed."""
    assert main(argv) == 0
    return _timeless(json.loads(capsys.readouterr().out))


def _timeless(x):
    """`x` without the keys that hold wall-clock times."""
    if isinstance(x, dict):
        return {k: _timeless(v) for k, v in x.items() if "seconds" not in k}
    if isinstance(x, list):
        return [_timeless(v) for v in x]
    return x


def _square(v: int) -> int:
    """A unit for map_units."""
    return v * v


def test_laws_gives_the_serial_json_with_scheduler_local(capsys):
    serial = _run(LAWS, capsys)
    assert _run(LAWS + ["--scheduler", "local", "--workers", "2"], capsys) == serial


@pytest.fixture(scope="module")
def cluster_address():
    """A LocalCluster of two worker processes that this module's studies reach by its scheduler address."""
    from dask.distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                      env={"NUMBA_NUM_THREADS": "1"}) as cluster:
        yield cluster.scheduler_address


def test_studies_on_a_scheduler_address_and_map_units(capsys, cluster_address):
    serial = {"mvn": _run(MVN, capsys), "drifters": _run(DRIFTERS, capsys)}
    assert _run(MVN + ["--scheduler", cluster_address], capsys) == serial["mvn"]
    assert _run(DRIFTERS + ["--scheduler", cluster_address], capsys) == serial["drifters"]
    with use_scheduler(cluster_address) as client:
        assert map_units(_square, range(5)) == [0, 1, 4, 9, 16]
        assert len(client.nthreads()) == 2
    assert map_units(_square, [3]) == [9]  # serial again outside the block


@pytest.mark.parametrize("spec, workers, words", [
    ("local", 0, "--workers must be a positive"),
    ("http://x;rm -rf", None, "--scheduler must be 'local' or a scheduler address"),
    ("tcp://10.0.0.5:8786", 3, "--workers applies to --scheduler local only"),
])
def test_bad_scheduler_options_are_one_sentence(spec, workers, words):
    with pytest.raises(ConfigError, match=words), use_scheduler(spec, workers):
        pass


def test_a_bad_table_on_the_workers_is_one_sentence_on_stderr(tmp_path, capfd, cluster_address):
    """A `distviz data gdp` table whose part lacks a column, read by the drifter study on a cluster's worker
    processes: the worker's failure comes back as the one-sentence error, without the workers' tracebacks."""
    import pandas as pd

    from distviz.data.gdp_archive import MARKER

    table = tmp_path / "table"
    table.mkdir()
    rng = np.random.default_rng(0)
    cols = {c: rng.normal(size=40) for c in ("Wx", "Wy", "lon", "lat", "u", "v", "t")}   # no 'doy'
    pd.DataFrame({**cols, "id": np.repeat(np.arange(10), 4)}).to_parquet(table / "part-000000.parquet", index=False)
    (table / MARKER).write_text("{}", encoding="utf-8")
    assert main(["study", "drifters", "--data", str(table), "--scheduler", cluster_address,
                 "--methods", "NGB", "--rounds", "2"]) == 2
    err = capfd.readouterr().err
    assert "lacks column(s) doy" in err and "Traceback" not in err and "Compute Failed" not in err, err


def test_a_cluster_without_workers_is_one_sentence_not_a_hang(monkeypatch):
    """Units pending on a cluster that lost every worker (here scaled to none; in practice a cluster whose processes
    were suspended for minutes): map_units raises ClusterError after the grace period instead of waiting forever."""
    import threading
    import time
    from pathlib import Path

    from distviz.errors import ClusterError
    from distviz.experiments import parallel

    docs = Path(__file__).resolve().parents[1] / "docs" / "user_guide" / "dask.rst"
    assert parallel.NO_WORKER_GRACE_SECONDS == 120 and "after two minutes without a worker" in docs.read_text()
    monkeypatch.setattr(parallel, "POLL_SECONDS", 0.25)
    monkeypatch.setattr(parallel, "NO_WORKER_GRACE_SECONDS", 1.5)
    with use_scheduler("local", 1) as client:
        threading.Timer(1.0, lambda: client.cluster.scale(0)).start()
        t0 = time.monotonic()
        with pytest.raises(ClusterError, match=r"no worker for 1.5 s with 1 of 1 units unfinished"):
            map_units(time.sleep, [120])
        assert time.monotonic() - t0 < 30
