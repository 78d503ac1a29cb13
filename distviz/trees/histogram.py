"""Histogram kernels: per (feature, bin) sums of [w, 1{w>0}, w*Y_1, ..., w*Y_K] over the rows of a node.

Layout of a node histogram: ``h[f, b, c]`` with ``c = 0`` the weight sum, ``c = 1`` the number of
rows with positive weight, ``c = 2 + k`` the weighted sum of output ``k``; float64 accumulation.
Row statistics are precomputed once per fit as ``G[i] = [w_i, 1{w_i>0}, w_i Y_i]`` so that a
histogram pass is pure additions.  Children get their histogram from the smaller child's pass and
a subtraction from the parent's (LightGBM's trick, see DESIGN.md "Speed notes").
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

__all__ = ["row_stats", "hist_serial", "hist_parallel", "gather_rows", "PARALLEL_MIN_WORK"]

# a node histogram is built with the feature-parallel kernel when rows * features reach this
PARALLEL_MIN_WORK = 1 << 17


@njit(cache=True)
def row_stats(Y, w):
    """G (n, K+2) = [w, 1{w>0}, w*Y] for targets Y (n, K) and weights w (n,)."""
    n, K = Y.shape
    G = np.empty((n, K + 2))
    for i in range(n):
        wi = w[i]
        G[i, 0] = wi
        G[i, 1] = 1.0 if wi > 0 else 0.0
        for k in range(K):
            G[i, 2 + k] = wi * Y[i, k]
    return G


@njit(cache=True)
def gather_rows(G, rows, start, stop, col_off, K, out):
    """Copy the statistics of rows[start:stop] contiguously into out[:stop-start] (standard column layout)."""
    for j in range(stop - start):
        i = rows[start + j]
        out[j, 0] = G[i, 0]
        out[j, 1] = G[i, 1]
        for k in range(K):
            out[j, 2 + k] = G[i, col_off + k]


@njit(cache=True)
def _accumulate(code_row, rows, start, stop, G, gathered, col_off, K, h):
    """Add the statistics of rows[start:stop] into one feature's histogram h (nb, K+2)."""
    h[:, :] = 0.0
    if gathered:
        for j in range(start, stop):
            b = code_row[rows[j]]
            g = j - start
            h[b, 0] += G[g, 0]
            h[b, 1] += G[g, 1]
            for k in range(K):
                h[b, 2 + k] += G[g, 2 + k]
    else:
        for j in range(start, stop):
            i = rows[j]
            b = code_row[i]
            h[b, 0] += G[i, 0]
            h[b, 1] += G[i, 1]
            for k in range(K):
                h[b, 2 + k] += G[i, col_off + k]


@njit(cache=True)
def hist_serial(codes_T, rows, start, stop, G, gathered, col_off, K, out):
    """Histogram (p, nb, K+2) of rows[start:stop]; G is gathered (row j-start) or global (row rows[j], columns col_off..)."""
    for f in range(codes_T.shape[0]):
        _accumulate(codes_T[f], rows, start, stop, G, gathered, col_off, K, out[f])


@njit(cache=True, parallel=True)
def hist_parallel(codes_T, rows, start, stop, G, gathered, col_off, K, out):
    """Same as hist_serial with features processed in parallel threads."""
    for f in prange(codes_T.shape[0]):
        _accumulate(codes_T[f], rows, start, stop, G, gathered, col_off, K, out[f])
