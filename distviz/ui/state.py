"""The page state lives in the URL's query parameters so a view can be shared by copying its address.

Every widget whose value belongs in the address is bound to it by Streamlit itself: `bound(name)` gives it the
key `name` and ``bind="query-params"``, and Streamlit reads ``?name=...`` when a session opens (a value that does
not parse, is not an option, lies outside the widget's range or is not finite gives the widget's default and is
removed from the address) and writes the value when it changes (a default stays out of the address).  A select
is written by the text it shows (Streamlit's binding compares the address with the shown labels):
distviz.ui.params.url_text turns an option into that text for the links that lessons write.

The Lab's fit settings, which the Lab, Evolution and Split gains share, and the family that the Family explorer
shares with them, are drawn by app.py itself (distviz.ui.lab.draw_settings), so they are the same widgets on
every page.  A lesson's links are plain links (distviz.ui.lessons): they open a new session whose widgets read the
link's address.  At the end of a full run `drop_unknown_params` removes from the address what no widget of
the run reads (an unknown key, a setting of another page), so the address always describes a valid state.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

import streamlit as st

from distviz.errors import DistvizError

from .params import MAX_RAW, _format, _parse  # noqa: F401 (the pages import them here)
from .safe_text import show_error

GLOBAL = "app"            # prefix of the session keys every page shares (the chart image format)
BIND = "query-params"     # Streamlit's own binding of a widget to the URL parameter named by its key
_BOUND = "_qp_bound"      # URL name -> number of the full run that last drew its bound widget (see `bound`)
_RUN = "_qp_run"          # number of the current full run of the session (begin_run)
#: parameters that only links set and their readers take from st.query_params themselves (the step view's
#: ``tour``, distviz.ui.presenter): `drop_unknown_params` leaves them in the address
LINK_PARAMS = frozenset({"tour"})


def bound(name: str) -> dict:
    """Keyword arguments (`key`, `bind`) of a widget whose value Streamlit keeps in the URL parameter `name`.

    The widget's key is `name` itself (Streamlit names the parameter after the key).  Streamlit refuses a URL value
    that is not one of the widget's values (unparsable, not an option, outside the range, not finite) and shows
    the default.
    """
    st.session_state.setdefault(_BOUND, {})[name] = st.session_state.get(_RUN, 0)
    return {"key": name, "bind": BIND}


def bound_settings() -> dict[str, Any]:
    """{URL name: value} of the bound widgets drawn in this full run (and its fragment reruns) so far."""
    run = st.session_state.get(_RUN, 0)
    return {name: st.session_state.get(name) for name, r in st.session_state.get(_BOUND, {}).items()
            if r == run and st.session_state.get(name) is not None}


def begin_run() -> None:
    """Start of a full run (app.py): the bound widgets drawn from here on are this run's (`bound_settings`)."""
    st.session_state[_RUN] = st.session_state.get(_RUN, 0) + 1


def drop_unknown_params() -> None:
    """End of a full run (app.py): remove the URL parameters that no widget drawn in this run is bound to (an
    unknown key, a setting of another page, a hostile link's extra names), except `LINK_PARAMS`."""
    run = st.session_state.get(_RUN, 0)
    drawn = {name for name, r in st.session_state.get(_BOUND, {}).items() if r == run}
    for k in [k for k in st.query_params if k not in drawn and k not in LINK_PARAMS]:
        with contextlib.suppress(Exception):   # a bound parameter of a widget not drawn: Streamlit's to keep
            del st.query_params[k]


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
