"""Tree traversal: the leaf of every row, from bin codes or from raw features.

The node columns are a tree record's (distviz/trees/record.py).  Missing values: a NaN (raw path)
or the missing-value code ``miss`` (binned path, ``Binner.missing_bin_``) follows ``missing_left``
(uint8 per node, 1 = a missing value goes left): it is replaced per node by a stand-in that compares
the right way (-inf or NaN for raw values, 0 or ``miss`` for codes), so the left / right choice stays
one branch-free select.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["apply_binned", "apply_raw", "apply_binned_many", "apply_raw_many"]


@njit(cache=True)
def apply_binned(codes_T, feature, split_bin, left, right, missing_left, miss):
    """Leaf id of every column of codes_T (p, n): go left when code <= split_bin (code == miss: by missing_left)."""
    n = codes_T.shape[1]
    out = np.empty(n, dtype=np.int64)
    miss_to = np.empty(left.shape[0], dtype=np.int64)  # 0 goes left of every split, miss right of every one
    for j in range(left.shape[0]):
        miss_to[j] = 0 if missing_left[j] != 0 else miss
    for i in range(n):
        j = 0
        while left[j] >= 0:
            c = np.int64(codes_T[feature[j], i])
            c = miss_to[j] if c == miss else c
            j = left[j] if c <= split_bin[j] else right[j]
        out[i] = j
    return out


@njit(cache=True)
def apply_raw(X, feature, threshold, left, right, missing_left):
    """Leaf id of every row of X (n, p): go left when x <= threshold (x NaN: by missing_left)."""
    n = X.shape[0]
    out = np.empty(n, dtype=np.int64)
    nan_to = np.empty(left.shape[0])  # -inf goes left of every split, NaN right of every one
    for j in range(left.shape[0]):
        nan_to[j] = -np.inf if missing_left[j] != 0 else np.nan
    for i in range(n):
        j = 0
        while left[j] >= 0:
            x = X[i, feature[j]]
            x = x if x == x else nan_to[j]
            j = left[j] if x <= threshold[j] else right[j]
        out[i] = j
    return out


@njit(cache=True)
def apply_binned_many(codes_T, feature, split_bin, left, right, missing_left, miss):
    """Leaf ids (B, n) of B trees given as (B, M) node arrays."""
    out = np.empty((feature.shape[0], codes_T.shape[1]), dtype=np.int64)
    for t in range(feature.shape[0]):
        out[t] = apply_binned(codes_T, feature[t], split_bin[t], left[t], right[t], missing_left[t], miss)
    return out


@njit(cache=True)
def apply_raw_many(X, feature, threshold, left, right, missing_left):
    """Leaf ids (B, n) of B trees given as (B, M) node arrays, from raw X."""
    out = np.empty((feature.shape[0], X.shape[0]), dtype=np.int64)
    for t in range(feature.shape[0]):
        out[t] = apply_raw(X, feature[t], threshold[t], left[t], right[t], missing_left[t])
    return out
