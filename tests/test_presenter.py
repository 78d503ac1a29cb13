"""Presenter mode (issue 17, item 13): ?present=1 or the sidebar toggle makes every chart's text at least 18 px and
its lines thicker, keeps the mode across pages and lesson links, and leaves the ordinary look unchanged."""

from __future__ import annotations

import json

import pytest

st_testing = pytest.importorskip("streamlit.testing.v1")
AppTest = st_testing.AppTest

from apptest_pages import open_page  # noqa: E402  (tests/ is on sys.path)

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
    small = [(p, s) for p, s in font_sizes(spec) if s < style.PRESENTER_FONT]
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
    assert dict(at.query_params).get("present") == "1"
    assert at.toggle(key="app.present").value is True


def test_without_present_the_charts_keep_their_ordinary_look_and_the_address_no_flag():
    at = open_page("app_pages/explorer.py", {})
    spec = specs(at)[0]
    assert spec["layout"]["font"]["size"] < style.PRESENTER_FONT
    assert "present" not in dict(at.query_params)
    assert at.toggle(key="app.present").value is False


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
    assert dict(at.query_params).get("present") == "1"
    assert_presenter_look(specs(at)[0], "split gains after a page switch")
    at = open_page("app_pages/lessons.py", {"lesson": "1", "step": "1"}, at)
    link = at.get("page_link")[0].proto   # "show me" keeps presenter mode on the page it opens
    assert "present=1" in link.query_string
    at.toggle(key="app.present").set_value(False).run()   # switched off: gone from the address and the links
    assert "present" not in dict(at.query_params)
    assert "present=1" not in at.get("page_link")[0].proto.query_string
