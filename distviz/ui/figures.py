"""Figures to take away: every chart through `show_figure` (PNG / SVG from its toolbar, offline) and the
"download this view" report (one self-contained HTML file with the view's figures and settings).

Every chart is drawn with ``theme=None`` and the app's own template (distviz.viz.theme: Streamlit's light chart
theme written out, the default of every figure built in the app's process once this module is imported), so the
browser draws it without Streamlit's theming pass and a saved figure looks as it does in the app.

The toolbar's camera button exports in the browser (plotly.js ``toImage``), so it works with no network;
its format (PNG or SVG) is the session's choice in the sidebar's *Figures to take away* box. The report
inlines plotly.js once and every figure of the last run as JSON, so it opens offline from a file.
"""

from __future__ import annotations

import base64
import html
import json
import logging
import re
from urllib.parse import urlencode

import numpy as np
import streamlit as st

from distviz.viz.theme import use_app_template

from .state import GLOBAL

use_app_template()   # after Streamlit's import, which makes its placeholder template plotly's default

#: session key of the chart image format, and the formats offered
FORMAT_KEY = f"{GLOBAL}.imgfmt"
FORMATS = ("png", "svg")
#: session key of the current view (the figures and settings of the page's last run)
_VIEW = "_takeaway_view"


class View:
    """The figures (by chart key, so a fragment's rerun replaces its own) and settings of one page run.

    `page` is the page's URL path ('' for the Lab, the default page), which names the report's file;
    `title` is its title in the navigation, the report's heading.
    """

    def __init__(self, page: str = "", title: str = ""):
        self.page = page
        self.title = title
        self.figures: dict[str, object] = {}
        self.settings: dict[str, str] = {}
        self.url = ""

    def report(self) -> str:
        """The view as one self-contained HTML page (see `report_html`)."""
        return report_html(list(self.figures.items()), self.settings, url=self.url, title=self.title)

    def file_name(self) -> str:
        """The report's file name: ``distviz-<page>.html`` (``distviz-lab.html`` for the default page)."""
        return report_file_name(self.page)


def report_file_name(page: str) -> str:
    """``distviz-<page>.html`` for the page's URL path `page` ('' is the Lab, the default page)."""
    return f"distviz-{_slug(page) if page else 'lab'}.html"


def _slug(text: str) -> str:
    """A file-name-safe version of `text` (letters, digits, dots, dashes)."""
    return re.sub(r"[^A-Za-z0-9.-]+", "-", str(text)).strip("-")[:60] or "figure"


def image_format() -> str:
    """The session's chart image format for the toolbar's download button ('png' unless 'svg' was chosen)."""
    try:
        fmt = st.session_state.get(FORMAT_KEY, "png")
    except Exception:  # noqa: BLE001 - outside a Streamlit run
        return "png"
    return fmt if fmt in FORMATS else "png"


def chart_config(name: str, fmt: str | None = None) -> dict:
    """The plotly config of a chart: no plotly logo, the camera button saves `name`.png/.svg at twice the size."""
    fmt = fmt or image_format()
    return {"displaylogo": False,
            "toImageButtonOptions": {"format": fmt, "filename": _slug(name), "scale": 2 if fmt == "png" else 1}}


def _settings() -> dict[str, str]:
    """{URL parameter: value} of the widgets this run has drawn so far (what the page's address will hold: a
    select's shown text, distviz.ui.params.url_text)."""
    from .params import url_text
    from .state import bound_settings

    return {name: url_text(name, v) for name, v in bound_settings().items()}


def current_view() -> View:
    """This session's current view (a fresh one when none was begun)."""
    v = st.session_state.get(_VIEW)
    if v is None:
        v = st.session_state[_VIEW] = View()
    return v


def show_figure(fig, *, key: str | None = None, box=None, name: str | None = None, **kwargs):
    """`st.plotly_chart(fig)` in `box` (the page by default) with the take-away toolbar, recorded for the report."""
    box = st if box is None else box
    meta = getattr(fig.layout, "meta", None)
    title = name or (meta.get("name") if isinstance(meta, dict) else None) or (
        getattr(getattr(fig.layout, "title", None), "text", None) or key or "figure")
    title = str(title).split("<br>")[0]   # the saved image is named after the title's first line, not its subtitle
    key_ = key if key is not None else f"fig-{_slug(title)}"
    try:
        view = current_view()
        view.figures[key_] = fig
        view.settings = _settings()
        base = str(getattr(st.context, "url", "") or "").split("?")[0]
        view.url = base + ("?" + urlencode(view.settings) if view.settings else "")
    except Exception:  # noqa: BLE001 - no session (a bare script): draw the chart without recording it
        pass
    from .presenter import chart_height_cap

    cap = chart_height_cap()   # a presenter's step view: every chart fits on the screen beside the step's text
    if cap is not None and (fig.layout.height or 450) > cap:
        d = fig.to_dict()    # the figure may be cached and shared (its dict too): a copy gets the smaller height
        fig = _reserve({**d, "layout": {**d["layout"], "height": cap}})
    elif type(fig) is _plotly_figure():   # built for this run (a shared one got its margins when it was built)
        fig = _reserve(fig)
    return box.plotly_chart(fig, key=key, config=chart_config(title), theme=None, **kwargs)


#: trace properties holding one number per point (plotly keeps a numpy array there as it is)
_POINT_ARRAYS = ("x", "y", "z", "lat", "lon", "r", "theta", "customdata", "base", "width")


def _float32(v):
    """v as float32 where it is a float64 array whose float32 copy cannot be told apart on a chart: its range is at
    least 1e-3 of its magnitude (float32 keeps 7 digits, so the rounding stays below 1e-4 of the axis); else v."""
    if not (isinstance(v, np.ndarray) and v.dtype == np.float64 and v.size >= 16):
        return v
    ok = v[np.isfinite(v)]
    if ok.size == 0 or np.abs(ok).max() > 1e30:
        return v
    span, size = float(ok.max() - ok.min()), float(np.abs(ok).max())
    return v.astype(np.float32) if span >= 1e-3 * size else v


def compact(fig):
    """`fig` with its per-point float64 arrays stored as float32 (:func:`_float32`), in place; returns it.

    A chart's spec is sent as base64 of its arrays' bytes, and every rerun that draws it serialises, hashes and sends
    it again, so half the bytes is about half that work for the server (and the browser) on every scrub of a round
    slider.  Anything else in the figure (a dict or list of figures: each figure) is left as it is."""
    if isinstance(fig, dict):
        return {k: compact(v) for k, v in fig.items()}
    if isinstance(fig, (list, tuple)):
        return type(fig)(compact(v) for v in fig)
    for trace in getattr(fig, "data", ()):
        for name in _POINT_ARRAYS:
            v = trace[name] if name in trace else None
            new = _float32(v)
            if new is not v:
                trace[name] = new
        marker = getattr(trace, "marker", None)
        for name in ("color", "size"):
            v = getattr(marker, name, None) if marker is not None else None
            new = _float32(v)
            if new is not v:
                marker[name] = new
    return fig


_FROZEN_CLASS: list = []   # the FrozenFigure class, made at the first freeze (plotly is imported then, not before)


def _frozen_class():
    if not _FROZEN_CLASS:
        import plotly.graph_objects as go

        class FrozenFigure(go.Figure):
            """A plotly Figure never changed after it is built (a shared one): its ``to_dict``, which Streamlit's
            ``plotly_chart`` calls on every rerun that draws it (plotly's own is a deep copy of the figure, then the
            base64 of its arrays), is made once, without the deep copy (`_frozen_dict`), and the same dict returned
            to every caller, who must not change it either."""

            def to_dict(self):
                d = self.__dict__.get("_frozen_dict")
                if d is None:
                    try:
                        d = _frozen_dict(self)
                    except (AttributeError, ImportError):   # another plotly (parts kept elsewhere, helpers
                        d = super().to_dict()                  # named otherwise, as at the floor version): its own
                    self._frozen_dict = d
                return d

        _FROZEN_CLASS.append(FrozenFigure)
    return _FROZEN_CLASS[0]


_TYPED = {np.dtype(np.float32): "f4", np.dtype(np.float64): "f8", np.dtype(np.int32): "i4"}


def _typed_arrays(obj):
    """A copy of `obj` (a figure's dicts and lists) with every numeric array as plotly.js's typed-array spec, as
    plotly's ``to_dict`` writes it (``_plotly_utils.utils.convert_to_base64``), but without its deep copy of the
    figure: containers are new, leaves are shared (a frozen figure is never changed, nor is its dict)."""
    from _plotly_utils.utils import is_homogeneous_array, is_skipped_key, to_typed_array_spec

    def walk(obj):
        if isinstance(obj, dict):
            out = {}
            for key, v in obj.items():
                if isinstance(v, _SCALARS) or is_skipped_key(key):
                    out[key] = v
                elif isinstance(v, np.ndarray) and v.dtype in _TYPED and v.size:   # the common case, no copy
                    spec = {"dtype": _TYPED[v.dtype],
                            "bdata": base64.b64encode(np.ascontiguousarray(v)).decode("ascii")}
                    if v.ndim > 1:
                        spec["shape"] = str(v.shape)[1:-1]
                    out[key] = spec
                elif is_homogeneous_array(v):
                    out[key] = to_typed_array_spec(v)
                else:
                    out[key] = walk(v)
            return out
        if isinstance(obj, (list, tuple)):
            if all(isinstance(v, _SCALARS) for v in obj):   # a list of numbers or texts: nothing to convert
                return obj
            return type(obj)(walk(v) for v in obj)
        return obj

    return walk(obj)


_SCALARS = (str, int, float, bool, type(None))


def _frozen_dict(fig) -> dict:
    """``fig.to_dict()`` of a frozen figure (equal to plotly's, tested), made without deep-copying the figure."""
    res = {"data": _typed_arrays(fig._data), "layout": _typed_arrays(fig._layout)}
    frames = [frame._props for frame in fig._frame_objs]
    if frames:
        res["frames"] = _typed_arrays(frames)
    return res


def _frozen(fig):
    """`fig` (or each figure of a dict / list) as a FrozenFigure (:func:`_frozen_class`); anything else as it is."""
    if isinstance(fig, dict):
        return {k: _frozen(v) for k, v in fig.items()}
    if isinstance(fig, (list, tuple)):
        return type(fig)(_frozen(v) for v in fig)
    import plotly.graph_objects as go

    if type(fig) is go.Figure:
        fig.__class__ = _frozen_class()
    return fig


def _plotly_figure():
    """plotly's Figure class (imported on first use: a page may draw no chart)."""
    import plotly.graph_objects as go

    return go.Figure


def _reserve(fig):
    """`fig` (or each figure of a dict / list) with margins that hold its labels and legends (distviz.viz.margins),
    so the browser lays it out once."""
    if isinstance(fig, dict) and "layout" not in fig:
        return {k: _reserve(v) for k, v in fig.items()}
    if isinstance(fig, (list, tuple)):
        return type(fig)(_reserve(v) for v in fig)
    if not (isinstance(fig, dict) or hasattr(fig, "layout")):
        return fig   # not a figure (None, a number kept beside the figures)
    from distviz.viz.margins import with_reserved_margins

    try:
        return with_reserved_margins(fig)
    except Exception:  # noqa: BLE001 - the margins are an estimate: a figure it cannot read is drawn as it was built
        logging.getLogger("distviz.ui").debug("margins of a figure not estimated", exc_info=True)
        return fig


@st.cache_resource(max_entries=256, show_spinner=False)
def _shared(name: str, key: str, _build):
    return _frozen(compact(_reserve(_build())))


def _key_text(key) -> str:
    """`key` (str, int, float, bool, None and tuples of them) as one text that determines it: Streamlit's cache
    hashes one short text faster than a nested tuple, on every rerun that draws a shared figure."""
    def check(k):
        if isinstance(k, tuple):
            for v in k:
                check(v)
        elif not isinstance(k, _SCALARS):
            raise TypeError(f"a shared figure's key holds a {type(k).__name__}; only texts, numbers and tuples "
                            "of them determine it by their repr")
    check(key)
    return repr(key)


def shared_figures(name: str, key: tuple, build):
    """`build()` (a figure, or a dict / list of them) made once per server for (`name`, `key`) and shared by every
    session that asks for the same: a class looking at the teacher's fit draws the same figures, so one build serves
    them all.  `key` must determine the figures (the fit's ``FitConfig.key()`` and the view's round, tab, ...) and
    hold only texts, numbers, booleans, None and tuples of them (`_key_text`).  Presenter mode builds other figures
    (larger fonts, thicker lines: distviz.viz.style), so whether this session presents is part of the key.  Nothing
    may modify a shared figure; `show_figure` copies one before it changes its height."""
    from .layout import presenting

    return _shared(name, _key_text((presenting(), *key)), build)


class _Charts:
    """`charts(box).plotly_chart(...)`: the pages' chart calls, routed through `show_figure`."""

    def __init__(self, box=None):
        self.box = box

    def plotly_chart(self, fig, **kwargs):
        """Draw `fig` in this box with the take-away toolbar (see `show_figure`)."""
        return show_figure(fig, box=self.box, **kwargs)


def combined_figure(name: str, key: tuple, figs):
    """The two figures `figs` as one chart of two panels (`distviz.viz.combine.side_by_side`), made once per server
    for (`name`, `key`) like `shared_figures`; None where they cannot be combined (`can_combine`)."""
    from distviz.viz.combine import can_combine, side_by_side

    figs = list(figs)
    return shared_figures(name, key, lambda: side_by_side(figs) if len(figs) == 2 and can_combine(figs) else None)


def show_row(figs, *, key: str, shared: tuple[str, tuple], box=None) -> None:
    """Draw `figs` side by side in `box` (the page by default): two figures as one chart of two panels where they
    allow it (:func:`combined_figure`, made once per server for `shared` = (name, key)): the browser lays out and
    draws one chart instead of two; else in two columns, their keys `key` + 0, 1, ...  Not in presenter mode: a
    panel's legend there, in presenter fonts, would not fit in half the chart."""
    from .layout import presenting

    figs = list(figs)
    box = st if box is None else box
    fig = combined_figure(*shared, figs) if len(figs) == 2 and not presenting() else None
    if fig is not None:
        show_figure(fig, key=key, box=box)
        return
    cols = box.columns(2, gap="medium")
    for i, f in enumerate(figs):
        show_figure(f, key=f"{key}{i}", box=cols[i % 2])


def charts(box=None) -> _Charts:
    """A stand-in for `box` (the page by default) whose plotly_chart goes through `show_figure`."""
    return _Charts(box)


def takeaway_controls(box=None, page: str = "", title: str = "") -> View:
    """Begin this run's view and draw the sidebar box: chart image format and *Download this view* (HTML).

    `page` is the URL path of the page this run shows ('' for the Lab) and `title` its navigation title: the
    report's file is ``distviz-<page>.html`` and its heading names `title` (the navigation knows both before
    the page runs, when this box is drawn)."""
    box = st.sidebar if box is None else box
    view = st.session_state[_VIEW] = View(page, title)
    with box.popover("Figures to take away", icon=":material/download:", width="stretch"):
        st.radio("Chart image format", FORMATS, format_func=str.upper, horizontal=True, key=FORMAT_KEY,
                 help="The camera button in each chart's toolbar saves the chart in this format (drawn in the "
                      "browser: no network needed).")
        st.download_button("Download this view", data=view.report, file_name=view.file_name(),
                           mime="text/html", on_click="ignore", icon=":material/description:",
                           help="One HTML file with this page's charts (interactive) and the settings that "
                                "reproduce it (the page's address); it opens offline in any browser.")
    return view


def _plotly_js() -> str:
    """plotly.js as shipped with the plotly package (no CDN)."""
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()


REPORT_CSS = ("body{font-family:system-ui,sans-serif;margin:2rem auto;max-width:1100px;color:#222}"
              "table{border-collapse:collapse;margin:1rem 0}td,th{border:1px solid #ccc;padding:.3rem .6rem;"
              "text-align:left}th{background:#f3f3f3}.fig{margin:1.5rem 0}code{word-break:break-all}")


def _script_json(obj) -> str:
    """JSON safe inside an HTML <script> element (no '</' that could close it)."""
    return json.dumps(obj).replace("</", "<\\/")


def report_html(figures, settings: dict, *, url: str = "", title: str = "") -> str:
    """A self-contained HTML report: plotly.js inlined once, each figure as JSON drawn by Plotly.newPlot, the
    page's address and a table of its settings. `figures` is a list of (name, plotly Figure)."""
    esc = html.escape
    head = f"distviz view: {title}" if title else "distviz view"
    rows = "".join(f"<tr><td>{esc(k)}</td><td>{esc(str(v))}</td></tr>" for k, v in settings.items())
    table = (f"<table><tr><th>setting (URL parameter)</th><th>value</th></tr>{rows}</table>" if rows
             else "<p>All settings at their defaults.</p>")
    link = (f'<p>Address of this view (open it while the app runs to get the same view back): '
            f'<a href="{esc(url)}"><code>{esc(url)}</code></a></p>' if url else "")
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{esc(head)}</title>",
             f"<style>{REPORT_CSS}</style><script>{_plotly_js()}</script></head><body>",
             f"<h1>{esc(head)}</h1>", link, table]
    if figures:  # a second toolbar button saves SVG (the camera saves PNG)
        parts.append("<script>function dvCfg(name){return {displaylogo:false,toImageButtonOptions:{format:'png',"
                     "filename:name,scale:2},modeBarButtonsToAdd:[{name:'Download plot as SVG',icon:"
                     "Plotly.Icons.disk,click:function(gd){Plotly.downloadImage(gd,{format:'svg',filename:name});}}]};}"
                     "</script>")
    for i, (name, fig) in enumerate(figures):
        spec = json.loads(fig.to_json())
        data, layout = (_script_json(spec.get(k, default)) for k, default in (("data", []), ("layout", {})))
        parts.append(f"<div class='fig' id='fig{i}'></div><script>Plotly.newPlot('fig{i}', {data}, {layout}, "
                     f"dvCfg({_script_json(_slug(str(name)))}));</script>")
    if not figures:
        parts.append("<p>This view has no charts.</p>")
    parts.append("</body></html>")
    return "".join(parts)
