"""Loading a file never runs code from it: HDF5 drifter tables, .npz and NetCDF models, and a grep of the package.

The hostile files hold an object whose unpickling would create a marker file (``Payload``); every test
checks that the marker never appears.
"""

import builtins
import io
import pickle
import re
from contextlib import redirect_stderr
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from distviz.data import drifters as dr
from distviz.data.tables import NotLiteral, literal_from_pickle, read_hdf_frame
from distviz.errors import DataError

PACKAGE = Path(__file__).resolve().parents[1] / "distviz"


class Payload:
    """Unpickling this creates the file `marker` (a stand-in for running a shell command)."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (builtins.open, (self.marker, "w"))


def _table(n=40):
    df = pd.DataFrame({c: np.linspace(0.0, 0.5, n) for c in dr.TABLE_COLUMNS})
    df["t"] = 8553.0 + np.arange(n)
    df["id"] = np.arange(n) % 12
    return df


@pytest.fixture
def marker(tmp_path):
    m = tmp_path / "MARKER"
    yield m
    assert not m.exists(), "loading the file ran code from it"


@pytest.fixture
def no_read_hdf(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("pandas.read_hdf unpickles object columns and must not be used")
    monkeypatch.setattr(pd, "read_hdf", refuse)


# ---------------------------------------------------------------------------------------------- HDF5
@pytest.mark.parametrize("fmt", ["fixed", "table", "table_data_columns"])
def test_both_pandas_hdf5_formats_load_without_read_hdf(tmp_path, fmt, no_read_hdf):
    df = _table()
    df["when"] = pd.date_range("2020-01-01", periods=len(df))
    df["note"] = "buoy"
    p = tmp_path / "drifters.h5"
    if fmt == "fixed":
        df.drop(columns=["note"]).to_hdf(p, key="data", format="fixed")   # text is pickled in 'fixed'
    else:
        df.to_hdf(p, key="data", format="table", data_columns=True if fmt.endswith("columns") else None)
    back = read_hdf_frame(p)
    want = df if fmt != "fixed" else df.drop(columns=["note"])
    pd.testing.assert_frame_equal(back, want.reset_index(drop=True))
    d = dr.load_drifters(p)
    np.testing.assert_array_equal(d.X, dr.load_drifters(_table()).X)


def test_hdf5_with_several_tables_needs_a_key(tmp_path, no_read_hdf):
    p = tmp_path / "two.h5"
    _table().to_hdf(p, key="a", format="table")
    (_table() * 0.5).to_hdf(p, key="b", format="fixed")
    with pytest.raises(DataError, match="several tables.*key="):
        dr.load_drifters(p)
    assert np.allclose(dr.load_drifters(p, key="b").Y, dr.load_drifters(_table() * 0.5).Y)
    with pytest.raises(DataError, match="no table under key 'c'"):
        dr.load_drifters(p, key="c")


@pytest.mark.filterwarnings("ignore::pandas.errors.PerformanceWarning")
def test_object_column_in_hdf5_is_refused_and_never_unpickled(tmp_path, marker, no_read_hdf):
    p = tmp_path / "evil.h5"
    _table().assign(x=[Payload(marker)] + [1.0] * 39).to_hdf(p, key="data", format="fixed")
    with pytest.raises(DataError) as exc:
        dr.load_drifters(p)
    msg = str(exc.value)
    assert re.fullmatch(r"Column 'x' in the drifter file evil\.h5 holds Python objects[^\n]*numeric columns only[^\n]*\.", msg)


def test_pickled_hdf5_attribute_is_never_unpickled(tmp_path, marker, no_read_hdf):
    import tables

    p = tmp_path / "attr.h5"
    _table().to_hdf(p, key="data", format="table")
    with tables.open_file(str(p), "a") as h:
        h.root.data._v_attrs.comment = Payload(marker)   # PyTables stores this as a pickle
        h.root._v_attrs.note = Payload(marker)
    d = dr.load_drifters(p)   # the numeric table is still read; the pickled attributes are left as bytes
    assert len(d) == 40


def test_damaged_hdf5_gives_one_sentence_without_the_hdf5_trace(tmp_path):
    p = tmp_path / "junk.h5"
    p.write_bytes(b"\x89HDF\r\n\x1a\n" + b"x" * 300)
    with pytest.raises(DataError) as exc:
        dr.load_drifters(p)
    msg = str(exc.value)
    assert "\n" not in msg and "H5F" not in msg and "Error" not in msg and "junk.h5" in msg


@pytest.mark.filterwarnings("ignore::pandas.errors.PerformanceWarning")
def test_cli_refuses_the_hostile_hdf5_with_one_sentence(tmp_path, marker, capsys):
    from distviz.cli import main

    p = tmp_path / "evil.h5"
    _table().assign(x=[Payload(marker)] + [1.0] * 39).to_hdf(p, key="data", format="fixed")
    err = io.StringIO()
    with redirect_stderr(err):
        rc = main(["study", "drifters", "--data", str(p), "--rounds", "2"])
    lines = err.getvalue().strip().splitlines()
    assert rc != 0 and len(lines) == 1 and lines[0].startswith("error: Column 'x'") and "Python objects" in lines[0]


# ---------------------------------------------------------------------------------------------- literal pickles
def test_literal_decoder_reads_plain_values_and_refuses_code(marker):
    value = [(1, ["a", "b"]), {"names": [None, True, 2.5, -7, 2**70]}, ("é",)]
    for proto in (0, 2, 5):
        assert literal_from_pickle(pickle.dumps(value, protocol=proto)) == value
    assert literal_from_pickle(pickle.dumps([b"x", {3, 4}, frozenset("a")], protocol=5)) == [b"x", {3, 4}, frozenset("a")]
    for proto in (0, 2, 5):
        with pytest.raises(NotLiteral):
            literal_from_pickle(pickle.dumps([1, Payload(marker)], protocol=proto))
    with pytest.raises(NotLiteral):
        literal_from_pickle(b"(lp0\nI1\n")    # truncated


# ---------------------------------------------------------------------------------------------- models
def test_wgboost_loader_refuses_npz_and_pickles_with_one_sentence(tmp_path, marker):
    from distviz.estimators import WGBoost

    p = tmp_path / "model.npz"
    np.savez(p, meta=np.array('{"format": "distviz.WGBoost/1"}'), init_particles=np.array([Payload(marker)], dtype=object))
    with pytest.raises(DataError, match="Cannot read model.npz as a distviz model file"):
        WGBoost.load(p)
    q = tmp_path / "pickled.nc"
    q.write_bytes(pickle.dumps(Payload(marker)))
    with pytest.raises(DataError, match="Cannot read pickled.nc as a distviz model file"):
        WGBoost.load(q)
    assert not marker.exists()


def test_netcdf_model_loader_gives_one_sentence_for_foreign_files(tmp_path, marker):
    import xarray as xr

    from distviz.estimators import DistributionalBoosting

    p = tmp_path / "pickled.nc"
    p.write_bytes(pickle.dumps(Payload(marker)))
    with pytest.raises(DataError) as exc:
        DistributionalBoosting.load(p)
    assert "\n" not in str(exc.value) and str(tmp_path) not in str(exc.value)
    q = tmp_path / "damaged.nc"
    xr.Dataset({"a": ("x", np.arange(3.0))}, attrs={"distviz_schema": 2, "distviz_class": "DistributionalBoosting",
                                                   "distviz_params": '[1, 2]'}).to_netcdf(q)
    with pytest.raises(DataError, match="damaged.nc is not a usable DistributionalBoosting model file: the attribute "
                                        "distviz_params is not a JSON object"):
        DistributionalBoosting.load(q)


# ---------------------------------------------------------------------------------------------- grep rule
#: Patterns that unpickle, evaluate or import; none may appear in distviz/ outside ALLOWED.
FORBIDDEN = {
    "pickle module": r"^\s*(import|from)\s+(c?pickle|dill|cloudpickle|joblib|shelve|marshal)\b",
    "pickle loads": r"\b(pickle|dill|cloudpickle|marshal)\.loads?\(|\bUnpickler\b",
    "pandas read_hdf / read_pickle": r"\bread_(hdf|pickle)\(",
    "eval / exec": r"(?<![\w.])(eval|exec)\(",
    "compile()": r"(?<![\w.])compile\(",
    "__import__": r"__import__\(",
    "import_module": r"\bimport_module\(",
    "allow_pickle=True": r"allow_pickle\s*=\s*True",
    "np.load without allow_pickle=False": r"\bnp\.load\((?![^)]*allow_pickle\s*=\s*False)",
    "joblib / torch / yaml loaders": r"\b(joblib\.load|torch\.load|yaml\.load|yaml\.unsafe_load)\(",
    "xarray pickle backends": r"engine\s*=\s*[\"']pickle",
}

#: (file, pattern name, line text that must match exactly) — imports of constant module names only.
ALLOWED = {
    # lazy re-exports: _LAZY maps a fixed set of public names to fixed module names in the package
    ("boosting/__init__.py", "import_module", "return getattr(import_module(_LAZY[name]), name)"),
    ("estimators/__init__.py", "import_module", "return getattr(import_module(_LAZY[name]), name)"),
    ("trees/__init__.py", "import_module", "return getattr(import_module(_LAZY[name]), name)"),
    # the study registry imports the modules of distviz/experiments it finds in its own folder
    ("experiments/registry.py", "import_module", 'importlib.import_module(f"distviz.experiments.{mod.name}")'),
    # the optional compiled MVN Cholesky module, a constant name
    ("families/charts.py", "import_module", "mod = importlib.import_module(_MVN_CHOLESKY_MODULE)"),
    # the literal-only stand-in for PyTables' pickle module names the Unpickler only to refuse handing it out
    ("data/tables.py", "pickle loads", 'if name in ("Unpickler", "_Unpickler", "_loads", "_load"):'),
    # a distributed fit's client-worker channel: pickles between a client and the workers of its own dask cluster,
    # as dask's own messages are, served only to the client holding the channel's random token (channel.py's doc);
    # no file, upload or model file reaches it
    ("distributed/channel.py", "pickle module", "import pickle"),
    ("distributed/channel.py", "pickle module", "import cloudpickle"),
    ("distributed/channel.py", "pickle loads", "return pickle.loads(_recv_exact(sock, n))"),
}


def test_nothing_in_the_package_unpickles_evaluates_or_imports_user_input():
    found = []
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) > 20
    for f in files:
        rel = f.relative_to(PACKAGE).as_posix()
        for i, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#", 1)[0]
            if not code.strip() or code.lstrip().startswith(('"', "'")):
                continue
            for name, pat in FORBIDDEN.items():
                if re.search(pat, code) and (rel, name, line.strip()) not in ALLOWED:
                    found.append(f"{rel}:{i}: {name}: {line.strip()}")
    assert not found, "\n".join(found)


def test_the_grep_rule_catches_what_it_should():
    bad = ["import pickle", "pickle.loads(b)", "pd.read_hdf(p)", "df = pd.read_pickle(p)", "eval(s)", "exec(code)",
           "__import__(name)", "importlib.import_module(name)", "np.load(p, allow_pickle=True)", "np.load(p)",
           "joblib.load(p)", "torch.load(p)", "yaml.load(s)", "from cloudpickle import loads"]
    ok = ["np.load(path, allow_pickle=False)", "import pickletools", "model.eval_nll(x)", "self.exec_time = 1",
          "re.compile(r'x')", "literal_from_pickle(data)"]
    hit = lambda s: any(re.search(p, s) for p in FORBIDDEN.values())  # noqa: E731
    assert all(hit(s) for s in bad) and not any(hit(s) for s in ok)
