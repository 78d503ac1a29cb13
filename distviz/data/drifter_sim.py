"""Seeded SYNTHETIC North Atlantic drifters: analytic Gulf-Stream-like flow, analytic winds, spatially varying noise.

This is a documented stand-in for the processed Global Drifter Program table of O'Malley et al.
(Zenodo 5644972, Section 5 and App. A of the multivariate NGBoost paper), small enough to ship.
Nothing here is observed data.

Model (all velocities in m/s):

* **Geostrophic flow** ``g(x) = (u_av, v_av)`` from a streamfunction psi on a 0.1 degree grid,
  ``u = -(1/R) d psi / d lat``, ``v = (1/(R cos lat)) d psi / d lon`` (non-divergent), the sum of
  - a western-boundary jet along a Gulf-Stream-like path (Florida Straits, along the shelf to Cape
    Hatteras, separating near 35N and heading east-north-east to 40W as the North Atlantic Current),
    ``psi_jet = -Q (sqrt(pi)/2) erf(n / w(s))`` with signed cross-path distance n, constant transport
    Q = U w (core speed 1.4-1.7 m/s upstream, ~0.4 m/s at 40W as the half-width w grows downstream);
  - a wind-driven subtropical gyre (westward North Equatorial Current in the south, southward Sverdrup
    interior, eastward flow near 35-40N, western boundary layer);
  - a cyclonic subpolar gyre north of 45N with a southward Labrador-like boundary current;
  - an anticyclonic eastern recirculation cell centred near (45W, 33N).
* **Winds** ``W = (Wx, Wy)``: trades and westerlies with a seasonal cycle plus eastward-travelling
  synoptic waves with seeded phases; **wind stress** ``T = rho_a C_d |W| W`` (rho_a = 1.22 kg/m^3,
  C_d = 1.3e-3).
* **Drifter velocity** ``Y = g(x) + E(T, lat) + 0.004 W + eps`` with the Ekman drift E (stress rotated 45
  degrees to the right, magnitude 0.5 (sin 30 / sin lat) m/s per Pa) and
  ``eps ~ N(0, Sigma(x, t))``, ``Sigma = R(theta) diag(s_a^2, s_c^2) R(theta)^T``, theta the direction of g,
  ``s_a = 0.055 + 0.004 |W| + 0.22 j``, ``s_c = 0.055 + 0.004 |W| + 0.03 j``, ``j = min(|g|, 1.6)``:
  strongly correlated along-stream noise in the jet, nearly isotropic noise in the interior.
  The true conditional mean and covariance are stored (``true_*``) so an oracle NLL can be computed.
* **Trajectories**: drifters start in the Gulf Stream source region or anywhere over open ocean,
  live 30 + Exp(120) days, are advected (midpoint rule, four 6-hour steps per day, noise held over the
  day) and stop when they leave 83W-40W, 15N-55N or reach Natural Earth land. One row per day.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from distviz.errors import ConfigError

R_EARTH = 6.371e6
DEG = np.pi / 180.0
BBOX = (-83.0, -40.0, 15.0, 55.0)
_GRID = (-87.0, -36.0, 11.0, 59.0, 0.1)  # lon0, lon1, lat0, lat1, step of the flow grid
_JET_NODES = np.array([
    (-87.0, 23.6), (-83.0, 24.0), (-80.6, 24.9), (-79.85, 26.5), (-79.7, 28.5), (-79.4, 30.3), (-78.5, 31.7),
    (-77.0, 33.1), (-75.3, 35.2), (-72.0, 36.8), (-68.0, 38.3), (-64.0, 39.3), (-60.0, 40.0), (-55.0, 40.9),
    (-50.0, 42.0), (-46.5, 43.8), (-43.5, 46.0), (-40.0, 48.3), (-35.0, 50.8)])
T0_DAYS = 16436.0  # 2015-01-01 in days since 1970-01-01


@dataclass(frozen=True)
class SimConfig:
    """Settings of the synthetic drifter generator (defaults produce the shipped sample)."""

    n_drifters: int = 420
    seed: int = 20240607
    frac_gulf_stream: float = 0.4
    mean_life_days: float = 120.0
    max_life_days: int = 400
    start_span_days: float = 730.0


# ----------------------------------------------------------------------------------------------
# flow field


def _project(lon, lat):
    """Azimuthal equidistant coordinates (km) centred at (62W, 36N), used for distances to the jet path."""
    lam = (np.asarray(lon) + 62.0) * DEG
    phi, phi0 = np.asarray(lat) * DEG, 36.0 * DEG
    c = np.arccos(np.clip(np.sin(phi0) * np.sin(phi) + np.cos(phi0) * np.cos(phi) * np.cos(lam), -1, 1))
    k = np.where(c > 1e-12, c / np.maximum(np.sin(c), 1e-12), 1.0)
    x = k * np.cos(phi) * np.sin(lam)
    y = k * (np.cos(phi0) * np.sin(phi) - np.sin(phi0) * np.cos(phi) * np.cos(lam))
    return x * R_EARTH / 1e3, y * R_EARTH / 1e3


def _jet_path(step_km: float = 4.0):
    """Points (km), unit tangents, arc length (km) and longitude of the smoothed jet axis, every `step_km`."""
    from scipy.interpolate import splev, splprep

    tck, _ = splprep([_JET_NODES[:, 0], _JET_NODES[:, 1]], s=0.02, k=3)
    lo, la = splev(np.linspace(0, 1, 40001), tck)
    x, y = _project(lo, la)
    s = np.concatenate([[0.0], np.cumsum(np.hypot(np.diff(x), np.diff(y)))])
    ss = np.arange(0.0, s[-1], step_km)
    x, y, lo = np.interp(ss, s, x), np.interp(ss, s, y), np.interp(ss, s, lo)
    tx, ty = np.gradient(x), np.gradient(y)
    nrm = np.hypot(tx, ty)
    return np.column_stack([x, y]), np.column_stack([tx / nrm, ty / nrm]), ss, lo


def _jet_width(lon_on_path: np.ndarray) -> np.ndarray:
    """Jet half-width w (km) along the path: 48 km in the Florida Current, 40 km at Cape Hatteras, widening after.

    The transport U w is held constant (U = 1.7 m/s at w = 40 km), so the core speed falls from
    1.7 m/s at separation to about 0.4 m/s at 40W and psi has no jumps between distant parts of the path.
    """
    sep = lon_on_path > -75.3  # downstream of the separation point near 35N
    d = np.clip(lon_on_path + 75.3, 0.0, None) * 90.0  # rough km downstream of separation
    return np.where(sep, 40.0 + 0.045 * d, 40.0 + 8.0 * np.clip((-77.0 - lon_on_path) / 3.0, 0.0, 1.0))


JET_TRANSPORT = 1.7 * 40e3  # U w in m^2/s


def _bump(q):
    """sin^2(pi q) on [0, 1], zero outside: a smooth meridional envelope."""
    q = np.clip(q, 0.0, 1.0)
    return np.sin(np.pi * q) ** 2


@lru_cache(maxsize=1)
def flow_grid():
    """Streamfunction (m^2/s) and geostrophic velocity (m/s) on the flow grid: (lon, lat, psi, u, v)."""
    from scipy.spatial import cKDTree
    from scipy.special import erf

    lo0, lo1, la0, la1, h = _GRID
    lon = np.arange(lo0, lo1 + h / 2, h)
    lat = np.arange(la0, la1 + h / 2, h)
    LON, LAT = np.meshgrid(lon, lat)  # (nlat, nlon)
    # jet
    pts, tan, s, plon = _jet_path()
    gx, gy = _project(LON.ravel(), LAT.ravel())
    dist, k = cKDTree(pts).query(np.column_stack([gx, gy]))
    rx, ry = gx - pts[k, 0], gy - pts[k, 1]
    n = tan[k, 0] * ry - tan[k, 1] * rx  # signed distance, positive to the left of the flow (km)
    w = _jet_width(plon[k])
    psi_jet = -JET_TRANSPORT * (np.sqrt(np.pi) / 2) * erf(n / w)
    psi = psi_jet.reshape(LON.shape)
    # subtropical gyre: clockwise (psi maximum), Sverdrup interior, western boundary layer
    lon_w = np.interp(LAT, [10, 25, 30, 33, 35, 40, 44, 50], [-84, -80.5, -81.3, -79.0, -76.0, -74.0, -68.0, -60.0])
    lon_e = -10.0
    east = np.clip((lon_e - LON) / (lon_e - lon_w), 0.0, 1.0)
    west = 1.0 - np.exp(-np.clip(LON - lon_w, 0.0, None) / 4.0)
    psi += 2.2e5 * _bump((LAT - 10.0) / 34.0) * east * west
    # cyclonic subpolar gyre with a southward western boundary current
    lon_sp = np.interp(LAT, [44, 47, 50, 55, 60], [-60.0, -53.5, -55.0, -57.0, -60.0])
    west_sp = 1.0 - np.exp(-np.clip(LON - lon_sp, 0.0, None) / 3.0)
    psi -= 0.9e5 * _bump((LAT - 43.0) / 19.0) * west_sp * np.clip((0.0 - LON) / 40.0, 0, 1)
    # eastern anticyclonic recirculation cell
    psi += 5.5e4 * np.exp(-((LON + 45.0) / 7.0) ** 2 - ((LAT - 33.0) / 5.0) ** 2)
    # velocities: u = -(1/R) dpsi/dphi, v = 1/(R cos phi) dpsi/dlambda
    dpsi_dlat = np.gradient(psi, h * DEG, axis=0)
    dpsi_dlon = np.gradient(psi, h * DEG, axis=1)
    u = -dpsi_dlat / R_EARTH
    v = dpsi_dlon / (R_EARTH * np.cos(LAT * DEG))
    return lon, lat, psi, u, v


def geostrophic(lon, lat):
    """Geostrophic velocity (u_av, v_av) in m/s at the given positions (bilinear on the flow grid)."""
    glon, glat, _, gu, gv = flow_grid()
    lo0, h = glon[0], glon[1] - glon[0]
    la0 = glat[0]
    fx = np.clip((np.asarray(lon) - lo0) / h, 0, glon.size - 1.000001)
    fy = np.clip((np.asarray(lat) - la0) / h, 0, glat.size - 1.000001)
    i, j = fx.astype(int), fy.astype(int)
    ax, ay = fx - i, fy - j

    def interp(F):
        return ((1 - ax) * (1 - ay) * F[j, i] + ax * (1 - ay) * F[j, i + 1]
                + (1 - ax) * ay * F[j + 1, i] + ax * ay * F[j + 1, i + 1])

    return interp(gu), interp(gv)


# ----------------------------------------------------------------------------------------------
# winds, Ekman drift and noise


def _storm_waves(seed: int, k: int = 8):
    """Seeded parameters of eastward-travelling synoptic wind waves (amplitude, wavenumbers, speed, phases)."""
    rng = np.random.default_rng([seed, 7])
    return dict(kx=2 * np.pi / rng.uniform(14.0, 30.0, k), ky=2 * np.pi / rng.uniform(10.0, 25.0, k)
                * rng.choice([-1, 1], k), c=rng.uniform(6.0, 12.0, k), ph=rng.uniform(0, 2 * np.pi, (2, k)),
                amp=rng.uniform(1.5, 3.0, k))


def wind(lon, lat, t_days, seed: int = SimConfig.seed):
    """Analytic 10 m wind (Wx, Wy) in m/s: trades, westerlies, seasonal cycle and travelling synoptic waves."""
    lon, lat, t = (np.asarray(a, float) for a in (lon, lat, t_days))
    doy = np.mod(t, 365.25) / 365.25
    season = 1.0 + 0.35 * np.cos(2 * np.pi * (doy - 0.05))
    wx = season * (-7.0 * np.exp(-((lat - 15.0) / 9.0) ** 2) + 8.5 * np.exp(-((lat - 48.0) / 10.0) ** 2))
    wy = season * (-2.5 * np.exp(-((lat - 16.0) / 8.0) ** 2) + 2.0 * np.exp(-((lat - 42.0) / 10.0) ** 2))
    p = _storm_waves(seed)
    env = 0.5 + 1.5 * np.exp(-((lat - 45.0) / 12.0) ** 2)
    arg = (p["kx"] * (lon[..., None] - p["c"] * t[..., None]) + p["ky"] * lat[..., None])
    wx = wx + env * np.sum(p["amp"] * np.cos(arg + p["ph"][0]), axis=-1)
    wy = wy + env * np.sum(p["amp"] * np.sin(arg + p["ph"][1]), axis=-1)
    return wx, wy


def wind_stress(wx, wy):
    """Bulk wind stress (Tx, Ty) in Pa: rho_a C_d |W| W with rho_a = 1.22 kg/m^3, C_d = 1.3e-3."""
    sp = np.hypot(wx, wy)
    return 1.22 * 1.3e-3 * sp * wx, 1.22 * 1.3e-3 * sp * wy


def mean_and_cov(lon, lat, t_days, seed: int = SimConfig.seed):
    """Features and the true conditional law of the velocity: dict of arrays (Tx..v_av, mean u/v, covariance)."""
    lon, lat, t = (np.asarray(a, float) for a in (lon, lat, t_days))
    ug, vg = geostrophic(lon, lat)
    wx, wy = wind(lon, lat, t, seed)
    tx, ty = wind_stress(wx, wy)
    k = 0.5 * np.sin(30 * DEG) / np.sin(np.clip(lat, 10.0, 90.0) * DEG)
    c45 = np.sqrt(0.5)
    ue = k * c45 * (tx + ty)
    ve = k * c45 * (-tx + ty)
    mu_u = ug + ue + 0.004 * wx
    mu_v = vg + ve + 0.004 * wy
    sp = np.hypot(ug, vg)
    j = np.minimum(sp, 1.6)
    ws = np.hypot(wx, wy)
    sa = 0.055 + 0.004 * ws + 0.22 * j
    sc = 0.055 + 0.004 * ws + 0.03 * j
    th = np.arctan2(vg, ug)
    c, s = np.cos(th), np.sin(th)
    cuu = sa**2 * c**2 + sc**2 * s**2
    cvv = sa**2 * s**2 + sc**2 * c**2
    cuv = (sa**2 - sc**2) * c * s
    return dict(Tx=tx, Ty=ty, Wx=wx, Wy=wy, u_av=ug, v_av=vg, true_u_mean=mu_u, true_v_mean=mu_v,
                true_cov_uu=cuu, true_cov_uv=cuv, true_cov_vv=cvv)


# ----------------------------------------------------------------------------------------------
# trajectories


def _in_box(lon, lat):
    """Whether positions lie inside the study box 83W-40W, 15N-55N."""
    return (lon >= BBOX[0]) & (lon <= BBOX[1]) & (lat >= BBOX[2]) & (lat <= BBOX[3])


def _start_positions(rng, n: int, frac_gs: float):
    """Seeded deployment positions: a share near the upstream jet axis, the rest uniform over open ocean."""
    from distviz.data import naturalearth as ne

    n_gs = int(round(frac_gs * n))
    pts: list[np.ndarray] = []
    # Gulf Stream source region: along the upstream path nodes (Florida Straits to beyond Hatteras)
    from scipy.interpolate import splev, splprep

    tck, _ = splprep([_JET_NODES[:, 0], _JET_NODES[:, 1]], s=0.0, k=3)
    while sum(len(p) for p in pts) < n_gs:
        u = rng.uniform(0.1, 0.45, 4 * n_gs)
        lo, la = splev(u, tck)
        lo = lo + rng.normal(0, 0.45, lo.size)
        la = la + rng.normal(0, 0.3, la.size)
        ok = _in_box(lo, la) & ~ne.on_land(lo, la)
        pts.append(np.column_stack([lo[ok], la[ok]]))
    gs = np.vstack(pts)[:n_gs]
    pts = []
    while sum(len(p) for p in pts) < n - n_gs:
        lo = rng.uniform(BBOX[0], BBOX[1], 4 * n)
        la = rng.uniform(BBOX[2], BBOX[3], 4 * n)
        ok = ~ne.on_land(lo, la)
        pts.append(np.column_stack([lo[ok], la[ok]]))
    rest = np.vstack(pts)[: n - n_gs]
    return np.vstack([gs, rest])


def simulate_drifters(config: SimConfig | None = None, **overrides):
    """Simulate daily synthetic drifters; returns an xarray.Dataset over `obs` in the processed-table layout.

    Same ``config`` (and seed) gives bit-identical output. Keyword overrides replace fields of the
    default :class:`SimConfig` (e.g. ``simulate_drifters(n_drifters=40, seed=1)``).
    """
    import xarray as xr

    from distviz.data import naturalearth as ne

    cfg = config or SimConfig()
    if overrides:
        bad = [k for k in overrides if k not in SimConfig.__dataclass_fields__]
        if bad:
            raise ConfigError(f"Unknown generator setting(s) {', '.join(bad)}; use {', '.join(SimConfig.__dataclass_fields__)}.")
        cfg = SimConfig(**{**cfg.__dict__, **overrides})
    if cfg.n_drifters < 1 or not 0 <= cfg.frac_gulf_stream <= 1 or cfg.mean_life_days <= 0:
        raise ConfigError("Generator needs n_drifters >= 1, 0 <= frac_gulf_stream <= 1 and mean_life_days > 0.")
    rng = np.random.default_rng(cfg.seed)
    n = cfg.n_drifters
    start = _start_positions(rng, n, cfg.frac_gulf_stream)
    t0 = T0_DAYS + np.floor(rng.uniform(0, cfg.start_span_days, n))
    life = np.minimum(30 + np.floor(rng.exponential(cfg.mean_life_days, n)), cfg.max_life_days).astype(int)
    ids = np.arange(n) + 100001
    lon, lat = start[:, 0].copy(), start[:, 1].copy()
    alive = np.ones(n, dtype=bool)
    rows = []
    deg_m = 1.0 / (R_EARTH * DEG)
    for day in range(int(life.max())):
        alive &= day < life
        if not alive.any():
            break
        a = np.flatnonzero(alive)
        t = t0[a] + day
        f = mean_and_cov(lon[a], lat[a], t, cfg.seed)
        z = rng.standard_normal((a.size, 2))
        l11 = np.sqrt(f["true_cov_uu"])
        l21 = f["true_cov_uv"] / l11
        l22 = np.sqrt(np.maximum(f["true_cov_vv"] - l21**2, 1e-12))
        eu = l11 * z[:, 0]
        ev = l21 * z[:, 0] + l22 * z[:, 1]
        rows.append(dict(f, lon=lon[a].copy(), lat=lat[a].copy(), t=t, id=ids[a], u=f["true_u_mean"] + eu,
                         v=f["true_v_mean"] + ev))
        # advect over the day: midpoint rule, four 6-hour steps, noise held over the day
        x, y = lon[a].copy(), lat[a].copy()
        dt = 86400.0 / 4
        for q in range(4):
            tq = t + q / 4.0
            g = mean_and_cov(x, y, tq, cfg.seed)
            xm = x + 0.5 * dt * (g["true_u_mean"] + eu) * deg_m / np.cos(y * DEG)
            ym = y + 0.5 * dt * (g["true_v_mean"] + ev) * deg_m
            g = mean_and_cov(xm, ym, tq + 1 / 8.0, cfg.seed)
            x = x + dt * (g["true_u_mean"] + eu) * deg_m / np.cos(ym * DEG)
            y = y + dt * (g["true_v_mean"] + ev) * deg_m
        lon[a], lat[a] = x, y
        gone = ~_in_box(x, y) | ne.on_land(x, y)
        alive[a[gone]] = False
    cols = {k: np.concatenate([r[k] for r in rows]) for k in rows[0]}
    order = np.lexsort((cols["t"], cols["id"]))
    cols = {k: v[order] for k, v in cols.items()}
    names = ("Tx", "Ty", "Wx", "Wy", "u_av", "v_av", "lon", "lat", "t", "u", "v")
    units = dict(Tx="Pa", Ty="Pa", Wx="m s-1", Wy="m s-1", u_av="m s-1", v_av="m s-1", lon="degrees_east",
                 lat="degrees_north", t="days since 1970-01-01", u="m s-1", v="m s-1")
    long = dict(Tx="eastward wind stress", Ty="northward wind stress", Wx="eastward 10 m wind",
                Wy="northward 10 m wind", u_av="eastward geostrophic velocity", v_av="northward geostrophic velocity",
                lon="longitude", lat="latitude", t="time (days since 1970-01-01)", u="eastward drifter velocity",
                v="northward drifter velocity")
    data = {k: ("obs", cols[k].astype(np.float32), {"units": units[k], "long_name": "synthetic " + long[k]})
            for k in names}
    # plain "days" (not CF "days since ...") so that t stays a number when the file is opened
    data["t"] = ("obs", cols["t"].astype(np.float64), {"units": "days", "long_name": "synthetic time in days since "
                                                       "1970-01-01 (processed-table convention)"})
    data["id"] = ("obs", cols["id"].astype(np.int32), {"long_name": "synthetic drifter id"})
    for k in ("true_u_mean", "true_v_mean", "true_cov_uu", "true_cov_uv", "true_cov_vv"):
        data[k] = ("obs", cols[k].astype(np.float32),
                   {"units": "m s-1" if "mean" in k else "m2 s-2",
                    "long_name": "true conditional " + k[5:].replace("_", " ") + " of (u, v) (synthetic only)"})
    attrs = {
        "title": "SYNTHETIC North Atlantic drifter sample for distviz (not observed data)",
        "synthetic": "yes",
        "summary": ("Daily drifter trajectories simulated in an analytic flow (Gulf-Stream-like western-boundary jet "
                    "separating near 35N, wind-driven gyres, eastern recirculation) with analytic winds and "
                    "spatially varying, along-stream-correlated noise. Columns follow the processed table of "
                    "O'Malley et al. (Zenodo 5644972). This file is SYNTHETIC."),
        "real_data": ("Load the real processed table (https://doi.org/10.5281/zenodo.5644972, pandas HDF5) or a GDP "
                      "ragged-array NetCDF with distviz.data.drifters.load_drifters(PATH) or "
                      "`distviz study drifters --data PATH`."),
        "generator": "distviz.data.drifter_sim.simulate_drifters (scripts/make_drifter_sample.py)",
        "seed": int(cfg.seed), "n_drifters": int(cfg.n_drifters),
        "frac_gulf_stream": float(cfg.frac_gulf_stream), "mean_life_days": float(cfg.mean_life_days),
        "max_life_days": int(cfg.max_life_days), "start_span_days": float(cfg.start_span_days),
        "Conventions": "CF-1.8",
    }
    return xr.Dataset(data, attrs=attrs)
