"""Opening the app's pages under streamlit.testing's AppTest, shared by the page tests."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[1] / "app.py")


def page(path=None, timeout=120, **query):
    """AppTest of app.py, switched to `path` (a file under app_pages/) when given, with URL query parameters."""
    at = AppTest.from_file(APP, default_timeout=timeout)
    for k, v in query.items():
        at.query_params[k] = v
    if path:
        at.run()
        at.switch_page(path)
    return at.run()


def open_page(page: str | None, query: dict, at: AppTest | None = None) -> AppTest:
    """Open `page` (script path, None: the Lab) with the URL query `query`, in `at`'s session or a fresh one."""
    at = at or AppTest.from_file(APP, default_timeout=300)
    if page is not None:
        at.switch_page(page)
    at.query_params.clear()
    at.query_params.update(query)
    return at.run()
