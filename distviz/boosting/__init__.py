"""The boosting engine: one loop over a row store (``engine``), the laws it boosts (``laws``: the exponential-family
laws; ``charts``: NGBoost's charts; ``wg_law``: Wasserstein particles), the round rules (``rounds``) and compiled
prediction (``predict``).

The estimators that fit through it are ``distviz.estimators``; nothing here imports them.  Names are imported
lazily so that importing the package compiles no kernel.
"""

from importlib import import_module

_LAZY = {
    "BoostingEngine": "distviz.boosting.engine",
    "BoostingResult": "distviz.boosting.engine",
    "Law": "distviz.boosting.law",
    "LAWS": "distviz.boosting.laws",
    "make_law": "distviz.boosting.laws",
    "ChartLaw": "distviz.boosting.charts",
    "WGLaw": "distviz.boosting.wg_law",
}

__all__ = sorted(_LAZY)


def __getattr__(name):
    """Import the module that defines `name` on first use."""
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'distviz.boosting' has no attribute {name!r}")
