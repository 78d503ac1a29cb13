"""Uploads: encodings, delimiters, one-column files, parse once per content, column pickers after a new file."""

import numpy as np
import pandas as pd
import pytest

from distviz.data import drifters as dr
from distviz.data import parse_worker
from distviz.errors import DataError
from distviz.ui import fits, uploads

RNG = np.random.default_rng(0)
FRAME = pd.DataFrame({"température": RNG.normal(size=40).round(4), "débit": RNG.normal(size=40).round(4),
                      "y": RNG.normal(size=40).round(4)})


@pytest.fixture(autouse=True)
def _fresh_cache():
    uploads.clear_cache()
    yield
    uploads.clear_cache()


def _csv(sep=",", decimal=".", encoding="utf-8", bom=b""):
    return bom + FRAME.to_csv(index=False, sep=sep, decimal=decimal).encode(encoding)


ENCODED = {
    "utf-8": _csv(),
    "utf-8 with BOM": _csv(bom=b"\xef\xbb\xbf"),
    "latin-1": _csv(encoding="latin-1"),
    "cp1252 ; decimal comma (Excel, Europe)": _csv(sep=";", decimal=",", encoding="cp1252"),
    "utf-16 with BOM, tabs (Excel 'Unicode text')": _csv(sep="\t", encoding="utf-16"),
    "utf-16-le without BOM": _csv(encoding="utf-16-le"),
    "vertical bar": _csv(sep="|"),
}


@pytest.mark.parametrize("name", list(ENCODED))
def test_common_encodings_and_delimiters_parse_with_their_column_names(name):
    df = fits.parse_csv(ENCODED[name])
    assert list(df.columns) == list(FRAME.columns)
    np.testing.assert_allclose(df.to_numpy(float), FRAME.to_numpy(float))


def test_one_column_csv_says_it_needs_two_numeric_columns():
    one = ("y\n" + "\n".join(f"{0.37 * i:.2f}" for i in range(30))).encode()
    with pytest.raises(DataError, match="only one column.*two numeric columns") as exc:
        fits.parse_csv(one)
    assert "Unnamed" not in str(exc.value)


@pytest.mark.parametrize("data, match", [
    (b"", "empty"),
    (b"a,b\n1,2\n", "1 row"),
    (b"name,city\n" + b"x,y\n" * 20, "0 numeric column.*'name'"),
    (b"a,b\n1,2\n1,2,3\n" + b"1,2\n" * 20, "line 3"),
    (bytes(range(256)) * 8, "binary"),
    (b"0.5;1,5\n" + b"1,5;2\n" * 20, "no header row"),
    (b"1,2\n" + b"3,4\n" * 20, "no header row"),
])
def test_bad_uploads_give_one_sentence(data, match):
    with pytest.raises(DataError, match=match) as exc:
        fits.parse_csv(data)
    msg = str(exc.value)
    assert "\n" not in msg and "Error" not in msg and msg.count(". ") == 0


def test_an_upload_is_parsed_once_per_content(monkeypatch):
    calls = []
    real = parse_worker.parse
    monkeypatch.setattr(parse_worker, "parse", lambda *a, **k: calls.append(1) or real(*a, **k))
    data = ENCODED["utf-8"]
    n0 = uploads.parse_count[0]
    for _ in range(4):   # four reruns of the page
        df = fits.parse_csv(data)
    cfg = fits.FitConfig(dataset="upload", x_cols=("température",), y_col="y", upload_hash=fits.data_hash(data))
    d = fits.load_data(cfg, data)
    assert len(calls) == 1 and d.X.shape == (40, 1) and list(df.columns) == list(FRAME.columns)
    for _ in range(2):                    # a bad file's sentence is cached as well (the worker's and the checks')
        with pytest.raises(DataError):
            fits.parse_csv(b"a,b\n1,2\n")
        with pytest.raises(DataError):
            fits.parse_csv(b"y\n1\n2\n")
    assert uploads.parse_count[0] - n0 == 3 and len(calls) == 2


def test_the_parse_cache_is_bounded_by_bytes(monkeypatch):
    from distviz.ui.jobs import ResultStore

    monkeypatch.setattr(uploads, "_store", ResultStore(3 * int(FRAME.memory_usage(deep=True).sum())))
    for k in range(6):
        fits.parse_csv(FRAME.assign(y=FRAME["y"] + k).to_csv(index=False).encode())
    assert uploads._store.bytes <= uploads._store.max_bytes and 1 <= len(uploads._store.items) <= 3


def _picker_app():
    import streamlit as st

    from distviz.ui.lab import config_widgets

    cfg, _ = config_widgets(st.sidebar)
    st.text(f"x={','.join(cfg.x_cols)} y={cfg.y_col}")


def test_a_second_upload_with_other_columns_gets_sensible_pickers():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_picker_app, default_timeout=60)
    at.query_params["data"] = "upload a CSV"   # the text the data-set select shows
    at.run()
    at.sidebar.file_uploader[0].set_value(("one.csv", b"a,b,c\n" + b"1,2,3\n" * 12, "text/csv")).run()
    assert not at.exception and at.text[0].value == "x=a y=c"
    at.sidebar.multiselect[0].set_value(["b"]).run()
    assert at.text[0].value == "x=b y=c"
    other = b"p;q;r;s\n" + b"1,5;2;3;4\n" * 12
    at.sidebar.file_uploader[0].set_value(("two.csv", other, "text/csv")).run()
    assert not at.exception and at.text[0].value == "x=p y=s"
    assert at.sidebar.multiselect[0].options == ["p", "q", "r", "s"]


def test_drifter_uploads_parse_latin1_and_semicolons_once():
    df = pd.DataFrame({c: np.linspace(0.0, 0.5, 30) for c in dr.TABLE_COLUMNS})
    df["t"] = 8553.0 + np.arange(30)
    df["id"] = np.arange(30) % 12
    df["remarque"] = "bouée"
    data = df.to_csv(index=False, sep=";", decimal=",").encode("latin-1")
    from distviz.ui.drifters import _source

    a = _source("upload", data)
    b = _source("upload", data)
    assert a is b and len(a) == 30 and a.n_drifters == 12
    np.testing.assert_allclose(a.Y[:, 0], df["u"].to_numpy())
    with pytest.raises(DataError, match="^The drifter table uploaded CSV lacks column\\(s\\) Wy;"):
        _source("upload", df.drop(columns=["Wy"]).to_csv(index=False).encode())
