"""Chart margins sized before plotly draws, so that a chart is laid out once.

Plotly lays a chart out in the margins it is given, then measures what sits outside the plot area: the tick labels
and titles of axes with ``automargin`` (the app's template turns it on), legends below the plot and colour bars.
When one of them does not fit, plotly grows the margins and lays the whole chart out a second time (the app's
charts put their legend under the x-axis title, below a 60 px margin, so each was drawn twice at first paint).
:func:`reserve_margins` estimates those sizes from the figure itself (tick labels from
the axis ranges and plotly's tick rule, text widths of the app's font, Source Sans, legend entries) and sets
margins that hold them.  Automargin stays on, so an estimate that falls short (a narrow window that wraps a
horizontal legend into more rows) still gets the margin it needs: plotly grows it, as before.
"""

from __future__ import annotations

import math
import re

import numpy as np

from .theme import LIGHT
from .typed_arrays import decode_typed_array, is_typed_array

__all__ = ["reserve_margins", "with_reserved_margins"]

#: advance widths of Source Sans (Streamlit's font) in em, measured in Chromium; other characters: _EM_DEFAULT
_EM = {**dict.fromkeys("0123456789+−$^_", 0.497), **dict.fromkeys(".,:;'|!", 0.25), **dict.fromkeys("-()[]{}/", 0.31),
       **dict.fromkeys("fijlrtI ", 0.3), **dict.fromkeys("mwMW%", 0.83)}
_EM_UPPER = 0.66
_EM_DEFAULT = 0.56
#: plotly's line height as a multiple of the font size
_LINE = 1.3
#: the app template's font sizes of tick labels, axis titles and legends (distviz.viz.theme.LIGHT)
_TICK_SIZE = float(LIGHT["layout"]["yaxis"]["tickfont"]["size"])
_TITLE_SIZE = float(LIGHT["layout"]["yaxis"]["title"]["font"]["size"])
_LEGEND_SIZE = float(LIGHT["layout"]["legend"]["font"]["size"])
#: pixels around tick labels and axis titles beyond the texts themselves (margin.pad, label and title standoffs),
#: and per legend entry and legend (plotly's item gaps), calibrated against the margins plotly settles on
_Y_EXTRA, _Y_TITLE_EXTRA = 14.0, 30.0
_X_EXTRA, _X_TITLE_EXTRA = 12.0, 29.0
_LEGEND_ITEM_EXTRA, _LEGEND_EXTRA, _LEGEND_SYMBOL = 7.0, 6.0, 46.0
#: a horizontal legend's rows: one entry's height plus this, and this much more around them
_LEGEND_ROW_EXTRA, _LEGEND_H_EXTRA = 2.0, 16.0
#: the width a horizontal legend is assumed to wrap at (px): a chart narrower than this may wrap into more rows
_ASSUMED_WIDTH = 640.0
#: the plot width (px) a colour bar's position is estimated at (its x = 1.02 is a fraction of it)
_PLOT_WIDTH = 860.0
_TAG = re.compile(r"<[^>]+>")
#: plotly's margins where a figure sets none
_PLOTLY_MARGIN = {"l": 80, "r": 80, "t": 100, "b": 80}


def _text_width(text: str, size: float) -> float:
    """Width in px of one line of `text` (HTML tags dropped) at font size `size`."""
    w = 0.0
    for ch in _TAG.sub("", text):
        w += _EM.get(ch, _EM_UPPER if ch.isupper() else _EM_DEFAULT)
    return w * size


def _font_size(font, default: float) -> float:
    """The size of a ``font`` dict, or `default`."""
    size = font.get("size") if isinstance(font, dict) else None
    return float(size) if size else default


def _size(obj, default: float) -> float:
    """The font size of the ``font`` dict inside `obj` (a title, a legend), or `default`."""
    return _font_size(obj.get("font") if isinstance(obj, dict) else None, default)


def _tick_labels(lo: float, hi: float, length: float, is_y: bool) -> list[str]:
    """The labels plotly's automatic ticks put on a linear axis over [lo, hi] of `length` px (axes.autoTicks: about
    one tick per 40 px (y) or 80 px (x), a step of 1, 2 or 5 times a power of ten, 'k' / 'M' / 'G' above 1e4)."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return []
    if hi - lo <= 0:
        lo, hi = lo - max(1.0, abs(lo)) * 0.5, hi + max(1.0, abs(hi)) * 0.5
    nt = min(max(length / (40.0 if is_y else 80.0), 4.0), 9.0) + 1.0
    rough = (hi - lo) / nt
    base = 10.0 ** math.floor(math.log10(rough))
    m = rough / base
    step = base * (1.0 if m <= 1.0 else 2.0 if m <= 2.0 else 5.0 if m <= 5.0 else 10.0)
    first, last = math.ceil(lo / step - 1e-9), math.floor(hi / step + 1e-9)
    if last - first > 50:
        return []
    big = max(abs(lo), abs(hi))
    if big >= 1e4:   # plotly's SI suffixes: 20000 -> 20k
        k = min(int(math.log10(big) // 3), 3)
        div, suffix = 10.0 ** (3 * k), "kMG"[k - 1]
    else:
        div, suffix = 1.0, ""
    decimals = max(0, -math.floor(math.log10(step / div) + 1e-9))
    out = []
    for i in range(first, last + 1):
        s = f"{i * step / div:.{decimals}f}"
        if "." in s:
            s = s.rstrip("0").rstrip(".")
        out.append(("−" + s[1:] if s.startswith("-") else "0" if s == "-0" else s) + suffix)
    return out


def _array(values):
    """`values` as an array: a numpy array or list as it is, plotly's typed-array form decoded."""
    return decode_typed_array(values) if is_typed_array(values) else values


def _finite_range(values) -> tuple[float, float] | None:
    try:
        a = np.asarray(_array(values), dtype=float)
    except (TypeError, ValueError):
        return None
    a = a[np.isfinite(a)]
    return (float(a.min()), float(a.max())) if a.size else None


def _axis_ids(layout: dict, data: list, letter: str) -> list[str]:
    """The ids ('x', 'x2', ...) of the cartesian axes of one letter that the figure has."""
    ids = {k[5:] and letter + k[5:] or letter for k in layout if re.fullmatch(letter + r"axis\d*", k)}
    ids |= {t.get(letter + "axis") or letter for t in data if t.get("type", "scatter") in _CARTESIAN}
    return sorted(ids, key=lambda a: int(a[1:] or 1))


_CARTESIAN = {"scatter", "scattergl", "bar", "heatmap", "contour", "histogram", "box", "violin"}


def _axis(layout: dict, axis_id: str) -> dict:
    return layout.get(axis_id[0] + "axis" + axis_id[1:]) or {}


def _label_texts(layout: dict, data: list, axis_id: str, length: float) -> list[str]:
    """Texts of the tick labels of one axis (estimated), [] where it shows none."""
    ax = _axis(layout, axis_id)
    if ax.get("visible") is False or ax.get("showticklabels") is False:
        return []
    if ax.get("ticktext") is not None:
        return [str(t) for t in ax["ticktext"]]
    letter = axis_id[0]
    rng = ax.get("range")
    span = None
    if rng is not None and len(rng) == 2 and all(isinstance(v, (int, float)) for v in rng):
        span = (float(min(rng)), float(max(rng)))
    else:
        lo, hi = math.inf, -math.inf
        for t in data:
            if (t.get(letter + "axis") or letter) != axis_id or t.get("type", "scatter") not in _CARTESIAN:
                continue
            v = _array(t.get(letter))
            if v is None and t.get("type") in ("heatmap", "contour") and t.get("z") is not None:
                z = np.asarray(_array(t["z"]))
                v = np.arange(z.shape[1 if letter == "x" else 0]) if z.ndim == 2 else None
            if v is None:
                continue
            if len(v) and isinstance(v[0], str):
                return [str(s) for s in v]
            r = _finite_range(v)
            if r is not None:
                lo, hi = min(lo, r[0]), max(hi, r[1])
        if lo > hi:
            return ["0.00"]   # no data plotly's range could come from here (a histogram's counts): a typical label
        if ax.get("type") == "log":   # a log axis's range is in powers of ten (of its positive values)
            if hi <= 0:
                return ["1"]
            lo, hi = math.log10(lo) if lo > 0 else math.log10(hi) - 3.0, math.log10(hi)
        pad = 0.06 * (hi - lo)   # autorange pads markers and lines a little
        span = (lo - pad, hi + pad)
    if ax.get("type") == "log":
        e0, e1 = math.floor(span[0]), math.ceil(span[1])
        return [f"{10.0 ** e:g}" for e in range(max(e0, -300), min(e1, e0 + 11, 300) + 1)] or ["1"]
    return _tick_labels(span[0], span[1], length, letter == "y")


def _title_lines(ax: dict) -> list[str]:
    title = ax.get("title")
    text = title.get("text") if isinstance(title, dict) else title
    return str(text).split("<br>") if text else []


def _legends(layout: dict, data: list) -> dict[str, list[str]]:
    """Legend id -> the names of the entries it shows."""
    out: dict[str, list[str]] = {}
    if layout.get("showlegend") is False:
        return out
    shown = [t for t in data if t.get("showlegend") is not False and t.get("visible", True) is not False
             and t.get("name") and t.get("type", "scatter") not in ("heatmap", "contour")]
    if len(shown) < 2 and layout.get("showlegend") is not True and not any(t.get("showlegend") for t in shown):
        return out   # plotly shows no legend for a single trace unless asked
    seen: dict[str, set] = {}
    for t in shown:
        lid = t.get("legend") or "legend"
        group = t.get("legendgroup")
        key = (group, t["name"]) if group else (None, id(t))
        if key in seen.setdefault(lid, set()):
            continue
        seen[lid].add(key)
        out.setdefault(lid, []).append(str(t["name"]))
    return out


def _legend_height(leg: dict, names: list[str], width: float) -> float:
    size = _size(leg, _LEGEND_SIZE)
    item = _LINE * size + _LEGEND_ITEM_EXTRA
    title = leg.get("title")
    title_h = _LINE * _size(title, size) + _LEGEND_ITEM_EXTRA if isinstance(title, dict) and title.get("text") else 0.0
    if leg.get("orientation", "v") == "h":
        rows, used = 1, 0.0
        for n in names:
            w = _LEGEND_SYMBOL + _text_width(n, size)
            if used and used + w > width:
                rows, used = rows + 1, 0.0
            used += w
        return title_h + rows * (item + _LEGEND_ROW_EXTRA) + _LEGEND_H_EXTRA
    return title_h + len(names) * item + _LEGEND_EXTRA


def _colorbar_width(t: dict, layout: dict) -> float:
    """Width in px that a heatmap's or contour's colour bar takes right of the plot (0 when it has none)."""
    if t.get("showscale") is False or t.get("coloraxis"):
        return 0.0
    cb = t.get("colorbar") or {}
    r = _finite_range(t.get("z")) if t.get("z") is not None else None
    labels = _tick_labels(r[0], r[1], 300.0, True) if r else ["0.00"]
    # the bar sits at x = 1.02 of the plot width (taken as _PLOT_WIDTH), then its pad, thickness and labels
    w = 0.02 * _PLOT_WIDTH + float(cb.get("thickness", 30)) + float(cb.get("xpad", 10)) + 22.0
    w += max((_text_width(s, _TICK_SIZE) for s in labels), default=0.0)
    title = cb.get("title") or {}
    if isinstance(title, dict) and title.get("text") and title.get("side") == "right":
        w += _LINE * _size(title, _TITLE_SIZE) + 6.0
    return w


def reserve_margins(layout: dict, data: list) -> dict | None:
    """Margins that hold `layout`'s axis labels and titles, legends below the plot and colour bars.

    Parameters
    ----------
    layout : dict
        The figure's layout as a dict (``fig.layout.to_plotly_json()``).
    data : list of dict
        Its traces as dicts (numbers may be numpy arrays).

    Returns
    -------
    dict or None
        ``layout["margin"]`` with ``l``, ``b`` and ``r`` raised where the estimate needs more, or None where
        nothing needs raising (or the figure is not a cartesian chart with a fixed height: plotly sizes a chart of
        no height from its container, which is not known here).
    """
    height = layout.get("height")
    if not height or any(k.startswith(("geo", "polar", "ternary", "scene", "mapbox", "map")) and layout[k]
                         for k in layout):
        return None
    margin = dict(layout.get("margin") or {})
    t0, b0, l0, r0 = (float(margin[k] if margin.get(k) is not None else _PLOTLY_MARGIN[k]) for k in "tblr")
    plot_h = max(float(height) - t0 - b0, 100.0)
    need_l, need_b, need_r = l0, b0, r0
    for axis_id in _axis_ids(layout, data, "y"):
        ax = _axis(layout, axis_id)
        x_dom = _axis(layout, str(ax.get("anchor") or "x")).get("domain") or [0.0, 1.0]
        dom = ax.get("domain") or [0.0, 1.0]
        labels = _label_texts(layout, data, axis_id, plot_h * (dom[1] - dom[0]))
        size = _font_size(ax.get("tickfont"), _TICK_SIZE)
        w = max((_text_width(s, size) for s in labels), default=0.0) + _Y_EXTRA
        lines = _title_lines(ax)
        if lines:
            w += _Y_TITLE_EXTRA + len(lines) * _LINE * _size(ax.get("title"), _TITLE_SIZE)
        if ax.get("side") == "right":
            if float(x_dom[1]) >= 0.98:
                need_r = max(need_r, w)
        elif float(x_dom[0]) <= 0.02 and ax.get("overlaying") is None:
            need_l = max(need_l, w)
    for axis_id in _axis_ids(layout, data, "x"):
        ax = _axis(layout, axis_id)
        y_dom = _axis(layout, str(ax.get("anchor") or "y")).get("domain") or [0.0, 1.0]
        if ax.get("side") == "top" or float(y_dom[0]) > 0.02:
            continue
        dom = ax.get("domain") or [0.0, 1.0]
        labels = _label_texts(layout, data, axis_id, 700.0 * (dom[1] - dom[0]))
        size = _font_size(ax.get("tickfont"), _TICK_SIZE)
        h = (_LINE * size + _X_EXTRA) if labels else 0.0
        lines = _title_lines(ax)
        if lines:
            h += _X_TITLE_EXTRA + len(lines) * _LINE * _size(ax.get("title"), _TITLE_SIZE)
        need_b = max(need_b, h)
        if labels and float(dom[1]) >= 0.98:   # the last label overhangs the right edge by half its width
            need_r = max(need_r, 0.5 * _text_width(labels[-1], size) + 12.0)
    for lid, names in _legends(layout, data).items():
        leg = layout.get(lid) or {}
        y = float(leg.get("y", 1.0))
        if leg.get("yref", "paper") != "paper" or y >= 0 or leg.get("yanchor") != "top":
            continue
        x = float(leg.get("x", 0.0))
        h_leg = _legend_height(leg, names, _ASSUMED_WIDTH * max(0.3, 1.0 - x))
        # the legend's top sits |y| plot heights below the plot: b = |y| (H - t - b) + h_leg, solved for b
        need_b = max(need_b, (-y * (float(height) - t0) + h_leg) / (1.0 - y))
    for t in data:
        if t.get("type") in ("heatmap", "contour", "histogram2d"):
            need_r = max(need_r, _colorbar_width(t, layout))
    new = {"l": math.ceil(need_l), "b": math.ceil(need_b), "r": math.ceil(need_r)}
    old = {k: float(margin[k] if margin.get(k) is not None else _PLOTLY_MARGIN[k]) for k in new}
    if all(new[k] <= old[k] for k in new):
        return None
    return {**margin, **{k: max(new[k], math.ceil(old[k])) for k in new}}


def with_reserved_margins(fig):
    """`fig` (a plotly Figure, or a figure dict) with :func:`reserve_margins`'s margins, in place; returns it.

    A figure of no fixed height, or one whose margins already hold everything, is left as it is.
    """
    if isinstance(fig, dict):
        layout, data = fig.get("layout") or {}, fig.get("data") or []
    else:
        layout = getattr(fig, "_layout", None)   # plotly's own dicts: no deep copy of the traces' arrays
        data = getattr(fig, "_data", None)
        if not isinstance(layout, dict) or not isinstance(data, list):
            d = fig.to_dict()
            layout, data = d["layout"], d["data"]
    margin = reserve_margins(layout, data)
    if margin is not None:
        if isinstance(fig, dict):
            fig["layout"] = {**layout, "margin": margin}
        else:
            fig.layout.margin = margin
    return fig
