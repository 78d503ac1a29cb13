"""Input validation shared by every estimator and tree: one rule set for features, targets and weights.

The estimators' numeric parameters are checked here too (``check_number``, ``check_int``): one ConfigError
sentence, never a raw TypeError; text such as "0.1" is refused with a sentence that says to pass a number
(no silent conversion), and bools are refused (True is an int to Python but never a meaningful rate or depth).

Rules for the data (every violation is a ``DataError`` carrying one sentence that names the argument):

* values must be real numbers: bool and integer arrays are converted, object arrays are converted
  when every value reads as a number; complex values and values that are not numbers (text,
  dicts, ...) are refused;
* ``X`` is 2-D (n_samples, n_features); a 1-D ``X`` is read as ONE feature (n_samples rows), by
  design, so a single row must be passed as ``X.reshape(1, -1)``;
* ``X`` may hold NaN (a missing value) only where the model routes missing values natively
  (``allow_nan=True``: the histogram trees and the boosting estimators built on them); infinite
  values are always refused; targets must be finite;
* no empty input; X, y and the weights have the same number of rows;
* sample weights are finite and non-negative with a positive, finite sum.

The sentences contain the phrases scikit-learn's ``check_estimator`` looks for ("NaN", "inf",
"Complex data not supported", "0 feature(s) (shape=(n, 0)) while a minimum of 1 is required",
"Reshape your data", "sparse", "X has 1 features, but <model> is expecting 3 features as input"), so the
contract checks pass without special cases.
"""

from __future__ import annotations

import numbers

import numpy as np

from distviz.errors import ConfigError, DataError

__all__ = ["check_X", "check_y", "check_sample_weight", "check_X_y", "NonNumericError", "check_number", "check_int",
           "check_y_resolution", "kernel_array", "MAX_LOCATION_TO_SPREAD"]


def kernel_array(a, dtype=np.float64) -> np.ndarray:
    """`a` as a C-contiguous, writable array of `dtype`, copied only when it is not one already.

    numba compiles one specialisation of a kernel per argument type, and an array's layout (C, F or strided)
    and its read-only flag are part of its type: a read-only or strided view would make a kernel compile
    again, at run time, for that caller.  Every array a compiled kernel receives from Python goes through
    here, so that each kernel keeps the one specialisation the warm-up compiles (``distviz warm``).
    """
    a = np.ascontiguousarray(a, dtype=dtype)
    return a if a.flags.writeable else a.copy()


class NonNumericError(DataError, TypeError):
    """Values that are not numbers (text, dicts, ...) where numbers are needed; a TypeError as NumPy raises."""


def _as_float(A, name: str) -> np.ndarray:
    """A as a float64 array, refusing sparse matrices, complex and non-numeric values with one sentence."""
    if hasattr(A, "tocsr") and hasattr(A, "nnz"):  # scipy.sparse matrix or array (not imported: an optional check)
        raise DataError(f"{name} is a sparse matrix, which is not supported; pass a dense array such as {name}.toarray().")
    a = A if isinstance(A, np.ndarray) else None
    if a is None:
        try:
            a = np.asarray(A)
        except (TypeError, ValueError):  # ragged nested sequences
            raise DataError(f"{name} is not a rectangular array; pass a list of equally long rows or a 2-D array.") from None
    if a.dtype.kind == "c" or (a.dtype.kind == "O" and any(isinstance(v, complex) for v in a.reshape(-1)[:1000])):
        raise DataError(f"Complex data not supported in {name}; pass the real and imaginary parts as separate real columns.")
    if a.dtype.kind in "fiub":
        return a.astype(np.float64, copy=False)
    try:
        return a.astype(np.float64)
    except (TypeError, ValueError):
        raise NonNumericError(
            f"{name} has non-numeric values in column {_bad_column(a)}; encode them as numbers "
            "(every argument must be a string or a number that reads as a real number)."
        ) from None


def _bad_column(a: np.ndarray) -> int:
    """Index of the first column holding a value that does not convert to float (0 for 1-D input)."""
    if a.ndim < 2:
        return 0
    for j in range(a.shape[1]):
        try:
            a[:, j].astype(np.float64)
        except (TypeError, ValueError):
            return j
    return 0


def _first_bad_column(bad: np.ndarray) -> int:
    """First column index with a True entry of a 2-D boolean array."""
    return int(np.flatnonzero(bad.any(axis=0))[0])


def check_X(X, *, allow_nan: bool, n_features: int | None = None, name: str = "X", order: str | None = None,
            model: str = "this model") -> np.ndarray:
    """X as a 2-D float64 array (1-D: one feature), checked by the module's rules; order "C"/"F" makes it contiguous.

    allow_nan: NaN marks a missing value the model routes natively; False refuses it.  n_features:
    the number of columns the fitted model expects.  model names the estimator in the sentences
    (a class name such as "NGB"; phrases like "this model" read as "it" in the feature-count one).
    """
    X = _as_float(X, name)
    one_d = X.ndim == 1
    if one_d:
        X = X[:, None]
    if X.ndim != 2:
        raise DataError(f"{name} must be a 2-D array (n_samples, n_features), got {X.ndim} dimensions (shape {X.shape}).")
    if X.shape[0] == 0:
        raise DataError(f"{name} has 0 sample(s) (shape={X.shape}) while a minimum of 1 is required; pass at least one row.")
    if X.shape[1] == 0:
        raise DataError(f"{name} has 0 feature(s) (shape={X.shape}) while a minimum of 1 is required; pass at least one column.")
    if n_features is not None and X.shape[1] != n_features:
        if one_d:
            raise DataError(f"{name} is 1-D, which reads as {X.shape[0]} rows of one feature, but the model was fitted on "
                            f"{n_features} features; Reshape your data with {name}.reshape(1, -1) for a single row.")
        who = model if model.isidentifier() else "it"
        raise DataError(f"{name} has {X.shape[1]} features, but {who} is expecting {n_features} features as input; "
                        "pass the columns used in fit.")
    if not np.isfinite(X).all():
        inf = np.isinf(X)
        if inf.any():
            raise DataError(f"{name} contains infinite values (inf) in column {_first_bad_column(inf)}; replace them with "
                            f"finite numbers{' or NaN (missing)' if allow_nan else ''}.")
        if not allow_nan:
            raise DataError(f"{name} contains NaN (missing values) in column {_first_bad_column(np.isnan(X))}, which "
                            f"{model} cannot handle; impute or drop those rows first.")
    if order == "C" and not X.flags.c_contiguous:
        X = np.ascontiguousarray(X)
    elif order == "F" and not X.flags.f_contiguous:
        X = np.asfortranarray(X)
    return X


def check_y(y, n: int | None = None, *, name: str = "y", ndim: int | None = None) -> np.ndarray:
    """Targets as a finite float64 array with n rows; ndim=1 wants (n,) ((n, 1) is flattened), 2 gives (n, K) (1-D is one column).

    ndim=None keeps the given shape (1-D or 2-D).  Per-family support checks (counts, positivity,
    labels) stay with the families.
    """
    y = _as_float(y, name)
    if ndim == 1 and y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if ndim == 2 and y.ndim == 1:
        y = y[:, None]
    if y.ndim not in (1, 2) or (ndim is not None and y.ndim != ndim):
        want = "(n,)" if ndim == 1 else "(n, K)" if ndim == 2 else "(n,) or (n, K)"
        raise DataError(f"{name} must have shape {want}, got shape {y.shape}.")
    if y.shape[0] == 0:
        raise DataError(f"{name} has 0 sample(s) (shape={y.shape}) while a minimum of 1 is required; pass at least one value.")
    if n is not None and y.shape[0] != n:
        raise DataError(f"{name} has {y.shape[0]} rows but X has {n}; pass one value per row of X.")
    if not np.isfinite(y).all():
        raise DataError(f"{name} contains NaN or infinite values (inf); drop those rows or fix the targets first.")
    return np.ascontiguousarray(y)


def check_sample_weight(w, n: int, *, name: str = "sample_weight") -> np.ndarray | None:
    """None, or n finite non-negative float64 weights with a positive, finite sum (a C-contiguous (n,) array)."""
    if w is None:
        return None
    w = _as_float(w, name)
    if w.ndim > 1 and w.size == max(w.shape):
        w = w.reshape(-1)
    if w.ndim != 1:
        raise DataError(f"{name} must be 1-D with one weight per row, got shape {w.shape}.")
    if w.shape[0] != n:
        raise DataError(f"{name} has {w.shape[0]} entries but X has {n} rows; pass one weight per row.")
    if not np.isfinite(w).all():
        raise DataError(f"{name} contains NaN or infinite values (inf); pass finite weights.")
    if (w < 0).any():
        raise DataError(f"{name} has negative entries; pass non-negative weights.")
    total = w.sum()
    if not total > 0:
        raise DataError(f"{name} sums to zero; give at least one row a positive weight.")
    if not np.isfinite(total):
        raise DataError(f"{name} sums to more than the largest float (its largest entry is {w.max():.3g}); "
                        "divide the weights by their maximum.")
    return np.ascontiguousarray(w)


def check_X_y(X, y, *, allow_nan: bool, y_name: str = "y", y_ndim: int | None = None, order: str | None = None,
              model: str = "this model") -> tuple[np.ndarray, np.ndarray]:
    """check_X then check_y with X's row count (see both)."""
    X = check_X(X, allow_nan=allow_nan, order=order, model=model)
    return X, check_y(y, X.shape[0], name=y_name, ndim=y_ndim)


# ---------------------------------------------------------------- estimator parameters

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


#: largest |mean(y)| / sd(y) the Normal and Gamma families resolve: their statistics y^2 (Normal) and log y
#: (Gamma) cancel to the spread, losing log10(ratio^2) of the 16 digits (NaN NLLs appear from about 1e7)
MAX_LOCATION_TO_SPREAD = 1e6


def check_y_resolution(family: str, y) -> None:
    """Refuse Normal / Gamma targets that double precision cannot fit: one DataError sentence naming the fix.

    Targets near 1e12 or 1e-12 fit as well as any (the laws are scale-free); what breaks is a spread tiny
    against the level (y = 1e12 + N(0, 1)), where A(eta) - <eta, T(y)> cancels to rounding noise.
    """
    if family not in ("normal", "gamma"):
        return
    y = np.asarray(y, dtype=float).ravel()
    if y.size < 2:
        return
    big = float(np.max(np.abs(y)))
    if big > 1e150:
        raise DataError(f"y reaches {big:.3g}, too large to square in double precision; divide y by a power "
                        f"of ten (e.g. {10.0 ** np.floor(np.log10(big)):.0e}) before fitting.")
    mean, sd = float(np.mean(y)), float(np.std(y))
    if sd > 0 and sd < 1e-150:
        raise DataError(f"y varies by only {sd:.3g}, too little to square in double precision; multiply y by a "
                        f"power of ten (e.g. {10.0 ** -np.floor(np.log10(sd)):.0e}) before fitting.")
    if sd > 0 and abs(mean) > MAX_LOCATION_TO_SPREAD * sd:
        fix = (f"subtract a constant near {mean:.6g} from y before fitting" if family == "normal" else
               "fit y minus a constant near its minimum with the Normal family instead")
        raise DataError(f"y varies by only {sd:.3g} around {mean:.6g} (1 part in {abs(mean) / sd:.1e}), too "
                        f"little for the {family.capitalize()} family in double precision; {fix}.")
