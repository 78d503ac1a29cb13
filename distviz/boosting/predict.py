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

__all__ = ["LawForest", "predict_iterate", "replay_iterate", "start_iterate"]


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
        from distviz.trees.flat import FlatForest

        K = len(res.init)
        trees = [rnd.trees[0] for rnd in res.rounds]
        if n_features is None:
            n_features = trees[0].n_features_in_ if trees else 1
        flat = FlatForest.from_records([t.record_ for t in trees], multiplier=[rnd.multiplier for rnd in res.rounds],
                                       n_features=n_features, n_outputs=K)
        return cls(res.init, flat)

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
