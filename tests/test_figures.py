"""Figure builders of distviz.viz: what a reader of the chart needs is in the figure."""

import numpy as np

from distviz.estimators import DistributionalBoosting
from distviz.viz.fits import density_heatmap_figure
from distviz.viz.trees import tree_figure


def test_tree_figure_labels_every_split_in_a_box():
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(300, 2))
    y = np.sin(2 * X[:, 0]) + 0.3 * rng.standard_normal(300)
    m = DistributionalBoosting("normal", law="mgd", n_estimators=2, max_depth=2).fit(X, y)
    fig = tree_figure(m.trace_, 1, ["a", "b"], gain_name="Gain^reg")
    splits = next(t for t in fig.data if (t.name or "").startswith("split"))
    labels = fig.layout.annotations
    assert len(labels) == len(splits.x) >= 1
    for ann, x, y in zip(labels, splits.x, splits.y):
        # the label sits above its node on an opaque box (edges into the node do not cross the text)
        assert (ann.x, ann.y) == (x, y) and ann.yanchor == "bottom" and ann.bgcolor
        assert " ≤ " in ann.text and "Gain^reg" in ann.text and "Gain^ent" in ann.text


def test_density_heatmap_axes_end_with_the_cells():
    xg = np.linspace(40, 100, 61)
    yg = np.arange(0, 6)  # a count grid: cells of width 1 centred on the integers
    dens = np.full((len(xg), len(yg)), 1 / 6)
    fig = density_heatmap_figure(xg, yg, dens, data_x=[30.0, 50.0], data_y=[1, 2])
    assert list(fig.layout.xaxis.range) == [39.5, 100.5]
    assert list(fig.layout.yaxis.range) == [-0.5, 5.5]


def test_density_heatmap_lets_the_browser_smooth_only_even_grids():
    # plotly's "fast" smoothing scales an image of the cells, so it is right only where the cells are evenly spaced
    dens = np.ones((4, 3))
    even = density_heatmap_figure(np.linspace(0, 1, 4), np.arange(3), dens)
    uneven = density_heatmap_figure(np.array([0.0, 0.1, 0.5, 1.0]), np.arange(3), dens)
    assert even.data[0].zsmooth == "fast"
    assert uneven.data[0].zsmooth == "best"


def test_app_template_keeps_every_property_of_streamlits_light_theme():
    # template() drops what the installed plotly does not know (skip_invalid): at this plotly nothing may go,
    # so a misspelt property cannot vanish unnoticed
    import json

    from distviz.viz.theme import LIGHT, template

    built = json.loads(json.dumps(template().to_plotly_json(), sort_keys=True))
    for entries in built["data"].values():
        for e in entries:
            e.pop("type", None)   # plotly names each trace default's type
    assert built == json.loads(json.dumps(LIGHT, sort_keys=True))
