"""Posterior-regression targets for WGBoost: log pi_i(theta) up to a constant, with closed-form derivatives.

Each target holds one posterior per data point,
pi_i(theta) ∝ p(y_i | theta) p(theta) (WGBoost paper, Section 3.1), written in unconstrained
coordinates theta in R^d (Section 3.2 and App. F). Arrays are batched: `theta` has shape
(n, N, d) (rows, particles, coordinates) and `y` is the prepared target array whose first axis
is the row; every method broadcasts the row's datum over the particle axis.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from scipy.special import gammaln

from distviz.errors import ConfigError, DataError
from distviz.validation import kernel_array

LOG_2PI = float(np.log(2.0 * np.pi))


def lse(a, axis=-1, keepdims=False):
    """log sum exp along `axis` (plain numpy; scipy's version is slow on small batched arrays)."""
    m = np.max(a, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    out = np.log(np.sum(np.exp(a - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


def _logratio_softmax(theta):
    """Class probabilities q_1..q_{K-1} and log z = log(1 + sum_j e^theta_j) of log-ratio coordinates."""
    m = np.maximum(theta.max(axis=-1, keepdims=True), 0.0)
    e = np.exp(theta - m)
    e0 = np.exp(-m)
    z = e0 + e.sum(axis=-1, keepdims=True)
    return e / z, (np.log(z) + m)[..., 0]


@njit(cache=True)
def _normal_grad_hess(theta, y, E1, s0, a0, b0):
    """Gradient and Hessian diagonal of the App. F.1 normal posterior in one pass; E1 = exp(-log sigma)."""
    n, N, _ = theta.shape
    g = np.empty((n, N, 2))
    h = np.empty((n, N, 2))
    ip = 1.0 / (s0 * s0)
    for i in range(n):
        yi = y[i, 0]
        for j in range(N):
            m = theta[i, j, 0]
            e1 = E1[i, j]
            e2 = e1 * e1
            r = yi - m
            r2e2 = r * r * e2
            g[i, j, 0] = r * e2 - m * ip
            g[i, j, 1] = r2e2 - (a0 + 1.0) + b0 * e1
            h[i, j, 0] = -e2 - ip
            h[i, j, 1] = -2.0 * r2e2 - b0 * e1
    return g, h


@njit(cache=True)
def _normal_loglik_rows(y, theta, E1, c):
    n, N, _ = theta.shape
    out = np.empty((n, N))
    for i in range(n):
        for j in range(N):
            z = (y[i, 0] - theta[i, j, 0]) * E1[i, j]
            out[i, j] = -0.5 * z * z - theta[i, j, 1] - c
    return out


class Target:
    """Protocol of a WGBoost target: gradient and Hessian of log pi_i(theta) at a batch of particles."""

    name = "target"
    d = 1
    has_likelihood = False

    def prepare_y(self, y) -> np.ndarray:
        """Validate the raw targets `y` and return the array the other methods take (first axis = rows)."""
        y = np.asarray(y, dtype=float)
        if y.ndim == 1:
            y = y[:, None]
        if not np.all(np.isfinite(y)):
            raise DataError("y contains NaN or infinite values; remove or impute those rows before fitting.")
        return y

    def logpdf(self, theta, y):
        """log pi_i(theta) up to an additive constant, shape (n, N)."""
        raise NotImplementedError

    def grad(self, theta, y):
        """Gradient of log pi_i at each particle, shape (n, N, d)."""
        raise NotImplementedError

    def hess_diag(self, theta, y):
        """Diagonal of the Hessian of log pi_i at each particle, shape (n, N, d)."""
        return np.diagonal(self.hess(theta, y), axis1=-2, axis2=-1).copy()

    def grad_hess_diag(self, theta, y):
        """Gradient and Hessian diagonal together (targets may share work between them)."""
        return self.grad(theta, y), self.hess_diag(theta, y)

    def hess(self, theta, y):
        """Full Hessian of log pi_i at each particle, shape (n, N, d, d) (used by NKA)."""
        if self.d == 1:
            return self.hess_diag(theta, y)[..., None]
        raise ConfigError(f"Target '{self.name}' has no full Hessian; use method='ska' or 'fka', "
                          f"or give the target a full Hessian.")

    def averaged(self, theta, y):
        """Data-averaged gradient and Hessian diagonal (1/D) sum_i at particles theta (N, d) (App. F.4)."""
        g = self.grad(np.broadcast_to(theta, (y.shape[0],) + theta.shape), y).mean(axis=0)
        h = self.hess_diag(np.broadcast_to(theta, (y.shape[0],) + theta.shape), y).mean(axis=0)
        return g, h

    def averaged_hess(self, theta, y):
        """Data-averaged full Hessian at particles theta (N, d) -> (N, d, d) (App. F.4 with NKA)."""
        return self.hess(np.broadcast_to(theta, (y.shape[0],) + theta.shape), y).mean(axis=0)

    # predictive side (eq. 6)
    def log_likelihood(self, ygrid, theta):
        """log p(y | theta) for every grid value and particle: ygrid (G,), theta (n, N, d) -> (n, N, G)."""
        raise ConfigError(f"Target '{self.name}' has no output likelihood; predictive densities need a "
                          f"named target ('normal', 'categorical', 'poisson') or one with log_likelihood.")

    def log_likelihood_rows(self, y, theta):
        """log p(y_i | theta_i^n) at each row's own datum: y (n, ...), theta (n, N, d) -> (n, N)."""
        raise ConfigError(f"Target '{self.name}' has no output likelihood.")

    def point(self, theta):
        """Bayes action under squared loss (the predictive mean, Section 3.1), per row."""
        return theta.mean(axis=1)

    def ood_params(self, theta):
        """Parameters whose particle variance is the OOD dispersion (Section 4.3), shape (n, N, p)."""
        return theta

    def gaussian(self, y):
        """(mean, sd) of a Gaussian target per row, or None when the target is not a known Gaussian."""
        return None

    def spec(self) -> dict | None:
        """JSON-able description used by save/load; None for targets that cannot be rebuilt by name."""
        return None

    def flow_stats(self, y):
        """(kind, stats) for the compiled averaged flow of App. F.4, or None to use `averaged`."""
        return None


class NormalTarget(Target):
    """Normal location-scale output in (m, log sigma), prior N(m | 0, s0^2) x InvGamma(sigma | a0, b0).

    log pi = -(y - m)^2 e^{-2s} / 2 - m^2 / (2 s0^2) - (a0 + 1) s - b0 e^{-s}: the likelihood's 1/sigma,
    the inverse-gamma prior and the Jacobian |d sigma / d s| = e^s of App. F.1 (Example 1).
    """

    name = "normal"
    d = 2
    has_likelihood = True

    def __init__(self, prior_scale=10.0, alpha=0.01, beta=0.01):
        if prior_scale <= 0 or alpha <= 0 or beta <= 0:
            raise ConfigError("The normal target's prior_scale, alpha and beta must be positive.")
        self.s0, self.a0, self.b0 = float(prior_scale), float(alpha), float(beta)

    def prepare_y(self, y):
        y = super().prepare_y(y)
        if y.shape[1] != 1:
            raise DataError(f"The normal target needs one output column; y has {y.shape[1]}.")
        return y

    def logpdf(self, theta, y):
        m, s = theta[..., 0], theta[..., 1]
        r = y[:, :1] - m
        return (-0.5 * r * r * np.exp(-2 * s) - 0.5 * m * m / self.s0 ** 2 - (self.a0 + 1) * s
                - self.b0 * np.exp(-s))

    def grad(self, theta, y):
        m, s = theta[..., 0], theta[..., 1]
        r = y[:, :1] - m
        e2 = np.exp(-2 * s)
        return np.stack([r * e2 - m / self.s0 ** 2, r * r * e2 - (self.a0 + 1) + self.b0 * np.exp(-s)], -1)

    def hess_diag(self, theta, y):
        m, s = theta[..., 0], theta[..., 1]
        r = y[:, :1] - m
        e2 = np.exp(-2 * s)
        return np.stack([-e2 - 1.0 / self.s0 ** 2, -2 * r * r * e2 - self.b0 * np.exp(-s)], -1)

    def grad_hess_diag(self, theta, y):
        theta = kernel_array(theta)
        e1 = np.exp(-theta[..., 1])  # numpy's vectorised exp is several times faster than a compiled scalar exp
        return _normal_grad_hess(theta, kernel_array(y), e1, self.s0, self.a0, self.b0)

    def hess(self, theta, y):
        m, s = theta[..., 0], theta[..., 1]
        r = y[:, :1] - m
        e2 = np.exp(-2 * s)
        h = np.empty(theta.shape + (2,))
        h[..., 0, 0] = -e2 - 1.0 / self.s0 ** 2
        h[..., 1, 1] = -2 * r * r * e2 - self.b0 * np.exp(-s)
        h[..., 0, 1] = h[..., 1, 0] = -2 * r * e2
        return h

    def averaged(self, theta, y):
        # sufficient statistics: mean_i (y_i - m)^2 = var(y) + (ybar - m)^2
        ybar, vy = float(y[:, 0].mean()), float(y[:, 0].var())
        m, s = theta[:, 0], theta[:, 1]
        e2, e1 = np.exp(-2 * s), np.exp(-s)
        r2 = vy + (ybar - m) ** 2
        g = np.stack([(ybar - m) * e2 - m / self.s0 ** 2, r2 * e2 - (self.a0 + 1) + self.b0 * e1], -1)
        h = np.stack([-e2 - 1.0 / self.s0 ** 2, -2 * r2 * e2 - self.b0 * e1], -1)
        return g, h

    def averaged_hess(self, theta, y):
        ybar, vy = float(y[:, 0].mean()), float(y[:, 0].var())
        m, s = theta[:, 0], theta[:, 1]
        e2 = np.exp(-2 * s)
        h = np.empty(theta.shape + (2,))
        h[:, 0, 0] = -e2 - 1.0 / self.s0 ** 2
        h[:, 1, 1] = -2 * (vy + (ybar - m) ** 2) * e2 - self.b0 * np.exp(-s)
        h[:, 0, 1] = h[:, 1, 0] = -2 * (ybar - m) * e2
        return h

    def log_likelihood(self, ygrid, theta):
        m, s = theta[..., 0][..., None], theta[..., 1][..., None]
        return -0.5 * ((ygrid - m) * np.exp(-s)) ** 2 - s - 0.5 * LOG_2PI

    def log_likelihood_rows(self, y, theta):
        theta = kernel_array(theta)
        return _normal_loglik_rows(kernel_array(y), theta, np.exp(-theta[..., 1]),
                                   0.5 * LOG_2PI)

    def point(self, theta):
        return theta[..., 0].mean(axis=1)

    def flow_stats(self, y):
        return 0, [y[:, 0].mean(), y[:, 0].var(), self.s0, self.a0, self.b0]

    def spec(self):
        return {"name": "normal", "prior_scale": self.s0, "alpha": self.a0, "beta": self.b0}


class CategoricalTarget(Target):
    """Categorical(K) output in log-ratio coordinates theta_j = log(q_j / q_K), logistic-normal prior.

    log pi = theta_y [y < K] - log(1 + sum_j e^{theta_j}) - |theta|^2 / (2 s0^2) (App. F.3, Example 2).
    Labels are integers 0..K-1 after encoding; the last class is the reference.
    """

    name = "categorical"
    has_likelihood = True

    def __init__(self, n_classes=None, prior_scale=10.0):
        if prior_scale <= 0:
            raise ConfigError("The categorical target's prior_scale must be positive.")
        if n_classes is not None and int(n_classes) < 2:
            raise ConfigError("The categorical target needs at least 2 classes.")
        self.K = None if n_classes is None else int(n_classes)
        self.s0 = float(prior_scale)

    @property
    def d(self):
        """Dimension K - 1 of the log-ratio coordinates."""
        if self.K is None:
            raise ConfigError("The categorical target's number of classes is unknown before fit.")
        return self.K - 1

    def prepare_y(self, y):
        y = np.asarray(y)
        if y.ndim != 1:
            y = y.reshape(-1) if y.ndim == 2 and y.shape[1] == 1 else y
        if y.ndim != 1:
            raise DataError("The categorical target needs a 1-D array of integer class labels.")
        yf = np.asarray(y, dtype=float)
        if not np.all(np.isfinite(yf)) or np.any(yf != np.round(yf)) or np.any(yf < 0):
            raise DataError("Categorical labels must be integers 0..K-1; encode the classes first.")
        yi = yf.astype(np.int64)
        if self.K is None:
            self.K = int(yi.max()) + 1 if yi.size else 2
            self.K = max(self.K, 2)
        if yi.size and yi.max() >= self.K:
            raise DataError(f"Categorical label {yi.max()} is out of range for {self.K} classes.")
        onehot = np.zeros((yi.size, self.K - 1))
        mask = yi < self.K - 1
        onehot[np.nonzero(mask)[0], yi[mask]] = 1.0
        return onehot

    def _probs(self, theta):
        p, _ = _logratio_softmax(theta)
        return np.concatenate([p, 1.0 - p.sum(axis=-1, keepdims=True)], -1)

    def logpdf(self, theta, y):
        _, logz = _logratio_softmax(theta)
        return np.einsum("inj,ij->in", theta, y) - logz - 0.5 * np.sum(theta ** 2, -1) / self.s0 ** 2

    def grad(self, theta, y):
        p, _ = _logratio_softmax(theta)
        return y[:, None, :] - p - theta / self.s0 ** 2

    def hess_diag(self, theta, y):
        p, _ = _logratio_softmax(theta)
        return -p * (1 - p) - 1.0 / self.s0 ** 2

    def grad_hess_diag(self, theta, y):
        p, _ = _logratio_softmax(theta)
        return y[:, None, :] - p - theta / self.s0 ** 2, -p * (1 - p) - 1.0 / self.s0 ** 2

    def hess(self, theta, y):
        p, _ = _logratio_softmax(theta)
        h = p[..., :, None] * p[..., None, :]
        idx = np.arange(p.shape[-1])
        h[..., idx, idx] -= p + 1.0 / self.s0 ** 2
        return h

    def averaged(self, theta, y):
        p, _ = _logratio_softmax(theta)
        return y.mean(axis=0) - p - theta / self.s0 ** 2, -p * (1 - p) - 1.0 / self.s0 ** 2

    def averaged_hess(self, theta, y):
        return self.hess(theta, y[:1])

    def log_likelihood(self, ygrid, theta):
        yg = np.asarray(ygrid, dtype=np.int64)
        if np.any(yg < 0) or np.any(yg >= self.K):
            raise DataError(f"Class labels for the predictive must lie in 0..{self.K - 1}.")
        _, logz = _logratio_softmax(theta)
        z = np.concatenate([theta, np.zeros(theta.shape[:-1] + (1,))], -1)
        return z[..., yg] - logz[..., None]

    def log_likelihood_rows(self, y, theta):
        _, logz = _logratio_softmax(theta)
        return np.einsum("ink,ik->in", theta, y) - logz

    def point(self, theta):
        return self._probs(theta).mean(axis=1)

    def ood_params(self, theta):
        return self._probs(theta)

    def flow_stats(self, y):
        return 1, list(y.mean(axis=0)) + [self.s0]

    def spec(self):
        return {"name": "categorical", "n_classes": self.K, "prior_scale": self.s0}


class PoissonTarget(Target):
    """Poisson output in the log rate theta = log lambda with prior N(theta | 0, s0^2).

    log pi = y theta - e^theta - theta^2 / (2 s0^2).
    """

    name = "poisson"
    d = 1
    has_likelihood = True

    def __init__(self, prior_scale=10.0):
        if prior_scale <= 0:
            raise ConfigError("The Poisson target's prior_scale must be positive.")
        self.s0 = float(prior_scale)

    def prepare_y(self, y):
        y = super().prepare_y(y)
        if y.shape[1] != 1 or np.any(y < 0) or np.any(y != np.round(y)):
            raise DataError("The Poisson target needs one column of non-negative integer counts.")
        return y

    def logpdf(self, theta, y):
        t = theta[..., 0]
        return y[:, :1] * t - np.exp(t) - 0.5 * t * t / self.s0 ** 2

    def grad(self, theta, y):
        t = theta[..., 0]
        return (y[:, :1] - np.exp(t) - t / self.s0 ** 2)[..., None]

    def hess_diag(self, theta, y):
        t = theta[..., 0]
        return (-np.exp(t) - 1.0 / self.s0 ** 2 + 0 * y[:, :1])[..., None]

    def averaged(self, theta, y):
        t = theta[:, 0]
        return ((y[:, 0].mean() - np.exp(t) - t / self.s0 ** 2)[:, None],
                (-np.exp(t) - 1.0 / self.s0 ** 2)[:, None])

    def log_likelihood(self, ygrid, theta):
        k = np.asarray(ygrid, dtype=float)
        t = theta[..., 0][..., None]
        return k * t - np.exp(t) - gammaln(k + 1)

    def log_likelihood_rows(self, y, theta):
        t = theta[..., 0]
        return y[:, :1] * t - np.exp(t) - gammaln(y[:, :1] + 1)

    def point(self, theta):
        return np.exp(theta[..., 0]).mean(axis=1)

    def flow_stats(self, y):
        return 2, [y[:, 0].mean(), self.s0]

    def spec(self):
        return {"name": "poisson", "prior_scale": self.s0}


class CallableTarget(Target):
    """A target given by callables grad(theta, y) and hess_diag(theta, y) (optionally hess, logpdf).

    Callables receive theta (n, N, d) and the prepared y (n, p) and return arrays of theta's shape
    ((n, N, d, d) for `hess`). `gaussian(y) -> (mean (n, d), sd (n, d))` declares the target a known
    Gaussian so that the trace records MMD^2 in closed form (App. E).
    """

    name = "callable"
    has_likelihood = False

    def __init__(self, grad, hess_diag=None, hess=None, d=1, logpdf=None, gaussian=None, log_likelihood=None,
                 point=None):
        if not callable(grad):
            raise ConfigError("A callable target needs grad(theta, y) returning d log pi / d theta.")
        self.d = int(d)
        self._grad, self._hd, self._h, self._lp, self._gauss = grad, hess_diag, hess, logpdf, gaussian
        self._ll, self._point = log_likelihood, point
        self.has_likelihood = log_likelihood is not None

    def logpdf(self, theta, y):
        if self._lp is None:
            raise ConfigError("This callable target has no logpdf.")
        return np.asarray(self._lp(theta, y), dtype=float)

    def grad(self, theta, y):
        return np.asarray(self._grad(theta, y), dtype=float).reshape(theta.shape)

    def hess_diag(self, theta, y):
        if self._hd is not None:
            return np.broadcast_to(np.asarray(self._hd(theta, y), dtype=float), theta.shape)
        if self._h is not None:
            return np.diagonal(self.hess(theta, y), axis1=-2, axis2=-1).copy()
        raise ConfigError("This callable target has no Hessian; use method='fka' or 'langevin', "
                          "or pass hess_diag=.")

    def hess(self, theta, y):
        if self._h is not None:
            return np.broadcast_to(np.asarray(self._h(theta, y), dtype=float), theta.shape + (self.d,))
        if self.d == 1 and self._hd is not None:
            return self.hess_diag(theta, y)[..., None]
        raise ConfigError("NKA needs the full Hessian of log pi; pass hess= to the callable target.")

    def log_likelihood(self, ygrid, theta):
        if self._ll is None:
            return super().log_likelihood(ygrid, theta)
        return np.asarray(self._ll(np.asarray(ygrid), theta), dtype=float)

    def log_likelihood_rows(self, y, theta):
        if self._ll is None:
            return super().log_likelihood_rows(y, theta)
        return np.stack([self._ll(y[i, :1], theta[i:i + 1])[0, :, 0] for i in range(y.shape[0])])

    def point(self, theta):
        return self._point(theta) if self._point is not None else theta.mean(axis=1)

    def gaussian(self, y):
        return None if self._gauss is None else self._gauss(y)


def gaussian_location_target(scale=0.5) -> CallableTarget:
    """The App. E target pi_i(theta) = N(theta | y_i, scale^2) built as a generic callable target.

    With y_i = sin(x_i) and scale = 0.5 (a standard deviation) this is the paper's synthetic study.
    """
    s2 = float(scale) ** 2

    def grad(theta, y):
        return -(theta - y[:, None, :1]) / s2

    def hess_diag(theta, y):
        return np.full(theta.shape, -1.0 / s2)

    def logpdf(theta, y):
        return -0.5 * ((theta[..., 0] - y[:, :1]) ** 2) / s2

    def gaussian(y):
        return y[:, :1], np.full((y.shape[0], 1), float(scale))

    return CallableTarget(grad, hess_diag=hess_diag, d=1, logpdf=logpdf, gaussian=gaussian)


TARGETS = {"normal": NormalTarget, "categorical": CategoricalTarget, "poisson": PoissonTarget}


def make_target(target) -> Target:
    """Resolve a target name or object into a fresh Target instance."""
    if isinstance(target, str):
        if target not in TARGETS:
            raise ConfigError(f"Unknown WGBoost target '{target}'; choose one of {', '.join(TARGETS)} "
                              f"or pass a Target object.")
        return TARGETS[target]()
    if isinstance(target, dict):
        spec = dict(target)
        name = spec.pop("name", None)
        if name not in TARGETS:
            raise ConfigError(f"Unknown WGBoost target spec {target!r}.")
        return TARGETS[name](**spec)
    if isinstance(target, Target):
        return target
    raise ConfigError("target must be 'normal', 'categorical', 'poisson' or a distviz Target object "
                      "(e.g. CallableTarget(grad, hess_diag)).")
