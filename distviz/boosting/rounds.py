"""The rules every boosting loop applies to its rounds, wherever the rows live (in memory or on Dask workers).

- :class:`EarlyStopping`: a round is a metric's new best when its validation value is finite and below the
  best so far minus ``tol``; boosting stops once every watched metric has gone ``rounds`` rounds without a
  new best (the start counts as round 0).
- :class:`RoundBook`: the result bookkeeping (:class:`~distviz.boosting.engine.BoostingResult`) with the
  start check (a non-finite start NLL fits no round), the non-finite rule (a round that makes the monitored
  NLL, or with ``check_iterate`` the iterate, non-finite is dropped and boosting stops) and the rule for a
  round whose every target is non-finite.
- :func:`line_search`: the step-size rules on a function ``loss_at(s)`` (the mean training NLL after a step
  of scale s): ``"ngboost"``, ngboost's own (``ngboost.NGBoost.line_search``; Duan et al. 2020, Alg. 1), and
  ``"grow"``, the engine's: double s from 1 (up to 256) while the NLL keeps falling, else halve until it falls
  below the start, 0 when nothing helps.  The Dask fit evaluates a batch of scales on the workers in one
  round trip and calls the same function on the table of values (``distviz.distributed``).
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

__all__ = ["EarlyStopping", "RoundBook", "line_search", "ngboost_scale"]


class EarlyStopping:
    """The one early-stopping rule of every boosting fit (module docstring)."""

    def __init__(self, rounds: int | None = None, tol: float = 0.0, watched: Sequence[str] = ("nll",)):
        """rounds: patience (None: never stop early); tol: least improvement of a new best; watched: metric names."""
        self.rounds = None if rounds is None else int(rounds)
        self.tol = float(tol)
        self.watched = tuple(watched)
        self.best: dict = {}

    def start(self, values: dict) -> None:
        """The start's validation values (metric -> value): the bests of round 0."""
        self.best = {m: [0, v] for m, v in values.items()}

    def update(self, r: int, values: dict) -> str:
        """Take round r's validation values; the stop reason when every watched metric stalled, else ""."""
        for m, b in self.best.items():
            v = values[m]
            if np.isfinite(v) and (v < b[1] - self.tol or not np.isfinite(b[1])):
                b[0], b[1] = r, v
        if self.rounds is not None and all(r - self.best[m][0] >= self.rounds for m in self.watched):
            names = " or ".join(m.upper() for m in self.watched)
            return f"early stopping: no better validation {names} for {self.rounds} rounds"
        return ""

    def best_rounds(self) -> dict:
        """metric -> its best round (None for a metric that was never finite)."""
        return {m: (b[0] if np.isfinite(b[1]) else None) for m, b in self.best.items()}


class RoundBook:
    """The result of one boosting fit, filled round by round with the shared start, fault and stop rules."""

    def __init__(self, init, n_rounds: int, stopping: EarlyStopping, check_loss: bool = True):
        """init: the start F_0 (K,); check_loss False: the law's loss is NaN by design (its rounds are not checked)."""
        from .engine import BoostingResult

        self.res = BoostingResult(init=init)
        self.n_rounds = int(n_rounds)
        self.stopping = stopping
        self.check_loss = bool(check_loss)
        self.has_valid = False

    def start(self, train_loss, n_projected: int = 0, valid_loss=None, metrics: dict | None = None) -> bool:
        """Record the start (round 0); False (with ``stop_reason``) when its NLL is not finite.

        valid_loss None: no validation rows; metrics: the law's extra validation metrics at the start."""
        res = self.res
        res.train_loss.append(train_loss)
        res.n_projected.append(int(n_projected))
        res.n_nonfinite.append(0)
        res.entropy.append(np.nan)
        res.scales.append(np.nan)
        res.seconds.append(0.0)
        self.has_valid = valid_loss is not None
        res.valid_loss.append(valid_loss if self.has_valid else np.nan)
        res.valid_metrics = {m: [v] for m, v in (metrics or {}).items()}
        self.stopping.start({"nll": res.valid_loss[0], **{m: v[0] for m, v in res.valid_metrics.items()}})
        if self.check_loss and not (np.isfinite(train_loss) and (not self.has_valid or np.isfinite(valid_loss))):
            res.stop_reason = ("the NLL of the constant start is not finite, so no round was fitted; "
                               "rescale y to order one")
        return not res.stop_reason

    def targets_failed(self, r: int, n_bad: int, n: int, learning_rate: float, what: str = "pseudo-response") -> bool:
        """True (with ``stop_reason``) when every one of the n rows' targets was non-finite at round r."""
        if n_bad and n_bad == n:
            self.res.stop_reason = (f"every row's {what} was non-finite at round {r}, so boosting stopped; lower "
                                    f"learning_rate (now {learning_rate:g}).")
            return True
        return False

    def round_failed(self, r: int, loss, valid_loss=None, bad_iterate: bool = False) -> bool:
        """The non-finite rule: True (with ``stop_reason``) when round r made the iterate (bad_iterate) or the
        monitored training or validation NLL non-finite; the caller then drops the round."""
        bad_loss = self.check_loss and not (np.isfinite(loss) and (valid_loss is None or np.isfinite(valid_loss)))
        if not (bad_iterate or bad_loss):
            return False
        what = "iterate" if bad_iterate else "training NLL" if not np.isfinite(loss) else "validation NLL"
        self.res.stop_reason = (f"round {r} made the {what} non-finite, so boosting stopped after round {r - 1}; "
                                f"lower the learning rate or rescale y")
        return True

    def line_search_failed(self, r: int, scale: float) -> bool:
        """True (with ``stop_reason``) when the line search found no step that lowers the training NLL.

        F would stay put and every later round would refit the same trees (the tree direction is not a descent
        direction, e.g. MGD's leaf means under a varying metric), so boosting stops (ngboost quits likewise)."""
        if scale == 0.0:
            self.res.stop_reason = f"line search: no step along round {r}'s trees lowers the training NLL"
            return True
        return False

    def add(self, rnd, loss, valid_loss, n_nonfinite: int, n_projected: int, entropy: float, scale: float,
            seconds: float, metrics: dict | None = None) -> None:
        """Record a kept round: its trees (a ``Round``) and monitoring values."""
        res = self.res
        res.rounds.append(rnd)
        res.train_loss.append(loss)
        res.n_nonfinite.append(n_nonfinite)
        res.n_projected.append(n_projected)
        res.entropy.append(entropy)
        res.scales.append(scale)
        for m, v in (metrics or {}).items():
            res.valid_metrics[m].append(v)
        res.valid_loss.append(valid_loss if self.has_valid else np.nan)
        res.seconds.append(seconds)

    def stop(self, r: int, reason: str = "") -> bool:
        """After round r's callbacks: the early-stopping rule on the validation values, or `reason` (a callback's).

        True when boosting stops; ``stop_reason`` stays "" when r was the last round anyway."""
        res = self.res
        if self.has_valid:
            vals = {"nll": res.valid_loss[-1], **{m: v[-1] for m, v in res.valid_metrics.items()}}
            why = self.stopping.update(r, vals)
            if why:
                reason = why
        if reason:
            res.stop_reason = reason if r < self.n_rounds else ""
            return True
        return False

    def finish(self, **final):
        """The BoostingResult: best rounds, best iteration and the final state (F_train, F_valid, active, n_trees)."""
        res = self.res
        if self.has_valid:
            res.best_rounds = self.stopping.best_rounds()
        first = res.best_rounds.get(self.stopping.watched[0])
        res.best_iteration = first if first is not None else len(res.rounds)
        for k, v in final.items():
            setattr(res, k, v)
        return res


def ngboost_scale(loss_at: Callable[[float], float], norm: float, loss0: float, tol: float) -> float:
    """ngboost.NGBoost.line_search's rule: scale up from 1 while the loss stays <= loss0 (up to 512), then halve
    until it is below loss0 or scale * norm < tol; loss_at(s) is the mean NLL at F + s f (inf when not finite),
    norm the mean row norm of f."""
    s = 1.0
    while True:
        v = loss_at(s)
        if not np.isfinite(v) or v > loss0 or s > 256:
            break
        s *= 2.0
    while True:
        v = loss_at(s)
        if s * norm < tol:
            break
        if np.isfinite(v) and v < loss0:
            break
        s *= 0.5
    return s


def _grow_scale(loss_at: Callable[[float], float], loss0: float) -> float:
    """The engine's rule: grow s from 1 by doubling (up to 256) while the loss falls, else halve (30 times at most)
    until it is <= loss0; 0 when no scale helps."""
    s = 1.0
    best = loss_at(s)
    if best <= loss0:
        while s < 256:
            v = loss_at(2 * s)
            if not v < best:
                break
            s, best = 2 * s, v
        return s
    for _ in range(30):
        s *= 0.5
        if loss_at(s) <= loss0:
            return s
    return 0.0


def line_search(rule: str, loss_at: Callable[[float], float], loss0: float, norm: float = 0.0,
                tol: float = 1e-4) -> float:
    """The step scale of a round under `rule` ("ngboost" or "grow", module docstring).

    loss_at(s): the mean training NLL after a step of scale s (each scale is asked for once; a non-finite value
    counts as +inf); loss0: the NLL before the step; norm, tol: ngboost's stop of the halving (scale * norm < tol).
    """
    cache: dict = {}

    def at(s):
        if s not in cache:
            v = loss_at(s)
            cache[s] = v if np.isfinite(v) else np.inf
        return cache[s]

    if rule == "ngboost":
        return ngboost_scale(at, norm, loss0, tol)
    return _grow_scale(at, loss0)
