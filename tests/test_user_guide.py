"""The README and the user guide say what the code does (issue 31, item 4; issue 28's one table).

- the README stays short, its links lead to files that exist, its screenshot is small, and its Python block runs;
- the estimators' table (``docs/user_guide/estimators.csv``, shown whole by the guide and in short by the README,
  which ``scripts/estimator_table.py`` writes) is checked cell by cell against the estimators: signatures, tiny
  fits on a DataFrame (the fits of ``test_contract``), ``predict`` shapes, ``predict_dist`` classes and ``score``;
- every number the README and the guide state in prose is listed here with the check that makes it true
  (``CHECKED``); numbers inside code, commands and citations (eq., Sec., Table, a year) are not claims.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import math
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
GUIDE = ROOT / "docs" / "user_guide"


def _script(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


table = _script("estimator_table")


# ------------------------------------------------------------------ the README
def test_readme_is_short_and_its_links_exist():
    text = README.read_text()
    assert len(text.splitlines()) <= 200
    links = re.findall(r"\]\(([^)#]+)[^)]*\)", text)
    assert "docs/_static/app.png" in links and any(s.startswith("docs/user_guide/") for s in links)
    for link in links:
        if "://" not in link:
            assert (ROOT / link).exists(), f"README links to {link}, which does not exist"
    assert (ROOT / "docs/_static/app.png").stat().st_size <= 300 * 1024
    for cmd in ("make run", "make test"):
        assert cmd in text
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^run:", makefile, re.M) and re.search(r"^test:", makefile, re.M)


def test_readme_python_block_runs(tmp_path, monkeypatch, capsys):
    blocks = re.findall(r"^```python\n(.*?)^```", README.read_text(), re.S | re.M)
    assert len(blocks) == 1 and len(blocks[0].splitlines()) <= 12, "one short library example"
    monkeypatch.chdir(tmp_path)
    ns: dict = {}
    exec(compile(blocks[0], "README.md", "exec"), ns)   # noqa: S102 - the README's own example, run as written
    model, dist = ns["model"], ns["dist"]
    assert float(capsys.readouterr().out) == pytest.approx(float(np.mean(dist.logpdf(ns["data"].y))), rel=1e-9)
    assert np.all(ns["low"] <= ns["high"]) and type(dist).__name__ == "PoissonDist"
    loaded = type(model).load(tmp_path / "poisson.nc")
    np.testing.assert_array_equal(loaded.predict(ns["data"].X), model.predict(ns["data"].X))


def test_readme_table_is_the_guides():
    text = README.read_text()
    assert table.with_table(text, table.markdown(table.read_table())) == text, \
        "run python scripts/estimator_table.py"


def test_guide_pages_are_in_its_toctree():
    index = (GUIDE / "index.rst").read_text()
    listed = set(re.findall(r"^   (\w+)$", index, re.M))
    pages = {p.stem for p in GUIDE.glob("*.rst")} - {"index"}
    assert listed == pages
    text = README.read_text()
    for page in pages:
        assert f"docs/user_guide/{page}.rst" in text, f"the README links to every guide page ({page})"


# ------------------------------------------------------------------ the estimators' table
_cell_names = table.names


@pytest.fixture(scope="module")
def fitted():
    from test_contract import MAKERS, _frame

    X, y = _frame()
    out = {}
    for name, (make, P) in MAKERS.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yy = y[:, 0] if P == 1 else y
            out[name] = (make().fit(X, yy), yy, P)
    return out, X


def _rows():
    return {_cell_names(r["estimator"])[0]: r for r in table.read_table()}


def test_table_lists_every_estimator_and_uniform_columns_are_uniform():
    from test_contract import MAKERS

    rows = _rows()
    assert list(rows) == list(MAKERS)
    for col in table.UNIFORM:
        assert col in next(iter(rows.values()))
    assert {r["learning_rate"] for r in rows.values()} == {"yes"}
    assert {r["feature_names_in_"] for r in rows.values()} == {"yes"}


@pytest.mark.parametrize("name", list(_rows()))
def test_table_row_is_the_code(name, fitted):
    fits, X = fitted
    row = _rows()[name]
    model, y, P = fits[name]
    params = set(inspect.signature(type(model).__init__).parameters)
    for col in ("n_estimators", "learning_rate", "max_depth", "early_stopping_rounds"):
        cell = row[col]
        if cell == "yes":
            assert col in params, (name, col)
        else:
            assert cell.startswith("no") and col not in params, (name, col, cell)
            for alt in _cell_names(cell):
                assert alt in params, (name, col, alt)
    for col in ("n_iter_", "best_iteration_"):
        cell, value = row[col], getattr(model, col, None)
        if cell.startswith("no"):
            assert value is None, (name, col)
            for alt in _cell_names(cell):
                assert isinstance(getattr(model, alt), (int, np.integer)), (name, col, alt)
        elif cell.startswith("int"):
            assert isinstance(value, int) and not isinstance(value, bool), (name, col, type(value))
            for alt in _cell_names(cell):   # per output (an array) or per watched metric (a dict)
                assert isinstance(getattr(model, alt), (np.ndarray, dict)), (name, col, alt)
        else:
            assert cell == "array (P,)" and np.shape(value) == (P,), (name, col, np.shape(value))
    assert list(model.feature_names_in_) == list(X.columns)
    pred = model.predict(X)
    shapes = [{"n,": (len(X),), "n, P": (len(X), P)}[s] for s in re.findall(r"\((n,(?: P)?)\)", row["predict(X)"])]
    assert row["predict(X)"].startswith("mean") and pred.shape in shapes, (name, pred.shape)
    dist = model.predict_dist(X)
    np.testing.assert_allclose(dist.mean(), pred, rtol=1e-6, atol=1e-9)
    from distviz.families import dist as dists

    names = _cell_names(row["predict_dist(X)"])
    assert type(dist).__name__ in names and all(hasattr(dists, n) for n in names)
    for cell in row.values():   # every cross-reference names an object that exists there (the API reference's page)
        for target in table.targets(cell):
            module, _, attr = target.rpartition(".")
            assert hasattr(importlib.import_module(module), attr), target
    assert model.score(X, y) == pytest.approx(float(np.mean(dist.logpdf(y))), rel=1e-6)
    assert row["score(X, y)"] in ("mean log-likelihood", "mean log predictive density")


# ------------------------------------------------------------------ numbers
NUMBER = re.compile(r"(?<![\w.^/\-])\d+(?:[.,]\d+)*(?:e-?\d+)?%?(?![\w^/])")
#: citations and references, not claims: eq. 7-8, Sec. 4.3, App. F.4, Table 2, (2023), a Zenodo record
CITE = re.compile(r"\b(?:eq|Sec|App|Table|Figure|Figures|issue|Prop)\.? ?[\dA-Z][\w.]*(?:-\d+)?"
                  r"|\(\d{4}\)|record \d+")


def prose(text: str, rst: bool) -> str:
    """`text` without code, commands, math, links and citations: what is left states things."""
    if rst:
        text = re.sub(r"^\.\. (?:math|csv-table|toctree|list-table)::.*?(?=^\S)", "", text, flags=re.S | re.M)
        out, skip = [], False
        for ln in text.splitlines():
            if skip and (not ln.strip() or ln.startswith((" ", "\t"))):
                continue
            skip = False
            out.append(ln)
            skip = ln.rstrip().endswith("::")
        text = re.sub(r":math:`[^`]*`|``[^`]*``", "", "\n".join(out))
    else:
        # the README's results tables are generated from results/*.json and checked by tests/test_results_tables.py
        text = re.sub(r"<!-- results tables:.*?<!-- end of generated results tables -->", "", text, flags=re.S)
        text = re.sub(r"^```.*?^```|<!--.*?-->", "", text, flags=re.S | re.M)
        text = re.sub(r"`[^`]*`", "", re.sub(r"\]\([^)]*\)", "]", text))
    return CITE.sub("", text)


def _drifters_precomputed():
    from distviz.experiments.drifters import load_precomputed

    res = load_precomputed()
    assert res is not None
    return res.table


def _region_level():
    from distviz.experiments.drifters import region_metrics

    return inspect.signature(region_metrics).parameters["level"].default


def _limits(*numbers):
    """Numbers of the limits tables: each is the code's default, checked by tests/test_fit_deadline.py."""
    checked = (ROOT / "tests" / "test_fit_deadline.py").read_text()
    assert "limits_env.csv" in checked and "limits_fixed.csv" in checked
    return {n: (lambda: True) for n in numbers}


def _nominal_levels():
    """The levels of the model checks' coverage curve (distviz.viz.checks)."""
    from distviz.viz.checks import NOMINAL_LEVELS

    return NOMINAL_LEVELS


def _grid():
    """The drifter map's grid and significance constants."""
    from distviz.experiments import drifter_grid

    return drifter_grid


def _drifters_binned_deg() -> float:
    """Bin size of the shipped comparison's whole-area grid, degrees."""
    from distviz.experiments.drifters import load_precomputed

    res = load_precomputed()
    assert res is not None
    return float(res.binned.attrs["bin_size_deg"])


def _step_view_chart_height() -> int:
    """The tallest chart of a presenter-mode step view, pixels (distviz.ui.presenter)."""
    from distviz.ui.presenter import CHART_HEIGHT

    return CHART_HEIGHT


def _uci(key: str):
    """A setting of the WGBoost UCI protocol (distviz.experiments.wgboost.UCI_PROTOCOL), the same for every data set
    but protein's repeats."""
    from distviz.experiments.wgboost import UCI_PROTOCOL

    values = {p[key] for name, p in UCI_PROTOCOL.items() if not (key == "repeats" and name.startswith("protein"))}
    assert len(values) == 1, (key, values)
    return values.pop()


def _authors_fold_sizes(n: int = 100) -> tuple[int, int]:
    """(training, test) rows of the WGBoost authors' folds of an n-row data set (distviz.data.uci.authors_split)."""
    from distviz.data.uci import authors_split

    tr, te = authors_split(n, 0)
    return len(tr), len(te)


def _archived_patience() -> set:
    """The --patience values of the archived wgboost-uci runs (results/*.json)."""
    import json

    return {json.loads(p.read_text())["config"].get("patience") for p in (ROOT / "results").glob("wgboost-uci-*.json")}


def _yacht_paper_run() -> dict:
    """Per-split output of the archived yacht run at the paper's protocol (results/wgboost-uci-yacht-paper-*.json)."""
    import json

    (path,) = sorted((ROOT / "results").glob("wgboost-uci-yacht-paper-*.json"))
    return json.loads(path.read_text())["result"]["per_split"]


def _yacht_outlier() -> tuple[int, float, float]:
    """(split, test NLL) of the archived yacht run's worst fold, and the median test NLL over its folds."""
    ps = _yacht_paper_run()
    worst = int(np.argmax(ps["nll"]))
    return ps["split"][worst], ps["nll"][worst], float(np.median(ps["nll"]))


def _partial_label() -> str:
    from distviz.experiments import archive

    return archive.protocol_of("wgboost-uci", {"splits": list(range(5))})


#: file -> {number as written: a check that it is true}
def _dlm():
    from distviz.experiments import dlm

    return dlm


CHECKED = {
    "app.rst": {"560": lambda: _step_view_chart_height() == 560},
    "drifters.rst": {
        "90%": lambda: _region_level() == 0.9,
        "3,868": lambda: _drifters_precomputed()["NGB"]["n"] == 3868,
        "7.534": lambda: f"{_drifters_precomputed()['NGB']['NLL']:.3f}" == "7.534",
        "7.553": lambda: f"{_drifters_precomputed()['IndepNGB']['NLL']:.3f}" == "7.553",
        "7.493": lambda: f"{_drifters_precomputed()['Oracle']['NLL']:.3f}" == "7.493",
        "10%": lambda: _nominal_levels()[0] == 0.1,
        "95%": lambda: _nominal_levels()[-1] == 0.95,
        # the map's box, bin size and s.e. (distviz.experiments.drifter_grid): 2 s.e. and the default 2° grid
        "0.1": lambda: _grid().MIN_BIN_DEG == 0.1,
        "10": lambda: _grid().MAX_BIN_DEG == 10,
        "5,000": lambda: _grid().MAX_BINS == 5000,
        "5": lambda: _grid().MIN_DRIFTERS == 5,
        "2": lambda: _grid().SIG_Z == 2 and _drifters_binned_deg() == 2,
        "5%": lambda: abs(math.erfc(_grid().SIG_Z / math.sqrt(2)) - 0.05) < 0.005,   # two-sided, "about"
    },
    "studies.rst": {"5": lambda: _partial_label() == "partial", "20": lambda: _uci("repeats") == 20},
    "sparse_gp.rst": {   # the DLM paper's protocol (Appendix D) as dlm-vs-elbo --protocol paper runs it
        "0.1": lambda: _dlm().PAPER_ADAM["learning_rate"] == 0.1,
        "1e-4": lambda: _dlm().PAPER_ADAM["tol"] == 1e-4,
        "50": lambda: _dlm().PAPER_WINDOW["regression"] == 50,
        "20": lambda: _dlm().PAPER_WINDOW["other"] == 20,
        "5000": lambda: _dlm().PAPER_CAP["regression"] == 5000,
        "3000": lambda: _dlm().PAPER_CAP["other"] == 3000,
        "10": lambda: _dlm().PAPER_VAL_FRACTION == 0.1,
        "1000": lambda: _dlm().PAPER_MAX_TEST == 1000,
    },
    "wgboost.rst": {
        "0.1": lambda: _uci("learning_rate") == 0.1 and _uci("bandwidth") == 0.1,
        "10": lambda: _uci("n_particles") == 10 and _authors_fold_sizes()[1] == 10,
        "90": lambda: _authors_fold_sizes()[0] == 90,
        "20": lambda: _uci("repeats") == 20 and _uci("validation_fraction") == 0.2,
        "4000": lambda: _uci("max_rounds") == 4000,
        "200": lambda: 200 in _archived_patience(),
        "4": lambda: _yacht_outlier()[0] == 4,
        "2.71": lambda: f"{_yacht_outlier()[1]:.2f}" == "2.71",
        "0.13": lambda: f"{_yacht_outlier()[2]:.2f}" == "0.13",
    },
    "README.md": {"20": lambda: _uci("repeats") == 20, "4000": lambda: _uci("max_rounds") == 4000,
                  "0.1": lambda: _uci("learning_rate") == 0.1},
    "limits_env.csv": _limits("120", "1536", "1024", "10", "60", "2"),
    "limits_fixed.csv": _limits("20", "20,000", "200", "64", "16,384", "1,024", "256", "288", "32"),
}


def _documents() -> list[str]:
    return ["README.md"] + [p.name for p in sorted(GUIDE.glob("*.rst")) + sorted(GUIDE.glob("*.csv"))
                            if p.name != "estimators.csv"]   # the estimators' table is checked cell by cell


@pytest.mark.parametrize("name", _documents())
def test_every_stated_number_is_checked(name):
    path = README if name == "README.md" else GUIDE / name
    found = sorted(set(NUMBER.findall(prose(path.read_text(), rst=name != "README.md"))))
    checks = CHECKED.get(name, {})
    assert found == sorted(checks), f"{name} states numbers nobody checks: {sorted(set(found) - set(checks))}"
    for number, check in checks.items():
        assert check(), f"{name}: {number} is not what the code gives"
