"""Page furniture shared by every page: navigation list, explainer expander, the fit-and-show block."""

from __future__ import annotations

import copy
import logging
from typing import Any

import numpy as np
import streamlit as st

from distviz.data.paths import package_file
from distviz.errors import DistvizError

from .algorithms import Kind
from .fits import FitResult
from .jobs import UNEXPECTED, FitCancelled
from .lab import fit_model
from .layout import lazy_tabs, static_table  # noqa: F401  (re-exported for the pages)
from .lessons import NAV
from .safe_text import escape_markdown, show_error
from .state import recall, remember

#: the Lab, the home page (its script: distviz/ui/app/app_pages/lab.py)
LAB_PAGE = package_file("distviz.ui", "app", "app_pages", "lab.py")
#: the pages after the Lab: (script, title, icon); the scripts ship in distviz/ui/app/app_pages (absolute paths, so
#: that the navigation finds them whichever script runs it)
PAGES = [(package_file("distviz.ui", "app", "app_pages", f"{name}.py"), title, icon) for name, title, icon in [
    ("evolution", "Evolution", ":material/slow_motion_video:"),
    ("split_gains", "Split gains & entropy", ":material/account_tree:"),
    ("drifters", "Drifters", ":material/waves:"),
    ("posterior", "Posterior regression", ":material/blur_on:"),
    ("explorer", "Family explorer", ":material/search:"),
    ("lessons", "Lessons", ":material/school:"),
]]


def navigation_pages() -> list:
    """This run's pages for ``st.navigation``: the Lab, then `PAGES`; fresh shallow copies of ``st.Page`` objects
    built once per server.

    Building an ``st.Page`` resolves its script's path on the file system (a few milliseconds for the seven pages,
    on every run of every session), and ``st.navigation`` marks the copy it hands back as the one this run may run,
    so two sessions must never share one.  The built pages stay in `NAV` (distviz.ui.lessons), read-only, for the
    links and the presenter: page name ('lab' for the Lab) -> page.
    """
    if "lab" not in NAV:   # the server's first run (two first runs at once build the same pages twice)
        NAV.update({"lab": st.Page(LAB_PAGE, title="Lab", icon=":material/science:", default=True)}
                   | {path.stem: st.Page(path, title=title, icon=icon) for path, title, icon in PAGES})
    return [copy.copy(page) for page in NAV.values()]


def explainer(text: str) -> None:
    """The 'What am I looking at?' expander every page has."""
    with st.expander("What am I looking at?"):
        st.markdown(text)


def fit_or_last(cfg, upload=None, *, slot: str = "lab", progress_container=None) -> FitResult | None:
    """Fit (or fetch from the cache) and remember the result; when the fit fails for any reason show one
    sentence (no traceback; an unexpected exception is logged on the server) and return the last good one."""
    try:
        res = fit_model(cfg, upload, progress_container=progress_container)
    except FitCancelled:   # this session has ended while it waited: nobody will see the page
        return recall(slot)
    except Exception as exc:  # noqa: BLE001 - Streamlit's stop / rerun signals are BaseExceptions and pass
        if isinstance(exc, DistvizError):
            show_error(str(exc))   # the sentence may quote a column name of the upload: shown literally
        else:
            logging.getLogger("distviz.ui").exception("fit of %r failed unexpectedly", cfg)
            show_error(UNEXPECTED)
        last = recall(slot)
        if last is not None:
            st.caption(f"Showing the last successful fit: {last.algo.label} "
                       f"on {escape_markdown(last.data.name)} ({escape_markdown(last.config.family)}).")
        return last
    return remember(slot, res)


def fit_summary(res: FitResult) -> None:
    """Metric cards that apply to the fit: time and rows, then NLLs per round (boosting), the best validation
    round (NGBoost) or the optimiser's iterations and objective (sparse GP)."""
    model: Any = res.model
    tr = getattr(model, "trace_", None)
    cols = st.columns(4)
    cols[0].metric("fit time", f"{res.seconds:.2f} s",
                   help="Wall time of the fit when it was computed; a cached fit is reused instantly.")
    cols[1].metric("rows", f"{len(res.data.y)}")
    if res.kind is Kind.GP:
        h = getattr(model, "history_", None)
        cols[2].metric("L-BFGS iterations", f"{int(getattr(model, 'n_iter_', 0))}",
                       help="The sparse GP is fitted by an optimiser, not boosted: no rounds, learning rate or trees.")
        cols[3].metric("final objective", f"{float(model.objective_):.4g}",
                       help=("negative ELBO" if model.objective == "elbo" else "log-loss DLM objective") + " per row"
                            + ("" if h is None else f"; it started at {float(h[0]):.4g}") + ".")
        hp = model.hyperparameters_
        noise = f", noise variance {hp['noise']:.3g}" if "noise" in hp else ""
        st.caption(f"Fitted kernel: lengthscale {', '.join(f'{v:.3g}' for v in np.ravel(hp['lengthscale']))} "
                   f"(standardised inputs), variance {hp['variance']:.3g}, prior mean {hp['mean']:.3g}{noise}; "
                   f"{len(hp['inducing'])} inducing points"
                   + ("" if getattr(model, "converged_", True) else "; the optimiser stopped before converging") + ".")
        return
    if res.kind is Kind.NGBOOST:
        va = np.asarray(getattr(model, "valid_loss_", []), dtype=float)
        best = getattr(model, "best_iteration_", None)
        cols[2].metric("best validation round", f"{best}" if va.size and best is not None else "—",
                       help="Predictions use this round; the chart's dotted line marks it.")
        cols[3].metric("best validation NLL", f"{np.nanmin(va):.4g}" if va.size and np.isfinite(va).any() else "—")
        return
    if tr is not None and "train_nll" in tr:
        t = tr["train_nll"].values
        cols[2].metric("final train NLL", f"{t[np.isfinite(t)][-1]:.4g}" if np.isfinite(t).any() else "—")
        v = tr["valid_nll"].values if "valid_nll" in tr else np.array([np.nan])
        if np.isfinite(v).any():
            cols[3].metric("best validation NLL", f"{np.nanmin(v):.4g}")
        else:   # WGBoost in the Lab fits every row: say so instead of an unexplained dash
            cols[3].metric("validation NLL", "none", help=NO_VALIDATION)
            st.caption(NO_VALIDATION)


#: Why a fit without validation rows (WGBoost in the Lab) shows no validation NLL.
NO_VALIDATION = ("No validation NLL: this fit holds no rows out (WGBoost trains on every row here; the boosting laws "
                 "and NGBoost hold out 20%), so its NLL chart shows the training NLL only.")
