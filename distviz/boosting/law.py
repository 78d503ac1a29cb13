"""The one law protocol of the boosting engine: what is boosted, in which coordinate, with which targets.

A *law* tells :class:`distviz.boosting.engine.BoostingEngine` how to start, which pseudo-responses the
round's trees fit, how their step enters the iterate and what loss is monitored; the engine only fits
trees, takes steps, monitors the loss and stops early.  Every law is a subclass of :class:`Law`:

- the exponential-family laws of mirror_vs_natural_boosting.tex (``distviz.boosting.laws``: MGD, NGD,
  GD and the crossed MGDNatural / NGDMean; ``ExpFamilyLaw``);
- the NGBoost charts (``distviz.boosting.charts.ChartLaw``; O'Malley et al. 2023, Algorithm 1);
- the Wasserstein particles of WGBoost (``distviz.boosting.wg_law.WGLaw``; Matsubara, eq. 5-9, 17).

Five methods are required (:meth:`Law.prepare`, :meth:`Law.init`, :meth:`Law.loss`, :meth:`Law.targets`,
:meth:`Law.update`, abstract); every other method has a documented default that a law overrides where it
has something to say, and the class attributes (``has_loss``, ``finite_iterate``, ``metric_names``,
``supports_fused_round``, ...) say what the engine may ask of it.  The engine calls every method
unconditionally.
"""

from __future__ import annotations

import abc
from typing import Any

import numpy as np

__all__ = ["Law", "weighted_mean"]


def weighted_mean(v: np.ndarray, w: np.ndarray | None) -> float:
    """Weighted mean of a per-row vector (plain mean when w is None).

    einsum, not np.dot: BLAS splits a long dot product among its threads, so the last bits would
    depend on the number of BLAS threads.
    """
    if w is None:
        return float(np.mean(v))
    return float(np.einsum("i,i...->...", np.asarray(w, dtype=np.float64), np.asarray(v, dtype=np.float64)) / w.sum())


class Law(abc.ABC):
    """A boosting law: start, targets, update and loss of the additive iterate F (n, K) (module docstring).

    Attributes
    ----------
    name : str
        Short name, e.g. ``"mgd"``.
    dim : int
        K, the number of additive output coordinates (set by the subclass, usually in ``__init__``).
    gain_name : str
        The split gain the trees maximise (``"Gain^reg"``, ``"Gain^NGD"``).
    description : str
        One line saying what is boosted (written into traces).
    has_loss : bool
        False where the loss is NaN by design (a WGBoost target without a likelihood); rounds are then
        checked by the finiteness of F instead of the NLL.
    finite_iterate : bool
        True: a round that makes F non-finite is dropped, whatever the NLL says.
    target_name : str
        How the engine's stop reasons name the targets (``"pseudo-response"``, ``"direction"``).
    metric_names : tuple of str
        Names of the extra validation metrics :meth:`metrics` returns; ``early_stopping_metric`` may name them.
    supports_fused_round : bool
        True where :meth:`fused_round` may take update, NLL and next targets in one pass (the engine
        calls it only for a shared tree without line search, and takes the plain update when it gives None).
    """

    name: str = ""
    dim: int
    gain_name: str = "Gain^reg"
    description: str = ""
    has_loss: bool = True
    finite_iterate: bool = False
    target_name: str = "pseudo-response"
    metric_names: tuple[str, ...] = ()
    supports_fused_round: bool = False

    # ------------------------------------------------------------------ required
    @abc.abstractmethod
    def prepare(self, y, w) -> Any:
        """Per-fit cache of the y-only quantities the other methods read.

        Parameters
        ----------
        y : ndarray
            Validated targets of the rows.
        w : ndarray of shape (n,) or None
            Sample weights.

        Returns
        -------
        data
            Whatever :meth:`init`, :meth:`loss` and :meth:`targets` take as ``data``.
        """

    @abc.abstractmethod
    def init(self, data, w) -> np.ndarray:
        """The constant start F_0, shape (K,) (weighted by w)."""

    @abc.abstractmethod
    def loss(self, F, data) -> np.ndarray:
        """Per-row loss (NLL) at the iterate F (n, K); shape (n,)."""

    @abc.abstractmethod
    def targets(self, F, data, learning_rate: float) -> np.ndarray:
        """The pseudo-responses (n, K) the round's trees fit at the iterate F."""

    @abc.abstractmethod
    def update(self, F, step) -> tuple[np.ndarray, np.ndarray]:
        """F + step kept inside the law's domain.

        Returns
        -------
        F_new : ndarray of shape (n, K)
        projected : bool ndarray of shape (n,)
            Rows whose step was changed to stay inside the domain.
        """

    # ------------------------------------------------------------------ optional, with defaults
    def tree_kwargs(self, data) -> dict:
        """Extra keyword arguments of the round's ``HistTree.fit``; default none."""
        return {}

    def entropy(self, tree, w, data) -> float:
        """Generalised entropy of a fitted tree's partition (note, H_A); default NaN (not defined for this law).

        The engine records it for shared trees only; NaN is charted as a gap.
        """
        return float("nan")

    def mean_loss(self, F, data, w) -> float:
        """The monitored mean loss: by default the weighted mean of :meth:`loss` (:func:`weighted_mean`)."""
        return weighted_mean(self.loss(F, data), w)

    def mean_loss_along(self, F, f, s: float, data, w) -> float:
        """The mean loss after a step of scale s along f, at ``update(F, s f)`` (ngboost's line search,
        ``rounds.line_search``); by default :meth:`update` then :meth:`mean_loss`."""
        Fn, _ = self.update(F, s * f)
        return self.mean_loss(Fn, data, w)

    def targets_checked(self, F, data, learning_rate: float) -> tuple[np.ndarray, int, int]:
        """The round's finite targets, with counts of the rows that were not.

        By default :meth:`targets` with every non-finite entry set to 0 (a row whose target overflowed
        gets no update this round).

        Returns
        -------
        R : ndarray of shape (n, K)
            Finite targets.
        n_nonfinite : int
            Rows with a non-finite target (set to 0).
        n_damped : int
            Rows whose step the law shortened (counted with the projected rows); 0 by default.
        """
        R = self.targets(F, data, learning_rate)
        finite = np.isfinite(R)
        n_bad = 0
        if not finite.all():
            n_bad = int(np.count_nonzero(~finite.all(axis=1)))
            R = np.where(finite, R, 0.0)
        return R, n_bad, 0

    def round_weights(self, w, n: int):
        """The weights of this round's trees (e.g. a subsample); by default w itself (the same object)."""
        return w

    def metrics(self, F, data) -> dict:
        """Extra validation metrics, name -> value, one per name in ``metric_names``; by default none."""
        return {}

    def fused_round(self, F, leaf, value, mult, data, w, out=None):
        """Update, weighted mean loss and next targets of one round in one pass over the rows, or None.

        Parameters
        ----------
        F : ndarray of shape (n, K)
            The iterate.
        leaf : int ndarray of shape (n,)
            The training rows' leaves in the round's tree.
        value : ndarray of shape (n_nodes,)
            The tree's leaf values; the step is ``mult * value[leaf]``.
        mult : float
            The learning rate times the line-search scale.
        data, w
            As in :meth:`loss` and :meth:`mean_loss`.
        out : tuple of two ndarrays, optional
            Arrays (n, K) to write the new iterate and targets into.

        Returns
        -------
        tuple or None
            ``(F_new, mean loss, next targets)``, equal to :meth:`update`, :meth:`mean_loss` and
            :meth:`targets` (the loss up to rounding), or None where the pass does not apply (the engine
            then takes :meth:`update`).  The default is None; only laws with ``supports_fused_round`` are asked.
        """
        return None
