"""The figures of the views a whole class looks at, built once per server and shared by every session.

Each function returns the figures of one view of a fit (`distviz.ui.fits.FitResult`) through
`distviz.ui.figures.shared_figures`: the page that draws the view and the server's warm start
(`warm_figures`) ask for the same key, so a figure the warm start built is the one the pages draw.
"""

from __future__ import annotations

import threading

from .figures import combined_figure, shared_figures

__all__ = ["evolution_round_figures", "evolution_row", "lab_figures", "lab_row", "split_tree_figure", "warm_figures"]


def lab_figures(res) -> list:
    """The Lab's figures of the fit `res` (the algorithm's `lab_figures`: data, fit and band; NLL and entropy)."""
    return shared_figures("lab", (res.config.key(),), lambda: res.algo.lab_figures(res.model, res.data))


def is_wide(fig) -> bool:
    """Whether `fig` spans the page (several panels of its own: ``layout.meta["wide"]``, categorical WGBoost)."""
    meta = fig.layout.meta
    return isinstance(meta, dict) and bool(meta.get("wide"))


def lab_row(res) -> tuple[list, list, tuple[str, tuple]]:
    """The Lab's figures that span the page, those drawn side by side (the others) and the (name, key) of the
    chart that combines the latter (`distviz.ui.figures.show_row`)."""
    figs = lab_figures(res)
    return [f for f in figs if is_wide(f)], [f for f in figs if not is_wide(f)], ("lab.row", (res.config.key(),))


def evolution_row(res, r: int, figs: dict) -> tuple[list, tuple[str, tuple]] | None:
    """The Evolution figures of round r (`figs`, from `evolution_round_figures`) drawn side by side (the fit and
    the NLL) and the (name, key) of their combined chart; None where the fit has more than one figure (they fill
    two columns) or particles."""
    if res.algo.has_particles or len(figs["fit"]) != 1:
        return None
    return [figs["fit"][0], figs["nll"]], ("evolution.row", (res.config.key(), r, res.config.algorithm))


def evolution_round_figures(res, r: int) -> dict:
    """The Evolution figures of the fit `res` at round r: the particles and the NLL for WGBoost, else the fit, the
    iterates and the NLL (`distviz.viz.results.law_round_figures`)."""
    from distviz.viz import results as vr

    algo, spec, model = res.config.algorithm, res.algo, res.model

    def build() -> dict:
        if spec.has_particles:
            return {"particles": vr.wg_round_figure(model, res.data, r, spec.method),
                    "nll": vr.nll_from_trace(model.trace_, current=r, algo=spec.method,
                                             title="negative log predictive per round")}
        return vr.law_round_figures(model, res.data, r, algo)
    return shared_figures("evolution.round", (res.config.key(), r, algo), build)


def split_tree_figure(res, r: int):
    """The Split-gains tree of round r of the fit `res` (`distviz.viz.trees.tree_figure`), its splits chosen by the
    law's gain."""
    from distviz.viz import trees as vt

    trace = res.model.trace_
    gain_name = trace.attrs.get("gain_name", "Gain^reg")
    return shared_figures("split_gains.tree", (res.config.key(), r),
                          lambda: vt.tree_figure(trace, r, res.data.feature_names, gain_name=gain_name,
                                                 title=f"tree of round {r} ({gain_name} chose the splits)"))


def warm_figures(lab=None, split=None, *, stop: threading.Event | None = None) -> int:
    """Build the shared figures of the pages' default views (the warm start's last step; returns how many views).

    `lab` is the fit of the Lab's and Evolution's default view, `split` that of Split gains (FitResult, or None to
    skip).  The Lab's figures, the Evolution figures of every round (with the charts that combine two of them:
    `distviz.ui.figures.combined_figure`) and the Split-gains tree of every round are made, so a class scrubbing the
    default fit never waits for a build.  Stops early when `stop` is set.
    """
    from distviz.viz import results as vr

    done = 0
    if lab is not None:
        _, row, shared = lab_row(lab)
        combined_figure(*shared, row)
        done += 1
        if lab.algo.traces_rounds and getattr(lab.model, "trace_", None) is not None:
            for r in range(vr.trace_rounds(lab.model.trace_) + 1):
                if stop is not None and stop.is_set():
                    return done
                pair = evolution_row(lab, r, evolution_round_figures(lab, r))
                if pair is not None:
                    combined_figure(*pair[1], pair[0])
                done += 1
    if split is not None and split.algo.offers_split_gains:
        for r in range(1, vr.trace_rounds(split.model.trace_) + 1):
            if stop is not None and stop.is_set():
                return done
            split_tree_figure(split, r)
            done += 1
    return done
