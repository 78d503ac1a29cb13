"""Worker side: one chunk of training (or validation) rows, binned once and kept in a worker's memory.

A :class:`Shard` holds a chunk's bin codes, its T(y) and log h(y) (``law.prepare``), its weights, the
current iterate F and targets R, and the row partition of the tree being grown (``rows`` with a segment
``rows[start[c]:stop[c]]`` per node, as in ``distviz.trees.grower``).  The functions below are the tasks
the client submits, pinned to the worker that holds the shard; they change the shard in place and
return only small arrays (node histograms, sums), never rows.  The histogram and partition kernels are
the in-memory path's own (``distviz.trees.histogram.hist_serial``, ``distviz.trees.splitting.partition``).
"""

from __future__ import annotations

import numpy as np

from distviz.trees.grower import node_sums
from distviz.trees.histogram import hist_serial, row_stats
from distviz.trees.predictor import apply_binned
from distviz.trees.splitting import assign_children, partition

__all__ = ["Shard", "make_shard", "merge", "shard_level", "shard_stats", "shard_step", "valid_step"]


class Shard:
    """One chunk of rows on a worker: bin codes, T(y), weights, iterate, targets and the current row partition."""

    def __init__(self, codes_T, data, w, disp):
        """codes_T (p, n) bin codes; data: law.prepare(y, w); w (n,) or None; disp: local rows to report each round."""
        self.codes_T = codes_T
        self.data = data
        self.w = w
        self.disp = disp
        n = codes_T.shape[1]
        self.n = n
        self.F = None
        self.R = None
        self.G = None
        self.n_bad = 0
        self.rows = np.arange(n, dtype=np.int32)
        self.tmp = np.empty(n, dtype=np.int32)
        self.leaf = np.empty(n, dtype=np.int64)
        self.start = {0: 0}
        self.stop = {0: n}

    def nbytes(self) -> dict:
        """Bytes held: the bin codes and the per-row state (T, log h, weights, F, R, partition)."""
        per_row = sum(a.nbytes for a in (self.data.T, self.data.log_h, self.rows, self.tmp, self.leaf)
                      if a is not None)
        for a in (self.w, self.F, self.R):
            per_row += 0 if a is None else a.nbytes
        if self.G is not None and self.G is not self.R:
            per_row += self.G.nbytes
        return {"codes": int(self.codes_T.nbytes), "rows": int(per_row)}


def make_shard(X, y, w, binner, law, disp, check):
    """Validate a chunk, bin it with the fitted binner and prepare T(y): the Shard that stays on the worker.

    check(X, y, w) validates the raw chunk (the estimator's own checks) and returns (X, y, w).
    """
    X, y, w = check(X, y, w)
    codes_T = binner.transform(X).codes_T
    del X
    return Shard(codes_T, law.prepare(y, w), w, np.asarray(disp, dtype=np.int64))


def shard_stats(shard):
    """[sum w, sum w T(y) (d,)] of the shard (w = 1 without weights), for the weighted start F_0."""
    T = shard.data.T
    if shard.w is None:
        return np.concatenate(([float(shard.n)], T.sum(axis=0)))
    return np.concatenate(([shard.w.sum()], shard.w @ T))


def _hist(shard, node, nb_max, C, unit, whole):
    """Histogram (p, nb_max, C) of one node's rows with the in-memory kernel (whole: the root, rows in order)."""
    out = np.empty((shard.codes_T.shape[0], nb_max, C))
    s, e = shard.start[node], shard.stop[node]
    hist_serial(shard.codes_T, shard.rows, s, e, shard.G, 0 if whole else 1, unit, out)
    return out


def shard_level(shard, splits, build, nb_max, C, unit):
    """Partition the rows of the nodes split at this level, then return the histograms of the nodes in `build`.

    splits: rows (node, feature, bin, left, right, code) of the client's chosen splits: bins 0..bin go left,
    and the missing-value code `code` too unless it is -1.
    Returns {"hist": (len(build), p, nb_max, C)}.
    """
    _apply_splits(shard, splits)
    out = np.empty((len(build), shard.codes_T.shape[0], nb_max, C))
    for i, c in enumerate(build):
        out[i] = _hist(shard, int(c), nb_max, C, unit, False)
    return {"hist": out}


def _apply_splits(shard, splits):
    for node, f, b, L, R, mcode in np.asarray(splits, dtype=np.int64).reshape(-1, 6):
        s, e = shard.start[int(node)], shard.stop[int(node)]
        mid = partition(shard.codes_T[f], shard.rows, s, e, int(b), shard.tmp, int(mcode))
        shard.start[int(L)], shard.stop[int(L)] = s, mid
        shard.start[int(R)], shard.stop[int(R)] = mid, e


def shard_step(shard, law, tree, F0, learning_rate, next_hist, nb_max, C, unit):
    """End a round on the shard: apply the last splits, label leaves, update F, and prepare the next round.

    tree: None for the start (F = F_0), else a dict with ``splits`` (the last level's splits),
    ``left``, ``right``, ``feature``, ``bin``, ``missing_left`` (provisional node arrays), ``miss_code``, ``value`` (n_nodes, K) and
    ``mult`` (learning rate times the line-search scale).  Then the law's per-row update, loss and
    targets (``distviz.boosting.laws``) run on the shard's rows, and, when next_hist, the next tree's
    root histogram is built.  Returns the sums the client needs: ``stats`` = [sum w NLL, rows projected,
    rows with non-finite targets], ``aux`` (node sums of [w, 1{w>0}, w T] or [1, T]), ``hist`` and
    ``disp`` (the iterate on the display rows).
    """
    out = {}
    n, K = shard.n, law.dim
    if tree is None:
        F, proj = law.update(np.tile(F0, (n, 1)), np.zeros((n, K)))
    else:
        leaf = shard.leaf
        left = tree["left"]
        for c in range(left.shape[0]):   # leaves of earlier levels: their row segments
            if left[c] < 0 and c in shard.start:
                leaf[shard.rows[shard.start[c]:shard.stop[c]]] = c
        for node, f, b, L, R, mcode in np.asarray(tree["splits"], dtype=np.int64).reshape(-1, 6):
            # the last level's children are leaves: label their rows without partitioning (as the grower does)
            assign_children(shard.codes_T[f], shard.rows, shard.start[int(node)], shard.stop[int(node)], int(b),
                            int(L), int(R), leaf, int(mcode))
        aux = shard.data.T if shard.w is None else row_stats(shard.data.T, shard.w, 2)
        out["aux"] = node_sums(leaf, aux, left, tree["right"], left.shape[0])
        F, proj = law.update(shard.F, tree["mult"] * tree["value"][leaf])
    shard.F = F
    loss = law.loss(F, shard.data)
    lsum = float(loss.sum()) if shard.w is None else float(np.dot(shard.w, loss))
    out["disp"] = [(shard.disp, F[shard.disp[:, 1]] if shard.disp.size else np.zeros((0, K)))]
    n_bad = 0
    if next_hist:
        R = law.targets(F, shard.data, learning_rate)
        finite = np.isfinite(R)
        if not finite.all():   # a row whose target overflowed gets no update this round (as in the engine)
            n_bad = int(np.count_nonzero(~finite.all(axis=1)))
            R = np.where(finite, R, 0.0)
        shard.R = np.ascontiguousarray(R)
        shard.G = shard.R if unit else row_stats(shard.R, shard.w, 2)
        shard.rows[:] = np.arange(n, dtype=np.int32)
        shard.start, shard.stop = {0: 0}, {0: n}
        out["hist"] = _hist(shard, 0, nb_max, C, unit, True)[None]
    out["stats"] = np.array([lsum, float(np.count_nonzero(proj)), float(n_bad)])
    return out


def valid_step(shard, law, tree, F0):
    """The validation rows' update for a round (the tree applied to their bin codes) and their sum w NLL."""
    n, K = shard.n, law.dim
    if tree is None:
        F, _ = law.update(np.tile(F0, (n, 1)), np.zeros((n, K)))
    else:
        leaf = apply_binned(shard.codes_T, tree["feature"], tree["bin"], tree["left"], tree["right"],
                            tree["missing_left"], tree["miss_code"])
        F, _ = law.update(shard.F, tree["mult"] * tree["value"][leaf])
    shard.F = F
    loss = law.loss(F, shard.data)
    return {"stats": np.array([float(loss.sum()) if shard.w is None else float(np.dot(shard.w, loss))])}


def merge(a, b):
    """Sum two task results key by key (arrays add; the display lists concatenate): one step of the tree reduction."""
    if not isinstance(a, dict):
        return a + b
    return {k: a[k] + b[k] for k in a}



def run_shards(fn, shards, *args):
    """fn(shard, *args) on each shard of this worker, the results summed in chunk order (one task per worker)."""
    out = None
    for s in shards:
        r = fn(s, *args)
        out = r if out is None else merge(out, r)
    return out
