"""Figures shared across sessions (issue 32 item 2): one build per key, presenter mode kept apart."""

from __future__ import annotations

import json
import uuid

import numpy as np
import pytest

from distviz.ui import figures, layout
from distviz.viz.margins import with_reserved_margins


def test_one_build_per_key_and_presenter_mode_builds_its_own(monkeypatch):
    builds = []

    def build():
        builds.append(1)
        return {"n": len(builds)}

    mode = {"on": False}
    monkeypatch.setattr(layout, "presenting", lambda: mode["on"])
    key = ("test-shared", uuid.uuid4().hex)  # a key no other test uses
    a = figures.shared_figures("t", key, build)
    b = figures.shared_figures("t", key, build)
    assert a is b and len(builds) == 1       # the second session reuses the first one's figures
    mode["on"] = True
    c = figures.shared_figures("t", key, build)
    assert c is not a and len(builds) == 2   # presenter mode has its own fonts and line widths
    assert figures.shared_figures("t", (*key, 2), build) is not a and len(builds) == 3


def _views(res) -> list:
    """Every figure a page draws of the fit `res`: the Lab's, and Evolution's at two rounds."""
    from distviz.viz import results as vr

    figs = list(res.algo.lab_figures(res.model, res.data))
    for r in (1, res.config.n_estimators):
        if res.algo.has_particles:
            figs.append(vr.wg_round_figure(res.model, res.data, r, res.algo.method))
        else:
            figs.extend(vr.law_round_figures(res.model, res.data, r, res.config.algorithm).values())
    return list(_flat(figs))


def _flat(obj):
    if isinstance(obj, dict):
        obj = obj.values()
    if isinstance(obj, (list, tuple, type({}.values()))):
        for v in obj:
            yield from _flat(v)
    elif obj is not None:
        yield obj


def test_a_frozen_figures_dict_is_plotlys_to_dict_made_without_its_deep_copy():
    """`figures._frozen_dict` replaces plotly's ``to_dict`` (a deep copy of the figure, then base64 of its arrays) for
    the shared figures: the same dict, float32 / float64 arrays, 2-D arrays, int arrays and plain lists included."""
    import plotly.graph_objects as go

    from distviz.ui.fits import FitConfig, fit_result

    figs = []
    for algorithm, family in (("mgd", "normal"), ("ngd", "poisson"), ("wg_ska", "normal")):
        figs += _views(fit_result(FitConfig(family=family, algorithm=algorithm, n=200, n_estimators=5, seed=1)))
    odd = go.Figure(go.Heatmap(z=np.arange(12, dtype=np.int64).reshape(3, 4), x=[1, 2, 3, 4], y=np.zeros(0)))
    odd.add_scatter(x=np.arange(5)[::2], y=np.linspace(0, 1, 3)[::-1], customdata=np.ones((3, 2)))
    figs.append(odd)
    kinds = set()
    for fig in figs:
        fig = figures.compact(fig)
        want = _text(go.Figure.to_dict(fig))
        frozen = figures._frozen(go.Figure(fig))
        got = frozen.to_dict()
        assert _text(got) == want
        assert frozen.to_dict() is got                            # made once
        assert _text(go.Figure.to_dict(frozen)) == want           # and the figure itself is untouched
        kinds |= {t["dtype"] for t in _typed(got)}
    assert {"f4", "f8", "i1"} <= kinds, kinds


def test_a_frozen_figure_falls_back_to_plotlys_own_dict_on_another_plotly(monkeypatch):
    """A plotly whose helpers `_typed_arrays` imports are named otherwise (the floor version of pyproject.toml lacks
    ``is_homogeneous_array``) gets plotly's own ``to_dict``, not an ImportError on every shared chart."""
    import plotly.graph_objects as go

    def floor_plotly(obj):
        raise ImportError("cannot import name 'is_homogeneous_array' from '_plotly_utils.utils'")

    monkeypatch.setattr(figures, "_typed_arrays", floor_plotly)
    fig = go.Figure(go.Scatter(x=np.linspace(0, 1, 20), y=np.arange(20.0)))
    want = _text(go.Figure.to_dict(fig))
    assert _text(figures._frozen(go.Figure(fig)).to_dict()) == want


def _text(d: dict) -> str:
    return json.dumps(d, sort_keys=True, default=_plain)


def _plain(v):
    return v.tolist() if isinstance(v, np.ndarray) else str(v)


def _typed(obj):
    """The typed-array specs inside a figure dict."""
    if isinstance(obj, dict):
        if "bdata" in obj:
            yield obj
        for v in obj.values():
            yield from _typed(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _typed(v)


def test_a_shared_figures_key_is_a_text_that_determines_it():
    assert figures._key_text((True, (("n", 500), ("lr", 0.1), ("x_cols", ("a", "b"))), 3, None)) == (
        "(True, (('n', 500), ('lr', 0.1), ('x_cols', ('a', 'b'))), 3, None)")
    assert figures._key_text((1, 0.1)) != figures._key_text((1, "0.1"))
    with pytest.raises(TypeError, match="holds a ndarray"):
        figures._key_text(("fit", np.zeros(3)))


def test_the_drifter_pages_figures_are_shared_per_comparison_and_view():
    """The Drifters page's map and trajectory are built once per (comparison, view) and shared, like the other
    pages' figures; another comparison object of the same settings (*Refit now*, another upload) gets its own, and
    a box with no test point gives None (the page says so instead of drawing an empty map)."""
    import copy

    from distviz.experiments.drifter_grid import default_box
    from distviz.experiments.drifters import load_precomputed
    from distviz.ui import drifters as ud
    from distviz.viz import maps

    res = load_precomputed()
    assert res is not None
    box, size = default_box(res.binned), float(res.binned.attrs.get("bin_size_deg", 2.0))
    fig = ud.map_figure(res, True, box, size, "nll_diff")
    assert ud.map_figure(res, True, box, size, "nll_diff") is fig, "one build for every session of this view"
    direct = figures.compact(maps.map_figure_plotly(ud.map_binned(res, True, box, size), "nll_diff", scale="110m"))
    # the shared map is the one the page drew before, with margins that hold its labels and colour bar
    assert fig.to_json() == with_reserved_margins(direct).to_json(), "the shared map is the page's map"
    assert ud.map_figure(res, True, box, size, "rho") is not fig
    assert ud.map_figure(res, False, box, size, "nll_diff") is not fig   # the Gulf Stream zoom
    refit = copy.copy(res)   # another result object with the same settings, as *Refit now* makes
    vars(refit).pop("_figure_token", None)
    assert ud.result_token(refit) != ud.result_token(res)
    assert ud.map_figure(refit, True, box, size, "nll_diff") is not fig
    assert ud.map_figure(res, True, (150.0, 160.0, 0.0, 10.0), 2.0, "nll_diff") is None, "no test point there"

    did = maps.pick_trajectory(res.predictions)[0]
    traj = ud.trajectory_figure(res, did)
    assert ud.trajectory_figure(res, did) is traj
    direct = figures.compact(maps.trajectory_ellipses_plotly(res.predictions, did))
    assert traj.to_json() == with_reserved_margins(direct).to_json()
