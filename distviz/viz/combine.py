"""Several figures as one: a row of panels that the browser lays out and draws in one plotly pass.

A page that shows two figures side by side in two columns makes the browser build two plotly charts, each with
its own layout pass, text measurements, mode bar and resize observer; one figure holding both panels costs the
browser less at first paint (issue 32; measured with ``benchmarks/app.py``).  :func:`side_by_side` keeps every
panel as it was drawn alone: its axes (renamed so that they do not collide), its legend (one legend per panel,
plotly's ``legend2``, ``legend3``, ...), its title (an annotation above the panel), its shapes, annotations and
colour bars, with every horizontal position in paper coordinates moved into the panel's column.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import plotly.graph_objects as go

__all__ = ["GAP", "can_combine", "side_by_side"]

#: layout keys of subplots that are not x/y axes: a figure holding one stays a figure of its own
_OTHER_SUBPLOTS = re.compile(r"^(geo|polar|ternary|scene|mapbox|map|smith)\d*$")
#: layout keys that cannot be placed in a column (menus and sliders are positioned for one figure)
_UNMOVABLE = ("updatemenus", "sliders", "grid")
_AXIS_KEY = re.compile(r"^([xy])axis(\d*)$")
#: axis properties that name another axis
_AXIS_REFS = ("anchor", "matches", "overlaying", "scaleanchor")
#: layout keys each panel brings itself (the rest of the layout is the first figure's)
_PANEL_KEYS = ("annotations", "shapes", "images", "title", "legend", "margin", "height")
#: the gap between two panels, as a fraction of the figure's width: room for the right panel's y-axis labels and
#: title (about what two charts in ``st.columns(gap="medium")`` leave between their plot areas)
GAP = 0.1
#: plotly's defaults that the panels' positions depend on
_MARGIN = {"l": 80, "r": 80, "t": 100, "b": 80}
_BAR_X = 1.02   # a vertical colour bar's or legend's x
#: trace types that draw a colour bar unless told not to (``showscale`` is True by default)
_SCALE_TRACES = ("heatmap", "contour", "histogram2d", "histogram2dcontour", "surface")


def _layout_ok(layout: dict) -> bool:
    return not any(_OTHER_SUBPLOTS.match(k) or k in _UNMOVABLE for k in layout)


def can_combine(figs) -> bool:
    """True when there are two or more figures and each holds only x/y subplots (every trace has x and y axes),
    no menus and no sliders: what :func:`side_by_side` can place in a column."""
    figs = list(figs)
    return len(figs) >= 2 and all(_layout_ok(f.layout.to_plotly_json()) and all(hasattr(t, "xaxis") for t in f.data)
                                  for f in figs)


def _merged(base: dict, over: dict) -> dict:
    """`base` updated by `over`, nested dicts merged key by key (as plotly applies a template)."""
    out = dict(base)
    for k, v in over.items():
        out[k] = _merged(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def _axis_name(letter: str, n: int) -> str:
    """The trace reference of axis n ('x', 'x2', ...)."""
    return letter if n == 1 else f"{letter}{n}"


def _axis_key(name: str) -> str:
    """The layout key of the axis a trace references as `name` ('x2' -> 'xaxis2')."""
    return f"{name[0]}axis{name[1:]}"


def _axis_number(name: str) -> int:
    return int(name[1:] or 1)


class _Panel:
    """One figure's place in the combined figure: its column [x0, x0 + width] and its renamed axes."""

    def __init__(self, d: dict, x0: float, width: float, counter: dict):
        self.d, self.lay, self.x0, self.width = d, copy.deepcopy(d.get("layout", {})), x0, width
        used: dict[str, set] = {"x": set(), "y": set()}
        # every axis is anchored to the counter axis its first trace pairs it with: plotly anchors an axis that
        # has no `anchor` at the paper's edge, which in a column is the first panel's edge
        self.pair: dict[str, str] = {}
        for t in d["data"]:
            xa, ya = t.get("xaxis", "x"), t.get("yaxis", "y")
            used["x"].add(xa)
            used["y"].add(ya)
            self.pair.setdefault(xa, ya)
            self.pair.setdefault(ya, xa)
        for k in self.lay:
            m = _AXIS_KEY.match(k)
            if m:
                used[m.group(1)].add(_axis_name(m.group(1), int(m.group(2) or 1)))
        self.rename: dict[str, str] = {}
        for letter in ("x", "y"):
            for old in sorted(used[letter], key=_axis_number):
                counter[letter] += 1
                self.rename[old] = _axis_name(letter, counter[letter])
        colors = sorted({k for k in self.lay if k.startswith("coloraxis")}
                        | {t["coloraxis"] for t in d["data"] if t.get("coloraxis")})
        for old in colors:
            counter["coloraxis"] += 1
            self.rename[old] = "coloraxis" if counter["coloraxis"] == 1 else f"coloraxis{counter['coloraxis']}"

    def px(self, v) -> float:
        """A horizontal paper coordinate of this figure, in the combined figure."""
        return self.x0 + float(v) * self.width

    def ref(self, v):
        """An axis reference of this figure ('x2', 'y domain', 'paper') in the combined figure."""
        if not isinstance(v, str) or v == "paper":
            return v
        head, _, tail = v.partition(" ")
        return self.rename.get(head, head) + (" " + tail if tail else "")

    def _bar(self, bar: dict) -> dict:
        return {**bar, "x": self.px(bar.get("x", _BAR_X))}

    def traces(self, legend: str) -> list[dict]:
        out = []
        for t in self.d["data"]:
            t = copy.deepcopy(t)
            t["xaxis"], t["yaxis"] = self.ref(t.get("xaxis", "x")), self.ref(t.get("yaxis", "y"))
            if t.get("coloraxis"):
                t["coloraxis"] = self.rename[t["coloraxis"]]
            if not t.get("coloraxis") and (isinstance(t.get("colorbar"), dict)
                                           or t.get("showscale", t.get("type") in _SCALE_TRACES)):
                t["colorbar"] = self._bar(t.get("colorbar") or {})
            marker = t.get("marker")
            if isinstance(marker, dict) and isinstance(marker.get("colorbar"), dict):
                marker["colorbar"] = self._bar(marker["colorbar"])
            t["legend"] = legend
            out.append(t)
        return out

    def axes(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in self.lay.items():
            m = _AXIS_KEY.match(k)
            if m:
                letter, name = m.group(1), _axis_name(m.group(1), int(m.group(2) or 1))
                axis = dict(v)
                axis.setdefault("anchor", self.pair.get(name, "y" if letter == "x" else "x"))
                for r in _AXIS_REFS:
                    if r in axis:
                        axis[r] = self.ref(axis[r])
                if letter == "x":
                    a, b = axis.get("domain", [0.0, 1.0])
                    axis["domain"] = [self.px(a), self.px(b)]
                elif "position" in axis:
                    axis["position"] = self.px(axis["position"])
                out[_axis_key(self.rename[name])] = axis
            elif k.startswith("coloraxis"):
                axis = dict(v)
                if isinstance(axis.get("colorbar"), dict):
                    axis["colorbar"] = self._bar(axis["colorbar"])
                out[self.rename[k]] = axis
        for old, new in self.rename.items():   # axes that only the traces name
            if old[0] in "xy" and not old.startswith("coloraxis") and _axis_key(new) not in out:
                out[_axis_key(new)] = {"anchor": self.ref(self.pair.get(old, "y" if old[0] == "x" else "x"))}
                if old[0] == "x":
                    out[_axis_key(new)]["domain"] = [self.px(0.0), self.px(1.0)]
        return out

    def placed(self, key: str, dflt: str) -> list[dict]:
        """The layout's annotations, shapes or images (`key`) moved into the column; plotly's default reference
        (`dflt`) is the first x / y axis for annotations and shapes, the paper for images."""
        out = []
        for a in self.lay.get(key, []):
            a = dict(a)
            xref = a.get("xref", dflt)
            a["xref"], a["yref"] = self.ref(xref), self.ref(a.get("yref", dflt.replace("x", "y")))
            if xref == "paper":
                for c in ("x", "x0", "x1"):
                    if a.get(c) is not None:
                        a[c] = self.px(a[c])
            out.append(a)
        return out

    def _title(self) -> dict:
        title = self.lay.get("title") or {}
        return title if isinstance(title, dict) else {"text": title}

    def title_text(self) -> str:
        """The figure's title ('' when it has none)."""
        return str(self._title().get("text") or "")

    def title(self, template_font: dict) -> dict | None:
        """The figure's title as an annotation above its plot area, where plotly would have put it: x measured
        from the panel's own left edge (plotly's default reference for a title is the whole figure)."""
        title = self._title()
        if not title.get("text"):
            return None
        tx = float(title.get("x", 0.5))
        anchor = title.get("xanchor") if title.get("xanchor") not in (None, "auto") else (
            "left" if tx < 1 / 3 else "right" if tx > 2 / 3 else "center")
        margin = {**_MARGIN, **self.lay.get("margin", {})}
        shift = -margin["l"] * (1 - tx) + margin["r"] * tx if title.get("xref", "container") == "container" else 0
        font = {**template_font, **title.get("font", {})}
        text = str(title["text"])
        if str(font.pop("weight", "normal")) in ("bold", "700", "800", "900"):   # font.weight needs plotly >= 5.23
            text = f"<b>{text}</b>"
        return dict(text=text, x=self.px(tx), xref="paper", xanchor=anchor, xshift=shift, y=1.0, yref="paper",
                    yanchor="bottom", yshift=12, showarrow=False, align="left", font=font)

    def legend(self, template_legend: dict) -> dict:
        """The figure's legend in its column, one entry per line: a horizontal legend wider than its column would
        run into the next panel's (plotly moves a legend that overflows the figure back inside it).  The
        template's legend style is copied in: a template styles ``legend`` only, not ``legend2``."""
        lg = _merged(template_legend, self.lay.get("legend", {}))
        lg["x"] = self.px(lg.get("x", _BAR_X))
        lg["orientation"] = "v"
        return lg


def side_by_side(figs, *, gap: float = GAP, name: str | None = None) -> go.Figure:
    """One figure holding `figs` in a row of equal columns, each panel as it looked alone.

    Parameters
    ----------
    figs : sequence of plotly Figure
        Figures of x/y subplots only (:func:`can_combine`); each becomes one column.
    gap : float
        Space between two columns, as a fraction of the combined figure's width.
    name : str, optional
        Kept in ``layout.meta["name"]``: what the chart's saved image is called (by default the panels' titles).

    Returns
    -------
    plotly Figure
        Its height and each margin are the largest of the panels'; the other layout properties (font, template,
        hover mode) are the first figure's.  ``layout.meta["panels"]`` lists each panel's title and the slice
        [start, stop) of its traces in ``data``.
    """
    figs = list(figs)
    if not can_combine(figs):
        raise ValueError("side_by_side needs two or more figures of x/y subplots without menus or sliders")
    dicts = [f.to_plotly_json() for f in figs]
    width = (1.0 - gap * (len(dicts) - 1)) / len(dicts)
    template = (dicts[0]["layout"].get("template") or {}).get("layout") or {}
    title_font = dict((template.get("title") or {}).get("font") or {})
    layout: dict[str, Any] = copy.deepcopy({k: v for k, v in dicts[0]["layout"].items() if k not in _PANEL_KEYS
                                            and not (_AXIS_KEY.match(k) or k.startswith("coloraxis"))})
    counter = {"x": 0, "y": 0, "coloraxis": 0}
    data: list[dict] = []
    placed: dict[str, list] = {"annotations": [], "shapes": [], "images": []}
    titles: list[str] = []
    panels: list[dict] = []
    margin = {side: 0 for side in "lrtb"}
    height = 0
    for i, d in enumerate(dicts):
        panel = _Panel(d, i * (width + gap), width, counter)
        legend = "legend" if i == 0 else f"legend{i + 1}"
        panels.append({"title": panel.title_text(), "traces": [len(data), len(data) + len(d["data"])]})
        data += panel.traces(legend)
        layout.update(panel.axes())
        for key, dflt in (("annotations", "x"), ("shapes", "x"), ("images", "paper")):
            placed[key] += panel.placed(key, dflt)
        title = panel.title(title_font)
        if title is not None:
            placed["annotations"].append(title)
            titles.append(re.sub(r"<[^>]+>", "", title["text"].split("<br>")[0]))
        layout[legend] = panel.legend(dict(template.get("legend") or {}))
        panel_margin = {**_MARGIN, **panel.lay.get("margin", {})}
        margin = {side: max(margin[side], int(panel_margin[side])) for side in margin}
        height = max(height, int(panel.lay.get("height") or 450))
    layout.update({k: v for k, v in placed.items() if v})
    layout["margin"], layout["height"] = margin, height
    meta = layout.get("meta")
    layout["meta"] = {**(meta if isinstance(meta, dict) else {}), "name": name or " and ".join(titles) or "figure",
                      "panels": panels}
    return go.Figure(data=data, layout=layout)
