"""Evolution: replay the boosting rounds from the stored trace (fit, iterates, particles, geometry, NLL)."""

import numpy as np
import streamlit as st

from distviz.ui.algorithms import GEOMETRY_PAIR, Kind
from distviz.ui.common import explainer, fit_or_last, lazy_tabs
from distviz.ui.figures import charts, show_row
from distviz.ui.lab import fit_model, settings
from distviz.ui.layout import presenting
from distviz.ui.playback import round_player
from distviz.ui.safe_text import escape_markdown
from distviz.ui.shared_views import evolution_round_figures, evolution_row
from distviz.ui.state import bound, error_sentence
from distviz.viz import results as vr

PAGE = "evo"

st.title("Evolution")
explainer("""
The model of the sidebar (the same settings as the Lab) is fitted once; its **trace** stores the
iterate of every traced row at every round, so the slider and the **play** button replay the fit
without refitting. **Top**: data, the fitted mean and 90% band at the chosen round (dashed: truth).
**Iterates**: every coordinate of the natural parameter η (top row) and of the mean parameter
η* = E[T(y)] (bottom row) against x. **Geometry**: for one input x, the path of the iterate from the
constant start through the rounds in the η chart and in the η* chart, **MGD and NGD overlaid**: MGD
adds tree outputs in η*, NGD in η; a path is straight in a chart only while the successive trees move this input
the same way there (at the default input of the synthetic Normal both paths are nearly straight in η and bend
in η*).
**NLL**: training and validation negative log-likelihood and the generalised entropy H of each round's tree
partition (it jumps from round to round: every tree splits the data differently), marker at the round.
For WGBoost the particles of every input are shown (WGBoost paper, Figs. 2 and 4); categorical WGBoost shows
each particle's class probabilities. **NGBoost**: the fit at the round, training and validation NLL (dotted: the
best validation round) and its parameters (mean, sd, correlation) per round at three inputs. **Sparse GP**: the
predictive mean and band after each L-BFGS iteration and the objective per iteration. Each view is a tab;
only the open tab is computed and drawn (the MGD and NGD companion fits of the geometry panel are made
when you open it), and the open tab is part of the page address.
""")
cfg, upload = settings()   # the Lab's fit settings in the sidebar, drawn by app.py (distviz.ui.lab.draw_settings)
res = fit_or_last(cfg, upload)
if res is None:
    st.stop()
model, data, algo, spec = res.model, res.data, res.config.algorithm, res.algo
trace = getattr(model, "trace_", None)


@st.cache_resource(max_entries=8, show_spinner=False)
def _ngb_params(key: tuple, _model, _data):
    """NGBoost's parameters after every round at three inputs (one staged pass; cached per fit)."""
    return vr.ngboost_params_by_round(_model, _data)


def _round_figures(r: int) -> dict:
    """The Evolution figures of this page's fit at round r, built once per server (`distviz.ui.shared_views`): a class
    scrubbing the teacher's fit asks for the same rounds."""
    return evolution_round_figures(res, r)


def draw_ngboost(r):
    """NGBoost at round r: the fit (mean, 90% band; ρ and ellipses for two outputs), NLL and parameters per round."""
    figs = vr.ngboost_round_figures(model, data, r, algo, params=_ngb_params(res.config.key(), model, data))
    c1, c2 = st.columns(2, gap="medium")
    for i, f in enumerate(figs["fit"]):
        charts(c1 if i % 2 == 0 else c2).plotly_chart(f, key=f"evo.ngb{i}")
    charts(c2 if len(figs["fit"]) % 2 else c1).plotly_chart(figs["nll"], key="evo.nll")
    charts().plotly_chart(figs["params"], key="evo.params")


def draw_gp(i):
    """The sparse GP after optimiser iteration i: its predictive mean (and band) and the objective per iteration."""
    figs = vr.gp_iteration_figures(model, data, i, algo)
    c1, c2 = st.columns(2, gap="medium")
    charts(c1).plotly_chart(figs["fit"], key="evo.gp")
    charts(c2).plotly_chart(figs["objective"], key="evo.objective")


if res.kind is Kind.NGBOOST:
    st.caption("NGBoost has no per-row trace: each round's parameters are recomputed from its trees (no refit). "
               "The round slider opens at the best validation round, the one the Lab draws.")
    n_done = len(getattr(model, "train_loss_", [])) - 1
    best = vr.ngboost_best_round(model)
    round_player(PAGE, n_done, draw_ngboost, default=best)
    st.stop()
if res.kind is Kind.GP:
    if getattr(model, "path_", None) is None:
        st.info("This sparse-GP fit kept no parameters per iteration, so there is nothing to replay; its fit is in the Lab.")
        st.stop()
    st.caption("The sparse GP is not boosted: it is fitted by L-BFGS on its objective (ELBO or log-loss DLM). "
               "The slider replays the optimiser's iterations; there are no rounds, trees or learning rate.")
    round_player(PAGE, len(model.path_) - 1, draw_gp, default=len(model.path_) - 1, label="Optimiser iteration")
    st.stop()
if not spec.traces_rounds or trace is None:
    st.info("This fit has no trace to replay; choose an exponential-family law, WGBoost, NGBoost or a sparse GP.")
    st.stop()

R = vr.trace_rounds(trace)
VIEWS = ["Fit, NLL and iterates", "Geometry: η vs η* paths"]


def companions():
    """The chosen fit plus MGD and NGD with the same settings (cached), for the geometry panel."""
    others = {a: res if a == algo else None for a in dict.fromkeys([algo, *GEOMETRY_PAIR])}
    for a in others:
        if others[a] is None:
            try:
                others[a] = fit_model(cfg.with_algorithm(a), upload)
            except Exception as exc:  # noqa: BLE001 - a failing companion fit only removes its path from the panel
                st.caption(f"{a.upper()} companion fit failed: {escape_markdown(error_sentence(exc))}")
    return {a: r.model for a, r in others.items() if r is not None}


def draw(r):
    if spec.has_particles:
        figs = _round_figures(r)
        charts().plotly_chart(figs["particles"], key="evo.particles")
        charts().plotly_chart(figs["nll"], key="evo.nll")
        return
    tabs = dict(zip(VIEWS, lazy_tabs("view", VIEWS)))
    if tabs["Fit, NLL and iterates"].open:
        with tabs["Fit, NLL and iterates"]:
            figs = _round_figures(r)
            row = evolution_row(res, r, figs)   # the fit and the NLL: one chart of two panels where they allow it
            if row is not None and not presenting():
                show_row(row[0], key="evo.row", shared=row[1])
            else:
                c1, c2 = st.columns(2, gap="medium")
                for i, f in enumerate(figs["fit"]):
                    charts(c1 if i % 2 == 0 else c2).plotly_chart(f, key=f"evo.fit{i}")
                charts(c2 if len(figs["fit"]) % 2 else c1).plotly_chart(figs["nll"], key="evo.nll")
            charts().plotly_chart(figs["iterates"], key="evo.iterates")
    if tabs["Geometry: η vs η* paths"].open:
        with tabs["Geometry: η vs η* paths"]:
            xt = trace["X"].values[:, 0]
            lo, hi = float(np.min(xt)), float(np.max(xt))
            x0 = st.slider("Input x of the geometry panel", lo, hi, round(lo + 0.3 * (hi - lo), 6), step=(hi - lo) / 100,
                           **bound("x0"),
                           help="The input whose iterate path is drawn in both charts.")
            paths, teta, tstar = vr.geometry_paths(companions(), float(x0), data)
            fam = model.family_
            charts().plotly_chart(vr.vf.geometry_figure(paths, natural_names=fam.natural_names, mean_names=fam.mean_names,
                                                  current=r, target_eta=teta, target_star=tstar,
                                                  title=f"geometry at x = {x0:.3g}: iterate paths up to the last round, "
                                                        f"ring = round {r}"),
                            key="evo.geometry")


# open at the round the Lab shows (the best validation round) unless the URL names one (issue #17, item 8)
best = getattr(model, "best_iteration_", None) if spec.opens_at_best_round else None
round_player(PAGE, R, draw, default=None if best is None else min(max(int(best), 0), R))
