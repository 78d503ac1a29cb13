"""Presenter mode (issue 17, item 13): ?present=true (or ?present=1, as older links say) or the sidebar toggle makes
every chart's text at least 18 px and its lines thicker, keeps the mode across pages and lesson links, and leaves the
ordinary look unchanged."""

from __future__ import annotations

import json

import pytest

st_testing = pytest.importorskip("streamlit.testing.v1")
AppTest = st_testing.AppTest

from apptest_pages import address, open_page, plain_links  # noqa: E402  (tests/ is on sys.path)

from distviz.viz import style  # noqa: E402

PAGES = [None, "app_pages/evolution.py", "app_pages/split_gains.py", "app_pages/drifters.py",
         "app_pages/posterior.py", "app_pages/explorer.py"]
FONT_KEYS = set(style._FONT_KEYS)


def specs(at) -> list[dict]:
    """The plotly specs on the page."""
    return [json.loads(el.proto.spec) for el in at.get("plotly_chart")]


def font_sizes(obj, path="") -> list[tuple[str, float]]:
    """(where, size) of every explicit font size in a plotly spec."""
    out = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k in FONT_KEYS and isinstance(v, dict) and isinstance(v.get("size"), (int, float)):
                out.append((f"{path}.{k}", float(v["size"])))
            out += font_sizes(v, f"{path}.{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += font_sizes(v, f"{path}[{i}]")
    return out


def assert_presenter_look(spec: dict, where: str) -> None:
    lay = spec["layout"]
    assert lay["font"]["size"] >= style.PRESENTER_FONT, where
    # the template holds Streamlit's theme defaults (distviz.viz.theme, which the browser put in before the app drew
    # its charts with theme=None); the presenter look must state its sizes in the figure itself
    small = [(p, s) for p, s in font_sizes(spec) if s < style.PRESENTER_FONT and not p.startswith(".layout.template")]
    assert not small, (where, small[:5])
    for k, ax in lay.items():   # the Streamlit theme sets axis text itself: every axis must say its size
        if k.startswith(("xaxis", "yaxis")):
            assert ax.get("tickfont", {}).get("size", 0) >= style.PRESENTER_FONT, (where, k)


@pytest.mark.parametrize("page", PAGES, ids=[p or "lab" for p in PAGES])
def test_present_makes_every_chart_of_every_page_readable(page):
    at = open_page(page, {"present": "1"})
    assert not at.exception, [e.value for e in at.exception]
    got = specs(at)
    assert got, "no chart on the page"
    for i, spec in enumerate(got):
        assert_presenter_look(spec, f"{page} chart {i}")
    assert address(at).get("present") == "true"   # Streamlit's binding writes true / false; "1" still reads as on
    assert at.toggle(key="present").value is True


def test_without_present_the_charts_keep_their_ordinary_look_and_the_address_no_flag():
    at = open_page("app_pages/explorer.py", {})
    spec = specs(at)[0]
    assert spec["layout"]["font"]["size"] < style.PRESENTER_FONT
    assert address(at).get("present", "false") == "false"
    assert at.toggle(key="present").value is False


def test_presenter_mode_thickens_lines_and_persists_across_pages_and_lessons():
    at = open_page("app_pages/evolution.py", {"present": "1", "round": "10"})
    lines = [t["line"]["width"] for s in specs(at) for t in s["data"] if isinstance(t.get("line", {}).get("width"), (int, float))]
    at_plain = open_page("app_pages/evolution.py", {"round": "10"})
    plain = [t["line"]["width"] for s in specs(at_plain) for t in s["data"]
             if isinstance(t.get("line", {}).get("width"), (int, float))]
    assert lines and len(lines) == len(plain) and all(a >= 1.5 * b for a, b in zip(lines, plain))
    at.switch_page("app_pages/split_gains.py")
    at.query_params.clear()   # the navigation drops the address; the session keeps the mode and writes it back
    at.run()
    assert address(at).get("present") == "true"
    assert_presenter_look(specs(at)[0], "split gains after a page switch")
    at = open_page("app_pages/lessons.py", {"lesson": "1", "step": "1"}, at)
    show = next(h for t, h in plain_links(at).items() if t.startswith("Show me"))   # keeps presenter mode on
    assert "present=true" in show
    at.toggle(key="present").set_value(False).run()   # switched off: gone from the address and the links
    assert address(at).get("present") == "false"
    assert "present" not in next(h for t, h in plain_links(at).items() if t.startswith("Show me"))


def test_show_me_in_presenter_mode_opens_the_step_view_with_its_panel_and_charts_that_fit():
    """Issue 29 item 2: in presenter mode "show me" carries tour=N.i; the page then links the neighbouring steps'
    views (the last step's Next is disabled), puts the step back with Show me, draws no chart taller than
    CHART_HEIGHT, and drops tour from the address on any other page.  A tour naming no step is ignored."""
    from distviz.ui import presenter
    from distviz.ui.lessons import load_lessons

    lessons, _ = load_lessons()
    last = lessons[4]
    k = len(last.steps)
    at = open_page("app_pages/lessons.py", {"lesson": "5", "step": str(k), "present": "true"})
    show = next(h for t, h in plain_links(at).items() if t.startswith("Show me"))
    assert show == presenter.step_href(last, k) and f"tour=5.{k}" in show and "present=true" in show
    at = open_page("app_pages/drifters.py", presenter.step_query(last, k))   # the link opens a new session
    assert not at.exception and not at.error
    assert dict(at.query_params)["tour"] == f"5.{k}"
    links = plain_links(at)
    assert links["← Previous"].startswith("drifters?") and f"tour=5.{k - 1}" in links["← Previous"]
    assert "Next →" not in links and any('aria-disabled="true">Next →' in el.value for el in at.get("html"))
    assert links["Show me"].endswith(f"tour=5.{k}") and "apply" not in links["Show me"]
    assert links[f"Lesson 5 · step {k} of {k}"] == f"lessons?lesson=5&step={k}&present=true"
    heights = [json.loads(s.proto.spec)["layout"]["height"] for s in at.get("plotly_chart")]
    assert heights and max(heights) <= presenter.CHART_HEIGHT, heights
    assert any(last.steps[k - 1].chart in s.proto.id for s in at.get("plotly_chart"))   # the chart the step names
    at.switch_page("app_pages/explorer.py")
    at.query_params.clear()
    at.run()
    assert "tour" not in dict(at.query_params) and "← Previous" not in plain_links(at)
    at = open_page("app_pages/explorer.py", {"present": "1", "tour": "9.9"})
    assert "tour" not in dict(at.query_params) and not at.exception
    at = open_page("app_pages/explorer.py", {"tour": "1.1"})   # no presenter mode: the ordinary page
    assert "tour" not in dict(at.query_params) and "← Previous" not in plain_links(at)
