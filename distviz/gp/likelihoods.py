"""Observation models p(y | f) of the sparse GP: Gaussian, probit and Poisson (log link).

Each likelihood gives, for a Gaussian marginal q(f_i) = N(mu_i, v_i) (Wei, Sheth & Khardon,
"Direct loss minimization for sparse Gaussian processes", Section 2):

* ``elbo_term``      E_q[-log p(y|f)]      (the ELBO's loss term),
* ``log_pred``       log E_q[p(y|f)]       (minus the log-loss DLM term),
* ``pred_mean``      E_q[E[y|f]]           (the prediction of the square-loss DLM),

all traceable by ``autograd`` in (mu, v, par), plus plain-numpy pieces used by the sampling
estimators (derivatives of log p in f, the likelihood's maximum and maximiser, the tilted mode).
Gaussian and probit log-loss terms are in closed form; the Poisson one is computed by adaptive
Gauss-Hermite quadrature (centred at the mode of q(f) p(y|f), so few nodes are accurate).
"""

from __future__ import annotations

import autograd.numpy as anp
import numpy as np
from autograd.extend import defvjp, primitive
from autograd.scipy.special import gammaln, logsumexp
from autograd.tracer import getval
from scipy import special

from distviz.errors import ConfigError, DataError

LOG_2PI = float(np.log(2.0 * np.pi))

log_ndtr = primitive(special.log_ndtr)
defvjp(log_ndtr, lambda ans, x: lambda g: g * anp.exp(-0.5 * x * x - 0.5 * LOG_2PI - ans))


def _gh(n: int):
    """Gauss-Hermite nodes and log-weights for the weight exp(-t^2)."""
    t, w = np.polynomial.hermite.hermgauss(n)
    return t, np.log(w)


_GH20 = _gh(20)
_GH32 = _gh(32)


def _mills(z):
    """Inverse Mills ratio phi(z) / Phi(z), stable for very negative z."""
    return np.exp(-0.5 * z * z - 0.5 * LOG_2PI - special.log_ndtr(z))


class Likelihood:
    """Base class: an observation model p(y|f) with optional scalar parameter (e.g. noise variance)."""

    name = "base"
    n_par = 0

    # --- data ------------------------------------------------------------------------------
    def validate(self, y: np.ndarray) -> np.ndarray:
        """Check that y lies in the support and return it in the internal coding."""
        raise NotImplementedError

    def init_mean(self, y: np.ndarray) -> float:
        """A sensible initial constant prior mean of f given training targets."""
        return 0.0

    def init_variance(self, y: np.ndarray) -> float:
        """A sensible initial kernel variance given training targets."""
        return 1.0

    def init_par(self, y: np.ndarray) -> np.ndarray:
        """Initial likelihood parameter on the log scale (empty when there is none)."""
        return np.zeros(0)

    def target_mean(self, y):
        """The target on the scale of E[y|f] (probit: 0/1 coding)."""
        return y

    # --- numpy pieces for samplers --------------------------------------------------------
    def log_p(self, y, f, par):
        """log p(y|f), elementwise with broadcasting."""
        raise NotImplementedError

    def dlogp(self, y, f, par):
        """d/df log p(y|f)."""
        raise NotImplementedError

    def d2logp(self, y, f, par):
        """d^2/df^2 log p(y|f) (<= 0: all likelihoods here are log-concave in f)."""
        raise NotImplementedError

    def dlogp_dpar(self, y, f, par):
        """d/d par log p(y|f) for the likelihood parameter (zeros when there is none)."""
        return np.zeros(np.broadcast(y, f).shape)

    def log_max(self, y, par):
        """log of K = max_f p(y|f), the rejection sampler's bound (paper, Appendix A)."""
        raise NotImplementedError

    def argmax_f(self, y, par):
        """The f that maximises p(y|f) (may be +-inf); used for m1 of Appendix A."""
        raise NotImplementedError

    def tilted_mode(self, y, mu, v, par, n_iter: int = 60):
        """Mode of q(f) p(y|f) for q = N(mu, v) by safeguarded Newton steps."""
        f = np.array(np.broadcast_to(mu, np.broadcast(y, mu, v).shape), dtype=float)
        sd = np.sqrt(v)
        for _ in range(n_iter):
            g1 = self.dlogp(y, f, par) - (f - mu) / v
            g2 = self.d2logp(y, f, par) - 1.0 / v
            step = np.clip(-g1 / g2, -3.0 * sd, 3.0 * sd)
            f = f + step
            if np.all(np.abs(step) <= 1e-10 * (1.0 + np.abs(f))):
                break
        return f

    # --- autograd-traceable objective pieces ----------------------------------------------
    def elbo_term(self, y, mu, v, par):
        """E_{N(f|mu,v)}[-log p(y|f)] per point (ELBO loss term, paper Section 2)."""
        t, lw = _GH20
        f = mu[..., None] + anp.sqrt(2.0 * v)[..., None] * t
        lp = self.log_p_ag(y[..., None], f, par)
        return -anp.sum(anp.exp(lw - 0.5 * np.log(np.pi)) * lp, axis=-1)

    def log_p_ag(self, y, f, par):
        """log p(y|f) traceable by autograd (default: the numpy version)."""
        return self.log_p(y, f, par)

    def log_pred(self, y, mu, v, par):
        """log E_{N(f|mu,v)}[p(y|f)] per point (minus the log-loss DLM term, paper Section 2)."""
        raise NotImplementedError

    def pred_mean(self, mu, v, par):
        """Predictive mean E_q[E[y|f]] (the square-loss optimal prediction)."""
        raise NotImplementedError


class GaussianLikelihood(Likelihood):
    """p(y|f) = N(y | f, s) with noise variance s = exp(par) (regression)."""

    name = "gaussian"
    n_par = 1

    def validate(self, y):
        """Any finite real target."""
        return np.asarray(y, dtype=float)

    def init_mean(self, y):
        """Initial prior mean: the sample mean."""
        return float(np.mean(y))

    def init_variance(self, y):
        """Initial kernel variance: 90% of the sample variance."""
        return float(max(np.var(y), 1e-8)) * 0.9

    def init_par(self, y):
        """Initial log noise variance: 10% of the sample variance."""
        return np.array([np.log(max(np.var(y), 1e-8) * 0.1)])

    def log_p(self, y, f, par):
        """Gaussian log-density."""
        s = anp.exp(par[0])
        return -0.5 * (LOG_2PI + par[0]) - (y - f) ** 2 / (2.0 * s)

    def dlogp(self, y, f, par):
        """(y - f) / s."""
        return (y - f) / np.exp(par[0])

    def d2logp(self, y, f, par):
        """-1 / s."""
        return np.full(np.broadcast(y, f).shape, -1.0 / np.exp(par[0]))

    def dlogp_dpar(self, y, f, par):
        """Derivative in the log noise variance: -1/2 + (y-f)^2 / (2 s)."""
        return -0.5 + (y - f) ** 2 / (2.0 * np.exp(par[0]))

    def log_max(self, y, par):
        """max_f N(y|f,s) = (2 pi s)^(-1/2)."""
        return np.full(np.shape(y), -0.5 * (LOG_2PI + par[0]))

    def argmax_f(self, y, par):
        """f = y."""
        return np.asarray(y, dtype=float)

    def tilted_mode(self, y, mu, v, par, n_iter=0):
        """Precision-weighted mean (the tilted distribution is Gaussian)."""
        s = np.exp(par[0])
        return (mu / v + y / s) / (1.0 / v + 1.0 / s)

    def elbo_term(self, y, mu, v, par):
        """Closed form 0.5 log(2 pi s) + ((y - mu)^2 + v) / (2 s)."""
        return 0.5 * (LOG_2PI + par[0]) + ((y - mu) ** 2 + v) / (2.0 * anp.exp(par[0]))

    def log_pred(self, y, mu, v, par):
        """log N(y | mu, v + s) (paper Section 2)."""
        t = v + anp.exp(par[0])
        return -0.5 * (LOG_2PI + anp.log(t)) - (y - mu) ** 2 / (2.0 * t)

    def pred_mean(self, mu, v, par):
        """mu."""
        return mu


class ProbitLikelihood(Likelihood):
    """p(y|f) = Phi(y f) with y in {-1, +1} (binary classification)."""

    name = "probit"

    def validate(self, y):
        """Labels in {0, 1} or {-1, 1}, returned as -1/+1."""
        y = np.asarray(y, dtype=float)
        u = set(np.unique(y).tolist())
        if u <= {0.0, 1.0}:
            return 2.0 * y - 1.0
        if u <= {-1.0, 1.0}:
            return y
        raise DataError("Probit labels must all be in {0, 1} or all in {-1, 1}; recode the target column.")

    def init_mean(self, y):
        """Probit of the positive rate, shrunk away from +-inf."""
        p = np.clip(np.mean(y > 0), 0.05, 0.95)
        return float(special.ndtri(p))

    def target_mean(self, y):
        """0/1 coding of the label."""
        return 0.5 * (y + 1.0)

    def log_p(self, y, f, par):
        """log Phi(y f)."""
        return special.log_ndtr(y * f)

    def log_p_ag(self, y, f, par):
        """log Phi(y f), traceable."""
        return log_ndtr(y * f)

    def dlogp(self, y, f, par):
        """y phi(yf) / Phi(yf)."""
        return y * _mills(y * f)

    def d2logp(self, y, f, par):
        """-r (z + r) with z = y f and r the inverse Mills ratio."""
        z = y * f
        r = _mills(z)
        return -r * (z + r)

    def log_max(self, y, par):
        """sup_f Phi(y f) = 1."""
        return np.zeros(np.shape(y))

    def argmax_f(self, y, par):
        """+inf for y = 1, -inf for y = -1."""
        return np.where(np.asarray(y) > 0, np.inf, -np.inf)

    def log_pred(self, y, mu, v, par):
        """log Phi(y mu / sqrt(1 + v)) (paper Section 2)."""
        return log_ndtr(y * mu / anp.sqrt(1.0 + v))

    def pred_mean(self, mu, v, par):
        """P(y = 1) = Phi(mu / sqrt(1 + v))."""
        return anp.exp(log_ndtr(mu / anp.sqrt(1.0 + v)))


class PoissonLikelihood(Likelihood):
    """p(y|f) = exp(-e^f) e^{y f} / y! (count regression, log link)."""

    name = "poisson"

    def validate(self, y):
        """Non-negative integer counts."""
        y = np.asarray(y, dtype=float)
        if np.any(y < 0) or np.any(y != np.round(y)):
            raise DataError("Poisson targets must be non-negative integer counts; "
                            "remove negative or fractional values.")
        return y

    def init_mean(self, y):
        """log of the mean count (shifted to stay finite)."""
        return float(np.log(np.mean(y) + 0.1))

    def log_p(self, y, f, par):
        """y f - e^f - log y!."""
        return y * f - anp.exp(f) - gammaln(y + 1.0)

    def dlogp(self, y, f, par):
        """y - e^f."""
        return y - np.exp(f)

    def d2logp(self, y, f, par):
        """-e^f."""
        return -np.exp(f) + 0.0 * y

    def log_max(self, y, par):
        """log p(y | lambda = y) (1 for y = 0)."""
        y = np.asarray(y, dtype=float)
        ly = np.where(y > 0, y * np.log(np.where(y > 0, y, 1.0)) - y, 0.0)
        return ly - special.gammaln(y + 1.0)

    def argmax_f(self, y, par):
        """log y (-inf for y = 0)."""
        y = np.asarray(y, dtype=float)
        with np.errstate(divide="ignore"):
            return np.log(y)

    def tilted_mode(self, y, mu, v, par, n_iter=100):
        """Newton from the right of the root: monotone convergence since g' is concave decreasing."""
        f = np.maximum(mu, np.log(y + 1.0)) + 0.0 * v
        for _ in range(n_iter):
            g1 = y - np.exp(f) - (f - mu) / v
            g2 = -np.exp(f) - 1.0 / v
            step = -g1 / g2
            f = f + step
            if np.all(np.abs(step) <= 1e-12 * (1.0 + np.abs(f))):
                break
        return f

    def elbo_term(self, y, mu, v, par):
        """Closed form exp(mu + v/2) - y mu + log y!."""
        return anp.exp(mu + 0.5 * v) - y * mu + gammaln(y + 1.0)

    def log_pred(self, y, mu, v, par):
        """log E_q p(y|f) by 32-node Gauss-Hermite quadrature centred at the tilted mode (Laplace width)."""
        mu0, v0 = getval(mu), getval(v)
        y0 = np.asarray(getval(y), dtype=float)
        c = self.tilted_mode(y0, mu0, v0, par)
        s = 1.0 / np.sqrt(np.exp(c) + 1.0 / v0)
        t, lw = _GH32
        f = c[..., None] + np.sqrt(2.0) * s[..., None] * t
        lq = -0.5 * (LOG_2PI + anp.log(v))[..., None] - (f - mu[..., None]) ** 2 / (2.0 * v[..., None])
        terms = (lw + t * t + 0.5 * np.log(2.0))[None] + np.log(s)[..., None] + lq \
            + self.log_p(y0[..., None], f, par)
        return logsumexp(terms, axis=-1)

    def pred_mean(self, mu, v, par):
        """E[e^f] = exp(mu + v/2)."""
        return anp.exp(mu + 0.5 * v)


LIKELIHOODS = {"gaussian": GaussianLikelihood, "probit": ProbitLikelihood, "poisson": PoissonLikelihood}


def make_likelihood(name: str) -> Likelihood:
    """The likelihood called `name` ('gaussian', 'probit' or 'poisson')."""
    if name not in LIKELIHOODS:
        raise ConfigError(f"Unknown likelihood '{name}'; choose one of: {', '.join(LIKELIHOODS)}.")
    return LIKELIHOODS[name]()
