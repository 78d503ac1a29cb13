"""Offline maps: cartopy statics with the vendored Natural Earth files, plotly maps with coastline traces."""

import socket
import warnings

import numpy as np
import pytest
import xarray as xr

from distviz.errors import ConfigError
from distviz.experiments.drifters import bin_edges, binned_dataset


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    """Any socket connection or cartopy download attempt fails the test."""
    import cartopy.io

    def refuse(*a, **k):
        raise AssertionError("a map function tried to open a network connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    with warnings.catch_warnings():
        warnings.simplefilter("error", cartopy.io.DownloadWarning)
        yield
    import matplotlib.pyplot as plt

    plt.close("all")


def _predictions(n=600, seed=0):
    """Fake test predictions over the North Atlantic with a correlated 'jet' band."""
    rng = np.random.default_rng(seed)
    lon = rng.uniform(-80, -41, n)
    lat = rng.uniform(16, 54, n)
    jet = np.abs(lat - (35 + 0.2 * (lon + 75))) < 2
    mu = np.column_stack([np.where(jet, 80, 5), np.where(jet, 50, -3)]) + rng.normal(0, 2, (n, 2))
    rho = np.where(jet, 0.7, 0.0)
    sd = np.where(jet, 30, 10)
    cov = np.stack([np.stack([sd**2, rho * sd**2], -1), np.stack([rho * sd**2, sd**2], -1)], -2)
    covi = cov.copy()
    covi[:, 0, 1] = covi[:, 1, 0] = 0
    y = mu + rng.normal(0, 10, (n, 2))
    ids = np.repeat(np.arange(n // 12), 12)[:n]
    t = 16000 + np.tile(np.arange(12), n // 12 + 1)[:n]
    return xr.Dataset({"lon": ("obs", lon), "lat": ("obs", lat), "id": ("obs", ids), "t": ("obs", t.astype(float)),
                       "u": ("obs", y[:, 0]), "v": ("obs", y[:, 1]),
                       "mean_NGB": (("obs", "comp"), mu), "cov_NGB": (("obs", "comp", "comp2"), cov),
                       "mean_IndepNGB": (("obs", "comp"), mu), "cov_IndepNGB": (("obs", "comp", "comp2"), covi),
                       "nll_NGB": ("obs", np.where(jet, 8.0, 7.0)), "nll_IndepNGB": ("obs", np.where(jet, 8.3, 6.95))})


@pytest.fixture(scope="module")
def binned():
    p = _predictions()
    return binned_dataset(p, bin_edges(-81, -40, 2.0), bin_edges(15, 55, 2.0), ["NGB", "IndepNGB"])


def test_binned_dataset_values(binned):
    assert binned["n_test"].sum() == 600
    d = binned["nll_diff"].values
    assert np.nanmin(d) == pytest.approx(-0.3) and np.nanmax(d) == pytest.approx(0.05)
    assert np.nanmax(binned["rho"].values) == pytest.approx(0.7)


@pytest.mark.parametrize("kind", ["count", "nll_diff", "rho", "currents", "area90_NGB"])
def test_static_maps_draw_offline(binned, kind):
    from distviz.viz import maps

    fig = maps.map_figure(binned, kind)
    fig.canvas.draw()  # forces cartopy to read the vendored shapefiles
    ax = fig.axes[0]
    assert ax.get_xlabel() == "Longitude" and ax.get_ylabel() == "Latitude"
    assert len(fig.axes) == 2  # map + colour bar


def test_diverging_map_is_centred_blue_for_ngb_better(binned):
    from distviz.viz import maps

    fig = maps.map_figure(binned, "nll_diff")
    from matplotlib.collections import QuadMesh

    mesh = next(c for c in fig.axes[0].collections if isinstance(c, QuadMesh))
    assert mesh.norm.vcenter == 0.0 and mesh.norm.vmin == -mesh.norm.vmax
    assert mesh.get_cmap().name == "RdBu_r"  # low (negative: NGB better) is blue
    assert mesh.get_cmap()(0.0)[2] > mesh.get_cmap()(0.0)[0]


def _layout_is_clean(fig):
    """Issue 29: Figure 4's PNG had its title over the panel titles, colour-bar labels over the next panel and a
    label off the top; constrained layout, labels wrapped to the bar, the arrow key under its own map."""
    assert fig.get_layout_engine().__class__.__name__ == "ConstrainedLayoutEngine"
    r = fig.canvas.get_renderer()
    maps_ = [a for a in fig.axes if hasattr(a, "projection")]
    bars = [a for a in fig.axes if not hasattr(a, "projection")]
    assert len(maps_) == 4 and len(bars) == 4
    title = fig._suptitle.get_window_extent(r)
    assert all(title.y0 >= a.title.get_window_extent(r).y1 for a in maps_), "the title sits above the panel titles"
    fb = fig.bbox
    for a in fig.axes:
        bb = a.get_tightbbox(r)
        assert bb.x0 >= fb.x0 - 1 and bb.x1 <= fb.x1 + 1 and bb.y0 >= fb.y0 - 1 and bb.y1 <= fb.y1 + 1, "inside"
    for bar in bars:   # a bar's label stays beside its bar, clear of every map
        lab = bar.yaxis.label.get_window_extent(r)
        assert all(not lab.overlaps(m.get_window_extent(r)) for m in maps_)
        assert lab.height <= bar.get_window_extent(r).height * 1.05


def test_summary_maps_and_zoom(binned):
    from distviz.viz import maps

    fig = maps.summary_maps_figure(binned, title="Test-set summaries in 2° x 2° bins: " + "a long caption " * 8)
    fig.canvas.draw()
    assert sum(1 for a in fig.axes if hasattr(a, "projection")) == 4
    _layout_is_clean(fig)
    p = _predictions(seed=1)
    box = (p.lon >= -80) & (p.lon <= -74) & (p.lat >= 31) & (p.lat <= 35)
    zoom = binned_dataset(p.isel(obs=np.flatnonzero(box.values)), np.arange(-80, -73.9, 0.5), np.arange(31, 35.01, 0.5),
                          ["NGB", "IndepNGB"])
    maps.map_figure(zoom, "count").canvas.draw()


def test_cartopy_points_at_vendored_natural_earth():
    import cartopy

    from distviz.data import naturalearth as ne
    from distviz.viz import maps

    d = maps.configure_cartopy()
    assert cartopy.config["pre_existing_data_dir"] == d
    for scale in ne.SCALES:
        for name in ne.NAMES:
            assert ne.shapefile_path(name, scale).exists()
    assert ne.on_land([-100.0, -60.0], [40.0, 30.0]).tolist() == [True, False]
    with pytest.raises(ConfigError):
        ne.shapefile_path("rivers", "10m")


def test_plotly_maps_have_coastline_traces_and_no_geo_basemap(binned):
    from distviz.viz import maps

    for kind in ("count", "nll_diff", "rho", "currents"):
        fig = maps.map_figure_plotly(binned, kind)
        spec = fig.to_plotly_json()
        names = [t.get("name") for t in spec["data"]]
        assert "coastline" in names and "land" in names
        assert all(t["type"] in ("heatmap", "scatter") for t in spec["data"])  # no scattergeo: no CDN topojson
        assert "geo" not in spec["layout"] and spec["layout"]["xaxis"]["title"]["text"] == "Longitude"
    hm = maps.map_figure_plotly(binned, "nll_diff").data[0]
    assert hm.zmid == 0.0 and hm.zmin == -hm.zmax
    with pytest.raises(ConfigError, match="Unknown map kind"):
        maps.map_figure_plotly(binned, "temperature")


def test_ellipse_points_lie_on_the_region_boundary():
    from distviz.viz import maps

    S = np.array([[4.0, 1.5], [1.5, 2.0]])
    pts = maps.ellipse_points([1.0, -2.0], S, level=0.7)
    r = pts - [1.0, -2.0]
    d2 = np.einsum("ni,ij,nj->n", r, np.linalg.inv(S), r)
    np.testing.assert_allclose(d2, -2 * np.log(0.3))


def test_trajectory_rows_pick_the_fastest_stretch():
    from distviz.viz import maps

    p = _predictions(n=120)
    u = p["u"].values.copy()
    rows0 = np.flatnonzero(p["id"].values == 3)
    u[rows0] = 1.0
    u[rows0[5]] = 500.0  # one fast day of drifter 3
    p["u"] = ("obs", u)
    r = maps.trajectory_rows(p, 3, days=4)
    assert rows0[5] in r and len(r) == 4
    assert maps.trajectory_rows(p, 3, start=16000.0, days=4).tolist() == rows0[:4].tolist()
    from distviz.errors import DataError

    with pytest.raises(DataError, match="not in the test set"):
        maps.trajectory_rows(p, 999)


def test_maps_zoom_to_the_data_not_the_grid():
    """A whole-world grid with data in one corner is drawn around the data; the Gulf Stream zoom keeps its box."""
    from distviz.viz import maps

    p = _predictions(n=240, seed=2)
    world = binned_dataset(p, bin_edges(-180, 180, 2.0), bin_edges(-80, 80, 2.0), ["NGB", "IndepNGB"])
    lo0, lo1, la0, la1 = maps.data_extent(world)
    assert -84 <= lo0 < float(p.lon.min()) and float(p.lon.max()) < lo1 <= -36
    assert 10 <= la0 < float(p.lat.min()) and float(p.lat.max()) < la1 <= 60
    fig = maps.map_figure_plotly(world, "nll_diff", scale="110m")
    assert tuple(fig.layout.xaxis.range) == pytest.approx((lo0, lo1))
    assert tuple(fig.layout.yaxis.range) == pytest.approx((la0, la1))
    ax = maps.map_figure(world, "count", scale="110m").axes[0]
    x0, x1, y0, y1 = ax.get_extent()
    assert x0 == pytest.approx(lo0, abs=0.5) and y1 == pytest.approx(la1, abs=0.5)
    box = (p.lon >= -80) & (p.lon <= -74) & (p.lat >= 31) & (p.lat <= 35)
    zoom = binned_dataset(p.isel(obs=np.flatnonzero(box.values)), np.arange(-80, -73.9, 0.5), np.arange(31, 35.01, 0.5),
                          ["NGB", "IndepNGB"])
    assert maps.data_extent(zoom) == pytest.approx(maps.GULF_STREAM_BOX)


def test_bins_on_land_are_masked_counts_hover_and_no_bin_is_cut_off(binned):
    """Issue 29: bins were drawn over land, the easternmost bins clipped and no bin count shown."""
    from distviz.data import naturalearth as ne
    from distviz.viz import maps

    land = maps.land_bins(binned, "110m")
    lon, lat = np.meshgrid(binned["lon"].values, binned["lat"].values)
    np.testing.assert_array_equal(land, ne.on_land(lon, lat, "110m"))
    n = binned["n_test"].values
    assert (land & (n > 0)).any() and (~land & (n > 0)).any(), "the fixture has data bins on land and at sea"
    fig = maps.map_figure_plotly(binned, "nll_diff", scale="110m")
    heat = fig.data[0]
    z = np.array([[np.nan if v is None else v for v in row] for row in heat.z], dtype=float)
    assert np.isnan(z[land]).all() and np.isfinite(z[~land & (n > 0)]).all()
    assert [t.name for t in fig.data[1:3]] == ["land", "coastline"], "land drawn over the bins"
    assert np.array_equal(np.asarray(heat.customdata, dtype=float), n) and "test points" in heat.hovertemplate
    hit = land & (n > 0)
    assert f"({int(n[hit].sum())} test point" in fig.layout.title.text, "the masked bins are said"
    assert heat.hoverongaps is False, "no hover (and no made-up value) on an empty bin"
    lo0, lo1, la0, la1 = fig.layout.xaxis.range + fig.layout.yaxis.range
    jj, ii = np.nonzero(n > 0)
    e_lon, e_lat = binned["lon_edge"].values, binned["lat_edge"].values
    assert lo0 <= e_lon[ii.min()] and e_lon[ii.max() + 1] <= lo1, "every data bin lies inside the map, east edge too"
    assert la0 <= e_lat[jj.min()] and e_lat[jj.max() + 1] <= la1
    assert fig.layout.xaxis.constrain == "domain" == fig.layout.yaxis.constrain, "the aspect never trims the range"


def test_nll_difference_map_shows_its_se_and_outlines_the_significant_bins(binned):
    """Issue 29 item 4: the NGB − IndepNGB map with its clustered s.e. on hover and the |mean| > 2 s.e. bins outlined."""
    from distviz.experiments.drifter_grid import add_paired_se
    from distviz.viz import maps

    b = add_paired_se(binned, _predictions())
    fig = maps.map_figure_plotly(b, "nll_diff", scale="110m")
    heat = fig.data[0]
    assert "%{text}" in heat.hovertemplate and "test points" in heat.hovertemplate
    land = maps.land_bins(b, "110m")
    sig = b["nll_diff_sig"].values & ~land
    assert sig.any() and (~sig & (b["n_test"].values > 0)).any(), "the fixture has clear and unclear bins"
    j, i = np.argwhere(sig)[0]
    assert heat.text[j][i].startswith("s.e. ") and "> 2 s.e." in heat.text[j][i]
    outline = [t for t in fig.data if t.name == "|mean| > 2 s.e." and t.line.color == "black"][0]
    assert sum(v is None for v in outline.x) == int(sig.sum()), "one rectangle per significant bin at sea"
    assert f"outlined: {int(sig.sum())} bins where |mean| > 2 s.e." in fig.layout.title.text
    assert "text" not in maps.map_figure_plotly(binned, "nll_diff").data[0].hovertemplate, "no s.e.: no s.e. line"


def test_extent_contains_every_data_bin_of_a_grid_past_the_dateline():
    """A grid aligned to its bin size may reach past 180°: the map's extent still holds its edge bins."""
    from distviz.viz import maps

    p = _predictions(n=120, seed=3)
    p["lon"] = ("obs", np.linspace(175.0, 179.9, 120))
    g = binned_dataset(p, bin_edges(174.3, 180.0, 0.7), bin_edges(15, 55, 2.0), ["NGB", "IndepNGB"])
    lo0, lo1, la0, la1 = maps.data_extent(g)
    jj, ii = np.nonzero(g["n_test"].values > 0)
    assert lo0 <= g["lon_edge"].values[ii.min()] and g["lon_edge"].values[ii.max() + 1] <= lo1
    assert la0 <= g["lat_edge"].values[jj.min()] and g["lat_edge"].values[jj.max() + 1] <= la1
