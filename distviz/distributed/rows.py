"""The Dask row store: a fit's rows on the workers' shards, driven by the one engine loop.

``distviz.boosting.engine.BoostingEngine.run`` drives the rounds over a ``distviz.boosting.rows.RowStore``;
:class:`DaskShardRows` is that store for rows held by the shard actors of a cluster (``shard.Shard``, reached
through ``boosting._Cluster.run``).  A round's trees grow level by level (``grow.LevelGrower``: the in-memory
split scan on node histograms summed over the shards, one round trip per level for all of the round's trees);
the step, the NLL sums, the next targets and the next root histograms come back in one more trip.  The client
never holds a row: callbacks see the iterate of the display rows only (``iterate``).

Two kinds of round, as the in-memory estimators grow them:

- :class:`SharedTreeRows` (``DistributionalBoosting``): one tree with K outputs per round, the law's fused
  update on the shards (``shard.shard_step``) and the partition entropy from the leaves' sums;
- :class:`ChartRows` (``NGB`` / ``GB``): one single-output tree per chart parameter (``ngb_shard``); the round's
  output f stays on the shards, which return the NLL sums at F + s f for a batch of scales s = 2^k, k = -4..2,
  in the same trip (``_scale``): the engine's line search (``rounds.line_search``) runs on that table and asks
  for more scales only when its rule leaves the batch (the scales above it up to 2^9, the rule's cap, or the
  next 8 below).
"""

from __future__ import annotations

import numpy as np

from distviz.boosting.engine import Round
from distviz.boosting.rounds import line_search as _line_search
from distviz.boosting.rows import RowStore
from distviz.errors import ConfigError

from . import ngb_shard
from .grow import LevelGrower
from .shard import shard_level, shard_step, valid_step

__all__ = ["ChartRows", "DaskShardRows", "SharedTreeRows"]

# the first batch of line-search scales 2^k (see the module doc); ngboost's rule doubles at most up to 2^9
_K_HIGH, _K_LOW, _K_CAP, _K_MORE = 2, -4, 9, 8


class DaskShardRows(RowStore):
    """Training (and validation) shards on a cluster; the round's trees grow from their summed histograms."""

    def __init__(self, engine, cl, shards, where, vshards, vwhere, binner, init, W, Wv, n, unit, o, C):
        """cl: the fit's ``_Cluster``; init: the start F_0 (K,); W / Wv: the training / validation weight sums;
        n: training rows; unit: no weights; o, C: the histograms' leading and total columns."""
        self.eng, self.law, self.cl = engine, engine.law, cl
        self.shards, self.where, self.vshards, self.vwhere = shards, where, vshards, vwhere
        self.binner, self.init, self.W, self.Wv, self.n, self.unit, self.o, self.C = binner, init, W, Wv, n, unit, o, C
        self.nb_max = int(binner.n_hist_bins_)
        tp = engine.tree_params
        # the in-memory HistTree's defaults where the estimator sets none
        self.grow_params = (int(tp["max_depth"]), float(tp.get("min_weight_leaf", 1e-3)),
                            float(tp.get("min_samples_leaf", 1)), float(tp.get("l2", 0.0)))
        self.out: dict = {}

    def run(self, fn, *args):
        """fn(shard, *args) on every training shard, summed."""
        return self.cl.run(fn, self.shards, self.where, *args)

    def run_valid(self, fn, *args):
        """fn(shard, *args) on every validation shard, summed."""
        return self.cl.run(fn, self.vshards, self.vwhere, *args)

    def grow_levels(self, hists, K: int):
        """One LevelGrower per root histogram (K outputs each), grown together: every level of all trees in one
        round trip.  Returns (growers, the last level's splits of each tree)."""
        depth, min_w, min_cnt, l2 = self.grow_params
        growers = [LevelGrower(h, self.binner, self.o, K, depth, min_w, min_cnt, l2) for h in hists]
        while True:
            chosen = [g.choose() for g in growers]
            splits, build = [c[0] for c in chosen], [c[1] for c in chosen]
            if not any(build):
                return growers, splits
            h = self.run(shard_level, splits, build, self.nb_max, self.C, self.unit)["hist"]
            i = 0
            for g, b in zip(growers, build):
                g.receive(h[i:i + len(b)])
                i += len(b)

    def line_search(self, rule, loss0, tol):
        raise ConfigError("a fit on a dask array has no line search for this law; pass line_search=False.")

    def iterate(self):
        return np.zeros((0, self.law.dim))

    def release(self, rnd):
        pass

    def finish(self):
        return {"F_train": None, "F_valid": None}


class SharedTreeRows(DaskShardRows):
    """DistributionalBoosting's rounds: one K-output tree, the law's update on the shards (``shard.shard_step``)."""

    def __init__(self, *args, family, H_root, n_display):
        """family: the law's family (Gain^ent of the splits); H_root: the entropy of the unsplit partition;
        n_display: the number of display rows whose iterate the shards report."""
        super().__init__(*args)
        self.family, self.H_root, self.m = family, H_root, int(n_display)

    def start(self):
        law, lr = self.law, self.eng.learning_rate
        self.out = self.run(shard_step, law, None, self.init, lr, self.eng.n_rounds > 0, self.nb_max, self.C,
                            self.unit)
        self.disp = _disp(self.out, self.m, law.dim)
        vl0 = None
        if self.vshards is not None:
            vl0 = self.run_valid(valid_step, law, None, None, 0.0, self.init)["stats"][0] / self.Wv
        return self.init, self.out["stats"][0] / self.W, int(self.out["stats"][1]), vl0, None

    def targets(self, cols):
        return int(self.out["stats"][2])   # the targets were formed on the shards with the last step

    def grow(self, cols):
        growers, self.splits = self.grow_levels([self.out["hist"][0]], self.law.dim)
        return growers, [np.arange(self.law.dim)]

    def update(self, trees, groups, mult, last):
        law, g = self.law, trees[0]
        tree = dict(g.arrays(), splits=self.splits[0], mult=mult, miss_code=int(self.binner.missing_bin_))
        self.out = out = self.run(shard_step, law, tree, None, self.eng.learning_rate, not last, self.nb_max,
                                  self.C, self.unit)
        vl = None
        if self.vshards is not None:
            vl = self.run_valid(valid_step, law, [tree], groups, mult, None)["stats"][0] / self.Wv
        t = g.tree(out["aux"], self.family, self.W if not self.unit else float(self.n), self.unit)
        A = np.asarray(out["aux"])[np.argsort(g.best_first_order())]
        Wn, Sn = (t.nodes_.weight, A) if self.unit else (A[:, 0], A[:, 2:])
        self.entropy = _entropy(law, t, self.H_root, Wn, Sn)
        return Round([t], groups, mult), out["stats"][0] / self.W, vl, int(out["stats"][1]), False

    def commit(self, rnd):
        self.disp = _disp(self.out, self.m, self.law.dim)
        return self.entropy, None

    def iterate(self):
        return self.disp


class ChartRows(DaskShardRows):
    """NGBoost's rounds: one single-output tree per chart parameter, f kept on the shards for the line search."""

    def start(self):
        law, lr = self.law, self.eng.learning_rate
        self.out = self.run(ngb_shard.start, law, self.init, lr, self.eng.n_rounds > 0, self.nb_max, self.C, self.unit)
        vl0 = None
        if self.vshards is not None:
            vl0 = self.run_valid(valid_step, law, None, None, 0.0, self.init)["stats"][0] / self.Wv
        return self.init, self.out["stats"][0] / self.W, 0, vl0, None

    def targets(self, cols):
        return int(self.out["stats"][1])

    def grow(self, cols):
        law = self.law
        growers, last = self.grow_levels(self.out["hist"], 1)
        self.trees = [dict(g.arrays(), splits=s) for g, s in zip(growers, last)]
        searched = self.eng.line_search and self.eng.line_search_rule == "ngboost"
        scales = 2.0 ** np.arange(_K_LOW, _K_HIGH + 1) if searched else np.zeros(0)
        self.found = self.run(ngb_shard.search, law, self.trees, scales)   # f (n, K) stays on the shards
        return growers, [np.asarray([k]) for k in range(law.dim)]

    def line_search(self, rule, loss0, tol):
        if rule != "ngboost":
            return super().line_search(rule, loss0, tol)
        return _scale(self.cl, self.shards, self.where, self.law, self.found, self.W, self.n, loss0, tol)

    def update(self, trees, groups, mult, last):
        law = self.law
        self.out = self.run(ngb_shard.step, law, mult, self.eng.learning_rate, not last, self.nb_max, self.C,
                            self.unit)
        vl = None
        if self.vshards is not None:
            vtrees = [dict(t, miss_code=int(self.binner.missing_bin_)) for t in self.trees]
            vl = self.run_valid(valid_step, law, vtrees, groups, mult, None)["stats"][0] / self.Wv
        rnd = Round([g.tree(None, None, self.W, self.unit) for g in trees], groups, mult)
        return rnd, self.out["stats"][0] / self.W, vl, 0, False

    def commit(self, rnd):
        return np.nan, None


def _scale(cl, shards, where, law, search, W, n, loss0, tol):
    """The engine's line search (``rounds.line_search``, ngboost's rule) on the workers' NLL sums (search: the
    first batch's result); a scale the batch lacks costs one more trip (up to the cap, or the next 8 below)."""
    table = dict(zip(2.0 ** np.arange(_K_LOW, _K_HIGH + 1), search["ls"] / W))
    norm = float(search["norm"][0]) / n

    class _Missing(Exception):
        pass

    def loss_at(s):
        if s not in table:
            raise _Missing(s)
        return table[s]

    while True:
        try:
            return _line_search("ngboost", loss_at, loss0, norm, tol)
        except _Missing as e:   # the rule left the table: one more trip for the scales up to the cap, or 8 below
            k = int(np.log2(e.args[0]))
            more = 2.0 ** (np.arange(k, _K_CAP + 1) if e.args[0] > max(table) else np.arange(k - _K_MORE + 1, k + 1))
            table.update(zip(more, cl.run(ngb_shard.more_scales, shards, where, law, more)["ls"] / W))


def _entropy(law, tree, H_root, W, S):
    """H = H(root) - sum of Gain^ent, or -sum_J W_J/W A*(eta*_J) from the leaf sums (the law's own rule)."""
    from distviz.boosting.laws import partition_entropy
    nodes = tree.nodes_
    ge = nodes.gain_ent[~nodes.is_leaf]
    if np.isfinite(H_root) and np.isfinite(ge).all():
        return float(H_root - ge.sum())
    leaves = np.flatnonzero(nodes.is_leaf)
    return partition_entropy(law.family, np.arange(leaves.size), S[leaves] / W[leaves, None], W[leaves])


def _disp(out, m, K):
    """The iterate on the display rows, in display order, from the shards' (positions, rows) pieces."""
    F = np.zeros((m, K))
    for pos, vals in out["disp"]:
        F[pos[:, 0]] = vals
    return F
