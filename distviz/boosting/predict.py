"""Compiled prediction of an exponential-family law's iterate: one pass through all rounds, a replay where needed.

Training moves the iterate by ``F_r = law.update(F_{r-1}, lr * f_r(x))`` (``distviz.boosting.engine``);
``update`` changes a row's step only where ``F_{r-1} + lr f_r(x)`` leaves the law's domain
(``distviz.boosting.laws``: projection or backtracking), so a row whose partial sums
``F_0 + lr f_1 + ... + lr f_r`` all stay inside the domain has exactly that sum as its iterate, added in
the same order as training adds it (the same bits).  :func:`predict_iterate` therefore

1. sums the start and every round's tree output in one compiled pass over blocks of rows
   (``FlatForest.predict``), testing each row's partial sum after each round against the law's domain inside
   the pass (``ExponentialFamily.domain``: an open box and, for Normal, Gamma and Categorical means and both
   multivariate Normal coordinates, the shape's own condition);
2. replays ``law.update`` round by round only for the rows whose partial sum left the domain at some
   round (or was not finite), which gives them the projected or backtracked iterate of training.
"""

from __future__ import annotations

import numpy as np

__all__ = ["LawForest", "predict_iterate", "replay_iterate", "rounds_forest", "start_iterate"]


def start_iterate(law, init) -> np.ndarray:
    """F_0 (K,): the constant start as training takes it, ``law.update(init, 0)`` (projected if need be)."""
    init = np.asarray(init, dtype=np.float64).reshape(1, -1)
    F0, _ = law.update(init.copy(), np.zeros_like(init))
    return np.asarray(F0, dtype=np.float64).reshape(-1)


def replay_iterate(flat, F0, law, X, n_rounds: int) -> np.ndarray:
    """The iterate after n_rounds rounds by the round-by-round update of training (one tree walk per round)."""
    F = np.tile(F0, (X.shape[0], 1))
    for r in range(n_rounds):
        F, _ = law.update(F, flat.round_values(X, r))
    return F


def predict_iterate(flat, init, law, X, n_rounds: int) -> np.ndarray:
    """The iterate F (n, K) after n_rounds rounds on rows X: equal, bit for bit, to the training update's.

    Parameters
    ----------
    flat : FlatForest
        One tree per round, ``multiplier`` = the round's learning rate times its line-search scale.
    init : ndarray of shape (K,)
        The fit's constant start.
    law : ExpFamilyLaw
        The law the model was fitted with (its ``update`` and ``coord_domain``).
    X : ndarray of shape (n, p)
        Checked rows.
    n_rounds : int
        Rounds to add (0: the start).
    """
    F0 = start_iterate(law, init)
    n = X.shape[0]
    n_rounds = int(n_rounds)
    if n_rounds == 0 or n == 0:
        return np.tile(F0, (n, 1))
    bad = np.zeros(n, dtype=np.uint8)
    F = flat.predict(X, F0, n_rounds, domain=law.coord_domain(), bad=bad)
    rows = np.flatnonzero(bad)
    if rows.size:
        F[rows] = replay_iterate(flat, F0, law, X[rows], n_rounds)
    return F


class LawForest:
    """The start value and the FlatForest of a DistributionalBoosting fit (one shared tree per round)."""

    def __init__(self, init, flat):
        """init (K,), flat: a distviz.trees.flat.FlatForest with one tree per round."""
        self.init = np.asarray(init, dtype=float)
        self.flat = flat

    @classmethod
    def from_result(cls, res, n_features: int | None = None) -> "LawForest":
        """Flatten the engine's rounds (a BoostingResult, one shared tree per round)."""
        if n_features is None:
            n_features = res.rounds[0].trees[0].n_features_in_ if res.rounds else 1
        return cls(res.init, rounds_forest(res.rounds, n_features, len(res.init)))

    def staged(self, law, X, n_rounds):
        """Yield the iterate after 0..n_rounds rounds, applying law.update (projection) each round."""
        F = np.tile(start_iterate(law, self.init), (X.shape[0], 1))
        yield F
        for r in range(n_rounds):
            F, _ = law.update(F, self.flat.round_values(X, r))
            yield F

    def predict(self, law, X, n_rounds):
        """The iterate after n_rounds rounds: one compiled pass, the per-round update only for rows that need it."""
        return predict_iterate(self.flat, self.init, law, X, n_rounds)


def _placed(rnd) -> list:
    """(record, output columns it feeds) of each tree of an engine ``Round``; a batch (``blocks``: a fit_many Forest
    or a list of trees) feeds groups[0] in equal blocks."""
    if not rnd.blocks:
        return [(t.record_, np.asarray(g)) for t, g in zip(rnd.trees, rnd.groups)]
    batch, g = rnd.trees[0], np.asarray(rnd.groups[0])
    recs = [t.record_ for t in batch] if isinstance(batch, list) else [batch.record(b) for b in range(len(batch))]
    k = len(g) // len(recs)
    return [(r, g[b * k:(b + 1) * k]) for b, r in enumerate(recs)]


def rounds_forest(rounds, n_features: int, dim: int):
    """The FlatForest of a fit's rounds (``engine.Round``): each tree adds multiplier * its leaf values at the output
    columns it feeds.  Trees that each feed one column (NGBoost's separate trees) or a block (a batched fit's) keep
    their width; otherwise a tree feeding fewer than all dim columns is widened with zeros (which add exactly
    nothing), and a round without trees keeps its place with one zero leaf."""
    from distviz.trees.flat import FlatForest
    from distviz.trees.record import TreeRecord

    placed = [_placed(rnd) for rnd in rounds]
    narrow = all(len(g) == 1 for p in placed for _, g in p) or any(rnd.blocks for rnd in rounds)
    width = next((r.value.shape[1] for p in placed for r, _ in p), 1) if narrow else dim
    recs, sizes, mult, cols = [], [], [], []
    for rnd, pairs in zip(rounds, placed):
        for rec, g in pairs or [(TreeRecord.leaf(np.zeros(width)), np.zeros(1, dtype=np.int64))]:
            if not (narrow or len(g) == dim):
                v = np.zeros((rec.n_nodes, dim))
                v[:, g] = rec.value.reshape(rec.n_nodes, len(g))
                rec = rec.with_values(v)
            recs.append(rec)
            cols.append(int(g[0]) if narrow else 0)
        sizes.append(max(len(pairs), 1))
        mult += [float(rnd.multiplier)] * max(len(pairs), 1)
    return FlatForest.from_records(recs, sizes, mult, cols, n_features, dim)

