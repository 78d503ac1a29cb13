"""The page state lives in the URL's query parameters so a view can be shared by copying its address.

A widget whose URL value is the text of its value (numbers, options shown as they are, switches, tabs) is bound
to the address by Streamlit itself: `bound(name)` gives it the key `name` and `bind="query-params"`, and Streamlit
reads `?name=...` on load (a value that does not parse, is not an option, lies outside the widget's range or is not
finite gives the widget's default and is removed from the address) and writes the value when it changes (a default
stays out of the address).  A bound widget is one per page; one drawn by app.py itself (the presenter switch) is the
same widget on every page.

The other widgets still get a session-state key `page.name` from `qp_key`: options shown through a label
(Streamlit's binding writes the shown label, not the option, into the address, and links name the option) and
the Lab's fit settings, which the Lab, Evolution and Split gains share.  On the first run of a session the value
is read from `?name=...` (parsed and checked against the allowed options), and after the widgets are drawn
`sync_query_params` writes the current values back into the URL (leaving the bound parameters to Streamlit).
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any, Callable, Iterable

import streamlit as st

from distviz.errors import DistvizError

from .params import MAX_RAW, _format, _parse, accepts, applied_value  # noqa: F401 (the pages import them here)
from .safe_text import show_error

_REGISTERED = "_qp_registered"
GLOBAL = "app"            # prefix of the session keys every page shares (the chart image format)
APPLY = "apply"           # ?apply=1 (a lesson's "show me" link): the run takes every setting from the URL (see begin_run)
_APPLYING = "_qp_applying"  # keys this applying run has already set from the URL
BIND = "query-params"     # Streamlit's own binding of a widget to the URL parameter named by its key
_BOUND = "_qp_bound"      # URL name -> number of the full run that last drew its bound widget (see `bound`)
_RUN = "_qp_run"          # number of the current full run of the session (begin_run)
#: parameters that only links set and their readers take from st.query_params themselves (the step view's
#: ``tour``, distviz.ui.presenter): `sync_query_params` leaves them in the address
LINK_PARAMS = frozenset({"tour"})


def qp_key(page: str, name: str, default: Any, *, options: Iterable | None = None,
           lo: float | None = None, hi: float | None = None,
           valid: Callable[[Any], bool] | None = None) -> str:
    """Session key for a widget whose value is mirrored in the URL parameter `name`.

    On the first call in a session the value comes from the URL when it parses and passes the checks
    (in `options`, inside [lo, hi], `valid(value)`), else from `default`.  A value that no longer
    passes (e.g. an option list that changed) is reset to the default.  The widget takes
    ``persist_state="session"``, so Streamlit keeps its value while it is not drawn (on another page, or a
    knob the current algorithm lacks).
    """
    key = f"{page}.{name}"
    reg = st.session_state.setdefault(_REGISTERED, {})
    reg.setdefault(page, {})[name] = key

    def ok(v):
        return accepts(v, options=options, lo=lo, hi=hi, valid=valid)

    applying = st.session_state.get(_APPLYING)
    if applying is not None and key not in applying:  # a "show me" link: the URL wins, a missing value is the default
        applying.add(key)
        raw = st.query_params.get(name)
        v = _parse(raw, default) if raw is not None else None
        st.session_state[key] = v if ok(v) else default
    elif key not in st.session_state:
        raw = st.query_params.get(name)
        v = _parse(raw, default) if raw is not None else None
        st.session_state[key] = v if ok(v) else default
    elif not ok(st.session_state[key]):
        st.session_state[key] = default
    else:   # set again in code: a widget of the same key on another page starts from it (Streamlit's own idiom)
        st.session_state[key] = st.session_state[key]
    return key


def bound(name: str) -> dict:
    """Keyword arguments (`key`, `bind`) of a widget whose value Streamlit keeps in the URL parameter `name`.

    The widget's key is `name` itself (Streamlit names the parameter after the key), so two pages that bind
    the same name share its value.  Streamlit refuses a URL value that is not one of the widget's values
    (unparsable, not an option, outside the range, not finite) and shows the default.  On a run that applies a
    lesson link (?apply=1, `begin_run`) the session's value is dropped first, so the widget takes the link's
    value, or its default when the link leaves it out.
    """
    st.session_state.setdefault(_BOUND, {})[name] = st.session_state.get(_RUN, 0)
    applying = st.session_state.get(_APPLYING)
    if applying is not None and name not in applying:
        applying.add(name)
        st.session_state.pop(name, None)
    return {"key": name, "bind": BIND}


def bound_settings() -> dict[str, Any]:
    """{URL name: value} of the bound widgets drawn in this full run (and its fragment reruns) so far."""
    run = st.session_state.get(_RUN, 0)
    return {name: st.session_state.get(name) for name, r in st.session_state.get(_BOUND, {}).items()
            if r == run and st.session_state.get(name) is not None}


def get(page: str, name: str, default: Any = None) -> Any:
    """Current value of a registered widget (its default when it was not drawn yet)."""
    return st.session_state.get(f"{page}.{name}", default)


def sync_query_params(*pages: str) -> None:
    """Write the values of the widgets the given pages drew in this run into the URL (only when changed).

    The other parameters in the URL are dropped (an unknown key, a setting of another page; a fragment's rerun
    writes nothing here: its widgets are bound, distviz.ui.state.bound), except the bound ones, which Streamlit
    keeps, and `LINK_PARAMS`, so the address always describes a valid state.
    """
    bound_names = st.session_state.get(_BOUND, {})   # Streamlit writes (and clears) these itself
    want: dict[str, str] = {}
    regs = st.session_state.get(_REGISTERED, {})
    for page in dict.fromkeys(pages):
        reg = regs.pop(page, {})  # widgets drawn in this run only
        for name, key in reg.items():
            v = st.session_state.get(key)
            if v is not None:
                want[name] = _format(v)
    current = {k: st.query_params[k] for k in st.query_params if k not in bound_names and k not in LINK_PARAMS}
    for k in current.keys() - want.keys():
        del st.query_params[k]
    changed = {k: v for k, v in want.items() if current.get(k) != v}
    if changed:
        st.query_params.update(changed)


def begin_run() -> None:
    """Start of a full run (app.py): with ?apply=1 every qp_key of this run takes its value from the URL (its default
    when the URL lacks it) even where the session already has one, so a lesson link sets the exact view; the
    marker is then removed from the address."""
    st.session_state[_RUN] = st.session_state.get(_RUN, 0) + 1
    st.session_state.pop(_APPLYING, None)
    if APPLY in st.query_params:
        applying = st.query_params.get(APPLY) == "1"
        del st.query_params[APPLY]
        if applying:
            st.session_state[_APPLYING] = set()


def applying() -> bool:
    """Whether this run takes its settings from a link's address (?apply=1, see `begin_run`, `bound`)."""
    return st.session_state.get(_APPLYING) is not None


def end_run() -> None:
    """End of a full run (app.py, also after st.stop or a rerun): later runs keep the session's values again."""
    st.session_state.pop(_APPLYING, None)


UNEXPECTED_VIEW = ("This view could not be drawn because of an unexpected error (it is logged on the server); "
                   "try other settings.")


def error_sentence(exc: BaseException) -> str:
    """The one sentence a page shows for `exc`: its own text for a DistvizError, a generic sentence otherwise (logged)."""
    if isinstance(exc, DistvizError):
        return str(exc)
    logging.getLogger("distviz.ui").error("unexpected error in a view", exc_info=exc)
    return UNEXPECTED_VIEW


@contextlib.contextmanager
def user_errors(where: str = ""):
    """Show any error of the block as one st.error sentence instead of a traceback (unexpected ones are logged);
    the sentence is shown literally (it may quote column names or file names: distviz.ui.safe_text)."""
    try:
        yield
    except Exception as exc:  # noqa: BLE001 - Streamlit's stop / rerun signals are BaseExceptions and pass through
        msg = error_sentence(exc)
        show_error(f"{where}{msg}" if where else msg)


def remember(name: str, value: Any) -> Any:
    """Keep a good result in the session so it stays on the page after a later error."""
    st.session_state[f"_last.{name}"] = value
    return value


def recall(name: str, default: Any = None) -> Any:
    """The last good result stored by `remember` (or `default`)."""
    return st.session_state.get(f"_last.{name}", default)
