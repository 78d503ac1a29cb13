"""Drifters: multivariate NGBoost vs independent NGBoost (and their averages) on ocean-drifter velocities."""

import numpy as np
import streamlit as st

from distviz.experiments.drifters import APP_DEFAULTS
from distviz.ui.checks import drifter_checks_panel
from distviz.ui.common import explainer, static_table
from distviz.ui.drifters import (
    RATES,
    REAL_FINDING,
    REAL_HOWTO,
    REGIONS,
    ROUNDS,
    SAMPLE_TRAIN_ROWS,
    SYNTHETIC_FINDING,
    TRAIN,
    UPLOAD_PROMPT,
    available_sources,
    map_figure,
    map_grid_controls,
    metrics_frame,
    precomputed,
    predict_drifter_seconds,
    prediction_downloads,
    publication_downloads,
    run_comparison,
    trajectory_figure,
)
from distviz.ui.figures import show_figure
from distviz.ui.fits import MAX_UPLOAD_MB
from distviz.ui.jobs import FitCancelled
from distviz.ui.params import option_text
from distviz.ui.safe_text import escape_markdown, show_error
from distviz.ui.state import bound, error_sentence, recall, remember, user_errors
from distviz.viz.notation import math_text

PAGE = "drift"

st.title("Drifters: NGB vs Indep NGB")
explainer("""
Ocean drifters report their velocity (u, v) every day. **NGB** predicts a bivariate Gaussian for
(u, v) from wind stress, wind speed, geostrophic velocity, position and day of year (multivariate NGBoost,
Cholesky-of-precision chart); **Indep NGB** predicts u and v with two independent Normal NGBoosts
(no correlation). The drifters are split by id (train / validation / test) and the test rows are scored
(Table 2 of the paper): NLL (lower is better), RMSE, and the coverage and area of the 90% prediction
regions. **Pool** and **Mix** rows average the two models (log-linear pool and mixture, one global weight or
one per region). The **maps** bin the test rows on a lon/lat grid: number of points, the mean NLL
difference NGB − Indep NGB (blue: NGB better), NGB's predicted correlation ρ and the mean predicted
currents. The **trajectory** view (folded below the table; it is drawn when you open it) shows one held-out
drifter with both models' 70% ellipses of the one-day displacement. Maps are drawn offline from vendored Natural
Earth coastlines.
""")

st.sidebar.header("Drifter data")
sources = available_sources()
source = st.sidebar.selectbox("Data", sources, format_func=option_text("source"), persist_state="session", **bound("source"),
                              help="The synthetic sample ships with distviz. " + REAL_HOWTO)
upload = None
if source == "upload":
    up = st.sidebar.file_uploader(f"Drifter CSV (up to {MAX_UPLOAD_MB} MB)", type=["csv", "txt", "tsv"], key=f"{PAGE}.upload",
                                  help="Columns as the processed drifter table: Tx, Ty, Wx, Wy, u_av, v_av, lon, lat, "
                                       "t, u, v, id. Parsed as data only.")
    upload = None if up is None else up.getvalue()
D = APP_DEFAULTS
rounds = st.sidebar.select_slider("Boosting rounds (max)", ROUNDS, value=D["rounds"], **bound("drounds"),
                                  help="Upper bound on the rounds; early stopping on the validation drifters picks the count.")
lr = st.sidebar.select_slider("Learning rate", RATES, value=D["learning_rate"], **bound("dlr"),
                              help="Shrinkage of every tree (the paper uses 0.01 with many more rounds).")
max_train = None
if source == "sample":
    max_train = st.sidebar.select_slider("Training rows (sample)", TRAIN, value=D["max_train"], **bound("train"),
                                         help="A random subset of the training rows; with all 30,000 NGB's edge over "
                                              "IndepNGB shows (fewer rows fit faster and blur it).")
nn = st.sidebar.toggle("Add the neural-network baseline (NN)", value=False, **bound("nn"),
                       help="The paper's NN row (Sec. 4): an MLP that outputs the bivariate Gaussian in NGB's chart, "
                            "Adam at 0.01, patience 50, hidden layers chosen on the validation drifters from the "
                            "authors' grid. It adds to the fit a time that grows with the training rows.")

if source == "sample":
    st.info("**Synthetic data**: simulated drifters whose noise correlation is known (the **Oracle** row), "
            "shipped with distviz. " + REAL_HOWTO, icon=":material/science:")
elif source == "real":
    st.caption("**Real data** (the real drifter subset of GDP drifters). One split, as fitted below, cannot separate "
               "NGB and IndepNGB; see the note under the table.")
pre = precomputed(source, rounds, lr, max_train, nn)
refit = False
if pre is not None:
    refit = st.sidebar.button("Refit now", help="The first view shows a result precomputed with these settings by "
                              "scripts/make_drifter_sample.py; this refits NGB and IndepNGB here (about "
                              f"{predict_drifter_seconds(max_train or SAMPLE_TRAIN_ROWS, rounds):.0f} s or less).")

res = None
# the upload prompt's place, emptied at once by the run that has the file (the prompt, or before it an error, stayed
# on screen beside the uploaded file's chip while the comparison was fitted)
prompt = st.empty()
waiting = source == "upload" and upload is None
if waiting:   # nothing to compare yet: say what to do (not an error); the last comparison stays below
    prompt.info(UPLOAD_PROMPT, icon=":material/upload_file:")
try:
    res = recall("drift") if waiting else remember("drift", run_comparison(source, rounds, lr, max_train, upload,
                                                                           nn=nn, refit=refit))
except FitCancelled:  # this session ended while its comparison waited or ran: nobody will see the page
    st.stop()
except Exception as exc:  # noqa: BLE001 - one sentence for any failure (Streamlit's rerun signals are BaseExceptions)
    show_error(error_sentence(exc))   # it may quote the upload's columns or values (a drifter id): shown literally
    res = recall("drift")
    if res is not None:
        st.caption("Showing the last successful comparison.")
if waiting and res is not None:
    st.caption("Showing the last successful comparison.")

if res is not None:
    from distviz.viz import maps

    info = res.info
    grid_box, grid_size = map_grid_controls(res)
    c1, c2 = st.columns([2, 3])
    region = c1.radio("Region", REGIONS, horizontal=True, persist_state="session", **bound("region"),
                      help=f"The whole area's map is binned in {grid_size:g}° cells (set under **Map box and bin size**).")
    kinds = list(maps.KINDS)
    kind = c2.radio("Map", kinds, index=kinds.index("nll_diff"), format_func=option_text("map"), horizontal=True,
                    persist_state="session", **bound("map"))
    whole = region == REGIONS[0]
    with user_errors():
        fig = map_figure(res, whole, grid_box, grid_size, kind)
        if fig is None:
            st.info("No test points fall in this region; choose the whole area" + (" or a larger box." if whole
                                                                                   else "."))
        else:
            show_figure(fig, key="drift.mapfig")
            if kind == "nll_diff" and all(v in res.predictions for v in ("nll_NGB", "nll_IndepNGB")):   # the s.e.
                st.caption("Hover a bin for its count, mean paired difference NGB − IndepNGB and its standard error "
                           "clustered by drifter within the bin (a bin with fewer than 5 drifters has none: "
                           "too few clusters to estimate it). Outlined bins: "
                           "|mean| > 2 s.e., about a 5% two-sided test per bin, so with many bins a few are outlined "
                           "by chance.")
    st.caption(f"{escape_markdown(info.get('source'))}{' (SYNTHETIC)' if info.get('synthetic') else ''} — "
               f"{info.get('n_drifters')} drifters, {info.get('n_train')} training / {info.get('n_val')} validation / "
               f"{info.get('n_test')} test rows; "
               f"{escape_markdown(math_text(str(info.get('units', '')).replace('PR90_area', '90% region area')))}."
               + (" Precomputed with these settings (press **Refit now** to fit here)." if info.get("precomputed") else "")
               + (" For NN, **rounds used** is its best epoch." if "NN" in res.table else ""))
    static_table(metrics_frame(res), {"NLL (nats)": ".3f", "RMSE (cm/s)": ".2f", "90% region coverage": ".3f",
                                      "90% region area (cm²/s²)": ",.0f", "fit (s)": ".1f"})
    if source == "sample":
        st.info(SYNTHETIC_FINDING + " " + REAL_FINDING, icon=":material/compare_arrows:")
    with user_errors():
        drifter_checks_panel(res)
    # the trajectory view (the paper's Figure 5) is folded: it runs and draws only while open, so the page's first
    # paint holds one chart (?traj=true opens it, as a lesson's link does)
    traj = st.expander("Trajectory of one held-out drifter: both models' 70% prediction regions (paper Figure 5)",
                       icon=":material/route:", on_change="rerun", **bound("traj"))
    did = None
    if traj.open:
        with traj:
            pred = res.predictions
            ids = [int(i) for i in np.unique(pred["id"].values)]
            default_id = maps.pick_trajectory(pred)[0]
            did = st.selectbox("Held-out drifter for the trajectory view", ids,
                               index=ids.index(default_id) if default_id in ids else 0, **bound("drifter"),
                               help="Default: the held-out window with the fastest mean speed.")
            with user_errors():
                show_figure(trajectory_figure(res, did), key="drift.trajfig")
    prediction_downloads(res)
    publication_downloads(res, did)
