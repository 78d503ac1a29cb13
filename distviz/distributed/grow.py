"""Client side of one distributed tree: split choice on summed histograms, level by level, and the fitted HistTree.

The workers send each level's node histograms (summed over chunks by a tree reduction); the client
runs the in-memory split scan on them (``distviz.trees.splitting.best_split_variance``, Gain^reg with
the l2 penalty of mirror_vs_natural_boosting.tex, Sec. "Split criterion from leaf predictions"; with
missing values, ``best_split_variance_missing`` also learns where a NaN goes) and the
in-memory growth rule (``distviz.trees.splitting.may_split``, the numba grower's own): a node may split when it
is above ``max_depth``'s limit and holds at least twice ``min_samples_leaf`` rows and twice ``min_weight_leaf``;
a child's sums are the prefix of its parent's histogram (plus the missing-value column when NaN goes left); only the
smaller child's histogram is built and the larger one is the parent's minus it.  Without ``max_leaves``
best-first growth splits every admissible leaf, so growing level by level gives the same splits; the node ids are then renumbered
in best-first order (the open leaf with the largest gain first, lowest id on ties), the order the
in-memory grower numbers them, so the tree is the in-memory tree node for node.
"""

from __future__ import annotations

import numpy as np

from distviz.trees import HistTree
from distviz.trees.grower import _missing_column
from distviz.trees.splitting import best_split_variance_missing, may_split
from distviz.trees.tree import _entropy_gains, record_from_sums

__all__ = ["LevelGrower"]


class LevelGrower:
    """Grows one tree from histograms level by level: ``splits_for_level`` picks, ``tree`` assembles the HistTree."""

    def __init__(self, root_hist, binner, o, K, max_depth, min_w, min_cnt, l2):
        """root_hist (p, nb_max, o+K): the root's histogram summed over all chunks."""
        self.binner, self.o, self.K = binner, o, K
        self.max_depth, self.min_w, self.min_cnt, self.l2 = int(max_depth), float(min_w), float(min_cnt), float(l2)
        self.n_bins = binner.n_bins_
        self.miss = int(_missing_column(np.asarray(binner.n_bins_, dtype=np.int64), int(root_hist.shape[1])))
        p = root_hist.shape[0]
        self.p = p
        tot = np.cumsum(root_hist[0], axis=0)[-1]   # the root's totals: feature 0's bins added in bin order
        self.sums = [tot]
        self.depth = [0]
        self.hist = {0: root_hist}
        self.feature, self.bin, self.left, self.right, self.gain = [-1], [-1], [-1], [-1], [np.nan]
        self.missing_left = [0]
        self.feat_gain = [np.full(p, np.nan)]
        self.frontier = [0] if self._can_split(0) else []

    def _can_split(self, c) -> bool:
        """The in-memory growers' rule (``splitting.may_split``; no leaf limit: level by level splits every leaf)."""
        s = self.sums[c]
        return bool(may_split(self.depth[c], 0, s[self.o - 1], s[0], self.max_depth, 1, self.min_cnt, self.min_w))

    def _new(self, parent, sums):
        self.sums.append(sums)
        self.depth.append(self.depth[parent] + 1)
        for a, v in ((self.feature, -1), (self.bin, -1), (self.left, -1), (self.right, -1), (self.gain, np.nan),
                     (self.missing_left, 0)):
            a.append(v)
        self.feat_gain.append(np.full(self.p, np.nan))
        return len(self.sums) - 1

    def choose(self):
        """Split the frontier's nodes; returns (splits (m, 6), nodes to histogram next).

        A split row is [node, feature, bin, left, right, code]: bins 0..bin (and the missing-value code
        `code` when NaN goes left, else -1) go left.

        The frontier becomes the children that may split; their histograms must be passed to ``receive``.
        """
        splits, build, self._pending = [], [], []
        for c in self.frontier:
            fg = self.feat_gain[c]
            g, f, b, ml = best_split_variance_missing(self.hist[c], self.n_bins, self.sums[c], self.o, self.l2,
                                                      self.min_w, self.min_cnt, fg, self.miss)
            if f < 0:
                del self.hist[c]
                continue
            sL = np.cumsum(self.hist[c][f, : b + 1], axis=0)[-1]
            mcode = self.miss if ml == 1 else -1
            if mcode >= 0:
                sL = sL + self.hist[c][f, mcode]
            L = self._new(c, sL)
            R = self._new(c, self.sums[c] - sL)
            self.feature[c], self.bin[c], self.left[c], self.right[c], self.gain[c] = f, b, L, R, g
            self.missing_left[c] = int(ml)
            splits.append((c, f, b, L, R, mcode))
            canL, canR = self._can_split(L), self._can_split(R)
            if not (canL or canR):
                del self.hist[c]
                continue
            ci = self.o - 1
            small, large = (L, R) if self.sums[L][ci] <= self.sums[R][ci] else (R, L)
            build.append(small)
            self._pending.append((c, small, large, self._can_split(small), self._can_split(large)))
        self.frontier = []
        return np.asarray(splits, dtype=np.int64).reshape(-1, 6), build

    def receive(self, hists):
        """Histograms of the nodes ``choose`` asked for (summed over chunks); the larger siblings by subtraction."""
        for (parent, small, large, can_small, can_large), h in zip(self._pending, hists):
            hp = self.hist.pop(parent)
            if can_large:
                self.hist[large] = hp - h
                self.frontier.append(large)
            if can_small:
                self.hist[small] = h
                self.frontier.append(small)
        self.frontier.sort()
        self._pending = []

    def arrays(self) -> dict:
        """Provisional (level-order) node arrays for the workers: feature, bin, left, right, missing_left, value (n_nodes, K)."""
        S = np.asarray(self.sums)
        return {"feature": np.asarray(self.feature, dtype=np.int64), "bin": np.asarray(self.bin, dtype=np.int64),
                "left": np.asarray(self.left, dtype=np.int64), "right": np.asarray(self.right, dtype=np.int64),
                "missing_left": np.asarray(self.missing_left, dtype=np.uint8),
                "value": S[:, self.o:] / (S[:, :1] + self.l2)}

    def best_first_order(self) -> np.ndarray:
        """new_id[provisional id]: the ids the in-memory best-first grower gives the same nodes."""
        n = len(self.sums)
        new = np.full(n, -1, dtype=np.int64)
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

    def tree(self, aux, family, W_root, unit) -> HistTree:
        """The fitted HistTree in the in-memory grower's node order; aux: node sums of [1, T] / [w, 1{w>0}, w T]
        for the Gain^ent of each split, or None (no family: NaN)."""
        new = self.best_first_order()
        n = new.size
        order = np.argsort(new)

        def m(a):
            return np.asarray(a)[order]

        def remap(a):
            return np.where(np.asarray(a) >= 0, new[np.maximum(np.asarray(a), 0)], -1)[order]

        left, right = remap(self.left), remap(self.right)
        sums = np.asarray(self.sums)[order]
        if aux is None:   # a chart's tree (NGBoost): no family, no Gain^ent
            gain_ent = np.full(n, np.nan)
        else:
            A = np.asarray(aux)[order]
            W, S = (sums[:, 0], A) if unit else (A[:, 0], A[:, 2:])
            gain_ent = _entropy_gains(family, W, S, left, right, n, W_root)
        record = record_from_sums(self.binner, sums, self.o, self.l2, left, right, m(self.feature), m(self.bin),
                                  np.asarray(self.feat_gain)[order], depth=m(self.depth), gain=m(self.gain),
                                  gain_reg=m(self.gain), gain_ent=gain_ent, missing_left=m(self.missing_left))
        params = {"max_depth": self.max_depth, "min_weight_leaf": self.min_w, "min_samples_leaf": int(self.min_cnt),
                  "l2": self.l2}
        # the training rows' leaves stay on the workers
        return HistTree.from_record(record, self.binner, params, np.empty(0, dtype=np.int64))
