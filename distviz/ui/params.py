"""Query-parameter values without Streamlit: parse a URL value with a setting's type, check it, write it back.

The pages' widgets (distviz.ui.state) and the code that reads a lesson link's state without running a page
(distviz.ui.fits.config_from_params, distviz.ui.lesson_check) share these, so both read an address alike.
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
    `options`, inside [lo, hi] and passing `valid(v)` (the checks of `qp_key`)."""
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
    """The value `qp_key` gives the setting `name` on a run that applies the URL `params` (a lesson's "show me"
    link, ?apply=1): the URL's value, written and read back as in the address, when it passes `checks` (the
    keyword arguments of `accepts`), else `default`.  No Streamlit: the lesson check reads a step's state here."""
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
