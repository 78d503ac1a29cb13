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
from autograd import value_and_grad
from autograd.scipy.linalg import solve_triangular

from distviz.gp import estimators
from distviz.gp.kernels import rbf
from distviz.gp.objectives import Packer, Problem, assemble, hyper, unlower

LOG_2PI = float(np.log(2.0 * np.pi))


def _factors(p: dict, X, jitter: float):
    """A = L_uu^-1 K_uf and the FITC diagonal Lambda = diag(K_ff - Q_ff) + s at inputs X (traceable)."""
    ell, sf2, _, par = hyper(p)
    Z = p["Z"]
    Kuu = rbf(Z, Z, ell, sf2) + jitter * sf2 * anp.eye(Z.shape[0])
    Luu = anp.linalg.cholesky(Kuu)
    A = solve_triangular(Luu, rbf(Z, X, ell, sf2), lower=True)
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


class FITCObjective:
    """Callable (flat parameters, batch indices, rng) -> (FITC objective / n, gradient), the interface of
    ``distviz.gp.objectives.Objective``.

    The free blocks are the kernel hyperparameters, mean, noise and (if learnt) the inducing inputs;
    q(u) is computed from them (``posterior_w``) by :meth:`params`.  Batches are refused by the
    estimator (the collapsed objective does not split over rows), so `idx` must cover all rows.
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

    def _value(self, flat):
        pb = self.pb
        p = assemble(self.unflatten(flat), pb.fixed)
        return neg_log_marginal(p, pb.X, pb.y, pb.jitter) / pb.n_total

    def __call__(self, flat, idx=None, rng=None):
        """FITC objective divided by n and its gradient (``idx`` and ``rng`` are unused)."""
        flat = np.asarray(flat, dtype=float)
        try:
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                # nothing free (fixed hyperparameters and inducing inputs): the value alone
                val, g = self._vg(flat) if flat.size else (self._value(flat), np.zeros(0))
        except np.linalg.LinAlgError:   # a trial point of a line search with a singular B or K_uu
            return float("inf"), np.zeros_like(flat)
        if not (np.isfinite(val) and np.all(np.isfinite(g))):
            return float("inf"), np.zeros_like(flat)
        return float(val), np.asarray(g, dtype=float)

    def params(self, flat) -> dict:
        """All parameter blocks at the flat free parameters, q(w) (``m``, the raw factor ``Lw``) included."""
        pb = self.pb
        p = assemble(self.unflatten(np.asarray(flat, dtype=float)), pb.fixed)
        p = {k: np.asarray(v, dtype=float) for k, v in p.items()}
        m_w, Lw = posterior_w(p, pb.X, pb.y, pb.jitter)
        p["m"], p["Lw"] = m_w, unlower(Lw)
        return p

    def record(self, flat) -> np.ndarray:
        """The flat vector of every block (``path_packer``'s order) at the flat free parameters."""
        return self.path_packer.flatten(self.params(flat))
