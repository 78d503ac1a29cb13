"""Posterior regression with WGBoost: conditional densities, method comparison (App. E), OOD detection."""

import numpy as np
import streamlit as st

from distviz.ui.common import explainer, fit_or_last, lazy_tabs, static_table
from distviz.ui.figures import show_figure
from distviz.ui.params import option_text
from distviz.ui.posterior import (
    CDE_DATA,
    CDE_DEPTHS,
    CDE_ROUNDS,
    METHODS,
    OOD_DEFAULT_ROUNDS,
    OOD_FIT,
    OOD_ROUNDS,
    SECTIONS,
    cde_config,
    gp_bands,
    load_ood_result,
    method_comparison,
    ood_demo,
    ood_demo_seconds,
)
from distviz.ui.shared_views import lab_figures
from distviz.ui.state import bound, user_errors
from distviz.viz import palette
from distviz.viz import posterior as vp

PAGE = "post"

st.title("Posterior regression with WGBoost")
explainer("""
**Wasserstein gradient boosting** gives every input x a set of N particles that flow, round by round,
towards the posterior π(θ | y, x) of the output distribution's parameters θ. **Conditional density**: the
predictive density p(y | x) = (1/N) Σ_n p(y | θ_n(x)) as a heat map (x across, y up) with the data as white
dots, the particles themselves in the next tab — the Old Faithful and bone-density examples of the paper's
Section 4.1. **Method comparison**: the App. E study — particles of SKA (diagonal Newton, the default),
FKA (first order), NKA (full Newton) and Langevin against the exact target N(sin x, 0.5²), scored by
MMD² (lower is better) and time per round; stars are values measured by running the authors' code
(App. E shows these curves only as a figure, without numbers). **OOD demo**: a
categorical WGBoost on UCI image segments with the class "sky" held out; the spread of the particles'
class probabilities is small for familiar inputs and large for the unseen class, so 1 / max variance
separates them (Section 4.3; PR-AUC of in- vs out-of-distribution).
""")
section = st.radio("Section", SECTIONS, horizontal=True, **bound("section"))

if section == "conditional density":
    st.sidebar.header("Conditional density")
    dkeys = list(CDE_DATA)
    # (this page's own parameter names: the Lab's data, rounds and depth are other widgets, drawn by app.py)
    data = st.sidebar.selectbox("Data set", dkeys, index=dkeys.index("faithful"), format_func=option_text("pdata"),
                                persist_state="session", **bound("pdata"))
    method = st.sidebar.selectbox("Method", METHODS, index=list(METHODS).index("ska"), format_func=option_text("method"),
                                  persist_state="session", **bound("method"),
                                  help="SKA is the paper's default; Langevin samples with noise.")
    rounds = st.sidebar.select_slider("Rounds", CDE_ROUNDS, value=100, **bound("prounds"),
                                      help="The paper uses 500 rounds of depth-1 trees.")
    depth = st.sidebar.slider("Tree depth", *CDE_DEPTHS, value=1, **bound("pdepth"),
                              help="Depth-1 trees (stumps) as in Section 4.1 give smooth densities.")
    cfg = cde_config(data, method, int(rounds), int(depth))
    res = fit_or_last(cfg, slot="post")
    VIEWS = ["Predictive density", "Particles and NLL", "vs sparse-GP bands"]
    if res is not None:
        figs = lab_figures(res)   # built once per server for this fit (distviz.ui.shared_views)
        tabs = dict(zip(VIEWS, lazy_tabs("view", VIEWS)))
        if tabs[VIEWS[0]].open:
            with tabs[VIEWS[0]]:
                for f in [f for f in figs if "density" in (f.layout.title.text or "")]:
                    show_figure(f, key="post.density")
        if tabs[VIEWS[1]].open:
            with tabs[VIEWS[1]]:
                c1, c2 = st.columns(2)
                show_figure(figs[0], key="post.particles", box=c1)
                show_figure(figs[-1], key="post.nll", box=c2)
        if tabs[VIEWS[2]].open:
            with tabs[VIEWS[2]], user_errors():
                st.caption("Sparse Gaussian processes with 20 inducing points (distviz.gp), fitted on the same data.")
                ds, gd = gp_bands(data)
                gx = ds["x"].values
                G = (gx[:, None] if res.data.X.shape[1] == 1
                     else np.column_stack([gx] + [np.full_like(gx, np.median(c)) for c in res.data.X[:, 1:].T]))
                yv = np.asarray(res.data.y, dtype=float)
                yg = np.linspace(yv.min() - 0.3 * yv.std(), yv.max() + 0.3 * yv.std(), 300)
                m, lo, hi = vp.density_band(yg, res.model.predict_density(G, yg))
                show_figure(vp.gp_bands_figure(ds, gd.X[:, 0], gd.y, density=(gx, m, lo, hi, method), x_label=gd.x_label,
                                               y_label=gd.y_label, title="90% predictive bands: sparse GPs vs WGBoost"),
                            key="post.gpfig")
elif section == "method comparison":
    rounds = st.sidebar.select_slider("Rounds", [50, 100, 200], value=100, **bound("cmp_rounds"))
    methods = st.sidebar.multiselect("Methods", METHODS, default=METHODS, format_func=palette.algo_label, key=f"{PAGE}.methods")
    if not methods:
        st.error("Pick at least one method to compare.")
    else:
        with user_errors():
            out = method_comparison(int(rounds), tuple(methods))
            show_figure(vp.method_comparison_figure(out, title=f"App. E: 200 inputs, 10 particles, {rounds} rounds"),
                        key="post.compare")
            static_table(vp.comparison_table(out))
else:
    rounds = st.sidebar.select_slider("Rounds", OOD_ROUNDS, value=OOD_DEFAULT_ROUNDS, **bound("ood_rounds"),
                                      help="Section 4.3 uses 4000 rounds with learning rate 0.4; fewer rounds leave the "
                                           "two groups overlapping.")
    refit = False
    if load_ood_result(int(rounds), OOD_FIT["seed"]) is not None:
        refit = st.sidebar.button("Refit now", key=f"{PAGE}.ood_refit",
                                  help="The first view is precomputed with these settings by "
                                       "scripts/make_posterior_ood_default.py; this fits it here (about "
                                       f"{ood_demo_seconds(int(rounds)):.0f} s).")
    with user_errors():
        o = ood_demo(int(rounds), refit=refit)
        c = st.columns(3)
        c[0].metric("test accuracy", f"{100 * o['accuracy']:.1f} %", help="paper: 96.6 % after 4000 rounds")
        c[1].metric("OOD PR-AUC", f"{100 * o['pr_auc']:.1f} %", help="paper: 99.7 % after 4000 rounds")
        c[2].metric("fit time" + (" (when precomputed)" if o.get("precomputed") else ""), f"{o['seconds']:.1f} s")
        show_figure(vp.ood_figure(o["score_in"], o["score_out"],
                                  title=f"OOD score after {int(rounds)} rounds: {o['n_test']} test rows of "
                                        f"{len(o['classes'])} known classes vs {o['n_ood']} 'sky' rows"), key="post.ood")
        if o.get("precomputed"):
            st.caption(f"Precomputed with these settings (split seed {o['seed']}); press **Refit now** to fit here.")
