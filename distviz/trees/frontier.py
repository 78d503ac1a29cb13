"""Tree growth on node histograms driven from Python: one growth rule for every grower outside numba.

``HistGrower`` keeps the open leaves of one tree, their histograms and their best split, and applies the
growth rule of the numba grower (``splitting.may_split``): a leaf is split on its best candidate
(``scan``), its children's sums are the prefix of its histogram along the split feature (plus the
missing-value column when a NaN goes left), only the smaller child's histogram is asked for and the
larger one is its parent's minus it.  Two drivers feed it histograms:

* the entropy criterion over in-memory rows (``grow_in_memory``): one split at a time, best first (the
  open leaf with the largest gain, lowest id on ties), the partition and histogram kernels of the numba
  grower; the split scan is ``splitting.best_split_entropy`` because the family's A* is a Python callable;
* the Dask path (``distviz.distributed.rows``): every open leaf of a level at once, histograms summed over
  shards.  Without ``max_leaves`` best-first growth splits every admissible leaf, so level-wise growth
  gives the same splits; ``best_first_order`` renumbers its nodes in the order the best-first growers
  number them.
"""

from __future__ import annotations

from typing import Callable

import numba
import numpy as np

from .grower import _build, _missing_column, no_row_codes
from .splitting import may_split, partition

__all__ = ["HistGrower", "grow_in_memory"]

#: scan(h (p, nb, C), sums (C,)) -> (gain, feature, bin, missing_left, gain per feature (p,)); feature -1: no split
Scan = Callable[[np.ndarray, np.ndarray], tuple]


class HistGrower:
    """The open leaves of one tree grown from node histograms (p, nb, C) whose columns start [W, (count,) ...].

    Parameters
    ----------
    root_hist : ndarray of shape (p, nb, C)
        The root's histogram.
    scan : callable
        The split scan (see ``Scan``), for example ``splitting.best_split_variance_missing`` or
        ``splitting.best_split_entropy`` with their other arguments bound.
    o : int
        The number of leading weight columns: 1 ([W], unit weights: W is the count) or 2 ([W, count]).
    max_depth, max_leaves, min_weight_leaf, min_samples_leaf : the growth rule's limits
        (``max_leaves=None``: no limit).
    """

    def __init__(self, root_hist, scan: Scan, o: int, max_depth, max_leaves, min_weight_leaf, min_samples_leaf):
        self.scan, self.o = scan, int(o)
        self.max_depth, self.min_w, self.min_cnt = int(max_depth), float(min_weight_leaf), float(min_samples_leaf)
        self.max_leaves = np.iinfo(np.int64).max if max_leaves is None else int(max_leaves)
        self.p = root_hist.shape[0]
        self.sums = [np.cumsum(root_hist[0], axis=0)[-1]]   # the root's totals: feature 0's bins in bin order
        self.depth: list = [0]
        self.feature: list = [-1]
        self.bin: list = [-1]
        self.left: list = [-1]
        self.right: list = [-1]
        self.gain: list = [np.nan]
        self.missing_left: list = [0]
        self.feat_gain = [np.full(self.p, np.nan)]
        self.n_leaves = 1
        self.hist: dict[int, np.ndarray] = {}
        self.best: dict[int, tuple] = {}     # open leaf -> (gain, feature, bin, missing code or -1)
        self.wanted: list[int] = []         # the children whose histograms ``receive`` expects, in order
        self._pending: list[tuple] = []
        if self._may_split(0):
            self._consider(0, root_hist)

    @property
    def n_nodes(self) -> int:
        return len(self.sums)

    def _may_split(self, c) -> bool:
        s = self.sums[c]
        return bool(may_split(self.depth[c], self.n_leaves, s[self.o - 1], s[0], self.max_depth, self.max_leaves,
                              self.min_cnt, self.min_w))

    def _consider(self, c, h) -> None:
        g, f, b, ml, fg = self.scan(h, self.sums[c])
        self.feat_gain[c] = fg
        if f >= 0:
            self.hist[c] = h
            self.best[c] = (g, f, b, int(ml))

    def _child(self, parent, sums) -> int:
        self.sums.append(sums)
        self.depth.append(self.depth[parent] + 1)
        for a, v in ((self.feature, -1), (self.bin, -1), (self.left, -1), (self.right, -1), (self.gain, np.nan),
                     (self.missing_left, 0)):
            a.append(v)
        self.feat_gain.append(np.full(self.p, np.nan))
        return len(self.sums) - 1

    def split(self, level: bool, miss: int) -> np.ndarray:
        """Split every open leaf (``level``) or the one with the largest gain; returns the splits (m, 6).

        A split row is [node, feature, bin, left, right, code]: bins 0..bin (and the missing-value column
        ``code`` = miss when NaN goes left, else -1) go left.  ``wanted`` then lists the children whose
        histograms ``receive`` needs, in order.
        """
        if level:
            chosen = sorted(self.best)
        elif self.best and self.n_leaves < self.max_leaves:
            chosen = [max(self.best, key=lambda c: (self.best[c][0], -c))]
        else:
            chosen = []
        splits, self.wanted, self._pending = [], [], []
        for c in chosen:
            g, f, b, ml = self.best.pop(c)
            h = self.hist.pop(c)
            sL = np.cumsum(h[f, : b + 1], axis=0)[-1]
            code = miss if ml == 1 else -1
            if code >= 0:
                sL = sL + h[f, code]
            L = self._child(c, sL)
            R = self._child(c, self.sums[c] - sL)
            self.feature[c], self.bin[c], self.left[c], self.right[c], self.gain[c] = f, b, L, R, g
            self.missing_left[c] = ml
            self.n_leaves += 1
            splits.append((c, f, b, L, R, code))
            can_L, can_R = self._may_split(L), self._may_split(R)
            if can_L or can_R:
                ci = self.o - 1
                small, large = (L, R) if self.sums[L][ci] <= self.sums[R][ci] else (R, L)
                can = {L: can_L, R: can_R}
                self.wanted.append(small)
                self._pending.append((h, small, large, can[small], can[large]))
        return np.asarray(splits, dtype=np.int64).reshape(-1, 6)

    def receive(self, hists) -> None:
        """The histograms of the ``wanted`` children; their larger siblings' by subtraction from the parent's."""
        for (hp, small, large, can_small, can_large), h in zip(self._pending, hists):
            if can_small:
                self._consider(small, h)
            if can_large:
                self._consider(large, hp - h)
        self.wanted, self._pending = [], []

    def nodes(self) -> dict:
        """The node arrays in growth order: feature, bin, left, right, missing_left, depth, gain, feature_gains, sums."""
        return {"feature": np.asarray(self.feature, dtype=np.int64), "bin": np.asarray(self.bin, dtype=np.int64),
                "left": np.asarray(self.left, dtype=np.int64), "right": np.asarray(self.right, dtype=np.int64),
                "missing_left": np.asarray(self.missing_left, dtype=np.uint8),
                "depth": np.asarray(self.depth, dtype=np.int64), "gain": np.asarray(self.gain, dtype=np.float64),
                "feature_gains": np.asarray(self.feat_gain), "sums": np.asarray(self.sums)}

    def best_first_order(self) -> np.ndarray:
        """new_id[id]: the ids the best-first growers give the same nodes (the identity after best-first growth)."""
        new = np.full(self.n_nodes, -1, dtype=np.int64)
        new[0] = 0
        nxt = 1
        open_ = [0] if self.left[0] >= 0 else []
        while open_:
            j = max(open_, key=lambda c: (self.gain[c], -new[c]))
            open_.remove(j)
            for child in (self.left[j], self.right[j]):
                new[child] = nxt
                nxt += 1
                if self.left[child] >= 0:
                    open_.append(child)
        return new


def grow_in_memory(codes_T, n_bins, nb_max, G, scan_for, max_depth, max_leaves, min_weight_leaf, min_samples_leaf):
    """Grow one tree best first over in-memory rows: G (n, 2+d) = [w, 1{w>0}, ...] the per-row histogram columns.

    ``scan_for(miss)`` returns the split scan for the histogram's missing-value column ``miss`` (-1: none).
    Returns (the grower, train_leaf (n,): every training row's leaf).
    """
    p, n = codes_T.shape
    d = G.shape[1] - 2
    miss = int(_missing_column(np.asarray(n_bins, dtype=np.int64), nb_max))
    rows = np.arange(n, dtype=np.int32)
    tmp = np.empty(n, dtype=np.int32)
    buf = np.empty((n, 2 + d))
    no_rc = no_row_codes(codes_T)
    allow_par = numba.get_num_threads()
    seg = {0: (0, n)}

    def hist(c):
        h = np.empty((p, nb_max, 2 + d))
        _build(codes_T, no_rc, rows, seg[c][0], seg[c][1], G, 2, 2, d, buf, h, allow_par)
        return h

    grower = HistGrower(hist(0), scan_for(miss), 2, max_depth, max_leaves, min_weight_leaf, min_samples_leaf)
    while True:
        splits = grower.split(level=False, miss=miss)
        if splits.shape[0] == 0:
            break
        j, f, b, L, R, code = (int(v) for v in splits[0])
        s0, s1 = seg.pop(j)
        mid = partition(codes_T[f], rows, s0, s1, b, tmp, code) if code >= 0 else partition(codes_T[f], rows, s0, s1,
                                                                                                b, tmp)
        seg[L], seg[R] = (s0, mid), (mid, s1)
        grower.receive([hist(c) for c in grower.wanted])
    train_leaf = np.empty(n, dtype=np.int32)
    for c, (s0, s1) in seg.items():
        train_leaf[rows[s0:s1]] = c
    return grower, train_leaf
