"""One boosting loop for every law and chart: MGD, NGD, GD, the crossed laws, and NGBoost.

The loop keeps the CURRENT additive iterate ``F`` of the training rows (and of the validation
rows) and never re-predicts old trees: after each round ``F <- law.update(F, s * lr * f(x))``
with ``f(x_i)`` read from the fitted tree's leaf of row i (``tree.train_leaf_``).  What is
boosted, in which coordinate, and with which pseudo-responses is supplied by a small *law*
object; the engine only fits trees, takes steps, monitors the loss and stops early.

Every law is a :class:`distviz.boosting.law.Law` (the abstract base class with the protocol: five
required methods, documented defaults for the rest); the engine calls its methods unconditionally.
Implementations: ``distviz.boosting.laws`` (the exponential-family laws), ``distviz.boosting.ngboost``
(the NGBoost charts) and ``distviz.boosting.wg_law`` (WGBoost's particles).

Engine::

    eng = BoostingEngine(law, n_rounds=500, learning_rate=0.1,
                         tree_params=dict(max_depth=3, min_weight_leaf=1.0, l2=0.0),
                         tree_mode="shared",        # one vector-leaf tree per round, or
                                                    # "separate": one tree per coordinate
                         line_search=False,         # True / "grow" or "ngboost": step-size search
                                                    # (distviz.boosting.rounds.line_search), ls_tol=1e-4
                         early_stopping_rounds=None, tol=0.0,
                         early_stopping_metric="nll",   # or a law metric name, or a tuple of names:
                                                        # stop when every one stalled (WGBoost's "both")
                         n_blocks=None,             # tree_mode="blocks": B trees per round in one fit_many
                                                    # call, tree b feeding columns [b K/B, (b+1) K/B)
                         learner=None)              # tree learner with fit / fit_many / predict /
                                                    # predict_many (wg_trees.TreeLearner); None: HistTree
    res = eng.fit(Xb, y, sample_weight=None, valid=(Xb_valid, y_valid, w_valid),
                  callbacks=[cb, ...], progress=lambda r, n: ...)
    res = eng.run(rows, callbacks, progress)        # the same loop over any row store

``fit`` is ``run`` over :class:`distviz.boosting.rows.InMemoryRows`; the Dask fits run the same loop over
``distviz.distributed.rows.DaskShardRows``.  ``run`` owns the rounds (targets -> grow -> step -> update ->
loss -> stop?) and applies the rules of ``distviz.boosting.rounds`` (early stopping, the start and non-finite
rules, the line searches ``"grow"`` and ``"ngboost"``); the store owns the rows (``distviz.boosting.rows``).
When the line search finds no helpful scale the round is dropped and boosting stops with
``res.stop_reason`` set, since F would not move; subclasses may override ``_fit_trees`` (e.g. batched
per-coordinate trees).

``Xb`` is a ``distviz.trees.BinnedX`` (or raw X; the tree bins it); ``valid`` rows must be
binned with the same ``Binner``.  A callback with a ``start(F_train)`` method gets the start
iterate before the first round.  Each ``callback(info: RoundInfo)`` is called after every
round (``info.round`` = number of rounds done, 1-based) and may

- return True to stop boosting, or
- set ``info.active[k] = False`` to freeze output coordinate k (per-parameter early stopping:
  frozen coordinates get no more tree output; with ``tree_mode="separate"`` their trees are no
  longer fitted).  Boosting stops when no coordinate is active.

``res`` is a :class:`BoostingResult`: ``init`` (K,), ``rounds`` (list of :class:`Round`:
``trees``, ``groups`` = output columns each tree feeds, ``multiplier`` = lr * line-search
scale), ``train_loss`` / ``valid_loss`` (weighted mean NLL, index 0 = the start),
``n_projected``, ``n_nonfinite``, ``entropy``, ``scales``, ``valid_metrics`` (name -> per-round list),
``best_rounds`` (metric -> round with its least validation value, the start counting as round 0; None
for a metric that was never finite), ``best_iteration`` (the best round of the first early-stopping
metric, or the last round without validation data), ``stop_reason``, ``F_train`` / ``F_valid``.
``predict_raw(res, law, X, n_rounds)`` and ``staged_predict_raw`` replay the additive model
on new rows, applying ``law.update`` (with its projection) after every round exactly as in
training, so training rows get bit-identical iterates.

Monitoring is cheap: ``law.prepare`` computes log h(y) once per fit, and the loss per round
is A(eta) - <eta, T(y)> - log h(y) on the cached iterate (note, "Monitoring during training").
A tree's training-row leaf ids (``train_leaf_``, 4 bytes a row) serve only its own round: after the
round's callbacks the engine drops them from its own tree classes (``tree.apply(Xb)`` gives the same
ids), so a fit holds its trees' nodes, not rounds * n leaf ids.
"""

from __future__ import annotations

import time
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
    step: np.ndarray | None
    F_train: np.ndarray
    F_valid: np.ndarray | None
    train_loss: float
    valid_loss: float
    n_projected: int
    entropy: float
    scale: float
    active: np.ndarray
    seconds: float


def _step_get(self) -> np.ndarray:
    """The round's step (n, K); the engine may hand it over as a function, evaluated on first access."""
    s = self._step
    if callable(s):
        s = self._step = s()
    return s


def _step_set(self, value) -> None:
    self._step = value


# the fused round never forms the (n, K) step unless a callback reads it
RoundInfo.step = property(_step_get, _step_set, doc="The round's step s * lr * f (n, K).")  # type: ignore[assignment]


@dataclass
class BoostingResult:
    """Everything a fit produced: start, rounds, monitoring curves and the final iterates."""

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
    best_rounds: dict = field(default_factory=dict)     # metric -> best validation round (None: never finite)
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


def _tree_class():
    """The histogram tree class (imported lazily)."""
    from distviz.trees import HistTree
    return HistTree


def _leaf_output(tree, n_out: int) -> np.ndarray:
    """Per-training-row output of a fitted tree, read from its leaf of each row, shape (n, n_out)."""
    out = np.asarray(tree.value_)[tree.train_leaf_]
    return out.reshape(out.shape[0], n_out)


def _tree_predict(tree, X, n_out: int) -> np.ndarray:
    """Tree output on new rows, shape (n, n_out)."""
    out = np.asarray(tree.predict(X), dtype=float)
    return out.reshape(out.shape[0], n_out)


def _batch_predict(trees, X) -> np.ndarray:
    """Output of a batch of B trees (a fit_many Forest or a list of trees) on rows X, shape (B, m, k)."""
    if isinstance(trees, list):
        return np.stack([np.asarray(t.predict(X), dtype=float) for t in trees])
    return np.asarray(trees.predict(X), dtype=float)


def _blocks_to_columns(out: np.ndarray) -> np.ndarray:
    """(B, n, k) block outputs as (n, B k) columns, block b in columns [b k, (b+1) k)."""
    B, n, k = out.shape
    return out.transpose(1, 0, 2).reshape(n, B * k)


def _round_output(rnd: Round, X, K: int, learner=None) -> np.ndarray:
    """The (m, K) output f(x) of one round's trees on rows X (before the multiplier)."""
    m = _n_rows(X)
    f = np.zeros((m, K))
    if rnd.blocks:
        pm = learner.predict_many(rnd.trees[0], X) if learner is not None else _batch_predict(rnd.trees[0], X)
        f[:, rnd.groups[0]] = _blocks_to_columns(np.asarray(pm, dtype=float))
        return f
    for t, g in zip(rnd.trees, rnd.groups):
        f[:, g] = (_tree_predict(t, X, len(g)) if learner is None else
                   np.asarray(learner.predict(t, X), dtype=float).reshape(m, len(g)))
    return f


class _HistLearner:
    """The default batched learner of tree_mode="blocks": distviz.trees.fit_many with the engine's tree_params."""

    def __init__(self, tree_params):
        self.tree_params = tree_params

    def fit_many(self, Xb, R, w=None):
        """B trees on R (B, n, k) in one call; (Forest, training-row outputs (B, n, k))."""
        from distviz.trees import fit_many

        f = fit_many(Xb, R, sample_weight=w, shared=False, **self.tree_params)
        return f, f.train_predict_


class BoostingEngine:
    """Stagewise additive boosting of a law's iterate with histogram trees (see module docstring)."""

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
        t = _tree_class()(**self.tree_params)
        ctx = self._tree_ctx
        Rc = R if len(cols) == R.shape[1] and np.array_equal(cols, np.arange(R.shape[1])) else R[:, cols]
        if ctx is not None and ctx[0] is Xb and ctx[1] is w and ctx[2] is tree_kwargs:
            return t.fit_context(ctx[3], Rc)
        return t.fit(Xb, Rc, sample_weight=w, **tree_kwargs)

    def _fit_trees(self, Xb, R, w, cols, tree_kwargs):
        """Fit the round's tree(s) on targets R[:, cols]; return trees, groups and the (n, K) output."""
        n, K = R.shape
        out = np.zeros((n, K))
        trees, groups = [], []
        if self.tree_mode == "blocks":
            return self._fit_blocks(Xb, R, w, cols)
        if self.learner is not None and self.tree_mode == "shared":
            Rc = R if len(cols) == K else R[:, cols]
            t, pred = self.learner.fit(Xb, Rc, w)
            out[:, cols] = np.asarray(pred, dtype=float).reshape(n, len(cols))
            return [t], [np.asarray(cols)], out
        if self.tree_mode == "shared":
            t = self._fit_tree(Xb, R, w, cols, tree_kwargs)
            out[:, cols] = _leaf_output(t, len(cols))
            trees.append(t)
            groups.append(np.asarray(cols))
        else:
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
        Rb = R[:, g].reshape(n, len(blk), k).transpose(1, 0, 2)
        learner = self.learner if self.learner is not None else _HistLearner(self.tree_params)
        trees, pred = learner.fit_many(Xb, np.ascontiguousarray(Rb), w)
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
        book = self.round_book(init)
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

    def round_book(self, init) -> RoundBook:
        """The bookkeeping of one fit with this engine's rules (early stopping, the law's loss check)."""
        stopping = EarlyStopping(self.early_stopping_rounds, self.tol, self.early_stopping_metric)
        return RoundBook(np.asarray(init, dtype=float), self.n_rounds, stopping,
                         check_loss=bool(self.law.has_loss))


def _make_tree_context(Xb, w, tree_kwargs):
    """(Xb, w, tree_kwargs, FitContext) for the HistTree fits of one boosting fit, or None for raw X."""
    from distviz.trees import BinnedX, FitContext, HistTree

    if not isinstance(Xb, BinnedX) or _tree_class() is not HistTree or set(tree_kwargs) - {"family", "T"}:
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
    """Number of rows of a raw or binned design."""
    if hasattr(X, "n_rows"):
        return int(X.n_rows)
    if hasattr(X, "codes"):
        return int(np.asarray(X.codes).shape[0])
    if hasattr(X, "shape"):
        return int(X.shape[0])
    return len(X)


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
    F = None
    for F in staged_predict_raw(res, law, X, n_rounds):  # noqa: B007  (keeps the last iterate)
        pass
    return F  # type: ignore[return-value]  # staged_predict_raw yields the initial iterate first
