"""The estimators in scikit-learn's contract, one module per family, above the boosting engine (``distviz.boosting``).

- ``distributional``: ``DistributionalBoosting``, exponential-family boosting with the five laws (MGD, NGD, GD and
  the crossed laws);
- ``ngboost``: ``NGBoost`` in a chart and the presets of the multivariate NGBoost paper, ``NGB``, ``GB``, ``IndepNGB``;
- ``wgboost``: ``WGBoost``, Wasserstein gradient boosting of particles.

The paper's scikit-learn baseline skGB is ``distviz.baselines.skGB``.  Names are imported lazily so that importing
one estimator does not compile the others.
"""

from importlib import import_module

_LAZY = {
    "DistributionalBoosting": "distviz.estimators.distributional",
    "WGBoost": "distviz.estimators.wgboost",
    "NGBoost": "distviz.estimators.ngboost",
    "NGB": "distviz.estimators.ngboost",
    "IndepNGB": "distviz.estimators.ngboost",
    "GB": "distviz.estimators.ngboost",
}

__all__ = sorted(_LAZY)


def __getattr__(name):
    """Import the module that defines `name` on first use."""
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'distviz.estimators' has no attribute {name!r}")
