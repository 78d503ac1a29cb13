"""Client side of one distributed tree: the shared histogram grower level by level, and the fitted HistTree.

The workers send each level's node histograms (summed over chunks by a tree reduction); the client grows the
tree with ``distviz.trees.frontier.HistGrower`` (the growth rule of every grower) and the in-memory split scan
``distviz.trees.splitting.best_split_variance_missing`` (Gain^reg with the l2 penalty of
mirror_vs_natural_boosting.tex, Sec. "Split criterion from leaf predictions", learning where a NaN goes).
Without ``max_leaves`` growing level by level gives the best-first growers' splits; ``tree`` renumbers the
nodes in best-first order, so the tree is the in-memory tree node for node.
"""

from __future__ import annotations

import threading

import numpy as np

from distviz.trees.frontier import HistGrower
from distviz.trees.grower import _missing_column
from distviz.trees.splitting import best_split_variance_missing

__all__ = ["LevelGrower", "load_client_kernels"]


def load_client_kernels() -> threading.Thread:
    """Start loading the split scan's compiled kernel (numba's cache) in a thread of the client; returns the thread.

    A fresh process spends about a second on numba's first call; a distributed fit starts this before its
    workers sketch the bin edges, so that the client's first split choice does not wait for it.
    """
    def scan():
        h = np.ones((1, 2, 3))
        best_split_variance_missing(h, np.full(1, 2, dtype=np.int64), h[0].sum(axis=0), 2, 0.0, 0.0, 1.0,
                                    np.full(1, np.nan), -1)

    t = threading.Thread(target=scan, name="distviz-load-kernels", daemon=True)
    t.start()
    return t


class LevelGrower(HistGrower):
    """One tree grown level by level from histograms (p, nb_max, o+K) summed over shards: ``choose`` a level's splits,
    ``receive`` the histograms it asked for, ``tree`` the fitted HistTree."""

    def __init__(self, root_hist, binner, o, K, max_depth, min_w, min_cnt, l2):
        """root_hist (p, nb_max, o+K): the root's histogram summed over all chunks."""
        self.binner, self.K, self.l2 = binner, K, float(l2)
        n_bins = binner.n_bins_
        self.miss = miss = int(_missing_column(np.asarray(n_bins, dtype=np.int64), int(root_hist.shape[1])))
        p = root_hist.shape[0]

        def scan(h, sums):
            fg = np.full(p, np.nan)
            g, f, b, ml = best_split_variance_missing(h, n_bins, sums, o, self.l2, float(min_w), float(min_cnt), fg,
                                                      miss)
            return g, f, b, ml, fg

        super().__init__(root_hist, scan, o, max_depth, None, min_w, min_cnt)

    def choose(self):
        """Split every open leaf; returns (splits (m, 6) as in ``HistGrower.split``, the nodes to histogram next)."""
        splits = self.split(level=True, miss=self.miss)
        return splits, list(self.wanted)

    def arrays(self) -> dict:
        """What the workers apply: feature, bin, left, right, missing_left and value (n_nodes, K) in growth order."""
        a = self.nodes()
        S = a["sums"]
        return {k: a[k] for k in ("feature", "bin", "left", "right", "missing_left")} | {
            "value": S[:, self.o:] / (S[:, :1] + self.l2)}

    def tree(self, aux, family, W_root, unit):
        """The fitted HistTree in the in-memory grower's node order; aux: node sums of [1, T] / [w, 1{w>0}, w T]
        for the Gain^ent of each split, or None (no family: NaN)."""
        # here, not at import: a worker imports this module (preload.warm_kernels), never the estimators
        from distviz.trees.tree import HistTree, _entropy_gains, record_from_sums

        a = self.nodes()
        new = self.best_first_order()
        n = new.size
        order = np.argsort(new)

        def remap(v):
            return np.where(v >= 0, new[np.maximum(v, 0)], -1)[order]

        left, right = remap(a["left"]), remap(a["right"])
        sums = a["sums"][order]
        if aux is None:   # a chart's tree (NGBoost): no family, no Gain^ent
            gain_ent = np.full(n, np.nan)
        else:
            A = np.asarray(aux)[order]
            W, S = (sums[:, 0], A) if unit else (A[:, 0], A[:, 2:])
            gain_ent = _entropy_gains(family, W, S, left, right, n, W_root)
        gain = a["gain"][order]
        record = record_from_sums(self.binner, sums, self.o, self.l2, left, right, a["feature"][order],
                                  a["bin"][order], a["feature_gains"][order], depth=a["depth"][order], gain=gain,
                                  gain_reg=gain, gain_ent=gain_ent, missing_left=a["missing_left"][order])
        params = {"max_depth": self.max_depth, "min_weight_leaf": self.min_w, "min_samples_leaf": int(self.min_cnt),
                  "l2": self.l2}
        # the training rows' leaves stay on the workers
        return HistTree.from_record(record, self.binner, params, np.empty(0, dtype=np.int64))
