"""Drifter comparison runs for the Drifters page: data choices, a cached run with progress (no maths here)."""

from __future__ import annotations

import hashlib
from collections import OrderedDict

import streamlit as st

from distviz.data.paths import shared_data_path
from distviz.errors import DataError

from .lab import MAX_UPLOAD_MB, _Store  # noqa: F401 (MAX_UPLOAD_MB re-exported)
from .jobs import check_budget, result_store, run_fit
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


def _store() -> _Store:
    """The process-wide byte-bounded result store (shared with the Lab's models)."""
    return result_store()


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


@st.cache_resource(max_entries=4, show_spinner=False)
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

    key = ("drift", source, int(rounds), float(learning_rate), max_train,
           hashlib.sha1(upload).hexdigest() if upload else "")
    hit = _store().get(key)
    if hit is not None:
        return hit
    if not refit:
        pre = precomputed(source, rounds, learning_rate, max_train)
        if pre is not None:
            return pre
    if source == "sample":
        check_drifter_budget(int(max_train or SAMPLE_TRAIN_ROWS), rounds)   # before anything is loaded

    def factory():
        data = _source(source, upload)
        if source != "sample":
            check_drifter_budget(REAL_ROWS if isinstance(data, str) else len(data), rounds, upload=source == "upload")

        def work(progress):
            def say(frac, msg):   # called between steps and at most twice a second during the fits
                progress(int(1000 * min(max(float(frac), 0.0), 1.0)), 1000, msg)

            return run_drifter_comparison(data, rounds=int(rounds), learning_rate=float(learning_rate),
                                          patience=APP_DEFAULTS["patience"], methods=METHODS, max_train=max_train,
                                          mixture_samples=APP_DEFAULTS["mixture_samples"], seed=APP_DEFAULTS["seed"],
                                          progress=say)
        return work

    return run_fit(key, factory, label="fitting NGB and IndepNGB", box=progress_container, store=_store())


#: Rows of the real GDP subset; training rows of the shipped sample when all are used.
REAL_ROWS, SAMPLE_TRAIN_ROWS = 1000, 30000


def predict_drifter_seconds(rows: int, rounds: int) -> float:
    """Predicted wall time (s) of the NGB + IndepNGB comparison: 1 + 3e-6 rows rounds.

    Timed on this 2-core machine (2026-11-25, the shipped sample, early stopping at patience 10):
    2000 x 30 -> 0.5 s, 10000 x 100 -> 2.8 s, 30000 x 300 -> 25 s (2.8e-6 s per row-round).
    """
    return 1.0 + 3e-6 * max(int(rows), 1) * max(int(rounds), 1)


def check_drifter_budget(rows: int, rounds: int, *, upload: bool = False) -> float:
    """The predicted seconds; ConfigError naming the knobs when they exceed the server's limit."""
    secs = predict_drifter_seconds(rows, rounds)
    check_budget(secs, "the boosting rounds or " + ("upload fewer rows" if upload else "the training rows"),
                 what="This comparison")
    return secs


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
