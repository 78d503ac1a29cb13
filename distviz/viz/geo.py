"""Coastline and land as plotly traces from the vendored Natural Earth shapefiles (no CDN basemap, works offline)."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

LAND_COLOR = "#d9d9d9"
COAST_COLOR = "#4d4d4d"


def _bbox(bbox, pad: float = 1.0):
    """(lon0, lon1, lat0, lat1) widened by `pad` degrees and rounded, so cached clips are reused."""
    lo0, lo1, la0, la1 = bbox
    return (float(np.floor(lo0 - pad)), float(np.ceil(lo1 + pad)), float(np.floor(la0 - pad)),
            float(np.ceil(la1 + pad)))


def land_trace(bbox, scale: str = "50m", color: str = LAND_COLOR) -> go.Scatter:
    """Filled land polygons inside bbox as one x/y Scatter trace (lon on x, lat on y)."""
    from distviz.data import naturalearth as ne

    x, y = ne.lines("land", scale, _bbox(bbox))
    return go.Scatter(x=np.where(np.isnan(x), None, x), y=np.where(np.isnan(y), None, y), mode="lines",
                      fill="toself", fillcolor=color, line=dict(width=0, color=color), hoverinfo="skip",
                      name="land", showlegend=False)


def coastline_trace(bbox, scale: str = "50m", color: str = COAST_COLOR) -> go.Scatter:
    """Natural Earth coastline inside bbox as one x/y line trace."""
    from distviz.data import naturalearth as ne

    x, y = ne.lines("coastline", scale, _bbox(bbox))
    return go.Scatter(x=np.where(np.isnan(x), None, x), y=np.where(np.isnan(y), None, y), mode="lines",
                      line=dict(width=0.8, color=color), hoverinfo="skip", name="coastline", showlegend=False)


def add_basemap(fig: go.Figure, bbox, scale: str = "50m", *, row=None, col=None) -> go.Figure:
    """Append land and coastline traces to `fig` (drawn over what is already there) and fix lon/lat axes to bbox."""
    kw = {} if row is None else dict(row=row, col=col)
    fig.add_trace(land_trace(bbox, scale), **kw)
    fig.add_trace(coastline_trace(bbox, scale), **kw)
    lo0, lo1, la0, la1 = bbox
    fig.update_xaxes(range=[lo0, lo1], title_text="Longitude (°E)", showgrid=False, zeroline=False, **kw)
    fig.update_yaxes(range=[la0, la1], title_text="Latitude (°N)", showgrid=False, zeroline=False, **kw)
    if row is None:  # keep degrees of lon and lat at their true ground ratio at the box's mid-latitude
        fig.update_yaxes(scaleanchor="x", scaleratio=1.0 / np.cos(np.deg2rad(0.5 * (la0 + la1))), constrain="domain")
        fig.update_xaxes(constrain="domain")  # shrink the plot area, never widen the range past the basemap
    return fig
