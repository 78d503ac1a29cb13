"""Drifter comparison runs for the Drifters page: data choices, a cached run with progress (no maths here)."""

from __future__ import annotations

import hashlib
from collections import OrderedDict

import streamlit as st

from distviz.data.paths import shared_data_path
from distviz.errors import DataError

from .lab import MAX_UPLOAD_MB, _Store  # noqa: F401 (MAX_UPLOAD_MB re-exported)
from .uploads import drifter_table

SOURCES = OrderedDict([
    ("sample", "shipped sample (SYNTHETIC North Atlantic)"),
    ("real", "real GDP subset (1000 rows, 120 drifters)"),
    ("upload", "upload a processed drifter CSV"),
])
METHODS = ("NGB", "IndepNGB")
REAL_SUBSET = ("drifters", "gdp_north_atlantic_subset.csv")


def available_sources() -> list[str]:
    """Data sources present on this machine (the real subset only when ../shared/data holds it)."""
    out = list(SOURCES)
    if shared_data_path(*REAL_SUBSET) is None:
        out.remove("real")
    return out


@st.cache_resource(show_spinner=False)
def _store() -> _Store:
    return _Store(size=8)


def _source(source: str, upload: bytes | None):
    if source == "real":
        p = shared_data_path(*REAL_SUBSET)
        if p is None:
            raise DataError("The real drifter subset is not in the shared data folder; choose the shipped sample.")
        return str(p)
    if source == "sample":
        return "sample"
    if upload is None:
        raise DataError("No drifter file uploaded yet; upload a CSV with the processed drifter columns or choose another source.")
    return drifter_table(upload)   # parsed and validated once per file content (distviz.ui.uploads)


@st.cache_resource(show_spinner=False)
def _precomputed(rounds: int, learning_rate: float, max_train: int | None):
    from distviz.experiments.drifters import load_precomputed

    return load_precomputed(rounds=rounds, learning_rate=learning_rate, max_train=max_train)


def precomputed(source: str, rounds: int, learning_rate: float, max_train: int | None):
    """The shipped precomputed comparison when `source` is the sample and the settings are its settings, else None."""
    if source != "sample":
        return None
    return _precomputed(int(rounds), float(learning_rate), None if max_train is None else int(max_train))


def run_comparison(source: str, rounds: int, learning_rate: float, max_train: int | None, upload: bytes | None = None,
                   *, refit: bool = False, progress_container=None):
    """The drifter comparison (NGB vs IndepNGB and their averages): from the cache, the shipped precomputed
    result (sample, default settings, unless `refit`), or run now with a progress bar."""
    from distviz.experiments.drifters import APP_DEFAULTS, run_drifter_comparison

    key = (source, int(rounds), float(learning_rate), max_train, hashlib.sha1(upload).hexdigest() if upload else "")
    hit = _store().get(key)
    if hit is not None:
        return hit
    if not refit:
        pre = precomputed(source, rounds, learning_rate, max_train)
        if pre is not None:
            return pre
    data = _source(source, upload)
    box = progress_container if progress_container is not None else st
    bar = box.progress(0.0, text="fitting NGB and IndepNGB …")

    def progress(frac, msg):
        bar.progress(min(max(float(frac), 0.0), 1.0), text=str(msg)[:120])

    try:
        res = run_drifter_comparison(data, rounds=int(rounds), learning_rate=float(learning_rate),
                                     patience=APP_DEFAULTS["patience"], methods=METHODS, max_train=max_train,
                                     mixture_samples=APP_DEFAULTS["mixture_samples"], seed=APP_DEFAULTS["seed"],
                                     progress=progress)
    finally:
        bar.empty()
    _store().put(key, res)
    return res


def metrics_frame(res):
    """Table 2 style DataFrame: one row per method (NGB, IndepNGB, their averages, oracle when synthetic)."""
    import pandas as pd

    rows = []
    for m, v in res.table.items():
        row = {"method": m}
        for k in ("NLL", "RMSE", "PR90_cov", "PR90_area", "n", "fit_s", "rounds_used"):
            if v.get(k) is not None:
                val = v[k]
                row[k] = ", ".join(map(str, val)) if isinstance(val, (list, tuple)) else (str(val) if k == "rounds_used" else val)
        rows.append(row)
    df = pd.DataFrame(rows)
    if "rounds_used" in df:
        df["rounds_used"] = df["rounds_used"].fillna("—")
    return df.rename(columns={"NLL": "NLL (nats)", "RMSE": "RMSE (cm/s)", "PR90_cov": "90% region coverage",
                                              "PR90_area": "90% region area (cm²/s²)", "fit_s": "fit (s)"})
