"""Boosting estimators: exponential-family laws (MGD, NGD, crossed, GD), NGBoost presets and WGBoost.

The paper's scikit-learn baseline skGB is ``distviz.baselines.skGB``.

Names are imported lazily so that importing one estimator does not compile the others.
"""

from importlib import import_module

_LAZY = {
    "DistributionalBoosting": "distviz.boosting.estimator",
    "WGBoost": "distviz.boosting.wgboost",
    "NGBoost": "distviz.boosting.ngboost",
    "NGB": "distviz.boosting.ngboost",
    "IndepNGB": "distviz.boosting.ngboost",
    "GB": "distviz.boosting.ngboost",
}

__all__ = sorted(_LAZY)


def __getattr__(name):
    """Import the module that defines `name` on first use."""
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'distviz.boosting' has no attribute {name!r}")
