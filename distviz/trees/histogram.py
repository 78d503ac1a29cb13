"""Histogram kernels: per (feature, bin) sums of the row statistics of a node.

A node histogram is ``h[f, b, c]`` with ``C = o + K`` float64 columns: column 0 the weight sum,
column ``o - 1`` the number of rows with positive weight, columns ``o..`` the weighted target sums.

* weighted rows (``o = 2``): the row statistics are precomputed once per fit as
  ``G[i] = [w_i, 1{w_i>0}, w_i Y_i1, ..., w_i Y_iK]`` so that a histogram pass is pure additions;
* unit weights (``o = 1``): ``G`` is the target matrix itself and the weight column gets ``+1`` per
  row: the weight sum is the row count, and one column fewer is read and added.

Row statistics are indexed by ``rows[j]`` (the whole sample at the root, read in order) or, for a
child node, gathered first into a contiguous buffer (``gathered``: indexed by ``j - start``).
Children get their histogram from the smaller child's pass and a subtraction from the parent's
(LightGBM's trick, see DESIGN.md "Speed notes").

``hist_indexed`` builds a node histogram with one output from the column-major codes, the features
in pairs, reading each row's code and statistics by its index (no gathered copy); ``hist_rows`` (more
outputs) goes row by row through row-major codes ``codes_R`` (n, p), a row's p codes in one cache
line.  Every feature's histogram still adds the rows in the node's order, so the sums are
bit-identical to ``hist_serial``'s; in parallel the features are split among the threads (never the
rows), which keeps that order.

The root's weight columns (the count for unit weights; w and 1{w>0} otherwise) do not change
between the trees of a boosting fit: ``lead_hist`` builds them once, and ``hist_root_targets``
adds only the K target columns of each round's root.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

__all__ = ["row_stats", "hist_serial", "hist_parallel", "hist_rows", "hist_indexed", "hist_root_targets", "lead_hist",
           "gather_rows", "PARALLEL_MIN_WORK"]

# a node histogram is built with the feature-parallel kernel when rows * features reach this
PARALLEL_MIN_WORK = 1 << 17

# unsigned constants for index arithmetic.  numba wraps a negative index around, so every access with
# a signed index it cannot prove >= 0 (a row id read from an int32 array, a loop from `start`) costs a
# compare and a select; an unsigned index skips that.  The constants must be unsigned too: numba types
# uint64 * 2 as int64.
_U1 = np.uintp(1)
_U2 = np.uintp(2)
_U3 = np.uintp(3)


@njit(cache=True)
def row_stats(Y, w, o):
    """Row statistics (n, 2+K) = [w, 1{w>0}, w*Y] (o = 2), or a C-contiguous copy of Y for unit weights (o = 1)."""
    n, K = Y.shape
    if o == 1:
        return np.ascontiguousarray(Y)
    G = np.empty((n, K + 2))
    for i in range(n):
        wi = w[i]
        G[i, 0] = wi
        G[i, 1] = 1.0 if wi > 0 else 0.0
        for k in range(K):
            G[i, 2 + k] = wi * Y[i, k]
    return G


@njit(cache=True)
def gather_rows(G, rows, start, stop, col_off, lead, K, out):
    """Copy the first `lead` columns and columns col_off..col_off+K of rows[start:stop] into out (m, lead+K)."""
    node = rows[start:stop]   # indexed from 0, row ids unsigned (see _U1)
    for j in range(node.shape[0]):
        gi = G[np.uintp(node[j])]
        oj = out[j]
        for c in range(lead):
            oj[c] = gi[c]
        for k in range(K):
            oj[lead + k] = gi[col_off + k]


@njit(cache=True)
def _accumulate(code_row, rows, start, stop, G, mode, unit, h):
    """Add the statistics of rows[start:stop] into one feature's histogram h (nb, C).

    mode 0: the whole sample in order (row j is row j); 1: G indexed by rows[j]; 2: gathered
    (G row j - start).  unit: G holds the K targets and column 0 of h counts rows.  Loops run over
    views from 0 with unsigned row ids (see _U1).
    """
    h[:, :] = 0.0
    C = np.uintp(h.shape[1])
    hf = h.reshape(-1)
    Gf = G.reshape(-1)
    GC = np.uintp(G.shape[1])
    m = stop - start
    node = rows[start:stop]
    if unit and C == 2:  # unit weights, one output: [count, sum y]; G is the (., 1) target column
        if mode == 0:
            cr = code_row[start:stop]
            g = Gf[start:stop]
            for i in range(m):
                b = np.uintp(cr[i]) * _U2
                hf[b] += 1.0
                hf[b + _U1] += g[i]
        else:
            for j in range(m):
                r = np.uintp(node[j])
                b = np.uintp(code_row[r]) * _U2
                gj = np.uintp(j) if mode == 2 else r
                hf[b] += 1.0
                hf[b + _U1] += Gf[gj]
    else:
        # the row's statistics start at G row gj; h row at bin * C; unit: +1 in column 0, then the GC targets
        for j in range(m):
            i = np.uintp(start + j) if mode == 0 else np.uintp(node[j])
            base = (np.uintp(j) if mode == 2 else i) * GC
            hb = np.uintp(code_row[i]) * C
            if unit:
                hf[hb] += 1.0
                for k in range(GC):
                    hf[hb + _U1 + np.uintp(k)] += Gf[base + np.uintp(k)]
            else:
                for c in range(C):
                    hf[hb + np.uintp(c)] += Gf[base + np.uintp(c)]


@njit(cache=True)
def _accumulate_two(code0, code1, start, stop, G, unit, h0, h1):
    """_accumulate of the whole sample in order (mode 0) for two features in one pass, one output (C = 2 unit,
    C = 3 weighted): each row's statistics are read once for both; each histogram adds the rows in row order."""
    h0[:, :] = 0.0
    h1[:, :] = 0.0
    f0 = h0.reshape(-1)
    f1 = h1.reshape(-1)
    Gf = G.reshape(-1)
    if unit:   # [count, sum y]; G is the (n, 1) target column
        for i in range(start, stop):
            g = Gf[i]
            b0 = np.intp(code0[i]) * 2
            b1 = np.intp(code1[i]) * 2
            f0[b0] += 1.0
            f0[b0 + 1] += g
            f1[b1] += 1.0
            f1[b1 + 1] += g
    else:      # [w, count, w y]
        for i in range(start, stop):
            gb = np.intp(i) * 3
            g0 = Gf[gb]
            g1 = Gf[gb + 1]
            g2 = Gf[gb + 2]
            b0 = np.intp(code0[i]) * 3
            b1 = np.intp(code1[i]) * 3
            f0[b0] += g0
            f0[b0 + 1] += g1
            f0[b0 + 2] += g2
            f1[b1] += g0
            f1[b1 + 1] += g1
            f1[b1 + 2] += g2


@njit(cache=True)
def _pairs(G, mode, unit, C) -> bool:
    """Whether a pass takes the features in pairs: the whole sample in order with one output (see _accumulate_two)."""
    return mode == 0 and G.shape[1] == (1 if unit else 3) and C == (2 if unit else 3)


@njit(cache=True)
def _hist_unit(codes_T, rows, start, stop, G, mode, unit, out, f, paired):
    """Features f and f+1 in one pass when paired, else feature f."""
    if paired and f + 1 < codes_T.shape[0]:
        _accumulate_two(codes_T[f], codes_T[f + 1], start, stop, G, unit, out[f], out[f + 1])
    else:
        _accumulate(codes_T[f], rows, start, stop, G, mode, unit, out[f])


@njit(cache=True)
def hist_serial(codes_T, rows, start, stop, G, mode, unit, out):
    """Histogram out (p, nb, C) of rows[start:stop] with row statistics G (see _accumulate).

    A pass over the whole sample with one output takes the features in pairs (_accumulate_two): the
    row statistics are read half as often, and every histogram still adds the rows in row order.
    """
    paired = _pairs(G, mode, unit, out.shape[2])
    for f in range(0, codes_T.shape[0], 2 if paired else 1):
        _hist_unit(codes_T, rows, start, stop, G, mode, unit, out, f, paired)


@njit(cache=True, parallel=True)
def hist_parallel(codes_T, rows, start, stop, G, mode, unit, out):
    """Same as hist_serial with features (or pairs of features) processed in parallel threads."""
    paired = _pairs(G, mode, unit, out.shape[2])
    step = 2 if paired else 1
    for q in prange((codes_T.shape[0] + step - 1) // step):
        _hist_unit(codes_T, rows, start, stop, G, mode, unit, out, q * step, paired)


@njit(cache=True)
def _indexed_one(code0, rows, start, stop, G, col_off, unit, h0):
    """One feature's histogram (one output) of rows[start:stop], the statistics read by row index (see hist_indexed)."""
    h0[:, :] = 0.0
    f0 = h0.reshape(-1)
    Gf = G.reshape(-1)
    GC = np.uintp(G.shape[1])
    off = np.uintp(col_off)
    node = rows[start:stop]   # indexed from 0, and every index unsigned (see _U1)
    if unit:   # [count, sum y]
        for j in range(node.shape[0]):
            i = np.uintp(node[j])
            b0 = np.uintp(code0[i]) * _U2
            f0[b0] += 1.0
            f0[b0 + _U1] += Gf[i * GC + off]
    else:      # [w, count, w y]
        for j in range(node.shape[0]):
            i = np.uintp(node[j])
            base = i * GC
            b0 = np.uintp(code0[i]) * _U3
            f0[b0] += Gf[base]
            f0[b0 + _U1] += Gf[base + _U1]
            f0[b0 + _U2] += Gf[base + off]


@njit(cache=True)
def _indexed_two(code0, code1, rows, start, stop, G, col_off, unit, h0, h1):
    """_indexed_one for two features in one pass: each row's index and statistics are read once for both."""
    h0[:, :] = 0.0
    h1[:, :] = 0.0
    f0 = h0.reshape(-1)
    f1 = h1.reshape(-1)
    Gf = G.reshape(-1)
    GC = np.uintp(G.shape[1])
    off = np.uintp(col_off)
    node = rows[start:stop]
    if unit:
        for j in range(node.shape[0]):
            i = np.uintp(node[j])
            g = Gf[i * GC + off]
            b0 = np.uintp(code0[i]) * _U2
            b1 = np.uintp(code1[i]) * _U2
            f0[b0] += 1.0
            f0[b0 + _U1] += g
            f1[b1] += 1.0
            f1[b1 + _U1] += g
    else:
        for j in range(node.shape[0]):
            i = np.uintp(node[j])
            base = i * GC
            g0 = Gf[base]
            g1 = Gf[base + _U1]
            g2 = Gf[base + off]
            b0 = np.uintp(code0[i]) * _U3
            b1 = np.uintp(code1[i]) * _U3
            f0[b0] += g0
            f0[b0 + _U1] += g1
            f0[b0 + _U2] += g2
            f1[b1] += g0
            f1[b1 + _U1] += g1
            f1[b1 + _U2] += g2


@njit(cache=True)
def _indexed_share(codes_T, rows, start, stop, G, col_off, unit, out, f0, f1):
    """Histograms of features f0..f1 (in pairs, the odd one alone) into out[f0:f1]."""
    f = f0
    while f < f1:
        if f + 1 < f1:
            _indexed_two(codes_T[f], codes_T[f + 1], rows, start, stop, G, col_off, unit, out[f], out[f + 1])
            f += 2
        else:
            _indexed_one(codes_T[f], rows, start, stop, G, col_off, unit, out[f])
            f += 1


@njit(cache=True, parallel=True)
def _indexed_parallel(codes_T, rows, start, stop, G, col_off, unit, out, n_groups):
    p = codes_T.shape[0]
    for t in prange(n_groups):
        _indexed_share(codes_T, rows, start, stop, G, col_off, unit, out, (t * p) // n_groups, ((t + 1) * p) // n_groups)


@njit(cache=True)
def hist_indexed(codes_T, rows, start, stop, G, col_off, unit, out, n_groups):
    """Histogram out (p, nb, o+1) of rows[start:stop] for one output: column-major codes and G read by row index.

    G (n, .) holds [w, 1{w>0}] in its first two columns unless unit, and the target column at col_off.
    The features go in pairs, each pair in one pass over the node's rows (the row index and the
    statistics are read once for both); n_groups > 1 splits the features among that many threads,
    each taking a contiguous share.  Every histogram adds the rows in the node's order, so the sums are
    those of hist_rows and of the gathered hist_serial bit for bit.
    """
    if n_groups > 1:
        _indexed_parallel(codes_T, rows, start, stop, G, col_off, unit, out, min(n_groups, codes_T.shape[0]))
    else:
        _indexed_share(codes_T, rows, start, stop, G, col_off, unit, out, 0, codes_T.shape[0])


@njit(cache=True)
def _accumulate_rows(codes_R, rows, start, stop, G, col_off, lead, K, unit, f0, f1, out, out_f0):
    """Histograms of features f0..f1 of rows[start:stop] (G columns 0..lead, col_off..col_off+K) into out[f0-out_f0:f1-out_f0]."""
    nb = np.uintp(out.shape[1])
    out[f0 - out_f0:f1 - out_f0] = 0.0
    hf = out.reshape(-1)
    Gf = G.reshape(-1)
    GC = np.uintp(G.shape[1])
    off = np.uintp(col_off)
    node = rows[start:stop]   # indexed from 0, row ids, features and bins unsigned (see _U1)
    fa = np.uintp(f0 - out_f0)
    nf = np.uintp(f1 - f0)
    if unit and K == 1:  # unit weights, one output: [count, sum y]
        for j in range(node.shape[0]):
            i = np.uintp(node[j])
            g = Gf[i * GC + off]
            ci = codes_R[i, f0:f1]
            for q in range(nf):
                b = ((fa + np.uintp(q)) * nb + np.uintp(ci[q])) * _U2
                hf[b] += 1.0
                hf[b + _U1] += g
    elif (not unit) and K == 1:  # weighted rows, one output: [w, count, w y]
        for j in range(node.shape[0]):
            i = np.uintp(node[j])
            base = i * GC
            g0 = Gf[base]
            g1 = Gf[base + _U1]
            g2 = Gf[base + off]
            ci = codes_R[i, f0:f1]
            for q in range(nf):
                b = ((fa + np.uintp(q)) * nb + np.uintp(ci[q])) * _U3
                hf[b] += g0
                hf[b + _U1] += g1
                hf[b + _U2] += g2
    else:
        C = np.uintp(out.shape[2])
        o = _U1 if unit else _U2
        for j in range(node.shape[0]):
            i = np.uintp(node[j])
            base = i * GC
            ci = codes_R[i, f0:f1]
            for q in range(nf):
                hb = ((fa + np.uintp(q)) * nb + np.uintp(ci[q])) * C
                if unit:
                    hf[hb] += 1.0
                else:
                    hf[hb] += Gf[base]
                    hf[hb + _U1] += Gf[base + _U1]
                for k in range(K):
                    uk = np.uintp(k)
                    hf[hb + o + uk] += Gf[base + off + uk]


@njit(cache=True)
def copy_features(dst, src, d0, s0, n, n_cols):
    """dst[d0:d0+n, :, :n_cols] = src[s0:s0+n, :, :n_cols] for (features, bins, columns) histograms, element by element:
    an array-to-array assignment compiles numba's shape-mismatch message (its string formatting) into the caller, a
    large share of the grower's compile time."""
    for a in range(n):
        for b in range(src.shape[1]):
            for c in range(n_cols):
                dst[d0 + a, b, c] = src[s0 + a, b, c]


@njit(cache=True, parallel=True)
def _hist_rows_parallel(codes_R, rows, start, stop, G, col_off, lead, K, unit, out, n_groups):
    p = codes_R.shape[1]
    for t in prange(n_groups):
        # each thread sums its features into its own buffer (no cache line written by two threads), then copies
        f0 = (t * p) // n_groups
        f1 = ((t + 1) * p) // n_groups
        own = np.empty((f1 - f0, out.shape[1], out.shape[2]))
        _accumulate_rows(codes_R, rows, start, stop, G, col_off, lead, K, unit, f0, f1, own, f0)
        copy_features(out, own, f0, 0, f1 - f0, out.shape[2])


@njit(cache=True)
def hist_rows(codes_R, rows, start, stop, G, col_off, lead, K, unit, out, n_groups):
    """Histogram out (p, nb, o+K) of rows[start:stop] from row-major codes (n, p) and G's columns (see module doc).

    G (n, .) holds `lead` leading columns ([w, 1{w>0}] when weighted, none for unit weights) and the
    K target columns at col_off.  n_groups > 1 splits the features among that many threads.
    """
    if n_groups > 1:
        _hist_rows_parallel(codes_R, rows, start, stop, G, col_off, lead, K, unit, out, n_groups)
    else:
        _accumulate_rows(codes_R, rows, start, stop, G, col_off, lead, K, unit, 0, codes_R.shape[1], out, 0)


@njit(cache=True)
def _lead_feature(code_row, w, o, h):
    h[:, :] = 0.0
    for i in range(code_row.shape[0]):
        b = code_row[i]
        if o == 1:
            h[b, 0] += 1.0
        else:
            h[b, 0] += w[i]
            h[b, 1] += 1.0 if w[i] > 0 else 0.0


@njit(cache=True, parallel=True)
def lead_hist(codes_T, w, o, nb_max):
    """The root's leading columns: histogram (p, nb_max, o) and totals (o,) of the row counts (o = 1) or [w, 1{w>0}] (o = 2).

    Every sum adds the rows in row order, as the full root pass and the grower's root totals do.
    """
    p = codes_T.shape[0]
    out = np.empty((p, nb_max, o))
    for f in prange(p):
        _lead_feature(codes_T[f], w, o, out[f])
    tot = np.zeros(o)
    if o == 1:
        tot[0] = codes_T.shape[1]
    else:
        for i in range(codes_T.shape[1]):
            tot[0] += w[i]
            tot[1] += 1.0 if w[i] > 0 else 0.0
    return out, tot


@njit(cache=True)
def _root_targets_feature(code_row, G, col_off, o, K, h, tot, with_tot):
    """h[:, o:] = per-bin sums of G[:, col_off:col_off+K] over all rows in row order (h[:, :o] untouched).

    with_tot: also tot[k] = the column totals, in row order (a second dependency chain in the same pass).
    """
    h[:, o:] = 0.0
    hf = h.reshape(-1)
    if K == 1 and (o == 1 or o == 2):  # constant strides, not strides read from the shapes
        g = G[:, col_off]
        s = 0.0
        if o == 1 and with_tot:
            for i in range(code_row.shape[0]):
                gi = g[i]
                hf[np.intp(code_row[i]) * 2 + 1] += gi
                s += gi
        elif o == 1:
            for i in range(code_row.shape[0]):
                hf[np.intp(code_row[i]) * 2 + 1] += g[i]
        elif with_tot:
            for i in range(code_row.shape[0]):
                gi = g[i]
                hf[np.intp(code_row[i]) * 3 + 2] += gi
                s += gi
        else:
            for i in range(code_row.shape[0]):
                hf[np.intp(code_row[i]) * 3 + 2] += g[i]
        if with_tot:
            tot[0] = s
    else:
        if with_tot:
            tot[:] = 0.0
        for i in range(code_row.shape[0]):
            hb = h[code_row[i]]
            gi = G[i]
            for k in range(K):
                hb[o + k] += gi[col_off + k]
                if with_tot:
                    tot[k] += gi[col_off + k]


@njit(cache=True)
def _root_targets_two(code0, code1, G, col_off, o, h0, h1, tot, with_tot):
    """_root_targets_feature for two features in one pass (K = 1, o = 1 or 2): the target column is read once for
    both, each histogram still adds the rows in row order (the same bits); with_tot: tot[0] = the column's total."""
    h0[:, o:] = 0.0
    h1[:, o:] = 0.0
    f0 = h0.reshape(-1)
    f1 = h1.reshape(-1)
    g = G[:, col_off]
    s = 0.0
    n = code0.shape[0]
    if o == 1 and with_tot:   # constant strides, as in _root_targets_feature
        for i in range(n):
            gi = g[i]
            f0[np.intp(code0[i]) * 2 + 1] += gi
            f1[np.intp(code1[i]) * 2 + 1] += gi
            s += gi
    elif o == 1:
        for i in range(n):
            gi = g[i]
            f0[np.intp(code0[i]) * 2 + 1] += gi
            f1[np.intp(code1[i]) * 2 + 1] += gi
    elif with_tot:
        for i in range(n):
            gi = g[i]
            f0[np.intp(code0[i]) * 3 + 2] += gi
            f1[np.intp(code1[i]) * 3 + 2] += gi
            s += gi
    else:
        for i in range(n):
            gi = g[i]
            f0[np.intp(code0[i]) * 3 + 2] += gi
            f1[np.intp(code1[i]) * 3 + 2] += gi
    if with_tot:
        tot[0] = s


@njit(cache=True)
def _root_targets_unit(codes_T, G, col_off, o, K, lead, out, tot, f, paired):
    """One work unit of the root pass: features f and f+1 together when paired (K = 1), else feature f alone."""
    p = codes_T.shape[0]
    copy_features(out, lead, f, f, 1, o)
    if paired and f + 1 < p:
        copy_features(out, lead, f + 1, f + 1, 1, o)
        _root_targets_two(codes_T[f], codes_T[f + 1], G, col_off, o, out[f], out[f + 1], tot, f == 0)
    else:
        _root_targets_feature(codes_T[f], G, col_off, o, K, out[f], tot, f == 0)


@njit(cache=True, parallel=True)
def _root_targets_parallel(codes_T, G, col_off, o, K, lead, out, tot, paired, n_groups):
    p = codes_T.shape[0]
    for t in prange(n_groups):
        # each thread takes a contiguous share of the features, in pairs within its share (10 features on 2
        # threads: 2 pairs and a single each, where 5 pairs over 2 threads left one thread 3 pairs)
        f0 = (t * p) // n_groups
        f1 = ((t + 1) * p) // n_groups
        f = f0
        while f < f1:
            two = paired and f + 1 < f1
            _root_targets_unit(codes_T, G, col_off, o, K, lead, out, tot, f, two)
            f += 2 if two else 1


@njit(cache=True)
def hist_root_targets(codes_T, G, col_off, o, K, lead, out, tot, n_threads):
    """Root histogram out (p, nb, o+K): the leading columns copied from lead (see lead_hist), the K targets summed.

    Also tot (K,) = the target columns' totals (in feature 0's pass).  Bit-identical to the full
    pass and to a sequential total (every sum adds the rows in row order); n_threads > 1: the
    features are split among that many threads (0 or 1: serial).
    With one target column the features go in pairs, each pair in one pass over the rows: the column
    is read half as often.
    """
    paired = K == 1 and (o == 1 or o == 2)
    if n_threads > 1:
        _root_targets_parallel(codes_T, G, col_off, o, K, lead, out, tot, paired, min(n_threads, codes_T.shape[0]))
    else:
        for f in range(0, codes_T.shape[0], 2 if paired else 1):
            _root_targets_unit(codes_T, G, col_off, o, K, lead, out, tot, f, paired)
