"""``DistributionalBoosting`` fitted on the workers of a dask.distributed cluster; the result is the in-memory model.

What runs where: the workers bin their chunks (with edges from ``sketch``), keep T(y), the weights,
the iterate F and the targets of their rows (``shard.Shard``), build node histograms with the
in-memory numba kernels and apply the law's per-row update, loss and targets
(``distviz.boosting.laws``); the client sums nothing row-sized: it receives each level's histograms
summed over chunks, picks the splits (``grow.LevelGrower``) and keeps the model.  The rounds are the
engine's own loop (``BoostingEngine.run``) over the shards (``rows.SharedTreeRows``).  One tree costs
``max_depth`` round trips (one per level; the next tree's root histogram comes with the last level's
update).  Every chunk is binned on the worker it is pinned to; a worker's shards are then held by a
dask Actor (:class:`ShardSet`), one call per worker and step (:meth:`_Cluster.run`), sent over a direct socket to
the actor's worker (``channel``) where the cluster's comm is plain tcp, else as a dask actor call.  A fit cancels
its futures when it ends or fails (:func:`releases_workers`); a worker lost during the rounds fails it with a
DistvizError that names the worker.
"""

from __future__ import annotations

import contextvars
import functools
from types import SimpleNamespace

import numpy as np

from distviz.errors import ConfigError, DistvizError

from .channel import Channel, endpoint_host, new_token
from .collections import current_client, dask_inputs
from .grow import load_client_kernels
from .preload import ready
from .rows import SharedTreeRows
from .shard import (
    ShardSet,
    check_chunk,
    display_rows,
    make_shard,
    merge,
    run_shards,
    shard_stats,
)
from .sketch import fit_binner
from .split import validation_rows

__all__ = ["fit_distributional"]


#: up to this many workers a step's per-worker sums are gathered and added on the client; beyond, a tree
#: reduction of tasks adds them on the workers (the client then receives one sum)
_GATHER_MAX = 8


class _Cluster:
    """Shard futures pinned to workers, and the submit / tree-reduce / gather pattern of every step."""

    def __init__(self, client=None):
        """The cluster of `client` (None: the current Client); the client's split kernel starts loading meanwhile."""
        self.client = client = current_client() if client is None else client
        load_client_kernels()
        # the scheduler's own list (one RPC), not client.scheduler_info(): dask refreshes that cache in the
        # background with totals only, and a refresh landing between its fetch and its return gave no workers
        self.workers = sorted(client.nthreads())
        if not self.workers:
            raise ConfigError("the dask cluster has no workers; start at least one with 'dask worker ADDRESS'.")
        # numba cache upkeep on every worker before its first kernel (importing distviz.trees does none), or the
        # end of the kernels' loading where the worker runs the preload (``preload``)
        client.run(ready)
        self._actor_sets: dict = {}
        self._channels: list = []   # every channel this fit opened: closed by close()
        self._owned: list = []   # every future this fit made (shards, actors): cancelled by close()
        opened = _OPEN.get()
        if opened is not None:
            opened.append(self)

    def shards(self, X, y, w, binner, law, disp, check, n_trees=1):
        """One Shard future per row chunk (n_trees: trees grown per round), chunk i on worker i mod n_workers
        (the chunk is computed there)."""
        import dask
        # unoptimised graphs: every compute call then sends the same task for the same key (no fused renames)
        xs, ys = X.to_delayed(optimize_graph=False).ravel(), y.to_delayed(optimize_graph=False).ravel()
        ws = [None] * len(xs) if w is None else w.to_delayed(optimize_graph=False).ravel()
        from distributed import wait

        futs, where = [], []
        nw = len(self.workers)
        row0 = np.concatenate(([0], np.cumsum(X.chunks[0])))
        for i in range(len(xs)):
            if i and i % nw == 0:
                # one wave of chunks (one per worker) at a time: a worker then holds one raw chunk at once, not
                # all its chunks' raw rows before their binning (the peak of its memory)
                wait(futs[-nw:])
            addr = self.workers[i % nw]
            d = dask.delayed(make_shard, pure=False)(xs[i], ys[i], ws[i], binner, law, disp[i], check, n_trees,
                                                     int(row0[i]))
            futs.append(self.client.compute(d, workers=[addr], allow_other_workers=False, optimize_graph=False))
            where.append(addr)
        self._owned.extend(futs)
        return futs, where

    def run(self, fn, shards, where, *args):
        """fn(shard, *args) on every shard, one call per worker for all its shards, results summed; returns the total.

        Up to ``_GATHER_MAX`` workers the call goes to a dask Actor (:class:`ShardSet`) on each worker that holds
        the worker's shards: the client calls it directly, without a scheduler hop (a step then costs one
        client-worker round trip, not a task's scheduling), over the actor's direct socket where there is one
        (``channel``), and adds the workers' sums here in a fixed pairwise order.  With more workers, one task per
        worker and a tree reduction of tasks add the sums on the workers, so the client receives one sum.
        """
        groups: dict = {}
        for s, a in zip(shards, where):
            groups.setdefault(a, []).append(s)
        if len(groups) <= _GATHER_MAX:
            actors, channels = self._actors(groups)
            if channels is not None:
                for ch in channels:
                    self._ask(ch.send, ch.address, fn, args)
                parts = [self._ask(ch.receive, ch.address) for ch in channels]
            else:
                calls = [actor.run(fn, *args) for actor in actors]
                parts = [self._result(c, a) for c, a in zip(calls, groups)]
            return _pairwise(parts, merge)
        futs = [self.client.submit(run_shards, fn, ss, *args, workers=[a], allow_other_workers=False, pure=False)
                for a, ss in groups.items()]
        return _pairwise(futs, lambda a, b: self.client.submit(merge, a, b, pure=False)).result()

    @staticmethod
    def _result(call, addr):
        """The result of an actor call on the worker at addr; a lost worker (its shards went with it): DistvizError."""
        return _Cluster._ask(call.result, addr)

    @staticmethod
    def _ask(step, addr, *args):
        """step(*args), a call to the worker at addr; a lost worker (its shards went with it): DistvizError."""
        try:
            return step(*args)
        except (OSError, EOFError) as e:   # the connection to the worker closed or could not be opened
            raise DistvizError(f"the dask worker {addr} was lost during the fit and its rows with it; rerun the fit "
                               "(on the workers still running, or after restarting the lost one).") from e

    def _actors(self, groups):
        """One ShardSet actor per worker for these shard futures (created on first use, then reused), and their
        direct channels (``channel.Channel``, one per actor) or None where the cluster's comm keeps dask's calls."""
        key = tuple((a, tuple(f.key for f in ss)) for a, ss in groups.items())
        if key not in self._actor_sets:
            futs = [self.client.submit(ShardSet, *ss, workers=[a], allow_other_workers=False, actor=True, pure=False)
                    for a, ss in groups.items()]
            self._owned.extend(futs)
            actors = self.client.gather(futs)
            self._actor_sets[key] = (actors, self._open_channels(list(groups), actors))
        return self._actor_sets[key]

    def _open_channels(self, addresses, actors):
        """A direct channel to each actor (``distviz.distributed.channel``): all or none (None: an address whose
        comm is not plain tcp or inproc)."""
        hosts = [endpoint_host(a) for a in addresses]
        if any(h is None for h in hosts):
            return None
        tokens = [new_token() for _ in actors]
        ends = [self._result(actor.open_channel(h, t), a) for actor, h, t, a in zip(actors, hosts, tokens, addresses)]
        channels = [Channel(a, h, port, t, functools.partial(self._alive, a))
                    for a, (h, port), t in zip(addresses, ends, tokens)]
        self._channels.extend(channels)
        return channels

    def _alive(self, addr):
        """Whether the worker at addr is still in the cluster (one scheduler RPC)."""
        try:
            return addr in self.client.nthreads()
        except OSError:
            return False

    def close(self):
        """Drop the actors and cancel every future of this fit, so that the workers free the shards.

        Cancelling (not only dropping our references) matters after an error: a failed step's exception
        keeps a traceback whose frames hold the shard futures, and the client keeps that exception.
        """
        for ch in self._channels:
            ch.close()
        self._channels = []
        self._actor_sets.clear()
        owned, self._owned = self._owned, []
        if owned:
            self.client.cancel(owned)


def _pairwise(parts, add):
    """parts[0] + parts[1] + ... added in pairs, round by round (a fixed order: the same sum on every run)."""
    while len(parts) > 1:
        parts = [add(parts[i], parts[i + 1]) for i in range(0, len(parts) - 1, 2)] + parts[len(parts) - len(parts) % 2:]
    return parts[0]


#: the _Cluster objects made inside the current ``releases_workers`` call (None outside one)
_OPEN: contextvars.ContextVar = contextvars.ContextVar("distviz_open_clusters", default=None)


def releases_workers(fit):
    """Decorator of a distributed fit: every _Cluster it makes is closed when it returns or raises (see close)."""
    @functools.wraps(fit)
    def wrapper(*args, **kwargs):
        token = _OPEN.set([])
        try:
            return fit(*args, **kwargs)
        finally:
            for cl in _OPEN.get():
                cl.close()
            _OPEN.reset(token)
    return wrapper


def _disp_rows(chunks, idx):
    """Per chunk: (m, 2) int64 [position in the display subset, row inside the chunk] of the display rows it holds."""
    out, off = [], 0
    for c in chunks:
        pos = np.flatnonzero((idx >= off) & (idx < off + c))
        out.append(np.stack([pos, idx[pos] - off], axis=1).astype(np.int64).reshape(-1, 2))
        off += c
    return out


@releases_workers
def fit_distributional(model, X, y, sample_weight=None, eval_set=None, progress=None, binner=None):
    """Fit a DistributionalBoosting on the current Client's workers (see module doc); returns the model."""
    from distviz.boosting.laws import bind_data_range, make_law, partition_entropy
    from distviz.boosting.trace import TraceRecorder, display_subset

    model._validate_params()
    cl = _Cluster()
    client = cl.client
    X, y, w = dask_inputs(X, y, sample_weight, 1)
    rng = np.random.default_rng(model.random_state)   # the split's seed, then the display rows (as in memory)
    X, y, w, ev = validation_rows(model, X, y, w, eval_set, split=model.validation_fraction is not None,
                                  random_state=rng)
    # the training targets' range bounds the family's domain, as in memory (one pass over y, for Normal NGD only)
    fam = bind_data_range(model._family_obj(), model.law, lambda: client.compute([y.min(), y.max()], sync=True))
    law = make_law(model.law, fam, domain=model.domain)
    binner = fit_binner(X, model.max_bins, binner)
    check = functools.partial(check_chunk, fam)
    n = int(X.shape[0])
    idx = display_subset(n, int(model.trace_rows), rng)
    shards, where = cl.shards(X, y, w, binner, law, _disp_rows(X.chunks[0], idx), check)
    vshards = vwhere = None
    if ev is not None:
        Xv, yv, wv = ev
        vshards, vwhere = cl.shards(Xv, yv, wv, binner, law, [np.zeros((0, 2), np.int64)] * len(Xv.chunks[0]), check)

    unit = w is None
    o, K = (1 if unit else 2), law.dim
    C = o + K   # the histograms' columns: [1] or [w, 1{w>0}], then the K targets
    # weighted start F_0 = the weighted mean of T(y) (law.init on that one row), and H of the root partition
    st = cl.run(shard_stats, shards, where)
    W_root, mean_T = float(st[0]), st[1:] / st[0]
    init = np.asarray(law.init(SimpleNamespace(T=mean_T[None, :]), None), dtype=float).reshape(K)
    H_root = partition_entropy(fam, np.zeros(1, dtype=np.int64), mean_T[None, :], None)
    Wv = float(cl.run(shard_stats, vshards, vwhere)[0]) if vshards is not None else 1.0
    engine = model._engine(law)   # the in-memory fit's loop, rules and bookkeeping, over the shards
    rows = SharedTreeRows(engine, cl, shards, where, vshards, vwhere, binner, init, W_root, Wv, n, unit, o, C,
                          family=fam, H_root=H_root, n_display=idx.size)
    rec = TraceRecorder(law, np.arange(idx.size))
    res = engine.run(rows, [rec], progress)
    Xs, ys = _display_rows(cl.run(display_rows, shards, where)["disp"], idx.size, int(X.shape[1]))
    del shards, vshards, rows   # the workers drop the chunks' state
    cl.close()
    model._set_result(res, law, fam, rec, Xs, ys, law.prepare(fam.check_y(ys)).T)
    model.trace_ = model.trace_.assign(obs_index=("obs", idx.astype(np.int64)))
    model.binner_ = binner
    return model


def _display_rows(pieces, m, p):
    """(X (m, p), y (m,)) of the display subset, in display order, from the shards' (positions, X, y) pieces: the rows
    were kept when the chunks were binned, so no chunk is read again."""
    Xs, ys = np.empty((m, p)), None
    for pos, xs, yv in pieces:
        if ys is None:
            ys = np.empty((m,) + yv.shape[1:], dtype=yv.dtype)
        Xs[pos] = xs
        ys[pos] = yv
    return Xs, (np.empty(0) if ys is None else ys)
