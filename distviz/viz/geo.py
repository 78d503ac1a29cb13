"""Coastline and land as plotly traces from the vendored Natural Earth shapefiles (no CDN basemap, works offline)."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

LAND_COLOR = "#d9d9d9"
COAST_COLOR = "#4d4d4d"


def _gaps(a):
    """Coordinates with NaN between pieces, as a float array: plotly draws a NaN as a gap, and a float array
    travels to the browser as a typed array (base64) where a list with None goes as JSON text, element by element."""
    return np.asarray(a, dtype=float)


def _bbox(bbox, pad: float = 1.0):
    """(lon0, lon1, lat0, lat1) widened by `pad` degrees and rounded, so cached clips are reused."""
    lo0, lo1, la0, la1 = bbox
    return (float(np.floor(lo0 - pad)), float(np.ceil(lo1 + pad)), float(np.floor(la0 - pad)),
            float(np.ceil(la1 + pad)))


def land_trace(bbox, scale: str = "50m", color: str = LAND_COLOR) -> go.Scatter:
    """Filled land polygons inside bbox as one x/y Scatter trace (lon on x, lat on y)."""
    from distviz.data import naturalearth as ne

    x, y = ne.lines("land", scale, _bbox(bbox))
    return go.Scatter(x=_gaps(x), y=_gaps(y), mode="lines", fill="toself", fillcolor=color, line=dict(width=0, color=color),
                      hoverinfo="skip", name="land", showlegend=False)


def coastline_trace(bbox, scale: str = "50m", color: str = COAST_COLOR) -> go.Scatter:
    """Natural Earth coastline inside bbox as one x/y line trace."""
    from distviz.data import naturalearth as ne

    x, y = ne.lines("coastline", scale, _bbox(bbox))
    return go.Scatter(x=_gaps(x), y=_gaps(y), mode="lines", line=dict(width=0.8, color=color), hoverinfo="skip",
                      name="coastline", showlegend=False)


def _step(span: float) -> float:
    """A tick spacing in degrees giving about 4-8 ticks over `span` degrees."""
    for step in (0.25, 0.5, 1, 2, 5, 10, 20, 30, 60):
        if span / step <= 8:
            return float(step)
    return 90.0


def _deg(v: float) -> str:
    """Degrees without a trailing .0."""
    return f"{abs(v):g}"


def lon_label(v: float) -> str:
    """A longitude as map text: 75°W, 0°, 10°E, 180°."""
    v = (float(v) + 180.0) % 360.0 - 180.0 if abs(v) != 180 else 180.0
    return "0°" if v == 0 else ("180°" if abs(v) == 180 else f"{_deg(v)}°{'W' if v < 0 else 'E'}")


def lat_label(v: float) -> str:
    """A latitude as map text: 30°N, 0°, 10°S."""
    return "0°" if v == 0 else f"{_deg(v)}°{'S' if v < 0 else 'N'}"


def degree_ticks(lo: float, hi: float, label) -> tuple[list[float], list[str]]:
    """Tick values between lo and hi at a round spacing, and their °W/°E (or °N/°S) texts from `label`."""
    step = _step(float(hi) - float(lo))
    grid = np.arange(np.ceil(lo / step) * step, hi + 1e-9, step)
    vals = [float(round(v, 6)) for v in grid]
    return vals, [label(v) for v in vals]


def add_basemap(fig: go.Figure, bbox, scale: str = "50m", *, row=None, col=None) -> go.Figure:
    """Append land and coastline traces to `fig` (drawn over what is already there) and fix lon/lat axes to bbox,
    ticks labelled in °W / °E and °N / °S."""
    kw = {} if row is None else dict(row=row, col=col)
    fig.add_trace(land_trace(bbox, scale), **kw)
    fig.add_trace(coastline_trace(bbox, scale), **kw)
    lo0, lo1, la0, la1 = bbox
    xv, xt = degree_ticks(lo0, lo1, lon_label)
    yv, yt = degree_ticks(la0, la1, lat_label)
    fig.update_xaxes(range=[lo0, lo1], title_text="Longitude", tickmode="array", tickvals=xv, ticktext=xt,
                     showgrid=False, zeroline=False, **kw)
    fig.update_yaxes(range=[la0, la1], title_text="Latitude", tickmode="array", tickvals=yv, ticktext=yt,
                     showgrid=False, zeroline=False, **kw)
    if row is None:  # keep degrees of lon and lat at their true ground ratio at the box's mid-latitude
        fig.update_yaxes(scaleanchor="x", scaleratio=1.0 / np.cos(np.deg2rad(0.5 * (la0 + la1))), constrain="domain")
        fig.update_xaxes(constrain="domain")  # shrink the plot area, never widen the range past the basemap
    return fig


def km_lines(name: str, bbox, origin, scale: str = "50m"):
    """Natural Earth `name` lines inside bbox as (x, y) km east / north of origin (lon0, lat0), local flat-earth
    projection (x = R cos(lat0) dlon, y = R dlat, R = 6371 km); NaN separates the lines."""
    from distviz.data import naturalearth as ne

    x, y = ne.lines(name, scale, _bbox(bbox))
    return km_from_lonlat(x, y, origin)


#: km per degree of latitude on a sphere of radius 6371 km
KM_PER_DEG = 111.195


def km_from_lonlat(lon, lat, origin):
    """(x, y) km east / north of origin = (lon0, lat0): x = 111.195 cos(lat0) (lon - lon0), y = 111.195 (lat - lat0)."""
    lon0, lat0 = origin
    lon, lat = np.asarray(lon, float), np.asarray(lat, float)
    return KM_PER_DEG * np.cos(np.deg2rad(lat0)) * (lon - lon0), KM_PER_DEG * (lat - lat0)
