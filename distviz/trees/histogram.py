"""Histogram kernels: per (feature, bin) sums of the row statistics of a node.

Row statistics are precomputed once per fit, so that a histogram pass is pure additions:
``G[i] = [w_i, 1{w_i>0}, w_i Y_i1, ..., w_i Y_iK]`` (``o = 2`` leading columns), or, when every
weight is 1, ``G[i] = [1, Y_i1, ..., Y_iK]`` (``o = 1``: the weight sum is also the row count, one
column fewer to add).  A node histogram is ``h[f, b, c]`` with the same ``C = o + K`` columns,
accumulated in float64.  Children get their histogram from the smaller child's pass and a
subtraction from the parent's (LightGBM's trick, see DESIGN.md "Speed notes").
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

__all__ = ["row_stats", "hist_serial", "hist_parallel", "gather_rows", "PARALLEL_MIN_WORK"]

# a node histogram is built with the feature-parallel kernel when rows * features reach this
PARALLEL_MIN_WORK = 1 << 17


@njit(cache=True)
def row_stats(Y, w, o):
    """G (n, o+K): [w, 1{w>0}, w*Y] for o = 2, [w, w*Y] for o = 1 (unit weights)."""
    n, K = Y.shape
    G = np.empty((n, K + o))
    for i in range(n):
        wi = w[i]
        G[i, 0] = wi
        if o == 2:
            G[i, 1] = 1.0 if wi > 0 else 0.0
        for k in range(K):
            G[i, o + k] = wi * Y[i, k]
    return G


@njit(cache=True)
def gather_rows(G, rows, start, stop, col_off, o, K, out):
    """Copy the leading o columns and columns col_off..col_off+K of rows[start:stop] into out (m, o+K)."""
    for j in range(stop - start):
        gi = G[rows[start + j]]
        oj = out[j]
        for c in range(o):
            oj[c] = gi[c]
        for k in range(K):
            oj[o + k] = gi[col_off + k]


@njit(cache=True)
def _accumulate(code_row, rows, start, stop, G, gathered, h):
    """Add the statistics of rows[start:stop] into one feature's histogram h (nb, C).

    G has C columns and is indexed by j - start when gathered, else by rows[j].
    """
    h[:, :] = 0.0
    C = h.shape[1]
    hf = h.reshape(-1)
    Gf = G.reshape(-1)
    if C == 2:
        for j in range(start, stop):
            b = np.intp(code_row[rows[j]]) * 2
            g = np.intp(j - start if gathered else rows[j]) * 2
            hf[b] += Gf[g]
            hf[b + 1] += Gf[g + 1]
    elif C == 3:
        for j in range(start, stop):
            b = np.intp(code_row[rows[j]]) * 3
            g = np.intp(j - start if gathered else rows[j]) * 3
            hf[b] += Gf[g]
            hf[b + 1] += Gf[g + 1]
            hf[b + 2] += Gf[g + 2]
    elif C == 4:
        for j in range(start, stop):
            b = np.intp(code_row[rows[j]]) * 4
            g = np.intp(j - start if gathered else rows[j]) * 4
            hf[b] += Gf[g]
            hf[b + 1] += Gf[g + 1]
            hf[b + 2] += Gf[g + 2]
            hf[b + 3] += Gf[g + 3]
    else:
        for j in range(start, stop):
            hb = h[code_row[rows[j]]]
            gi = G[j - start if gathered else rows[j]]
            for c in range(C):
                hb[c] += gi[c]


@njit(cache=True)
def hist_serial(codes_T, rows, start, stop, G, gathered, out):
    """Histogram out (p, nb, C) of rows[start:stop] with row statistics G (see _accumulate)."""
    for f in range(codes_T.shape[0]):
        _accumulate(codes_T[f], rows, start, stop, G, gathered, out[f])


@njit(cache=True, parallel=True)
def hist_parallel(codes_T, rows, start, stop, G, gathered, out):
    """Same as hist_serial with features processed in parallel threads."""
    for f in prange(codes_T.shape[0]):
        _accumulate(codes_T[f], rows, start, stop, G, gathered, out[f])
