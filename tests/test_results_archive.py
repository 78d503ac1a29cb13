"""The archive of study runs (distviz.experiments.archive, scripts/archive_study.py) and the WGBoost authors' folds.

Cheap: one tiny study run into a temporary folder, and JSON reading; no fitting of the archived studies."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from distviz.data.uci import authors_split
from distviz.errors import DataError
from distviz.experiments import archive


def test_authors_split_replays_the_authors_draw():
    """experiment/02_uci_regression_nll.py: np.random.seed(1), then one np.random.choice(range(n), n, replace=False)
    per fold; np.random's functions draw from a global RandomState, replayed here without touching it."""
    global_state = np.random.RandomState(1)
    for i in range(4):
        perm = global_state.choice(range(308), 308, replace=False)
        tr, te = authors_split(308, i)
        assert np.array_equal(tr, perm[:277]) and np.array_equal(te, perm[277:])
    with pytest.raises(DataError):
        authors_split(308, 20)


def test_protocol_labels():
    assert archive.protocol_of("wgboost-uci", {"splits": list(range(20))}) == "paper"
    assert archive.protocol_of("wgboost-uci", {"splits": [0, 1, 2]}) == "partial"
    full = {"sizes": [500, 1000, 3000, 5000, 8000, 10000], "reps": 50}
    assert archive.protocol_of("mvn-sim", full) == "paper"
    assert archive.protocol_of("mvn-sim", {**full, "reps": 3}) == "partial"
    assert archive.protocol_of("mvn-sim", {"n": 500, "reps": 50}) == "partial"
    assert archive.protocol_of("laws", {}) == "custom"
    real = {"study_protocol": "paper", "reps": 10, "data": "/data/drifters/gdp_north_atlantic_subset.csv"}
    assert archive.protocol_of("drifters", real) == "partial"           # a subset is not the paper's data
    assert archive.protocol_of("drifters", {**real, "data": "/data/drifters_full.h5"}) == "paper"
    assert archive.protocol_of("drifters", {**real, "data": "sample"}) == "custom"


def test_run_and_archive_writes_a_checked_record(tmp_path):
    path = archive.run_and_archive("dlm-gradient-bias", ["--replicates", "5"], out_dir=tmp_path)
    rec = json.loads(path.read_text())
    assert archive.check_record(rec) is rec
    assert rec["study"] == "dlm-gradient-bias" and "--replicates 5" in rec["command"]
    assert rec["config"]["replicates"] == 5 and rec["config"]["protocol"] == "custom"
    assert len(rec["load"]["start"]) == 3 and len(rec["load"]["end"]) == 3
    assert rec["commit"] and rec["date"].endswith("+00:00")
    assert "truth" in rec["result"]
    [(p, r)] = archive.load_records(tmp_path)
    assert p == path and r == rec


def test_a_study_option_named_protocol_is_not_the_label():
    """drifters --protocol paper on a subset: the option is kept as study_protocol, the label says partial."""
    config, rest = archive._config("drifters", {"protocol": "paper", "reps": 10, "data": "x/gdp_subset.csv"},
                                   {"paper": {}})
    assert config["study_protocol"] == "paper" and config["protocol"] == "partial" and rest == {"paper": {}}


def test_config_lists_splits_and_takes_the_settings_a_study_reports():
    config, _ = archive._config("dlm-vs-elbo", {"splits": "0-2", "likelihood": ""},
                                {"info": {"likelihood": "gaussian", "n_train": 320, "seconds": 3.0}, "ELBO": {}})
    assert config["splits"] == [0, 1, 2] and config["likelihood"] == "gaussian" and config["n_train"] == 320
    assert "seconds" not in config and config["protocol"] == "custom"


def test_load_records_refuses_a_malformed_record(tmp_path):
    (tmp_path / "bad.json").write_text(json.dumps({"study": "x"}))
    with pytest.raises(DataError, match="lacks"):
        archive.load_records(tmp_path)
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(DataError, match="not JSON"):
        archive.load_records(tmp_path)


def test_a_record_names_paths_relative_to_the_repository_and_its_shared_folder(tmp_path):
    root = tmp_path / "checkout"
    got = archive.portable({"command": f"python scripts/archive_study.py --out {root}/results drifters --data "
                                       f"{tmp_path}/shared/data/d.csv", "splits": [0, 1], "data": "sample"}, root)
    assert got == {"command": "python scripts/archive_study.py --out results drifters --data ../shared/data/d.csv",
                   "splits": [0, 1], "data": "sample"}
    for path, rec in archive.load_records():   # the archived records carry no machine's absolute path
        assert not re.search(r"(^|\s)/", rec["command"]), (path.name, rec["command"])
        assert not str(rec["config"].get("data", "")).startswith("/"), path.name
