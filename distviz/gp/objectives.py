"""Sparse-GP objectives (ELBO, beta-ELBO, log-loss DLM, square-loss DLM) with their gradients.

Notation of Wei, Sheth & Khardon (Section 2): q(u) = N(m, S) over inducing values at inputs Z,
q(f_i) = N(mu_i, v_i) with mu_i = c + K_iu K_uu^-1 m and v_i = K_ii + K_iu K_uu^-1 (S - K_uu) K_uu^-1 K_ui.
Internally q(u) is whitened: u = c + L_uu w, q(w) = N(m_w, L_w L_w^T), so m = L_uu m_w,
S = L_uu L_w L_w^T L_uu^T and KL(q(u) || p(u)) = KL(q(w) || N(0, I)); the objective is the same,
the optimisation is better conditioned. Objectives (divided by n for the optimiser):

* ``elbo``:       sum_i E_q[-log p(y_i|f_i)]     + beta KL(q(u) || p(u))
* ``dlm_log``:    sum_i -log E_q[p(y_i|f_i)]     + beta KL
* ``dlm_square``: 1/2 sum_i (E_q[y_i] - y_i)^2   + beta KL.  For the Gaussian likelihood E_q[y_i] = mu_i
  and S only enters the KL, whose S-part is minimised at S = K_uu (L_w = I, the initial value), so
  this equals the paper's 1/2 sum (K_iu K_uu^-1 m - y_i)^2 + beta/2 m^T K_uu^-1 m up to a constant.
  Full-batch Gaussian fits solve m in closed form instead (``distviz.gp.square_dlm``); this form
  serves minibatches and the other likelihoods.
* ``fitc``:       FITC's collapsed -log N(y | c, Q_ff + diag(K_ff - Q_ff) + s I), no KL and no q(u) to
  optimise (Gaussian likelihood; ``distviz.gp.fitc``, the paper's regression baseline, Appendix D).

Gradients: by ``autograd`` for the closed-form / quadrature terms ("exact"; the logistic likelihood's
quadratures differentiated by hand in ``distviz.gp.logistic_grad``), or for the log-loss
DLM term by the bMC / uPS estimators (eq. 7-8, Proposition 1) chained through an autograd VJP of
the map parameters -> (mu, v, KL, likelihood parameter).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import autograd.numpy as anp
import numpy as np
from autograd import value_and_grad
from autograd.scipy.linalg import solve_triangular

from distviz.gp import estimators, logistic_grad
from distviz.gp.kernels import rbf
from distviz.gp.likelihoods import Likelihood, LogisticLikelihood

OBJECTIVES = ("elbo", "dlm_log", "dlm_square", "fitc")   # fitc: distviz.gp.fitc (Gaussian likelihood only)
GRADIENTS = ("exact", "bmc", "ups")


def lower(raw):
    """Lower-triangular factor with positive diagonal from an unconstrained square matrix."""
    return anp.tril(raw, -1) + anp.diag(anp.exp(anp.diag(raw)))


def unlower(L: np.ndarray) -> np.ndarray:
    """Inverse of :func:`lower` (for initialisation from a given factor)."""
    raw = np.tril(L, -1).copy()
    raw[np.diag_indices_from(raw)] = np.log(np.diag(L))
    return raw


@dataclass
class Problem:
    """Everything an objective evaluation needs besides the parameters being optimised."""

    X: np.ndarray
    y: np.ndarray
    lik: Likelihood
    objective: str = "elbo"
    beta: float = 1.0
    gradient: str = "exact"
    n_samples: int = 10
    bmc_form: str = "reparam"
    jitter: float = 1e-6
    fixed: dict = field(default_factory=dict)
    n_total: int | None = None

    def __post_init__(self):
        if self.n_total is None:
            self.n_total = self.X.shape[0]


class Packer:
    """Flatten a dict of arrays to one vector and back (slices + reshapes: cheap under autograd)."""

    def __init__(self, blocks: dict):
        self.keys = sorted(blocks)
        self.shapes = [np.shape(blocks[k]) for k in self.keys]
        sizes = [int(np.prod(s)) for s in self.shapes]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(int)

    def flatten(self, blocks: dict) -> np.ndarray:
        """Concatenate the blocks in key order."""
        return np.concatenate([np.ravel(np.asarray(blocks[k], dtype=float)) for k in self.keys]) \
            if self.keys else np.zeros(0)

    def __call__(self, flat) -> dict:
        """Split a flat vector into the blocks."""
        return {k: anp.reshape(flat[self.offsets[i]:self.offsets[i + 1]], s)
                for i, (k, s) in enumerate(zip(self.keys, self.shapes))}


def assemble(free: dict, fixed: dict) -> dict:
    """Merge optimised and fixed parameter blocks into one dict."""
    p = dict(fixed)
    p.update(free)
    return p


def hyper(p: dict):
    """Kernel / mean / likelihood hyperparameters on their natural scale from the log-parameters."""
    return anp.exp(p["log_ell"]), anp.exp(p["log_sf2"]), p["mean"], p["lik"]


def marginals(p: dict, X, jitter: float):
    """q(f_i) = N(mu_i, v_i) at inputs X (Section 2), and KL(q(u) || p(u)) in whitened form."""
    ell, sf2, c, _ = hyper(p)
    Z = p["Z"]
    M = Z.shape[0]
    Kuu = rbf(Z, Z, ell, sf2) + jitter * sf2 * anp.eye(M)
    Luu = anp.linalg.cholesky(Kuu)
    Kuf = rbf(Z, X, ell, sf2)
    A = solve_triangular(Luu, Kuf, lower=True)
    Lw = lower(p["Lw"])
    mw = p["m"]
    mu = c + anp.dot(A.T, mw)
    B = anp.dot(Lw.T, A)
    v = sf2 - anp.sum(A * A, axis=0) + anp.sum(B * B, axis=0)
    v = anp.maximum(v, 1e-12 * sf2)
    kl = 0.5 * (anp.sum(Lw * Lw) + anp.dot(mw, mw) - M) - anp.sum(anp.log(anp.diag(Lw)))
    return mu, v, kl


def marginals_np(p: dict, X: np.ndarray, jitter: float):
    """Numpy forward pass of :func:`marginals` that also returns the cache for :func:`marginals_backward`."""
    from scipy.linalg import cholesky
    from scipy.linalg import solve_triangular as st
    ell, sf2, c = np.exp(p["log_ell"]), float(np.exp(p["log_sf2"])), float(p["mean"])
    Z = p["Z"]
    M = Z.shape[0]
    Kuu0 = rbf(Z, Z, ell, sf2)
    Luu = cholesky(Kuu0 + jitter * sf2 * np.eye(M), lower=True)
    Kuf = rbf(Z, X, ell, sf2)
    A = st(Luu, Kuf, lower=True)
    Lw = np.tril(p["Lw"], -1) + np.diag(np.exp(np.diag(p["Lw"])))
    mw = p["m"]
    mu = c + A.T @ mw
    B = Lw.T @ A
    v_raw = sf2 - np.sum(A * A, axis=0) + np.sum(B * B, axis=0)
    floor = 1e-12 * sf2
    v = np.maximum(v_raw, floor)
    kl = 0.5 * (np.sum(Lw * Lw) + mw @ mw - M) - np.sum(np.log(np.diag(Lw)))
    cache = dict(X=X, Z=Z, ell=ell, sf2=sf2, Kuu0=Kuu0, Luu=Luu, Kuf=Kuf, A=A, Lw=Lw, mw=mw, B=B,
                 active=v_raw > floor, jitter=jitter)
    return mu, v, float(kl), cache


def _rbf_grads(G, X1, X2, ell, same: bool):
    """Gradients of sum(G * K(X1, X2)) w.r.t. X1 (and X2 if same) and log-lengthscale, given G = dK * K."""
    ell2 = ell * ell
    rs = G.sum(axis=1)
    if same:
        dX1 = 2.0 * (G @ X1 - rs[:, None] * X1) / ell2
    else:
        dX1 = (G @ X2 - rs[:, None] * X1) / ell2
    cs = G.sum(axis=0)
    # sum_ab G_ab (x1_a - x2_b)^2 per feature
    sq = (rs @ (X1 * X1)) + (cs @ (X2 * X2)) - 2.0 * np.sum(X1 * (G @ X2), axis=0)
    return dX1, sq / ell2


def marginals_backward(cache: dict, g_mu, g_v, beta_n: float) -> dict:
    """Hand-derived reverse pass: gradients of sum g_mu mu + sum g_v v + beta_n KL w.r.t. the parameter blocks.

    Chain: mu = c + A^T m_w, v = sf2 - colsum(A^2) + colsum((L_w^T A)^2), A = L_uu^-1 K_uf,
    L_uu = chol(K_uu) (reverse mode of the Cholesky factor as in Murray, 2016), RBF kernel derivatives.
    """
    from scipy.linalg import solve_triangular as st
    A, B, Lw, mw, Luu = cache["A"], cache["B"], cache["Lw"], cache["mw"], cache["Luu"]
    g_v = np.where(cache["active"], g_v, 0.0)
    sf2, ell = cache["sf2"], cache["ell"]
    out = {"mean": np.array(np.sum(g_mu))}
    out["m"] = A @ g_mu + beta_n * mw
    Bg = B * g_v
    dA = np.outer(mw, g_mu) + 2.0 * (Lw @ Bg - A * g_v)
    dLw = 2.0 * (A * g_v) @ B.T + beta_n * (Lw - np.diag(1.0 / np.diag(Lw)))
    dLraw = np.tril(dLw, -1) + np.diag(np.diag(dLw) * np.diag(Lw))
    out["Lw"] = dLraw
    dKuf = st(Luu, dA, lower=True, trans="T")
    dLuu = -np.tril(dKuf @ A.T)
    # Cholesky reverse mode: S = L^-T Phi(L^T dL) L^-1, Phi = lower triangle with halved diagonal
    P = Luu.T @ dLuu
    P = np.tril(P) - 0.5 * np.diag(np.diag(P))
    S = st(Luu, st(Luu, P.T, lower=True, trans="T").T, lower=True, trans="T")
    dKuu = 0.5 * (S + S.T)
    dsf2 = float(np.sum(g_v)) + cache["jitter"] * float(np.trace(dKuu))
    Guu = dKuu * cache["Kuu0"]
    Guf = dKuf * cache["Kuf"]
    dsf2 += (Guu.sum() + Guf.sum()) / sf2
    dZ1, dl1 = _rbf_grads(Guu, cache["Z"], cache["Z"], ell, same=True)
    dZ2, dl2 = _rbf_grads(Guf, cache["Z"], cache["X"], ell, same=False)
    out["Z"] = dZ1 + dZ2
    dlog_ell = dl1 + dl2
    out["log_ell"] = dlog_ell if ell.shape[0] == dlog_ell.shape[0] else np.array([dlog_ell.sum()])
    out["log_sf2"] = np.array(dsf2 * sf2)
    return out


def loss_terms(objective: str, lik: Likelihood, y, mu, v, par):
    """Per-point loss term of the objective (exact / quadrature form)."""
    if objective == "elbo":
        return lik.elbo_term(y, mu, v, par)
    if objective == "dlm_log":
        return -lik.log_pred(y, mu, v, par)
    return 0.5 * (lik.pred_mean(mu, v, par) - lik.target_mean(y)) ** 2


def is_stochastic(objective: str, gradient: str) -> bool:
    """Whether the gradient is a sampling estimate (only the log-loss DLM term is sampled)."""
    return objective == "dlm_log" and gradient in ("bmc", "ups")


class Objective:
    """Callable (flat parameters, batch indices, rng) -> (objective / n, gradient) for one Problem.

    The map parameters -> (mu, v, KL) is differentiated by hand (:func:`marginals_backward`); the
    per-point loss terms by autograd (closed form / quadrature), by hand for the logistic likelihood's
    quadratures (``distviz.gp.logistic_grad``), or by the bMC / uPS estimators.
    """

    def __init__(self, problem: Problem, free: dict):
        self.pb = problem
        self.unflatten = Packer(free)
        self.flat0 = self.unflatten.flatten(free)
        self.sampler_stats = estimators.SamplerStats()
        self._lvg = value_and_grad(self._loss, argnum=(0, 1, 2))
        self._hand = isinstance(problem.lik, LogisticLikelihood)   # its quadratures' gradients written out

    def _loss(self, mu, v, par, y):
        return anp.sum(loss_terms(self.pb.objective, self.pb.lik, y, mu, v, par))

    @property
    def path_packer(self) -> Packer:
        """The packer of the vectors :meth:`record` returns (here: the free blocks')."""
        return self.unflatten

    def params(self, flat) -> dict:
        """All parameter blocks (free and fixed) at the flat free parameters."""
        return assemble(self.unflatten(flat), self.pb.fixed)

    def record(self, flat) -> np.ndarray:
        """What an L-BFGS fit's path keeps per iteration (here: a copy of the flat free parameters)."""
        return np.array(flat, dtype=float)

    def _exact(self, flat, idx):
        """Whole objective / n traced by autograd (reference for tests; slower)."""
        pb = self.pb
        p = assemble(self.unflatten(flat), pb.fixed)
        X, y = pb.X[idx], pb.y[idx]
        mu, v, kl = marginals(p, X, pb.jitter)
        loss = anp.sum(loss_terms(pb.objective, pb.lik, y, mu, v, p["lik"]))
        return (loss * (pb.n_total / X.shape[0]) + pb.beta * kl) / pb.n_total

    def __call__(self, flat, idx=None, rng=None):
        """Objective divided by n and its gradient (a sampling estimate for bMC / uPS)."""
        pb = self.pb
        if idx is None:
            idx = np.arange(pb.X.shape[0])
        p = assemble(self.unflatten(flat), pb.fixed)
        mu, v, kl, cache = marginals_np(p, pb.X[idx], pb.jitter)
        y = pb.y[idx]
        par = np.asarray(p["lik"], dtype=float)
        scale = pb.n_total / len(idx)
        if is_stochastic(pb.objective, pb.gradient):
            if pb.gradient == "bmc":
                est = estimators.bmc(pb.lik, y, mu, v, par, pb.n_samples, rng, form=pb.bmc_form)
            else:
                est = estimators.ups(pb.lik, y, mu, v, par, pb.n_samples, rng, stats=self.sampler_stats)
            loss = -est.value.sum()
            g_mu, g_v, g_par = -est.d_mu, -est.d_v, -np.full(par.shape, est.d_par.sum())
        else:
            with np.errstate(over="ignore", invalid="ignore"):
                if self._hand:
                    loss, g_mu, g_v, g_par = logistic_grad.loss_grad(pb.lik, pb.objective, y, mu, v, par)
                else:
                    loss, (g_mu, g_v, g_par) = self._lvg(mu, v, par, y)
        n = pb.n_total
        if not (np.isfinite(loss) and np.all(np.isfinite(g_mu)) and np.all(np.isfinite(g_v))):
            # an overflowing trial point (e.g. exp(mu + v/2) in a line search): report +inf so the
            # optimiser backtracks instead of crashing
            return float("inf"), np.zeros_like(flat)
        grads = marginals_backward(cache, scale * np.asarray(g_mu) / n, scale * np.asarray(g_v) / n, pb.beta / n)
        grads["lik"] = scale * np.asarray(g_par, dtype=float) / n
        val = (scale * float(loss) + pb.beta * kl) / n
        g = np.concatenate([np.ravel(grads[k]) for k in self.unflatten.keys]) if self.unflatten.keys else np.zeros(0)
        return float(val), g
