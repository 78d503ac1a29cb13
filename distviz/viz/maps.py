"""Offline maps of the drifter comparison (paper Figures 4-6): cartopy statics and plotly interactives.

Static maps use cartopy with the Natural Earth files vendored in ``distviz/data/naturalearth``
(``cartopy.config["pre_existing_data_dir"]`` is pointed there before drawing), so nothing is
downloaded. Interactive maps are plain plotly x/y plots (lon, lat) with land and coastline drawn as
traces from the same shapefiles: no CDN basemap.

Kinds of binned map (``map_figure(binned, kind)``), following Figure 4:
``count`` (a) number of test points; ``nll_diff`` (b) mean NLL difference NGB - IndepNGB, diverging,
blue = NGB better, centred at 0; ``rho`` (c) mean predicted correlation; ``currents`` (d) mean
predicted currents as arrows over speed. Any other variable of the binned Dataset can be named too.
"""

from __future__ import annotations

import textwrap

import numpy as np

from distviz._optional import missing
from distviz.errors import ConfigError

#: kind -> (variable, colour-bar label, colormap, diverging?)
KINDS = {
    "count": ("n_test", "Number of test points", "viridis", False),
    "nll_diff": ("nll_diff", "Mean NLL difference NGB − IndepNGB (nats; blue: NGB better)", "RdBu_r", True),
    "rho": ("rho", "Mean predicted correlation ρ of (u, v) (NGB)", "PuOr_r", True),
    "currents": ("speed", "Mean predicted current speed (cm/s), arrows: direction (NGB)", "cividis", False),
}
PANEL_TITLES = {"count": "(a) test points", "nll_diff": "(b) NLL NGB − IndepNGB", "rho": "(c) predicted ρ",
                "currents": "(d) mean currents"}
#: kind -> the value's name in the interactive map's hover text (beside the bin's count of test points)
HOVER_NAMES = {"nll_diff": "mean NLL NGB − IndepNGB (nats)", "rho": "mean ρ (NGB)", "currents": "mean speed (cm/s)"}
NOTE_CHARS, NOTE_CHARS_PRESENTER = 130, 88   # characters a line of a map's note under its title
CHI2_2 = {0.7: 2.407945608651872, 0.9: 4.605170185988092}  # chi-square(2) quantiles, -2 log(1 - level)
_PLOTLY_SCALES = {"viridis": "Viridis", "RdBu_r": "RdBu_r", "PuOr_r": [[0, "#542788"], [0.5, "#f7f7f7"], [1, "#b35806"]],
                  "cividis": "Cividis"}


def _require_static() -> None:
    """Raise the [app] extra's sentence unless matplotlib and cartopy (the static maps' packages) are installed."""
    try:
        import cartopy  # noqa: F401
        import matplotlib  # noqa: F401
    except ModuleNotFoundError as e:
        if e.name not in ("cartopy", "matplotlib"):
            raise
        raise missing(e.name, "The paper's static maps") from None


def configure_cartopy() -> str:
    """Point cartopy at the vendored Natural Earth folder (no downloads); returns that folder."""
    _require_static()
    import cartopy

    from distviz.data import naturalearth as ne

    cartopy.config["pre_existing_data_dir"] = str(ne.DATA_DIR)
    return str(ne.DATA_DIR)


def _kind(binned, kind: str):
    """(variable name, label, cmap, diverging) for `kind`, which may also be a variable of `binned`."""
    if kind in KINDS:
        var = KINDS[kind][0]
        if var not in binned:
            raise ConfigError(f"Map kind '{kind}' needs variable '{var}', which this result lacks "
                              f"(fit both NGB and IndepNGB for 'nll_diff').")
        return KINDS[kind]
    if kind in binned and binned[kind].dims == ("lat", "lon"):
        a = binned[kind].attrs
        label = f"{a.get('long_name', kind)} ({a.get('units', '')})"
        return kind, label, "viridis", False
    raise ConfigError(f"Unknown map kind '{kind}'; choose one of {', '.join(KINDS)} or a (lat, lon) variable of "
                      f"the binned result.")


def _limits(values, diverging: bool, kind: str):
    """Colour limits: symmetric about 0 for diverging kinds ([-1, 1] for rho)."""
    v = np.asarray(values, float)
    if kind == "rho":
        return -1.0, 1.0
    if diverging:
        m = np.nanpercentile(np.abs(v), 98) if np.isfinite(v).any() else 1.0
        m = float(m) if m > 0 else 1.0
        return -m, m
    if not np.isfinite(v).any():
        return 0.0, 1.0
    return float(np.nanmin(v)), float(np.nanmax(v)) if np.nanmax(v) > np.nanmin(v) else float(np.nanmin(v)) + 1.0


#: Section 5.4's Gulf Stream box (lon0, lon1, lat0, lat1); a grid with exactly these edges is drawn whole.
GULF_STREAM_BOX = (-80.0, -74.0, 31.0, 35.0)


def _extent(binned):
    """(lon0, lon1, lat0, lat1) of the bin edges."""
    return (float(binned["lon_edge"][0]), float(binned["lon_edge"][-1]), float(binned["lat_edge"][0]),
            float(binned["lat_edge"][-1]))


def data_extent(binned, margin: float = 0.08):
    """(lon0, lon1, lat0, lat1) around the bins holding test points, widened by `margin` of the span (at least one bin).

    The Gulf Stream zoom (a grid whose edges are the paper's box) and a grid with no test points keep the
    whole grid.
    """
    full = _extent(binned)
    if np.allclose(full, GULF_STREAM_BOX):
        return full
    n = np.asarray(binned["n_test"].values, float) if "n_test" in binned else None
    if n is None or not (n > 0).any():
        return full
    lon_e, lat_e = binned["lon_edge"].values, binned["lat_edge"].values
    jj, ii = np.nonzero(n > 0)  # (lat, lon) bins with data
    lo0, lo1 = float(lon_e[ii.min()]), float(lon_e[ii.max() + 1])
    la0, la1 = float(lat_e[jj.min()]), float(lat_e[jj.max() + 1])
    size = float(binned.attrs.get("bin_size_deg", lon_e[1] - lon_e[0] if lon_e.size > 1 else 1.0))
    pad = max(size, margin * max(lo1 - lo0, la1 - la0))
    # the pad stops at the globe's edges, but never inside a data bin (a grid aligned to its bin size may reach
    # past 180° or 90°)
    return (max(lo0 - pad, min(lo0, -180.0)), min(lo1 + pad, max(lo1, 180.0)), max(la0 - pad, min(la0, -90.0)),
            min(la1 + pad, max(la1, 90.0)))


def _geo_axes(fig, pos, extent, scale="50m"):
    """A PlateCarree GeoAxes with vendored land and coastline, lon/lat ticks and axis labels."""
    import cartopy.crs as ccrs
    import cartopy.feature as cfeature
    from cartopy.mpl.ticker import LatitudeFormatter, LongitudeFormatter

    configure_cartopy()
    ax = fig.add_subplot(*pos, projection=ccrs.PlateCarree())
    ax.set_extent(extent, crs=ccrs.PlateCarree())
    ax.add_feature(cfeature.LAND.with_scale(scale), facecolor="#d9d9d9", edgecolor="none", zorder=2)
    ax.coastlines(scale, linewidth=0.6, color="#4d4d4d", zorder=3)
    span = extent[1] - extent[0]
    step = 10 if span > 30 else (2 if span > 8 else 1)
    ax.set_xticks(np.arange(np.ceil(extent[0] / step) * step, extent[1] + 1e-9, step), crs=ccrs.PlateCarree())
    ax.set_yticks(np.arange(np.ceil(extent[2] / step) * step, extent[3] + 1e-9, step), crs=ccrs.PlateCarree())
    ax.xaxis.set_major_formatter(LongitudeFormatter())
    ax.yaxis.set_major_formatter(LatitudeFormatter())
    ax.set_xlabel("Longitude")
    ax.set_ylabel("Latitude")
    return ax


def land_bins(binned, scale: str = "50m") -> np.ndarray:
    """Boolean (lat, lon) array: the bins whose centre lies on the vendored Natural Earth land (shapely).

    A 2° bin on a coast is mostly sea and stays; one centred on land (a few test points of a drifter close
    inshore) is masked, and the land drawn over the bins hides the land part of the coastal ones.
    """
    from distviz.data import naturalearth as ne
    from distviz.viz.geo import _bbox

    lon, lat = np.meshgrid(np.asarray(binned["lon"].values, float), np.asarray(binned["lat"].values, float))
    # the land clipped to the map's box, the geometry the basemap draws (cached once for both); bins outside the
    # box hold no test points (data_extent covers them all)
    return np.asarray(ne.on_land(lon, lat, scale, bbox=_bbox(data_extent(binned))), dtype=bool)


def _bin_values(binned, var: str, scale: str) -> tuple[np.ndarray, np.ndarray]:
    """(values with NaN in empty bins and bins centred on land, the land mask) of variable `var`."""
    vals = binned[var].values.astype(float)
    if var == "n_test":
        vals = np.where(vals > 0, vals, np.nan)
    land = land_bins(binned, scale)
    return np.where(land, np.nan, vals), land


def masked_note(binned, land) -> str:
    """'' or one sentence: how many bins with test points are centred on land and not drawn, and their points."""
    n = np.asarray(binned["n_test"].values, float)
    hit = land & (n > 0)
    if not hit.any():
        return ""
    k, pts = int(hit.sum()), int(n[hit].sum())
    return f"{k} bin{'s' if k > 1 else ''} centred on land ({pts} test point{'s' if pts != 1 else ''}) not drawn"


def _wrap_label(text: str, width: int = 34) -> str:
    """A colour-bar label broken onto lines of at most `width` characters (it runs along the bar's height)."""
    import textwrap

    return "\n".join(textwrap.wrap(text, width)) or text


def _draw_kind(ax, fig, binned, kind, *, colorbar=True, title=None, scale="50m"):
    """Draw one binned map kind on GeoAxes `ax` (bins centred on land masked, `land_bins`)."""
    import cartopy.crs as ccrs
    from matplotlib.colors import TwoSlopeNorm

    var, label, cmap, div = _kind(binned, kind)
    vals, _ = _bin_values(binned, var, scale)
    lo, hi = _limits(vals, div, kind)
    norm = TwoSlopeNorm(vcenter=0.0, vmin=lo, vmax=hi) if div else None
    mesh = ax.pcolormesh(binned["lon_edge"].values, binned["lat_edge"].values, np.ma.masked_invalid(vals), cmap=cmap,
                         norm=norm, vmin=None if div else lo, vmax=None if div else hi,
                         transform=ccrs.PlateCarree(), zorder=1, shading="flat")
    if kind == "currents":
        lon, lat = np.meshgrid(binned["lon"].values, binned["lat"].values)
        u, v = binned["u_mean"].values, binned["v_mean"].values
        ok = np.isfinite(u) & np.isfinite(v)
        ref, k = arrow_scale(np.hypot(u[ok], v[ok]), _bin_size(binned))
        q = ax.quiver(lon[ok], lat[ok], u[ok], v[ok], transform=ccrs.PlateCarree(), zorder=4, color="white",
                      edgecolor="black", linewidth=0.4, angles="xy", scale_units="xy", scale=1.0 / k, width=0.005)
        # the key sits under the map's lower right corner, beside the axis label (above the axes it ran off the
        # top of the figure; inside, it covered bins); constrained layout keeps it inside the figure
        ax.quiverkey(q, 0.80, -0.135, ref, f"{ref:g} cm/s", labelpos="E", coordinates="axes", color="black",
                     fontproperties={"size": 8})
    if colorbar:   # beside its own map (constrained layout makes room), its label wrapped to the bar's height
        cb = fig.colorbar(mesh, ax=ax, shrink=0.85, pad=0.03)
        cb.set_label(_wrap_label(label), fontsize=8)
    ax.set_title(title or PANEL_TITLES.get(kind, var), fontsize=10)
    return mesh


def map_figure(binned, kind: str = "nll_diff", *, title: str | None = None, scale: str = "50m", figsize=(7.5, 5.5)):
    """One static cartopy map of a binned result (2x2 degree or the 0.5 degree zoom) for `kind`."""
    _require_static()
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=figsize, layout="constrained")
    ax = _geo_axes(fig, (1, 1, 1), data_extent(binned), scale)
    _draw_kind(ax, fig, binned, kind, title=title, scale=scale)
    note = masked_note(binned, land_bins(binned, scale))
    if note:
        fig.text(0.01, 0.0, note + ".", fontsize=7, color="#555555", ha="left", va="bottom")
    return fig


def summary_maps_figure(binned, *, title: str | None = None, scale: str = "50m", figsize=(13, 10)):
    """The four panels of Figure 4 (or 6 for the zoom): counts, NLL difference, rho, currents."""
    _require_static()
    import matplotlib.pyplot as plt

    # constrained layout: the title above the panel titles, each colour bar beside its own panel, nothing cut off
    fig = plt.figure(figsize=figsize, layout="constrained")
    for i, kind in enumerate(("count", "nll_diff", "rho", "currents")):
        ax = _geo_axes(fig, (2, 2, i + 1), data_extent(binned), scale)
        if KINDS[kind][0] in binned:
            _draw_kind(ax, fig, binned, kind, scale=scale)
        else:
            ax.set_title(f"{PANEL_TITLES[kind]}: not available", fontsize=10)
    note = masked_note(binned, land_bins(binned, scale))
    if title or note:
        import textwrap

        fig.suptitle("\n".join(textwrap.wrap(title or "", 110) + ([note + "."] if note else [])), fontsize=11)
    return fig


def _bin_size(binned) -> float:
    """The grid spacing in degrees (attribute bin_size_deg, else the first edge step)."""
    e = binned["lon_edge"].values
    return float(binned.attrs.get("bin_size_deg", e[1] - e[0] if e.size > 1 else 2.0))


def arrow_scale(speed, bin_size: float) -> tuple[float, float]:
    """(reference speed, degrees per cm/s) for current arrows: the 90th percentile of `speed`, rounded to 1, 2 or 5
    times a power of ten, is drawn 0.8 bins long, so typical arrows span most of a bin whatever the grid."""
    sp = np.asarray(speed, float)
    sp = sp[np.isfinite(sp) & (sp > 0)]
    q = float(np.percentile(sp, 90)) if sp.size else 1.0
    mag = 10.0 ** np.floor(np.log10(q))
    ref = float(min((m * mag for m in (1, 2, 5, 10)), key=lambda r: abs(np.log(r / q))))
    return ref, 0.8 * float(bin_size) / ref


def add_current_arrows(fig, binned, *, row=None, col=None):
    """Mean predicted currents (u_mean, v_mean per bin) as arrows scaled to the grid spacing (`arrow_scale`),
    white with a dark outline over the speed colours, longest arrows capped at 1.3 bins, plus a key arrow."""
    import plotly.graph_objects as go

    kw = {} if row is None else dict(row=row, col=col)
    lon, lat = np.meshgrid(binned["lon"].values, binned["lat"].values)
    u, v = binned["u_mean"].values, binned["v_mean"].values
    ok = np.isfinite(u) & np.isfinite(v)
    size = _bin_size(binned)
    sp = np.hypot(u[ok], v[ok])
    ref, k = arrow_scale(sp, size)
    shrink = np.minimum(1.0, 1.3 * size / np.maximum(k * sp, 1e-12))   # cap the longest arrows
    x0, y0 = lon[ok] - 0.5 * k * shrink * u[ok], lat[ok] - 0.5 * k * shrink * v[ok]   # centred on the bin
    x1, y1 = x0 + k * shrink * u[ok], y0 + k * shrink * v[ok]
    xs = np.stack([x0, x1, np.full_like(x0, np.nan)], 1).ravel()
    ys = np.stack([y0, y1, np.full_like(y0, np.nan)], 1).ravel()
    angle = 90 - np.degrees(np.arctan2(v[ok], u[ok]))
    for color, width in (("#1a1a1a", 4.0), ("white", 2.0)):
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", line=dict(color=color, width=width), hoverinfo="skip",
                                 name="current", showlegend=False), **kw)
    fig.add_trace(go.Scatter(x=x1, y=y1, mode="markers", marker=dict(symbol="arrow", angle=angle, size=11,
                  color="white", line=dict(color="#1a1a1a", width=1.2)), hoverinfo="skip", name="current",
                  showlegend=False, customdata=sp), **kw)
    fig.add_annotation(text=f"arrows: {ref:g} cm/s = 0.8 of a bin", xref="paper", yref="paper", x=1.0, y=1.0,
                       xanchor="right", yanchor="bottom", showarrow=False, font=dict(size=12))
    return fig


# ----------------------------------------------------------------------------------------------
# trajectory with prediction ellipses (Figure 5)


def pick_trajectory(predictions, days: int = 12) -> tuple[int, float]:
    """(drifter id, start time) of the held-out `days`-day window with the fastest mean observed speed."""
    lon, lat = predictions["lon"].values, predictions["lat"].values
    ids, t = predictions["id"].values, predictions["t"].values
    sp = np.hypot(predictions["u"].values, predictions["v"].values)
    best = (None, None, -np.inf)
    for i in np.unique(ids):
        m = np.flatnonzero(ids == i)
        m = m[np.argsort(t[m])]
        if m.size < days:
            continue
        c = np.concatenate([[0.0], np.cumsum(sp[m])])
        win = (c[days:] - c[:-days]) / days
        k = int(np.argmax(win))
        contiguous = t[m[k + days - 1]] - t[m[k]] <= days + 1
        if contiguous and win[k] > best[2] and np.isfinite(lon[m]).all() and np.isfinite(lat[m]).all():
            best = (int(i), float(t[m[k]]), float(win[k]))  # type: ignore[assignment]  # starts (None, None, -inf)
    if best[0] is None:
        i = int(ids[0])
        return i, float(t[ids == i].min())
    return best[0], best[1]


def trajectory_rows(predictions, drifter_id=None, start=None, days: int = 12) -> np.ndarray:
    """Row indices (time-sorted) of `days` days of one held-out drifter from `start` (default: its fastest stretch).

    Without `drifter_id` the drifter and window come from `pick_trajectory`.
    """
    from distviz.errors import DataError

    if drifter_id is None:
        drifter_id, s0 = pick_trajectory(predictions, days)
        start = s0 if start is None else start
    ids, t = predictions["id"].values, predictions["t"].values
    m = np.flatnonzero(ids == drifter_id)
    if m.size == 0:
        raise DataError(f"Drifter {drifter_id} is not in the test set; pick one of the held-out ids.")
    m = m[np.argsort(t[m])]
    if start is not None:
        return m[t[m] >= start][:days]
    if m.size > days:  # this drifter's fastest `days`-day stretch
        sp = np.hypot(predictions["u"].values[m], predictions["v"].values[m])
        c = np.concatenate([[0.0], np.cumsum(sp)])
        k = int(np.argmax(c[days:] - c[:-days]))
        return m[k:k + days]
    return m


def ellipse_points(mu, cov, level: float = 0.7, n: int = 60) -> np.ndarray:
    """Boundary of the level prediction region {(y-mu)^T S^-1 (y-mu) = chi2_2(level)} (eq. 6), shape (n, 2)."""
    q = -2.0 * np.log(1.0 - level)
    vals, vecs = np.linalg.eigh(np.asarray(cov, float))
    ang = np.linspace(0, 2 * np.pi, n)
    circ = np.stack([np.cos(ang), np.sin(ang)], 1) * np.sqrt(q * np.maximum(vals, 0))
    return np.asarray(mu, float) + circ @ vecs.T


def trajectory_ellipses_figure(predictions, drifter_id=None, *, start=None, days: int = 12, every: int = 2,
                               level: float = 0.7, methods=("NGB", "IndepNGB"), scale: str = "50m",
                               figsize=(12, 5.5)):
    """Figure 5: a held-out trajectory with each method's `level` prediction ellipses every `every` days.

    As in the paper, a predicted velocity is drawn as the displacement after one day at that velocity
    (1 cm/s -> 0.864 km), from the drifter's position; axes are easting/northing (km) of a transverse
    Mercator projection centred on the trajectory.
    """
    _require_static()
    import cartopy.crs as ccrs
    import matplotlib.pyplot as plt
    from matplotlib.patches import Polygon
    from matplotlib.ticker import FuncFormatter

    from distviz.data import naturalearth as ne
    from distviz.viz.palette import OKABE_ITO

    configure_cartopy()
    rows = trajectory_rows(predictions, drifter_id, start, days)
    did = int(predictions["id"].values[rows[0]])
    lon, lat = predictions["lon"].values[rows], predictions["lat"].values[rows]
    proj = ccrs.TransverseMercator(central_longitude=float(np.mean(lon)), central_latitude=float(np.mean(lat)))
    xy = proj.transform_points(ccrs.PlateCarree(), lon, lat)[:, :2]
    fig = plt.figure(figsize=figsize)
    day_m = 86400.0 / 100.0  # metres travelled in one day per cm/s
    colors = {"NGB": OKABE_ITO["green"], "IndepNGB": OKABE_ITO["purple"]}
    pad = 60e3
    for k, m in enumerate(methods):
        ax = fig.add_subplot(1, len(methods), k + 1, projection=proj)
        if f"mean_{m}" not in predictions:
            ax.set_title(f"{m}: not fitted")
            continue
        mu = predictions[f"mean_{m}"].values[rows] * day_m
        S = predictions[f"cov_{m}"].values[rows] * day_m**2
        ends = xy + mu
        allx = np.concatenate([xy[:, 0], ends[:, 0]])
        ally = np.concatenate([xy[:, 1], ends[:, 1]])
        half = 0.5 * max(np.ptp(allx), np.ptp(ally)) + pad
        cx, cy = 0.5 * (allx.min() + allx.max()), 0.5 * (ally.min() + ally.max())
        ax.set_extent([cx - half, cx + half, cy - half * 0.9, cy + half * 0.9], crs=proj)
        # land and coastline clipped to the trajectory's surroundings first: reprojecting the whole 50m
        # layers to a transverse Mercator is slow, and they are the same vendored Natural Earth files
        box = (float(lon.min()) - 12, float(lon.max()) + 12, float(lat.min()) - 9, float(lat.max()) + 9)
        ax.add_geometries([ne.geometry("land", scale, box)], crs=ccrs.PlateCarree(), facecolor="#d9d9d9",
                          edgecolor="none", zorder=0)
        ax.add_geometries([ne.geometry("coastline", scale, box)], crs=ccrs.PlateCarree(), facecolor="none",
                          edgecolor="#4d4d4d", linewidth=0.6, zorder=1)
        ax.plot(xy[:, 0], xy[:, 1], "-o", color=OKABE_ITO["sky"], alpha=0.6, ms=3, lw=1.5, zorder=2,
                label="trajectory (daily)")
        col = colors.get(m, OKABE_ITO["blue"])
        for j in range(0, len(rows), max(1, int(every))):
            pts = ellipse_points(ends[j], S[j], level)
            ax.add_patch(Polygon(pts, closed=True, facecolor=col, alpha=0.25, edgecolor=col, lw=1.2, zorder=3))
            ax.annotate("", xy=ends[j], xytext=xy[j], arrowprops=dict(arrowstyle="->", color="black", lw=0.8),
                        zorder=4)
        ax.set_title(f"{'ab'[k] if k < 2 else k}) {m}: {int(level * 100)}% prediction regions", fontsize=10)
        step = 100e3 if half < 400e3 else 200e3
        ax.set_xticks(np.arange(np.ceil((cx - half) / step), np.floor((cx + half) / step) + 1) * step)
        ax.set_yticks(np.arange(np.ceil((cy - half * 0.9) / step), np.floor((cy + half * 0.9) / step) + 1) * step)
        fmt = FuncFormatter(lambda v, _: f"{v / 1e3:.0f}")
        ax.xaxis.set_major_formatter(fmt)
        ax.yaxis.set_major_formatter(fmt)
        ax.set_xlabel("Easting (km)")
        ax.set_ylabel("Northing (km)")
        if k == 0:
            ax.legend(loc="lower right", fontsize=8)
    fig.suptitle(f"Held-out drifter {did}: {len(rows)} days; velocity predictions drawn as 1-day displacements, "
                 f"every {every} days", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    return fig


# ----------------------------------------------------------------------------------------------
# plotly (interactive, for the app)


#: the note under the NLL-difference map's title: how many bins are outlined and by which rule
SIG_NOTE = ("outlined: {n} bins where |mean| > 2 s.e. (s.e. of the mean paired difference, clustered by drifter; "
            "a bin needs {k} drifters)")


def se_hover_text(binned) -> list[list[str]]:
    """Per-bin hover lines of the NLL difference's uncertainty: clustered s.e., drifters, significance."""
    se, g = binned["nll_diff_se"].values, binned["n_drifters"].values
    sig = binned["nll_diff_sig"].values if "nll_diff_sig" in binned else np.zeros(se.shape, bool)
    return [[(f"s.e. {s:.3g} nats ({int(k)} drifters)" + (", |mean| > 2 s.e." if z else "")) if np.isfinite(s)
             else f"no s.e. ({int(k)} drifter{'' if k == 1 else 's'})" for s, k, z in zip(rs, rg, rz)]
            for rs, rg, rz in zip(se, g, sig)]


def outline_paths(binned, mask) -> tuple[list, list]:
    """(x, y) of closed rectangles around the bins where `mask` (lat, lon) is true, None between rectangles."""
    lon_e, lat_e = binned["lon_edge"].values, binned["lat_edge"].values
    xs: list = []
    ys: list = []
    for j, i in zip(*np.nonzero(mask)):
        x0, x1, y0, y1 = float(lon_e[i]), float(lon_e[i + 1]), float(lat_e[j]), float(lat_e[j + 1])
        xs += [x0, x1, x1, x0, x0, None]
        ys += [y0, y0, y1, y1, y0, None]
    return xs, ys


def add_significance_outlines(fig, binned, land=None) -> int:
    """Outline in black (white underneath, so it shows on both ends of the diverging colours; no colour carries
    meaning) the bins where the NLL difference is significant (variable nll_diff_sig); returns their number."""
    import plotly.graph_objects as go

    sig = np.asarray(binned["nll_diff_sig"].values, bool)
    if land is not None:
        sig = sig & ~land
    xs, ys = outline_paths(binned, sig)
    for color, width in (("white", 4.0), ("black", 2.0)):   # said in the title's note, not in a legend
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", line=dict(color=color, width=width), hoverinfo="skip",
                                 name="|mean| > 2 s.e.", showlegend=False))
    return int(sig.sum())


def map_figure_plotly(binned, kind: str = "nll_diff", *, title: str | None = None, scale: str = "50m"):
    """Interactive binned map: plotly heatmap over lon/lat with Natural Earth land and coastline traces."""
    import plotly.graph_objects as go

    from distviz.viz.geo import add_basemap
    from distviz.viz.style import presenter_figure, presenter_on

    var, label, cmap, div = _kind(binned, kind)
    vals, land = _bin_values(binned, var, scale)
    lo, hi = _limits(vals, div, kind)
    n = np.asarray(binned["n_test"].values, float)
    z = np.where(np.isfinite(vals), vals, None)  # type: ignore[call-overload]
    what = HOVER_NAMES.get(kind, var)
    se_text = se_hover_text(binned) if var == "nll_diff" and "nll_diff_se" in binned else None
    fig = go.Figure(go.Heatmap(
        x=binned["lon"].values, y=binned["lat"].values, z=z, colorscale=_PLOTLY_SCALES.get(cmap, "Viridis"),
        zmin=lo, zmax=hi, zmid=0.0 if div else None, hoverongaps=False,   # an empty or masked bin has no hover
        customdata=[[int(v) for v in row] for row in n],   # plain integers: the bin count on hover
        text=se_text, colorbar=dict(title=dict(text=label, side="right"), len=0.85),
        hovertemplate=("test points in the bin: %{customdata}<br>lon %{x:.1f}°, lat %{y:.1f}°"
                       + ("" if var == "n_test" else f"<br>{what}: %{{z:.3g}}")
                       + ("<br>%{text}" if se_text is not None else "") + "<extra></extra>")))
    add_basemap(fig, data_extent(binned), scale)
    if kind == "currents":
        add_current_arrows(fig, binned)
    n_sig = add_significance_outlines(fig, binned, land) if se_text is not None else None
    note = masked_note(binned, land)   # under the title (inside the map it covered bins)
    head = title or PANEL_TITLES.get(kind, var)
    if n_sig is not None:
        k = int(binned["nll_diff_se"].attrs.get("min_drifters", 2))
        note = "; ".join(x for x in (SIG_NOTE.format(n=n_sig, k=k), note) if x)
    # the note in lines that fit beside the chart's toolbar (plotly never wraps a title): presenter mode's larger
    # text on a chart beside the step's panel holds about half as many characters a line
    present = presenter_on()
    lines = textwrap.wrap(note, NOTE_CHARS_PRESENTER if present else NOTE_CHARS) if note else []
    fig.update_layout(title=head + "".join(f"<br><sup>{ln}</sup>" for ln in lines),
                      margin=dict(l=60, r=20, t=50 + (30 if present else 22) * len(lines), b=50), plot_bgcolor="white",
                      height=600)
    return presenter_figure(fig)  # larger text and thicker lines in presenter mode (distviz.viz.style)


def trajectory_ellipses_plotly(predictions, drifter_id=None, *, start=None, days: int = 12, every: int = 2,
                               level: float = 0.7, methods=("NGB", "IndepNGB"), scale: str = "50m",
                               plot_width_px: int = 860):
    """Interactive Figure 5: trajectory and both models' ellipses (1-day displacements) on equal-aspect km axes.

    Axes are km east / north of the trajectory's mean position (`distviz.viz.geo.km_from_lonlat`), fitted to the
    trajectory and ellipses with a small pad; the figure's height follows the data's aspect for a plot area about
    `plot_width_px` wide, so the plot has no wide empty margins. Hover shows lon / lat.
    """
    import plotly.graph_objects as go

    from distviz.viz.geo import KM_PER_DEG, km_lines, lat_label, lon_label
    from distviz.viz.palette import OKABE_ITO, hex_to_rgba
    from distviz.viz.style import presenter_figure

    rows = trajectory_rows(predictions, drifter_id, start, days)
    did = int(predictions["id"].values[rows[0]])
    lon, lat = predictions["lon"].values[rows].astype(float), predictions["lat"].values[rows].astype(float)
    origin = (float(np.mean(lon)), float(np.mean(lat)))
    coslat = np.cos(np.deg2rad(origin[1]))
    x, y = KM_PER_DEG * coslat * (lon - origin[0]), KM_PER_DEG * (lat - origin[1])
    km_day = 0.864  # km travelled in one day per cm/s
    hover = [f"day {j + 1}: {lon_label(round(a, 2))}, {lat_label(round(b, 2))}" for j, (a, b) in enumerate(zip(lon, lat))]
    traces = [go.Scatter(x=x, y=y, mode="lines+markers", name="trajectory (daily)", text=hover,
                         hovertemplate="%{text}<extra></extra>", line=dict(color=OKABE_ITO["sky"], width=2.5),
                         marker=dict(size=6))]
    colors = {"NGB": OKABE_ITO["green"], "IndepNGB": OKABE_ITO["purple"]}
    allx, ally = [x], [y]
    for m in methods:
        if f"mean_{m}" not in predictions:
            continue
        col = colors.get(m, OKABE_ITO["blue"])
        mu = predictions[f"mean_{m}"].values[rows]
        S = predictions[f"cov_{m}"].values[rows]
        xs, ys = [], []
        for j in range(0, len(rows), max(1, int(every))):
            pts = ellipse_points(mu[j] * km_day, S[j] * km_day**2, level) + [x[j], y[j]]
            xs += [pts[:, 0], [np.nan]]   # NaN between ellipses: a gap
            ys += [pts[:, 1], [np.nan]]
            allx.append(pts[:, 0])
            ally.append(pts[:, 1])
        traces.append(go.Scatter(x=np.concatenate(xs), y=np.concatenate(ys), mode="lines", fill="toself",
                                 fillcolor=hex_to_rgba(col, 0.2),
                                 line=dict(color=col, width=1.5), name=f"{m} {int(level * 100)}% region",
                                 hoverinfo="skip"))
    ax, ay = np.concatenate(allx), np.concatenate(ally)
    x0, x1, y0, y1 = float(ax.min()), float(ax.max()), float(ay.min()), float(ay.max())
    pad = max(0.06 * max(x1 - x0, y1 - y0), 15.0)
    x0, x1, y0, y1 = x0 - pad, x1 + pad, y0 - pad, y1 + pad
    margin = dict(l=70, r=20, t=60, b=110)   # legend under the plot
    plot_h = float(np.clip(plot_width_px * (y1 - y0) / (x1 - x0), 300.0, 560.0))
    want = (y1 - y0) / (x1 - x0)
    have = plot_h / plot_width_px
    if have > want:  # taller plot area than the data: widen the y range around the data (equal km per pixel)
        mid, half = 0.5 * (y0 + y1), 0.5 * (x1 - x0) * have
        y0, y1 = mid - half, mid + half
    else:
        mid, half = 0.5 * (x0 + x1), 0.5 * (y1 - y0) / have
        x0, x1 = mid - half, mid + half
    back = (origin[0] + x0 / (KM_PER_DEG * coslat) - 1, origin[0] + x1 / (KM_PER_DEG * coslat) + 1,
            origin[1] + y0 / KM_PER_DEG - 1, origin[1] + y1 / KM_PER_DEG + 1)   # land drawn past the axes
    lx, ly = km_lines("land", back, origin, scale)
    cx, cy = km_lines("coastline", back, origin, scale)

    base = [go.Scatter(x=lx, y=ly, mode="lines", fill="toself", fillcolor="#d9d9d9", line=dict(width=0),   # NaN: gaps
                       hoverinfo="skip", name="land", showlegend=False),
            go.Scatter(x=cx, y=cy, mode="lines", line=dict(width=0.8, color="#4d4d4d"), hoverinfo="skip",
                       name="coastline", showlegend=False)]
    fig = go.Figure(base + traces)
    fig.update_xaxes(range=[x0, x1], title_text=f"km east of {lon_label(round(origin[0], 1))}", showgrid=True,
                     gridcolor="#eeeeee", zeroline=False, constrain="range")
    fig.update_yaxes(range=[y0, y1], title_text=f"km north of {lat_label(round(origin[1], 1))}", showgrid=True,
                     gridcolor="#eeeeee", zeroline=False, scaleanchor="x", scaleratio=1.0, constrain="range")
    fig.update_layout(title=f"Held-out drifter {did}: {len(rows)} days, {int(level * 100)}% prediction regions "
                            f"(1-day displacements)", plot_bgcolor="white", margin=margin,
                      height=int(plot_h + margin["t"] + margin["b"]),
                      legend=dict(orientation="h", yanchor="top", y=-0.18, xanchor="left", x=0.0))
    return presenter_figure(fig)  # larger text and thicker lines in presenter mode (distviz.viz.style)
