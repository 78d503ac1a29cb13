"""Mathematical notation for what the app shows: the ASCII names the library keeps (``mu/sigma^2``, ``eta*``,
``y in R^2``) written with the symbols the pages' text uses (μ/σ², η*, y ∈ ℝ²), so a label never mixes the two.

The library's names stay ASCII (they are data: trace attributes, model files, column names); the figure
builders and pages pass every family name through `math_text` before it is drawn.
"""

from __future__ import annotations

import re

__all__ = ["math_text", "math_names"]

_GREEK = {"alpha": "α", "beta": "β", "kappa": "κ", "lambda": "λ", "mu": "μ", "nu": "ν", "phi": "φ", "pi": "π",
          "rho": "ρ", "sigma": "σ", "theta": "θ", "eta": "η"}
_WORD = re.compile(r"(?<![A-Za-z])(" + "|".join(sorted(_GREEK, key=len, reverse=True)) + r")(?![A-Za-z])")
_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")
_POWER = re.compile(r"\^\{?(-?\d+)\}?")
_MINUS = re.compile(r"(^|[\s(\[=,/])-(?=[\d(A-Za-zα-ω])")
_SUPPORT = re.compile(r"\bin (R|\{)")
_PRODUCT = re.compile(r"(?<=[A-Za-z0-9])\*(?=[A-Za-z0-9])")


def math_text(text: object) -> str:
    """`text` with ASCII notation written in symbols: Greek names (sigma → σ, eta* → η*), integer powers
    (^2 → ², R^2 → R²), products (y1*y2 → y1·y2), a leading or bracketed minus as − and ``in R`` / ``in {``
    of a support as ∈ ℝ / ∈ {.

    Parameters
    ----------
    text : object
        Any value; it is converted with ``str``.

    Returns
    -------
    str

    Examples
    --------
    >>> math_text("mu/sigma^2"), math_text("-1/(2 sigma^2)"), math_text("E[y^2]")
    ('μ/σ²', '−1/(2 σ²)', 'E[y²]')
    >>> math_text("MGD (mirror, additive in eta*)"), math_text("y in R^2"), math_text("metadata beta grid")
    ('MGD (mirror, additive in η*)', 'y ∈ ℝ²', 'metadata β grid')
    """
    s = _WORD.sub(lambda m: _GREEK[m.group(1)], str(text))
    s = _POWER.sub(lambda m: m.group(1).translate(_SUPERSCRIPT), s)
    s = _MINUS.sub(lambda m: m.group(1) + "−", s)
    s = _PRODUCT.sub("·", s)
    return _SUPPORT.sub(lambda m: "∈ " + ("ℝ" if m.group(1) == "R" else "{"), s)


def math_names(names) -> list[str]:
    """`math_text` of every name of a sequence (a family's natural, mean or statistic names)."""
    return [math_text(n) for n in names]
