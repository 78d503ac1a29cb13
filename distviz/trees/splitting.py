"""Split search on node histograms and the row partition of a chosen split.

Regression gain (mirror_vs_natural_boosting.tex, Sec. "Split criterion from leaf predictions"):
``Gain^reg = W_L |Rbar_L|^2 + W_R |Rbar_R|^2 - W_J |Rbar_J|^2`` with ``Rbar_C = S_C / W_C`` the weighted
mean and the norm summed over outputs.  With an L2 penalty ``l2`` on the leaf values the leaf value
is ``S_C / (W_C + l2)`` and the gain is the reduction of the penalised weighted SSE,
``|S_L|^2/(W_L+l2) + |S_R|^2/(W_R+l2) - |S_J|^2/(W_J+l2)`` (equal to Gain^reg when ``l2 = 0``).

Entropy gain (same paper, paragraph "Entropy and the exact leafwise NLL criterion"):
``Gain^ent = (W_L A*(eta*_L) + W_R A*(eta*_R) - W_J A*(eta*_J)) / W`` with ``eta*_C`` the weighted mean
of T(y) over C and W the root weight.

Candidate splits put bins ``0..b`` of a feature left.  Only bins holding a positive-weight row are
candidates (an empty bin gives the same partition as the last non-empty bin before it), so the
threshold is the upper edge of the largest bin actually present on the left.  Ties go to the lowest
feature, then the lowest bin.

Missing values (see binning.py): when the histogram has a missing-value column ``miss`` (the last
one; ``miss = -1``: none) and a node holds positive-weight rows with a missing value of feature f,
every threshold of f is tried with the missing rows on the right and on the left (as LightGBM and
scikit-learn's HistGradientBoosting do), and "all present values left, missing right" is a
candidate too.  Within a feature the missing-right candidates are scanned first, so ties go to
missing-right, then to the lowest bin.  When the node has no missing value of the chosen feature,
the split sends a missing value (seen only at predict time) to the child with more training weight
(left only if strictly heavier).  Nodes and features without missing values are scanned exactly as
without missing-value support, so the trees are bit-identical.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

__all__ = ["best_split_variance_missing", "best_split_entropy", "may_split", "partition",
           "partition_parallel", "assign_children", "assign_children_parallel", "REL_TOL"]

# a split must beat zero by this fraction of the magnitude of its terms (rounding noise is no gain)
REL_TOL = 1e-12
# unsigned 1 for the row cursors (numba types uint64 - 1 as int64; see histogram._U1 for why unsigned)
_U1 = np.uintp(1)


@njit(cache=True)
def may_split(depth, n_leaves, count, weight, max_depth, max_leaves, min_cnt, min_w):
    """The growth rule of every grower (numba best-first, entropy, Dask level-wise): a leaf at this depth may be
    split when it lies above max_depth, the tree (of n_leaves leaves) has room for one more, and it holds at
    least twice min_samples_leaf rows (``count``: rows, or rows of positive weight) and twice min_weight_leaf."""
    return depth < max_depth and n_leaves < max_leaves and count >= 2 * min_cnt and weight >= 2 * min_w


@njit(cache=True)
def _heavier_left(hf, b):
    """1 when bins 0..b of one feature's histogram hf (nb, C) weigh strictly more than the rest (missing bin included)."""
    wl = 0.0
    for bb in range(b + 1):
        wl += hf[bb, 0]
    wt = 0.0
    for bb in range(hf.shape[0]):
        wt += hf[bb, 0]
    return 1 if wl > wt - wl else 0


@njit(cache=True)
def best_split_variance_missing(h, n_bins, tot, o, l2, min_w, min_cnt, feat_gain, miss=-1):
    """Best (gain, feature, bin, missing_left) of one node histogram h (p, nb, o+K) with totals tot (o+K,); fills feat_gain (p,).

    Column 0 is the weight, column o-1 the row count (the weight itself when o = 1), o.. the sums.
    miss: the histogram column of missing values (-1: none; see the module doc); missing_left (0/1)
    tells where the split sends missing values.
    Per feature: the bins holding a positive-weight row are listed (the only candidates; in a small
    node most bins are empty), their prefix sums formed, |S_L|^2 and |S_R|^2 computed for all of them
    at once (a loop over bins inside a loop over outputs, which vectorises), then one pass picks
    the best admissible bin.
    """
    p, nb_max, C = h.shape
    K = C - o
    ci = o - 1
    WJ = tot[0]
    cJ = tot[ci]
    sJ = 0.0
    for k in range(K):
        sJ += tot[o + k] * tot[o + k]
    parent = sJ / (WJ + l2)
    best = -np.inf
    bf = -1
    bb = -1
    bml = -1
    cum = np.empty((C, nb_max))
    sL = np.empty(nb_max)
    sR = np.empty(nb_max)
    idx = np.empty(nb_max, dtype=np.int64)
    for f in range(p):
        fbest = -np.inf
        hf = h[f]
        m = 0
        has_m = miss >= 0 and hf[miss, ci] != 0.0
        for b in range(n_bins[f] - 1 + has_m):  # candidate splits: bins 0..b go left, b < n_bins - 1 (+1 with NaN right)
            if hf[b, ci] != 0.0:
                idx[m] = b
                m += 1
        if m == 0:
            feat_gain[f] = fbest
            continue
        for c in range(C):
            run = 0.0
            cc = cum[c]
            for q in range(m):
                run += hf[idx[q], c]
                cc[q] = run
        sL[:m] = 0.0
        sR[:m] = 0.0
        for k in range(K):
            ck = cum[o + k]
            tk = tot[o + k]
            for q in range(m):
                a = ck[q]
                d = tk - a
                sL[q] += a * a
                sR[q] += d * d
        cw = cum[0]
        cc = cum[ci]
        for q in range(m):
            cL = cc[q]
            cR = cJ - cL
            if cR < min_cnt:
                break
            WL = cw[q]
            WR = WJ - WL
            if WR < min_w:
                break
            if cL < min_cnt or WL < min_w:
                continue
            tL = sL[q] / (WL + l2)
            tR = sR[q] / (WR + l2)
            g = tL + tR - parent
            if g > REL_TOL * (tL + tR) and g > fbest:
                fbest = g
                if g > best:
                    best = g
                    bf = f
                    bb = idx[q]
                    bml = 0 if has_m else -1
        if has_m:  # the same thresholds with the missing rows on the left
            hm = hf[miss]
            for q in range(m):
                if idx[q] >= n_bins[f] - 1:
                    break
                WL = cw[q] + hm[0]
                cL = cc[q] + hm[ci]
                cR = cJ - cL
                WR = WJ - WL
                if cR < min_cnt or WR < min_w:
                    break
                if cL < min_cnt or WL < min_w:
                    continue
                a2 = 0.0
                d2 = 0.0
                for k in range(K):
                    a = cum[o + k, q] + hm[o + k]
                    d = tot[o + k] - a
                    a2 += a * a
                    d2 += d * d
                tL = a2 / (WL + l2)
                tR = d2 / (WR + l2)
                g = tL + tR - parent
                if g > REL_TOL * (tL + tR) and g > fbest:
                    fbest = g
                    if g > best:
                        best = g
                        bf = f
                        bb = idx[q]
                        bml = 1
        feat_gain[f] = fbest
    if bf >= 0 and bml < 0:  # no missing value of bf in this node: missing values go to the heavier child
        bml = _heavier_left(h[bf], bb)
    return best, bf, bb, bml


@njit(cache=True)
def partition(code_row, rows, start, stop, b, tmp, miss=-1):
    """Stable in-place partition of rows[start:stop] into code <= b or code == miss (left), then the rest; returns the boundary.

    miss: the missing-value code when missing values go left (-1, the default: they go right,
    being larger than every real bin).  Branch-free: every row is written to both candidate places
    and only one cursor advances.
    """
    nl = start + _split_run(code_row, rows, start, stop, b, miss, tmp, 0)
    dst = rows[nl:stop]   # a loop over views, not a slice assignment: it vectorises
    for q in range(dst.shape[0]):
        dst[q] = tmp[q]
    return nl


@njit(inline="always")
def _split_run(code_row, rows, b0, b1, b, miss, tmp, t0):
    """Compact the left rows of rows[b0:b1] (partition's rule) in place from b0 and write its right rows, in
    order, to tmp from t0; returns the number of left rows.  Branch-free: every row is written to both
    candidate places and only one cursor advances.  Row ids and cursors are unsigned: numba checks every
    signed index for wrap-around (see histogram._U1)."""
    block = rows[b0:b1]
    lo = np.uintp(b0)
    nr = np.uintp(t0)
    for j in range(block.shape[0]):
        i = block[j]
        c = code_row[np.uintp(i)]
        go = np.uintp(c <= b) | np.uintp(c == miss)
        rows[lo] = i
        tmp[nr] = i
        lo += go
        nr += _U1 - go
    return np.intp(lo) - b0


@njit(cache=True, parallel=True)
def partition_parallel(code_row, rows, start, stop, b, tmp, n_blocks, miss=-1):
    """partition() (miss as there) by n_blocks row blocks in parallel threads; the same stable result for any n_blocks.

    Each block partitions its rows as partition() does: left rows compacted in place from the block's
    start, right rows to tmp from the block's start.  Then the left runs move down to their places in
    block order (serially: a run's destination can overlap the run of the block before it until that
    one has moved; block 0's is already in place) and the right runs are copied from tmp in parallel.
    One pass over the rows plus the moves.
    """
    m = stop - start
    bs = (m + n_blocks - 1) // n_blocks
    nl = np.zeros(n_blocks, dtype=np.int64)
    for k in prange(n_blocks):
        b0 = start + k * bs
        nl[k] = _split_run(code_row, rows, b0, min(stop, b0 + bs), b, miss, tmp, b0)
    acc = start + nl[0]
    for k in range(1, n_blocks):  # a forward copy is safe: each run moves towards start
        b0 = start + k * bs
        dst = rows[acc:acc + nl[k]]   # views indexed from 0: the copy loops vectorise (see histogram._U1)
        src = rows[b0:b0 + nl[k]]
        for q in range(dst.shape[0]):
            dst[q] = src[q]
        acc += nl[k]
    mid = acc
    roff = np.empty(n_blocks, dtype=np.int64)
    for k in range(n_blocks):
        roff[k] = acc
        b0 = start + k * bs
        acc += max(min(stop, b0 + bs) - b0, 0) - nl[k]
    for k in prange(n_blocks):
        b0 = start + k * bs
        m_right = max(min(stop, b0 + bs) - b0, 0) - nl[k]
        dst = rows[roff[k]:roff[k] + m_right]
        src = tmp[b0:b0 + m_right]
        for q in range(m_right):
            dst[q] = src[q]
    return mid


@njit(cache=True)
def assign_children(code_row, rows, start, stop, b, L, R, leaf, miss=-1):
    """leaf[i] = L (code <= b or code == miss, see partition) or R for the rows of a node whose children are final leaves."""
    # a table lookup, not a select: LLVM turns `L if go else R` (and R + go * (L - R)) into a branch that
    # mispredicts on every other row when the split is balanced
    lut = np.empty(2, dtype=np.int64)
    lut[0] = R
    lut[1] = L
    node = rows[start:stop]
    for j in range(node.shape[0]):
        i = np.uintp(node[j])
        c = code_row[i]
        leaf[i] = lut[np.uintp(c <= b) | np.uintp(c == miss)]


@njit(cache=True, parallel=True)
def assign_children_parallel(code_row, rows, start, stop, b, L, R, leaf, miss=-1):
    """assign_children with the rows in parallel threads (every row is written once: the same result)."""
    for j in prange(start, stop):
        i = np.uintp(rows[j])
        c = code_row[i]
        leaf[i] = L if (c <= b or c == miss) else R


def best_split_entropy(h, n_bins, conjugate, W_root, min_w, min_cnt, miss=-1):
    """Best (Gain^ent, feature, bin, missing_left) of a node histogram h (p, nb, 2+d) of T(y), plus the best gain per feature.

    ``conjugate(mean (m, d)) -> (m,)`` is the family's A*; candidates where it is not finite are skipped.
    miss: the histogram column of missing values (-1: none), see the module doc.
    """
    p, nb, _ = h.shape
    c = np.cumsum(h, axis=1)
    tot = c[0, -1]
    WJ, cJ, SJ = tot[0], tot[1], tot[2:]
    nbf = np.asarray(n_bins)[:, None]
    has_m = (h[:, miss, 1] > 0) if miss >= 0 else np.zeros(p, dtype=bool)
    # missing right: left = bins 0..b (b < n_bins - 1, or the last real bin when the node has missing rows)
    cand = [((np.arange(nb)[None, :] < nbf - 1 + has_m[:, None]) & (h[:, :, 1] > 0), c, 0)]
    if has_m.any():  # missing left: left = bins 0..b plus the missing column
        cm = c + h[:, miss : miss + 1, :]
        cand.append(((np.arange(nb)[None, :] < nbf - 1) & (h[:, :, 1] > 0) & has_m[:, None], cm, 1))
    fi_l, bi_l, dir_l, wl_l, SL_l = [], [], [], [], []
    for base, cs, direction in cand:
        WL, cL = cs[:, :, 0], cs[:, :, 1]
        valid = base & (cL >= min_cnt) & (cJ - cL >= min_cnt) & (WL >= min_w) & (WJ - WL >= min_w)
        fi, bi = np.nonzero(valid)
        fi_l.append(fi)
        bi_l.append(bi)
        dir_l.append(np.full(fi.size, direction))
        wl_l.append(WL[fi, bi])
        SL_l.append(cs[fi, bi, 2:])
    feat_gain = np.full(p, -np.inf)
    fi, bi, dirs = np.concatenate(fi_l), np.concatenate(bi_l), np.concatenate(dir_l)
    if fi.size == 0:
        return -np.inf, -1, -1, 0, feat_gain
    order = np.lexsort((bi, dirs, fi))  # lowest feature, then missing right, then lowest bin
    fi, bi, dirs = fi[order], bi[order], dirs[order]
    wl = np.concatenate(wl_l)[order]
    wr = WJ - wl
    SL = np.concatenate(SL_l)[order]
    SR = SJ[None, :] - SL
    with np.errstate(all="ignore"):
        aJ = float(np.asarray(conjugate((SJ / WJ)[None, :]), dtype=np.float64).reshape(-1)[0])
        aL = np.asarray(conjugate(SL / wl[:, None]), dtype=np.float64).reshape(-1)
        aR = np.asarray(conjugate(SR / wr[:, None]), dtype=np.float64).reshape(-1)
        tL, tR = wl * aL, wr * aR
        g = (tL + tR - WJ * aJ) / W_root
        ok = np.isfinite(g) & (g > REL_TOL * (np.abs(tL) + np.abs(tR)) / W_root)
    if not ok.any():
        return -np.inf, -1, -1, 0, feat_gain
    g = np.where(ok, g, -np.inf)
    np.maximum.at(feat_gain, fi, g)
    j = int(np.argmax(g))  # first maximum in (feature, direction, bin) order
    f, b = int(fi[j]), int(bi[j])
    ml = int(dirs[j]) if has_m[f] else _heavier_left(h[f], b)
    return float(g[j]), f, b, ml, feat_gain
