"""Hostile links: every page opened with inf, -inf, nan, 1e999, 0x10, a 100 kB string and an unknown key in
its URL parameters shows no exception and rewrites the address to its default state (issue 14, item 2).

The parameters are not listed here: each page is opened once per *context* (the few settings that make
conditional widgets appear: a family, an algorithm, a tab) and the names of the widgets it then binds to its address
(bind="query-params", named in the session: distviz.ui.state.bound) are what the hostile runs fill.  Every
parameter gets a non-finite number (inf, -inf, nan and 1e999 in turn across the parameters), "0x10" and the
100 kB string, each in a different run; the value parsing itself is checked value by value below.  A coverage
check makes sure every parameter name written literally in a page's source is reached by one of its contexts, so a
new widget cannot slip past this file unnoticed.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

st_testing = pytest.importorskip("streamlit.testing.v1")
AppTest = st_testing.AppTest

from distviz import families  # noqa: E402
from distviz.ui import state  # noqa: E402
from distviz.ui.params import url_text  # noqa: E402
from distviz.ui.serve import app_script  # noqa: E402
from tests.apptest_pages import address  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
APP = str(app_script())   # the packaged app (distviz/ui/app/app.py); the pages' paths below are relative to its folder
SRC = "distviz/ui/app/app_pages"   # the pages' sources, relative to ROOT
FILLER = "q" * 100_000
NONFINITE = ["inf", "-inf", "nan", "1e999"]
HOSTILE = [*NONFINITE, "0x10", FILLER]
UNKNOWN = "zz_not_a_parameter"
QUERY_LIMIT = 524_288  # characters; Streamlit ignores a longer query string altogether
CHEAP = {"n": "200", "rounds": "20"}  # contexts that need a fit of their own keep it small

# page -> (contexts, source files whose literal qp_key / lazy_tabs names those contexts must reach)
PAGES = {
    "app.py": ([{}, {"family": url_text("family", "categorical"), **CHEAP}, {"algo": url_text("algo", "wg_fka"), **CHEAP}],
               ["distviz/ui/lab.py", f"{SRC}/lab.py"]),
    "app_pages/explorer.py": ([{"family": url_text("family", f)} for f in families.available()], [f"{SRC}/explorer.py"]),
    "app_pages/evolution.py": ([{}, {"view": "Geometry: η vs η* paths", **CHEAP}],
                               [f"{SRC}/evolution.py", "distviz/ui/playback.py"]),
    "app_pages/split_gains.py": ([{}, {"view": "Standalone trees"}], [f"{SRC}/split_gains.py", "distviz/ui/playback.py"]),
    "app_pages/posterior.py": ([{}, {"section": "method comparison"}, {"section": "OOD demo"}], [f"{SRC}/posterior.py"]),
    "app_pages/drifters.py": ([{}, {"traj": "true"}], [f"{SRC}/drifters.py"]),
}
LITERAL = re.compile(r'(?:_par\(\s*|lazy_tabs\(\s*|bound\(\s*)"([^"]+)"')
TEXT_KINDS = ["title", "header", "subheader", "markdown", "caption", "text", "error", "warning", "info", "success",
              "metric", "code", "json"]


def hostile_queries(names: list[str]) -> list[dict[str, str]]:
    """Queries in which every name of `names` gets a non-finite number, "0x10" and the 100 kB string, each in a
    different query.  A query holds at most as many 100 kB values as keep it under Streamlit's query-string limit
    (a longer query is dropped whole and would test nothing); each also carries the unknown key."""
    per_query = max(1, QUERY_LIMIT // (len(FILLER) + 64) - 1)
    n_queries = max(3, math.ceil(len(names) / per_query))
    queries: list[dict[str, str]] = [{UNKNOWN: HOSTILE[q % len(HOSTILE)]} for q in range(n_queries)]
    for i, name in enumerate(names):
        home = i % n_queries   # the query where this name holds the 100 kB string
        others = [q for q in range(n_queries) if q != home]
        queries[home][name] = FILLER
        queries[others[i % len(others)]][name] = NONFINITE[i % len(NONFINITE)]
        queries[others[(i + 1) % len(others)]][name] = "0x10"
    return queries


def open_page(path: str, query: dict) -> AppTest:
    """A fresh session that opens `path` directly with the URL query `query` (as a shared link does)."""
    at = AppTest.from_file(APP, default_timeout=300)
    if path != "app.py":
        at.switch_page(path)
    for k, v in query.items():
        at.query_params[k] = v
    return at.run()


def url(at: AppTest) -> dict:
    """The page address after the run, as {name: value} (a bound widget at its default is not in it)."""
    return dict(at.query_params)


def bound_names(at: AppTest) -> set[str]:
    """The URL names of the widgets bound to the address (bind="query-params") that the run drew."""
    return set(address(at)) - set(url(at))


def shown_text(at: AppTest) -> str:
    """The text of every text-like element on the page (titles, Markdown, captions, alerts, metrics)."""
    parts = []
    for kind in TEXT_KINDS:
        for el in at.get(kind):
            parts.append(str(el.proto))
    return "\n".join(parts)


def check_clean(at: AppTest, what: str) -> None:
    """No exception, no traceback or source path in an alert, and the hostile 100 kB value shown nowhere."""
    assert not at.exception, f"{what}: {[e.message for e in at.exception]}"
    for el in [*at.error, *at.warning]:
        assert "Traceback" not in el.value and ".py" not in el.value and str(ROOT) not in el.value, f"{what}: {el.value}"
    assert FILLER[:1000] not in shown_text(at), f"{what}: the 100 kB value is echoed on the page"


@pytest.mark.parametrize("path", list(PAGES))
def test_every_parameter_survives_hostile_values(path):
    contexts, sources = PAGES[path]
    reached = set()
    for ctx in contexts:
        base = open_page(path, ctx)
        check_clean(base, f"{path} {ctx}")
        want = url(base)  # every parameter the page registered in this run, at its value for this context
        names = (set(want) | bound_names(base)) - set(ctx)
        reached |= set(want) | bound_names(base)
        assert set(ctx) <= set(address(base)), f"{path}: context {ctx} did not stick"
        queries = hostile_queries(sorted(names))
        for query in queries:
            assert len("&".join(f"{k}={v}" for k, v in query.items())) < QUERY_LIMIT
            at = open_page(path, {**ctx, **query})
            what = f"{path} {ctx} with {({k: v[:10] for k, v in query.items()})}"
            check_clean(at, what)
            assert url(at) == want, f"{what}: URL not rewritten to the default state"
        given = {(k, v) for q in queries for k, v in q.items()}
        assert all({(n, FILLER), (n, "0x10")} <= given and any((n, v) in given for v in NONFINITE) for n in names)
    literal = {m for src in sources for m in LITERAL.findall((ROOT / src).read_text())}
    literal |= {"round"} if "distviz/ui/playback.py" in sources else set()
    missing = literal - reached
    assert not missing, f"{path}: no context reaches the parameters {sorted(missing)}; add a context to PAGES"


# ------------------------------------------------------------------------------------------- parsing rules
@pytest.mark.parametrize("raw", ["inf", "-inf", "nan", "NaN", "1e999", "-1e999", "0x10", "", " ", "3.5", "1e", FILLER])
def test_whole_numbers_refuse_non_finite_non_integral_and_huge(raw):
    assert state._parse(raw, 3) is None


@pytest.mark.parametrize("raw", ["inf", "-inf", "nan", "1e999", "0x10", FILLER])
def test_floats_refuse_non_finite_and_huge(raw):
    assert state._parse(raw, 0.1) is None


def test_valid_numbers_booleans_and_labels_still_parse():
    assert state._parse("42", 3) == 42 and state._parse("1e3", 3) == 1000 and state._parse("-7", 3) == -7
    assert state._parse("0.05", 0.1) == 0.05 and math.isfinite(state._parse("1e300", 0.1))
    assert state._parse("yes", False) is True and state._parse("0", True) is False and state._parse("inf", True) is None
    assert state._parse("Top splits", "x") == "Top splits"
    assert state._parse("x" * state.MAX_RAW, "x") is not None and state._parse("x" * (state.MAX_RAW + 1), "x") is None


@pytest.mark.parametrize("v", [0.1, 1 / 3, 12.3456789, 2.5e-7, 1e20, -0.0])
def test_float_values_read_back_exactly_from_the_url(v):
    assert state._parse(state._format(v), 0.5) == v
