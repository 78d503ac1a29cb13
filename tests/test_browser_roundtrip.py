"""Issue #17 item 1 in a real browser: a copied address reproduces the view.

On Evolution and on Split gains the test scrubs the round slider with the keyboard (and on Split gains
opens another tab), copies the address, opens it in a fresh browser context (a new session, no shared
state) and compares the data of every plotly chart with the original view.
"""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.browser

SETTLED = """(n) => !document.querySelector('[data-testid="stStatusWidget"]')
             && !document.querySelector('[data-testid="stSkeleton"]')
             && [...document.querySelectorAll('.js-plotly-plot')].filter(p => p.offsetParent !== null).length >= n"""

#: the visible charts' trace data (x / y / z / text arrays and names) as JSON, in page order
CHART_DATA = """() => JSON.stringify([...document.querySelectorAll('.js-plotly-plot')]
    .filter(p => p.offsetParent !== null)
    .map(p => (p.data || []).map(t => ({name: t.name, x: t.x, y: t.y, z: t.z, text: t.text}))))"""


#: the round slider's thumb (Streamlit's slider keeps its value in a hidden range input; its key, round, names its
#: element's class: the folded fit settings in the sidebar hold sliders too)
THUMB = '.st-key-round [data-testid="stSlider"] input[type="range"]'


def _settle(page, n: int) -> None:
    page.wait_for_function(SETTLED, arg=n, timeout=120000, polling=200)
    page.wait_for_timeout(700)   # a fragment rerun may follow the first paint
    page.wait_for_function(SETTLED, arg=n, timeout=120000, polling=200)


def _slider_value(page) -> int:
    return int(page.locator(THUMB).first.input_value())


def _scrub(page, presses: int, n_plots: int) -> int:
    """Move the round slider by `presses` steps to the left with the keyboard; returns the new round."""
    thumb = page.locator(THUMB).first
    before = _slider_value(page)
    thumb.focus()
    for _ in range(presses):
        thumb.press("ArrowLeft")
    page.wait_for_function("([sel, v]) => +document.querySelector(sel).value !== v", arg=[THUMB, before], timeout=10000)
    thumb.blur()
    page.wait_for_timeout(400)   # Streamlit sends the slider's value when it is released
    _settle(page, n_plots)
    return _slider_value(page)


def _round_in_url(url: str) -> int | None:
    m = re.search(r"[?&]round=(\d+)", url)
    return int(m.group(1)) if m else None


@pytest.mark.parametrize("path,n_plots,tab", [("evolution", 2, None), ("split_gains", 1, "Entropy and NLL")],
                         ids=["evolution", "split_gains"])
def test_copied_address_reproduces_the_scrubbed_view(server, browser, path, n_plots, tab):
    ctx = browser.new_context(viewport={"width": 1280, "height": 2000})
    page = ctx.new_page()
    page.goto(f"{server}/{path}", wait_until="domcontentloaded")
    _settle(page, n_plots)
    start = _slider_value(page)
    r = _scrub(page, 7, n_plots)
    assert r != start, "the keyboard moved the round slider"
    if tab is not None:
        page.get_by_role("tab", name=tab).click()
        _settle(page, 1)
    page.wait_for_function("(r) => new URLSearchParams(location.search).get('round') === String(r)", arg=r, timeout=10000)
    url = page.url
    assert _round_in_url(url) == r, f"the scrubbed round is in the address: {url}"
    if tab is not None:
        assert "view=" in url, f"the open tab is in the address: {url}"
    seen = page.evaluate(CHART_DATA)
    ctx.close()

    ctx2 = browser.new_context(viewport={"width": 1280, "height": 2000})
    page2 = ctx2.new_page()
    page2.goto(url, wait_until="domcontentloaded")
    _settle(page2, 1 if tab is not None else n_plots)
    assert _slider_value(page2) == r, "the copied address opens at the scrubbed round"
    again = page2.evaluate(CHART_DATA)
    url2 = page2.url
    ctx2.close()
    assert again == seen, "the copied address draws the same charts"
    assert _round_in_url(url2) == r
