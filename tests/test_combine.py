"""distviz.viz.combine: two figures as one chart of two panels, each panel as it was drawn alone."""

import json

import numpy as np
import plotly.graph_objects as go
import pytest

from distviz.viz.combine import can_combine, side_by_side


def _two_row_figure():
    """A figure like the Lab's NLL chart: two stacked subplots, a shape across both, a horizontal legend."""
    return go.Figure(
        [go.Scatter(x=[0, 1, 2], y=[3, 2, 1], name="train"), go.Scatter(x=[0, 1, 2], y=[1, 2, 2], xaxis="x2",
                                                                       yaxis="y2", name="entropy")],
        {"title": {"text": "NLL<br><sup>sub</sup>", "x": 0.0, "xanchor": "left"}, "height": 620,
         "margin": {"l": 60, "r": 20, "t": 76, "b": 60},
         "xaxis": {"anchor": "y", "matches": "x2", "showticklabels": False}, "yaxis": {"domain": [0.42, 1.0]},
         "xaxis2": {"anchor": "y2", "title": {"text": "round"}}, "yaxis2": {"anchor": "x2", "domain": [0, 0.24]},
         "shapes": [{"type": "line", "xref": "x", "yref": "paper", "x0": 1, "x1": 1, "y0": 0, "y1": 1}],
         "legend": {"orientation": "h", "x": 0.0, "y": -0.18, "font": {"size": 12}}})


def _heatmap_figure():
    return go.Figure([go.Heatmap(z=np.arange(6.0).reshape(2, 3), name="density"),
                      go.Scatter(x=[0, 1], y=[0, 1], mode="markers", name="data")],
                     {"title": {"text": "density"}, "height": 500, "margin": {"l": 50, "r": 40, "t": 50, "b": 50},
                      "annotations": [{"text": "note", "xref": "paper", "yref": "paper", "x": 0.5, "y": 1.0}]})


def test_each_panel_keeps_its_traces_axes_title_legend_and_shapes_in_its_column():
    a, b = _heatmap_figure(), _two_row_figure()
    fig = side_by_side([a, b], gap=0.1)
    d = fig.to_plotly_json()
    lay = d["layout"]
    panels = lay["meta"]["panels"]
    assert [p["title"] for p in panels] == ["density", "NLL<br><sup>sub</sup>"]
    assert lay["meta"]["name"] == "density and NLL"
    # the traces of each panel, in order, with their data
    for p, src in zip(panels, (a, b)):
        start, stop = p["traces"]
        got, want = d["data"][start:stop], src.to_plotly_json()["data"]
        assert [t.get("name") for t in got] == [t.get("name") for t in want]
        for t, w in zip(got, want):
            for k in ("x", "y", "z"):
                if k in w:
                    assert np.array_equal(np.asarray(t[k]), np.asarray(w[k]))
    # axes renamed apart: the first panel keeps x / y, the second's are x2, x3 / y2, y3
    assert [(t["xaxis"], t["yaxis"]) for t in d["data"]] == [("x", "y"), ("x", "y"), ("x2", "y2"), ("x3", "y3")]
    assert lay["xaxis"]["domain"] == pytest.approx([0.0, 0.45])
    assert lay["xaxis2"]["domain"] == pytest.approx([0.55, 1.0]) and lay["xaxis3"]["domain"] == pytest.approx([0.55, 1.0])
    assert lay["xaxis2"]["matches"] == "x3" and lay["xaxis2"]["anchor"] == "y2"
    # every y axis is anchored to its own panel's x axis (an unanchored one would sit at the first panel's edge)
    assert (lay["yaxis"]["anchor"], lay["yaxis2"]["anchor"], lay["yaxis3"]["anchor"]) == ("x", "x2", "x3")
    assert lay["yaxis2"]["domain"] == [0.42, 1.0] and lay["yaxis3"]["domain"] == [0, 0.24]
    # the second panel's shape follows its renamed axis; the first's paper annotation moves into its column
    assert lay["shapes"] == [{"type": "line", "xref": "x2", "yref": "paper", "x0": 1, "x1": 1, "y0": 0, "y1": 1}]
    note = next(a for a in lay["annotations"] if a["text"] == "note")
    assert note["x"] == pytest.approx(0.5 * 0.45)
    # the heat map's colour bar stands at its panel's right edge, not at the figure's
    assert d["data"][0]["colorbar"]["x"] == pytest.approx(1.02 * 0.45)
    # titles become annotations above their panels; legends stand in their columns, one entry per line
    titles = [a for a in lay["annotations"] if a["text"] != "note"]
    assert [t["x"] for t in titles] == pytest.approx([0.45 * 0.5, 0.55])
    assert all(t["yref"] == "paper" and t["y"] == 1.0 and t["yanchor"] == "bottom" for t in titles)
    assert [t["legend"] for t in d["data"]] == ["legend", "legend", "legend2", "legend2"]
    assert lay["legend2"]["x"] == pytest.approx(0.55) and lay["legend2"]["orientation"] == "v"
    assert lay["legend2"]["font"]["size"] == 12
    # the largest height and margins of the two
    assert lay["height"] == 620 and lay["margin"] == {"l": 60, "r": 40, "t": 76, "b": 60}
    json.dumps(fig.to_plotly_json(), default=lambda v: v.tolist())   # a valid, serialisable figure


def test_template_styles_every_panels_legend_and_title():
    """A template styles `legend` and `title` only: the second panel's legend and both title annotations get the
    template's values too (legend font colour merged key by key with the figure's own font size)."""
    tpl = go.layout.Template(layout={"legend": {"font": {"color": "#262730"}},
                                     "title": {"font": {"color": "#2F2D2B", "size": 16}}})
    figs = [go.Figure(f, layout_template=tpl) for f in (_two_row_figure(), _two_row_figure())]
    lay = side_by_side(figs).to_plotly_json()["layout"]
    assert lay["legend2"]["font"] == {"color": "#262730", "size": 12}
    assert all(a["font"]["color"] == "#2F2D2B" for a in lay["annotations"])


def test_figures_with_other_subplots_or_menus_are_not_combined():
    geo = go.Figure(go.Scattergeo(lon=[0], lat=[0]))
    menu = go.Figure(go.Scatter(x=[0], y=[0]), {"updatemenus": [{"buttons": []}]})
    plain = _two_row_figure()
    assert can_combine([plain, _heatmap_figure()])
    assert not can_combine([plain, geo]) and not can_combine([menu, plain]) and not can_combine([plain])
    with pytest.raises(ValueError, match="x/y subplots"):
        side_by_side([plain, geo])


def test_lab_and_evolution_draw_the_fit_and_the_nll_as_one_chart_and_apart_in_presenter_mode():
    """The pages' side-by-side figures are one chart of two panels (one plotly chart less for the browser to draw);
    presenter mode, whose larger legends would not fit in half a chart, draws them in two columns."""
    pytest.importorskip("streamlit.testing.v1")
    from apptest_pages import page

    small = {"n": "200", "rounds": "20"}
    for path, key, n_other in [(None, "lab.fig", 0), ("app_pages/evolution.py", "evo.row", 1)]:
        at = page(path, **small)
        assert not at.exception
        charts = at.get("plotly_chart")
        assert len(charts) == 1 + n_other and charts[0].proto.id.endswith(f"-{key}")
        titles = [p["title"] for p in json.loads(charts[0].proto.spec)["layout"]["meta"]["panels"]]
        assert titles[0].startswith("data, fitted mean and 90% band") and titles[1].startswith("NLL and entropy")
        shown = page(path, present="true", **small)
        assert not shown.exception and len(shown.get("plotly_chart")) == 2 + n_other
