"""Square-loss DLM for the Gaussian likelihood with m in closed form (dlm_sparse_gp.txt Section 2, Appendix D).

Wei, Sheth & Khardon's square-loss DLM objective for the sparse GP depends on q(u) = N(m, S) only
through m (Section 2):

    1/2 sum_i (c + K_iu K_uu^-1 m - y_i)^2 + beta/2 m^T K_uu^-1 m,

S entering only the KL, whose S-part is smallest at S = K_uu.  "For square loss DLM the optimization
for m has a closed form, i.e., it is optimized in one step" (Appendix D).  In the whitened
coordinates of ``distviz.gp.objectives`` (m = L_uu m_w, A = L_uu^-1 K_uf, r = y - c 1) the objective
is 1/2 |A^T m_w - r|^2 + beta/2 |m_w|^2, a ridge regression, so with G = A A^T + beta I = L_G L_G^T

    m_w* = G^-1 A r,        min over m_w = 1/2 (r^T r - b^T b),   b = L_G^-1 A r,

and L_w = I (S = K_uu).  The joint variant minimises this profile over the kernel hyperparameters,
the prior mean and the inducing inputs (the noise does not enter the square loss); the fixed variant
has nothing left to optimise.  Gradients are by autograd (at m_w* the objective's gradient in m_w is
zero, so the profile's gradient is the objective's partial gradient).
"""

from __future__ import annotations

import autograd.numpy as anp
import numpy as np
from autograd.scipy.linalg import solve_triangular

from distviz.gp.collapsed import CollapsedObjective, whitened_cross


def _ridge(beta: float, jitter: float) -> float:
    """The ridge of G: beta, or the relative jitter where beta = 0 (then G = A A^T may be singular)."""
    return float(beta) if beta > 0 else float(jitter)


def _ridge_factor(p: dict, X, y, beta: float, jitter: float):
    """(L_G, b, r) of the module docstring: G = A A^T + beta I = L_G L_G^T, b = L_G^-1 A r, r = y - c (traceable)."""
    A = whitened_cross(p, X, jitter)
    r = y - p["mean"]
    LG = anp.linalg.cholesky(anp.dot(A, A.T) + _ridge(beta, jitter) * anp.eye(A.shape[0]))
    return LG, solve_triangular(LG, anp.dot(A, r), lower=True), r


def profile_objective(p: dict, X, y, beta: float, jitter: float):
    """min over m of the square-loss DLM objective (module docstring), traceable by autograd.

    Parameters
    ----------
    p : dict
        Parameter blocks ``Z`` (M, d), ``log_ell``, ``log_sf2`` and ``mean`` (``distviz.gp.objectives``).
    X : ndarray of shape (n, d)
        Training inputs (standardised as the estimator does).
    y : ndarray of shape (n,)
        Training targets.
    beta : float
        The weight of the KL term (beta >= 0; 0 is regularised by `jitter`).
    jitter : float
        Relative jitter added to K_uu.

    Returns
    -------
    float
        1/2 (r^T r - b^T b), the objective at m_w* (not divided by n).
    """
    _, b, r = _ridge_factor(p, X, y, beta, jitter)
    return 0.5 * (anp.dot(r, r) - anp.dot(b, b))


def optimal_m(p: dict, X, y, beta: float, jitter: float) -> np.ndarray:
    """The whitened m_w* = (A A^T + beta I)^-1 A r of the square-loss DLM objective (module docstring).

    Parameters
    ----------
    p, X, y, beta, jitter
        As :func:`profile_objective`.

    Returns
    -------
    ndarray of shape (M,)
    """
    LG, b, _ = _ridge_factor(p, X, y, beta, jitter)
    return np.asarray(solve_triangular(LG, b, lower=True, trans="T"))   # G^-1 A r = L_G^-T b


class SquareDLMObjective(CollapsedObjective):
    """The square-loss DLM objective profiled over m (:func:`profile_objective`) for the optimiser.

    q(w) = N(m_w*, I) at every step (:func:`optimal_m`); the free blocks are the kernel hyperparameters,
    the prior mean and (if learnt) the inducing inputs.
    """

    def value(self, p: dict):
        """The profiled objective (not divided by n) at parameter blocks `p`."""
        pb = self.pb
        return profile_objective(p, pb.X, pb.y, pb.beta, pb.jitter)

    def posterior(self, p: dict) -> tuple[np.ndarray, np.ndarray]:
        """(m_w*, I) at parameter blocks `p`."""
        pb = self.pb
        m_w = optimal_m(p, pb.X, pb.y, pb.beta, pb.jitter)
        return m_w, np.eye(m_w.shape[0])
