"""Collapsed sparse-GP objectives: q(u) is a function of the hyperparameters, not a free parameter.

Two of the paper's Gaussian-likelihood objectives (dlm_sparse_gp.txt, Appendix D) are minimised over
the kernel hyperparameters, the prior mean and the inducing inputs only, with q(u) solved in closed
form at every step: FITC's collapsed marginal likelihood (``distviz.gp.fitc``) and the square-loss
DLM objective, whose m "has a closed form, i.e., it is optimized in one step"
(``distviz.gp.square_dlm``).  :class:`CollapsedObjective` is their common optimiser interface.
"""

from __future__ import annotations

import autograd.numpy as anp
import numpy as np
from autograd import value_and_grad
from autograd.scipy.linalg import solve_triangular

from distviz.gp import estimators
from distviz.gp.kernels import rbf
from distviz.gp.objectives import Packer, Problem, assemble, unlower


def whitened_cross(p: dict, X, jitter: float):
    """A = L_uu^-1 K_uf at inputs X (L_uu the Cholesky factor of K_uu with its jitter), traceable by autograd.

    Parameters
    ----------
    p : dict
        Parameter blocks ``Z`` (M, d), ``log_ell`` and ``log_sf2`` (``distviz.gp.objectives``).
    X : ndarray of shape (n, d)
        Inputs (standardised as the estimator does).
    jitter : float
        Relative jitter added to K_uu (``jitter * variance`` on its diagonal).

    Returns
    -------
    ndarray of shape (M, n)
    """
    ell, sf2 = anp.exp(p["log_ell"]), anp.exp(p["log_sf2"])
    Z = p["Z"]
    Kuu = rbf(Z, Z, ell, sf2) + jitter * sf2 * anp.eye(Z.shape[0])
    return solve_triangular(anp.linalg.cholesky(Kuu), rbf(Z, X, ell, sf2), lower=True)


class CollapsedObjective:
    """Callable (flat parameters, batch indices, rng) -> (objective / n, gradient), the interface of
    ``distviz.gp.objectives.Objective``, for an objective whose q(u) is solved from the hyperparameters.

    The free blocks are the free ones of the estimator but ``m`` and ``Lw``; subclasses give
    :meth:`value` (the objective, not divided by n, traceable by autograd) and :meth:`posterior`
    (the whitened q(w) = N(m_w, L_w L_w^T) at given parameters).  The collapsed objectives do not
    split over rows, so the estimator uses them on full batches only (FITC refuses a ``batch_size``;
    square-loss DLM falls back to its joint form): `idx` must cover all rows.

    Parameters
    ----------
    problem : distviz.gp.objectives.Problem
        The data, likelihood, beta, jitter and fixed blocks.
    free : dict
        The estimator's free blocks (``m`` and ``Lw`` are dropped).
    """

    def __init__(self, problem: Problem, free: dict):
        self.pb = problem
        free = {k: v for k, v in free.items() if k not in ("m", "Lw")}
        self.unflatten = Packer(free)
        self.flat0 = self.unflatten.flatten(free)
        self.sampler_stats = estimators.SamplerStats()
        self._vg = value_and_grad(self._value)
        # the path of an L-BFGS fit records every block, q(u) included (``at_iteration`` replays it)
        full = dict(self.params(self.flat0))
        self.path_packer = Packer({k: full[k] for k in list(free) + ["m", "Lw"]})

    def value(self, p: dict):
        """The objective at parameter blocks `p` (not divided by n), traceable by autograd."""
        raise NotImplementedError

    def posterior(self, p: dict) -> tuple[np.ndarray, np.ndarray]:
        """(m_w, L_w) of the whitened q(w) at parameter blocks `p` (numpy arrays, L_w lower triangular)."""
        raise NotImplementedError

    def _value(self, flat):
        p = assemble(self.unflatten(flat), self.pb.fixed)
        return self.value(p) / self.pb.n_total

    def __call__(self, flat, idx=None, rng=None):
        """The objective divided by n and its gradient (``idx`` and ``rng`` are unused)."""
        flat = np.asarray(flat, dtype=float)
        try:
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                # nothing free (fixed hyperparameters and inducing inputs): the value alone
                val, g = self._vg(flat) if flat.size else (self._value(flat), np.zeros(0))
        except np.linalg.LinAlgError:   # a trial point of a line search with a singular matrix
            return float("inf"), np.zeros_like(flat)
        if not (np.isfinite(val) and np.all(np.isfinite(g))):
            return float("inf"), np.zeros_like(flat)
        return float(val), np.asarray(g, dtype=float)

    def params(self, flat) -> dict:
        """All parameter blocks at the flat free parameters, q(w) (``m``, the raw factor ``Lw``) included."""
        p = assemble(self.unflatten(np.asarray(flat, dtype=float)), self.pb.fixed)
        p = {k: np.asarray(v, dtype=float) for k, v in p.items()}
        m_w, Lw = self.posterior(p)
        p["m"], p["Lw"] = m_w, unlower(Lw)
        return p

    def record(self, flat) -> np.ndarray:
        """The flat vector of every block (``path_packer``'s order) at the flat free parameters."""
        return self.path_packer.flatten(self.params(flat))
