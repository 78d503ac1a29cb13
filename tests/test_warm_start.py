"""The server's warm start (issue 32 item 4): which views it fits, in which order, and that a page then finds them in
the store without fitting."""

from __future__ import annotations

import dataclasses
import sys
import threading

import pytest

from distviz.ui import serve, warm_start
from distviz.ui.fits import config_from_params, fit_result
from distviz.ui.lessons import load_lessons


def test_views_are_the_lab_default_every_lesson_step_then_the_other_defaults():
    lessons, problems = load_lessons()
    assert not problems
    views = warm_start.warm_views(lessons)
    steps = [(s.page, dict(s.params)) for ls in lessons for s in ls.steps]
    assert views[0] == ("lab", {})
    assert views[1:1 + len(steps)] == steps
    assert views[1 + len(steps):] == [("split_gains", {}), ("posterior", {})]


def test_configs_are_distinct_with_geometry_companions_and_skip_views_without_a_fit():
    from distviz.ui.lesson_check import page_fit_config

    geometry = {"algo": "ngd", "family": "poisson", "view": warm_start.GEOMETRY_VIEW}
    views = [("lab", {}), ("evolution", {}), ("explorer", {"family": "poisson"}), ("drifters", {}),
             ("posterior", {"section": "OOD demo"}), ("lab", {"data": "upload"}), ("evolution", geometry)]
    cfgs = warm_start.warm_configs(views)
    lab, geo = page_fit_config("lab", {}), page_fit_config("evolution", geometry)
    # the Lab's and Evolution's defaults are one fit; the explorer, drifters, OOD demo and upload views have none;
    # the geometry panel adds MGD (NGD is the view's own fit)
    assert [c.key() for c in cfgs] == [lab.key(), geo.key(), geo.with_algorithm("mgd").key()]


def test_every_shipped_view_has_a_config():
    cfgs = warm_start.warm_configs(warm_start.warm_views())
    algos = {c.algorithm for c in cfgs}
    assert len(cfgs) >= 5 and {"mgd", "ngd"} <= algos and any(a.startswith("wg_") for a in algos), algos


def test_warm_fits_are_in_the_store_and_a_page_reuses_them(fresh, monkeypatch):
    cfgs = [config_from_params({"n": "200", "rounds": "20", "algo": a}) for a in ("mgd", "ngd")]
    report = warm_start.warm_start(cfgs)
    assert report.fits == 2 and not report.failed, report
    assert not fresh.governor().jobs, "a warm fit is still registered"

    def no_fit(*args, **kwargs):
        raise AssertionError("the page fitted again instead of reading the warm fit from the store")

    monkeypatch.setattr(fresh.Governor, "run", no_fit)
    for cfg in cfgs:
        assert fit_result(cfg).config == cfg


def test_a_failing_fit_is_reported_and_the_rest_still_run(fresh):
    bad = config_from_params({"n": "200", "rounds": "20"})
    bad = dataclasses.replace(bad, dataset="no-such-set")
    good = config_from_params({"n": "200", "rounds": "20", "algo": "ngd"})
    report = warm_start.warm_start([bad, good])
    assert report.fits == 1 and len(report.failed) == 1 and "no-such-set" in report.failed[0], report


def test_stop_ends_it_before_the_next_fit(fresh):
    stop = threading.Event()
    stop.set()
    assert warm_start.warm_start([config_from_params({})], stop=stop).fits == 0


@pytest.mark.parametrize("value,on", [("0", False), ("off", False), ("No", False), ("1", True), ("", True)])
def test_the_environment_switch(monkeypatch, value, on):
    monkeypatch.setenv(warm_start.ENV, value)
    assert warm_start.enabled() is on
    if not on:
        assert warm_start.start_warm_start() is None


def test_distviz_app_starts_it_unless_told_not_to(monkeypatch):
    seen = []
    monkeypatch.setattr(warm_start, "start_warm_start", lambda on=None: seen.append(on))
    from streamlit.web import cli

    monkeypatch.setattr(cli, "main", lambda: None)
    monkeypatch.setattr(serve, "no_outbound_lookups", lambda: None)
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    serve.main(["--port", "8599"])
    serve.main(["--no-warm-start", "--port", "8599"])
    assert seen == [None, False]


def test_warm_figures_are_the_ones_the_pages_draw(fresh, monkeypatch):
    """The warm start's last step builds the default views' shared figures; the pages' calls then get those very
    objects without building (distviz.ui.shared_views)."""
    from distviz.ui import shared_views
    from distviz.ui.fits import FitConfig
    from distviz.viz import results as vr
    from distviz.viz import trees as vt

    lab = fit_result(FitConfig(n=200, n_estimators=4))
    split = fit_result(FitConfig(n=200, p=3, algorithm="ngd", n_estimators=3))
    assert shared_views.warm_figures(lab, split) == 1 + 5 + 3   # the Lab, rounds 0..4, the trees of rounds 1..3
    built = {r: shared_views.evolution_round_figures(lab, r) for r in range(5)}
    lab_figs, tree = shared_views.lab_figures(lab), shared_views.split_tree_figure(split, 2)

    def no_build(*args, **kwargs):
        raise AssertionError("a page built a figure the warm start had built")

    monkeypatch.setattr(vr, "law_round_figures", no_build)
    monkeypatch.setattr(vt, "tree_figure", no_build)
    monkeypatch.setattr(type(lab.algo), "lab_figures", no_build)
    for r in range(5):
        assert shared_views.evolution_round_figures(lab, r) is built[r]
    assert shared_views.lab_figures(lab) is lab_figs and shared_views.split_tree_figure(split, 2) is tree
    stop = threading.Event()
    stop.set()
    assert shared_views.warm_figures(lab, split, stop=stop) == 1   # the Lab's figures, then it stops


def test_the_warm_thread_freezes_the_heap_when_done(monkeypatch, capsys):
    """After its fits the server's heap is frozen (gc.freeze), so full collections stop walking it; the frozen
    objects are no longer in any generation the collector walks."""
    import gc

    order = []
    monkeypatch.setattr(warm_start, "warm_start", lambda: order.append("fits") or warm_start.WarmReport(fits=1))
    monkeypatch.setattr(warm_start, "freeze_heap", lambda: order.append("freeze"))
    monkeypatch.setattr(warm_start, "import_first_session_modules", lambda: order.append("imports") or [])
    warm_start.start_warm_start(True).join(10)
    assert order == ["fits", "imports", "freeze"]
    assert "warm start: 1 fits" in capsys.readouterr().out

    monkeypatch.undo()
    probe = [[]]   # a container the collector tracks
    try:
        warm_start.freeze_heap()
        assert gc.get_freeze_count() > 0
        assert not any(o is probe for o in gc.get_objects())   # frozen: outside every generation
    finally:
        gc.unfreeze()
    assert any(o is probe for o in gc.get_objects())


def test_the_modules_streamlit_loads_for_a_servers_first_session_exist():
    """The warm start imports what Streamlit imports lazily for a server's first session (its nudge check, the emoji
    and icon lists, plotly's validators): every name still exists in the pinned Streamlit and plotly, so a rename
    in an upgrade is noticed here instead of silently costing the first student's page view again."""
    import sys

    assert warm_start.import_first_session_modules() == []
    assert all(name in sys.modules for name in warm_start.FIRST_SESSION_MODULES)
