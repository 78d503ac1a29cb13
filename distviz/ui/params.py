"""Query-parameter values without Streamlit: parse a URL value with a setting's type, check it, write it back.

The code that reads a lesson step's state without running a page (distviz.ui.fits.config_from_params,
distviz.ui.lesson_check) checks values as the pages' widgets do, and the lessons write their links' values as the
widgets' binding to the address writes them (`url_text`: a select's shown text, `option_text`).
"""

from __future__ import annotations

import math
from typing import Any, Callable, Iterable

MAX_RAW = 200             # longest query-parameter value read (option labels are far shorter)


def _parse(raw: Any, default: Any) -> Any:
    """Parse a query-parameter string with the type of `default`; None when it does not parse.

    Numbers must be finite (no inf, nan or overflow) and whole numbers integral; a string longer than
    MAX_RAW characters is refused unread, so a hostile link cannot push a huge value into the page.
    """
    if not isinstance(raw, str) or len(raw) > MAX_RAW:
        return None
    try:
        if isinstance(default, bool):
            if raw.lower() in ("1", "true", "yes", "on"):
                return True
            if raw.lower() in ("0", "false", "no", "off"):
                return False
            return None
        if isinstance(default, (int, float)):
            v = float(raw)
            if not math.isfinite(v):
                return None
            if isinstance(default, int):
                return int(v) if v == int(v) else None
            return v
        return raw
    except (TypeError, ValueError, OverflowError):
        return None


def accepts(v: Any, *, options: Iterable | None = None, lo: float | None = None, hi: float | None = None,
            valid: Callable[[Any], bool] | None = None) -> bool:
    """Whether `v` is a value a page's setting may take: not None, finite, at most MAX_RAW characters, in
    `options`, inside [lo, hi] and passing `valid(v)`."""
    if v is None:
        return False
    if isinstance(v, float) and not math.isfinite(v):
        return False
    if isinstance(v, str) and len(v) > MAX_RAW:
        return False
    try:
        if options is not None and v not in list(options):
            return False
        if lo is not None and v < lo:
            return False
        if hi is not None and v > hi:
            return False
        return bool(valid(v)) if valid is not None else True
    except (TypeError, ValueError, OverflowError):  # a value of the wrong type is not a valid state
        return False


def applied_value(params: dict, name: str, default: Any, **checks: Any) -> Any:
    """The value a page's widget takes for the setting `name` when a lesson step's link gives it `params`
    (option names, as a lesson file writes them): the value when it passes `checks` (the keyword arguments of
    `accepts`), else `default`.  No Streamlit: the lesson check reads a step's state here."""
    raw = params.get(name)
    v = _parse(_format(raw), default) if raw is not None else None
    return v if accepts(v, **checks) else default


def _format(v: Any, *, bound: bool = False) -> str:
    """The URL text of a widget value: 1/0 for booleans (true/false for a `bound` widget: Streamlit reads only
    those), the shortest text that reads back exactly for floats."""
    if isinstance(v, bool):
        return ("true" if v else "false") if bound else ("1" if v else "0")
    if isinstance(v, float):
        s = f"{v:g}"
        return s if float(s) == v else repr(v)
    return str(v)


def option_text(name: str) -> Callable[[Any], str]:
    """The text that the select bound to the URL parameter `name` shows for an option: the widget's `format_func`
    and what Streamlit's binding writes into the address (it compares the address with these texts, not with the
    options).  The one place these texts are chosen: the widgets and the lessons' links (`url_text`) read them."""
    if name in ("family",):
        from .explorer import family_label
        return family_label
    if name in ("algo", "salgo"):
        from . import algorithms
        return lambda k: algorithms.get(k).label
    if name == "data":
        from .fits import DATASETS
        return lambda k: DATASETS[k][0]
    if name == "domain":
        from .fits import DOMAIN_OPTIONS
        return lambda k: DOMAIN_OPTIONS[k]
    if name == "pdata":
        from .posterior import CDE_DATA
        return lambda k: CDE_DATA[k]
    if name == "method":
        from distviz.viz import palette
        return palette.algo_label
    if name == "source":
        from .drifters import SOURCES
        return lambda k: SOURCES[k]
    if name == "map":
        from distviz.viz import maps
        return lambda k: maps.PANEL_TITLES.get(k, k)
    return str


def url_text(name: str, value: Any) -> str:
    """The address's text of the value `value` (an option name, a number, a switch) of the setting `name`, as
    Streamlit's binding writes it: a select's shown text (`option_text`), true / false for a switch."""
    text = option_text(name)
    if text is not str and not isinstance(value, (bool, int, float)):
        try:
            return text(value)
        except Exception:  # noqa: BLE001 - not an option (a registry's own error too): the page shows its default
            return str(value)
    return _format(value, bound=True)
