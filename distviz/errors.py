"""Errors a user can cause, each carrying one sentence that says what is wrong and how to fix it.

``NotFittedError`` is also scikit-learn's; it is made on first use, so that importing distviz's compiled kernels
(as the Dask workers do) does not import scikit-learn.
"""

import threading

_MAKE_ONCE = threading.Lock()


class DistvizError(Exception):
    """Base class of the errors that pages show as a single sentence."""


class DataError(DistvizError, ValueError):
    """Bad data: a missing column, NaN, a value outside a family's support, a malformed file."""


class ConfigError(DistvizError, ValueError):
    """A parameter out of range or an unknown option name."""


class InputTypeError(DistvizError, TypeError):
    """Input of a kind the estimator does not take (a dask collection to an in-memory fit); the sentence names the one
    that does."""


class ClusterError(DistvizError, RuntimeError):
    """A Dask cluster that cannot finish the work it was given (every worker gone); the sentence says what to do."""


class MissingDependencyError(DistvizError, ModuleNotFoundError):
    """An optional package (an extra such as distviz[app]) is not installed; the sentence names the extra."""


def _not_fitted_error() -> type:
    """The class ``NotFittedError`` (see ``__getattr__``), made once (under a lock: the app serves many threads)."""
    with _MAKE_ONCE:
        cls = globals().get("NotFittedError")
        if cls is None:
            from sklearn.exceptions import NotFittedError as sklearn_not_fitted

            cls = type("NotFittedError", (ConfigError, sklearn_not_fitted), {
                "__module__": __name__,
                "__doc__": "A predict, score or staged method called before fit (also scikit-learn's NotFittedError)."})
            globals()["NotFittedError"] = cls
        return cls


def __getattr__(name: str) -> type:
    """``NotFittedError``, made on first use (module attribute, PEP 562)."""
    if name == "NotFittedError":
        return _not_fitted_error()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: the sentence every estimator raises when used before fit
NOT_FITTED = "This model is not fitted yet; call fit(X, y) first."


def check_fitted(estimator, attributes=None) -> None:
    """Raise NotFittedError unless `estimator` is fitted (scikit-learn's check_is_fitted: names ending in "_").

    `attributes` (a name or a list of names) are the fitted attributes to look for; None looks for any
    attribute whose name ends with an underscore, as scikit-learn does.
    """
    from sklearn.exceptions import NotFittedError as sklearn_not_fitted
    from sklearn.utils.validation import check_is_fitted

    try:
        check_is_fitted(estimator, attributes)
    except sklearn_not_fitted:
        raise _not_fitted_error()(NOT_FITTED) from None
