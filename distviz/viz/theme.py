"""The app's chart look as a plotly template: Streamlit's light chart theme, written out.

``st.plotly_chart(fig)`` (``theme="streamlit"``) sends a template of placeholder colours, and the browser puts
the theme's colours and layout defaults in before plotly draws the chart.  The app draws its charts with
``theme=None`` and :data:`LIGHT` as their template instead: the values Streamlit's light theme puts in (read from
the charts Streamlit 1.67 draws), so a chart looks as it did and the browser skips that pass.  A figure saved from
the app (the take-away report, a PNG or SVG) carries the same look.
"""

from __future__ import annotations

__all__ = ["LIGHT", "NAME", "template", "use_app_template"]

#: the name the app registers the template under in ``plotly.io.templates``
NAME = "distviz"

_TEXT = "#808495"    # Streamlit's faded text: ticks, axis titles, legend titles
_BODY = "#262730"    # body text: legend entries
_TITLE = "#2F2D2B"   # chart titles
_GRID = "#e6eaf1"    # grid and tick lines
_WHITE = "#FFFFFF"
_FONT = '"Source Sans", sans-serif'
#: Streamlit's sequential (blues), diverging and categorical chart colours
_SEQUENTIAL = ["#e4f5ff", "#c7ebff", "#a6dcff", "#83c9ff", "#60b4ff", "#3d9df3", "#1c83e1", "#0068c9", "#0054a3",
               "#004280"]
_DIVERGING = ["#7d353b", "#bd4043", "#ff4b4b", "#ff8c8c", "#ffc7c7", "#a6dcff", "#60b4ff", "#1c83e1", "#0054a3",
              "#004280"]
_CATEGORICAL = ["#0068c9", "#83c9ff", "#ff2b2b", "#ffabab", "#29b09d", "#7defa1", "#ff8700", "#ffd16a", "#6d3fc0",
                "#d5dae5"]


def _scale(colors: list[str]) -> list:
    return [[i / (len(colors) - 1), c] for i, c in enumerate(colors)]


def _axis(**extra) -> dict:
    return dict(zerolinecolor=_GRID, gridcolor=_GRID, tickcolor=_GRID, tickfont=dict(color=_TEXT, size=12),
                minor=dict(gridcolor=_GRID), automargin=True, **extra)


#: Streamlit's light chart theme as a plotly template: its layout, and its trace defaults for colour-scale traces and scatter
LIGHT: dict = {
    "data": {
        "heatmap": [{"colorscale": _scale(_SEQUENTIAL)}],
        "histogram2d": [{"colorscale": _scale(_SEQUENTIAL)}],
        "contour": [{"colorscale": _scale(_SEQUENTIAL)}],
        "scatter": [{"marker": {"line": {"width": 0}}}],
    },
    "layout": {
        "colorway": _CATEGORICAL,
        "colorscale": {"sequential": _scale(_SEQUENTIAL), "sequentialminus": _scale(_SEQUENTIAL),
                       "diverging": _scale(_DIVERGING)},
        "coloraxis": {"colorscale": _scale(_SEQUENTIAL),
                      "colorbar": {"thickness": 16, "xpad": 24, "ticklabelposition": "outside", "outlinewidth": 8,
                                   "outlinecolor": "rgba(0,0,0,0)", "len": 0.75, "y": 0.5745,
                                   "title": {"font": {"color": _TEXT, "size": 14}},
                                   "tickfont": {"color": _TEXT, "size": 12}}},
        "font": {"color": _TEXT, "family": _FONT, "size": 12},
        # Streamlit sets chart titles in bold (it wraps their text in <b>)
        "title": {"font": {"family": _FONT, "size": 16, "color": _TITLE, "weight": "bold"}, "pad": {"l": 4},
                  "xanchor": "left", "x": 0},
        "legend": {"title": {"font": {"size": 12, "color": _TEXT}, "side": "top"}, "valign": "top",
                   "bordercolor": "rgba(0,0,0,0)", "borderwidth": 0, "font": {"size": 12, "color": _BODY}},
        "paper_bgcolor": _WHITE,
        "plot_bgcolor": _WHITE,
        "xaxis": _axis(showgrid=False, zeroline=False, title=dict(font=dict(color=_TEXT, size=14), standoff=20)),
        "yaxis": _axis(ticklabelposition="outside", title=dict(font=dict(color=_TEXT, size=14), standoff=24)),
        "margin": {"pad": 8, "r": 0, "l": 0},
        "hoverlabel": {"bgcolor": _WHITE, "bordercolor": "#DCD8D4",
                       "font": {"color": _TEXT, "family": _FONT, "size": 12}},
    },
}


def template():
    """:data:`LIGHT` as a ``plotly.graph_objects.layout.Template``.

    A property the installed plotly does not know is left out rather than raised (``font.weight`` of the title
    came with plotly 5.23; at older versions titles are drawn in the regular weight).
    """
    import plotly.graph_objects as go

    return go.layout.Template(LIGHT, skip_invalid=True)


def use_app_template() -> None:
    """Register :func:`template` as ``plotly.io.templates["distviz"]`` and make it the default of every figure
    built after this call in this process (Streamlit's import makes its own placeholder template the default)."""
    import plotly.io as pio

    if NAME not in pio.templates:
        pio.templates[NAME] = template()
    pio.templates.default = NAME
