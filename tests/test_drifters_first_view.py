"""Drifters page's first view (#17 item 5): the precomputed default shows NGB's edge over IndepNGB, the banner
names the real drifter subset without server paths, maps read °W / °N, arrows fit the grid, the trajectory
plot is fitted to its data, and the paper's Figures 4-6 download as PNG / PDF drawn offline."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from apptest_pages import open_page


@pytest.fixture(scope="module")
def shipped():
    from distviz.experiments.drifters import load_precomputed

    res = load_precomputed()
    assert res is not None, "rerun scripts/make_drifter_sample.py --comparison-only"
    return res


@pytest.fixture(scope="module")
def at():
    return open_page("app_pages/drifters.py", {})


def _table(at):
    for el in at.markdown:
        lines = el.value.splitlines()
        if lines and lines[0].startswith("| method |"):
            return {c[0]: c[1:] for c in ([x.strip() for x in ln.strip("|").split("|")] for ln in lines[2:])}
    return {}


def test_default_is_the_precomputed_setting_where_ngb_wins(at, shipped):
    from distviz.experiments.drifters import APP_DEFAULTS

    assert APP_DEFAULTS["max_train"] == 30000 and APP_DEFAULTS["rounds"] == 300
    assert at.sidebar.select_slider(key="train").value == 30000
    assert any("Precomputed" in c.value for c in at.caption)
    rows = _table(at)
    assert rows["NGB"][0] == "7.534" and rows["IndepNGB"][0] == "7.553", "the README's figures on first view"
    assert shipped.table["IndepNGB"]["NLL"] - shipped.table["NGB"]["NLL"] > 0.01
    assert "rounds used" in at.markdown[[i for i, m in enumerate(at.markdown) if "| method |" in m.value][0]].value


def test_banner_names_the_real_subset_and_no_server_path(at):
    texts = [e.value for e in at.info] + [e.value for e in at.caption]
    texts += [w.proto.help for w in at.sidebar.selectbox] + [b.proto.help for b in at.sidebar.button]
    assert any("real drifter subset" in t and "upload" in t for t in at.info.values)
    assert not [t for t in texts if "shared/data" in t or "../" in t], "no developer paths on the page"
    assert "PR90_area" not in " ".join(texts)


def test_map_axes_read_west_and_north(at):
    import json

    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    xa, ya = spec["layout"]["xaxis"], spec["layout"]["yaxis"]
    assert xa["title"]["text"] == "Longitude" and all(t.endswith("°W") for t in xa["ticktext"])
    assert all(t.endswith("°N") for t in ya["ticktext"])


def test_degree_labels():
    from distviz.viz.geo import degree_ticks, lat_label, lon_label

    assert [lon_label(v) for v in (-75, 0, 10, 180, -180)] == ["75°W", "0°", "10°E", "180°", "180°"]
    assert [lat_label(v) for v in (30, 0, -12.5)] == ["30°N", "0°", "12.5°S"]
    vals, text = degree_ticks(-80, -74, lon_label)
    assert vals[0] == -80 and text[-1] == "74°W" and 4 <= len(vals) <= 9


def test_current_arrows_are_scaled_to_the_grid(shipped):
    from distviz.viz import maps

    ref, k = maps.arrow_scale([5.0, 10.0, 18.0, 22.0, 60.0], 2.0)
    assert ref in (20.0, 50.0) and k * ref == pytest.approx(1.6)
    fig = maps.map_figure_plotly(shipped.binned, "currents")
    lines = [t for t in fig.data if t.name == "current" and t.mode == "lines"]
    x = np.array([v if v is not None else np.nan for v in lines[-1].x], float).reshape(-1, 3)[:, :2]
    y = np.array([v if v is not None else np.nan for v in lines[-1].y], float).reshape(-1, 3)[:, :2]
    length = np.hypot(np.diff(x, axis=1)[:, 0], np.diff(y, axis=1)[:, 0])
    size = float(shipped.binned.attrs.get("bin_size_deg", 2.0))
    assert np.percentile(length, 90) > 0.5 * size, "typical arrows span most of a bin"
    assert length.max() <= 1.3 * size + 1e-9


def test_trajectory_is_fitted_to_its_data_in_equal_km(shipped):
    from distviz.viz import maps

    fig = maps.trajectory_ellipses_plotly(shipped.predictions)
    assert fig.layout.yaxis.scaleanchor == "x" and fig.layout.yaxis.scaleratio == 1.0
    assert "km" in fig.layout.xaxis.title.text and "km" in fig.layout.yaxis.title.text
    def points(v):   # NaN between the ellipses: gaps
        v = np.asarray(v, float)
        return v[np.isfinite(v)]

    pts = [(points(t.x), points(t.y)) for t in fig.data if t.name not in ("land", "coastline")]
    xs, ys = np.concatenate([p[0] for p in pts]), np.concatenate([p[1] for p in pts])
    (x0, x1), (y0, y1) = fig.layout.xaxis.range, fig.layout.yaxis.range
    assert x0 <= xs.min() and xs.max() <= x1 and y0 <= ys.min() and ys.max() <= y1
    fill = max(np.ptp(xs) / (x1 - x0), np.ptp(ys) / (y1 - y0))
    assert fill > 0.8, "the data fill the plot along at least one axis (no wide empty margins)"
    plot_h = fig.layout.height - fig.layout.margin.t - fig.layout.margin.b
    assert (y1 - y0) / (x1 - x0) == pytest.approx(plot_h / 860, rel=1e-6), "ranges match the plot's aspect"


def test_publication_figures_render_offline(shipped):
    import cartopy

    from distviz.ui.drifters import PUBLICATION, publication_bytes

    assert list(PUBLICATION) == ["fig4", "fig5", "fig6"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", cartopy.io.DownloadWarning)
        png = publication_bytes(shipped, "fig6", "png")
        pdf = publication_bytes(shipped, "fig5", "pdf")
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20000
    assert pdf[:5] == b"%PDF-" and len(pdf) > 10000


def test_publication_buttons_on_the_page(at):
    ids = " ".join(b.proto.id for b in at.get("download_button"))
    for which in ("fig4", "fig5", "fig6"):
        for fmt in ("png", "pdf"):
            assert f"drift.pub.{which}.{fmt}" in ids, (which, fmt)
    assert all(b.proto.deferred_file_id or b.proto.url for b in at.get("download_button"))


def test_model_checks_and_row_downloads_on_the_page(at):
    """Folded at first paint (no check computed); opened, the PIT histogram and coverage curve of every bivariate
    Normal method and the table; the per-row CSV / NetCDF buttons are deferred and the precomputed result says how
    to get model files.  (Runs last: it opens the checks panel in the module's page.)"""
    import json

    ids = " ".join(b.proto.id for b in at.get("download_button"))
    assert "drift.dl.csv" in ids and "drift.dl.nc" in ids
    assert any("Refit now" in c.value and "fitted models" in c.value for c in at.caption)
    n0 = len(at.get("plotly_chart"))
    at.session_state["drift.checks_open"] = True
    at.run()
    assert not at.exception
    specs = [json.loads(el.proto.spec) for el in at.get("plotly_chart")]
    assert len(specs) == n0 + 2
    by_title = {s["layout"].get("title", {}).get("text", "").split(",")[0]: s for s in specs}
    assert "PIT histogram" in by_title and "Coverage vs nominal level" in by_title
    assert "3,868 held-out rows" in by_title["PIT histogram"]["layout"]["title"]["text"]
    names = {t.get("name") for t in by_title["Coverage vs nominal level"]["data"]}
    assert {"NGB", "IndepNGB", "Oracle"} <= names and "Mix-global" not in names
    assert any(m.value.startswith("| method | held-out rows | NLL (nats) | energy score (cm/s)") for m in at.markdown)


def test_first_map_shows_the_nll_difference_se_and_a_chosen_box_rebins_it(at):
    """Issue 29 item 4: the first map is the comparison's own 2° grid with its s.e. on hover and the rule said; a
    box west of east is refused with one sentence; a chosen box and bin size rebin the map and the map holds them."""
    import base64
    import json

    def arr(v):   # plotly writes numeric arrays as {dtype, bdata}
        return np.frombuffer(base64.b64decode(v["bdata"]), v["dtype"]) if isinstance(v, dict) else np.asarray(v)

    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    heat = spec["data"][0]
    heat["x"] = arr(heat["x"])
    assert heat["x"][0] == -83.0 and heat["x"][1] - heat["x"][0] == 2.0, "the first view's grid is unchanged"
    assert "%{text}" in heat["hovertemplate"] and "|mean| > 2 s.e." in spec["layout"]["title"]["text"]
    assert any("clustered by drifter" in c.value for c in at.caption)
    assert at.number_input(key="dbin").value == 2.0 and at.number_input(key="lon0").value == -84.0
    at.number_input(key="lon0").set_value(-30.0).run()
    assert [e.value for e in at.error] and all("west longitude" in e.value for e in at.error)
    at.number_input(key="lon0").set_value(-70.0)
    at.number_input(key="dbin").set_value(1.0).run()
    assert not at.error
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    x = arr(spec["data"][0]["x"])
    assert x[0] == -69.5 and x[1] - x[0] == 1.0 and x[-1] == -40.5
    lo0, lo1 = spec["layout"]["xaxis"]["range"]
    assert lo0 <= -70.0 and lo1 >= -40.0, "the extent holds the edge bins"
    at.number_input(key="lon0").set_value(-84.0)
    at.number_input(key="dbin").set_value(2.0).run()   # back to the first view for the tests below
