"""Issue #17 items 7, 8 (second half) and 11: the Lab's and Evolution's views of every kind of fit.

AppTest checks of the pages (small fits: 200 rows, 20 rounds) and checks of the figure builders.
"""

from __future__ import annotations

import numpy as np
import pytest

st_testing = pytest.importorskip("streamlit.testing.v1")

from apptest_pages import chart_specs, page  # noqa: E402  (tests/ is on sys.path)

SMALL = dict(n="200", rounds="20")


def specs(at):
    """Plotly figure specs currently on the page."""
    return chart_specs(at)


def title(spec) -> str:
    t = spec["layout"].get("title", {})
    return t.get("text", "") if isinstance(t, dict) else str(t)


def arr(v) -> np.ndarray:
    """A plotly data array as numpy (plotly may store arrays as base64 'bdata' with a dtype)."""
    if isinstance(v, dict) and "bdata" in v:
        import base64

        a = np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"]))
        return a.reshape(v["shape"]) if "shape" in v and isinstance(v["shape"], (list, tuple)) else a
    return np.asarray(v, dtype=float)


def fit_of(at, algorithm: str, family: str):
    """The stored fit of this session's Lab settings."""
    from distviz.ui.fits import model_store

    hits = [r for r in model_store().items.values()
            if getattr(r, "config", None) is not None and r.config.algorithm == algorithm and r.config.family == family
            and r.config.n == 200 and r.config.n_estimators == 20]
    assert hits
    return hits[-1]


# ------------------------------------------------------------------------------------- item 7: Lab views
def test_mvn_lab_shows_correlation_against_truth_and_ellipses():
    at = page(family="mvn", **SMALL)
    assert not at.exception and not at.error
    figs = {title(s).split("<br>")[0]: s for s in specs(at)}
    rho = figs["correlation ρ(x) of y1 and y2"]
    names = [t["name"] for t in rho["data"]]
    assert "true ρ(x)" in names and any(n.startswith("fitted ρ(x)") for n in names)
    fitted = arr(next(t for t in rho["data"] if t["name"].startswith("fitted"))["y"])
    assert np.all(np.abs(fitted) <= 1) and np.ptp(fitted) > 0.2, "a correlation that varies with x"
    ell = figs["90% ellipses at three inputs"]
    solid = [t for t in ell["data"] if t["mode"] == "lines" and "dash" not in t.get("line", {})]
    dashed = [t for t in ell["data"] if t.get("line", {}).get("dash") == "dash"]
    assert len(solid) == 3 and len(dashed) == 3, "a fitted and a true ellipse at three inputs"


def test_ngboost_lab_has_validation_nll_best_round_and_mean_at_it():
    from distviz.viz.results import input_grid

    at = page(algo="ngboost", lr="0.5", **SMALL)
    assert not at.exception and not at.error
    res = fit_of(at, "ngboost", "normal")
    model, best = res.model, res.model.best_iteration_
    assert np.isfinite(model.valid_loss_).all() and len(model.valid_loss_) == 21
    assert 0 < best < 20, "lr 0.5 overfits within 20 rounds: the best validation round is not the last"
    cards = {m.label: m.value for m in at.get("metric")}
    assert cards["best validation round"] == str(best)
    nll = next(s for s in specs(at) if title(s).startswith("NGBoost NLL per round"))
    assert any(t["name"] == "validation NLL" for t in nll["data"])
    ring = next(t for t in nll["data"] if t["name"].startswith("round "))
    assert arr(ring["x"])[0] == best
    fit = next(s for s in specs(at) if title(s).startswith("NGBoost mean"))
    mean = arr(next(t for t in fit["data"] if t["name"].startswith("fitted mean"))["y"])
    G = input_grid(res.data.X)
    np.testing.assert_allclose(mean, model.predict_dist(G, max_iter=best).mean())
    assert not np.allclose(mean, model.predict_dist(G, max_iter="all").mean())


def test_categorical_wgboost_shows_class_probabilities_per_particle():
    at = page(family="categorical", algo="wg_ska", particles="4", **SMALL)
    assert not at.exception and not at.error
    fig = next(s for s in specs(at) if title(s).startswith("class probabilities of every particle"))
    dots = [t for t in fig["data"] if t["name"] == "particles (one dot each)"]
    assert len(dots) == 3, "one panel per class"
    P = np.stack([arr(t["y"]) for t in dots])           # (K, inputs x particles)
    assert P.min() >= 0 and P.max() <= 1
    np.testing.assert_allclose(P.sum(axis=0), 1.0, atol=1e-9)   # every particle's probabilities sum to one
    assert all(a["yaxis"]["title"]["text"] == "class probability" for a in [fig["layout"]] if "yaxis" in a)


def test_plain_gd_has_its_own_colour():
    from distviz.viz.palette import OKABE_ITO, ROLE_COLORS, algo_color

    at = page(algo="gd", **SMALL)
    assert not at.exception
    fit = specs(at)[0]
    mean = next(t for t in fit["data"] if t["name"].startswith("fitted mean"))
    taken = {ROLE_COLORS["data"], ROLE_COLORS["marker"], "#555555", "#7f7f7f", OKABE_ITO["black"]}
    assert mean["line"]["color"] not in taken and mean["line"]["color"] in OKABE_ITO.values()
    for crossed in ("mgd_natural", "ngd_mean"):
        assert algo_color(crossed) in OKABE_ITO.values() and algo_color(crossed) not in taken


def test_sparse_gp_summary_shows_only_what_applies():
    from distviz.ui.fits import FitConfig, describe_config

    at = page(algo="sgp_elbo", n="200")
    assert not at.exception and not at.error
    labels = [m.label for m in at.get("metric")]
    assert "L-BFGS iterations" in labels and not any("NLL" in x or "round" in x for x in labels)
    titles = [title(s) for s in specs(at)]
    assert len(titles) == 2 and titles[1].startswith("L-BFGS objective"), "the objective fills the second column"
    at.session_state["lab.more_open"] = True
    at.run()
    assert not at.exception
    shown = [w.label for w in at.sidebar.get("select_slider")] + [w.label for w in at.sidebar.get("slider")]
    assert "Boosting rounds" not in shown and "Learning rate ν" not in shown and "Tree depth" not in shown
    line = describe_config(FitConfig(algorithm="sgp_elbo"))
    assert "rounds" not in line and "ν" not in line and "depth" not in line
    # issue 29: the folded box was labelled "rows, rounds, learning rate, depth" for the sparse GP too
    labels = [e.proto.popover.label for e in at.sidebar.get("popover")]
    assert any(x.startswith("More settings") for x in labels), labels
    assert not any("rounds" in x or "learning rate" in x or "depth" in x for x in labels), labels
    from distviz.ui.algorithms import get

    assert "particles" in get("wg_ska").more_label() and "rounds" in get("mgd").more_label()


def test_incompatible_pairs_are_not_offered_and_explained():
    at = page(family="poisson", algo="ngboost", **SMALL)
    assert not at.exception and not at.error, "a link to an impossible pair opens a valid view, no error"
    box = at.sidebar.selectbox(key="algo")
    from distviz.ui.algorithms import REGISTRY

    assert REGISTRY["ngboost"].label not in box.options and REGISTRY["mgd"].label in box.options   # the labels
    assert box.value == "mgd"
    assert "Not offered for this family: NGBoost" in box.help
    assert at.query_params.get("algo") in (None, REGISTRY["mgd"].label), "the refused value left the address"
    from distviz.ui.algorithms import compatible, not_offered

    for fam in ("normal", "mvn", "categorical", "bernoulli", "gamma"):
        text = not_offered(list(REGISTRY), fam)
        hidden = [a for a in REGISTRY if compatible(a, fam) is not None]
        assert bool(text) == bool(hidden)


def _diverging_result(dataset: str, x_cols=(), p=1):
    import xarray as xr

    from distviz.ui.fits import FitConfig, FitResult, LabData

    t = np.r_[np.linspace(2.0, 1.0, 20), np.linspace(1.0, 9.0, 20)]
    trace = xr.Dataset({"train_nll": ("round", t), "valid_nll": ("round", t)}, coords={"round": np.arange(40)})

    class Model:
        trace_ = trace
        best_iteration_ = 19

    cfg = FitConfig(dataset=dataset, algorithm="mgd", x_cols=tuple(x_cols), y_col="y" if x_cols else "", p=p)
    data = LabData(np.zeros((50, max(len(x_cols), 1))), np.zeros(50), "x", "y", dataset)
    return FitResult(cfg, Model(), data, 0.1, "law")


def test_divergence_advice_names_settings_the_data_set_has():
    from distviz.ui.fits import fit_warnings

    for res in (_diverging_result("upload", ("a",)), _diverging_result("faithful")):
        (msg,) = fit_warnings(res)
        assert "diverged" in msg and "noise features" not in msg and "learning rate ν" in msg
    (msg,) = fit_warnings(_diverging_result("upload", ("a", "b")))
    assert "fewer x columns" in msg
    (msg,) = fit_warnings(_diverging_result("synthetic", p=3))
    assert "noise features p" in msg


# ------------------------------------------------------------------------------------- item 8: Evolution
def test_evolution_replays_ngboost_rounds():
    at = page("app_pages/evolution.py", algo="ngboost", lr="0.5", **SMALL)
    assert not at.exception and not at.error
    res = fit_of(at, "ngboost", "normal")
    slider = at.slider(key="round")
    assert slider.max == 20 and slider.value == res.model.best_iteration_
    titles = [title(s) for s in specs(at)]
    assert any(t.startswith("NGBoost NLL per round") for t in titles)
    par = next(s for s in specs(at) if title(s).startswith("NGBoost parameters per round"))
    assert {a["text"] for a in par["layout"]["annotations"]} >= {"mean", "sd"}
    slider.set_value(3).run()
    assert not at.exception
    fit = next(s for s in specs(at) if title(s).startswith("NGBoost mean"))
    assert "round 3" in title(fit)
    from distviz.viz.results import input_grid

    mean = arr(next(t for t in fit["data"] if t["name"].startswith("fitted mean"))["y"])
    np.testing.assert_allclose(mean, res.model.predict_dist(input_grid(res.data.X, 120), max_iter=3).mean())


def test_evolution_replays_the_sparse_gp_optimisation():
    at = page("app_pages/evolution.py", algo="sgp_elbo", n="200")
    assert not at.exception and not at.error
    slider = at.slider(key="round")
    assert slider.label == "Optimiser iteration" and slider.value == slider.max > 5
    obj = next(s for s in specs(at) if title(s).startswith("L-BFGS objective"))
    h = arr(obj["data"][0]["y"])
    assert len(h) == slider.max + 1 and h[-1] < h[0]
    before = arr(next(t for t in specs(at)[0]["data"] if t["name"].startswith("sparse GP"))["y"])
    slider.set_value(1).run()
    assert not at.exception
    after = arr(next(t for t in specs(at)[0]["data"] if t["name"].startswith("sparse GP"))["y"])
    assert not np.allclose(before, after), "the band is drawn at the chosen iteration"


# ------------------------------------------------------------------------------------- item 11: small screens
def test_sidebar_labels_fit_at_1024_px():
    """The sidebar's select boxes are ~260 px wide at 1024x768: about 26 characters of 14 px text."""
    from distviz import families
    from distviz.ui.algorithms import REGISTRY
    from distviz.ui.explorer import family_label
    from distviz.ui.fits import DATASETS

    for label in [a.label for a in REGISTRY.values()] + [v[0] for v in DATASETS.values()] + \
            [family_label(f) for f in families.available()]:
        assert len(label) <= 26, label
