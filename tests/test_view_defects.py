"""Issue 29 item 5: defects of the app's views, each checked on the figure builder or the setting that shows it.

Builder-level checks only (no page run): a WGBoost fit of 60 rows and 5 rounds is the one fit here.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import pytest

from distviz.ui.fits import FitConfig, load_data, make_estimator


def _axis_title(fig, axis: str = "yaxis") -> str:
    return str(fig.layout[axis].title.text or "")


@pytest.fixture(scope="module")
def wg_poisson():
    """A small WGBoost SKA fit on the Lab's synthetic Poisson data (the Lab's own estimator, fewer rows and rounds,
    a 50-step initial flow instead of 1000)."""
    cfg = FitConfig(family="poisson", algorithm="wg_ska", n=60, n_estimators=5, n_particles=5)
    data = load_data(cfg)
    return make_estimator(cfg).set_params(init_rounds=50).fit(data.X, data.y), data


def test_wgboost_poisson_particles_are_rates_on_the_count_axis(wg_poisson):
    """The particles are log rates θ; drawn raw (−1.5 to 2.5) beside counts (0-15) under 'y: particle location'."""
    from distviz.viz.results import wg_lab_figures, wg_round_figure

    model, data = wg_poisson
    fig = wg_lab_figures(model, data, "wg_ska")[0]
    part = next(t for t in fig.data if str(t.name).startswith("particles"))
    theta = model.predict_particles(np.linspace(data.X[:, 0].min(), data.X[:, 0].max(), 60)[:, None])[:, :, 0]
    assert np.allclose(np.sort(np.asarray(part.y)), np.sort(np.exp(theta).reshape(-1)))
    assert np.all(np.asarray(part.y) > 0), "rates, never negative log rates"
    y = np.asarray(data.y, dtype=float)
    assert np.median(part.y) == pytest.approx(np.median(y), rel=1.0), "on the scale of the counts"
    assert "λ = e^θ" in _axis_title(fig) and "particle location" not in _axis_title(fig)
    replay = wg_round_figure(model, data, 5, "ska")
    assert "λ = e^θ" in _axis_title(replay) and np.all(np.asarray(replay.data[-1].y) > 0)


def test_ood_axis_says_which_end_is_in_distribution():
    """'high: in-distribution' after a variance read backwards: the title names both ends, low = out."""
    from distviz.viz.posterior import ood_figure

    title = _axis_title(ood_figure([10.0, 100.0], [1.0, 2.0]), "xaxis")
    assert "high: in-distribution" not in title
    assert title.index("out of distribution") < title.index("in distribution"), "left (low) is out of distribution"


def test_a_legend_sits_below_a_two_line_axis_title():
    """The OOD axis title has two lines: the legend under it moved down a line (it covered the second line)."""
    from distviz.viz.posterior import ood_figure
    from distviz.viz.style import apply_style

    two = ood_figure([10.0, 100.0], [1.0, 2.0])
    one = apply_style(go.Figure(go.Scatter(x=[0, 1], y=[0, 1], name="a"), layout=dict(xaxis_title="x")))
    assert _axis_title(two, "xaxis").count("<br>") == 1
    assert two.layout.legend.y <= one.layout.legend.y - 0.08 and two.layout.margin.b > one.layout.margin.b


def _panel_titles(fig) -> list:
    return [a for a in fig.layout.annotations if a.yref == "paper" and a.yanchor == "bottom" and a.y >= 0.999]


@pytest.mark.parametrize("title", ["geometry at x = 0.3: iterate paths up to the last round, ring = round 12",
                                   "NLL and entropy<br><sup>ring: round 3</sup>"])
def test_figure_title_sits_above_the_panel_titles(title):
    """The geometry panel and the standalone trees drew their title over their panels' titles."""
    from distviz.viz.fits import geometry_figure
    from distviz.viz.trees import criterion_comparison_figure

    path = np.cumsum(np.ones((4, 2)), axis=0)
    figs = [geometry_figure({"mgd": (path, path), "ngd": (path, -path)}, natural_names=["mu/sigma^2", "-1/(2 sigma^2)"],
                            mean_names=["E[y]", "E[y^2]"], current=2, title=title),
            criterion_comparison_figure(np.arange(5.0), np.ones((5, 2)), {"variance": np.ones((5, 2))},
                                        stat_names=["y", "y^2"], title=title)]
    for fig in figs:
        panels = _panel_titles(fig)
        assert len(panels) == 2
        t = fig.layout.title
        assert (t.yref, t.y, t.yanchor) == ("container", 1.0, "top"), "pinned to the top of the figure"
        lines = t.text.split("<br>")
        title_px = t.pad.t + 1.3 * t.font.size * len(lines)
        panel_px = 1.3 * max(a.font.size for a in panels)
        assert fig.layout.margin.t >= title_px + panel_px, "the title's lines end above the panel titles"


def test_family_names_are_drawn_in_symbols():
    """sigma^2, eta*, R^2 were drawn beside σ², η*, R²: figure labels and the explorer use the symbols."""
    from distviz import families
    from distviz.viz.explorer import describe_family, parameter_table
    from distviz.viz.fits import geometry_figure, iterates_figure
    from distviz.viz.palette import ALGO_LABELS
    from distviz.viz.trees import criterion_comparison_figure

    fam = families.get("normal")
    path = np.cumsum(np.ones((3, 2)), axis=0)
    geo = geometry_figure({"mgd": (path, path)}, natural_names=fam.natural_names, mean_names=fam.mean_names)
    it = iterates_figure(np.arange(3.0), np.ones((3, 2)), np.ones((3, 2)), natural_names=fam.natural_names,
                         mean_names=fam.mean_names)
    crit = criterion_comparison_figure(np.arange(3.0), np.ones((3, 2)), {}, stat_names=fam.param_names)
    texts = [geo.layout.xaxis.title.text, geo.layout.yaxis.title.text, geo.layout.xaxis2.title.text,
             geo.layout.yaxis2.title.text]
    texts += [a.text for f in (geo, it, crit) for a in f.layout.annotations] + list(ALGO_LABELS.values())
    texts += [describe_family(families.get("mvn", P=2)), *parameter_table(fam, [[0.0, -0.5]])["T(y) component"]]
    ascii_math = [t for t in texts if any(w in t for w in ("sigma", "eta", "^2", " in R"))]
    assert not ascii_math, ascii_math
    assert "μ/σ²" in texts and "y²" in " ".join(texts) and "ℝ²" in describe_family(families.get("mvn", P=2))
