"""Where a boosting fit's rows live: the row-store protocol the one engine loop drives, and its in-memory store.

:meth:`distviz.boosting.engine.BoostingEngine.run` owns the rounds (targets -> grow -> step -> update -> loss ->
stop?), the rules of ``distviz.boosting.rounds`` and the result; a :class:`RowStore` owns the rows: their targets,
the iterate F of the training and validation rows, and everything that needs them.  Two stores implement it:

- :class:`InMemoryRows`: numpy arrays in this process; a round's tree(s) grow in one numba call over the rows
  (``distviz.trees``), and a law with ``fused_round`` takes update, NLL and next targets in one pass;
- ``distviz.distributed.rows.DaskShardRows``: the rows on the workers of a Dask cluster (the shard actors); a
  tree grows level by level from node histograms summed over the shards, with the same split scan
  (``distviz.trees.splitting``) on the client.

A round, as the engine calls it::

    n_bad = rows.targets(cols)                       # the round's targets (rows with a non-finite one: n_bad)
    trees, groups = rows.grow(cols)                  # the round's tree(s) on them
    s = rows.line_search(rule, loss0, tol)           # only with a line search: rounds.line_search on the store's NLL
    rnd, loss, valid_loss, n_projected, bad_F = rows.update(trees, groups, mult, last)   # tentative step
    entropy, metrics = rows.commit(rnd)              # keep it (the engine dropped the round otherwise)
    info = rows.round_info(r, rnd, s, active, res)   # what callbacks see; then rows.release(rnd)

``rows.iterate()`` is the iterate callbacks see as ``F_train``: every training row in memory, the display rows
(``trace_rows``) of a Dask fit.
"""

from __future__ import annotations

import abc
import sys

import numpy as np

from .engine import (
    BoostingEngine,
    Round,
    RoundInfo,
    _leaf_output,
    _make_tree_context,
    _n_rows,
    _release_train_leaves,
    _round_output,
)
from .law import weighted_mean
from .rounds import line_search

__all__ = ["InMemoryRows", "RowStore"]


class RowStore(abc.ABC):
    """The rows of one boosting fit, driven round by round by ``BoostingEngine.run`` (module docstring).

    Attributes
    ----------
    n : int
        Number of training rows.
    """

    n: int

    @abc.abstractmethod
    def start(self) -> tuple:
        """Set F to the constant start: (init (K,), training NLL, rows projected, validation NLL or None, metrics or None)."""

    @abc.abstractmethod
    def targets(self, cols) -> int:
        """Form the round's finite targets for the output columns cols; returns the rows that had a non-finite one."""

    @abc.abstractmethod
    def grow(self, cols) -> tuple[list, list]:
        """Grow the round's tree(s) on the targets: (trees, groups = the output columns each tree feeds)."""

    @abc.abstractmethod
    def line_search(self, rule: str, loss0: float, tol: float) -> float:
        """The step scale of ``rounds.line_search(rule, ...)`` on the training NLL along the grown trees."""

    @abc.abstractmethod
    def update(self, trees, groups, mult: float, last: bool) -> tuple:
        """Step F by mult * the trees' output, tentatively: (Round, training NLL, validation NLL or None,
        rows projected, whether F became non-finite); last: no round follows (no next targets needed)."""

    @abc.abstractmethod
    def commit(self, rnd: Round) -> tuple[float, dict | None]:
        """Keep the stepped iterate: (the tree partition's entropy or NaN, the law's validation metrics or None)."""

    @abc.abstractmethod
    def iterate(self) -> np.ndarray:
        """The training iterate callbacks see (module docstring)."""

    def round_info(self, r, rnd, scale, active, res) -> RoundInfo:
        """What the callbacks of round r see (the last values recorded in res; no targets, step or F_valid here)."""
        return RoundInfo(r, rnd.trees, rnd.groups, None, None, self.iterate(), None, res.train_loss[-1],
                         res.valid_loss[-1], res.n_projected[-1], res.entropy[-1], scale, active, res.seconds[-1])

    @abc.abstractmethod
    def release(self, rnd: Round) -> None:
        """The round is done with (after its callbacks): drop what only it needed."""

    @abc.abstractmethod
    def finish(self) -> dict:
        """The final state for the result: {"F_train": ..., "F_valid": ...} (None where the rows are elsewhere)."""


class InMemoryRows(RowStore):
    """Training and validation rows as arrays in this process; the trees are the engine's (``_fit_trees``)."""

    def __init__(self, engine: BoostingEngine, Xb, y, sample_weight=None, valid=None):
        """Xb: a ``BinnedX`` (or raw X); valid: (Xb_valid, y_valid[, w_valid]) binned with the same Binner, or None."""
        law = self.law = engine.law
        self.eng = engine
        self.Xb = Xb
        self.w = None if sample_weight is None else np.asarray(sample_weight, dtype=float)
        self.data = law.prepare(y, self.w)
        self.tree_kwargs = law.tree_kwargs(self.data)
        engine._tree_ctx = _make_tree_context(Xb, self.w, self.tree_kwargs) if engine.learner is None else None
        self.n = _n_rows(Xb)
        self.valid = valid
        self.Fv = self.vdata = self.wv = self.Xv = None
        # fused rounds: one pass over the rows for update, NLL and next targets (law.fused_round), for a
        # shared tree without line search and with the engine's own tree fitting (the same trees and
        # iterates as without it; the NLL to rounding, the order of its sum)
        self.fused = (bool(law.supports_fused_round) and engine.tree_mode == "shared" and not engine.line_search
                      and type(engine)._fit_trees is BoostingEngine._fit_trees)
        self.R_next = None
        self.spare: list[np.ndarray] = []   # iterates and targets of past rounds, reused by fused rounds once free

    def start(self):
        law, data, w = self.law, self.data, self.w
        init = np.asarray(law.init(data, w), dtype=float).reshape(law.dim)
        self.F, proj = law.update(np.tile(init, (self.n, 1)), np.zeros((self.n, law.dim)))
        loss0 = law.mean_loss(self.F, data, w)
        vl0 = metrics0 = None
        if self.valid is not None:
            self.Xv, yv = self.valid[0], self.valid[1]
            v = self.valid
            self.wv = None if len(v) < 3 or v[2] is None else np.asarray(v[2], dtype=float)
            self.vdata = law.prepare(yv, self.wv)
            m = _n_rows(self.Xv)
            self.Fv, _ = law.update(np.tile(init, (m, 1)), np.zeros((m, law.dim)))
            vl0 = law.mean_loss(self.Fv, self.vdata, self.wv)
            metrics0 = law.metrics(self.Fv, self.vdata) if law.metric_names else None
        return init, loss0, int(np.count_nonzero(proj)), vl0, metrics0

    def targets(self, cols):
        self.n_damped = 0
        if self.R_next is not None:   # T(y) - F from the previous fused pass: finite by construction
            self.R, n_bad = self.R_next, 0
        else:   # finite targets; a row whose target overflowed gets no update this round
            self.R, n_bad, self.n_damped = self.law.targets_checked(self.F, self.data, self.eng.learning_rate)
        return n_bad

    def grow(self, cols):
        eng, law, R = self.eng, self.law, self.R
        w_tree = law.round_weights(self.w, self.n)
        self.R_next = self.fused_out = None
        if self.fused and len(cols) == law.dim:
            t = eng._fit_tree(self.Xb, R, self.w, cols, self.tree_kwargs)
            F = self.F
            bufs = (_spare(self.spare, F.shape), _spare(self.spare, F.shape))
            self.fused_out = law.fused_round(F, t.train_leaf_, np.ascontiguousarray(t.value_[:, 0]),
                                             eng.learning_rate, self.data, self.w, out=bufs)
            del bufs
            if self.fused_out is None:
                self.f = np.zeros(R.shape)
                self.f[:, cols] = _leaf_output(t, len(cols))
            return [t], [np.asarray(cols)]
        trees, groups, self.f = eng._fit_trees(self.Xb, R, w_tree, cols, self.tree_kwargs)
        return trees, groups

    def line_search(self, rule, loss0, tol):
        """The scale searched in F + s lr f ("grow") or, as ngboost (Algorithm 1: rho = argmin_rho L(theta + rho f)
        on the FULL tree output, the update then takes lr * rho), in F + s f ("ngboost")."""
        law, lr, F, f, data, w = self.law, self.eng.learning_rate, self.F, self.f, self.data, self.w

        def loss_at(s):
            if rule == "ngboost":
                with np.errstate(all="ignore"):
                    return law.mean_loss_along(F, f, s, data, w)
            Fn, _ = law.update(F, s * (lr if rule == "grow" else 1.0) * f)
            return weighted_mean(law.loss(Fn, data), w)

        norm = float(np.mean(np.sqrt((f * f).sum(axis=1)))) if rule == "ngboost" else 0.0
        return line_search(rule, loss_at, loss0, norm, tol)

    def update(self, trees, groups, mult, last):
        eng, law, F = self.eng, self.law, self.F
        if self.fused_out is not None:
            self.F_new, loss, self.R_new = self.fused_out
            n_proj = 0
            self.step = _lazy_step(trees[0], mult, F.shape)
        else:
            self.step = mult * self.f
            self.F_new, proj = law.update(F, self.step)
            n_proj = int(np.count_nonzero(proj)) + self.n_damped
            loss = law.mean_loss(self.F_new, self.data, self.w)
            self.R_new = None
        self.f = self.fused_out = None
        blocks = len(groups[0]) // (law.dim // int(eng.n_blocks or 1)) if eng.tree_mode == "blocks" and trees else 0
        rnd = Round(trees, groups, mult, blocks)
        self.Fv_new = vl = None
        if self.Fv is not None:
            self.Fv_new, _ = law.update(self.Fv, mult * _round_output(rnd, self.Xv, law.dim, eng.learner))
            vl = law.mean_loss(self.Fv_new, self.vdata, self.wv)
        bad_F = bool(law.finite_iterate) and not np.isfinite(self.F_new).all()
        return rnd, loss, vl, n_proj, bad_F

    def commit(self, rnd):
        law = self.law
        if self.fused:
            self.spare.extend((self.F, self.R))   # this round's start iterate and targets: free once RoundInfo drops them
        self.F, self.R_next = self.F_new, self.R_new
        self.F_new = self.R_new = None
        ent = float(law.entropy(rnd.trees[0], self.w, self.data)) if self.eng.tree_mode == "shared" else np.nan
        metrics = None
        if self.Fv is not None:
            self.Fv, self.Fv_new = self.Fv_new, None
            metrics = law.metrics(self.Fv, self.vdata) if law.metric_names else None
        return ent, metrics

    def iterate(self):
        return self.F

    def round_info(self, r, rnd, scale, active, res):
        step, self.step = self.step, None
        return RoundInfo(r, rnd.trees, rnd.groups, self.R, step, self.F, self.Fv, res.train_loss[-1],
                         res.valid_loss[-1], res.n_projected[-1], res.entropy[-1], scale, active, res.seconds[-1])

    def release(self, rnd):
        self.R = None
        _release_train_leaves(rnd.trees)

    def finish(self):
        self.eng._tree_ctx = None
        return {"F_train": self.F, "F_valid": self.Fv}


def _spare(spare: list, shape) -> np.ndarray:
    """An array of this shape from `spare` that nothing outside the engine references (a new one if none).

    Fused rounds write the next iterate and targets into arrays of past rounds instead of fresh ones:
    fresh pages are faulted in one by one under a process-wide lock, which serialises the threads.
    An array a callback kept (directly or through a view) is never reused.
    """
    while spare:
        a = spare.pop()
        if a.shape == shape and a.dtype == np.float64 and a.flags.c_contiguous and sys.getrefcount(a) <= 2:
            return a
    return np.empty(shape)


def _lazy_step(tree, mult, shape):
    """The function giving a fused round's step mult * f (n, K) for RoundInfo (formed only if read).

    It holds the tree's leaf values and training-row leaf ids, not the tree, so that it still works
    after the engine has dropped ``train_leaf_`` from the tree (see ``engine._release_train_leaves``)."""
    value, leaf = tree.value_, tree.train_leaf_

    def step():
        out = np.zeros(shape)
        out[:] = mult * np.asarray(value)[leaf].reshape(shape[0], shape[1])
        return out
    return step
