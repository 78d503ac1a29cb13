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
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

__all__ = ["best_split_variance", "best_split_entropy", "partition", "partition_parallel", "assign_children",
           "assign_children_parallel", "REL_TOL"]

# a split must beat zero by this fraction of the magnitude of its terms (rounding noise is no gain)
REL_TOL = 1e-12


@njit(cache=True)
def best_split_variance(h, n_bins, tot, o, l2, min_w, min_cnt, feat_gain):
    """Best (gain, feature, bin) of one node histogram h (p, nb, o+K) with totals tot (o+K,); fills feat_gain (p,).

    Column 0 is the weight, column o-1 the row count (the weight itself when o = 1), o.. the sums.
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
    cum = np.empty((C, nb_max))
    sL = np.empty(nb_max)
    sR = np.empty(nb_max)
    idx = np.empty(nb_max, dtype=np.int64)
    for f in range(p):
        fbest = -np.inf
        hf = h[f]
        m = 0
        for b in range(n_bins[f] - 1):  # candidate splits: bins 0..b go left, b < n_bins - 1
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
        feat_gain[f] = fbest
    return best, bf, bb


@njit(cache=True)
def partition(code_row, rows, start, stop, b, tmp):
    """Stable in-place partition of rows[start:stop] into code <= b (left) then code > b; returns the boundary.

    Branch-free: every row is written to both candidate places and only one cursor advances.
    """
    nl = start
    nr = 0
    for j in range(start, stop):
        i = rows[j]
        go = np.intp(code_row[i] <= b)
        rows[nl] = i
        tmp[nr] = i
        nl += go
        nr += 1 - go
    rows[nl:stop] = tmp[:nr]
    return nl


@njit(cache=True, parallel=True)
def partition_parallel(code_row, rows, start, stop, b, tmp, n_blocks):
    """partition() by n_blocks row blocks in parallel threads; the same stable result for any n_blocks.

    Each block splits its rows into tmp (left rows forwards from the block's start, right rows
    backwards from its end), then every block copies its two runs to their final places, found from
    the per-block counts: left runs in block order from start, right runs in block order from the boundary.
    """
    m = stop - start
    bs = (m + n_blocks - 1) // n_blocks
    nl = np.zeros(n_blocks, dtype=np.int64)
    for k in prange(n_blocks):
        b0 = start + k * bs
        b1 = min(stop, b0 + bs)
        lo = b0
        hi = b1 - 1
        for j in range(b0, b1):
            i = rows[j]
            go = np.intp(code_row[i] <= b)
            tmp[lo] = i
            tmp[hi] = i
            lo += go
            hi -= 1 - go
        nl[k] = lo - b0
    loff = np.empty(n_blocks, dtype=np.int64)
    roff = np.empty(n_blocks, dtype=np.int64)
    acc = start
    for k in range(n_blocks):
        loff[k] = acc
        acc += nl[k]
    mid = acc
    for k in range(n_blocks):
        roff[k] = acc
        b0 = start + k * bs
        acc += max(min(stop, b0 + bs) - b0, 0) - nl[k]
    for k in prange(n_blocks):
        b0 = start + k * bs
        b1 = min(stop, b0 + bs)
        for q in range(nl[k]):
            rows[loff[k] + q] = tmp[b0 + q]
        for q in range(b1 - b0 - nl[k]):
            rows[roff[k] + q] = tmp[b1 - 1 - q]
    return mid


@njit(cache=True)
def assign_children(code_row, rows, start, stop, b, L, R, leaf):
    """leaf[i] = L or R for the rows of a node whose children are final leaves (no partition needed)."""
    for j in range(start, stop):
        i = rows[j]
        leaf[i] = L if code_row[i] <= b else R


@njit(cache=True, parallel=True)
def assign_children_parallel(code_row, rows, start, stop, b, L, R, leaf):
    """assign_children with the rows in parallel threads (every row is written once: the same result)."""
    for j in prange(start, stop):
        i = rows[j]
        leaf[i] = L if code_row[i] <= b else R


def best_split_entropy(h, n_bins, conjugate, W_root, min_w, min_cnt):
    """Best (Gain^ent, feature, bin) of a node histogram h (p, nb, 2+d) of T(y), plus the best gain per feature.

    ``conjugate(mean (m, d)) -> (m,)`` is the family's A*; candidates where it is not finite are skipped.
    """
    p, nb, _ = h.shape
    c = np.cumsum(h, axis=1)
    tot = c[0, -1]
    WJ, cJ, SJ = tot[0], tot[1], tot[2:]
    WL, cL = c[:, :, 0], c[:, :, 1]
    WR, cR = WJ - WL, cJ - cL
    valid = (
        (np.arange(nb)[None, :] < (np.asarray(n_bins)[:, None] - 1))
        & (h[:, :, 1] > 0)
        & (cL >= min_cnt)
        & (cR >= min_cnt)
        & (WL >= min_w)
        & (WR >= min_w)
    )
    feat_gain = np.full(p, -np.inf)
    if not valid.any():
        return -np.inf, -1, -1, feat_gain
    fi, bi = np.nonzero(valid)
    wl, wr = WL[fi, bi], WR[fi, bi]
    SL = c[fi, bi, 2:]
    SR = SJ[None, :] - SL
    with np.errstate(all="ignore"):
        aJ = float(np.asarray(conjugate((SJ / WJ)[None, :]), dtype=np.float64).reshape(-1)[0])
        aL = np.asarray(conjugate(SL / wl[:, None]), dtype=np.float64).reshape(-1)
        aR = np.asarray(conjugate(SR / wr[:, None]), dtype=np.float64).reshape(-1)
        tL, tR = wl * aL, wr * aR
        g = (tL + tR - WJ * aJ) / W_root
        ok = np.isfinite(g) & (g > REL_TOL * (np.abs(tL) + np.abs(tR)) / W_root)
    if not ok.any():
        return -np.inf, -1, -1, feat_gain
    g = np.where(ok, g, -np.inf)
    np.maximum.at(feat_gain, fi, g)
    j = int(np.argmax(g))  # nonzero() is in (feature, bin) order: first maximum = lowest feature, lowest bin
    return float(g[j]), int(fi[j]), int(bi[j]), feat_gain
