"""Compiled prediction of an exponential-family law's iterate: one pass through all rounds, a replay where needed.

Training moves the iterate by ``F_r = law.update(F_{r-1}, lr * f_r(x))`` (``distviz.boosting.engine``);
``update`` changes a row's step only where ``F_{r-1} + lr f_r(x)`` leaves the law's domain
(``distviz.boosting.laws``: projection or backtracking), so a row whose partial sums
``F_0 + lr f_1 + ... + lr f_r`` all stay inside the domain has exactly that sum as its iterate, added in
the same order as training adds it (the same bits).  :func:`predict_iterate` therefore

1. sums the start and every round's tree output in one compiled pass over blocks of rows
   (``FlatForest.predict``), checking each row's partial sum after each round against the domain: inside
   the compiled pass where the domain is a box (``ExponentialFamily.domain_box``: Poisson, Bernoulli and
   Exponential in both coordinates, the natural coordinates of Normal, Gamma and Categorical), or on the
   pass's per-round partial sums with the family's own domain test elsewhere (``FlatForest.round_trace``,
   in chunks of rows);
2. replays ``law.update`` round by round only for the rows whose partial sum left the domain at some
   round (or was not finite), which gives them the projected or backtracked iterate of training.
"""

from __future__ import annotations

import numpy as np

__all__ = ["predict_iterate", "replay_iterate", "start_iterate"]

#: the per-round partial sums of one chunk of rows take at most this many bytes (non-box domains)
_TRACE_BYTES = 64 * 2**20


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
        The law the model was fitted with (its ``update``, ``domain_box`` and ``in_domain``).
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
    box = law.domain_box()
    if box is not None:
        bad = np.zeros(n, dtype=np.uint8)
        F = flat.predict(X, F0, n_rounds, box=box, bad=bad)
        rows = np.flatnonzero(bad)
    else:
        F = np.empty((n, F0.shape[0]))
        step = max(1, _TRACE_BYTES // (8 * n_rounds * max(F0.shape[0], 1)))
        out = []
        for a in range(0, n, step):
            trace = flat.round_trace(X[a:a + step], F0, n_rounds)
            F[a:a + step] = trace[-1]
            ok = law.in_domain(trace.reshape(-1, trace.shape[2])).reshape(n_rounds, -1).all(axis=0)
            out.append(a + np.flatnonzero(~ok))
        rows = np.concatenate(out)
    if rows.size:
        F[rows] = replay_iterate(flat, F0, law, X[rows], n_rounds)
    return F
