"""User-chosen map grids of the drifter comparison and the per-bin uncertainty of NGB − IndepNGB (no Streamlit).

The Drifters page bins the test rows on a lon/lat grid.  `check_grid` validates a user's box and bin size (one
sentence per error, a bounded number of bins); `grid_binned` bins the test predictions on that grid;
`add_paired_se` adds to a binned result the standard error of each bin's mean paired NLL difference
NGB − IndepNGB, clustered by drifter (the rows of one drifter are not independent), and the bins where the
difference is significant by the rule |mean| > 2 s.e.
"""

from __future__ import annotations

import math

import numpy as np

from distviz.errors import ConfigError

#: At most this many bins on a user-chosen grid (the map draws every bin; the land mask tests every bin centre).
MAX_BINS = 5000
#: Bin sizes the page accepts, in degrees.
MIN_BIN_DEG, MAX_BIN_DEG = 0.1, 10.0
#: A bin is marked significant when |mean difference| > SIG_Z standard errors.
SIG_Z = 2.0
#: The map gives a bin a standard error only with at least this many test drifters: the clustered s.e. has G - 1
#: degrees of freedom (with 2 drifters the two residual sums are equal and opposite, and on the shipped sample a
#: 2-drifter bin came out at 0.0002 nats beside 0.004-0.03 for its neighbours).
MIN_DRIFTERS = 5


def check_grid(box, size) -> tuple[np.ndarray, np.ndarray]:
    """(lon edges, lat edges) of the grid of `size`-degree bins covering box (lon0, lon1, lat0, lat1).

    Edges are aligned to multiples of `size` (`distviz.experiments.drifters.bin_edges`), so the grid may reach
    up to one bin beyond the box.

    Raises
    ------
    ConfigError
        One sentence: a value that is not a finite number, a longitude outside [-180, 180] or latitude outside
        [-90, 90], a minimum not below its maximum, a bin size outside [MIN_BIN_DEG, MAX_BIN_DEG], or a grid of
        more than MAX_BINS bins.
    """
    from distviz.experiments.drifters import bin_edges

    try:
        lon0, lon1, lat0, lat1 = (float(v) for v in box)
        size = float(size)
    except (TypeError, ValueError):
        raise ConfigError("The map box and bin size must be numbers.") from None
    if not all(math.isfinite(v) for v in (lon0, lon1, lat0, lat1, size)):
        raise ConfigError("The map box and bin size must be finite numbers.")
    if not (-180.0 <= lon0 <= 180.0 and -180.0 <= lon1 <= 180.0):
        raise ConfigError("The box's longitudes must lie between -180 and 180 degrees.")
    if not (-90.0 <= lat0 <= 90.0 and -90.0 <= lat1 <= 90.0):
        raise ConfigError("The box's latitudes must lie between -90 and 90 degrees.")
    if lon0 >= lon1:
        raise ConfigError(f"The box's west longitude ({lon0:g}) must be below its east longitude ({lon1:g}).")
    if lat0 >= lat1:
        raise ConfigError(f"The box's south latitude ({lat0:g}) must be below its north latitude ({lat1:g}).")
    if not MIN_BIN_DEG <= size <= MAX_BIN_DEG:
        raise ConfigError(f"The bin size must lie between {MIN_BIN_DEG:g} and {MAX_BIN_DEG:g} degrees, not {size:g}.")
    nx = math.ceil(lon1 / size) - math.floor(lon0 / size)
    ny = math.ceil(lat1 / size) - math.floor(lat0 / size)
    if nx * ny > MAX_BINS:
        raise ConfigError(f"A {size:g}° grid over this box has {nx * ny:,} bins, more than {MAX_BINS:,}; "
                          f"choose a larger bin size or a smaller box.")
    return bin_edges(lon0, lon1, size), bin_edges(lat0, lat1, size)


def clustered_bin_se(x, groups, k, n_bins: int, min_groups: int = 2) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                                             np.ndarray]:
    """Per bin: (mean of x, its standard error clustered by group, number of rows, number of groups).

    For bin b with rows i (n_b of them) from G_b groups g, mean m_b = sum x_i / n_b and

        se_b = sqrt(G_b / (G_b - 1) * sum_g (sum_{i in g} (x_i - m_b))^2) / n_b,

    the cluster-robust (sandwich) standard error of a mean with the small-sample factor G/(G-1) (Cameron & Miller,
    "A practitioner's guide to cluster-robust inference", J. Human Resources 50, 2015, eq. 11 for a mean), as
    `distviz.experiments.drifters.clustered_mean_se` computes for the whole test set.  A bin with fewer than
    `min_groups` (at least 2) groups has no standard error (NaN); an empty bin has NaN mean.  Rows with k < 0 (off the grid) are
    ignored.
    """
    x = np.asarray(x, float)
    k = np.asarray(k)
    ok = k >= 0
    x, k = x[ok], k[ok]
    _, g = np.unique(np.asarray(groups)[ok], return_inverse=True)
    n = np.bincount(k, minlength=n_bins).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        m = np.where(n > 0, np.bincount(k, weights=x, minlength=n_bins) / n, np.nan)
    # residual sums per (bin, group) pair
    pair, p = np.unique(k.astype(np.int64) * (int(g.max()) + 1 if g.size else 1) + g, return_inverse=True)
    r = np.bincount(p, weights=x - m[k])
    pair_bin = pair // (int(g.max()) + 1 if g.size else 1)
    s2 = np.bincount(pair_bin, weights=r**2, minlength=n_bins)
    G = np.bincount(pair_bin, minlength=n_bins).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.where(G >= max(min_groups, 2), np.sqrt(G / np.maximum(G - 1, 1) * s2) / n, np.nan)
    return m, se, n, G


def significant(mean, se, z: float = SIG_Z) -> np.ndarray:
    """Boolean array: |mean| > z * se where both are finite (a bin without a standard error is never marked)."""
    mean, se = np.asarray(mean, float), np.asarray(se, float)
    ok = np.isfinite(mean) & np.isfinite(se)
    return ok & (np.abs(np.where(ok, mean, 0.0)) > z * np.where(ok, se, np.inf))


def add_paired_se(binned, predictions):
    """A copy of `binned` with nll_diff_se, n_drifters and nll_diff_sig (NGB − IndepNGB, `clustered_bin_se`; a bin
    with fewer than MIN_DRIFTERS test drifters gets no s.e. and is never marked).

    Unchanged (the same object) when the predictions lack either method's per-row NLL.
    """
    from distviz.experiments.drifters import bin_index

    if "nll_NGB" not in predictions or "nll_IndepNGB" not in predictions:
        return binned
    lon_e, lat_e = binned["lon_edge"].values, binned["lat_edge"].values
    ny, nx = lat_e.size - 1, lon_e.size - 1
    k = bin_index(predictions["lon"].values, predictions["lat"].values, lon_e, lat_e)
    d = predictions["nll_NGB"].values - predictions["nll_IndepNGB"].values
    m, se, _, G = clustered_bin_se(d, predictions["id"].values, k, nx * ny, MIN_DRIFTERS)
    out = binned.copy()
    out["nll_diff_se"] = (("lat", "lon"), se.reshape(ny, nx),
                          {"long_name": "standard error of the mean NLL difference, clustered by drifter "
                                        f"(NaN with fewer than {MIN_DRIFTERS} drifters)", "units": "nats",
                           "min_drifters": MIN_DRIFTERS})
    out["n_drifters"] = (("lat", "lon"), G.reshape(ny, nx), {"long_name": "number of test drifters", "units": "1"})
    out["nll_diff_sig"] = (("lat", "lon"), significant(m, se).reshape(ny, nx),
                           {"long_name": f"|mean NLL difference| > {SIG_Z:g} clustered standard errors"})
    return out


def grid_binned(predictions, box, size, attrs=None):
    """The test predictions binned on the user's grid (`check_grid`), with the paired s.e. (`add_paired_se`)."""
    from distviz.experiments.drifters import binned_dataset

    lon_e, lat_e = check_grid(box, size)
    methods = [str(v)[4:] for v in predictions.data_vars if str(v).startswith("nll_")]
    return add_paired_se(binned_dataset(predictions, lon_e, lat_e, methods, attrs), predictions)


def default_box(binned) -> tuple[float, float, float, float]:
    """(lon0, lon1, lat0, lat1) of a binned result's edges: the box whose grid is that result's grid."""
    lon_e, lat_e = binned["lon_edge"].values, binned["lat_edge"].values
    return float(lon_e[0]), float(lon_e[-1]), float(lat_e[0]), float(lat_e[-1])
