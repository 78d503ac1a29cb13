"""Study `drifters`: multivariate NGBoost vs independent NGBoost on 2-D drifter velocities (paper Section 5, Table 2).

``distviz study drifters --data sample|PATH [--rounds N] [--json]``
``distviz study drifters --data sample|PATH --protocol paper [--reps 10]`` (``run_paper_protocol``)

Split by drifter id (81% train / 9% validation / 10% test, Section 5.3); fit NGB, IndepNGB, GB and
skGB (``distviz.estimators.ngboost``, ``distviz.baselines.skgb``), the bivariate Normal boosted by mirror descent in its dual
coordinates (E y, E y y^T) (``DistributionalBoosting(family="mvn", family_params={"P": 2}, law="mgd")``) and the paper's
neural network NN (``distviz.baselines.MVNNetwork``: Adam at ``nn_learning_rate`` 0.01, patience 50,
best epoch restored, hidden layers from the authors' grid on validation NLL), all with early
stopping on the validation set; score the test set in cm/s: NLL, RMSE, 90% prediction-region
coverage and area (Section 5.2, eqs. 6-7). Two model averages of NGB and IndepNGB, with weights chosen
on validation NLL globally and per 2x2 degree region:

* ``Pool`` (log-linear pool / density average): p ∝ p_NGB^w p_Indep^(1-w), again a bivariate Normal
  (precision-weighted), so all Table 2 metrics are exact;
* ``Mix`` (linear pool / mixture): p = w p_NGB + (1-w) p_Indep; its 90% region is the highest-density
  region, whose coverage and area are estimated by Monte Carlo.

Binned test results are an ``xarray.Dataset`` over 2x2 degree (lon, lat) bins (and 0.5 degree bins in
the Gulf Stream box (80W, 31N)-(74W, 35N) of Section 5.4), saveable to NetCDF.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from distviz.errors import ConfigError, DataError
from distviz.experiments import registry

CM = 100.0  # models are fitted and scored in cm/s, as the paper reports
GULF_STREAM_BOX = (-80.0, -74.0, 31.0, 35.0)  # Section 5.4
JET_SPEED = 50.0  # cm/s: rows whose geostrophic speed exceeds this form the "jet" subset
METHODS = ("NGB", "IndepNGB", "GB", "skGB", "MGD-MVN", "NN")
#: Paper Table 2 (real GDP data, 10 replications): NLL, RMSE (cm/s), 90% region coverage and area (cm^2/s^2).
PAPER_TABLE2 = {"NGB": (7.73, 14.53, 0.87, 2482), "IndepNGB": (7.74, 14.45, 0.87, 2568), "skGB": (8.17, 14.31, 0.89, 2714),
                "GB": (8.79, 24.14, 0.94, 8070), "NN": (7.81, 16.63, 0.89, 3670)}
#: Settings of the NN row (paper Sec. 4 and the authors' code), independent of the boosting learning rate.
NN_DEFAULTS = {"hidden_layer_sizes": "auto", "learning_rate": 0.01, "patience": 50, "max_epochs": 1000}
AVERAGES = ("Pool-global", "Pool-region", "Mix-global", "Mix-region")
_W_GRID = np.linspace(0.0, 1.0, 41)


# ----------------------------------------------------------------------------------------------
# Gaussian helpers (P = 2)


def gauss_nll(y, mu, cov) -> np.ndarray:
    """Per-row negative log-density of a bivariate Normal: log 2pi + 0.5 log|S| + 0.5 r^T S^-1 r."""
    r = y - mu
    a, b, d = cov[:, 0, 0], cov[:, 0, 1], cov[:, 1, 1]
    det = a * d - b * b
    q = (d * r[:, 0] ** 2 - 2 * b * r[:, 0] * r[:, 1] + a * r[:, 1] ** 2) / det
    return np.log(2 * np.pi) + 0.5 * np.log(det) + 0.5 * q


def region_metrics(y, mu, cov, level=0.9) -> tuple[float, float]:
    """Coverage and mean area of the level prediction region (eqs. 6-7), via distviz.metrics.regions."""
    from distviz.metrics.regions import mean_region_area, region_coverage

    return float(region_coverage(y, mu, cov, level)), float(mean_region_area(cov, level))


def rmse(y, mu) -> float:
    """RMSE over rows of the Euclidean error, sqrt(mean ||y - mu||^2) (distviz.metrics.rmse, Sec. 5.2)."""
    from distviz.metrics.regression import rmse as _rmse

    return float(_rmse(y, mu))


def log_linear_pool(w, mu1, S1, mu2, S2):
    """Density average p ∝ p1^w p2^(1-w) of two Normals: precision L = w L1 + (1-w) L2, mean L^-1(w L1 mu1 + ...)."""
    w = np.asarray(w, float).reshape(-1, 1, 1) * np.ones((mu1.shape[0], 1, 1))
    L1, L2 = np.linalg.inv(S1), np.linalg.inv(S2)
    L = w * L1 + (1 - w) * L2
    S = np.linalg.inv(L)
    h = w[:, :, 0] * np.einsum("nij,nj->ni", L1, mu1) + (1 - w[:, :, 0]) * np.einsum("nij,nj->ni", L2, mu2)
    return np.einsum("nij,nj->ni", S, h), S


def mixture_nll(y, w, mu1, S1, mu2, S2) -> np.ndarray:
    """Per-row NLL of the mixture w N(mu1, S1) + (1-w) N(mu2, S2)."""
    l1, l2 = -gauss_nll(y, mu1, S1), -gauss_nll(y, mu2, S2)
    w = np.clip(np.asarray(w, float), 0.0, 1.0) * np.ones(y.shape[0])
    with np.errstate(divide="ignore"):
        return -np.logaddexp(np.log(w) + l1, np.log1p(-w) + l2)


def mixture_region(y, w, mu1, S1, mu2, S2, level=0.9, n_samples=400, rng=None):
    """Coverage and mean area of the level highest-density region of the mixture, by Monte Carlo.

    Per row: draw m samples from the mixture, set the density threshold c to their (1 - level) quantile
    (so the region {p > c} holds `level` of the mass), estimate its area as mean(1{p > c} / p) over the
    samples (importance sampling with the mixture as proposal) and count y as covered when p(y) > c.
    """
    rng = np.random.default_rng(rng)
    n = y.shape[0]
    w = np.clip(np.asarray(w, float), 0.0, 1.0) * np.ones(n)
    pick1 = rng.random((n, n_samples)) < w[:, None]
    z = rng.standard_normal((n, n_samples, 2))
    C1, C2 = np.linalg.cholesky(S1), np.linalg.cholesky(S2)
    s1 = mu1[:, None, :] + np.einsum("nij,nmj->nmi", C1, z)
    s2 = mu2[:, None, :] + np.einsum("nij,nmj->nmi", C2, z)
    s = np.where(pick1[..., None], s1, s2)

    def dens(pts):  # pts (n, m, 2)
        m = pts.shape[1]
        flat = pts.reshape(-1, 2)
        rep = lambda a: np.repeat(a, m, axis=0)  # noqa: E731
        p = (rep(w) * np.exp(-gauss_nll(flat, rep(mu1), rep(S1)))
             + rep(1 - w) * np.exp(-gauss_nll(flat, rep(mu2), rep(S2))))
        return p.reshape(n, m)

    ps = dens(s)
    c = np.quantile(ps, 1 - level, axis=1)
    area = np.mean((ps > c[:, None]) / ps, axis=1)
    py = dens(y[:, None, :])[:, 0]
    return float(np.mean(py > c)), float(np.mean(area))


def _weight_curve(kind, y, mu1, S1, mu2, S2) -> np.ndarray:
    """Per-row NLL for each w on the grid: array (n_grid, n)."""
    out = np.empty((_W_GRID.size, y.shape[0]))
    for k, w in enumerate(_W_GRID):
        if kind == "pool":
            m, S = log_linear_pool(w, mu1, S1, mu2, S2)
            out[k] = gauss_nll(y, m, S)
        else:
            out[k] = mixture_nll(y, w, mu1, S1, mu2, S2)
    return out


# ----------------------------------------------------------------------------------------------
# binning


def bin_edges(lo: float, hi: float, size: float) -> np.ndarray:
    """Bin edges of width `size` aligned to multiples of `size` that cover [lo, hi]."""
    a = np.floor(lo / size) * size
    b = np.ceil(hi / size) * size
    if b <= a:
        b = a + size
    return np.arange(a, b + size / 2, size)


def bin_index(lon, lat, lon_edges, lat_edges):
    """Flat bin index of each (lon, lat), -1 outside the grid."""
    i = np.searchsorted(lon_edges, lon, side="right") - 1
    j = np.searchsorted(lat_edges, lat, side="right") - 1
    ok = (i >= 0) & (i < lon_edges.size - 1) & (j >= 0) & (j < lat_edges.size - 1)
    return np.where(ok, j * (lon_edges.size - 1) + i, -1)


def binned_dataset(pred, lon_edges, lat_edges, methods, attrs=None):
    """Means over (lon, lat) bins of the test predictions: counts, NLL per method, NLL difference, rho, currents."""
    import xarray as xr

    nx, ny = lon_edges.size - 1, lat_edges.size - 1
    k = bin_index(pred["lon"].values, pred["lat"].values, lon_edges, lat_edges)
    ok = k >= 0
    cnt = np.bincount(k[ok], minlength=nx * ny).astype(float)

    def mean(v):
        s = np.bincount(k[ok], weights=np.asarray(v, float)[ok], minlength=nx * ny)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(cnt > 0, s / cnt, np.nan).reshape(ny, nx)

    data = {"n_test": (("lat", "lon"), cnt.reshape(ny, nx),
                       {"long_name": "number of test points", "units": "1"})}
    for m in methods:
        if f"nll_{m}" in pred:
            data[f"nll_{m}"] = (("lat", "lon"), mean(pred[f"nll_{m}"].values),
                                {"long_name": f"mean test NLL of {m}", "units": "nats (velocities in cm/s)"})
    if "nll_NGB" in pred and "nll_IndepNGB" in pred:
        data["nll_diff"] = (("lat", "lon"), mean(pred["nll_NGB"].values - pred["nll_IndepNGB"].values),
                            {"long_name": "mean NLL difference NGB - IndepNGB (negative: NGB better)",
                             "units": "nats"})
    ref = "NGB" if "mean_NGB" in pred else next((m for m in methods if f"mean_{m}" in pred), None)
    if ref is not None:
        mu, cov = pred[f"mean_{ref}"].values, pred[f"cov_{ref}"].values
        rho = cov[:, 0, 1] / np.sqrt(cov[:, 0, 0] * cov[:, 1, 1])
        data["rho"] = (("lat", "lon"), mean(rho), {"long_name": f"mean predicted correlation rho ({ref})",
                                                   "units": "1"})
        data["u_mean"] = (("lat", "lon"), mean(mu[:, 0]), {"long_name": f"mean predicted eastward velocity ({ref})",
                                                           "units": "cm s-1"})
        data["v_mean"] = (("lat", "lon"), mean(mu[:, 1]), {"long_name": f"mean predicted northward velocity ({ref})",
                                                           "units": "cm s-1"})
        data["speed"] = (("lat", "lon"), np.hypot(data["u_mean"][1], data["v_mean"][1]),
                         {"long_name": f"speed of the mean predicted current ({ref})", "units": "cm s-1"})
        for m in methods:
            if f"cov_{m}" in pred:
                c = pred[f"cov_{m}"].values
                area = np.pi * 4.605170185988092 * np.sqrt(c[:, 0, 0] * c[:, 1, 1] - c[:, 0, 1] ** 2)
                data[f"area90_{m}"] = (("lat", "lon"), mean(area), {"long_name": f"mean 90% region area ({m})",
                                                                    "units": "cm2 s-2"})
    data["u_obs"] = (("lat", "lon"), mean(pred["u"].values), {"long_name": "mean observed eastward velocity",
                                                              "units": "cm s-1"})
    data["v_obs"] = (("lat", "lon"), mean(pred["v"].values), {"long_name": "mean observed northward velocity",
                                                              "units": "cm s-1"})
    if "w_region" in pred:
        data["w_region"] = (("lat", "lon"), mean(pred["w_region"].values),
                            {"long_name": "weight of NGB in the regional log-linear pool", "units": "1"})
    ds = xr.Dataset(data, coords={"lon": ("lon", 0.5 * (lon_edges[1:] + lon_edges[:-1]), {"units": "degrees_east"}),
                                  "lat": ("lat", 0.5 * (lat_edges[1:] + lat_edges[:-1]), {"units": "degrees_north"}),
                                  "lon_edge": ("lon_edge", lon_edges), "lat_edge": ("lat_edge", lat_edges)},
                    attrs=dict(attrs or {}))
    ds.attrs["bin_size_deg"] = float(lon_edges[1] - lon_edges[0])
    return ds


# ----------------------------------------------------------------------------------------------
# the comparison


@dataclass
class DrifterComparison:
    """Result of `run_drifter_comparison`: Table 2, subset tables, averaging, binned maps and test predictions."""

    table: dict
    subsets: dict
    averaging: dict
    binned: Any  # xarray.Dataset over 2x2 degree bins
    zoom: Any  # xarray.Dataset over 0.5 degree bins of the Gulf Stream box
    predictions: Any  # xarray.Dataset over test rows (obs): positions, observed and predicted laws
    info: dict = field(default_factory=dict)
    #: the fitted estimators by method (kept in memory for downloads; not written by save(), so a loaded or the
    #: shipped precomputed comparison has none)
    models: dict = field(default_factory=dict, repr=False)

    def to_dict(self) -> dict:
        """JSON-able summary: {method: {metric: value}} plus subsets, averaging and run info."""
        out = {m: dict(v) for m, v in self.table.items()}
        out["subsets"] = self.subsets
        out["averaging"] = self.averaging
        out["info"] = self.info
        return out

    def table_frame(self, subset: str | None = None):
        """Table 2 (or a subset's table) as a pandas DataFrame, one row per method."""
        import pandas as pd

        src = self.table if subset is None else {k: v for k, v in self.subsets[subset].items() if isinstance(v, dict)}
        cols = ("NLL", "NLL_median", "RMSE", "PR90_cov", "PR90_area", "n")
        rows = {m: {c: v.get(c, np.nan) for c in cols} for m, v in src.items() if "NLL" in v}
        return pd.DataFrame.from_dict(rows, orient="index")

    def save(self, path, *, compress: bool = True) -> None:
        """Write the binned maps to NetCDF (groups 'zoom' and 'predictions' beside; tables as JSON attributes)."""
        b = self.binned.copy()
        b.attrs["table_json"] = json.dumps(_plain(self.table))
        b.attrs["subsets_json"] = json.dumps(_plain(self.subsets))
        b.attrs["averaging_json"] = json.dumps(_plain(self.averaging))
        b.attrs["info_json"] = json.dumps(_plain(self.info))

        def enc(ds):
            return {k: {"zlib": True, "complevel": 5} for k in ds.data_vars} if compress else None

        b.to_netcdf(path, mode="w", encoding=enc(b))
        self.zoom.to_netcdf(path, mode="a", group="zoom", encoding=enc(self.zoom))
        self.predictions.to_netcdf(path, mode="a", group="predictions", encoding=enc(self.predictions))

    @classmethod
    def load(cls, path) -> "DrifterComparison":
        """Read a comparison written by save()."""
        import xarray as xr

        b = xr.load_dataset(path)
        z = xr.load_dataset(path, group="zoom")
        p = xr.load_dataset(path, group="predictions")
        a = b.attrs
        return cls(json.loads(a["table_json"]), json.loads(a["subsets_json"]), json.loads(a["averaging_json"]),
                   b, z, p, json.loads(a["info_json"]))


# ----------------------------------------------------------------------------------------------
# the app's default comparison, precomputed and shipped beside the sample

#: Settings of the Drifters page's first paint (synthetic sample); `scripts/make_drifter_sample.py` precomputes them.
#: All 30,000 training rows and up to 300 rounds: the study's defaults, where NGB's edge over IndepNGB shows
#: (docs/user_guide/drifters.rst).
APP_DEFAULTS = {"rounds": 300, "learning_rate": 0.1, "patience": 10, "methods": ("NGB", "IndepNGB"), "max_train": 30000,
                "mixture_samples": 100, "seed": 0}
#: File name of the precomputed default comparison inside ``distviz/data/sample/``.
PRECOMPUTED_FILE = "drifters_comparison_default.nc"


def precomputed_path():
    """Path of the shipped precomputed comparison (`distviz/data/sample/drifters_comparison_default.nc`)."""
    from distviz.data.paths import sample_file

    return sample_file(PRECOMPUTED_FILE)


def file_sha1(path) -> str:
    """SHA-1 hex digest of a file's bytes (ties a precomputed result to the sample it was computed from)."""
    import hashlib

    return hashlib.sha1(open(path, "rb").read()).hexdigest()


def precompute_comparison(out=None, *, progress: Callable[[float, str], None] | None = None,
                          **overrides) -> DrifterComparison:
    """Run the comparison on the shipped sample with APP_DEFAULTS (updated by `overrides`) and save it to `out`.

    The sample file's SHA-1 and the settings go into ``info`` so that `load_precomputed` can tell a
    stale file from a current one.
    """
    from distviz.data.drifters import sample_path

    settings = {**APP_DEFAULTS, **overrides}
    res = run_drifter_comparison("sample", progress=progress, **settings)
    sp = sample_path()
    res.info["sample_sha1"] = file_sha1(sp) if sp.exists() else ""
    res.info["settings"] = _plain(settings)
    res.info["precomputed"] = True
    if out is not None:
        res.save(out)
    return res


def load_precomputed(path=None, **settings) -> DrifterComparison | None:
    """The precomputed comparison at `path` (default: the shipped one) if it was made from the current sample
    with APP_DEFAULTS updated by `settings`; None when absent, unreadable or stale."""
    from distviz.data.drifters import sample_path

    path = precomputed_path() if path is None else Path(path)
    sp = sample_path()
    try:
        if not (path.exists() and sp.exists()):
            return None
        res = DrifterComparison.load(path)
    except (OSError, ValueError, KeyError):
        return None
    want = _plain({**APP_DEFAULTS, **settings})
    if res.info.get("sample_sha1") != file_sha1(sp) or res.info.get("settings") != want:
        return None
    return res


def _plain(x):
    """numpy scalars to Python numbers (NaN to None) inside nested dicts, for JSON."""
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, (np.floating, float)):
        return None if not np.isfinite(x) else float(x)
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.bool_):
        return bool(x)
    return x


def _make_model(name: str, rounds: int, learning_rate: float, seed: int, patience: int, nn_options=None, **tree):
    """Estimator for method `name` (NGB, IndepNGB, GB from distviz.estimators.ngboost; skGB; MGD-MVN; NN)."""
    if name == "NN":
        from distviz.baselines import MVNNetwork

        return MVNNetwork(**{**NN_DEFAULTS, **(nn_options or {})}, random_state=seed)
    if name == "MGD-MVN":
        from distviz.estimators import DistributionalBoosting

        return DistributionalBoosting(family="mvn", family_params={"P": 2}, law="mgd", n_estimators=rounds,
                                      learning_rate=learning_rate, max_depth=tree.get("max_depth", 4),
                                      early_stopping_rounds=patience, random_state=seed)
    from distviz.baselines import skGB
    from distviz.estimators import ngboost

    cls = skGB if name == "skGB" else getattr(ngboost, name)
    return cls(**_ngb_kwargs(cls, rounds, learning_rate, seed, patience, **tree))


def _ngb_kwargs(cls, rounds, learning_rate, seed, patience, **tree) -> dict:
    """Constructor arguments of an ngboost-module estimator, mapped onto the names its signature uses."""
    import inspect

    params = inspect.signature(cls.__init__).parameters
    want = {("n_estimators",): rounds, ("learning_rate",): learning_rate,
            ("random_state", "seed"): seed, ("early_stopping_rounds", "patience"): patience,
            ("max_depth",): tree.get("max_depth"), ("max_leaf_nodes", "max_leaves", "num_leaves"): tree.get("max_leaves"),
            ("min_samples_leaf", "min_data_in_leaf", "min_weight_leaf"): tree.get("min_leaf")}
    out = {}
    for names, value in want.items():
        if value is None:
            continue
        for n in names:
            if n in params:
                out[n] = value
                break
    return out


def _predict(name, model, X):
    """(mean (n, 2), cov (n, 2, 2)) of a fitted model."""
    if name == "MGD-MVN":
        mu, S = model.family_.mean_cov(model.predict_natural(X))
        return np.asarray(mu), np.asarray(S)
    out = model.predict_dist(X)
    return np.asarray(out.mean(), float), np.asarray(out.cov(), float)


def _metrics(y, mu, S) -> dict:
    """Table 2 metrics of one method on rows y (cm/s)."""
    cov, area = region_metrics(y, mu, S, 0.9)
    nll = gauss_nll(y, mu, S)
    return {"NLL": float(np.mean(nll)), "NLL_median": float(np.median(nll)), "RMSE": rmse(y, mu), "PR90_cov": cov,
            "PR90_area": area, "n": int(y.shape[0])}


def _regional_weights(curve_val, kval, n_bins, w_global, min_count):
    """Per-bin weight minimising the bin's validation NLL, or the global weight where a bin has < min_count rows."""
    w = np.full(n_bins, w_global)
    ok = kval >= 0
    cnt = np.bincount(kval[ok], minlength=n_bins)
    sums = np.stack([np.bincount(kval[ok], weights=c[ok], minlength=n_bins) for c in curve_val])  # (grid, bins)
    good = cnt >= min_count
    w[good] = _W_GRID[np.argmin(sums[:, good], axis=0)]
    return w, cnt


def _cluster_rows(path, bbox, seed: int, max_train, say):
    """The study's rows from a processed table read on the cluster (``ClusterDrifterTable``).

    Returns (d, tr, va, te, Xtr, Ytr, counts): d holds only the validation and test drifters' rows (in
    memory, va / te mask them, tr is all False), Xtr / Ytr (cm/s) are dask arrays of the training
    drifters' rows on the workers, counts has the table's rows, drifters, training rows and lon / lat range.
    The split is split_by_id's on the same rows.
    """
    from distviz.data.drifters import split_ids
    from distviz.data.gdp_table import ClusterDrifterTable

    if max_train is not None:
        raise ConfigError("--max-train subsamples rows in one process; with --scheduler and a table from "
                          "'distviz data gdp' every training row is used: leave --max-train out (or cut the "
                          "table with 'distviz data gdp --bbox/--start/--end').")
    tab = ClusterDrifterTable(path, bbox=bbox)
    say(0.02, tab.summary())
    if tab.n_drifters < 10:
        raise DataError(f"The drifter data hold only {tab.n_drifters} drifters; the by-drifter split needs at least 10.")
    tr_ids, va_ids, te_ids = split_ids(tab.ids, random_state=seed)
    d = tab.load(np.concatenate([va_ids, te_ids]))
    va = np.isin(d.id, va_ids)
    Xtr, Ytr = tab.arrays(tr_ids, y_scale=CM)
    counts = {"rows": tab.n_rows, "drifters": tab.n_drifters, "train": int(Xtr.shape[0]),
              "lon": tab.lon_range, "lat": tab.lat_range}
    return d, np.zeros(len(d), dtype=bool), va, ~va, Xtr, Ytr, counts


def _chunked(arrays, rows_per_chunk: int = 250_000):
    """In-memory arrays as dask arrays of at most rows_per_chunk rows a chunk (a validation set for a cluster fit)."""
    import dask.array as da

    return tuple(da.from_array(np.asarray(a, dtype=float), chunks=(rows_per_chunk,) + np.shape(a)[1:]) for a in arrays)


def run_drifter_comparison(data="sample", *, rounds: int = 300, learning_rate: float = 0.1, patience: int = 10,
                           methods=METHODS, seed: int = 0, max_depth: int = 3, max_train: int | None = None,
                           mgd_learning_rate: float = 0.05, nn_options: dict | None = None,
                           min_region_count: int = 30, mixture_samples: int = 300, bbox=None,
                           progress: Callable[[float, str], None] | None = None) -> DrifterComparison:
    """Fit the methods on a by-drifter split of `data` and score them (Table 2), with averages and binned maps.

    `data` is anything `load_drifters` takes (`bbox` as there). `progress(fraction, message)` is called
    between steps.  Under ``use_scheduler`` (``--scheduler``) with a table written by ``distviz data gdp``,
    the table is read on the workers (``ClusterDrifterTable``): NGB and IndepNGB fit there on dask arrays of
    the training drifters' rows, which never come to this process; only the validation and test rows do
    (for the scores, averages and maps), and the methods that need every row in one process are reported
    as not available.
    Every method uses `learning_rate`, except MGD-MVN, which uses `mgd_learning_rate`: additive steps in
    the mean coordinates (E y, E y y^T) can bring a row's covariance close to singular (the M-law's domain
    problem, DESIGN.md), and at 0.1 with depth-3 trees one test row's NLL blew up on the sample.
    NN uses its own settings, NN_DEFAULTS updated by `nn_options` (MVNNetwork keyword arguments).
    """
    import xarray as xr

    from distviz.data.drifters import load_drifters, split_by_id
    from distviz.data.gdp_table import is_processed_table
    from distviz.experiments.parallel import is_distributed

    t_start = time.perf_counter()
    say = progress or (lambda f, m: None)
    if not isinstance(rounds, (int, np.integer)) or rounds < 1:
        raise ConfigError(f"rounds must be a positive integer, got {rounds!r}; pass e.g. --rounds 300.")
    methods = tuple(methods)
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise ConfigError(f"Unknown method(s) {', '.join(unknown)}; choose from {', '.join(METHODS)}.")
    on_cluster = is_distributed() and is_processed_table(data)
    if on_cluster:
        d, tr, va, te, Xtr, Ytr, n_all = _cluster_rows(data, bbox, seed, max_train, say)
        lon_range, lat_range = n_all["lon"], n_all["lat"]
    else:
        d = load_drifters(data, bbox=bbox)
        say(0.02, d.summary())
        if d.n_drifters < 10:
            raise DataError(f"The drifter data hold only {d.n_drifters} drifters; the by-drifter split needs at "
                            f"least 10.")
        tr, va, te = split_by_id(d.id, random_state=seed)
        if max_train is not None and tr.sum() > max_train:
            keep = np.flatnonzero(tr)
            keep = np.random.default_rng(seed).choice(keep, int(max_train), replace=False)
            tr = np.zeros_like(tr)
            tr[keep] = True
        Xtr, Ytr = d.X[tr], d.Y[tr] * CM
        n_all = {"rows": len(d), "drifters": d.n_drifters, "train": int(tr.sum())}
        lon_range, lat_range = (d.lon.min(), d.lon.max()), (d.lat.min(), d.lat.max())
    Y = d.Y * CM
    Xva, Yva, Xte, Yte = d.X[va], Y[va], d.X[te], Y[te]
    fitted, pred_va, pred_te, fit_s, errors = {}, {}, {}, {}, {}
    for i, name in enumerate(methods):
        say(0.05 + 0.8 * i / len(methods), f"fitting {name} on {n_all['train']} rows")
        t0 = time.perf_counter()
        if on_cluster and name not in ("NGB", "IndepNGB"):
            errors[name] = ("not available: the table was read on the cluster and this method needs every training "
                            "row in one process; run without --scheduler (or on a smaller table) to fit it")
            continue
        try:
            lr = mgd_learning_rate if name == "MGD-MVN" else learning_rate
            model = _make_model(name, rounds, lr, seed, patience, nn_options=nn_options, max_depth=max_depth)
            report = _round_reporter(say, name, i, len(methods))
            if on_cluster:   # the training rows are dask arrays on the workers
                from distviz.distributed import fit as fit_on_workers
                fit_on_workers(model, Xtr, Ytr, eval_set=_chunked((Xva, Yva)), progress=report)
            elif name in ("NGB", "IndepNGB") and is_distributed():   # --scheduler: the fit runs on the workers
                from distviz.distributed.ngb import fit_arrays_on_workers
                fit_arrays_on_workers(model, Xtr, Ytr, (Xva, Yva), progress=report)
            else:
                model.fit(Xtr, Ytr, eval_set=(Xva, Yva), progress=report)
        except (ImportError, AttributeError) as exc:
            errors[name] = f"not available: {exc}"
            continue
        fit_s[name] = time.perf_counter() - t0
        fitted[name] = model
        pred_va[name] = _predict(name, model, Xva)
        pred_te[name] = _predict(name, model, Xte)
    say(0.87, "scoring and averaging")
    table = {m: {**_metrics(Yte, *pred_te[m]), "fit_s": round(fit_s[m], 2), "rounds_used": _rounds_used(fitted[m])}
             for m in pred_te}
    for m, e in errors.items():
        table[m] = {"error": e}

    # subsets: jet (strong geostrophic current) and the Gulf Stream box (Section 5.4)
    subsets_masks = {"gulf_stream_box": _in_box(d.lon[te], d.lat[te], GULF_STREAM_BOX)}
    if "u_av" in d.feature_names:
        subsets_masks["jet"] = np.hypot(d.feature("u_av")[te], d.feature("v_av")[te]) * CM >= JET_SPEED
    oracle = None
    if d.truth is not None:
        tt = {k: v[te] for k, v in d.truth.items()}
        oracle = (np.column_stack([tt["true_u_mean"], tt["true_v_mean"]]) * CM,
                  np.stack([np.stack([tt["true_cov_uu"], tt["true_cov_uv"]], -1),
                            np.stack([tt["true_cov_uv"], tt["true_cov_vv"]], -1)], -2) * CM**2)
        table["Oracle"] = {**_metrics(Yte, *oracle), "note": "true conditional law (synthetic data only)"}

    # model averages of NGB and IndepNGB
    averaging: dict = {}
    pred_extra: dict = {}
    lon_e = bin_edges(lon_range[0], lon_range[1], 2.0)
    lat_e = bin_edges(lat_range[0], lat_range[1], 2.0)
    if "NGB" in pred_te and "IndepNGB" in pred_te:
        (m1v, S1v), (m2v, S2v) = pred_va["NGB"], pred_va["IndepNGB"]
        (m1, S1), (m2, S2) = pred_te["NGB"], pred_te["IndepNGB"]
        kva = bin_index(d.lon[va], d.lat[va], lon_e, lat_e)
        kte = bin_index(d.lon[te], d.lat[te], lon_e, lat_e)
        nb = (lon_e.size - 1) * (lat_e.size - 1)
        rng = np.random.default_rng(seed)
        for kind, label in (("pool", "Pool"), ("mix", "Mix")):
            curve = _weight_curve(kind, Yva, m1v, S1v, m2v, S2v)
            wg = float(_W_GRID[np.argmin(curve.mean(axis=1))])
            wb, cnt = _regional_weights(curve, kva, nb, wg, min_region_count)
            w_rows = np.where(kte >= 0, wb[np.maximum(kte, 0)], wg)
            for scope, w in (("global", np.full(len(Yte), wg)), ("region", w_rows)):
                name = f"{label}-{scope}"
                if kind == "pool":
                    mu, S = log_linear_pool(w, m1, S1, m2, S2)
                    table[name] = _metrics(Yte, mu, S)
                    pred_extra[name] = (mu, S)
                else:
                    cov, area = mixture_region(Yte, w, m1, S1, m2, S2, 0.9, mixture_samples, rng)
                    mu = w[:, None] * m1 + (1 - w[:, None]) * m2
                    nll = mixture_nll(Yte, w, m1, S1, m2, S2)
                    table[name] = {"NLL": float(np.mean(nll)), "NLL_median": float(np.median(nll)),
                                   "RMSE": rmse(Yte, mu), "PR90_cov": cov, "PR90_area": area, "n": int(len(Yte))}
                    pred_extra[name + "/nll"] = mixture_nll(Yte, w, m1, S1, m2, S2)
            averaging[label] = {"kind": "log-linear pool (density average), Gaussian" if kind == "pool"
                                else "linear pool (mixture); region metrics by Monte Carlo",
                                "w_global": wg, "n_regions_own_weight": int((cnt >= min_region_count).sum()),
                                "w_region_mean": float(np.mean(w_rows))}
            if kind == "pool":
                pred_extra["w_region"] = w_rows
        best_single = min(table["NGB"]["NLL"], table["IndepNGB"]["NLL"])
        best_rows = gauss_nll(Yte, m1, S1) if table["NGB"]["NLL"] <= table["IndepNGB"]["NLL"] else gauss_nll(Yte, m2, S2)
        for name in AVERAGES:
            rows = (gauss_nll(Yte, *pred_extra[name]) if name.startswith("Pool") else pred_extra[name + "/nll"])
            diff, se = clustered_mean_se(rows - best_rows, d.id[te])
            averaging[name + "_beats_both"] = bool(table[name]["NLL"] < best_single)
            averaging[name + "_minus_best"] = diff
            averaging[name + "_minus_best_se"] = se
        averaging["best_single_NLL"] = best_single
        averaging["note"] = ("'beats_both' compares test NLL with the better of NGB and IndepNGB; '_minus_best' is that "
                             "paired difference and '_se' its standard error clustered by drifter")

    # test-row predictions as a Dataset
    pv = {"lon": ("obs", d.lon[te]), "lat": ("obs", d.lat[te]), "id": ("obs", d.id[te]), "t": ("obs", d.t[te]),
          "u": ("obs", Yte[:, 0], {"units": "cm s-1"}), "v": ("obs", Yte[:, 1], {"units": "cm s-1"})}
    for m, (mu, S) in list(pred_te.items()) + [(k, v) for k, v in pred_extra.items() if k.startswith("Pool")] + (
            [("Oracle", oracle)] if oracle is not None else []):
        pv[f"mean_{m}"] = (("obs", "comp"), mu, {"units": "cm s-1"})
        pv[f"cov_{m}"] = (("obs", "comp", "comp2"), S, {"units": "cm2 s-2"})
        pv[f"nll_{m}"] = ("obs", gauss_nll(Yte, mu, S))
    for k, v in pred_extra.items():
        if k.endswith("/nll"):
            pv[f"nll_{k[:-4]}"] = ("obs", v)
    if "w_region" in pred_extra:
        pv["w_region"] = ("obs", pred_extra["w_region"])
    pred = xr.Dataset(pv, coords={"comp": ["u", "v"], "comp2": ["u", "v"]},
                      attrs={"source": d.source, "synthetic": int(d.synthetic)})
    all_m = list(pred_te) + [k for k in pred_extra if k.startswith("Pool")] + (["Oracle"] if oracle is not None else [])
    attrs = {"source": d.source, "synthetic": int(d.synthetic), "velocity_units": "cm s-1"}
    binned = binned_dataset(pred, lon_e, lat_e, all_m, attrs)
    zoom_sel = _in_box(pred["lon"].values, pred["lat"].values, GULF_STREAM_BOX)
    zoom = binned_dataset(pred.isel(obs=np.flatnonzero(zoom_sel)), np.arange(-80.0, -73.9, 0.5),
                          np.arange(31.0, 35.01, 0.5), all_m, attrs)

    subsets: dict[str, dict[str, Any]] = {}
    for sname, mask in subsets_masks.items():
        if mask.sum() == 0:
            continue
        subsets[sname] = {"n": int(mask.sum())}
        for m in all_m:
            mu, S = pred[f"mean_{m}"].values[mask], pred[f"cov_{m}"].values[mask]
            subsets[sname][m] = _metrics(Yte[mask], mu, S)
    info = {"source": d.source, "synthetic": bool(d.synthetic), "n_rows": n_all["rows"],
            "n_drifters": n_all["drifters"], "n_train": n_all["train"], "n_val": int(va.sum()), "n_test": int(te.sum()),
            "features": list(d.feature_names), "absent_features": list(d.absent_features),
            "n_dropped_nan": d.n_dropped_nan, "rounds": int(rounds), "learning_rate": float(learning_rate),
            "mgd_learning_rate": float(mgd_learning_rate), "patience": int(patience), "max_depth": int(max_depth),
            "seed": int(seed), "units": "NLL in nats with velocities in cm/s; RMSE cm/s; PR90_area cm^2/s^2",
            **({"nn": _plain({**NN_DEFAULTS, **(nn_options or {}),
                              "hidden_layer_sizes_chosen": list(fitted["NN"].hidden_layer_sizes_)})}
               if "NN" in fitted else {}),
            "seconds": round(time.perf_counter() - t_start, 1)}
    say(1.0, "done")
    return DrifterComparison(table, subsets, averaging, binned, zoom, pred, info, models=fitted)


#: The paper's protocol (Sec. 4 and 5.3): learning rate 0.01, patience 50, 10 by-drifter splits; tree grid.
PAPER_PROTOCOL: dict[str, Any] = {"learning_rate": 0.01, "patience": 50, "rounds": 2000, "reps": 10,
                  "depths": (3, 4, 5, 6), "min_leaves": (1, 15, 32)}
#: The study's default settings, fitted on the same splits beside the paper's protocol.
DEFAULT_PROTOCOL: dict[str, Any] = {"learning_rate": 0.1, "patience": 10, "rounds": 300, "max_depth": 3}
_PROTOCOL_METRICS = ("NLL", "RMSE", "PR90_cov", "PR90_area")


def _mean_se(v) -> tuple[float, float]:
    """Mean and standard error (sd / sqrt(n), 0 for one value) of a sequence."""
    v = np.asarray(v, float)
    return float(v.mean()), float(v.std(ddof=1) / np.sqrt(v.size)) if v.size > 1 else 0.0


def _paired(a, b) -> dict:
    """Paired difference a - b over replications: mean, standard error and the number of replications a wins."""
    d = np.asarray(a, float) - np.asarray(b, float)
    m, se = _mean_se(d)
    return {"mean": m, "se": se, "wins": int((d < 0).sum()), "reps": int(d.size)}


def _protocol_replication(r: int, *, X, Y, ids, methods, defaults, seed, reps, max_train, grid, rounds, learning_rate,
                          patience, nn_options, say=None) -> tuple[dict, dict]:
    """Replication `r` of :func:`run_paper_protocol` (split seed ``seed + r``): ({method: row}, {method: row})."""
    from distviz.data.drifters import split_by_id

    tr, va, te = split_by_id(ids, random_state=seed + r)
    if max_train is not None and tr.sum() > max_train:
        keep = np.random.default_rng(seed + r).choice(np.flatnonzero(tr), int(max_train), replace=False)
        tr = np.zeros_like(tr)
        tr[keep] = True
    Xtr, Ytr, Xva, Yva, Xte, Yte = X[tr], Y[tr], X[va], Y[va], X[te], Y[te]
    paper, dflt = {}, {}
    for i, m in enumerate(methods):
        if say is not None:
            say((r + i / len(methods)) / reps, f"replication {r + 1}/{reps}: {m}")
        best: tuple | None = None
        for depth, leaf in ([(None, None)] if m == "NN" else grid):
            model = _make_model(m, rounds, learning_rate, seed + r, patience, nn_options=nn_options,
                                max_depth=depth, min_leaf=leaf)
            model.fit(Xtr, Ytr, eval_set=(Xva, Yva))
            v = float(np.mean(gauss_nll(Yva, *_predict(m, model, Xva))))
            if best is None or v < best[0]:
                best = (v, model, depth, leaf)
        assert best is not None  # the grid has at least one (depth, leaf) pair
        row = _metrics(Yte, *_predict(m, best[1], Xte))
        row.update(val_NLL=best[0], max_depth=best[2], min_leaf=best[3], rounds_used=_rounds_used(best[1]))
        paper[m] = row
    for m in defaults:
        model = _make_model(m, DEFAULT_PROTOCOL["rounds"], DEFAULT_PROTOCOL["learning_rate"], seed + r,
                            DEFAULT_PROTOCOL["patience"], max_depth=DEFAULT_PROTOCOL["max_depth"])
        model.fit(Xtr, Ytr, eval_set=(Xva, Yva))
        dflt[m] = _metrics(Yte, *_predict(m, model, Xte))
    return paper, dflt


def run_paper_protocol(data="sample", *, methods=("NGB", "IndepNGB"), reps: int = 10, seed: int = 0,
                       depths=PAPER_PROTOCOL["depths"], min_leaves=PAPER_PROTOCOL["min_leaves"],
                       rounds: int = PAPER_PROTOCOL["rounds"], learning_rate: float = PAPER_PROTOCOL["learning_rate"],
                       patience: int = PAPER_PROTOCOL["patience"], max_train: int | None = None,
                       nn_options: dict | None = None, defaults: bool = True,
                       progress: Callable[[float, str], None] | None = None) -> dict:
    """Table 2 by the paper's protocol: `reps` by-drifter splits, tree grid chosen on validation NLL, mean +- s.e.

    Per replication (split seed ``seed + r``) every tree method is fitted with learning rate 0.01 and
    patience 50 for each (max_depth, min_samples_leaf) in the grid, and the setting with the lowest
    *validation* NLL is scored on test (the paper chose on test NLL, Sec. 5.3; never here).  The paper
    grew trees by leaf count 8/15/32/64 at depth 15; distviz's NGB presets take a depth, so depths 3-6
    (8-64 leaves) stand in.  NN uses its own hidden-layer grid (nn_options).  With `defaults`, NGB and
    IndepNGB are also fitted on the same splits with the study's defaults (DEFAULT_PROTOCOL), so both
    protocols print side by side, each with the paired difference NGB - IndepNGB of test NLL.
    """
    import functools
    import itertools

    from distviz.data.drifters import load_drifters

    say = progress or (lambda f, m: None)
    methods = tuple(methods)
    bad = [m for m in methods if m not in METHODS or m == "MGD-MVN"]
    if bad or not methods:
        raise ConfigError(f"--protocol paper fits {', '.join(m for m in METHODS if m != 'MGD-MVN')}; "
                          f"remove {', '.join(bad) or 'nothing'} from --methods.")
    if not isinstance(reps, (int, np.integer)) or reps < 1:
        raise ConfigError(f"reps must be a positive integer such as 10, got {reps!r}.")
    t_start = time.perf_counter()
    d = load_drifters(data)
    if d.n_drifters < 10:
        raise DataError(f"The drifter data hold only {d.n_drifters} drifters; the by-drifter split needs at least 10.")
    X, Y = d.X, d.Y * CM
    grid = list(itertools.product(depths, min_leaves))
    rows: dict[str, dict[str, list]] = {"paper": {m: [] for m in methods}, "defaults": {}}
    pair = [m for m in ("NGB", "IndepNGB") if m in methods]
    if defaults:
        rows["defaults"] = {m: [] for m in pair}
    from distviz.experiments.parallel import is_distributed, map_units

    rep = functools.partial(_protocol_replication, X=X, Y=Y, ids=d.id, methods=methods, defaults=list(rows["defaults"]),
                            seed=seed, reps=int(reps), max_train=max_train, grid=grid, rounds=rounds,
                            learning_rate=learning_rate, patience=patience, nn_options=nn_options,
                            say=None if is_distributed() else say)
    for paper, dflt in map_units(rep, range(int(reps))):  # one unit per replication: serial or Dask tasks
        for m in methods:
            rows["paper"][m].append(paper[m])
        for m in rows["defaults"]:
            rows["defaults"][m].append(dflt[m])
    out: dict[str, Any] = {"protocol": "paper"}
    for name, per in rows.items():
        if not per:
            continue
        tab: dict[str, Any] = {}
        for m, rr in per.items():
            tab[m] = {}
            for k in _PROTOCOL_METRICS:
                tab[m][k], tab[m][k + "_se"] = _mean_se([x[k] for x in rr])
            if name == "paper" and m != "NN":
                tab[m]["chosen"] = [f"depth {x['max_depth']}, min leaf {x['min_leaf']}" for x in rr]
        if len(pair) == 2:
            tab["NGB_minus_IndepNGB"] = _paired([x["NLL"] for x in per["NGB"]], [x["NLL"] for x in per["IndepNGB"]])
        out[name] = tab
    out["per_replication"] = rows["paper"]
    out["info"] = {"source": d.source, "synthetic": bool(d.synthetic), "n_rows": len(d), "n_drifters": d.n_drifters,
                   "reps": int(reps), "seed": int(seed), "learning_rate": float(learning_rate),
                   "patience": int(patience), "rounds": int(rounds), "grid_max_depth": list(depths),
                   "grid_min_samples_leaf": list(min_leaves), "max_train": max_train,
                   "defaults": dict(DEFAULT_PROTOCOL) if defaults else None,
                   "units": "NLL in nats with velocities in cm/s; RMSE cm/s; PR90_area cm^2/s^2",
                   "seconds": round(time.perf_counter() - t_start, 1)}
    say(1.0, "done")
    return out


def _format_protocol(result: dict) -> str:
    """Both protocols' tables (mean +- s.e. over replications) and the paired NGB - IndepNGB differences."""
    info = result.get("info", {})
    lines = []
    for name, title in (("paper", f"paper protocol (lr {info.get('learning_rate')}, patience {info.get('patience')}, "
                                  "tree grid on validation NLL)"),
                        ("defaults", "study defaults on the same splits (lr {learning_rate}, patience {patience}, "
                                     "depth {max_depth})".format(**(info.get("defaults") or DEFAULT_PROTOCOL)))):
        tab = result.get(name)
        if not tab:
            continue
        lines.append(f"{title}, {info.get('reps')} by-drifter splits, mean ± standard error:")
        lines.append(f"{'method':10s}" + "".join(f"{k:>20s}" for k in _PROTOCOL_METRICS))
        for m, v in tab.items():
            if isinstance(v, dict) and "NLL" in v:
                lines.append(f"{m:10s}" + "".join(f"{v[k]:.4g} ± {v[k + '_se']:.2g}".rjust(20) for k in _PROTOCOL_METRICS))
        pd_ = tab.get("NGB_minus_IndepNGB")
        if pd_:
            lines.append(f"paired test NLL NGB - IndepNGB: {pd_['mean']:+.4f} ± {pd_['se']:.4f} nats; "
                         f"NGB better in {pd_['wins']} of {pd_['reps']} splits")
        lines.append("")
    lines.append(f"data: {info.get('source')} ({'SYNTHETIC' if info.get('synthetic') else 'real'}), "
                 f"{info.get('n_rows')} rows, {info.get('n_drifters')} drifters, {info.get('seconds')} s; "
                 f"{info.get('units')}")
    return "\n".join(lines)


def _round_reporter(say, name, i, n_methods):
    """progress(r, n) callback for one fit that forwards to say(fraction, message) at most twice a second."""
    last = [0.0]

    def cb(r, n):
        now = time.perf_counter()
        if now - last[0] >= 0.5:
            last[0] = now
            frac = 0.05 + 0.8 * (i + min(r / max(n, 1), 1.0)) / n_methods
            say(frac, f"fitting {name}: step {r} of at most {n}")  # rounds, or output dimensions for skGB

    return cb


def clustered_mean_se(x, groups) -> tuple[float, float]:
    """Mean of x and its standard error clustered by group (rows of one drifter are not independent)."""
    x = np.asarray(x, float)
    _, g = np.unique(groups, return_inverse=True)
    r = np.bincount(g, weights=x - x.mean())
    n = x.size
    G = r.size
    se = np.sqrt(G / max(G - 1, 1) * np.sum(r**2)) / n
    return float(x.mean()), float(se)


def _rounds_used(model) -> int | list[int] | None:
    """Number of boosting rounds a fitted model predicts with (best iteration), when it says."""
    for attr in ("best_iterations_", "best_iteration_", "best_val_loss_itr", "n_estimators_", "best_epoch_"):
        v = getattr(model, attr, None)
        if isinstance(v, (int, np.integer)):
            return int(v)
        if isinstance(v, (list, tuple, np.ndarray)) and len(v):
            return [int(x) for x in np.ravel(v)]
    return None


def _in_box(lon, lat, box):
    """Whether (lon, lat) lies in box (lon0, lon1, lat0, lat1)."""
    return (lon >= box[0]) & (lon <= box[1]) & (lat >= box[2]) & (lat <= box[3])


# ----------------------------------------------------------------------------------------------
# CLI study


def _format(result: dict) -> str:
    """Table 2 layout plus the jet subset and the averaging verdict."""
    if result.get("protocol") == "paper":
        return _format_protocol(result)
    lines = [registry.default_table({k: {m: v[m] for m in ("NLL", "RMSE", "PR90_cov", "PR90_area") if m in v}
                                      for k, v in result.items() if isinstance(v, dict) and "NLL" in v})]
    for sname, sub in result.get("subsets", {}).items():
        lines.append(f"\n{sname} subset (n={sub['n']}):")
        lines.append(registry.default_table({k: {m: v[m] for m in ("NLL", "RMSE", "PR90_cov", "PR90_area")}
                                             for k, v in sub.items() if isinstance(v, dict)}))
    av = result.get("averaging", {})
    if av:
        lines.append("\naveraging of NGB and IndepNGB (weights on validation NLL), test NLL minus the better single "
                     "model (± clustered s.e.):")
        for name in AVERAGES:
            if name + "_minus_best" in av:
                lines.append(f"  {name:12s} {av[name + '_minus_best']:+.4f} ± {av[name + '_minus_best_se']:.4f}"
                             f"  beats both: {av[name + '_beats_both']}")
    shown = [m for m in PAPER_TABLE2 if isinstance(result.get(m), dict) and "NLL" in result[m]]
    if shown:
        lines.append("\npaper Table 2 (real GDP data, North Atlantic, 10 splits), NLL / RMSE / PR90 cov / PR90 area: "
                     + "; ".join(f"{m} {'/'.join(f'{v:g}' for v in PAPER_TABLE2[m])}" for m in shown))
    info = result.get("info", {})
    if info.get("nn"):
        lines.append("NN: " + ", ".join(f"{k}={v}" for k, v in info["nn"].items()))
    lines.append(f"\ndata: {info.get('source')} ({'SYNTHETIC' if info.get('synthetic') else 'real'}), "
                 f"train/val/test rows {info.get('n_train')}/{info.get('n_val')}/{info.get('n_test')}, "
                 f"{info.get('seconds')} s; {info.get('units')}")
    if info.get("absent_features"):
        lines.append(f"absent features: {', '.join(info['absent_features'])}; fitted on: {', '.join(info['features'])}")
    return "\n".join(lines)


@registry.study("drifters", options=[
    registry.Option("data", str, "sample", "'sample' (shipped synthetic North Atlantic), a path (CSV/HDF5/NetCDF) or "
                    "the directory written by 'distviz data gdp' (read on the workers with --scheduler)"),
    registry.Option("rounds", int, 300, "maximum boosting rounds per method (early stopping on validation)"),
    registry.Option("learning-rate", float, 0.1, "learning rate of every method but MGD-MVN"),
    registry.Option("mgd-learning-rate", float, 0.05, "learning rate of MGD-MVN (mirror descent in (E y, E yy^T))"),
    registry.Option("patience", int, 10, "early-stopping patience in rounds (validation NLL)"),
    registry.Option("max-depth", int, 3, "depth of every regression tree"),
    registry.Option("methods", str, None, "comma-separated subset of " + ",".join(METHODS)
                    + " (default: all; NGB,IndepNGB under --protocol paper)"),
    registry.Option("protocol", str, "default", "'default' (one split, the options below) or 'paper': lr 0.01, "
                    "patience 50, up to 2000 rounds, tree grid chosen on validation NLL, --reps splits, mean ± s.e., "
                    "beside the defaults on the same splits (--rounds, --learning-rate, --patience, --max-depth unused)"),
    registry.Option("reps", int, 10, "by-drifter splits under --protocol paper (paper: 10)"),
    registry.Option("grid-depth", str, "3,4,5,6", "tree depths of the --protocol paper grid"),
    registry.Option("grid-min-leaf", str, "1,15,32", "minimum leaf sizes of the --protocol paper grid"),
    registry.Option("seed", int, 0, "seed of the by-drifter split"),
    registry.Option("max-train", int, None, "subsample the training rows to at most this many (speed)"),
    registry.Option("bbox", str, None,
                    "keep rows in lon0,lon1,lat0,lat1; write it with = (--bbox=-83,-40,0,70, the paper's band)"),
    registry.Option("save", str, None, "write the binned results (NetCDF) to this path"),
    registry.Option("nn-hidden", str, "auto",
                    "NN hidden layers: 'auto' (authors' grid, chosen on validation NLL) or e.g. 100 or 50,20"),
    registry.Option("nn-epochs", int, 1000, "NN epoch cap (authors: 1000)"),
    registry.Option("nn-learning-rate", float, 0.01, "NN Adam learning rate (paper: 0.01)"),
    registry.Option("nn-patience", int, 50, "NN early-stopping patience in epochs (paper: 50)"),
], format_table=_format)
def drifters_study(data="sample", rounds=300, learning_rate=0.1, mgd_learning_rate=0.05, patience=10, max_depth=3,
                   methods=None, seed=0, max_train=None, bbox=None, save=None, nn_hidden="auto",
                   nn_epochs=1000, nn_learning_rate=0.01, nn_patience=50, protocol="default", reps=10,
                   grid_depth="3,4,5,6", grid_min_leaf="1,15,32"):
    """NGB vs IndepNGB (+ GB, skGB, MGD-MVN, model averages) on drifter velocities: paper Table 2."""
    import sys

    if protocol not in ("default", "paper"):
        raise ConfigError(f"--protocol must be 'default' or 'paper', got {protocol!r}.")
    if save and Path(save).exists() and not Path(save).is_file():   # a folder, FIFO or device: refused before the run
        raise ConfigError(f"--save {save} names something that is not a regular file; give the path of a new .nc file.")
    if methods is None:
        methods = "NGB,IndepNGB" if protocol == "paper" else ",".join(METHODS)
    ms = tuple(m.strip() for m in str(methods).split(",") if m.strip())
    t0 = time.perf_counter()

    last = [-10.0]

    def progress(frac, msg):  # stderr, so that --json output on stdout stays one object; rounds every 5 s
        now = time.perf_counter() - t0
        if ": step " not in msg or now - last[0] >= 5.0:
            last[0] = now
            print(f"[{now:6.1f} s {100 * frac:3.0f}%] {msg}", file=sys.stderr, flush=True)

    box = None
    if bbox:
        try:
            box = tuple(float(v) for v in str(bbox).split(","))
        except ValueError:
            box = ()
        if len(box) != 4:
            raise ConfigError(f"--bbox must be four numbers lon0,lon1,lat0,lat1, got {bbox!r}; e.g. --bbox=-83,-40,0,70.")
    if box is not None and protocol == "paper":
        from distviz.data.drifters import load_drifters

        data = load_drifters(data, bbox=box)
    from distviz.experiments.mvn_sim import _nn_hidden

    nn = {"hidden_layer_sizes": _nn_hidden(nn_hidden), "max_epochs": nn_epochs, "learning_rate": nn_learning_rate,
          "patience": nn_patience}
    if protocol == "paper":
        def ints(text, what):
            try:
                v = tuple(int(x) for x in str(text).split(",") if x.strip())
            except ValueError:
                v = ()
            if not v or min(v) < 1:
                raise ConfigError(f"--{what} must be comma-separated positive integers such as 3,4,5; got {text!r}.")
            return v

        return _plain(run_paper_protocol(data, methods=ms, reps=reps, seed=seed, max_train=max_train, nn_options=nn,
                                         depths=ints(grid_depth, "grid-depth"),
                                         min_leaves=ints(grid_min_leaf, "grid-min-leaf"), progress=progress))
    res = run_drifter_comparison(data, rounds=rounds, learning_rate=learning_rate, methods=ms, seed=seed,
                                 max_train=max_train, patience=patience, max_depth=max_depth,
                                 mgd_learning_rate=mgd_learning_rate, nn_options=nn, bbox=box, progress=progress)
    if save:
        res.save(save)
    return _plain(res.to_dict())
