"""Fit-time checks of the estimators' numeric parameters: one ConfigError sentence, never a raw TypeError.

Text such as "0.1" is refused with a sentence that says to pass a number (no silent conversion); bools
are refused too (True is an int to Python but never a meaningful rate or depth).
"""

from __future__ import annotations

import numbers

import numpy as np

from distviz.errors import ConfigError

__all__ = ["check_number", "check_int"]


def _kind(value) -> str:
    if isinstance(value, str):
        return f"the text {value[:40]!r}; pass a number without quotes"
    return f"{type(value).__name__} {str(value)[:40]}"


def check_number(name: str, value, *, low: float = 0.0, low_open: bool = True, high: float | None = None,
                 high_open: bool = False, example: str = "0.1") -> float:
    """`value` as a finite float in the given range, else a one-sentence ConfigError naming `name`."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ConfigError(f"{name} must be a number such as {example}, got {_kind(value)}.")
    v = float(value)
    lo_ok = v > low if low_open else v >= low
    hi_ok = high is None or (v < high if high_open else v <= high)
    if not (np.isfinite(v) and lo_ok and hi_ok):
        rng = ("(" if low_open else "[") + f"{low:g}, " + ("inf)" if high is None else f"{high:g}" + (")" if high_open else "]"))
        raise ConfigError(f"{name} must be a finite number in {rng}, such as {example}; got {value!r}.")
    return v


def check_int(name: str, value, *, low: int = 1, example: str = "100") -> int:
    """`value` as an int >= low (whole-number floats such as 3.0 allowed), else a one-sentence ConfigError."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ConfigError(f"{name} must be a whole number such as {example}, got {_kind(value)}.")
    if isinstance(value, numbers.Integral):
        v = int(value)
    else:
        f = float(value)
        if not (np.isfinite(f) and f == round(f)):
            raise ConfigError(f"{name} must be a whole number such as {example}; got {value!r}.")
        v = int(f)
    if v < low:
        raise ConfigError(f"{name} must be a whole number >= {low}, such as {example}; got {value!r}.")
    return v
