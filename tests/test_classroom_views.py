"""Issue #17 ("classroom-ready"), items 2, 3, 4, 6, 8 (first half) and 9: what a class sees on a projector.

AppTest checks of the pages and figure-level checks of the builders in distviz.viz.
"""

from __future__ import annotations

import numpy as np
import pytest

from distviz import families

st_testing = pytest.importorskip("streamlit.testing.v1")
AppTest = st_testing.AppTest

from apptest_pages import APP, chart_specs, page  # noqa: E402  (tests/ is on sys.path)


def specs(at):
    """Plotly figure specs currently on the page."""
    return chart_specs(at)


def arr(v) -> np.ndarray:
    """A plotly data array as numpy (plotly may store arrays as base64 'bdata' with a dtype)."""
    if isinstance(v, dict) and "bdata" in v:
        import base64

        a = np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"]))
        return a.reshape(v["shape"]) if "shape" in v and isinstance(v["shape"], (list, tuple)) else a
    return np.asarray(v, dtype=float)


# ------------------------------------------------------------------------------------- item 2: explorer
def test_explorer_header_cards_zeros_and_titles():
    """MVN header writes its products as y1·y2, cards fit (two per row), float noise shows as 0, pmf for discrete
    families."""
    at = page("app_pages/explorer.py", **{"family": "mvn", "mvn.mu1": "-0.1"})
    assert not at.exception
    md = [m.value for m in at.markdown]
    header = next(v for v in md if v.startswith("**mvn family"))
    assert "y1·y1" in header and "5 natural parameters" in header, "products in symbols (issue 29)"
    table = next(v for v in md if v.startswith("| T(y) component"))
    assert "e-1" not in table, "rounding noise such as 6.9e-17 is shown as 0"
    metrics = at.get("metric")
    assert [m.label for m in metrics] == ["A(η)", "A*(η*)"]
    assert all(len(m.value) <= 7 for m in metrics), "short numbers that fit a card"
    at.sidebar.selectbox(key="family").set_value("poisson").run()
    header = next(m.value for m in at.markdown if m.value.startswith("**poisson family"))
    assert "1 natural parameter," in header
    assert specs(at)[0]["layout"]["title"]["text"] == "poisson: probability mass function<br><sup>at the chosen parameters</sup>"
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
    box = at.sidebar.selectbox(key="data")
    assert "bone" not in box.options and "bone density vs age" not in box.options
    assert box.value == "synthetic", "a link naming an absent set opens the default"
    assert "DISTVIZ_DATA" in box.help and "cde/bmd.tsv" in box.help


def test_present_real_data_set_is_offered(tmp_path, monkeypatch):
    (tmp_path / "cde").mkdir()
    (tmp_path / "cde" / "bmd.tsv").write_text("age\tspnbmd\n10\t0.01\n")
    monkeypatch.setenv("DISTVIZ_DATA", str(tmp_path))
    from distviz.ui.fits import available_datasets

    assert "bone" in available_datasets()


# ------------------------------------------------------------------------------------- item 8: evolution
def test_evolution_opens_at_the_best_validation_round():
    from distviz.ui.algorithms import Kind
    from distviz.ui.fits import model_store

    at = page("app_pages/evolution.py", n="200", lr="0.5", depth="4")
    assert not at.exception and not at.error
    best = {getattr(r.model, "best_iteration_", None) for r in model_store().items.values()
            if getattr(r, "kind", None) is Kind.LAW and r.config.learning_rate == 0.5 and r.config.max_depth == 4}
    best.discard(None)
    assert len(best) == 1
    b = best.pop()
    assert b < at.slider(key="round").max, "the case overfits: the best validation round is not the last"
    assert at.slider(key="round").value == b
    # a round in the URL still wins
    at2 = AppTest.from_file(APP, default_timeout=120)
    for k, v in dict(n="200", lr="0.5", depth="4").items():
        at2.query_params[k] = v
    at2.run()
    at2.switch_page("app_pages/evolution.py")
    at2.query_params["round"] = "7"
    at2.run()
    assert not at2.exception and at2.slider(key="round").value == 7


# ------------------------------------------------------------------------------------- item 3: bands
@pytest.mark.parametrize("name,kw,mean", [("normal", {}, [[1.0, 5.0]]), ("poisson", {}, [[4.0]]),
                                          ("gamma", {}, None), ("exponential", {}, [[2.0]]),
                                          ("mvn", {"P": 2}, [[0.5, 0.3, 1.2, 0.2, 1.0]])])
def test_band_uses_exact_quantiles(name, kw, mean):
    from scipy import stats
    from scipy.special import digamma

    from distviz.viz.fits import predictive_band

    fam = families.get(name, **kw)
    mean = np.array([[digamma(3.0) - np.log(2.0), 1.5]]) if mean is None else np.array(mean)
    eta = np.repeat(fam.to_natural(mean), 4, axis=0)
    m, lo, hi = predictive_band(fam, eta)
    mv, var = fam.mean_and_variance(eta)
    if name == "normal":
        sd = np.sqrt(np.ravel(var))
        want = (np.ravel(mv) - 1.6448536269514722 * sd, np.ravel(mv) + 1.6448536269514722 * sd)
    elif name == "poisson":
        want = stats.poisson.ppf([[0.05], [0.95]], np.ravel(mv))
    elif name == "gamma":
        want = stats.gamma.ppf([[0.05], [0.95]], 3.0, scale=1 / 2.0) * np.ones((1, 4))
    elif name == "exponential":
        want = stats.expon.ppf([[0.05], [0.95]], scale=2.0) * np.ones((1, 4))
    else:
        sd = np.sqrt(np.diagonal(var, axis1=1, axis2=2))
        want = (mv - 1.6448536269514722 * sd, mv + 1.6448536269514722 * sd)
    np.testing.assert_allclose(lo, want[0], rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(hi, want[1], rtol=1e-7, atol=1e-9)


def test_true_and_fitted_band_edges_are_smooth_in_the_lab():
    """The Lab's true 90% band is exact: its edges have no Monte-Carlo jitter (tiny second differences)."""
    at = page(n="200", rounds="20")
    assert not at.exception
    fig = next(s for s in specs(at) if any(t.get("name") == "true 90% band" for t in s["data"]))
    band = next(t for t in fig["data"] if t.get("name") == "true 90% band")
    y = arr(band["y"])
    upper = y[: len(y) // 2]
    scale = np.ptp(upper)
    assert np.max(np.abs(np.diff(upper, 2))) < 0.01 * scale, "no jagged edge"


def test_band_fallback_for_other_families_is_smooth():
    """A family without exact quantiles gets many common-random-number draws, smoothed over the grid rows."""
    from distviz.viz.fits import predictive_band

    class Other:
        """The Normal under another name (no exact quantiles known for it)."""

        name, y_dim = "other", 1

        def __init__(self):
            self.base = families.get("normal")

        def sample(self, eta, rng):
            return self.base.sample(eta, rng)

        def mean_and_variance(self, eta):
            return self.base.mean_and_variance(eta)

    fam = Other()
    mu = np.linspace(-2, 2, 200)
    eta = fam.base.to_natural(np.column_stack([mu, mu ** 2 + 1.0]))
    m, lo, hi = predictive_band(fam, eta)
    np.testing.assert_allclose(hi - m, 1.645, atol=0.08)
    assert np.max(np.abs(np.diff(hi, 2))) < 0.02


# ------------------------------------------------------------------------------------- item 4: NLL chart
def test_nll_chart_entropy_panel_clipped_axis_and_non_finite_note():
    from distviz.viz.fits import nll_figure

    r = np.arange(101)
    train = 2.0 - 0.8 * (1 - np.exp(-r / 20))
    train[70:] = 1e4                      # a blow-up
    valid = train + 0.1
    valid[85:] = np.nan                   # and then non-finite values
    ent = 0.5 + 0.3 * (r % 2)             # zig-zags every round
    fig = nll_figure(r, train, valid, ent, current=40)
    lo, hi = fig.layout.yaxis.range
    assert lo < 1.3 and hi < 5, "the axis covers the useful range, not the blow-up"
    tri = [t for t in fig.data if (t.name or "").endswith("above the axis")]
    assert tri and np.all(arr(tri[0].y) == hi) and len(arr(tri[0].x)) == 31
    text = " ".join(a.text for a in fig.layout.annotations)
    assert "validation NLL not finite from round 85" in text and "train NLL above the axis at 31 rounds" in text
    ent_traces = [t for t in fig.data if (t.name or "").startswith("entropy")]
    assert ent_traces and all(t.yaxis == "y2" for t in ent_traces), "entropy in its own panel"
    assert fig.layout.yaxis2.domain[1] < fig.layout.yaxis.domain[0]
    smooth = next(t for t in ent_traces if "running mean" in t.name)
    assert np.ptp(arr(smooth.y)[10:-10]) < 0.05, "the smoothed entropy does not zig-zag"


def test_nll_chart_without_blow_up_keeps_every_point():
    from distviz.viz.fits import nll_figure

    r = np.arange(50)
    train = 2.0 - 0.5 * (1 - np.exp(-r / 10))
    fig = nll_figure(r, train, train + 0.05)
    lo, hi = fig.layout.yaxis.range
    assert lo <= train.min() and hi >= (train + 0.05).max()
    assert not fig.layout.annotations and not [t for t in fig.data if "above" in (t.name or "")]


# ------------------------------------------------------------------------------------- item 9: split gains
@pytest.fixture(scope="module")
def ngd_trace():
    from distviz.estimators import DistributionalBoosting

    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(300, 2))
    y = np.sin(2 * X[:, 0]) + 0.3 * rng.standard_normal(300)
    return DistributionalBoosting("normal", law="ngd", n_estimators=3, max_depth=2).fit(X, y).trace_


def test_tree_names_gain_and_leaf_coordinates(ngd_trace):
    from distviz.viz.trees import LABEL_FONT, gain_scatter_figure, top_splits, tree_figure

    fig = tree_figure(ngd_trace, 1, ["a", "b"])
    assert all("Gain^NGD" in a.text for a in fig.layout.annotations), "the trace's gain name by default"
    assert all(a.font.size >= 13 and a.font.color == LABEL_FONT["color"] for a in fig.layout.annotations)
    leaf = next(t for t in fig.data if (t.name or "").startswith("leaf"))
    assert leaf.textfont.size >= 13
    assert all("η1 " in t and "η2 " in t for t in leaf.text), "leaf outputs are named, not bare pairs"
    assert "η1 = μ/σ²" in leaf.name and "η2 = −1/(2 σ²)" in leaf.name, "the names in symbols (issue 29)"
    assert fig.layout.legend.y == 0.0, "the legend sits right under the tree (no blank band)"
    assert "Gain^NGD" in top_splits(ngd_trace, 5).columns
    assert gain_scatter_figure(ngd_trace).layout.xaxis.title.text.startswith("Gain^NGD")


def test_a_clicked_tree_node_has_its_details(ngd_trace):
    """Issue 29: clicking a tree node did nothing.  Every node marker carries its node id (the page shows
    `node_details` of the node a click selects): a leaf's path from the root, weight and outputs, a split's gains."""
    from distviz.viz.trees import node_details, round_nodes, tree_figure

    fig = tree_figure(ngd_trace, 1, ["a", "b"])
    nodes = round_nodes(ngd_trace, 1)
    marked = sorted(i for t in fig.data if t.customdata is not None for i in t.customdata)
    assert marked == sorted(int(i) for i in nodes.index), "every split and leaf can be clicked"
    leaf = next(int(i) for i in nodes.index if nodes.at[i, "left"] < 0)
    d = dict(node_details(ngd_trace, 1, leaf, ["a", "b"]).to_numpy())
    assert d["node"] == f"leaf {leaf} of round 1" and d["path from the root"].count(" and ") == int(d["depth"]) - 1
    assert d["path from the root"].split(" ")[0] in ("a", "b")
    assert any(k.startswith("output added to η: μ/σ²") for k in d)
    root = dict(node_details(ngd_trace, 1, int(nodes.index[0]), ["a", "b"]).to_numpy())
    assert root["path from the root"] == "the root (all rows)" and "Gain^NGD" in root and "Gain^ent" in root
    with pytest.raises(KeyError):
        node_details(ngd_trace, 1, 999)


def test_split_gains_tab_and_top_splits_height(monkeypatch):
    import streamlit as st

    seen = []
    real = st.dataframe
    monkeypatch.setattr(st, "dataframe",
                        lambda data, *a, **kw: seen.append((len(data), kw.get("height"))) or real(data, *a, **kw))
    at = page("app_pages/split_gains.py", n="200", srounds="20")
    assert not at.exception
    at.session_state["view"] = "Top splits"
    at.run()
    assert not at.exception
    labels = [t.label for t in at.tabs]
    assert "Gain^NGD vs Gain^ent" in labels and "Gain^reg vs Gain^ent" not in labels
    assert "Gain^NGD" in at.dataframe[0].value.columns
    rows, height = seen[-1]
    assert height == 35 * (rows + 1) + 3, "35 px rows and header, a 3 px frame: the grid ends with its last row"
