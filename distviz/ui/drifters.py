"""Drifter comparison runs for the Drifters page: data choices, a cached run with progress (no maths here)."""

from __future__ import annotations

import hashlib
import itertools
import threading
from collections import OrderedDict

import numpy as np
import streamlit as st

from distviz.data.paths import shared_data_path
from distviz.errors import DataError

from .figures import shared_figures
from .fits import MAX_UPLOAD_MB, _Store  # noqa: F401 (MAX_UPLOAD_MB re-exported)
from .jobs import check_budget, result_store, run_fit
from .uploads import drifter_table

SOURCES = OrderedDict([
    ("sample", "SYNTHETIC sample (shipped)"),
    ("real", "real drifter subset (GDP, 1000 rows, 120 drifters)"),
    ("upload", "upload a processed drifter CSV"),
])
METHODS = ("NGB", "IndepNGB")
#: The optional neural-network baseline (paper Sec. 4 "NN", `distviz.baselines.MVNNetwork`), off by default.
NN_METHOD = "NN"


#: the page's choices: boosting rounds (max), learning rates, training rows of the sample, map regions
ROUNDS, RATES, TRAIN = [30, 60, 100, 200, 300], [0.02, 0.05, 0.1, 0.2], [1000, 2000, 5000, 10000, 30000]
REGIONS = ["whole area", "Gulf Stream box (0.5° bins)"]   # the whole area's bins are the user's (map_grid_controls)


#: What the page shows while *upload* is chosen and no file is there yet (an instruction, not an error).
UPLOAD_PROMPT = ("Upload a processed drifter CSV in the sidebar (columns Tx, Ty, Wx, Wy, u_av, v_av, lon, lat, t, u, "
                 "v, id) to compare NGB and IndepNGB on it, or choose another source under **Data**.")


def methods_for(nn: bool) -> tuple[str, ...]:
    """Methods the page fits: NGB and IndepNGB, plus the NN baseline when `nn`."""
    return METHODS + ((NN_METHOD,) if nn else ())
REAL_SUBSET = ("drifters", "gdp_north_atlantic_subset.csv")
#: How to get real drifters onto the page (no server paths: the person running the app knows where its data live).
REAL_HOWTO = ("For real drifters choose **real drifter subset** under **Data** when this server has it (whoever runs "
              "distviz adds it to its data folder; see the user guide, Ocean drifters), or upload a processed drifter "
              "table such as the paper's (Zenodo record 5644972).")
#: What the synthetic sample shows (docs/user_guide/drifters.rst, checked by tests/test_user_guide.py: the precomputed
#: comparison, `distviz study drifters` with the app's defaults, one split, 3,868 test rows).
SYNTHETIC_FINDING = ("On this synthetic sample NGB beats IndepNGB (test NLL 7.534 vs 7.553 nats with the study's "
                     "defaults, one split) because the simulation built the correlated noise in.")
#: What the real subset shows (`distviz study drifters --data
#: ../shared/data/drifters/gdp_north_atlantic_subset.csv --protocol paper --methods NGB,IndepNGB,NN`).
REAL_FINDING = ("On the real 1000-row GDP subset NGB and IndepNGB cannot be told apart: NGB − IndepNGB = "
                "−0.064 ± 0.084 nats over 10 splits by drifter with the paper's protocol (NGB better in 6 of 10; "
                "−0.069 ± 0.047 with the study's defaults).")


def available_sources() -> list[str]:
    """Data sources present on this machine (the real subset only when the shared data folder holds it)."""
    out = list(SOURCES)
    try:
        real = shared_data_path(*REAL_SUBSET)
    except DataError:   # a link out of the data folder: not offered
        real = None
    if real is None:
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


def precomputed(source: str, rounds: int, learning_rate: float, max_train: int | None, nn: bool = False):
    """The shipped precomputed comparison when `source` is the sample and the settings are its settings, else None
    (also None with the NN baseline, which the shipped result does not hold)."""
    if source != "sample" or nn:
        return None
    return _precomputed(int(rounds), float(learning_rate), None if max_train is None else int(max_train))


def run_comparison(source: str, rounds: int, learning_rate: float, max_train: int | None, upload: bytes | None = None,
                   *, nn: bool = False, refit: bool = False, progress_container=None):
    """The drifter comparison (NGB vs IndepNGB and their averages, plus the NN baseline when `nn`): from the
    cache, the shipped precomputed result (sample, default settings, no NN, unless `refit`), or run now with a
    progress bar through the fit governor (budget, single flight, cap, cancellation)."""
    from distviz.experiments.drifters import APP_DEFAULTS, run_drifter_comparison

    methods = methods_for(bool(nn))
    key = ("drift", source, int(rounds), float(learning_rate), max_train,
           hashlib.sha1(upload).hexdigest() if upload else "") + (("nn",) if nn else ())
    hit = _store().get(key)
    if hit is not None:
        return hit
    if not refit:
        pre = precomputed(source, rounds, learning_rate, max_train, nn)
        if pre is not None:
            return pre
    if source == "sample":
        check_drifter_budget(int(max_train or SAMPLE_TRAIN_ROWS), rounds, nn=nn)   # before anything is loaded

    def factory():
        data = _source(source, upload)
        if source != "sample":
            check_drifter_budget(REAL_ROWS if isinstance(data, str) else len(data), rounds, upload=source == "upload",
                                 nn=nn)

        def work(progress):
            def say(frac, msg):   # called between steps and at most twice a second during the fits
                progress(int(1000 * min(max(float(frac), 0.0), 1.0)), 1000, msg)

            return run_drifter_comparison(data, rounds=int(rounds), learning_rate=float(learning_rate),
                                          patience=APP_DEFAULTS["patience"], methods=methods, max_train=max_train,
                                          mixture_samples=APP_DEFAULTS["mixture_samples"], seed=APP_DEFAULTS["seed"],
                                          progress=say)
        return work

    label = "fitting NGB, IndepNGB and NN" if nn else "fitting NGB and IndepNGB"
    knobs = "the boosting rounds or " + ("upload fewer rows" if source == "upload" else "the training rows")
    return run_fit(key, factory, label=label, box=progress_container, store=_store(),
                   knobs=knobs + (", or switch the NN baseline off" if nn else ""))


#: Rows of the real GDP subset; training rows of the shipped sample when all are used.
REAL_ROWS, SAMPLE_TRAIN_ROWS = 1000, 30000


def predict_nn_seconds(rows: int) -> float:
    """Predicted wall time (s) of the NN baseline (NN_DEFAULTS: the authors' six hidden-layer structures,
    Adam at 0.01, batches of 256, patience 50): 1 + 3e-3 rows, whatever the boosting rounds.

    The coefficients are an upper envelope of timings of the NN on the shipped sample; the app uses this only
    to warn before a long fit.
    """
    return 1.0 + 3e-3 * max(int(rows), 1)


def predict_drifter_seconds(rows: int, rounds: int, nn: bool = False) -> float:
    """Predicted wall time (s) of the NGB + IndepNGB comparison: 1 + 3e-6 rows rounds (plus the NN's when `nn`).

    The coefficient is an upper envelope of timings on the shipped sample (early stopping at patience 10); the
    app uses this only to warn before a long fit.
    """
    secs = 1.0 + 3e-6 * max(int(rows), 1) * max(int(rounds), 1)
    return secs + (predict_nn_seconds(rows) if nn else 0.0)


def check_drifter_budget(rows: int, rounds: int, *, upload: bool = False, nn: bool = False) -> float:
    """The predicted seconds; ConfigError naming the knobs when they exceed the server's limit."""
    secs = predict_drifter_seconds(rows, rounds, nn)
    knobs = "the boosting rounds or " + ("upload fewer rows" if upload else "the training rows")
    check_budget(secs, knobs + (", or switch the NN baseline off" if nn else ""), what="This comparison")
    return secs


def metrics_frame(res):
    """Table 2 style DataFrame: one row per method (NGB, IndepNGB, NN when fitted, their averages, oracle when
    synthetic); for NN the rounds_used column is its best epoch."""
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
    return df.rename(columns=COLUMN_NAMES)


#: Table 2's metric keys as the page's column headings.
COLUMN_NAMES = {"NLL": "NLL (nats)", "RMSE": "RMSE (cm/s)", "PR90_cov": "90% region coverage",
                "PR90_area": "90% region area (cm²/s²)", "n": "test rows", "fit_s": "fit (s)",
                "rounds_used": "rounds used"}


# ---------------------------------------------------------------------------------------------- publication maps
#: The paper's map figures drawn with cartopy (distviz.viz.maps), as downloads: name -> (button label, caption).
PUBLICATION = OrderedDict([
    ("fig4", ("Figure 4: maps, whole area", "Test-set summaries in 2° x 2° bins: (a) test points, (b) mean NLL "
                                            "NGB − IndepNGB, (c) NGB's mean predicted ρ, (d) mean predicted currents.")),
    ("fig5", ("Figure 5: trajectory", "The chosen held-out drifter with NGB's (a) and IndepNGB's (b) 70% "
                                      "prediction regions of the 1-day displacement.")),
    ("fig6", ("Figure 6: Gulf Stream zoom", "As Figure 4 in the Gulf Stream box of Section 5.4, 0.5° bins.")),
])
MIME = {"png": "image/png", "pdf": "application/pdf"}


def publication_figure(res, which: str, drifter_id=None):
    """The matplotlib figure `which` (fig4, fig5, fig6) of a drifter comparison, drawn offline with cartopy."""
    from distviz.viz import maps

    if which == "fig4":
        return maps.summary_maps_figure(res.binned, title=PUBLICATION[which][1], scale="110m")
    if which == "fig6":
        return maps.summary_maps_figure(res.zoom, title=PUBLICATION[which][1], scale="50m")
    if which == "fig5":
        return maps.trajectory_ellipses_figure(res.predictions, drifter_id)
    raise ValueError(which)


def publication_bytes(res, which: str, fmt: str, drifter_id=None) -> bytes:
    """`publication_figure` rendered to PNG (200 dpi) or PDF bytes (matplotlib Agg; no network)."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = publication_figure(res, which, drifter_id)
    try:
        buf = io.BytesIO()
        fig.savefig(buf, format=fmt, dpi=200 if fmt == "png" else None, bbox_inches="tight")
        return buf.getvalue()
    finally:
        plt.close(fig)


def publication_downloads(res, drifter_id=None, box=None) -> None:
    """PNG and PDF download buttons for the paper's Figures 4-6 of `res`, each drawn only when clicked."""
    import functools

    box = st if box is None else box
    with box.popover("Publication maps (paper Figures 4-6, PNG / PDF)", icon=":material/map:"):
        st.caption("Drawn with cartopy and the Natural Earth coastlines shipped with distviz (no download); each "
                   "file is made when you click (a few seconds).")
        for which, (label, _caption) in PUBLICATION.items():
            cols = st.columns([3, 1, 1])
            cols[0].markdown(f"**{label}**")
            for col, fmt in zip(cols[1:], ("png", "pdf")):
                name = f"drifters-{which}{'-' + str(drifter_id) if which == 'fig5' and drifter_id is not None else ''}"
                col.download_button(fmt.upper(), data=functools.partial(publication_bytes, res, which, fmt, drifter_id),
                                    file_name=f"{name}.{fmt}", mime=MIME[fmt], on_click="ignore",
                                    key=f"drift.pub.{which}.{fmt}")


# ---------------------------------------------------------------------------------------------- per-row and model files
def prediction_downloads(res, box=None) -> None:
    """Download buttons for the test rows' predictions (CSV, NetCDF) and the fitted models (.nc), each file made
    only when its button is clicked; the names say the data and settings (`export_stem`)."""
    import functools

    from distviz.experiments.drifter_exports import (
        export_stem,
        model_file_bytes,
        per_row_csv,
        per_row_netcdf,
        saveable_models,
    )

    box = st if box is None else box
    stem = export_stem(res.info)
    with box.popover("Downloads: per-row test predictions and fitted models", icon=":material/download:"):
        st.caption("One row per test row: drifter id, time (days since 1970), lon, lat, the observed (u, v) in cm/s "
                   "and for each method the predicted mean, variances, covariance and correlation ρ of (u, v) and the "
                   "row's NLL in nats. Each file is made when you click.")
        left, right = st.columns(2)
        left.download_button("Per-row predictions (CSV)", data=functools.partial(per_row_csv, res.predictions),
                                file_name=f"{stem}-test-predictions.csv", mime="text/csv", on_click="ignore",
                                icon=":material/table:", key="drift.dl.csv")
        right.download_button("Per-row predictions (NetCDF)", data=functools.partial(per_row_netcdf, res.predictions),
                                file_name=f"{stem}-test-predictions.nc", mime="application/x-netcdf",
                                on_click="ignore", icon=":material/dataset:", key="drift.dl.nc")
        models = saveable_models(getattr(res, "models", {}) or {})
        if not models:
            st.caption("This comparison holds no fitted models (the shipped result is precomputed): press **Refit now** "
                       "to fit them here, then download them.")
            return
        st.caption("Fitted models, one NetCDF file each (no pickle); `distviz.persistence.load(path)` reads one back "
                   "and predicts as here (inputs as the drifter features, velocities in cm/s).")
        for col, (m, est) in zip(st.columns(max(len(models), 2)), models.items()):
            col.download_button(f"{m} model (.nc)", data=functools.partial(model_file_bytes, est),
                                file_name=f"{stem}-{m.lower()}-model.nc", mime="application/x-netcdf",
                                on_click="ignore", icon=":material/model_training:", key=f"drift.dl.model.{m}")



# ---------------------------------------------------------------------------------------------- the map's box and bins
#: URL parameters of the whole-area map's box (degrees) and bin size (issue 29 item 4)
GRID_PARAMS = (("lon0", "West longitude", -180.0, 180.0), ("lon1", "East longitude", -180.0, 180.0),
               ("lat0", "South latitude", -90.0, 90.0), ("lat1", "North latitude", -90.0, 90.0))


def map_grid_controls(res) -> tuple[tuple[float, float, float, float], float]:
    """((lon0, lon1, lat0, lat1), bin size) of the whole-area map from a folded box of number inputs, each mirrored
    bound to the URL (distviz.ui.state.bound); the defaults are the comparison's own grid, so the first view is the
    shipped one."""
    from distviz.experiments.drifter_grid import MAX_BIN_DEG, MAX_BINS, MIN_BIN_DEG, default_box

    from .state import bound

    dflt = default_box(res.binned)
    size0 = float(res.binned.attrs.get("bin_size_deg", 2.0))
    with st.popover("Map box and bin size (whole area)", icon=":material/grid_on:"):
        cols = st.columns(5)
        box = tuple(float(col.number_input(label, min_value=lo, max_value=hi, step=1.0, format="%.2f",
                                           value=min(max(d, lo), hi), **bound(name)))
                    for col, (name, label, lo, hi), d in zip(cols, GRID_PARAMS, dflt))
        size = float(cols[4].number_input("Bin size (°)", min_value=MIN_BIN_DEG, max_value=MAX_BIN_DEG, step=0.5,
                                          value=min(max(size0, MIN_BIN_DEG), MAX_BIN_DEG), format="%.2f",
                                          **bound("dbin")))
        st.caption(f"Bin edges fall on multiples of the bin size, so the grid may reach up to one bin past the box; "
                   f"at most {MAX_BINS:,} bins. The defaults are the comparison's own grid.")
    return box, size  # type: ignore[return-value]


def map_binned(res, whole: bool, box, size: float):
    """The binned result the map draws, with the NGB − IndepNGB s.e. per bin: the comparison's own grid (or the Gulf
    Stream zoom) when the box and size are its defaults, else the test predictions binned on the user's grid
    (`distviz.experiments.drifter_grid.grid_binned`, which raises ConfigError with one sentence for a bad grid)."""
    from distviz.experiments.drifter_grid import add_paired_se, default_box, grid_binned

    if not whole:
        return add_paired_se(res.zoom, res.predictions)
    if tuple(box) == default_box(res.binned) and size == float(res.binned.attrs.get("bin_size_deg", 2.0)):
        return add_paired_se(res.binned, res.predictions)
    keep = {k: v for k, v in res.binned.attrs.items() if not k.endswith("_json")}
    return grid_binned(res.predictions, box, size, keep)


# ---------------------------------------------------------------------------------------- the page's shared figures
_TOKENS = itertools.count()
_TOKEN_LOCK = threading.Lock()


def result_token(res) -> int:
    """A number naming the comparison object `res` for the server's life, never given to another object: the key
    of its shared figures.  Settings alone cannot be the key: *Refit now* replaces the precomputed result of the
    same settings, and an upload's result is another object for every file."""
    with _TOKEN_LOCK:
        return vars(res).setdefault("_figure_token", next(_TOKENS))


def map_figure(res, whole: bool, box, size: float, kind: str):
    """The map of `kind` on the whole area's grid (`box`, `size`) or the Gulf Stream zoom, or None when no test
    point falls in it; built once per server for this comparison and view (`distviz.ui.figures.shared_figures`).
    A bad grid raises ConfigError with one sentence (`map_binned`) and caches nothing."""
    def build():
        from distviz.viz import maps

        binned = map_binned(res, whole, box, size)
        if int(np.nansum(binned["n_test"].values)) == 0:
            return None
        return maps.map_figure_plotly(binned, kind, scale="110m" if whole else "50m")

    return shared_figures("drift.map", (result_token(res), bool(whole), tuple(float(v) for v in box), float(size),
                                        str(kind)), build)


def trajectory_figure(res, drifter_id: int):
    """The held-out drifter's trajectory with both models' 70% ellipses, built once per server for this comparison
    and drifter (`distviz.ui.figures.shared_figures`)."""
    from distviz.viz import maps

    return shared_figures("drift.trajectory", (result_token(res), int(drifter_id)),
                          lambda: maps.trajectory_ellipses_plotly(res.predictions, drifter_id))
