"""The contract every distviz estimator keeps: scikit-learn's parameter constraints, feature names, validation rows.

``Estimator`` is the base of ``DistributionalBoosting``, ``NGBoost`` / ``NGB`` / ``GB``, ``IndepNGB``, ``skGB``,
``WGBoost``, ``SparseGP`` and ``MVNNetwork``:

- parameters: each class declares scikit-learn's ``_parameter_constraints``
  (``sklearn.utils._param_validation``); ``_validate_params()`` (at the start of fit) checks them and raises
  ``ParameterError``, a ``ConfigError`` that is also scikit-learn's ``InvalidParameterError``, with
  scikit-learn's sentence; text for a number adds "pass a number without quotes", and a bool for a number is
  refused (True is an int to Python but never a meaningful rate or depth).  Every constructor has an explicit
  signature, so an unknown keyword is a ``TypeError`` at construction, as in scikit-learn.
- features: ``_validate_X(X, reset=...)`` converts X with ``distviz.validation.check_X`` (one DataError sentence
  per problem) and passes it to scikit-learn's ``validate_data`` (``skip_check_array``), which sets
  ``n_features_in_`` and, for a pandas DataFrame, ``feature_names_in_`` at fit; at predict time it warns when
  only one of fit and predict had names (scikit-learn's UserWarning), and columns named otherwise than the fit's
  are one DataError sentence (scikit-learn's ValueError, in one line).  The traces keep the names (their
  ``feature`` coordinate) and the model files store them (``distviz.modelfile``).
- validation rows: ``_validation_rows`` is the one reading of ``eval_set`` (a pair or triple, ``parse_eval_set``)
  and the one ``validation_fraction`` split (``validation_split``); which of them a fit uses, and what early
  stopping does with them, is each estimator's rule (the round rules are ``distviz.boosting.rounds``).
- dask collections: a fit takes in-memory arrays; handed a dask collection it raises one ``InputTypeError``
  sentence naming the ``distviz.dask`` class that fits on a cluster (``_dask_estimator``), as lightgbm.dask and
  xgboost.dask keep their ``Dask*`` classes apart from the in-memory ones.
"""

from __future__ import annotations

import sys

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils._param_validation import InvalidParameterError, validate_parameter_constraints
from sklearn.utils.validation import validate_data

from distviz.errors import ConfigError, DataError, InputTypeError
from distviz.validation import check_sample_weight, check_X

__all__ = ["Estimator", "ParameterError", "RENAMED", "is_dask_collection", "parse_eval_set", "renamed_params", "validation_count",
           "validation_split"]

#: constructor parameters renamed by issue 28 (one set of names), as model files written before it name them
RENAMED = {"n_rounds": "n_estimators", "display_size": "trace_rows"}


def is_dask_collection(x) -> bool:
    """True for a dask collection (array, DataFrame, dask-backed xarray); False, importing nothing, without dask."""
    dask = sys.modules.get("dask")
    return dask is not None and hasattr(dask, "is_dask_collection") and bool(dask.is_dask_collection(x))


def _dask_sentence(name: str, dask_name: str | None) -> str:
    """The one sentence of an in-memory fit handed a dask collection: the ``distviz.dask`` class to use, if any."""
    if dask_name is not None:
        return (f"{name}.fit takes in-memory arrays, not a dask collection; to fit on the workers of a dask cluster "
                f"use distviz.dask.{dask_name} (the same parameters and client=), or pass X.compute().")
    return (f"{name}.fit takes in-memory arrays, not a dask collection, and has no Dask estimator; pass X.compute() "
            "(and y.compute()), or fit DaskDistributionalBoosting, DaskNGB or DaskIndepNGB from distviz.dask.")


class ParameterError(ConfigError, InvalidParameterError):
    """A constructor parameter out of its constraints (a ConfigError and scikit-learn's InvalidParameterError)."""


def _takes_bool(constraints) -> bool:
    """Whether a parameter's constraint list admits a bool (the "boolean" constraint, bool / object types, Options)."""
    if constraints == "no_validation":
        return True
    for c in constraints:
        if c == "boolean" or c is bool or c is object:
            return True
        if type(c).__name__ == "Options" and any(isinstance(v, (bool, np.bool_)) for v in getattr(c, "options", ())):
            return True
    return False


def renamed_params(params: dict) -> dict:
    """A model file's constructor parameters with the names before issue 28 replaced by today's (``RENAMED``)."""
    out = dict(params)
    for old, new in RENAMED.items():
        if old in out and new not in out:
            out[new] = out.pop(old)
    return out


def parse_eval_set(eval_set) -> tuple | None:
    """eval_set as (X_val, y_val, w_val) (w_val None for a pair), or None; ConfigError for anything else."""
    if eval_set is None:
        return None
    if not isinstance(eval_set, (tuple, list)) or len(eval_set) not in (2, 3):
        raise ConfigError("eval_set must be a pair (X_val, y_val) or a triple (X_val, y_val, w_val).")
    return tuple(eval_set) + ((None,) if len(eval_set) == 2 else ())


def validation_count(n: int, fraction: float) -> int:
    """round(fraction * n), the rows a validation_fraction split holds out; DataError when fewer than one row would
    be held out or fewer than two kept (the in-memory split's and the Dask split's one rule)."""
    nv = int(round(float(fraction) * n))
    if nv < 1 or n - nv < 2:
        raise DataError(f"{n} sample{'s are' if n != 1 else ' is'} too few to split off a validation set of "
                        f"validation_fraction={fraction}; pass eval_set or more rows.")
    return nv


def validation_split(X, y, w, fraction: float, random_state):
    """Hold out round(fraction * n) random rows: (X_train, y_train, w_train, (X_val, y_val, w_val)).

    Both parts keep the rows' order.  random_state: a seed or a numpy Generator (used as it is, so a caller's
    generator continues from where the split left it).
    """
    n = X.shape[0]
    nv = validation_count(n, fraction)
    perm = np.random.default_rng(random_state).permutation(n)
    va, tr = np.sort(perm[:nv]), np.sort(perm[nv:])
    return X[tr], y[tr], (None if w is None else w[tr]), (X[va], y[va], None if w is None else w[va])


class Estimator(RegressorMixin, BaseEstimator):
    """Base of the distviz estimators (module docstring): parameter constraints, feature names, validation rows."""

    _parameter_constraints: dict = {}
    #: the ``distviz.dask`` class that fits this estimator on dask collections (None: there is none)
    _dask_estimator: str | None = None
    #: the trainer of ``distviz.distributed.fit`` that fits this estimator on dask collections (None: there is none)
    _dask_trainer: str | None = None

    def _validate_params(self) -> None:
        """Check every parameter against ``_parameter_constraints``; ParameterError (one sentence) on the first bad one."""
        params = self.get_params(deep=False)
        name = type(self).__name__
        for k, cons in self._parameter_constraints.items():
            v = params.get(k)
            if isinstance(v, (bool, np.bool_)) and not _takes_bool(cons):
                raise ParameterError(f"The {k!r} parameter of {name} must not be a bool; got {v!r}.")
        try:
            validate_parameter_constraints(self._parameter_constraints, params, caller_name=name)
        except InvalidParameterError as e:
            msg = str(e)
            bad = next((v for k, v in params.items() if f"'{k}' parameter" in msg), None)
            if isinstance(bad, str) and "range" in msg:
                msg = msg.rstrip(".") + "; pass a number without quotes."
            raise ParameterError(msg) from None

    # ------------------------------------------------------------------ features
    def _validate_X(self, X, *, reset: bool, allow_nan: bool, name: str = "X") -> np.ndarray:
        """X as a checked 2-D float array; at fit (reset) sets n_features_in_ / feature_names_in_, else checks them.

        The conversion and its sentences are ``distviz.validation.check_X``; the feature count and names go
        through scikit-learn's ``validate_data`` (names on one side only: its UserWarning; other names: a DataError).
        """
        if reset and is_dask_collection(X):
            raise InputTypeError(_dask_sentence(type(self).__name__, self._dask_estimator))
        n = None if reset else self.n_features_in_
        arr = check_X(X, allow_nan=allow_nan, n_features=n, name=name, model=type(self).__name__)
        named = hasattr(X, "columns") and np.ndim(X) == 2
        try:
            validate_data(self, X if named else arr, reset=reset, skip_check_array=True)
        except ValueError:   # scikit-learn's several-line message on names that differ from the fit's
            if not named or reset:
                raise
            new, old = [str(c) for c in X.columns], [str(c) for c in self.feature_names_in_]
            unseen, missing = [c for c in new if c not in old], [c for c in old if c not in new]
            what = (f"unseen in fit: {', '.join(unseen[:5])}; missing: {', '.join(missing[:5])}" if unseen or missing
                    else "they are in another order")
            raise DataError(f"The feature names of {name} should match those that were passed during fit ({what}); "
                            "pass the fit's columns in the fit's order.") from None
        return arr

    def _check_X_val(self, X, name: str = "X_val", allow_nan: bool = True) -> np.ndarray:
        """Validation features: the fit's column count (names are not compared, as in lightgbm)."""
        return check_X(X, allow_nan=allow_nan, n_features=self.n_features_in_, name=name, model=type(self).__name__)

    # ------------------------------------------------------------------ persistence
    def save(self, path) -> None:
        """Write the fitted model to one NetCDF file (``distviz.modelfile``; no pickle).

        :meth:`load` reads it back and predicts bit-identically.  What the file holds is the estimator's
        ``_model_writer``: its parameters, its fitted values and arrays, and its trace where it has one.

        Parameters
        ----------
        path : str or path-like
            The file to write (``.nc`` by convention); an existing file is replaced.

        Returns
        -------
        None

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        ConfigError
            Where the fitted model holds code rather than data (a ``WGBoost`` with a callable target).
        """
        self._check_fitted()
        self._model_writer().write(path)

    @classmethod
    def load(cls, path):
        """Read a model written by :meth:`save`.

        Every array of the file is checked (shapes, finite values, tree structure) before a compiled kernel sees it.

        Parameters
        ----------
        path : str or path-like
            A NetCDF file written by this class's ``save``.

        Returns
        -------
        model : estimator of this class
            The fitted estimator, predicting as the saved one did.

        Raises
        ------
        DataError
            Naming the file and its first problem: not a distviz model file, a file of another estimator, or a
            malformed parameter, array or forest (or, by estimator: an invalid target specification, inducing points
            that give a singular kernel matrix).
        """
        from distviz.modelfile import ModelFile

        return cls._read_model(ModelFile(path, cls.__name__))

    def _model_writer(self):
        """The ``distviz.modelfile.ModelWriter`` holding what :meth:`save` writes (each estimator's own)."""
        raise NotImplementedError(f"{type(self).__name__} cannot be saved")

    @classmethod
    def _read_model(cls, f):
        """The fitted estimator read from the opened ``distviz.modelfile.ModelFile`` `f` (each estimator's own)."""
        raise NotImplementedError(f"{cls.__name__} cannot be loaded")

    def _names_from_file(self, f, n_features: int) -> None:
        """Set n_features_in_ and (when the file has them) feature_names_in_ from a ``distviz.modelfile.ModelFile``
        (``ModelWriter`` stores an estimator's ``feature_names_in_`` as the text variable ``model_feature_names``)."""
        self.n_features_in_ = int(n_features)
        names = f.feature_names(int(n_features))
        if names is not None:
            self.feature_names_in_ = names

    # ------------------------------------------------------------------ validation rows
    def _validation_rows(self, X, y, w, eval_set, *, split: bool, check_y, random_state=None, allow_nan=True):
        """(X, y, w, valid): valid = eval_set checked like the training rows, else (when split) a
        ``validation_fraction`` share of the rows held out, else None; ConfigError when ``early_stopping_rounds``
        is set and there are no validation rows to watch (early stopping would silently never happen).

        check_y(y_val, n_rows, name) checks the validation targets (the fit's own rule); their trailing shape must
        equal y's.  random_state defaults to the estimator's.
        """
        ev = parse_eval_set(eval_set)
        if ev is not None:
            Xv = self._check_X_val(ev[0], allow_nan=allow_nan)
            yv = check_y(ev[1], Xv.shape[0], "y_val")
            if np.shape(yv)[1:] != np.shape(y)[1:]:
                raise DataError(f"y_val has shape {np.shape(yv)} but y has {np.shape(y)}; pass the same output columns.")
            return X, y, w, (Xv, yv, check_sample_weight(ev[2], Xv.shape[0], name="w_val"))
        if split:
            rs = self.random_state if random_state is None else random_state
            return validation_split(X, y, w, self.validation_fraction, rs)
        if getattr(self, "early_stopping_rounds", None) is not None:
            alt = " or validation_fraction" if "validation_fraction" in self.get_params() else ""
            raise ConfigError(f"early_stopping_rounds needs validation rows to watch; pass eval_set=(X_val, y_val){alt}.")
        return X, y, w, None
