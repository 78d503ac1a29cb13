"""AppTest checks of every page: renders without exception, widgets rerun and change the figures."""


import pytest

st_testing = pytest.importorskip("streamlit.testing.v1")
AppTest = st_testing.AppTest

from apptest_pages import APP, address, chart_specs, open_page, page  # noqa: E402  (tests/ is on sys.path)


def specs(at):
    """Plotly figure specs currently on the page."""
    return chart_specs(at)


def tables(at):
    """Markdown tables on the page (static_table), as lists of header cells."""
    return [el.value.splitlines()[0] for el in at.markdown if el.value.startswith("| ") and "\n|---|" in el.value]


def open_tab(at, key, label):
    """Open a lazy tab (its state lives under `key`) and rerun."""
    at.session_state[key] = label
    return at.run()


# ------------------------------------------------------------------------------------------- navigation
def test_navigation_builds_its_pages_once_and_each_run_navigates_its_own_copies(monkeypatch):
    """The st.Page objects are built once per server (distviz.ui.common.navigation_pages) and kept in NAV for the
    links; every run hands st.navigation fresh copies, since st.navigation marks the page a run may call and two
    sessions must not share that mark."""
    import streamlit as st

    from distviz.ui.lessons import NAV

    passed = []
    real = st.navigation
    monkeypatch.setattr(st, "navigation", lambda pages, **kw: passed.append(list(pages)) or real(pages, **kw))
    assert not page().exception
    built = dict(NAV)
    assert list(built) == ["lab", "evolution", "split_gains", "drifters", "posterior", "explorer", "lessons"]
    at = page("app_pages/explorer.py")
    assert not at.exception and at.get("plotly_chart")
    assert all(NAV[k] is v for k, v in built.items())            # not rebuilt by later runs
    assert len(passed) >= 3
    for pages in passed:
        assert [p.url_path for p in pages] == [p.url_path for p in built.values()]
        assert not any(p is q for p in pages for q in built.values())   # copies, never the kept ones
    assert len({id(p) for pages in passed for p in pages}) == sum(len(pages) for pages in passed)


# ------------------------------------------------------------------------------------------- explorer
def test_explorer_renders_and_reacts_to_family_and_sliders():
    at = page("app_pages/explorer.py")
    assert not at.exception
    first = specs(at)
    assert first, "the explorer shows a plotly figure"
    assert any("natural η" in t for t in tables(at)), "the explorer shows the parameter table"
    for name in ["poisson", "gamma", "categorical", "mvn"]:
        at.sidebar.selectbox(key="family").set_value(name).run()
        assert not at.exception, name
        now = specs(at)
        assert now != first, name
        first = now
    at.sidebar.selectbox(key="family").set_value("normal").run()
    before = specs(at)
    at.sidebar.slider(key="normal.sigma").set_value(2.5).run()
    assert not at.exception
    assert specs(at) != before


def test_explorer_reads_state_from_url():
    at = AppTest.from_file(APP, default_timeout=60)   # a new session at the explorer's address (a link, a reload)
    at.switch_page("app_pages/explorer.py")
    at.query_params["family"] = "poisson — counts"   # the text the family select shows
    at.query_params["poisson.rate"] = "12.5"
    at.run()
    assert not at.exception
    assert at.sidebar.selectbox(key="family").value == "poisson"
    assert at.sidebar.slider(key="poisson.rate").value == pytest.approx(12.5)


# ------------------------------------------------------------------------------------------- lab
def test_lab_default_fit_then_family_and_algorithm_change_the_figures():
    at = page(n="200", rounds="20")
    assert not at.exception
    assert not at.error
    first = specs(at)
    assert len(first) >= 2, "fitted distribution and NLL curves"
    at.sidebar.selectbox(key="family").set_value("poisson").run()
    assert not at.exception and not at.error
    second = specs(at)
    assert second != first
    at.sidebar.selectbox(key="algo").set_value("ngd").run()
    assert not at.exception and not at.error
    third = specs(at)
    assert third != second
    assert address(at)["algo"] == "NGD (natural, in η)"   # the address holds the text the select shows


def test_lab_sparse_gp_baseline():
    at = page(n="200", algo="sgp_elbo")
    assert not at.exception and not at.error
    first = specs(at)
    assert any("sparse-GP" in s["layout"].get("title", {}).get("text", "") for s in first)
    at.sidebar.selectbox(key="family").set_value("bernoulli").run()
    assert not at.exception and not at.error
    assert specs(at) != first


def test_lab_wgboost_particles():
    at = page(n="200", rounds="20", algo="wg_fka")
    assert not at.exception
    assert not at.error
    titles = [s["layout"].get("title", {}).get("text", "") for s in specs(at)]
    assert any("particles" in t for t in titles)


def test_lab_incompatible_choice_is_not_offered_and_explained_before_fitting():
    at = page(n="200", rounds="20")
    assert not at.exception
    at.sidebar.selectbox(key="family").set_value("gamma").run()
    assert not at.exception and not at.error
    box = at.sidebar.selectbox(key="algo")
    assert "WGBoost SKA" not in box.options and "MGD (mirror, in η*)" in box.options   # options are the labels
    assert "WGBoost (fits the Normal, Poisson and Categorical families)" in box.help


def test_upload_good_csv_fits_and_bad_upload_shows_one_sentence():
    from distviz.errors import DataError
    from distviz.ui.fits import parse_csv

    with pytest.raises(DataError):
        parse_csv(b"a,b\n1,2\n")
    at = page(data="upload", rounds="20")
    assert not at.exception
    assert len(at.error) == 1 and "upload" in at.error[0].value.lower()
    good = "x,y\n" + "".join(f"{i / 10:.2f},{(i % 7) / 3 + i / 50:.3f}\n" for i in range(120))
    at.sidebar.file_uploader[0].set_value(("good.csv", good.encode(), "text/csv")).run()
    assert not at.exception and not at.error
    figs = specs(at)
    assert len(figs) >= 2
    at.sidebar.file_uploader[0].set_value(("bad.csv", b"\x89PNG\r\n\x1a\n\x00\x00 binary junk", "text/csv")).run()
    assert not at.exception
    assert len(at.error) == 1, [e.value for e in at.error]
    assert len(specs(at)) == len(figs), "the earlier result stays on the page"


# ------------------------------------------------------------------------------------------- evolution
def test_evolution_round_slider_changes_figures_without_refit():
    from distviz.ui.fits import model_store

    at = page("app_pages/evolution.py", n="200", rounds="20")
    assert not at.exception and not at.error
    first = specs(at)
    assert len(first) == 3, "fit, NLL and iterates; the geometry panel waits in its tab"
    titles = lambda: [s["layout"].get("title", {}).get("text", "") for s in specs(at)]  # noqa: E731
    open_tab(at, "view", "Geometry: η vs η* paths")
    assert not at.exception and not at.error
    assert len(specs(at)) == 1 and titles()[0].startswith("geometry"), "the geometry tab draws the MGD / NGD paths"
    at.slider(key="x0").set_value(float(at.slider(key="x0").max)).run()
    assert not at.exception
    open_tab(at, "view", "Fit, NLL and iterates")
    n_models = len(model_store().items)
    at.slider(key="round").set_value(5).run()
    assert not at.exception
    assert specs(at) != first
    assert len(model_store().items) == n_models, "scrubbing must not refit"
    btn = at.button(key="evo.playbtn")
    assert btn.proto.icon == ":material/play_arrow:" and "▶" not in btn.label, "an icon the app ships, not a glyph"
    btn.click().run()
    assert not at.exception
    assert at.button(key="evo.playbtn").proto.icon == ":material/pause:"
    pops = [e.proto.popover for e in at.sidebar.get("popover")]
    assert [p.open for p in pops if p.label.startswith("Fit settings")] == [False], \
        "the fit settings start folded in a popover (a one-line summary), so a first paint loads none of their widgets"
    assert any("MGD" in c.value and "100 rounds" not in c.value for c in at.sidebar.caption)
    open_tab(at, "evo.settings_open", True)
    at.sidebar.selectbox(key="algo").set_value("wg_fka").run()
    assert not at.exception and not at.error
    assert any("particles" in s["layout"].get("title", {}).get("text", "") for s in specs(at))


# ------------------------------------------------------------------------------------------- split gains
def test_split_gains_round_and_family_change_the_tree():
    at = page("app_pages/split_gains.py", n="200", srounds="20", sp="2")
    assert not at.exception and not at.error
    first = specs(at)
    assert len(first) == 1 and first[0]["layout"]["title"]["text"].startswith("tree of round"), "the tree tab first"
    at.slider(key="round").set_value(7).run()
    assert not at.exception
    assert specs(at)[0] != first[0], "the tree of another round is drawn"
    open_tab(at, "split.settings_open", True)
    at.sidebar.selectbox(key="family").set_value("poisson").run()
    assert not at.exception and not at.error
    assert specs(at) != first
    for view, n in [("Gain^NGD vs Gain^ent", 2), ("Top splits", 0), ("Entropy and NLL", 1), ("Standalone trees", 1)]:
        open_tab(at, "view", view)
        assert not at.exception and not at.error, view
        assert len(specs(at)) == n, view
        if view == "Top splits":
            assert at.dataframe, "top splits table"
    assert len(at.metric) >= 2, "leafwise NLL of both criteria"
    at.slider(key="tdepth").set_value(5).run()
    assert not at.exception and len(specs(at)) == 1


# ------------------------------------------------------------------------------------------- drifters
def test_drifters_page_maps_table_and_trajectory():
    folded = page("app_pages/drifters.py")
    assert not folded.exception and len(specs(folded)) == 1, "the trajectory view is folded: the map only"
    assert "drifter" not in [s.key for s in folded.selectbox], "its drifter select is drawn only when it is open"
    at = open_page("app_pages/drifters.py", {"traj": "true"})   # the trajectory view open, as a lesson link has it
    assert not at.exception and not at.error
    assert at.sidebar.selectbox(key="source").value == "sample", "the synthetic sample is the default"
    assert any("Synthetic data" in el.value for el in at.info), "the page says the sample is synthetic"
    assert any("Precomputed" in el.value for el in at.caption), "first paint comes from the shipped result"
    assert any("NLL (nats)" in t for t in tables(at)), "metrics table"
    first = specs(at)
    assert len(first) == 2, "binned map and trajectory with ellipses"
    at.radio(key="map").set_value("rho").run()
    assert not at.exception
    assert specs(at)[0] != first[0]
    at.sidebar.selectbox(key="source").set_value("upload").run()
    assert not at.exception
    from distviz.ui.drifters import UPLOAD_PROMPT

    assert not at.error and [el.value for el in at.info] == [UPLOAD_PROMPT], "no upload yet: one request, no error"
    assert len(specs(at)) == 2, "the last comparison stays on the page"


def test_drifters_real_subset_fits_when_present():
    from distviz.data.paths import shared_data_path
    from distviz.ui.drifters import REAL_SUBSET

    if shared_data_path(*REAL_SUBSET) is None:
        pytest.skip("the real GDP subset is not in ../shared/data")
    at = open_page("app_pages/drifters.py", {"traj": "true"})
    at.sidebar.selectbox(key="source").set_value("real").run()
    assert not at.exception and not at.error
    assert not at.info and not any("Precomputed" in el.value for el in at.caption)
    assert len(specs(at)) == 2


def test_split_gains_defaults_to_noise_features_without_touching_the_lab():
    at = page("app_pages/split_gains.py", n="200")
    assert not at.exception and not at.error
    open_tab(at, "split.settings_open", True)
    assert at.sidebar.slider(key="sp").value == 3, "x1 plus two noise features by default on this page"
    assert at.sidebar.selectbox(key="salgo").value == "ngd" and not at.warning, "a stable default fit"
    assert at.sidebar.select_slider(key="srounds").value == 50
    open_tab(at, "view", "Gain^NGD vs Gain^ent")  # the tab is named after the NGD default's gain (#17 item 9)
    imp = [s for s in specs(at) if "importance" in s["layout"].get("title", {}).get("text", "")]
    assert imp and len({t.get("name") for t in imp[0]["data"] if t.get("name")} & {"x1", "x2", "x3"}) == 3
    lab = open_tab(page(n="200"), "lab.more_open", True)
    assert lab.sidebar.slider(key="p").value == 1, "the Lab keeps p = 1"
    assert lab.sidebar.selectbox(key="algo").value == "mgd", "and MGD"


# ------------------------------------------------------------------------------------------- posterior
def test_posterior_page_sections():
    at = page("app_pages/posterior.py", prounds="50")
    assert not at.exception and not at.error
    first = specs(at)
    assert len(first) == 1 and "density" in first[0]["layout"].get("title", {}).get("text", "")
    for view, n in [("Particles and NLL", 2), ("vs sparse-GP bands", 1), ("Predictive density", 1)]:
        open_tab(at, "view", view)
        assert not at.exception and not at.error, view
        assert len(specs(at)) == n, view
    at.sidebar.selectbox(key="method").set_value("fka").run()
    assert not at.exception and not at.error
    assert specs(at) != first
    at.radio(key="section").set_value("method comparison").run()
    at.sidebar.select_slider(key="cmp_rounds").set_value(50).run()
    assert not at.exception and not at.error
    assert len(specs(at)) == 1
    assert any("MMD" in t or "mmd" in t for t in tables(at)), "the comparison table"


# ------------------------------------------------------------------------------------------- fit warnings
def test_lab_gd_defaults_to_a_stable_rate_and_a_diverging_fit_shows_a_warning():
    """Plain GD on the Normal starts at nu = 0.01 (stable); at nu = 0.1 it diverges and the Lab says what to change."""
    at = page(algo="gd")   # the Lab defaults: n = 500, 100 rounds
    assert not at.exception
    pops = [e.proto.popover for e in at.sidebar.get("popover")]
    assert [p.open for p in pops if p.label.startswith("More settings")] == [False], \
        "the Lab folds rows, rounds, rate and depth under More settings"
    assert any("ν = 0.01" in c.value for c in at.sidebar.caption), "the folded summary names the rate"
    open_tab(at, "lab.more_open", True)
    assert at.sidebar.select_slider(key="lr").value == pytest.approx(0.01)
    assert not [w for w in at.warning if "diverged" in w.value]
    at.sidebar.select_slider(key="lr").set_value(0.1).run()
    assert not at.exception
    msgs = [w.value for w in at.warning]
    assert any("GD diverged" in m and "learning rate" in m for m in msgs), msgs
    at.sidebar.selectbox(key="algo").set_value("ngd").run()   # a user-set rate is kept when the law changes
    assert at.sidebar.select_slider(key="lr").value == pytest.approx(0.1)


def test_fit_warnings_report_domain_exits_and_projection_blow_up():
    """MGD on the Normal with noise features leaves the mean domain; projecting blows the NLL up, shortening does not."""
    from distviz.ui.fits import FitConfig, fit_warnings
    from distviz.ui.lab import fit_model

    proj = fit_model(FitConfig(p=3, domain="project"))
    safe = fit_model(FitConfig(p=3, domain="backtrack"))
    t_proj, t_safe = proj.model.trace_.train_nll.values, safe.model.trace_.train_nll.values
    assert t_proj.max() > 100 and t_safe.max() < 10
    w = fit_warnings(proj)
    assert any("left the mean (η*) domain" in m and "projected" in m for m in w), w
    assert any("diverged" in m for m in w), w
    assert fit_warnings(fit_model(FitConfig())) == []


def test_lab_domain_choice_from_url_shows_the_projection_blow_up():
    """MGD, Normal, p = 3: 'project' (from the URL) blows the NLL up and says so; the default 'shorten' does not."""
    at = page(p="3", domain="project")
    assert not at.exception
    assert any("projected to within 1e-6" in w.value for w in at.warning), "the URL's domain applies while folded"
    open_tab(at, "lab.more_open", True)
    assert at.sidebar.selectbox(key="domain").value == "project"
    msgs = [w.value for w in at.warning]
    assert any("projected to within 1e-6" in m for m in msgs), msgs
    assert any("e+03" in m for m in msgs if "diverged" in m), msgs            # train NLL in the thousands
    at.sidebar.selectbox(key="domain").set_value("backtrack").run()
    assert not at.exception
    msgs = [w.value for w in at.warning]
    assert any("shortened" in m for m in msgs) and not any("e+03" in m for m in msgs), msgs


def test_a_seed_in_the_address_is_the_whole_number_the_page_shows():
    """The seed is a float input bound to ?seed= (an integer input raises on ?seed=inf): ?seed=3.7 shows 4 and fits
    with seed 4, not 3."""
    from distviz.ui.lab import _SETTINGS

    at = page(seed="3.7", n="200", rounds="20")
    assert not at.exception and at.session_state[_SETTINGS][0].seed == 4

