"""FITC's collapsed objective for the Gaussian-likelihood sparse GP, and the q(u) it implies.

Snelson & Ghahramani (2006), "Sparse Gaussian processes using pseudo-inputs": the training values
f are independent given the inducing values u, p(f | u) = prod_i N(f_i | K_iu K_uu^-1 u, K_ii - Q_ii),
so y ~ N(c 1, Q_ff + Lambda) with Q_ff = K_fu K_uu^-1 K_uf and Lambda = diag(K_ff - Q_ff) + s I
(s the noise variance, c the constant prior mean).  Wei, Sheth & Khardon (dlm_sparse_gp.txt Section 2
and Appendix D) use this collapsed form, the negative log marginal likelihood

    -log N(y | c 1, Q_ff + Lambda)
      = 1/2 [log|Q_ff + Lambda| + r^T (Q_ff + Lambda)^-1 r + n log(2 pi)],   r = y - c 1,

as their FITC baseline; it has no KL term and no beta.  It is minimised over the kernel
hyperparameters, the noise, the prior mean and the inducing inputs only: q(u) is not a free
parameter.  With A = L_uu^-1 K_uf (L_uu the Cholesky factor of K_uu) and B = I + A Lambda^-1 A^T,
the matrix-determinant lemma and Woodbury's identity give, in O(n M^2),

    log|Q_ff + Lambda| = sum_i log Lambda_ii + log|B|,
    r^T (Q_ff + Lambda)^-1 r = r^T Lambda^-1 r - b^T b,   b = L_B^-1 A Lambda^-1 r.

The posterior over u is q(u) = N(K_uu Sigma K_uf Lambda^-1 r, K_uu Sigma K_uu) with
Sigma = (K_uu + K_uf Lambda^-1 K_fu)^-1 (Snelson & Ghahramani eq. 8); in the whitened coordinates of
``distviz.gp.objectives`` (u = c + L_uu w) that is q(w) = N(B^-1 A Lambda^-1 r, B^-1).  Then the
estimator's ``predict_latent`` (mu = c + A_*^T m_w, v = K_** - A_*^T A_* + |L_w^T A_*|^2) is FITC's
predictive N(c + K_*u Sigma K_uf Lambda^-1 r, K_** - Q_** + K_*u Sigma K_u*) (their eq. 8), to which
``predict_dist`` adds the noise s.  Gradients are by autograd.
"""

from __future__ import annotations

import autograd.numpy as anp
import numpy as np
from autograd.scipy.linalg import solve_triangular

from distviz.gp.collapsed import CollapsedObjective, whitened_cross
from distviz.gp.objectives import hyper

LOG_2PI = float(np.log(2.0 * np.pi))


def _factors(p: dict, X, jitter: float):
    """A = L_uu^-1 K_uf and the FITC diagonal Lambda = diag(K_ff - Q_ff) + s at inputs X (traceable)."""
    _, sf2, _, par = hyper(p)
    A = whitened_cross(p, X, jitter)
    lam = anp.maximum(sf2 - anp.sum(A * A, axis=0), 0.0) + anp.exp(par[0])
    return A, lam


def neg_log_marginal(p: dict, X, y, jitter: float):
    """FITC's collapsed objective -log N(y | c 1, Q_ff + Lambda) (module docstring), traceable by autograd.

    Parameters
    ----------
    p : dict
        Parameter blocks ``Z`` (M, d), ``log_ell``, ``log_sf2``, ``mean`` and ``lik`` (the log noise
        variance), as in ``distviz.gp.objectives``.
    X : ndarray of shape (n, d)
        Training inputs (standardised as the estimator does).
    y : ndarray of shape (n,)
        Training targets.
    jitter : float
        Relative jitter added to K_uu (``jitter * variance`` on its diagonal).

    Returns
    -------
    float
        The negative log marginal likelihood (not divided by n).
    """
    A, lam = _factors(p, X, jitter)
    r = y - p["mean"]
    M, n = A.shape
    Al = A / lam
    LB = anp.linalg.cholesky(anp.eye(M) + anp.dot(Al, A.T))
    b = solve_triangular(LB, anp.dot(Al, r), lower=True)
    logdet = anp.sum(anp.log(lam)) + 2.0 * anp.sum(anp.log(anp.diag(LB)))
    quad = anp.sum(r * r / lam) - anp.dot(b, b)
    return 0.5 * (logdet + quad + n * LOG_2PI)


def posterior_w(p: dict, X, y, jitter: float):
    """FITC's q(w) = N(m_w, L_w L_w^T) in whitened coordinates: m_w = B^-1 A Lambda^-1 r, L_w L_w^T = B^-1.

    Returns ``(m_w, L_w)`` as numpy arrays (L_w lower triangular with a positive diagonal).
    """
    A, lam = _factors(p, X, jitter)
    A, lam = np.asarray(A), np.asarray(lam)
    M = A.shape[0]
    Al = A / lam
    B = np.eye(M) + Al @ A.T
    LB = np.linalg.cholesky(B)
    Binv = np.linalg.solve(LB.T, np.linalg.solve(LB, np.eye(M)))
    m_w = Binv @ (Al @ (np.asarray(y) - float(np.asarray(p["mean"]))))
    return m_w, np.linalg.cholesky(0.5 * (Binv + Binv.T))


class FITCObjective(CollapsedObjective):
    """FITC's collapsed objective (:func:`neg_log_marginal`) for the optimiser, q(u) from :func:`posterior_w`.

    The free blocks are the kernel hyperparameters, mean, noise and (if learnt) the inducing inputs.
    """

    def value(self, p: dict):
        """FITC's objective (not divided by n) at parameter blocks `p`."""
        return neg_log_marginal(p, self.pb.X, self.pb.y, self.pb.jitter)

    def posterior(self, p: dict) -> tuple[np.ndarray, np.ndarray]:
        """FITC's whitened q(w) = N(m_w, L_w L_w^T) at parameter blocks `p`."""
        return posterior_w(p, self.pb.X, self.pb.y, self.pb.jitter)
