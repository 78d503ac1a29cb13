"""Output distributions: exponential-family geometry (T, A, eta*, A*, Fisher), NGBoost charts and WGBoost posteriors.

``get(name, **kwargs)`` returns a family ("poisson", "bernoulli", "normal", "gamma", "exponential",
"categorical" with K=..., "mvn" with P=...); ``available()`` lists the names; ``charts.get(name)``
returns an unconstrained chart theta for NGBoost-style fitting; ``posteriors.make_target(name)`` a
posterior per data point in unconstrained coordinates, the target of WGBoost's particles.
"""

from __future__ import annotations

from distviz.errors import ConfigError

from . import charts
from .base import ExponentialFamily
from .categorical import Categorical
from .mvn import MultivariateNormal
from .univariate import Bernoulli, Exponential, Gamma, Normal, Poisson

__all__ = ["ExponentialFamily", "Poisson", "Bernoulli", "Normal", "Gamma", "Exponential", "Categorical",
           "MultivariateNormal", "get", "available", "charts"]

_FAMILIES = {
    "poisson": Poisson,
    "bernoulli": Bernoulli,
    "normal": Normal,
    "gamma": Gamma,
    "exponential": Exponential,
    "categorical": Categorical,
    "mvn": MultivariateNormal,
}

_ALIASES = {
    "gaussian": "normal", "norm": "normal",
    "binary": "bernoulli", "binomial": "bernoulli",
    "expon": "exponential", "exp": "exponential",
    "multinomial": "categorical", "multiclass": "categorical", "k_categorical": "categorical",
    "multivariate_normal": "mvn", "multivariate_gaussian": "mvn", "mvnormal": "mvn", "multinormal": "mvn",
    "mvgaussian": "mvn", "multivariatenormal": "mvn",
}


def available() -> list[str]:
    """Canonical names of the families that get() accepts."""
    return list(_FAMILIES)


def get(name, **kwargs) -> ExponentialFamily:
    """A family by name (aliases such as 'gaussian' and 'multivariate_normal' accepted).

    Parameters
    ----------
    name : str or ExponentialFamily
        One of :func:`available` ("poisson", "bernoulli", "normal", "gamma", "exponential", "categorical",
        "mvn") or an alias ("gaussian", "binary", "expon", "multiclass", "multivariate_normal", ...); case,
        spaces and hyphens are ignored.  A family object is returned unchanged (no options allowed then).
    **kwargs
        The family's options: ``margin`` for every family, ``K`` for "categorical", ``P`` for "mvn"; any
        other option raises ``ConfigError``.

    Returns
    -------
    ExponentialFamily
        A new family object (or ``name`` itself when it is one).

    Raises
    ------
    ConfigError
        For an unknown name, a name that is not a string, or an option the family does not take.

    Examples
    --------
    >>> from distviz.families import get
    >>> get("gaussian")
    Normal()
    >>> get("multiclass", K=4)
    Categorical(K=4)
    """
    if isinstance(name, ExponentialFamily):
        if kwargs:
            raise ConfigError(f"options {sorted(kwargs)} cannot be applied to an existing family {name!r}; "
                              f"pass its name instead.")
        return name
    if not isinstance(name, str):
        raise ConfigError(f"family name must be a string, got {name!r}; choose one of {', '.join(available())}.")
    key = name.strip().lower().replace("-", "_").replace(" ", "_")
    key = _ALIASES.get(key, key)
    if key not in _FAMILIES:
        raise ConfigError(f"unknown family {name!r}; choose one of {', '.join(available())}.")
    allowed = {"margin"} | ({"K"} if key == "categorical" else set()) | ({"P"} if key == "mvn" else set())
    extra = set(kwargs) - allowed
    if extra:
        raise ConfigError(f"family {key!r} does not take {sorted(extra)}; it accepts {sorted(allowed)}.")
    return _FAMILIES[key](**kwargs)
