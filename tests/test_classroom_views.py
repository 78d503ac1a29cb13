"""Issue #17 ("classroom-ready"), items 2, 3, 4, 6, 8 (first half) and 9: what a class sees on a projector.

AppTest checks of the pages and figure-level checks of the builders in distviz.viz.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from distviz import families

st_testing = pytest.importorskip("streamlit.testing.v1")
AppTest = st_testing.AppTest

APP = "../app.py"


def specs(at):
    """Plotly figure specs currently on the page."""
    return [json.loads(el.proto.spec) for el in at.get("plotly_chart")]


def arr(v) -> np.ndarray:
    """A plotly data array as numpy (plotly may store arrays as base64 'bdata' with a dtype)."""
    if isinstance(v, dict) and "bdata" in v:
        import base64

        a = np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"]))
        return a.reshape(v["shape"]) if "shape" in v and isinstance(v["shape"], (list, tuple)) else a
    return np.asarray(v, dtype=float)


def page(path=None, timeout=120, **query):
    """AppTest of app.py, switched to `path` when given, with URL query parameters."""
    at = AppTest.from_file(APP, default_timeout=timeout)
    for k, v in query.items():
        at.query_params[k] = v
    if path:
        at.run()
        at.switch_page(path)
    return at.run()


# ------------------------------------------------------------------------------------- item 2: explorer
def test_explorer_header_cards_zeros_and_titles():
    """MVN header keeps its asterisks, cards fit (two per row), float noise shows as 0, pmf for discrete families."""
    at = page("app_pages/explorer.py", **{"family": "mvn", "mvn.mu1": "-0.1"})
    assert not at.exception
    md = [m.value for m in at.markdown]
    header = next(v for v in md if v.startswith("**mvn family"))
    assert r"y1\*y1" in header and "5 natural parameters" in header
    table = next(v for v in md if v.startswith("| T(y) component"))
    assert "e-1" not in table, "rounding noise such as 6.9e-17 is shown as 0"
    metrics = at.get("metric")
    assert [m.label for m in metrics] == ["A(η)", "A*(η*)"]
    assert all(len(m.value) <= 7 for m in metrics), "short numbers that fit a card"
    at.sidebar.selectbox(key="explore.family").set_value("poisson").run()
    header = next(m.value for m in at.markdown if m.value.startswith("**poisson family"))
    assert "1 natural parameter," in header
    assert specs(at)[0]["layout"]["title"]["text"] == "poisson: probability mass function at the chosen parameters"
    assert len(at.get("metric")) == 4


def test_explorer_numbers_are_tidy():
    from distviz.viz import explorer as vx

    fam = families.get("mvn", P=2)
    eta, _ = vx.natural_from_conventional(fam, {"mu1": -0.1})
    tab = vx.parameter_table(fam, eta)
    raw = np.asarray(fam.to_mean(eta)).ravel()
    assert np.any((raw != 0) & (np.abs(raw) < 1e-12)), "the case has float noise before tidying"
    shown = tab["mean η* = E[T(y)]"].to_numpy()
    assert np.all((shown == 0) | (np.abs(shown) > 1e-6))
    assert vx.format_number(-3.7e-17) == "0" and vx.format_number(-0.143812) == "-0.1438"
    assert vx.describe_family(families.get("poisson")).count("1 natural parameter,") == 1


def test_mvn_heat_map_covers_every_draw_shown():
    from distviz.viz import explorer as vx

    fam = families.get("mvn", P=2)
    eta, _ = vx.natural_from_conventional(fam, {"rho": 0.9, "sigma1": 3.0})
    fig = vx.density_figure(fam, eta)
    contour = next(t for t in fig.data if t.type == "contour")
    draws = next(t for t in fig.data if t.type == "scatter")
    cx, cy, dx, dy = arr(contour.x), arr(contour.y), arr(draws.x), arr(draws.y)
    assert cx.min() <= dx.min() and dx.max() <= cx.max()
    assert cy.min() <= dy.min() and dy.max() <= cy.max()
    assert fig.layout.xaxis.range[0] <= dx.min() and fig.layout.yaxis.range[1] >= dy.max()


# ------------------------------------------------------------------------------------- item 6: data sets
def test_missing_real_data_set_is_not_offered(tmp_path, monkeypatch):
    """With no bone density file the Lab does not list it, and its help says how to add it."""
    monkeypatch.setenv("DISTVIZ_DATA", str(tmp_path))
    at = page(n="200", rounds="5", data="bone")
    assert not at.exception and not at.error
    box = at.sidebar.selectbox(key="lab.data")
    assert "bone" not in box.options and "bone density vs age" not in box.options
    assert box.value == "synthetic", "a link naming an absent set opens the default"
    assert "DISTVIZ_DATA" in box.help and "cde/bmd.tsv" in box.help


def test_present_real_data_set_is_offered(tmp_path, monkeypatch):
    (tmp_path / "cde").mkdir()
    (tmp_path / "cde" / "bmd.tsv").write_text("age\tspnbmd\n10\t0.01\n")
    monkeypatch.setenv("DISTVIZ_DATA", str(tmp_path))
    from distviz.ui.lab import available_datasets

    assert "bone" in available_datasets()


# ------------------------------------------------------------------------------------- item 8: evolution
def test_evolution_opens_at_the_best_validation_round():
    from distviz.ui.lab import model_store

    at = page("app_pages/evolution.py", n="200", lr="0.5", depth="4")
    assert not at.exception and not at.error
    best = {getattr(r.model, "best_iteration_", None) for r in model_store().items.values()
            if getattr(r, "kind", "") == "law" and r.config.learning_rate == 0.5 and r.config.max_depth == 4}
    best.discard(None)
    assert len(best) == 1
    b = best.pop()
    assert b < at.slider(key="evo.round").max, "the case overfits: the best validation round is not the last"
    assert at.slider(key="evo.round").value == b
    # a round in the URL still wins
    at2 = AppTest.from_file(APP, default_timeout=120)
    for k, v in dict(n="200", lr="0.5", depth="4").items():
        at2.query_params[k] = v
    at2.run()
    at2.switch_page("app_pages/evolution.py")
    at2.query_params["round"] = "7"
    at2.run()
    assert not at2.exception and at2.slider(key="evo.round").value == 7
