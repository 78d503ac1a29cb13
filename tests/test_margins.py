"""distviz.viz.margins: margins sized in Python so that plotly lays a chart out once (the browser check that plotly
keeps them on every page is in test_browser.py)."""

import numpy as np
import plotly.graph_objects as go
import pytest

from distviz.viz.margins import _legend_height, _text_width, _tick_labels, reserve_margins, with_reserved_margins


def test_tick_labels_follow_plotlys_rule():
    # the Posterior page's y axis: plotly labels 1.5, 2, 2.5, ... 5.5 (seen in Chromium)
    assert _tick_labels(1.1538, 5.5798, 364, True) == ["1.5", "2", "2.5", "3", "3.5", "4", "4.5", "5", "5.5"]
    # the Lab's: a minus sign, whole numbers
    assert _tick_labels(-3.4, 5.3, 400, True)[:2] == ["−3", "−2"]
    assert _tick_labels(0, 50000, 400, True)[-1] == "50k"
    assert _tick_labels(0.0, 0.0, 400, True)   # a constant axis still gets labels
    assert _tick_labels(np.nan, 1.0, 400, True) == []


def test_text_width_uses_source_sans_widths_and_drops_tags():
    assert _text_width("1.5", 12) == pytest.approx(12 * (0.497 * 2 + 0.25))
    assert _text_width("<b>1</b>", 10) == pytest.approx(4.97)
    assert _text_width("mm", 10) > _text_width("ii", 10)


def _figure(legend_y=-0.18, names=("data", "fitted mean", "band"), height=500, orientation="v"):
    fig = go.Figure([go.Scatter(x=np.linspace(-3, 3, 50), y=np.linspace(-30, 120, 50), name=n) for n in names])
    fig.update_layout(height=height, margin=dict(l=60, r=20, t=50, b=60), xaxis_title="x", yaxis_title="y",
                      legend=dict(orientation=orientation, x=0.0, xanchor="left", y=legend_y, yanchor="top"))
    return fig


def test_a_legend_below_the_plot_gets_the_bottom_margin_it_needs():
    fig = _figure()
    lay, data = fig.layout.to_plotly_json(), [t.to_plotly_json() for t in fig.data]
    m = reserve_margins(lay, data)
    h = _legend_height(lay["legend"], ["data", "fitted mean", "band"], 640.0)
    # the legend's top sits 0.18 plot heights below the plot, and the legend ends inside the figure
    plot_h = 500 - 50 - m["b"]
    assert 0.18 * plot_h + h <= m["b"] + 1
    assert m["t"] == 50   # the top margin is kept
    # y labels up to "120" and a title: more than 60 px on the left
    assert m["l"] > 60
    more = reserve_margins(*(lambda f: (f.layout.to_plotly_json(), [t.to_plotly_json() for t in f.data]))(
        _figure(names=("a", "b", "c", "d", "e", "f"))))
    assert more["b"] > m["b"]   # each entry of a vertical legend adds a row


def test_margins_are_kept_where_they_suffice_and_never_shrunk():
    fig = _figure(legend_y=1.0)
    fig.update_layout(margin=dict(l=200, r=200, b=200, t=50))
    assert reserve_margins(fig.layout.to_plotly_json(), [t.to_plotly_json() for t in fig.data]) is None


def test_figures_without_a_height_or_with_a_map_are_left_alone():
    fig = _figure()
    fig.update_layout(height=None)
    assert reserve_margins(fig.layout.to_plotly_json(), [t.to_plotly_json() for t in fig.data]) is None
    geo = go.Figure(go.Scattergeo(lon=[0, 1], lat=[0, 1]), layout=dict(height=400))
    assert reserve_margins(geo.layout.to_plotly_json(), [t.to_plotly_json() for t in geo.data]) is None


def test_a_colour_bar_gets_the_right_margin():
    fig = go.Figure(go.Heatmap(z=np.arange(20.0).reshape(4, 5)), layout=dict(height=400, margin=dict(r=20)))
    m = reserve_margins(fig.layout.to_plotly_json(), [t.to_plotly_json() for t in fig.data])
    assert m["r"] > 60


def test_with_reserved_margins_on_a_figure_and_on_its_dict_agree_and_is_idempotent():
    fig = _figure()
    d = fig.to_dict()   # arrays as plotly's typed-array specs (base64), as a chart's spec holds them
    with_reserved_margins(fig)
    with_reserved_margins(d)
    assert fig.layout.margin.to_plotly_json() == d["layout"]["margin"]
    once = fig.layout.margin.to_plotly_json()
    with_reserved_margins(fig)
    assert fig.layout.margin.to_plotly_json() == once


def test_the_app_draws_a_figure_it_cannot_estimate_as_it_was_built():
    from distviz.ui import figures

    odd = {"layout": {"height": 400, "yaxis": {"domain": "bad"}}, "data": [{"type": "scatter", "y": [1, 2]}]}
    assert figures._reserve(odd) is odd and "margin" not in odd["layout"]
    assert figures._reserve({"a": None, "b": 3}) == {"a": None, "b": 3}   # not figures: as they are


def test_a_log_axis_is_labelled_by_powers_of_ten_of_its_data():
    from distviz.viz.margins import _label_texts

    data = [{"type": "scatter", "x": [1.0, 2.0], "y": np.array([1.0, 1000.0])}]
    labels = _label_texts({"yaxis": {"type": "log"}}, data, "y", 400.0)
    assert labels == ["0.1", "1", "10", "100", "1000", "10000"]
    assert _label_texts({"yaxis": {"type": "log", "range": [0, 2]}}, data, "y", 400.0) == ["1", "10", "100"]


def test_an_absurd_log_range_is_bounded_work():
    from distviz.viz.margins import _label_texts

    labels = _label_texts({"yaxis": {"type": "log", "range": [0, 1e12]}}, [], "y", 400.0)
    assert len(labels) == 12 and labels[0] == "1"
