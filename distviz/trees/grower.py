"""Tree growth: best-first expansion of leaves on binned features with a persistent row partition.

Every node owns a contiguous segment ``rows[start:stop]`` of one row-index array; splitting a node
partitions its segment in place (stable, so rows stay in increasing order).  Only nodes that may
still be split keep a histogram: the smaller child is built from its rows, the larger one is the
parent's histogram minus the smaller one, written into the parent's slot.  Without ``max_leaves``
every splittable leaf is expanded, so the result equals depth-wise growth; with ``max_leaves`` the
leaf with the largest gain is expanded first (LightGBM's leaf-wise growth).

``grow_tree`` (variance criterion) runs entirely in numba; ``grow_batch`` grows B trees on B target
blocks that share X in one call (B = 1 for a single tree), building the shared root histogram once
for all B*K columns.  The entropy criterion drives the same histogram and partition kernels from Python
(``frontier.grow_in_memory``) because the family's A* is a Python callable.

A boosting fit grows one tree per round on the same X and weights; what they can share is kept in a
``tree.FitContext`` (``for_rounds``): the root's weight / count columns (each root sums only its
target columns), the partition scratch, and for trees with several outputs row-major codes
(children's histograms row by row; one output reads the column-major codes by row index instead).
Large nodes are partitioned and labelled in parallel row blocks; every parallel kernel keeps each
sum's row order, so the trees do not depend on the number of threads.

Missing values: ``nb_max`` is the histogram width (``Binner.n_hist_bins_``); when it exceeds every
feature's bin count, its last column is the missing-value bin (``Binner.missing_bin_``), the split
scan learns each split's missing direction (splitting.py) and the node arrays get ``missing_left``
(1: a NaN goes left).
"""

from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

from ._cache import ensure_parallel_runtime
from .histogram import (
    PARALLEL_MIN_WORK,
    copy_features,
    gather_rows,
    hist_indexed,
    hist_parallel,
    hist_root_targets,
    hist_rows,
    hist_serial,
)
from .splitting import (
    assign_children,
    assign_children_parallel,
    best_split_variance_missing,
    may_split,
    partition,
    partition_parallel,
)

__all__ = ["grow_tree", "grow_batch", "grow_many", "node_sums"]

# cached callers of the parallel kernel need numba's threading layer loaded before their first call
ensure_parallel_runtime()


@njit(cache=True)
def _build(codes_T, codes_R, rows, start, stop, G, col_off, o, K, buf, out, allow_parallel):
    """Histogram of rows[start:stop] into out; gathers the row statistics first unless it is the whole sample.

    G: row statistics (see histogram.py) with `lead` = 2 (o = 2) or 0 (o = 1, unit weights) leading
    columns and this tree's K target columns at col_off.  A node below the root with one output
    (K = 1) is built by feature pairs reading G by row index (histogram.hist_indexed); with more
    outputs and row-major codes codes_R (n, p) (an empty array when there are none) it is built row
    by row, otherwise from gathered statistics.
    allow_parallel: 0 (serial) or the number of numba threads to use.
    """
    m = stop - start
    n = codes_T.shape[1]
    p = codes_T.shape[0]
    unit = o == 1
    lead = 0 if unit else 2
    big = allow_parallel and m * p >= PARALLEL_MIN_WORK
    ng = min(int(allow_parallel), p) if big else 1   # feature groups of the row-indexed kernels
    if m == n and col_off == lead and G.shape[1] == lead + K:
        mode = 0
        src = G
    elif K == 1:  # one output: the features in pairs, codes and statistics read by row index (no gather, no row-major codes)
        hist_indexed(codes_T, rows, start, stop, G, col_off, unit, out, ng)
        return
    elif codes_R.shape[0] == n:
        hist_rows(codes_R, rows, start, stop, G, col_off, lead, K, unit, out, ng)
        return
    else:
        gather_rows(G, rows, start, stop, col_off, lead, K, buf)
        mode = 2
        src = buf
    if big:
        hist_parallel(codes_T, rows, start, stop, src, mode, unit, out)
    else:
        hist_serial(codes_T, rows, start, stop, src, mode, unit, out)


@njit(cache=True)
def _missing_column(n_bins, nb_max):
    """The histogram column of missing values: nb_max - 1 when the histograms are wider than every feature's bins, else -1."""
    top = 0
    for f in range(n_bins.shape[0]):
        top = max(top, n_bins[f])
    return nb_max - 1 if nb_max > top else -1


@njit(cache=True)
def grow_tree(
    codes_T, codes_R, root_lead, root_tot, n_bins, nb_max, G, col_off, o, K, root_hist, have_root_hist,
    max_depth, max_leaves, min_w, min_cnt, l2, allow_parallel,
    feature, split_bin, left, right, missing_left, depth, gain, sums, feat_gain, train_leaf, aux, aux_sums, work,
):
    """Grow one variance-criterion tree into the preallocated node arrays; returns the number of nodes.

    nb_max: the histogram width (one more than the largest bin count when the last column holds
    the missing values, see the module doc); missing_left (M,) gets each split's missing direction.

    G (n, .) holds the row statistics: the leading o columns and this tree's K target columns at
    col_off (see histogram.py); root_hist, when have_root_hist, is the root histogram (p, nb_max, o+K).
    codes_R: row-major copy (n, p) of the codes (or an empty array, see _build); root_lead, root_tot:
    the root's leading histogram columns (p, nb_max, o) and their totals (o,) (histogram.lead_hist),
    or empty arrays: with them the root sums only its K target columns.  aux (n, d): extra row columns
    whose per-node sums go to aux_sums (M, d), equal to node_sums(train_leaf, aux, ...) (each leaf adds
    its rows in row order; internal nodes add their children); an empty (0, d) array skips them.
    work (2, n) int32: scratch for the row partition, reused across trees (an empty array: allocate).
    """
    p, n = codes_T.shape
    M = feature.shape[0]
    C = o + K
    ci = o - 1
    n_slots = min((M + 1) // 2, 1 << max(min(max_depth, 62) - 1, 0)) + 2
    hist = np.empty((n_slots, p, nb_max, C))
    free = np.empty(n_slots, dtype=np.int64)
    for s in range(n_slots):
        free[s] = n_slots - 1 - s
    n_free = n_slots
    if work.shape[1] == n:
        rows = work[0]
        tmp = work[1]
    else:
        rows = np.empty(n, dtype=np.int32)
        tmp = np.empty(n, dtype=np.int32)
    for i in range(n):
        rows[i] = i
    lead = 0 if o == 1 else 2
    # gathered statistics of a smaller child (at most half the rows; all rows if the root must be gathered)
    root_in_place = have_root_hist or (col_off == lead and G.shape[1] == lead + K)
    buf = np.empty((1 if codes_R.shape[0] == n or K == 1 else n // 2 + 1 if root_in_place else n, lead + K))
    start = np.empty(M, dtype=np.int64)
    stop = np.empty(M, dtype=np.int64)
    slot = np.full(M, -1, dtype=np.int64)
    bgain = np.full(M, -np.inf)
    bfeat = np.full(M, -1, dtype=np.int64)
    bbin = np.full(M, -1, dtype=np.int64)
    bmiss = np.zeros(M, dtype=np.int64)
    miss = _missing_column(n_bins, nb_max)
    is_open = np.zeros(M, dtype=np.bool_)
    assigned = np.zeros(M, dtype=np.bool_)  # nodes whose two leaf children were labelled without a partition

    feature[:] = -1
    split_bin[:] = -1
    left[:] = -1
    right[:] = -1
    missing_left[:] = 0
    gain[:] = np.nan
    feat_gain[:, :] = np.nan

    prebuilt = root_lead.shape[0] == p and not have_root_hist
    if prebuilt:  # the root's histogram and totals in one pass, into the slot the root takes below
        tot = np.empty(K)
        hist_root_targets(codes_T, G, col_off, o, K, root_lead, hist[free[n_free - 1]], tot,
                          allow_parallel if n * p >= PARALLEL_MIN_WORK else 0)
        for c in range(o):
            sums[0, c] = root_tot[c]
        for k in range(K):
            sums[0, o + k] = tot[k]
    else:
        sums[0, :] = 0.0
        if K == 1:   # scalar accumulators (an array element would be stored and reloaded every row)
            s0 = 0.0
            s1 = 0.0
            sy = 0.0
            for i in range(n):
                if lead == 2:
                    s0 += G[i, 0]
                    s1 += G[i, 1]
                sy += G[i, col_off]
            if lead == 2:
                sums[0, 0] = s0
                sums[0, 1] = s1
            sums[0, o] = sy
        else:
            for i in range(n):
                for c in range(lead):
                    sums[0, c] += G[i, c]
                for k in range(K):
                    sums[0, o + k] += G[i, col_off + k]
        if o == 1:
            sums[0, 0] = n
    start[0] = 0
    stop[0] = n
    depth[0] = 0
    n_nodes = 1
    n_leaves = 1
    n_open = 0
    first = True
    while True:
        if first:  # the root: its histogram is built (or given) like a smaller child's
            first = False
            small = 0
            large = -1
            sj = -1
            can_small = may_split(0, 1, sums[0, ci], sums[0, 0], max_depth, max_leaves, min_cnt, min_w)
            can_large = False
            use_root = have_root_hist
        else:
            if n_open == 0 or n_leaves >= max_leaves:
                break
            use_root = False
            # expand the open leaf with the largest gain (lowest id on ties)
            j = -1
            bestg = -np.inf
            for c in range(n_nodes):
                if is_open[c] and bgain[c] > bestg:
                    bestg = bgain[c]
                    j = c
            is_open[j] = False
            n_open -= 1
            f = bfeat[j]
            b = bbin[j]
            sj = slot[j]
            slot[j] = -1
            L = n_nodes
            R = n_nodes + 1
            n_nodes += 2
            n_leaves += 1
            feature[j] = f
            split_bin[j] = b
            left[j] = L
            right[j] = R
            ml = bmiss[j]
            missing_left[j] = ml
            mcode = miss if ml == 1 else -1  # the code that also goes left (-1: none)
            gain[j] = bgain[j]
            depth[L] = depth[j] + 1
            depth[R] = depth[j] + 1
            # child totals from the parent's histogram: bins 0..b of feature f go left
            hf = hist[sj, f]
            sums[L, :] = 0.0
            for bb in range(b + 1):
                for c in range(C):
                    sums[L, c] += hf[bb, c]
            if mcode >= 0:
                for c in range(C):
                    sums[L, c] += hf[mcode, c]
            for c in range(C):
                sums[R, c] = sums[j, c] - sums[L, c]
            can_L = may_split(depth[L], n_leaves, sums[L, ci], sums[L, 0], max_depth, max_leaves, min_cnt, min_w)
            can_R = may_split(depth[R], n_leaves, sums[R, ci], sums[R, 0], max_depth, max_leaves, min_cnt, min_w)
            if not can_L and not can_R:  # both children are final leaves: label their rows, no partition
                if aux.shape[0] == n:
                    pass  # labelled at the end in the same pass as their extra column sums (_aux_sums)
                elif mcode >= 0 and allow_parallel > 1 and stop[j] - start[j] >= PARALLEL_MIN_WORK:
                    assign_children_parallel(codes_T[f], rows, start[j], stop[j], b, L, R, train_leaf, mcode)
                elif mcode >= 0:
                    assign_children(codes_T[f], rows, start[j], stop[j], b, L, R, train_leaf, mcode)
                elif allow_parallel > 1 and stop[j] - start[j] >= PARALLEL_MIN_WORK:
                    assign_children_parallel(codes_T[f], rows, start[j], stop[j], b, L, R, train_leaf)
                else:
                    assign_children(codes_T[f], rows, start[j], stop[j], b, L, R, train_leaf)
                assigned[j] = True
                start[L] = stop[L] = start[R] = stop[R] = 0
                free[n_free] = sj
                n_free += 1
                continue
            if mcode >= 0 and allow_parallel > 1 and stop[j] - start[j] >= PARALLEL_MIN_WORK:
                mid = partition_parallel(codes_T[f], rows, start[j], stop[j], b, tmp, allow_parallel, mcode)
            elif mcode >= 0:
                mid = partition(codes_T[f], rows, start[j], stop[j], b, tmp, mcode)
            elif allow_parallel > 1 and stop[j] - start[j] >= PARALLEL_MIN_WORK:
                mid = partition_parallel(codes_T[f], rows, start[j], stop[j], b, tmp, allow_parallel)
            else:
                mid = partition(codes_T[f], rows, start[j], stop[j], b, tmp)
            start[L] = start[j]
            stop[L] = mid
            start[R] = mid
            stop[R] = stop[j]
            if (stop[L] - start[L]) <= (stop[R] - start[R]):
                small, large, can_small, can_large = L, R, can_L, can_R
            else:
                small, large, can_small, can_large = R, L, can_R, can_L
        if not can_small and not can_large:
            if sj >= 0:
                free[n_free] = sj
                n_free += 1
            continue
        # histogram of the smaller child into a fresh slot; larger = parent - smaller, in the parent's slot
        n_free -= 1
        ss = free[n_free]
        if use_root:
            copy_features(hist[ss], root_hist, 0, 0, p, C)
        elif prebuilt and small == 0:
            pass
        else:
            _build(codes_T, codes_R, rows, start[small], stop[small], G, col_off, o, K, buf, hist[ss], allow_parallel)
        if can_large:
            hp = hist[sj]
            hs = hist[ss]
            for ff in range(p):
                for bb in range(n_bins[ff]):
                    for c in range(C):
                        hp[ff, bb, c] -= hs[ff, bb, c]
                if miss >= 0:
                    for c in range(C):
                        hp[ff, miss, c] -= hs[ff, miss, c]
            slot[large] = sj
        elif sj >= 0:
            free[n_free] = sj
            n_free += 1
        if can_small:
            slot[small] = ss
        else:
            free[n_free] = ss
            n_free += 1
        for q in range(2):
            c = small if q == 0 else large
            if c < 0 or slot[c] < 0:
                continue
            sc = slot[c]
            g, f2, b2, m2 = best_split_variance_missing(hist[sc], n_bins, sums[c], o, l2, min_w, min_cnt, feat_gain[c], miss)
            if f2 >= 0:
                bgain[c] = g
                bfeat[c] = f2
                bbin[c] = b2
                bmiss[c] = m2
                is_open[c] = True
                n_open += 1
            else:
                free[n_free] = sc
                n_free += 1
                slot[c] = -1

    for c in range(n_nodes):
        if left[c] < 0:
            seg = rows[start[c]:stop[c]]
            for jj in range(seg.shape[0]):
                train_leaf[np.uintp(seg[jj])] = c   # unsigned: no wrap-around check (see histogram._U1)
    if aux.shape[0] == n:
        _aux_sums(codes_T, rows, start, stop, feature, split_bin, missing_left, miss, left, right, assigned, n_nodes,
                  train_leaf, aux, aux_sums, allow_parallel)
    return n_nodes


@njit(cache=True)
def _segment_aux(code_row, rows, s0, s1, node, two, b, mcode, L, R, train_leaf, aux, aux_sums):
    """Sums of aux over rows[s0:s1] in row order: into node's row, or (two) label each row L or R and sum into both.

    two: the segment of a node split by (code_row, b, mcode as in splitting.partition) into two
    final leaves; its rows are labelled here, in the same pass (splitting.assign_children's rule).
    """
    d = aux.shape[1]
    seg = rows[s0:s1]   # indexed from 0, row ids unsigned: no wrap-around checks (see histogram._U1)
    lut = np.empty(2, dtype=np.int64)  # indexed, not branched: the branch mispredicts on balanced splits
    lut[0] = R
    lut[1] = L
    if d == 1:
        a = aux[:, 0]
        sl = 0.0
        if two:
            # each row adds v to its side and v * 0.0 (a zero) to the other: a finite sum that starts at +0.0
            # is never -0.0, so adding a zero leaves it unchanged and both sums equal the row-order sums
            sr = 0.0
            for jj in range(seg.shape[0]):
                i = np.uintp(seg[jj])
                c = code_row[i]
                go = np.intp(c <= b) | np.intp(c == mcode)
                train_leaf[i] = lut[np.uintp(go)]
                v = a[i]
                g = float(go)
                sl += v * g
                sr += v * (1.0 - g)
            aux_sums[L, 0] = sl
            aux_sums[R, 0] = sr
        else:
            for jj in range(seg.shape[0]):
                sl += a[np.uintp(seg[jj])]
            aux_sums[node, 0] = sl
    else:
        if two:
            aux_sums[L, :] = 0.0
            aux_sums[R, :] = 0.0
        else:
            aux_sums[node, :] = 0.0
        for jj in range(seg.shape[0]):
            i = np.uintp(seg[jj])
            if two:
                c = code_row[i]
                cn = lut[np.uintp(c <= b) | np.uintp(c == mcode)]
                train_leaf[i] = cn
            else:
                cn = node
            for k in range(d):
                aux_sums[cn, k] += aux[i, k]


@njit(cache=True)
def _segment_task(t, codes_T, rows, tasks, start, stop, feature, split_bin, missing_left, miss, left, right, train_leaf,
                  aux, aux_sums):
    """Run task t of _aux_sums: a parent's segment (labelled into its two leaves and summed) or a leaf's own segment."""
    c = tasks[t, 0]
    if tasks[t, 1] == 1:
        mcode = miss if missing_left[c] == 1 else -1
        _segment_aux(codes_T[feature[c]], rows, start[c], stop[c], c, True, split_bin[c], mcode, left[c], right[c],
                     train_leaf, aux, aux_sums)
    else:
        _segment_aux(codes_T[0], rows, start[c], stop[c], c, False, -1, -1, -1, -1, train_leaf, aux, aux_sums)


@njit(cache=True, parallel=True)
def _segments_parallel(codes_T, rows, tasks, n_tasks, owner, n_groups, start, stop, feature, split_bin, missing_left, miss,
                       left, right, train_leaf, aux, aux_sums):
    for g in prange(n_groups):
        for t in range(n_tasks):
            if owner[t] == g:
                _segment_task(t, codes_T, rows, tasks, start, stop, feature, split_bin, missing_left, miss, left, right,
                              train_leaf, aux, aux_sums)


@njit(cache=True)
def _aux_sums(codes_T, rows, start, stop, feature, split_bin, missing_left, miss, left, right, assigned, n_nodes,
              train_leaf, aux, aux_sums, n_threads):
    """Per-node sums of aux (see grow_tree): every leaf from its row segment, or its parent's segment when labelled there.

    The parents whose two children are final leaves (assigned) label those rows here, in the sums'
    pass.  The segments are disjoint, so with n_threads > 1 they are summed in parallel threads, the
    largest first, each to the least loaded thread (each sum still adds its rows in row order).
    """
    tasks = np.empty((n_nodes, 2), dtype=np.int64)
    size = np.empty(n_nodes, dtype=np.int64)
    n_tasks = 0
    for c in range(n_nodes):
        if assigned[c] or (left[c] < 0 and stop[c] > start[c]):
            tasks[n_tasks, 0] = c
            tasks[n_tasks, 1] = 1 if assigned[c] else 0
            size[n_tasks] = stop[c] - start[c]
            n_tasks += 1
        elif left[c] < 0:
            aux_sums[c, :] = 0.0
    n_groups = min(n_threads, n_tasks)
    if n_groups > 1:
        owner = np.empty(n_tasks, dtype=np.int64)
        load = np.zeros(n_groups, dtype=np.int64)
        for t in np.argsort(-size[:n_tasks], kind="mergesort"):
            g = np.argmin(load)
            owner[t] = g
            load[g] += size[t]
        _segments_parallel(codes_T, rows, tasks, n_tasks, owner, n_groups, start, stop, feature, split_bin, missing_left,
                           miss, left, right, train_leaf, aux, aux_sums)
    else:
        for t in range(n_tasks):
            _segment_task(t, codes_T, rows, tasks, start, stop, feature, split_bin, missing_left, miss, left, right,
                          train_leaf, aux, aux_sums)
    d = aux.shape[1]
    for j in range(n_nodes - 1, -1, -1):  # children have larger ids than their parent
        if left[j] >= 0:
            for k in range(d):
                aux_sums[j, k] = aux_sums[left[j], k] + aux_sums[right[j], k]


@njit(cache=True)
def _many_prepare(codes_T, nb_max, Yb, w, o, allow_parallel):
    """Row statistics of all B*K columns (n, lead+B*K) and their shared root histogram (p, nb_max, o+B*K).

    lead = 2 ([w, 1{w>0}, w*Y_1..B]) for o = 2, 0 (the targets only) for unit weights.  For B = 1
    the root histogram is left to grow_tree (a (1, 1, 1) placeholder is returned).
    """
    B, n, K = Yb.shape
    p = codes_T.shape[0]
    lead = 0 if o == 1 else 2
    if B == 1 and lead == 0:  # unit weights, one tree: the targets are the row statistics
        return np.ascontiguousarray(Yb[0]), np.empty((1, 1, 1))
    G = np.empty((n, lead + B * K))
    for i in range(n):
        wi = w[i]
        if lead == 2:
            G[i, 0] = wi
            G[i, 1] = 1.0 if wi > 0 else 0.0
        for t in range(B):
            for k in range(K):
                G[i, lead + t * K + k] = wi * Yb[t, i, k]
    if B == 1:
        return G, np.empty((1, 1, 1))
    root = np.empty((p, nb_max, o + B * K))
    rows = np.arange(n).astype(np.int32)
    zero = np.int64(0)   # not the literal 0: a literal argument would compile the histogram kernels once more
    if allow_parallel and n * p >= PARALLEL_MIN_WORK:
        hist_parallel(codes_T, rows, zero, n, G, zero, o == 1, root)
    else:
        hist_serial(codes_T, rows, zero, n, G, zero, o == 1, root)
    return G, root


@njit(cache=True)
def _tree_root(root, t, o, K):
    """Root histogram of tree t sliced out of the shared one."""
    p, nb, _ = root.shape
    out = np.empty((p, nb, o + K))
    for f in range(p):
        for b in range(nb):
            for c in range(o):
                out[f, b, c] = root[f, b, c]
            for k in range(K):
                out[f, b, o + k] = root[f, b, o + t * K + k]
    return out


@njit(cache=True)
def _pack(n_nodes, feature, split_bin, left, right, missing_left, depth, gain, sums, feat_gain, o, l2, thr_table, nodes,
          value, fgains):
    """Write the first n_nodes[t] nodes of every tree t into its tree record (record.NODE_DTYPE rows (B, M)).

    value (B, M, K): the node values S_C / (W_C + l2) from the node sums (C = o + K columns: the weight,
    with o = 2 the positive-weight count, then the target sums); fgains (B, M, p): the per-feature gains
    (NaN at leaves); thresholds from thr_table (Binner.threshold_table_).  Rows past n_nodes[t] are left
    as they are.
    """
    B = sums.shape[0]
    K = sums.shape[2] - o
    p = feat_gain.shape[2]
    for t in range(B):
        for j in range(n_nodes[t]):
            r = nodes[t, j]
            inner = left[t, j] >= 0
            r["feature"] = feature[t, j]
            r["bin"] = split_bin[t, j]
            r["threshold"] = thr_table[feature[t, j], split_bin[t, j]] if inner else np.nan
            r["left"] = left[t, j]
            r["right"] = right[t, j]
            r["depth"] = depth[t, j]
            r["weight"] = sums[t, j, 0]
            r["n_samples"] = np.int64(sums[t, j, o - 1])
            r["gain"] = gain[t, j]
            r["gain_reg"] = gain[t, j]
            r["gain_ent"] = np.nan
            r["missing_left"] = missing_left[t, j]
            for k in range(K):
                value[t, j, k] = sums[t, j, o + k] / (sums[t, j, 0] + l2)
            for f in range(p):
                fgains[t, j, f] = feat_gain[t, j, f] if inner else np.nan


@njit(cache=True)
def _alloc_many(B, M, C, p, n):
    return (
        np.empty((B, M), dtype=np.int64), np.empty((B, M), dtype=np.int64), np.empty((B, M), dtype=np.int64),
        np.empty((B, M), dtype=np.int64), np.empty((B, M), dtype=np.int64), np.empty((B, M), dtype=np.int64),
        np.empty((B, M)), np.empty((B, M, C)), np.empty((B, M, p)), np.empty((B, n), dtype=np.int32), np.empty(B, dtype=np.int64),
    )


@njit(cache=True)
def grow_batch(codes_T, codes_R, root_lead, root_tot, n_bins, nb_max, Yb, w, o, M, max_depth, max_leaves, min_w, min_cnt, l2,
               allow_parallel, aux, work, thr_table, nodes):
    """B trees on Yb (B, n, K) sharing X, grown one after another in one call (B = 1: a single HistTree).

    The root histogram of all B*K columns is built in one pass; allow_parallel lets large node
    histograms use the feature-parallel kernels (its value: the number of threads, 0 = serial);
    codes_R is the row-major copy of the codes (n, p)
    or an empty array, root_lead / root_tot the root's leading columns (p, nb_max, o) and their
    totals (o,) or empty arrays (see grow_tree).  aux (n, d) or (0, d): extra columns whose per-node
    sums are returned too; work (2, n) int32 scratch or an empty array (see grow_tree).  nb_max is the
    histogram width (Binner.n_hist_bins_, see the module doc).  thr_table: Binner.threshold_table_; nodes
    (B, M) of record.NODE_DTYPE: receives the trees' node rows (see _pack).  Returns (n_nodes (B,),
    value (B, M, K), feature gains (B, M, p), train_leaf (B, n), aux sums (B, M, d)).
    """
    B, n, K = Yb.shape
    p = codes_T.shape[0]
    G, root = _many_prepare(codes_T, nb_max, Yb, w, o, allow_parallel)
    feature, split_bin, left, right, missing_left, depth, gain, sums, feat_gain, train_leaf, n_nodes = _alloc_many(
        B, M, o + K, p, n)
    aux_sums = np.zeros((B, M, aux.shape[1]))
    for t in range(B):
        rh = root if B == 1 else _tree_root(root, t, o, K)
        # (no inline conditionals in this 31-argument call: numba cannot compile the bytecode CPython emits for them)
        col_off = (0 if o == 1 else 2) + t * K
        have_root = B > 1
        n_nodes[t] = grow_tree(
            codes_T, codes_R, root_lead, root_tot, n_bins, nb_max, G, col_off, o, K, rh, have_root, max_depth, max_leaves,
            min_w, min_cnt, l2, allow_parallel, feature[t], split_bin[t], left[t], right[t], missing_left[t], depth[t],
            gain[t], sums[t], feat_gain[t], train_leaf[t], aux, aux_sums[t], work,
        )
    value = np.empty((B, M, K))
    fgains = np.empty((B, M, p))
    _pack(n_nodes, feature, split_bin, left, right, missing_left, depth, gain, sums, feat_gain, o, l2, thr_table, nodes,
          value, fgains)
    return n_nodes, value, fgains, train_leaf, aux_sums


def grow_many(codes_T, n_bins, nb_max, Yb, w, o, M, max_depth, max_leaves, min_w, min_cnt, l2, thr_table, nodes):
    """Grow B trees sharing X in one numba call (large node histograms use the feature-parallel kernel)."""
    return grow_batch(codes_T, no_row_codes(codes_T), NO_ROOT_LEAD, NO_ROOT_TOT, n_bins, nb_max, Yb, w, o, M, max_depth,
                      max_leaves, min_w, min_cnt, l2, numba.get_num_threads(), NO_AUX, NO_WORK, thr_table, nodes)[:4]


# stand-in for the root's cached leading columns: the root is built from all its columns
NO_ROOT_LEAD = np.empty((0, 0, 0))
NO_ROOT_TOT = np.empty(0)
# stand-in for the extra columns summed per node (none)
NO_AUX = np.empty((0, 0))
# stand-in for reusable partition scratch (none: each tree allocates its own)
NO_WORK = np.empty((2, 0), dtype=np.int32)


def no_row_codes(codes_T) -> np.ndarray:
    """The empty stand-in for row-major codes (grow column by column, gathering each node's rows)."""
    return np.empty((0, codes_T.shape[0]), dtype=codes_T.dtype)


@njit(cache=True)
def node_sums(train_leaf, G, left, right, n_nodes):
    """Per-node column sums of G (n, c) from the leaf of every row; internal nodes add their children."""
    n, c = G.shape
    S = np.zeros((n_nodes, c))
    for i in range(n):
        node = train_leaf[i]
        for k in range(c):
            S[node, k] += G[i, k]
    for j in range(n_nodes - 1, -1, -1):  # children have larger ids than their parent
        if left[j] >= 0:
            for k in range(c):
                S[j, k] = S[left[j], k] + S[right[j], k]
    return S
