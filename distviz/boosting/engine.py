"""One boosting loop for every law and chart: MGD, NGD, GD, the crossed laws, and NGBoost.

The loop keeps the CURRENT additive iterate ``F`` of the training rows (and of the validation
rows) and never re-predicts old trees: after each round ``F <- law.update(F, s * lr * f(x))``
with ``f(x_i)`` read from the fitted tree's leaf of row i (``tree.train_leaf_``).  What is
boosted, in which coordinate, and with which pseudo-responses is supplied by a small *law*
object; the engine only fits trees, takes steps, monitors the loss and stops early.

Every law is a :class:`distviz.boosting.law.Law` (the abstract base class with the protocol: five
required methods, documented defaults for the rest); the engine calls its methods unconditionally.
Implementations: ``distviz.boosting.laws`` (the exponential-family laws), ``distviz.estimators.ngboost``
(the NGBoost charts) and ``distviz.boosting.wg_law`` (WGBoost's particles).

``fit`` is ``run`` over :class:`distviz.boosting.rows.InMemoryRows`; the Dask fits run the same loop over
``distviz.distributed.rows.DaskShardRows``.  ``run`` owns the rounds (targets -> grow -> step -> update ->
loss -> stop?) and applies the rules of ``distviz.boosting.rounds`` (early stopping, the start and non-finite
rules, the line searches); the store owns the rows (``distviz.boosting.rows``).

Callbacks: one with a ``start(F_train)`` method gets the start iterate before the first round; each
``callback(info: RoundInfo)`` is called after every round (``info.round`` = rounds done, 1-based) and may
return True to stop boosting, or set ``info.active[k] = False`` to freeze output coordinate k (per-parameter
early stopping: frozen coordinates get no more tree output, and with ``tree_mode="separate"`` no more trees);
boosting stops when no coordinate is active.  ``predict_raw`` and ``staged_predict_raw`` replay the rounds on
new rows, applying ``law.update`` (with its projection) after every round as training does, so training rows
get bit-identical iterates.

Monitoring is cheap: ``law.prepare`` computes log h(y) once per fit, and the loss per round
is A(eta) - <eta, T(y)> - log h(y) on the cached iterate (note, "Monitoring during training").
A tree's training-row leaf ids (``train_leaf_``, 4 bytes a row) serve only its own round: after the
round's callbacks the engine drops them from its own tree classes (``tree.apply(Xb)`` gives the same
ids), so a fit holds its trees' nodes, not rounds * n leaf ids.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from distviz.boosting.law import Law, weighted_mean
from distviz.errors import ConfigError

from .rounds import EarlyStopping, RoundBook

__all__ = ["BoostingEngine", "BoostingResult", "Round", "RoundInfo", "predict_raw", "staged_predict_raw", "weighted_mean"]


@dataclass
class Round:
    """The fitted trees of one boosting round and how their output enters the iterate."""

    trees: list
    groups: list          # list of int arrays: output columns fed by each tree
    multiplier: float     # learning_rate * line-search scale
    blocks: int = 0       # > 0: trees[0] is a batch of this many trees (fit_many) feeding groups[0] in blocks


@dataclass
class RoundInfo:
    """What callbacks see after each round (they may edit ``active``)."""

    round: int
    trees: list
    groups: list
    targets: np.ndarray | None   # None where the rows are not in this process (a Dask fit)
    _step: Any                   # the step, or a function giving it (a fused round forms it only if read)
    F_train: np.ndarray
    F_valid: np.ndarray | None
    train_loss: float
    valid_loss: float
    n_projected: int
    entropy: float
    scale: float
    active: np.ndarray
    seconds: float

    @property
    def step(self) -> np.ndarray | None:
        """The round's step s * lr * f (n, K) (None where the rows are not in this process)."""
        if callable(self._step):
            self._step = self._step()
        return self._step


@dataclass
class BoostingResult:
    """Everything a fit produced: start, rounds, monitoring curves (index 0 = the start) and the final iterates.

    ``train_loss`` / ``valid_loss`` are weighted mean NLLs; ``best_iteration`` is the best round of the first
    early-stopping metric, or the last round without validation data.
    """

    init: np.ndarray
    rounds: list = field(default_factory=list)
    train_loss: list = field(default_factory=list)
    valid_loss: list = field(default_factory=list)
    n_projected: list = field(default_factory=list)
    n_nonfinite: list = field(default_factory=list)  # rows whose pseudo-response was non-finite (set to 0)
    entropy: list = field(default_factory=list)
    scales: list = field(default_factory=list)
    seconds: list = field(default_factory=list)
    valid_metrics: dict = field(default_factory=dict)   # law metric name -> per-round validation values
    best_rounds: dict = field(default_factory=dict)     # metric -> best validation round (start: 0; None: never finite)
    best_iteration: int = 0
    F_train: np.ndarray | None = None
    F_valid: np.ndarray | None = None
    active: np.ndarray | None = None
    n_trees: np.ndarray | None = None   # per output coordinate
    stop_reason: str = ""               # why boosting ended before n_rounds ("" when it ran them all)

    @property
    def n_rounds(self) -> int:
        """Number of rounds fitted."""
        return len(self.rounds)


def _leaf_output(tree, n_out: int) -> np.ndarray:
    """Per-training-row output of a fitted tree, read from its leaf of each row, shape (n, n_out)."""
    out = np.asarray(tree.value_)[tree.train_leaf_]
    return out.reshape(out.shape[0], n_out)


def _blocks_to_columns(out: np.ndarray) -> np.ndarray:
    """(B, n, k) block outputs as (n, B k) columns, block b in columns [b k, (b+1) k)."""
    B, n, k = out.shape
    return out.transpose(1, 0, 2).reshape(n, B * k)


def _round_output(rnd: Round, X, K: int, learner=None) -> np.ndarray:
    """The (m, K) output f(x) of one round's trees on rows X (before the multiplier)."""
    m = _n_rows(X)
    f = np.zeros((m, K))
    if rnd.blocks:
        b = rnd.trees[0]   # a fit_many Forest, or a list of trees
        pm = (learner.predict_many(b, X) if learner is not None else
              np.stack([t.predict(X) for t in b]) if isinstance(b, list) else b.predict(X))
        f[:, rnd.groups[0]] = _blocks_to_columns(np.asarray(pm, dtype=float))
        return f
    for t, g in zip(rnd.trees, rnd.groups):
        f[:, g] = np.asarray(t.predict(X) if learner is None else learner.predict(t, X), dtype=float).reshape(m, len(g))
    return f


class BoostingEngine:
    """Stagewise additive boosting of a law's iterate with histogram trees (see the module docstring).

    Parameters
    ----------
    law : Law
        What is boosted (:class:`distviz.boosting.law.Law`).
    n_rounds : int
        Most boosting rounds.
    learning_rate : float
        The shrinkage lr of every step.
    tree_params : dict, optional
        ``HistTree`` parameters of the round's trees.
    tree_mode : {"shared", "separate", "blocks"}
        One vector-leaf tree per round, one tree per output coordinate, or ``n_blocks`` trees per round in
        one ``fit_many`` call, tree b feeding columns [b K/B, (b+1) K/B).
    line_search : bool or {"grow", "ngboost"}
        Step-size search (``rounds.line_search``; True means "grow").  When no scale helps, the round is
        dropped and boosting stops with ``stop_reason`` set.
    ls_tol : float
        The "ngboost" search's stop of the halving.
    early_stopping_rounds : int, optional
        Patience of the early-stopping rule (``rounds.EarlyStopping``); None: never stop early.
    tol : float
        Least improvement of a new best validation value.
    early_stopping_metric : str or sequence of str
        "nll" or the law's metric names; with several, stop when every one stalled.
    n_blocks : int, optional
        The number of trees per round of ``tree_mode="blocks"`` (a divisor of ``law.dim``).
    learner : object, optional
        A tree learner with ``fit`` / ``fit_many`` / ``predict`` / ``predict_many``
        (``wg_trees.TreeLearner``); None: ``HistTree``.

    Subclasses may override ``_fit_trees`` (ngboost's batched per-coordinate trees).
    """

    def __init__(self, law, n_rounds: int = 100, learning_rate: float = 0.1, tree_params: dict | None = None,
                 tree_mode: str = "shared", line_search: bool | str = False, ls_tol: float = 1e-4,
                 early_stopping_rounds: int | None = None, tol: float = 0.0,
                 early_stopping_metric: str | Sequence[str] = "nll", n_blocks: int | None = None, learner=None):
        """Configure the loop; nothing is fitted until :meth:`fit`."""
        if not isinstance(law, Law):
            raise ConfigError(f"law must be a distviz.boosting.law.Law, got {type(law).__name__}.")
        if int(n_rounds) < 0:
            raise ConfigError(f"n_rounds must be >= 0, got {n_rounds}; pass e.g. n_rounds=100.")
        if not (np.isfinite(learning_rate) and learning_rate > 0):
            raise ConfigError(f"learning_rate must be a positive number, got {learning_rate}; pass e.g. 0.1.")
        if tree_mode not in ("shared", "separate", "blocks"):
            raise ConfigError(f"tree_mode must be 'shared', 'separate' or 'blocks', got {tree_mode!r}.")
        if tree_mode == "blocks" and not (isinstance(n_blocks, (int, np.integer)) and n_blocks >= 1
                                          and law.dim % int(n_blocks) == 0):
            raise ConfigError(f"tree_mode='blocks' needs n_blocks, a positive divisor of the {law.dim} output "
                              f"coordinates, got {n_blocks!r}.")
        watched = (early_stopping_metric,) if isinstance(early_stopping_metric, str) else tuple(early_stopping_metric)
        known = ("nll",) + tuple(law.metric_names)
        if not watched or any(m not in known for m in watched):
            raise ConfigError(f"early_stopping_metric must name validation metrics among {', '.join(known)}, "
                              f"got {early_stopping_metric!r}.")
        if early_stopping_rounds is not None and int(early_stopping_rounds) < 1:
            raise ConfigError(f"early_stopping_rounds must be a positive integer or None, got {early_stopping_rounds}.")
        self.law = law
        self.n_rounds = int(n_rounds)
        self.learning_rate = float(learning_rate)
        self.tree_params = dict(tree_params or {})
        self.tree_mode = tree_mode
        if line_search not in (False, None, True, "grow", "ngboost"):
            raise ConfigError(f"line_search must be False, True / 'grow' or 'ngboost', got {line_search!r}.")
        self.line_search = bool(line_search)
        self.line_search_rule = "ngboost" if line_search == "ngboost" else "grow"
        self.ls_tol = float(ls_tol)
        self.early_stopping_rounds = None if early_stopping_rounds is None else int(early_stopping_rounds)
        self.tol = float(tol)
        self.early_stopping_metric = watched
        self.n_blocks = None if n_blocks is None else int(n_blocks)
        self.learner = learner
        self._tree_ctx: tuple | None = None   # the HistTree FitContext of the fit in progress (InMemoryRows)

    # ------------------------------------------------------------------ pieces
    def _fit_tree(self, Xb, R, w, cols, tree_kwargs):
        """One tree on the (finite) targets R[:, cols], through the per-fit FitContext when it applies."""
        from distviz.trees import HistTree

        t = HistTree(**self.tree_params)
        ctx = self._tree_ctx
        Rc = R if len(cols) == R.shape[1] and np.array_equal(cols, np.arange(R.shape[1])) else R[:, cols]
        if ctx is not None and ctx[0] is Xb and ctx[1] is w and ctx[2] is tree_kwargs:
            return t.fit_context(ctx[3], Rc)
        return t.fit(Xb, Rc, sample_weight=w, **tree_kwargs)

    def _fit_trees(self, Xb, R, w, cols, tree_kwargs):
        """Fit the round's tree(s) on targets R[:, cols]; return trees, groups and the (n, K) output."""
        if self.tree_mode == "blocks":
            return self._fit_blocks(Xb, R, w, cols)
        n, K = R.shape
        out = np.zeros((n, K))
        if self.tree_mode == "shared":
            if self.learner is not None:
                t, pred = self.learner.fit(Xb, R if len(cols) == K else R[:, cols], w)
            else:
                t = self._fit_tree(Xb, R, w, cols, tree_kwargs)
                pred = _leaf_output(t, len(cols))
            out[:, cols] = np.asarray(pred, dtype=float).reshape(n, len(cols))
            return [t], [np.asarray(cols)], out
        trees, groups = [], []
        for k in cols:
            t = self._fit_tree(Xb, R, w, [k], tree_kwargs)
            out[:, k] = _leaf_output(t, 1)[:, 0]
            trees.append(t)
            groups.append(np.asarray([k]))
        return trees, groups, out

    def _fit_blocks(self, Xb, R, w, cols):
        """B trees in one batched fit (shared X bins), tree b on block b's columns; blocks with a frozen column are skipped."""
        n, K = R.shape
        k = K // self.n_blocks
        active = np.zeros(K, dtype=bool)
        active[cols] = True
        blk = [b for b in range(self.n_blocks) if active[b * k:(b + 1) * k].all()]
        out = np.zeros((n, K))
        if not blk:
            return [], [], out
        g = np.concatenate([np.arange(b * k, (b + 1) * k) for b in blk])
        Rb = np.ascontiguousarray(R[:, g].reshape(n, len(blk), k).transpose(1, 0, 2))
        if self.learner is not None:
            trees, pred = self.learner.fit_many(Xb, Rb, w)
        else:
            from distviz.trees import fit_many

            trees = fit_many(Xb, Rb, sample_weight=w, shared=False, **self.tree_params)
            pred = trees.train_predict_
        out[:, g] = _blocks_to_columns(np.asarray(pred, dtype=float))
        return [trees], [g], out

    # ------------------------------------------------------------------ fit
    def fit(self, Xb, y, sample_weight=None, valid=None, callbacks: Sequence[Callable] = (),
            progress: Callable[[int, int], Any] | None = None) -> BoostingResult:
        """Run the boosting loop on rows in memory; `valid` is (Xb_valid, y_valid[, w_valid]) or None."""
        from .rows import InMemoryRows

        return self.run(InMemoryRows(self, Xb, y, sample_weight, valid), callbacks, progress)

    def run(self, rows, callbacks: Sequence[Callable] = (),
            progress: Callable[[int, int], Any] | None = None) -> BoostingResult:
        """The one boosting loop, over any row store (``distviz.boosting.rows.RowStore``: in memory or Dask shards)."""
        law, lr = self.law, self.learning_rate
        init, loss0, n_proj0, vl0, metrics0 = rows.start()
        stopping = EarlyStopping(self.early_stopping_rounds, self.tol, self.early_stopping_metric)
        book = RoundBook(np.asarray(init, dtype=float), self.n_rounds, stopping, check_loss=bool(law.has_loss))
        started = book.start(loss0, n_proj0, vl0, metrics0)
        res = book.res
        for cb in callbacks:
            if hasattr(cb, "start"):
                cb.start(rows.iterate())
        active = np.ones(law.dim, dtype=bool)
        n_trees = np.zeros(law.dim, dtype=int)
        info = None
        for r in range(1, self.n_rounds + 1 if started else 1):
            t0 = time.perf_counter()
            info = None   # the last round's RoundInfo (and the arrays only it held) is done with
            cols = np.flatnonzero(active)
            n_bad = rows.targets(cols)
            if book.targets_failed(r, n_bad, rows.n, lr, law.target_name):
                break
            trees, groups = rows.grow(cols)
            scale = rows.line_search(self.line_search_rule, res.train_loss[-1], self.ls_tol) if self.line_search else 1.0
            if book.line_search_failed(r, scale):
                break
            rnd, loss, vl, n_proj, bad_F = rows.update(trees, groups, lr * scale, r == self.n_rounds)
            # a round that makes the iterate or the monitored NLL NaN / inf is dropped (never chart a NaN)
            if book.round_failed(r, loss, vl, bad_F):
                break
            ent, metrics = rows.commit(rnd)
            n_trees[cols] += 1
            book.add(rnd, loss, vl, n_bad, n_proj, ent, scale, time.perf_counter() - t0, metrics)
            info = rows.round_info(r, rnd, scale, active, res)
            stop = False
            for cb in callbacks:
                stop = bool(cb(info)) or stop
            if progress is not None:
                progress(r, self.n_rounds)
            rows.release(rnd)
            reason = "a callback stopped boosting" if stop else ""
            if not active.any():
                reason = reason or "every output coordinate is frozen"
            if book.stop(r, reason):
                break
        del info
        return book.finish(active=active, n_trees=n_trees, **rows.finish())


def _make_tree_context(Xb, w, tree_kwargs):
    """(Xb, w, tree_kwargs, FitContext) for the HistTree fits of one boosting fit, or None for raw X."""
    from distviz.trees import BinnedX, FitContext

    if not isinstance(Xb, BinnedX) or set(tree_kwargs) - {"family", "T"}:
        return None
    return (Xb, w, tree_kwargs, FitContext.make(Xb, w, **tree_kwargs).for_rounds())


def _release_train_leaves(trees) -> None:
    """Drop the training-row leaf ids of a finished round's trees (HistTree, Forest, SharedForest).

    A learner's own tree objects are left as they are."""
    from distviz.trees import Forest, HistTree, SharedForest

    for t in trees:
        if isinstance(t, SharedForest):
            t = t.tree
        if isinstance(t, (HistTree, Forest)):
            t.train_leaf_ = None


def _n_rows(X) -> int:
    """Number of rows of a raw or binned (``BinnedX``) design."""
    return int(X.shape[0]) if hasattr(X, "shape") else len(X)


def staged_predict_raw(res: BoostingResult, law, X, n_rounds: int | None = None):
    """Yield the additive iterate F (n, K) on rows X after 0, 1, ..., n_rounds rounds."""
    m = _n_rows(X)
    F, _ = law.update(np.tile(res.init, (m, 1)), np.zeros((m, law.dim)))
    yield F
    stop = len(res.rounds) if n_rounds is None else min(int(n_rounds), len(res.rounds))
    for rnd in res.rounds[:stop]:
        F, _ = law.update(F, rnd.multiplier * _round_output(rnd, X, law.dim))
        yield F


def predict_raw(res: BoostingResult, law, X, n_rounds: int | None = None) -> np.ndarray:
    """The additive iterate F (n, K) on rows X after n_rounds rounds (all when None)."""
    return deque(staged_predict_raw(res, law, X, n_rounds), maxlen=1)[0]
