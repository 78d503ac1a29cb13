"""Issue 17 item 1, every page: after a few interactions the address alone reproduces the view.

Each page is opened, some of its widgets are changed, and the resulting URL query is opened in a fresh
session: every keyed widget must come back with the same value and every chart with the same data.
(The browser version for the round sliders is tests/test_browser_roundtrip.py.)
"""

from __future__ import annotations

import json

import pytest

from tests.apptest_pages import address, open_page

# widget state that is a per-person preference, not part of the view (the figure export format)
NOT_VIEW = {"app.imgfmt"}

# page -> (URL query to start from, [(widget kind, key, new value)])
CASES = {
    "lab": (None, dict(n="200", rounds="20"),
            [("selectbox", "family", "poisson"), ("selectbox", "algo", "ngd")]),
    "evolution": ("app_pages/evolution.py", dict(n="200", rounds="20"), [("slider", "round", 7)]),
    "split_gains": ("app_pages/split_gains.py", dict(n="200", rounds="20"), [("slider", "round", 5)]),
    "explorer": ("app_pages/explorer.py", {},
                 [("selectbox", "family", "gamma")]),
    "posterior": ("app_pages/posterior.py", {}, [("slider", "pdepth", 2)]),
    "drifters": ("app_pages/drifters.py", {"traj": "true"}, [("radio", "map", "rho"), ("selectbox", "drifter", None)]),
}


def _widgets(at) -> dict:
    out = {}
    for kind in ("selectbox", "slider", "radio", "toggle", "checkbox", "select_slider", "number_input"):
        for e in getattr(at, kind):
            k = getattr(e, "key", None)
            if k and not k.startswith("$$") and k not in NOT_VIEW:
                out[k] = e.value
    return out


def _charts(at) -> list:
    specs = []
    for el in at.get("plotly_chart"):
        fig = json.loads(el.proto.spec)
        specs.append([{k: v for k, v in tr.items() if k != "uid"} for tr in fig.get("data", [])])
    return specs


@pytest.mark.parametrize("name", list(CASES))
def test_address_reproduces_the_view(name):
    """Change widgets, then open the resulting URL in a new session: same widgets, same chart data."""
    path, query, moves = CASES[name]
    at = open_page(path, query)   # opened at the page's address, as a browser does
    assert not at.exception
    for kind, key, value in moves:
        w = getattr(at, kind)(key=key)
        if value is None:  # another option than the current one
            value = next(o for o in w.options if str(o) != str(w.value))
            value = type(w.value)(value) if not isinstance(w.value, str) else value
        w.set_value(value).run()
        assert not at.exception, (name, key)
    query_after = address(at)   # also the bound widgets' values, which a browser writes into the address
    seen_widgets, seen_charts = _widgets(at), _charts(at)
    assert seen_charts, name
    again = open_page(path, query_after)   # a fresh session opened at the page's address, as a browser does
    assert not again.exception
    assert _widgets(again) == seen_widgets
    assert _charts(again) == seen_charts
