"""WGBoost as a law of the shared boosting engine (`distviz.boosting.engine.BoostingEngine`).

Matsubara, "Wasserstein Gradient Boosting" (../shared/papers/wasserstein_gradient_boosting.md).  The
iterate of a training row is its N particles flattened, F_i = vec(theta_i^1, ..., theta_i^N) in R^{N d};
the pseudo-responses of a round are the kernelised Wasserstein directions at the current particles
(SKA eq. 7-9, FKA eq. 7, NKA eq. 17 with its trust-region damping, Langevin App. B), and the update is
F <- F + nu f(x) (eq. 5).  The monitored loss is the NLL of the particle-averaged predictive (eq. 6); the
validation RMSE of its mean is a second early-stopping metric.  Everything random (Langevin noise,
row subsampling) is drawn from the estimator's generator in the order WGBoost always drew it: the
direction first, then the round's subsample.
"""

from __future__ import annotations

import numpy as np

from distviz.boosting import wg_kernels as K
from distviz.boosting.law import Law
from distviz.families.posteriors import lse

__all__ = ["ParticleTrace", "WGLaw", "damp"]

# NKA's trust region: a particle moves at most this far (Euclidean, in theta) per round before the tree
# fit; the full Newton direction of eq. 17 can be very long where a row's posterior is flat or not
# log-concave, and one such step sends sigma to 0 in the normal target (a damped Newton step).
NKA_MAX_STEP = 1.0


def damp(V, lr, max_step):
    """Scale each particle's direction so that lr * |v| <= max_step; returns (V, rows that were damped)."""
    norm = np.sqrt(np.sum(V * V, axis=2, keepdims=True))
    scale = np.minimum(1.0, max_step / np.maximum(lr * norm, 1e-300))
    damped = (scale < 1.0).any(axis=(1, 2))
    return V * scale, damped


class WGLaw(Law):
    """WGBoost's particles as an engine law: iterate (n, N d), Wasserstein directions as targets, eq. 6 NLL as loss.

    Parameters
    ----------
    target : distviz.families.posteriors.Target
        The per-row posterior target (its gradients, Hessians and likelihood).
    method : {"ska", "fka", "nka", "langevin"}
        Which direction (SKA eq. 7-9, FKA eq. 7, NKA eq. 17, Langevin App. B).
    init_particles : ndarray of shape (N, d)
        The initial particles, the same for every row (App. F.4).
    bandwidth : float
        The kernel bandwidth h.
    rng : numpy.random.Generator
        The estimator's generator (Langevin noise, row subsampling).
    subsample : float
        Fraction of rows each round's tree sees.
    """

    name = "wgboost"
    gain_name = "Gain^reg"
    description = "WGBoost: particles moved along the kernelised Wasserstein direction (eq. 5)"
    target_name = "direction"     # what the engine's fault messages call a round's pseudo-response
    finite_iterate = True         # a round whose particles are not all finite is dropped, whatever the NLL says
    metric_names = ("rmse",)      # validation metrics besides the NLL (early_stopping_metric)

    def __init__(self, target, method, init_particles, bandwidth, rng, subsample=1.0):
        """target: a distviz.families.posteriors.Target; init_particles (N, d); rng: the estimator's numpy Generator."""
        self.target = target
        self.method = method
        self.init_particles = np.asarray(init_particles, dtype=np.float64)
        self.N, self.d = self.init_particles.shape
        self.dim = self.N * self.d
        self.bandwidth = float(bandwidth)
        self.rng = rng
        self.subsample = float(subsample)
        self.has_loss = bool(target.has_likelihood)

    def _particles(self, F):
        return F.reshape(F.shape[0], self.N, self.d)

    # ------------------------------------------------------------------ engine protocol
    def prepare(self, y, w):
        """The targets as the target prepared them (n, q); weights play no part in the particle flow."""
        return y

    def init(self, data, w):
        """The initial particles, the same for every input (App. F.4), flattened to (N d,)."""
        return self.init_particles.reshape(-1)

    def update(self, F, step):
        """F + nu f (eq. 5); particles are never projected."""
        return F + step, np.zeros(F.shape[0], dtype=bool)

    def loss(self, F, data):
        """Per-row NLL of the eq. 6 predictive, -log (1/N) sum_n p(y_i | theta_i^n); NaN without a likelihood."""
        if not self.has_loss:
            return np.full(F.shape[0], np.nan)
        return np.log(self.N) - lse(self.target.log_likelihood_rows(data, self._particles(F)), axis=1)

    def mean_loss(self, F, data, w):
        """Mean eq. 6 NLL over the rows (WGBoost's monitoring value; weights are not used)."""
        if not self.has_loss:
            return float("nan")
        return K.mixture_nll(self.target.log_likelihood_rows(data, self._particles(F)))

    def metrics(self, F, data) -> dict:
        """Validation RMSE of the predictive mean (Section 3.1's point prediction) for a scalar y, else NaN."""
        rmse = float("nan")
        if data.shape[1] == 1:
            pt = self.target.point(self._particles(F))
            if pt.ndim == 1:
                rmse = float(np.sqrt(np.mean((data[:, 0] - pt) ** 2)))
        return {"rmse": rmse}

    def direction(self, P, Y, learning_rate):
        """The method's Wasserstein direction at particles P (n, N, d) (module docstring)."""
        t, h = self.target, self.bandwidth
        if self.method == "ska":
            G, Hd = t.grad_hess_diag(P, Y)
            return K.ska_direction(P, G, Hd, h)
        G = t.grad(P, Y)
        if self.method == "fka":
            return K.fka_direction(P, G, h)
        if self.method == "nka":
            return K.nka_direction(P, G, t.hess(P, Y), h)
        return K.langevin_direction(G, float(learning_rate), self.rng)

    def targets_checked(self, F, data, learning_rate):
        """(targets (n, N d), rows whose direction was non-finite and set to 0, rows NKA's trust region damped)."""
        V = self.direction(self._particles(F), data, learning_rate)
        bad = ~np.isfinite(V).all(axis=(1, 2))
        n_bad = int(bad.sum())
        if n_bad and n_bad < V.shape[0]:   # a row whose direction overflowed gets no update this round
            V[bad] = 0.0
        n_damped = 0
        if self.method == "nka" and n_bad < V.shape[0]:
            V, damped = damp(V, float(learning_rate), NKA_MAX_STEP)
            n_damped = int(damped.sum())
        return V.reshape(F.shape[0], self.dim), n_bad, n_damped

    def targets(self, F, data, learning_rate):
        """The round's targets (see targets_checked)."""
        return self.targets_checked(F, data, learning_rate)[0]

    def round_weights(self, w, n):
        """This round's tree weights: a random subset of round(subsample n) rows (weight 1), or w itself."""
        n_sub = max(1, round(self.subsample * n))
        if n_sub >= n:
            return w
        out = np.zeros(n)
        out[self.rng.permutation(n)[:n_sub]] = 1.0
        return out


class ParticleTrace:
    """Engine callback keeping the particles of a display subset and their MMD^2 to a Gaussian posterior per round."""

    def __init__(self, law: WGLaw, obs, gauss=None, mmd_bandwidth=0.025):
        """obs: training rows to record; gauss: (mean, sd) of each recorded row's Gaussian posterior, or None."""
        self.law, self.obs, self.gauss, self.h = law, np.asarray(obs), gauss, float(mmd_bandwidth)
        self.particles: list[np.ndarray] = []
        self.mmd2: list[float] = []

    def _record(self, F):
        P = self.law._particles(F)[self.obs]
        self.particles.append(P.astype(np.float32))
        self.mmd2.append(np.nan if self.gauss is None else
                         float(np.mean(K.mmd2_gaussian_rows(P, self.gauss[0], self.gauss[1], self.h))))

    def start(self, F_train):
        """Round 0: the initial particles."""
        self._record(F_train)

    def __call__(self, info) -> bool:
        """Record round `info.round`; never asks to stop."""
        self._record(info.F_train)
        return False
