"""Drifters: multivariate NGBoost vs independent NGBoost (and their averages) on ocean-drifter velocities."""

import numpy as np
import streamlit as st

from distviz.ui.jobs import FitCancelled
from distviz.ui.common import explainer, static_table
from distviz.ui.drifters import (REAL_FINDING, REAL_SUBSET, SOURCES, SYNTHETIC_FINDING, available_sources, metrics_frame,
                                 precomputed, run_comparison)
from distviz.ui.lab import MAX_UPLOAD_MB
from distviz.ui.state import error_sentence, qp_key, recall, remember, sync_query_params, user_errors

PAGE = "drift"

st.title("Drifters: NGB vs Indep NGB")
explainer("""
Ocean drifters report their velocity (u, v) every day. **NGB** predicts a *bivariate* Gaussian for
(u, v) from wind stress, wind speed, geostrophic velocity, position and day of year (multivariate NGBoost,
Cholesky-of-precision chart); **Indep NGB** predicts u and v with two independent Normal NGBoosts
(no correlation). The drifters are split by id (train / validation / test) and the test rows are scored
(Table 2 of the paper): NLL (lower is better), RMSE, and the coverage and area of the 90% prediction
regions. *Pool* and *Mix* rows average the two models (log-linear pool and mixture, one global weight or
one per region). The **maps** bin the test rows on a lon/lat grid: number of points, the mean NLL
difference NGB − Indep NGB (blue: NGB better), NGB's predicted correlation ρ and the mean predicted
currents. The **trajectory** view shows one held-out drifter with both models' 70% ellipses of the
one-day displacement. Maps are drawn offline from vendored Natural Earth coastlines.
""")

st.sidebar.header("Drifter data")
sources = available_sources()
source = st.sidebar.selectbox("Data", sources, format_func=lambda k: SOURCES[k], key=qp_key(PAGE, "source", sources[0], options=sources),
                              help="The synthetic sample ships with distviz; the real subset is read from "
                                   f"../shared/data/{'/'.join(REAL_SUBSET)} when present; or upload a processed table.")
upload = None
if source == "upload":
    up = st.sidebar.file_uploader(f"Drifter CSV (up to {MAX_UPLOAD_MB} MB)", type=["csv", "txt", "tsv"], key=f"{PAGE}.upload",
                                  help="Columns as the processed drifter table: Tx, Ty, Wx, Wy, u_av, v_av, lon, lat, t, u, v, id. "
                                       "Parsed as data only.")
    upload = None if up is None else up.getvalue()
rounds = st.sidebar.select_slider("Boosting rounds (max)", [30, 60, 100, 200, 300], key=qp_key(PAGE, "drounds", 30, options=[30, 60, 100, 200, 300]),
                                  help="Upper bound on the rounds; early stopping on the validation drifters picks the count.")
lr = st.sidebar.select_slider("Learning rate", [0.02, 0.05, 0.1, 0.2], key=qp_key(PAGE, "dlr", 0.1, options=[0.02, 0.05, 0.1, 0.2]),
                              help="Shrinkage of every tree (the paper uses 0.01 with many more rounds).")
max_train = None
if source == "sample":
    max_train = st.sidebar.select_slider("Training rows (sample)", [1000, 2000, 5000, 10000, 30000],
                                         key=qp_key(PAGE, "train", 2000, options=[1000, 2000, 5000, 10000, 30000]),
                                         help="A random subset of the training rows keeps the first fit quick.")
nn = st.sidebar.toggle("Add the neural-network baseline (NN)", key=qp_key(PAGE, "nn", False),
                       help="The paper's NN row (Sec. 4): an MLP that outputs the bivariate Gaussian in NGB's chart, "
                            "Adam at 0.01, patience 50, hidden layers chosen on the validation drifters from the "
                            "authors' grid. It adds about 2-3 ms per training row to the fit.")

if source == "sample":
    st.info("**Synthetic data.** The shipped sample is simulated (`scripts/make_drifter_sample.py`, seeded): drifters "
            "advected in an analytic Gulf-Stream-like flow with analytic winds and noise whose correlation varies in "
            "space, so the true law is known (the *Oracle* row). " + SYNTHETIC_FINDING + " " + REAL_FINDING + " "
            "For real drifters choose *real GDP subset* in the "
            f"sidebar (read from `../shared/data/{'/'.join(REAL_SUBSET)}` when present), upload a processed drifter "
            "CSV, or run `distviz study drifters --data PATH` on the Zenodo 5644972 table or a GDP NetCDF file.",
            icon=":material/science:")
elif source == "real":
    st.caption("**Real data** (GDP drifters). " + REAL_FINDING + " One split, as fitted below, cannot separate "
               "them; the paper's protocol is `distviz study drifters --data PATH --protocol paper`.")
pre = precomputed(source, rounds, lr, max_train, nn)
refit = False
if pre is not None:
    refit = st.sidebar.button("Refit now", help="The first view shows a result precomputed with these settings by "
                              "scripts/make_drifter_sample.py; this refits NGB and IndepNGB here (about 10 s).")

res = None
try:
    res = remember("drift", run_comparison(source, rounds, lr, max_train, upload, nn=nn, refit=refit))
except FitCancelled:  # this session ended while its comparison waited or ran: nobody will see the page
    st.stop()
except Exception as exc:  # noqa: BLE001 - one sentence for any failure (Streamlit's rerun signals are BaseExceptions)
    st.error(error_sentence(exc))
    res = recall("drift")
    if res is not None:
        st.caption("Showing the last successful comparison.")

if res is not None:
    from distviz.viz import maps

    info = res.info
    st.caption(f"{info.get('source')}{' (SYNTHETIC)' if info.get('synthetic') else ''} — {info.get('n_drifters')} "
               f"drifters, {info.get('n_train')} training / {info.get('n_val')} validation / {info.get('n_test')} test "
               f"rows; {info.get('units', '')}."
               + (" Precomputed with these settings (press *Refit now* to fit here)." if info.get("precomputed") else "")
               + (" For NN, *rounds_used* is its best epoch." if "NN" in res.table else ""))
    static_table(metrics_frame(res), {"NLL (nats)": ".3f", "RMSE (cm/s)": ".2f", "90% region coverage": ".3f",
                                      "90% region area (cm²/s²)": ",.0f", "fit (s)": ".1f"})
    c1, c2 = st.columns([1, 1])
    region = c1.radio("Region", ["whole area (2° bins)", "Gulf Stream box (0.5° bins)"], horizontal=True,
                      key=qp_key(PAGE, "region", "whole area (2° bins)", options=["whole area (2° bins)", "Gulf Stream box (0.5° bins)"]))
    kinds = list(maps.KINDS)
    kind = c2.radio("Map", kinds, format_func=lambda k: maps.PANEL_TITLES.get(k, k), horizontal=True,
                    key=qp_key(PAGE, "map", "nll_diff", options=kinds))
    binned = res.binned if region.startswith("whole") else res.zoom
    with user_errors():
        if int(np.nansum(binned["n_test"].values)) == 0:
            st.info("No test points fall in this region; choose the whole area.")
        else:
            st.plotly_chart(maps.map_figure_plotly(binned, kind, scale="110m" if region.startswith("whole") else "50m"),
                            key="drift.mapfig")
    pred = res.predictions
    ids = [int(i) for i in np.unique(pred["id"].values)]
    default_id = maps.pick_trajectory(pred)[0]
    did = st.selectbox("Held-out drifter for the trajectory view", ids, index=ids.index(default_id) if default_id in ids else 0,
                       key=f"{PAGE}.drifter", help="Default: the held-out window with the fastest mean speed.")
    with user_errors():
        st.plotly_chart(maps.trajectory_ellipses_plotly(pred, did), key="drift.trajfig")
sync_query_params(PAGE)
