"""Split gains & entropy: the tree of a round, top splits, Gain^reg vs Gain^ent, importance, criterion comparison."""

import streamlit as st

from distviz.ui.common import explainer, fit_or_last, lazy_tabs, static_table
from distviz.ui.figures import charts
from distviz.ui.lab import settings, standalone_trees
from distviz.ui.playback import round_player
from distviz.ui.shared_views import split_tree_figure
from distviz.ui.state import bound, user_errors
from distviz.viz import results as vr
from distviz.viz import trees as vt

PAGE = "split"
TOP_ROW_PX = 35  # st.dataframe's row height

st.title("Split gains & entropy")
explainer("""
Every boosting round grows one regression tree on the round's target (the law's pseudo-residual).
**Tree**: the tree of the chosen round; each split shows its feature and threshold, the gain that chose it
(Gain^reg, or Gain^NGD for the natural law) and **Gain^ent**, the decrease of the generalised entropy
H = −Σ_J (W_J/W) A\\*(η\\*_J) the split would give if every leaf predicted its own mean of T(y); leaves
show their weight and output. **Top splits**: the largest gains over all rounds. **Scatter**: Gain^reg
against Gain^ent for every split — where they disagree, the regression criterion and the likelihood
criterion would choose different splits. **Importance**: each feature's share of the cumulative split
gain. **Entropy and NLL**: the training NLL and the entropy of each round's partition. **Standalone
trees**: one tree grown directly on T(y) with `criterion="variance"` and one with `criterion="entropy"`.
This page keeps its own **p**, **algorithm** and **rounds** (the other settings are the Lab's). It starts
with p = 3 input features, x1 driving the truth and x2, x3 pure noise, so the importance shows how little gain
the trees give to noise (p = 1 makes it trivially 100% x1), with NGD and 50 rounds. Try 200 rounds on 200 rows
with ν = 0.02 and depth 4: the training NLL keeps falling while the validation NLL rises after its best round
and the importance drifts to the noise features — overfitting made visible. With ν = 0.1 and 200 rounds the
fit diverges instead (a warning says so), which is a different failure.
""")
cfg, upload = settings()   # the Lab's settings with this page's own p, algorithm, rounds: app.py draws them (distviz.ui.lab)
res = fit_or_last(cfg, upload)
if res is None or not res.algo.offers_split_gains:
    st.stop()
model, data = res.model, res.data
trace = model.trace_
names = data.feature_names
gain_name = trace.attrs.get("gain_name", "Gain^reg")
R = vr.trace_rounds(trace)


# the scatter's tab is named after the gain that chose the splits (Gain^NGD for the natural law), as in the tree
SCATTER = f"{gain_name} vs Gain^ent"
VIEWS = ["Tree of the round", SCATTER, "Top splits", "Entropy and NLL", "Standalone trees"]


def selected_node(event):
    """The node id (the markers' customdata) of the point a click on the tree selected, else None."""
    points = (getattr(event, "selection", None) or {}).get("points") or []
    ids = [p.get("customdata") for p in points if isinstance(p.get("customdata"), (int, float))]
    return int(ids[0]) if ids else None


def draw(r):
    r = max(int(r), 1)
    tabs = dict(zip(VIEWS, lazy_tabs("view", VIEWS)))
    if tabs["Tree of the round"].open:
        with tabs["Tree of the round"]:
            tree = split_tree_figure(res, r)   # one build per fit and round, shared by the class's sessions
            event = charts().plotly_chart(tree, key="split.tree", on_select="rerun", selection_mode="points")
            node = selected_node(event)
            if node is None:
                st.caption(f"Click a node for its path from the root and its numbers. {SCATTER}, top splits, entropy "
                           "and the standalone trees are in the other tabs.")
            else:
                try:
                    static_table(vt.node_details(trace, r, node, names))
                except KeyError:   # a node of another round's tree stayed selected
                    st.caption("Click a node of this round's tree for its details.")
    if tabs[SCATTER].open:
        with tabs[SCATTER]:
            c1, c2 = st.columns(2, gap="medium")
            charts(c1).plotly_chart(vt.gain_scatter_figure(trace, current=r,
                                                           title=f"{SCATTER}<br><sup>every split of every round</sup>"),
                            key="split.scatter")
            charts(c2).plotly_chart(vt.importance_figure(trace, names, current=r,
                                                         title="feature importance over rounds<br><sup>share of the split "
                                                               "gain</sup>"),
                            key="split.importance")
    if tabs["Top splits"].open:
        with tabs["Top splits"]:
            top = vt.top_splits(trace, 12, names)
            # the grid's rows are 35 px (header included) plus a 3 px frame: no empty row at the end
            st.dataframe(top, hide_index=True, width="stretch", height=TOP_ROW_PX * (len(top) + 1) + 3,
                         column_config={"threshold": st.column_config.NumberColumn(format="%.4g"),
                                        "weight": st.column_config.NumberColumn("weight (rows)", format="%.0f"),
                                        gain_name: st.column_config.NumberColumn(format="%.4g"),
                                        "Gain^ent": st.column_config.NumberColumn("Gain^ent (nats/obs)", format="%.3g")})
    if tabs["Entropy and NLL"].open:
        with tabs["Entropy and NLL"]:
            charts().plotly_chart(vr.nll_from_trace(trace, current=r, algo=cfg.algorithm,
                                              title="generalised entropy next to the training NLL"), key="split.nll")
    if tabs["Standalone trees"].open:
        with tabs["Standalone trees"]:
            standalone()


def standalone():
    """criterion="variance" vs criterion="entropy": two trees grown directly on T(y) of the same data."""
    st.markdown('**Standalone trees: `criterion="variance"` vs `criterion="entropy"`**')
    depth = st.slider("Standalone tree depth", 1, 6, 3, **bound("tdepth"),
                      help="Both trees are grown on T(y) of the same data with this depth.")
    with user_errors():
        tdata, T, fam, trees = standalone_trees(cfg, upload, depth)
        charts().plotly_chart(vt.criterion_comparison_figure(tdata.X[:, 0], T, {k: v["pred"] for k, v in trees.items()},
                                                       stat_names=fam.param_names, x_label=tdata.x_label,
                                                       steps=tdata.X.shape[1] == 1,
                                                       title="leaf means of T(y) against the first input"),
                        key="split.criteria")
        cols = st.columns(len(trees))
        for col, (crit, v) in zip(cols, trees.items()):
            col.metric(f'criterion="{crit}": leafwise NLL', f"{v['nll']:.4f}",
                       help=f"{v['leaves']} leaves, grown in {v['seconds'] * 1000:.0f} ms; every leaf predicts its mean of T(y).")


round_player(PAGE, R, draw, default=1)
