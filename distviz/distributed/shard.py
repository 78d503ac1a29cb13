"""Worker side: one chunk of training (or validation) rows, binned once and kept in a worker's memory.

A :class:`Shard` holds a chunk's bin codes, its prepared targets (``law.prepare``: T(y) and log h(y),
or y for a chart), its weights, the current iterate F and, per tree grown this round (one per
parameter group: all K outputs for ``DistributionalBoosting``, one per parameter for NGBoost), the
tree's row statistics G and row partition (:class:`Part`: ``rows`` with a segment
``rows[start[c]:stop[c]]`` per node, as in ``distviz.trees.grower``).  The functions below are the
steps the client runs on the worker that holds the shard (through its ``ShardSet`` actor, see
``boosting._Cluster.run``); they change the shard in place and return only small arrays (node
histograms, sums, the display rows), never the chunk's rows.  The histogram and partition
kernels are the in-memory path's own (``distviz.trees.histogram.hist_serial``,
``distviz.trees.splitting.partition``).

Memory per row (Poisson MGD, unit weights: 28 bytes and the p bin codes): T(y), F and the
targets G as float64, the partition as int32.  The partition scratch and the leaf labels (int32) and
the fused Poisson pass's new iterate (float64) are buffers of the worker thread
(:func:`scratch`), reused by every shard and every call instead of held per shard, and log h(y) is
kept as its sum (it enters only the NLL sums).
"""

from __future__ import annotations

import threading

import numpy as np
from numba import config, get_num_threads, njit, set_num_threads

from distviz.errors import DataError
from distviz.trees.grower import node_sums
from distviz.trees.histogram import hist_indexed, hist_root_targets, hist_serial, lead_hist, row_stats
from distviz.trees.predictor import apply_binned
from distviz.trees.splitting import assign_children, partition
from distviz.validation import check_sample_weight, check_X, check_y_resolution

__all__ = [
    "Part",
    "Shard",
    "ShardSet",
    "check_chunk",
    "display_rows",
    "finite_targets",
    "label_leaves",
    "make_shard",
    "merge",
    "reset_trees",
    "scratch",
    "shard_level",
    "shard_stats",
    "shard_step",
    "valid_step",
]

#: a worker runs one step at a time (``run_shards`` holds it), whichever thread asks: the dask actor's, a
#: channel's (``channel.serve``) or a task's; so the scratch buffers below are the process's, not a thread's
_STEP_LOCK = threading.Lock()
_SCRATCH: dict = {}
#: the numba threads of a step on this worker: its dask thread count (``make_shard`` sets it), as LightGBM's
#: num_threads follows the worker's; set_num_threads is per calling thread, so every step sets it
_THREADS: list = []


def _worker_threads() -> int:
    """The calling dask worker's thread count, at most numba's; numba's count outside a worker."""
    from distributed import get_worker
    try:
        n = int(get_worker().state.nthreads)
    except ValueError:   # not in a worker
        n = get_num_threads()
    return max(1, min(n, int(config.NUMBA_NUM_THREADS)))  # type: ignore[attr-defined]


def scratch(name: str, n: int, dtype=np.int32) -> np.ndarray:
    """This worker's buffer `name` of n entries (int32 unless dtype says), kept between steps (grown, never shrunk);
    only for a step under ``_STEP_LOCK``."""
    a = _SCRATCH.get(name)
    if a is None or a.size < n or a.dtype != dtype:
        a = _SCRATCH[name] = np.empty(n, dtype=dtype)
    return a[:n]


@njit(cache=True)
def _iota(rows):
    """rows[i] = i in place (the root's partition, with no temporary array)."""
    for i in range(rows.shape[0]):
        rows[i] = i


class Part:
    """One tree's state on a shard: row statistics G and the row partition (rows, start / stop per node)."""

    __slots__ = ("G", "rows", "start", "stop")

    def __init__(self, n):
        """An unsplit root over n rows (no statistics yet)."""
        self.G = None
        self.rows = np.empty(n, dtype=np.int32)
        _iota(self.rows)
        self.start, self.stop = {0: 0}, {0: n}

    def reset(self, G):
        """Start a new tree on row statistics G: every row back in the root."""
        self.G = G
        _iota(self.rows)
        self.start, self.stop = {0: 0}, {0: self.rows.shape[0]}


class Shard:
    """One chunk of rows on a worker: bin codes, prepared targets, weights, iterate and one Part per tree."""

    def __init__(self, codes_T, data, w, disp, n_trees=1):
        """codes_T (p, n) bin codes; data: law.prepare(y, w); w (n,) or None; disp: local rows to report each round."""
        self.codes_T = codes_T
        self.data = data
        self.w = w
        self.disp = disp
        n = codes_T.shape[1]
        self.n = n
        self.F = None
        self.f = None      # NGBoost: the round's tree output (n, K) between the line search and the step
        self.log_h_sum = 0.0   # sum w log h(y) of the rows when make_shard dropped the per-row log h (see there)
        self.parts = [Part(n) for _ in range(int(n_trees))]
        self.lead = None   # the root histogram's leading columns (counts or [w, 1{w>0}]): fixed, built once
        self.disp_X = self.disp_y = None   # the display rows' raw features and targets (make_shard)

    def nbytes(self) -> dict:
        """Bytes held: the bin codes and the per-row arrays (prepared targets, weights, F, f, G, partitions)."""
        d = self.data
        arrays = list(d.values()) if isinstance(d, dict) else [d.T, d.log_h]
        arrays += [self.w, self.F, self.f]
        for p in self.parts:
            arrays += [p.rows, p.G]
        seen, per_row = set(), 0
        for a in arrays:
            if isinstance(a, np.ndarray) and a.ndim and a.shape[0] == self.n and id(a) not in seen:
                seen.add(id(a))
                per_row += a.nbytes
        return {"codes": int(self.codes_T.nbytes), "rows": int(per_row)}


def make_shard(X, y, w, binner, law, disp, check, n_trees=1, row0=0):
    """Validate a chunk, bin it with the fitted binner and prepare its targets: the Shard that stays on the worker.

    check(X, y, w) validates the raw chunk (the estimator's own checks) and returns (X, y, w); its
    sentence names rows of the chunk, so the chunk's first row row0 in the whole array is added to it.
    """
    _THREADS[:] = [_worker_threads()]
    try:
        X, y, w = check(X, y, w)
    except DataError as exc:
        n = int(np.shape(X)[0]) if np.ndim(X) else 0
        raise DataError(f"In rows {row0:,}-{row0 + n - 1:,} of the dask array (the indices that follow count within "
                        f"these rows): {exc}") from None
    codes_T = binner.transform(X).codes_T
    disp = np.asarray(disp, dtype=np.int64).reshape(-1, 2)
    # the raw features and targets of the display rows, for the client's trace: a re-read of X is then not needed
    disp_X, disp_y = np.array(X[disp[:, 1]], dtype=np.float64), np.array(np.asarray(y)[disp[:, 1]])
    del X
    shard = Shard(codes_T, law.prepare(y, w), w, disp, n_trees)
    shard.disp_X, shard.disp_y = disp_X, disp_y
    log_h = getattr(shard.data, "log_h", None)
    if log_h is not None and log_h.ndim == 1 and log_h.size == shard.n:
        # log h(y) enters only the sums the client receives: keep its (weighted) sum, not 8 bytes a row
        shard.log_h_sum = _wsum(shard, log_h)
        shard.data.log_h = np.zeros(1)
    return shard


def _wsum(shard, v) -> float:
    """sum_i w_i v_i over the shard's rows (the plain sum without weights)."""
    return float(v.sum()) if shard.w is None else float(np.dot(shard.w, v))


def display_rows(shard):
    """{"disp": [(positions in the display subset, raw X rows, y)]} of the shard's display rows (lists concatenate
    in ``merge``)."""
    return {"disp": [(shard.disp[:, 0], shard.disp_X, shard.disp_y)]}


def shard_stats(shard):
    """[sum w, sum w T(y) (d,)] of the shard (w = 1 without weights), for the weighted start F_0."""
    T = shard.data.T
    if shard.w is None:
        return np.concatenate(([float(shard.n)], T.sum(axis=0)))
    return np.concatenate(([shard.w.sum()], shard.w @ T))


def _hist(shard, part, node, nb_max, C, unit, whole):
    """Histogram (p, nb_max, C) of one node's rows with the in-memory kernels (whole: the root, rows in order).

    One output below the root: the features in pairs, read by row index (``histogram.hist_indexed``,
    as the in-memory grower; the same sums as ``hist_serial``'s).
    """
    out = np.empty((shard.codes_T.shape[0], nb_max, C))
    if not whole and C == (2 if unit else 3):
        hist_indexed(shard.codes_T, part.rows, part.start[node], part.stop[node], part.G, 0 if unit else 2, unit, out, 1)
    else:
        hist_serial(shard.codes_T, part.rows, part.start[node], part.stop[node], part.G, 0 if whole else 1, unit, out)
    return out


def shard_level(shard, splits, build, nb_max, C, unit):
    """Partition the rows of the nodes split at this level, then return the histograms of the nodes in `build`.

    splits[t]: rows (node, feature, bin, left, right, code) of the client's chosen splits of tree t: bins
    0..bin go left, and the missing-value code `code` too unless it is -1; build[t]: the nodes of tree t
    to histogram.  Returns {"hist": (total nodes to build, p, nb_max, C)}, tree by tree.
    """
    tmp = scratch("tmp", shard.n)
    hists = []
    for part, sp, bl in zip(shard.parts, splits, build):
        _apply_splits(shard, part, sp, tmp)
        hists += [_hist(shard, part, int(c), nb_max, C, unit, False) for c in bl]
    out = np.stack(hists) if hists else np.empty((0, shard.codes_T.shape[0], nb_max, C))
    return {"hist": out}


def _apply_splits(shard, part, splits, tmp):
    for node, f, b, L, R, mcode in np.asarray(splits, dtype=np.int64).reshape(-1, 6):
        s, e = part.start[int(node)], part.stop[int(node)]
        mid = partition(shard.codes_T[f], part.rows, s, e, int(b), tmp, int(mcode))
        part.start[int(L)], part.stop[int(L)] = s, mid
        part.start[int(R)], part.stop[int(R)] = mid, e


def label_leaves(shard, part, tree):
    """Every row's leaf (provisional node id) in this worker thread's int32 buffer: leaves of earlier levels
    from their row segments, the last level's children (tree["splits"]) labelled without a partition."""
    leaf = scratch("leaf", shard.n)
    left = tree["left"]
    for c in range(left.shape[0]):
        if left[c] < 0 and c in part.start:
            leaf[part.rows[part.start[c]:part.stop[c]]] = c
    for node, f, b, L, R, mcode in np.asarray(tree["splits"], dtype=np.int64).reshape(-1, 6):
        assign_children(shard.codes_T[f], part.rows, part.start[int(node)], part.stop[int(node)], int(b),
                        int(L), int(R), leaf, int(mcode))
    return leaf


def reset_trees(shard, Gs, nb_max, C, unit):
    """Start the next round's trees on row statistics Gs (one per tree): (n_trees, p, nb_max, C) root histograms.

    The leading columns (row counts, or [w, 1{w>0}]) do not change between rounds: they are histogrammed
    once per shard (``histogram.lead_hist``) and only the target columns are summed each round
    (``histogram.hist_root_targets``, bit-identical to the full pass, as in the in-memory grower).
    """
    p = shard.codes_T.shape[0]
    o = 1 if unit else 2
    if shard.lead is None or shard.lead[0].shape[1] != nb_max:
        w = np.ones(1) if unit else np.ascontiguousarray(shard.w, dtype=np.float64)
        shard.lead = lead_hist(shard.codes_T, w, o, nb_max)
    out = np.empty((len(Gs), p, nb_max, C))
    tot = np.empty(C - o)
    for t, (part, G) in enumerate(zip(shard.parts, Gs)):
        part.reset(G)
        hist_root_targets(shard.codes_T, G, 0 if unit else 2, o, C - o, shard.lead[0], out[t], tot, 0)
    return out


def _fused_mgd(shard, law, leaf, tree, R_out):
    """The M-law's fused row pass on the shard (the kernel of ``laws.MGD.fused_round``): F += mult * value[leaf],
    the next targets T(y) - F into R_out and the shard's sum w NLL, in one pass; None where it does not apply
    (no fused kernel for the family, K > 1) or where a row leaves the mean domain (the caller then takes the
    unfused update, which projects those rows).  F is written only on success."""
    kern = getattr(law.family, "fused_mgd_round", None)
    T = shard.data.T
    if kern is None or not law.supports_fused_round or shard.F.shape[1] != 1 or T.shape[1] != 1:
        return None
    n = shard.n
    F_new = scratch("F_new", n, np.float64)
    weighted = shard.w is not None
    w = np.ascontiguousarray(shard.w, dtype=np.float64) if weighted else np.ones(1)
    value = np.ascontiguousarray(tree["value"][:, 0], dtype=np.float64)
    n_bad, s_A, s_TlogF = kern(shard.F.reshape(-1), leaf, value, float(tree["mult"]), T.reshape(-1), w, weighted,
                               F_new, R_out.reshape(-1))
    if n_bad:
        return None
    # sum w (A(eta) - eta T(y)) - sum w log h(y), A(eta) = eta* for the Poisson kernel (see the kernel's doc)
    shard.F[:, 0] = F_new
    return float(s_A - s_TlogF) - shard.log_h_sum


def shard_step(shard, law, tree, F0, learning_rate, next_hist, nb_max, C, unit):
    """End a round on the shard: apply the last splits, label leaves, update F, and prepare the next round.

    tree: None for the start (F = F_0), else a dict with ``splits`` (the last level's splits),
    ``left``, ``right``, ``feature``, ``bin``, ``missing_left`` (provisional node arrays), ``miss_code``,
    ``value`` (n_nodes, K) and ``mult`` (learning rate times the line-search scale).  Then the law's per-row update, loss and
    targets (``distviz.boosting.laws``) run on the shard's rows, and, when next_hist, the next tree's
    root histogram is built.  Returns the sums the client needs: ``stats`` = [sum w NLL, rows projected,
    rows with non-finite targets], ``aux`` (node sums of [w, 1{w>0}, w T] or [1, T]), ``hist`` and
    ``disp`` (the iterate on the display rows).
    """
    out = {}
    n, K = shard.n, law.dim
    lsum = None
    proj = np.zeros(0, dtype=bool)
    if tree is None:
        F, proj = law.update(np.tile(F0, (n, 1)), np.zeros((n, K)))
    else:
        left = tree["left"]
        part = shard.parts[0]
        leaf = label_leaves(shard, part, tree)
        aux = shard.data.T if shard.w is None else row_stats(shard.data.T, shard.w, 2)
        out["aux"] = node_sums(leaf, aux, left, tree["right"], left.shape[0])
        G, part.G = part.G, None   # this round's targets are done with: free them before the next ones
        R_buf = None
        if next_hist and K == 1 and law.supports_fused_round:
            # the next targets go into this round's buffer where it has their shape (unit weights: G is R)
            R_buf = G if unit and G is not None and G.shape == (n, 1) and G.flags.c_contiguous else np.empty((n, 1))
            lsum = _fused_mgd(shard, law, leaf, tree, R_buf)
        del G
        if lsum is None:
            F, proj = law.update(shard.F, tree["mult"] * tree["value"][leaf])
        else:
            F = shard.F
    shard.F = F
    if lsum is None:
        lsum = _wsum(shard, law.loss(F, shard.data)) - shard.log_h_sum
        R_buf = None
    out["disp"] = [(shard.disp, F[shard.disp[:, 1]] if shard.disp.size else np.zeros((0, K)))]
    n_bad = 0
    if next_hist:
        if R_buf is not None:   # the fused pass wrote T(y) - F: finite, since F is (n_bad == 0)
            R = R_buf
        else:
            R, n_bad = finite_targets(law, F, shard.data, learning_rate)
        out["hist"] = reset_trees(shard, [R if unit else row_stats(R, shard.w, 2)], nb_max, C, unit)
    out["stats"] = np.array([lsum, float(np.count_nonzero(proj)), float(n_bad)])
    return out


def finite_targets(law, F, data, learning_rate):
    """(the round's finite targets as a C-contiguous (n, K) array, rows that had a non-finite one): the engine's own
    rule, ``law.targets_checked`` (a row whose target overflowed gets no update this round)."""
    R, n_bad, _ = law.targets_checked(F, data, learning_rate)
    return np.ascontiguousarray(R), n_bad


def valid_step(shard, law, trees, groups, mult, F0):
    """Validation rows: F = F0 (trees None), else F updated by mult * the round's trees applied to their bin codes
    (tree t feeds the output columns groups[t]); returns {"stats": [sum w NLL]}."""
    n, K = shard.n, law.dim
    if trees is None:
        F, _ = law.update(np.tile(F0, (n, 1)), np.zeros((n, K)))
    else:
        f = np.zeros((n, K))
        for t, g in zip(trees, groups):
            leaf = apply_binned(shard.codes_T, t["feature"], t["bin"], t["left"], t["right"], t["missing_left"],
                                t["miss_code"])
            f[:, g] = t["value"][leaf]
        F, _ = law.update(shard.F, mult * f)
    shard.F = F
    return {"stats": np.array([_wsum(shard, law.loss(F, shard.data)) - shard.log_h_sum])}


def merge(a, b):
    """Sum two task results key by key (arrays add; the display lists concatenate): one step of the tree reduction."""
    if not isinstance(a, dict):
        return a + b
    return {k: a[k] + b[k] for k in a}


def run_shards(fn, shards, *args):
    """fn(shard, *args) on each shard of this worker, the results summed in chunk order (one task per worker)."""
    out = None
    with _STEP_LOCK:
        if _THREADS:
            set_num_threads(_THREADS[0])
        for s in shards:
            r = fn(s, *args)
            out = r if out is None else merge(out, r)
    return out


def check_chunk(fam, X, y, w):
    """The in-memory fit's checks on one chunk: numeric X (NaN allowed), y in the family's support, valid weights."""
    X = check_X(X, allow_nan=True, model="this fit")   # NaN: a missing value, routed as in memory
    y = fam.check_y(y)
    check_y_resolution(getattr(fam, "name", ""), y)
    return X, y, check_sample_weight(w, X.shape[0])


class ShardSet:
    """Dask Actor on one worker holding that worker's shards; ``run`` is one step over all of them."""

    def __init__(self, *shards):
        """shards: the Shard objects of this worker (dask passes the local results, no copy)."""
        self.shards = list(shards)

    def run(self, fn, *args):
        """fn(shard, *args) on each shard, summed in chunk order (``shard.run_shards``)."""
        return run_shards(fn, self.shards, *args)

    def open_channel(self, host, token):
        """Serve this worker's steps on a direct socket at `host` for the client holding `token`
        (``distviz.distributed.channel``); returns (host, port)."""
        from .channel import serve
        return serve(lambda fn, *args: run_shards(fn, self.shards, *args), host, token)
