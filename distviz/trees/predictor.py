"""Tree traversal: the leaf of every row, from bin codes or from raw features."""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["apply_binned", "apply_raw", "apply_binned_many", "apply_raw_many"]


@njit(cache=True)
def apply_binned(codes_T, feature, split_bin, left, right):
    """Leaf id of every column of codes_T (p, n): go left when code <= split_bin."""
    n = codes_T.shape[1]
    out = np.empty(n, dtype=np.int64)
    for i in range(n):
        j = 0
        while left[j] >= 0:
            if codes_T[feature[j], i] <= split_bin[j]:
                j = left[j]
            else:
                j = right[j]
        out[i] = j
    return out


@njit(cache=True)
def apply_raw(X, feature, threshold, left, right):
    """Leaf id of every row of X (n, p): go left when x <= threshold."""
    n = X.shape[0]
    out = np.empty(n, dtype=np.int64)
    for i in range(n):
        j = 0
        while left[j] >= 0:
            if X[i, feature[j]] <= threshold[j]:
                j = left[j]
            else:
                j = right[j]
        out[i] = j
    return out


@njit(cache=True)
def apply_binned_many(codes_T, feature, split_bin, left, right):
    """Leaf ids (B, n) of B trees given as (B, M) node arrays."""
    B = feature.shape[0]
    n = codes_T.shape[1]
    out = np.empty((B, n), dtype=np.int64)
    for t in range(B):
        out[t] = apply_binned(codes_T, feature[t], split_bin[t], left[t], right[t])
    return out


@njit(cache=True)
def apply_raw_many(X, feature, threshold, left, right):
    """Leaf ids (B, n) of B trees given as (B, M) node arrays, from raw X."""
    B = feature.shape[0]
    out = np.empty((B, X.shape[0]), dtype=np.int64)
    for t in range(B):
        out[t] = apply_raw(X, feature[t], threshold[t], left[t], right[t])
    return out
