"""Opening the app's pages under streamlit.testing's AppTest, shared by the page tests."""

from __future__ import annotations

import html
import json
import re

from streamlit.testing.v1 import AppTest

from distviz.ui.serve import app_script

#: the packaged app's main script (distviz/ui/app/app.py); page paths are relative to its folder (app_pages/...)
APP = str(app_script())


def chart_specs(at) -> list[dict]:
    """The plotly figure specs on the page, each figure as it would be drawn alone: a chart of side-by-side panels
    (distviz.viz.combine.side_by_side, which lists them in ``layout.meta["panels"]``) counts as its panels, each with
    its own traces and title."""
    out = []
    for el in at.get("plotly_chart"):
        spec = json.loads(el.proto.spec)
        meta = spec["layout"].get("meta")
        panels = meta.get("panels") if isinstance(meta, dict) else None
        for p in panels or []:
            a, b = p["traces"]
            out.append({"data": spec["data"][a:b], "layout": {**spec["layout"], "title": {"text": p["title"]}}})
        if not panels:
            out.append(spec)
    return out


def as_address(query: dict) -> dict:
    """`query` with every select's option name written as the text the select shows, which is what its binding to
    the address reads (distviz.ui.params.url_text; a shown text or any other value is kept as it is)."""
    from distviz.ui.params import url_text

    return {k: url_text(k, v) for k, v in query.items()}


def page(path=None, timeout=120, **query):
    """AppTest of the app, switched to `path` (a file under app_pages/) when given, with URL query parameters (option
    names of selects are written as the texts they show: `as_address`)."""
    at = AppTest.from_file(APP, default_timeout=timeout)
    for k, v in as_address(query).items():
        at.query_params[k] = v
    if path:
        at.run()
        at.switch_page(path)
    return at.run()


def open_page(page: str | None, query: dict, at: AppTest | None = None) -> AppTest:
    """Open `page` (script path, None: the Lab) with the URL query `query` (`as_address`), in `at`'s session or a
    fresh one."""
    at = at or AppTest.from_file(APP, default_timeout=300)
    if page is not None:
        at.switch_page(page)
    at.query_params.clear()
    at.query_params.update(as_address(query))
    return at.run()


def address(at: AppTest) -> dict:
    """The page's address after the run, as {name: value}, as a browser shows it: the query parameters the server
    wrote, and the values of the widgets bound to the URL (bind="query-params") drawn in the run, which the browser
    writes itself (AppTest has no browser; a value at its default is left out there, and given here; a select's value
    as the text it shows, which is what the binding writes: distviz.ui.params.url_text)."""
    from distviz.ui.params import url_text
    from distviz.ui.state import _BOUND, _RUN

    out = {k: at.query_params[k] for k in at.query_params}
    run = at.session_state[_RUN] if _RUN in at.session_state else 0
    names = at.session_state[_BOUND] if _BOUND in at.session_state else {}
    for name, r in names.items():
        if r == run and name in at.session_state and at.session_state[name] is not None:
            out[name] = url_text(name, at.session_state[name])
    return out


def plain_links(at) -> dict[str, str]:
    """{shown text: address} of the plain links (distviz.ui.lessons.plain_link) the run drew."""
    out = {}
    for el in at.get("html"):
        for href, text in re.findall(r'<a class="distviz-link[^"]*" href="([^"]*)"[^>]*>([^<]*)</a>', el.value):
            out[html.unescape(text)] = html.unescape(href)
    return out
