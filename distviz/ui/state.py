"""The page state lives in the URL's query parameters so a view can be shared by copying its address.

Each stateful widget gets a session-state key `page.name`; on the first run of a session its value
is read from `?name=...` (parsed and checked against the allowed options), and after the widgets are
drawn `sync_query_params` writes the current values back into the URL.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterable

import streamlit as st

from distviz.errors import DistvizError

_REGISTERED = "_qp_registered"
_SHADOW = "_shadow."


def _parse(raw: str, default: Any) -> Any:
    """Parse a query-parameter string with the type of `default`; None when it does not parse."""
    try:
        if isinstance(default, bool):
            if raw.lower() in ("1", "true", "yes", "on"):
                return True
            if raw.lower() in ("0", "false", "no", "off"):
                return False
            return None
        if isinstance(default, int):
            return int(float(raw))
        if isinstance(default, float):
            v = float(raw)
            return v if v == v else None
        return str(raw)
    except (TypeError, ValueError):
        return None


def qp_key(page: str, name: str, default: Any, *, options: Iterable | None = None,
           lo: float | None = None, hi: float | None = None,
           valid: Callable[[Any], bool] | None = None) -> str:
    """Session key for a widget whose value is mirrored in the URL parameter `name`.

    On the first call in a session the value comes from the URL when it parses and passes the checks
    (in `options`, inside [lo, hi], `valid(value)`), else from `default`.  A value that no longer
    passes (e.g. an option list that changed) is reset to the default.
    """
    key = f"{page}.{name}"
    reg = st.session_state.setdefault(_REGISTERED, {})
    reg.setdefault(page, {})[name] = key
    opts = list(options) if options is not None else None

    def ok(v):
        if v is None:
            return False
        if opts is not None and v not in opts:
            return False
        if lo is not None and v < lo:
            return False
        if hi is not None and v > hi:
            return False
        return valid(v) if valid is not None else True

    if key not in st.session_state:
        raw = st.query_params.get(name)
        v = _parse(raw, default) if raw is not None else None
        if not ok(v):  # not in the URL: the value this session had on another page, else the default
            v = st.session_state.get(_SHADOW + key)
        st.session_state[key] = v if ok(v) else default
    elif not ok(st.session_state[key]):
        st.session_state[key] = default
    return key


def get(page: str, name: str, default: Any = None) -> Any:
    """Current value of a registered widget (its default when it was not drawn yet)."""
    return st.session_state.get(f"{page}.{name}", default)


def sync_query_params(*pages: str, keep_others: bool = False) -> None:
    """Write the values of the widgets the given pages drew in this run into the URL (only when changed).

    With keep_others=True the parameters already in the URL that these pages did not draw are kept
    (used by fragments, which rerun only part of a page).
    """
    want = {}
    for page in pages:
        reg = st.session_state.get(_REGISTERED, {}).pop(page, {})  # widgets drawn in this run only
        for name, key in reg.items():
            v = st.session_state.get(key)
            if v is not None:
                st.session_state[_SHADOW + key] = v  # survives Streamlit's clean-up of widget state on page switch
                want[name] = ("1" if v else "0") if isinstance(v, bool) else (f"{v:g}" if isinstance(v, float) else str(v))
    current = {k: st.query_params[k] for k in st.query_params}
    if keep_others:
        want = {**current, **want}
    if current != want:
        st.query_params.from_dict(want)


@contextlib.contextmanager
def user_errors(where: str = ""):
    """Show a DataError / ConfigError as one st.error sentence instead of a traceback."""
    try:
        yield
    except DistvizError as exc:  # errors a user can cause: one sentence, page keeps running
        st.error(f"{where}{exc}" if where else str(exc))


def remember(name: str, value: Any) -> Any:
    """Keep a good result in the session so it stays on the page after a later error."""
    st.session_state[f"_last.{name}"] = value
    return value


def recall(name: str, default: Any = None) -> Any:
    """The last good result stored by `remember` (or `default`)."""
    return st.session_state.get(f"_last.{name}", default)
