"""Layout pieces that keep a page's first paint light: lazily executed tabs and Markdown tables; presenter mode."""

from __future__ import annotations

import numpy as np
import streamlit as st

from distviz.viz import style

from .safe_text import escape_markdown
from .state import bound

PRESENT = "present"
#: the address's texts for "on" that Streamlit's binding of a switch does not read (it reads only true / false):
#: presenter-mode links written before the binding, in lessons and the docs, say ?present=1
LEGACY_ON = ("1", "yes", "on")
#: presenter mode: larger text everywhere (Streamlit sizes its text in rem), bolder chart titles are set by
#: distviz.viz.style; readable from the back of a room at 1280x720.  A metric's value sits in a Markdown paragraph
#: too: the more specific rule keeps it larger than its label (issue 29: values were smaller than their labels)
PRESENTER_CSS = """<style>
html { font-size: 20px; }
[data-testid="stMainBlockContainer"] { padding-top: 2.5rem; }
h1 { font-size: 2.2rem !important; }
[data-testid="stMarkdownContainer"] p, [data-testid="stMarkdownContainer"] li { font-size: 1.1rem; line-height: 1.5; }
[data-testid="stMetricLabel"] [data-testid="stMarkdownContainer"] p { font-size: 0.95rem; }
[data-testid="stMetricValue"], [data-testid="stMetricValue"] [data-testid="stMarkdownContainer"] p {
  font-size: 1.8rem; line-height: 1.25; }
</style>"""


def _link_says_present() -> bool:
    """Whether the address asks for presenter mode (?present=true, or ?present=1 as older links and lessons say)."""
    return str(st.query_params.get(PRESENT, "")).lower() in ("true", *LEGACY_ON)


def opens_presenting() -> bool:
    """Presenter mode of this run before its toggle is drawn (app.py folds the sidebar with it): the session's mode,
    or the address's on a session's first run (a lesson's links open a new session)."""
    if PRESENT in st.session_state:
        return bool(st.session_state[PRESENT])
    return _link_says_present()


def presenting() -> bool:
    """True while this session is in presenter mode (False outside a Streamlit run)."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    if get_script_run_ctx(suppress_warning=True) is None:
        return False
    return bool(st.session_state.get(PRESENT, False))


style.set_presenter_source(presenting)  # the figures read presenter mode from the session, not from their arguments


def presenter_controls(box=None, page: str = "", title: str = "") -> bool:
    """The presenter-mode toggle (in `box`, default the sidebar) and, while on, the larger page text; returns the mode.

    `page` (URL path) and `title` of the page this run shows name the take-away report (distviz.ui.figures)."""
    box = box if box is not None else st.sidebar
    kw = bound(PRESENT)   # Streamlit keeps the switch in the address (drawn by app.py: the same switch on every page)
    if PRESENT not in st.session_state and _link_says_present():
        st.session_state[PRESENT] = True   # ?present=1: the binding would refuse "1" and show the default (off)
    on = box.toggle("Presenter mode", **kw,
                    help="Larger text and thicker lines for a projector, sidebar folded on load; kept in the "
                         "address (?present=true; ?present=1 works too) and across pages and lessons.")
    if on:
        st.html(PRESENTER_CSS)
    from .figures import takeaway_controls

    takeaway_controls(box, page, title)   # chart image format and "Download this view" (distviz.ui.figures), every page
    return bool(on)


def lazy_tabs(name: str, labels: list[str]):
    """Tabs whose content runs only when open (`tab.open`); Streamlit keeps the chosen tab's label in the URL
    parameter `name` (bind="query-params": a label that is not one of `labels` opens the first tab).

    Only the open tab's charts are computed and drawn, so a page shows its first view quickly
    and loads the others on a click.
    """
    return st.tabs(labels, **bound(name), on_change="rerun")


def _escape(v) -> str:
    """Text for a Markdown table cell, taken literally (distviz.ui.safe_text.escape_markdown: pipes too)."""
    return escape_markdown(v)


def static_table(df, formats: dict | None = None) -> None:
    """A small table as Markdown (no data-grid component to load); `formats` maps column -> format spec."""
    formats = formats or {}

    def cell(col, v):
        if isinstance(v, (float, np.floating)):
            return "—" if not np.isfinite(v) else format(float(v), formats.get(col, ".4g"))
        return _escape(v)

    cols = [str(c) for c in df.columns]
    lines = ["| " + " | ".join(_escape(c) for c in cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(cell(c, v) for c, v in zip(cols, row)) + " |" for row in df.itertuples(index=False)]
    st.markdown("\n".join(lines))
