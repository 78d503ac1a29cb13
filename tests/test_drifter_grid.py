"""User-chosen drifter map grids and the per-bin uncertainty of NGB − IndepNGB (issue 29 item 4); no Streamlit."""

import numpy as np
import pytest
import xarray as xr

from distviz.errors import ConfigError
from distviz.experiments import drifter_grid as dg
from distviz.experiments.drifters import bin_edges, binned_dataset, clustered_mean_se


def _direct_se(x, groups):
    """The clustered s.e. of a mean written out by loops: sqrt(G/(G-1) sum_g (sum_{i in g} (x_i - m))^2) / n."""
    m = sum(x) / len(x)
    sums = {}
    for v, g in zip(x, groups):
        sums[g] = sums.get(g, 0.0) + (v - m)
    G = len(sums)
    return (G / (G - 1) * sum(s * s for s in sums.values())) ** 0.5 / len(x)


def test_bin_se_matches_a_direct_computation_on_a_tiny_table():
    x = [0.5, -0.2, 0.1, 0.9, -1.0, 0.3, 0.0, 2.0]
    g = [7, 7, 3, 3, 5, 9, 9, 4]
    k = [0, 0, 0, 1, 0, 1, 1, -1]   # the last row is off the grid
    m, se, n, G = dg.clustered_bin_se(x, g, k, 3)
    b0 = [0, 1, 2, 4]
    b1 = [3, 5, 6]
    assert m[0] == pytest.approx(np.mean([x[i] for i in b0])) and m[1] == pytest.approx(np.mean([x[i] for i in b1]))
    assert se[0] == pytest.approx(_direct_se([x[i] for i in b0], [g[i] for i in b0]))
    assert se[1] == pytest.approx(_direct_se([x[i] for i in b1], [g[i] for i in b1]))
    assert se[1] == pytest.approx(clustered_mean_se([x[i] for i in b1], [g[i] for i in b1])[1])
    assert n.tolist() == [4, 3, 0] and G.tolist() == [3, 2, 0]
    assert np.isnan(m[2]) and np.isnan(se[2])
    one = dg.clustered_bin_se([1.0, 2.0], [4, 4], [0, 0], 1)[1]
    assert np.isnan(one[0]), "one drifter in a bin: no standard error"


def test_significance_is_abs_mean_over_two_se_and_never_without_an_se():
    mean = np.array([0.3, -0.3, 0.1, 0.5, np.nan])
    se = np.array([0.1, 0.1, 0.1, np.nan, 0.1])
    assert dg.significant(mean, se).tolist() == [True, True, False, False, False]


@pytest.mark.parametrize("box,size,match", [
    ((-80, -90, 20, 40), 2.0, "west longitude"),
    ((-80, -40, 40, 40), 2.0, "south latitude"),
    ((-200, -40, 20, 40), 2.0, "longitudes"),
    ((-80, -40, -95, 40), 2.0, "latitudes"),
    ((-80, -40, 20, 40), 0.0, "bin size"),
    ((-80, -40, 20, 40), float("nan"), "finite"),
    ((-180, 180, -90, 90), 0.5, "more than"),
    (("a", -40, 20, 40), 2.0, "numbers"),
])
def test_bad_boxes_and_bin_sizes_say_one_sentence(box, size, match):
    with pytest.raises(ConfigError, match=match) as e:
        dg.check_grid(box, size)
    assert str(e.value).count(". ") == 0 and str(e.value).endswith(".")


def test_a_valid_grid_is_aligned_and_bounded():
    lon_e, lat_e = dg.check_grid((-81, -40, 15, 55), 2.0)
    np.testing.assert_array_equal(lon_e, bin_edges(-81, -40, 2.0))
    assert (lon_e.size - 1) * (lat_e.size - 1) <= dg.MAX_BINS
    lon_e, _ = dg.check_grid((170.3, 180, 0, 10), 0.7)   # aligned edges may pass 180°
    assert lon_e[0] <= 170.3 and lon_e[-1] >= 180


def _pred(n=240, seed=0):
    rng = np.random.default_rng(seed)
    lon, lat = rng.uniform(-60, -50, n), rng.uniform(20, 30, n)
    ids = np.repeat(np.arange(n // 6), 6)
    a = rng.normal(7.0, 1.0, n)
    b = a + np.where(lon < -55, 0.5, 0.0) + rng.normal(0, 0.05, n)   # NGB better in the west
    return xr.Dataset({"lon": ("obs", lon), "lat": ("obs", lat), "id": ("obs", ids), "u": ("obs", a),
                       "v": ("obs", a), "nll_NGB": ("obs", a), "nll_IndepNGB": ("obs", b)})


def test_grid_binned_adds_the_paired_se_and_marks_the_clear_bins():
    p = _pred()
    ds = dg.grid_binned(p, (-60, -50, 20, 30), 5.0)
    assert ds["n_test"].shape == (2, 2) and int(ds["n_test"].sum()) == 240
    d = p["nll_NGB"].values - p["nll_IndepNGB"].values
    k = np.flatnonzero((p.lon.values < -55) & (p.lat.values < 25))
    assert float(ds["nll_diff"].values[0, 0]) == pytest.approx(d[k].mean())
    assert float(ds["nll_diff_se"].values[0, 0]) == pytest.approx(clustered_mean_se(d[k], p.id.values[k])[1])
    assert ds["nll_diff_sig"].values[:, 0].all() and not ds["nll_diff_sig"].values[:, 1].any()
    same = binned_dataset(p, *dg.check_grid(dg.default_box(ds), 5.0), ["NGB", "IndepNGB"])
    np.testing.assert_array_equal(same["n_test"].values, ds["n_test"].values)
    assert dg.add_paired_se(ds, p.drop_vars("nll_NGB")) is ds, "no NGB: nothing to add"


def test_bins_with_few_drifters_get_no_se():
    p = _pred(n=24)   # 4 drifters of 6 rows
    ds = dg.grid_binned(p, (-60, -50, 20, 30), 10.0)
    assert int(ds["n_drifters"].values.max()) == 4 < dg.MIN_DRIFTERS
    assert np.isnan(ds["nll_diff_se"].values).all() and not ds["nll_diff_sig"].values.any()
    assert ds["nll_diff_se"].attrs["min_drifters"] == dg.MIN_DRIFTERS
