"""Errors a user can cause, each carrying one sentence that says what is wrong and how to fix it."""

from sklearn.exceptions import NotFittedError as _SklearnNotFittedError


class DistvizError(Exception):
    """Base class of the errors that pages show as a single sentence."""


class DataError(DistvizError, ValueError):
    """Bad data: a missing column, NaN, a value outside a family's support, a malformed file."""


class ConfigError(DistvizError, ValueError):
    """A parameter out of range or an unknown option name."""


class MissingDependencyError(DistvizError, ModuleNotFoundError):
    """An optional package (an extra such as distviz[app]) is not installed; the sentence names the extra."""


class NotFittedError(ConfigError, _SklearnNotFittedError):
    """A predict, score or staged method called before fit (also scikit-learn's NotFittedError)."""


#: the sentence every estimator raises when used before fit
NOT_FITTED = "This model is not fitted yet; call fit(X, y) first."


def check_fitted(estimator, attributes=None) -> None:
    """Raise NotFittedError unless `estimator` is fitted (scikit-learn's check_is_fitted: names ending in "_").

    `attributes` (a name or a list of names) are the fitted attributes to look for; None looks for any
    attribute whose name ends with an underscore, as scikit-learn does.
    """
    from sklearn.utils.validation import check_is_fitted

    try:
        check_is_fitted(estimator, attributes)
    except _SklearnNotFittedError:
        raise NotFittedError(NOT_FITTED) from None
