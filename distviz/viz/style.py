"""Shared plotly layout: white template, readable fonts, legends on top."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import plotly.graph_objects as go

__all__ = ["apply_style", "style_layout", "axis_grid", "make_figure", "presenter_figure", "set_presenter_source"]

PRESENTER_FONT = 18   # smallest chart text (px) in presenter mode: readable from the back of a room at 1280x720
PRESENTER_BASE = 19   # base chart font (px) in presenter mode
PRESENTER_WRAP = 40   # presenter mode breaks chart and y-axis titles longer than this (characters) onto two lines
PRESENTER_LINE = 1.6  # factor on every line width in presenter mode
_presenter_source = None  # () -> bool, set by the UI layer (distviz.ui.layout): is this session presenting?
_FONT_KEYS = ("font", "textfont", "tickfont", "insidetextfont", "outsidetextfont")


def set_presenter_source(source) -> None:
    """Register the callable that tells whether the figures being built are for presenter mode (None: never)."""
    global _presenter_source
    _presenter_source = source


def presenter_on() -> bool:
    """True while the registered source says the current view is in presenter mode (False outside the app)."""
    try:
        return bool(_presenter_source()) if _presenter_source is not None else False
    except Exception:  # noqa: BLE001 - no session (a script, a test): the ordinary look
        return False


def _wrap(text, limit: int = PRESENTER_WRAP):
    """`text` broken at the space nearest its middle when it is longer than `limit` characters (plotly never
    wraps a title, and presenter-size text would run off a half-width chart)."""
    if not isinstance(text, str) or len(text) <= limit or "<br>" in text or " " not in text:
        return text
    mid = len(text) // 2
    cut = min((i for i, c in enumerate(text) if c == " "), key=lambda i: abs(i - mid))
    return text[:cut] + "<br>" + text[cut + 1:]


def _present(obj, base: bool = True):
    """Presenter look, in place, on a figure's layout or trace dicts: every font size at least PRESENTER_FONT,
    axis ticks and titles and colour-bar text set explicitly (the Streamlit theme would otherwise make them small),
    line widths times PRESENTER_LINE."""
    if isinstance(obj, list):
        for o in obj:
            _present(o, False)
        return obj
    if not isinstance(obj, dict):
        return obj
    grown = set()   # margins already widened for a two-line axis title
    for k in list(obj):
        v = obj[k]
        if k in _FONT_KEYS and isinstance(v, dict):
            size = v.get("size")
            if isinstance(size, (int, float)) and not isinstance(size, bool):
                v["size"] = max(float(size), PRESENTER_FONT)
        elif k == "line" and isinstance(v, dict) and isinstance(v.get("width"), (int, float)):
            v["width"] = float(v["width"]) * PRESENTER_LINE
        elif base and (k[:5] in ("xaxis", "yaxis") or k == "coloraxis") and isinstance(v, dict):
            v.setdefault("tickfont", {})
            v["tickfont"] = {**v["tickfont"], "size": max(v["tickfont"].get("size") or 0, PRESENTER_FONT)}
            if k != "coloraxis":
                title = v.get("title")
                title = {"text": title} if isinstance(title, str) else dict(title or {})
                if k.startswith("yaxis") and "text" in title and _wrap(title["text"]) != title["text"]:
                    title["text"] = _wrap(title["text"])   # (an x title stays on one line: the legend sits below it)
                    if "l" not in grown:
                        grown.add("l")
                        margin = obj.setdefault("margin", {})
                        margin["l"] = (margin.get("l") or 60) + 24
                title["font"] = {**title.get("font", {}), "size": max(title.get("font", {}).get("size") or 0, PRESENTER_FONT + 1)}
                v["title"] = title
        elif k == "colorbar" and isinstance(v, dict):
            v["tickfont"] = {**v.get("tickfont", {}), "size": max(v.get("tickfont", {}).get("size") or 0, PRESENTER_FONT)}
            title = v.get("title")
            title = {"text": title} if isinstance(title, str) else dict(title or {})
            title["font"] = {**title.get("font", {}), "size": max(title.get("font", {}).get("size") or 0, PRESENTER_FONT)}
            v["title"] = title
        if isinstance(v, (dict, list)):
            _present(v, False)
    if base:  # the figure's layout
        obj["font"] = {**obj.get("font", {}), "size": max(obj.get("font", {}).get("size") or 0, PRESENTER_BASE)}
        obj["hoverlabel"] = {**obj.get("hoverlabel", {}), "font": {"size": PRESENTER_FONT}}
        if isinstance(obj.get("title"), dict) or isinstance(obj.get("title"), str):
            t = obj["title"]
            t = {"text": t} if isinstance(t, str) else t
            t["font"] = {**t.get("font", {}), "size": max(t.get("font", {}).get("size") or 0, PRESENTER_BASE + 1)}
            if _wrap(t.get("text")) != t.get("text"):
                t["text"] = _wrap(t["text"])
                obj.setdefault("margin", {})["t"] = (obj["margin"].get("t") or 50) + 26
            obj["title"] = t
        if isinstance(obj.get("height"), (int, float)):
            obj["height"] = int(obj["height"] * 1.15)  # room for the larger text
    return obj


def presenter_figure(fig: go.Figure) -> go.Figure:
    """`fig` with the presenter look when presenter mode is on (larger text, thicker lines); `fig` itself otherwise.

    For figures not built by make_figure / apply_style (which apply the look themselves), e.g. the drifter maps.
    """
    if not presenter_on():
        return fig
    d = fig.to_dict()
    return go.Figure(data=_present(d.get("data", []), False), layout=_present(d.get("layout", {})))


def style_layout(layout: dict, names, *, title: str | None = None, height: int = 420, legend_top: bool = True) -> dict:
    """The layout dict with the distviz look merged in (fonts, margins, title, legend under the plot)."""
    # a title with a second line (<br>, e.g. a <sup> subtitle) needs a taller top margin
    top = (76 if "<br>" in title else 50) if title else 20
    margin = dict(l=60, r=20, t=top, b=60)
    lay: dict = dict(margin=margin, font=dict(size=13), hovermode="closest", height=height)
    if title:
        lay["title"] = dict(text=title, x=0.0, xanchor="left", font=dict(size=15))
    if legend_top:  # a horizontal legend under the x-axis title never covers the title or the data
        # each further line of an x-axis title (<br>) moves the legend down by one line
        extra = max((str(((v or {}).get("title") or {}).get("text") or "").count("<br>")
                     for k, v in layout.items() if k.startswith("xaxis") and isinstance(v, dict)), default=0)
        lay["legend"] = dict(orientation="h", yanchor="top", y=-0.18 - 0.08 * extra, xanchor="left", x=0.0,
                             font=dict(size=12))
        margin["b"] = 60 + 20 * extra
        chars = sum(len(n) + 6 for n in names)
        lay["height"] = height + 40 * max(1, -(-chars // 70))
    layout = dict(layout)
    layout.pop("template", None)  # re-validating the default template is slow; plotly adds it back lazily
    for k, v in lay.items():  # merge one level deep (keep e.g. margin keys set by the caller)
        layout[k] = {**layout[k], **v} if isinstance(v, dict) and isinstance(layout.get(k), dict) else v
    if presenter_on():
        import copy

        layout = _present(copy.deepcopy(layout))  # nested dicts of the caller stay as they were
    return _title_above_panel_titles(layout)


def _subplot_titles(layout: dict) -> list:
    """The panel titles `axis_grid` puts on top of its panels (paper-anchored annotations sitting on y = 1)."""
    return [a for a in layout.get("annotations") or [] if isinstance(a, dict) and a.get("yref") == "paper"
            and a.get("yanchor") == "bottom" and float(a.get("y", 0.0)) >= 0.999]


def _title_above_panel_titles(layout: dict) -> dict:
    """A figure title pinned to the top of the figure and a top margin that holds it and, below it, the panel
    titles of an `axis_grid` (plotly centres the title in the top margin, where the panel titles also sit, so
    the two overlapped).  Layouts without panel titles are returned unchanged."""
    title = layout.get("title")
    panels = _subplot_titles(layout)
    if not panels or not isinstance(title, dict) or not title.get("text"):
        return layout
    size = float((title.get("font") or {}).get("size") or 15)
    lines = str(title["text"]).split("<br>")
    title_px = 1.3 * size + sum(1.3 * size * (0.75 if "<sup>" in ln else 1.0) for ln in lines[1:])
    panel_px = 1.4 * max(float((a.get("font") or {}).get("size") or 13) for a in panels)
    pad = 8
    layout = dict(layout)
    # plotly anchors a multi-line title's first line, not its block, at the top: each further line lifts the block by
    # about 0.7 of the font size, out of the figure (the first line was cut off: presenter mode's wrapped titles);
    # the pad puts it back, and the top margin below, sized from `pad`, already holds every line
    lifted = math.ceil(0.75 * size * (len(lines) - 1))
    layout["title"] = {**title, "y": 1.0, "yref": "container", "yanchor": "top", "pad": {"t": pad + lifted}}
    margin = dict(layout.get("margin") or {})
    margin["t"] = max(int(margin.get("t") or 0), math.ceil(pad + title_px + 6 + panel_px))
    layout["margin"] = margin
    return layout


def _names(traces) -> list:
    out = []
    for t in traces:
        get = t.get if isinstance(t, dict) else (lambda k, d=None, t=t: getattr(t, k, d))
        if get("name") and get("showlegend") is not False:
            out.append(str(get("name")))
    return out


def apply_style(fig: go.Figure, *, title: str | None = None, height: int = 420, legend_top: bool = True) -> go.Figure:
    """Apply the distviz look to a built figure and return a new one (no template: Streamlit themes charts).

    Rebuilding from a dict is ~10x faster than update_layout on an existing figure.
    """
    d = fig.to_dict()
    layout = style_layout(d.get("layout", {}), _names(d.get("data", [])), title=title, height=height,
                          legend_top=legend_top)
    data = d.get("data", [])
    return go.Figure(data=_present(data, False) if presenter_on() else data, layout=layout)


def axis_grid(rows: int, cols: int, *, titles=None, hspace: float = 0.08, vspace: float = 0.14,
              col_widths=None, shared_x: bool = False) -> tuple[dict, Callable[[int, int], dict]]:
    """Layout entries for a rows x cols grid of x/y axes and a function (row, col) -> trace axis refs.

    A light replacement for plotly's make_subplots (which is slow to build): traces get
    `**ref(r, c)` (xaxis / yaxis names), the layout gets the returned axes and subplot-title annotations.
    """
    widths = list(col_widths) if col_widths else [1.0] * cols
    total = sum(widths)
    free = 1.0 - hspace * (cols - 1)
    h = (1.0 - vspace * (rows - 1)) / rows
    layout: dict[str, Any] = {}
    ann: list[dict] = []
    x_edges = []
    x = 0.0
    for c in range(cols):
        w = free * widths[c] / total
        x_edges.append((x, x + w))
        x += w + hspace
    for r in range(rows):
        y1 = 1.0 - r * (h + vspace)
        y0 = y1 - h
        for c in range(cols):
            k = r * cols + c + 1
            xs, ys = ("" if k == 1 else str(k)), ("" if k == 1 else str(k))
            layout[f"xaxis{xs}"] = dict(domain=[max(0.0, x_edges[c][0]), min(1.0, x_edges[c][1])], anchor=f"y{ys}")
            if shared_x and r < rows - 1:
                layout[f"xaxis{xs}"]["matches"] = f"x{(rows - 1) * cols + c + 1}"
                layout[f"xaxis{xs}"]["showticklabels"] = False
            layout[f"yaxis{ys}"] = dict(domain=[max(0.0, y0), min(1.0, y1)], anchor=f"x{xs}")
            if titles is not None and k - 1 < len(titles) and titles[k - 1]:
                ann.append(dict(text=titles[k - 1], x=(x_edges[c][0] + x_edges[c][1]) / 2, y=y1, xref="paper",
                                yref="paper", xanchor="center", yanchor="bottom", showarrow=False, font=dict(size=13)))
    if ann:
        layout["annotations"] = ann

    def ref(r: int, c: int) -> dict:
        k = (r - 1) * cols + c
        return {"xaxis": "x" if k == 1 else f"x{k}", "yaxis": "y" if k == 1 else f"y{k}"}

    return layout, ref


def axis_key(ref: dict, which: str) -> str:
    """Layout key ('xaxis3') of a trace's axis ref ({'xaxis': 'x3', ...})."""
    name = ref["xaxis" if which == "x" else "yaxis"]
    return ("xaxis" if which == "x" else "yaxis") + name[1:]


def make_figure(traces: list, layout: dict | None = None, **style) -> go.Figure:
    """Build a Figure from trace dicts and a layout dict in one go (fast), with the distviz style."""
    layout = style_layout(layout or {}, _names(traces), **style)
    if presenter_on():
        import copy

        traces = _present(copy.deepcopy(traces), False)  # the caller's trace dicts stay as they were
    return go.Figure(data=traces, layout=layout)
