"""Figures to take away (#17 item 14): every chart through distviz.ui.figures (PNG / SVG toolbar export, no
plotly logo), and the "download this view" report: one self-contained HTML file, plotly.js inlined once."""

from __future__ import annotations

import re
from pathlib import Path

import plotly.graph_objects as go
import pytest
from apptest_pages import open_page

from distviz.viz.theme import LIGHT

ROOT = Path(__file__).resolve().parents[1]
PAGE_FILES = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "distviz" / "ui").rglob("*.py"))   # the app's scripts too


def test_no_chart_bypasses_the_takeaway_helper():
    """Every plotly chart of the pages is drawn through show_figure / charts(...) (distviz.ui.figures)."""
    bare = []
    for rel in PAGE_FILES:
        if rel.endswith("figures.py"):
            continue
        for i, line in enumerate((ROOT / rel).read_text().splitlines(), 1):
            if re.search(r"\.plotly_chart\(", line) and "charts(" not in line:
                bare.append(f"{rel}:{i}")
    assert not bare, f"charts drawn without the take-away toolbar: {bare}"


def test_chart_config_exports_png_or_svg_without_the_logo():
    from distviz.ui.figures import chart_config

    png, svg = chart_config("(b) NLL NGB − IndepNGB", "png"), chart_config("x", "svg")
    assert png["displaylogo"] is False and png["toImageButtonOptions"]["format"] == "png"
    assert png["toImageButtonOptions"]["scale"] == 2 and re.fullmatch(r"[A-Za-z0-9.-]+",
                                                                      png["toImageButtonOptions"]["filename"])
    assert svg["toImageButtonOptions"]["format"] == "svg"


def test_report_inlines_plotly_once_and_nothing_from_outside():
    from plotly.offline import get_plotlyjs

    from distviz.ui.figures import report_html

    figs = [(f"chart {i}", go.Figure(go.Scatter(x=[1, 2], y=[i, i + 1]), layout={"title": {"text": "a</script>b"}}))
            for i in range(3)]
    html = report_html(figs, {"map": "rho", "region": "whole area (2° bins)"}, url="http://127.0.0.1:8501/drifters?map=rho",
                       title="drift")
    js = get_plotlyjs()
    assert html.count(js[:200]) == 1, "plotly.js is inlined exactly once"
    assert html.count("Plotly.newPlot(") == 3
    assert html.count("</script>") == html.count("<script>"), "a figure's text cannot close a script element"
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=", html), "no external script, style or image"
    assert "<td>map</td><td>rho</td>" in html and "drifters?map=rho" in html
    assert "format:'svg'" in html, "the report's charts also save SVG"


def test_pages_charts_carry_the_export_config_and_the_view_records_them():
    at = open_page("app_pages/drifters.py", {"traj": "true"})   # with the trajectory view open
    assert not at.exception
    charts = at.get("plotly_chart")
    assert len(charts) == 2
    import json

    for c in charts:
        cfg = json.loads(c.proto.config)
        assert cfg["displaylogo"] is False and cfg["toImageButtonOptions"]["format"] == "png"
    for c in charts:   # drawn with the app's template and no browser-side theming (distviz.viz.theme)
        spec = json.loads(c.proto.spec)
        assert c.proto.theme == "" and spec["layout"]["template"]["layout"]["colorway"] == LIGHT["layout"]["colorway"]
        assert "#0000" not in c.proto.spec, "a placeholder colour of Streamlit's theme is left in the chart"
    labels = [b.proto.label for b in at.sidebar.get("download_button")]
    assert "Download this view" in labels, "the sidebar offers the view as an HTML report on every page"
    at.sidebar.radio(key="app.imgfmt").set_value("svg").run()
    assert all(json.loads(c.proto.config)["toImageButtonOptions"]["format"] == "svg" for c in at.get("plotly_chart"))
    view = at.session_state["_takeaway_view"]
    assert set(view.figures) == {"drift.mapfig", "drift.trajfig"}
    assert view.settings.get("map") == "(b) NLL NGB − IndepNGB" and view.settings.get("train") == "30000"   # as in the address
    html = view.report()
    assert html.count("Plotly.newPlot(") == 2 and "<td>drounds</td><td>300</td>" in html
    assert view.file_name() == "distviz-drifters.html" and "<h1>distviz view: Drifters</h1>" in html


@pytest.mark.parametrize("path", ["app_pages/posterior.py"])
def test_report_of_another_page(path):
    at = open_page(path, {"section": "OOD demo"})
    assert not at.exception
    view = at.session_state["_takeaway_view"]
    assert list(view.figures) == ["post.ood"] and view.settings.get("section") == "OOD demo"
    assert "OOD score" in view.report()
    # issue 29: the file was always distviz-figure.html and the heading named another page
    assert view.file_name() == "distviz-posterior.html"
    assert "<h1>distviz view: Posterior regression</h1>" in view.report()


def test_report_file_names_the_page():
    from distviz.ui.figures import View, report_file_name

    assert report_file_name("") == "distviz-lab.html" and report_file_name("split_gains") == "distviz-split-gains.html"
    assert View("drifters", "Drifters").file_name() == "distviz-drifters.html"
    assert "<h1>distviz view: Drifters</h1>" in View("drifters", "Drifters").report()
