"""Value and (mu, v)-gradient of the logistic likelihood's quadrature terms, in plain numpy.

The same quadratures as ``distviz.gp.likelihoods.LogisticLikelihood`` (its class docstring; dlm_sparse_gp.txt
Section 2 for the terms, Table 1 / Appendix C for sigma(y f)), with their derivatives in mu and v written out
instead of traced by autograd.  Each row takes only the quadrature branch it uses (32-node Gauss-Hermite for a
narrow q or one far from the kink; the kink taken out and 64-node Gauss-Laguerre for the rest), so the other
branch is not evaluated; the values are those of the traced form up to floating-point rounding.  With z = y f,
m = y mu, sd = sqrt(v), phi and Phi the standard normal density and cdf, N(t | m, v) the normal density:

* ELBO term E log(1 + e^{-z}):
  Gauss-Hermite  sum_k w_k log(1 + e^{-z_k}), z_k = m + sqrt(2 v) t_k, d/dz_k = -sigma(-z_k);
  kink form  -m Phi(-m/sd) + sd phi(m/sd) + sum_l w_l g(t_l) [N(t_l | m, v) + N(-t_l | m, v)], whose first two
  terms have d/dm = -Phi(-m/sd) and d/dv = phi(m/sd) / (2 sd).
* log E sigma(z):
  adaptive Gauss-Hermite (nodes f_k at the tilted mode, held fixed)  logsumexp_k T_k with
  T_k = const_k + log N(f_k | mu, v) + log p(y | f_k), so d/dmu = sum_k pi_k (f_k - mu) / v and
  d/dv = sum_k pi_k [(f_k - mu)^2 / (2 v^2) - 1 / (2 v)], pi = softmax(T);
  kink form  log P, P = Phi(m/sd) + sum_l w_l h(t_l) [N(-t_l | m, v) - N(t_l | m, v)], with
  dPhi(m/sd)/dm = phi(m/sd) / sd, dPhi(m/sd)/dv = -m phi(m/sd) / (2 v sd) (zero gradient where P is floored).

The normal density's derivatives are dN(t | m, v)/dm = N (t - m) / v and dN/dv = N [(t - m)^2 / (2 v^2) - 1 / (2 v)].
"""

from __future__ import annotations

import numpy as np
from scipy import special

from distviz.gp.likelihoods import _GH32, _LAG64, LOG_2PI, LogisticLikelihood, _kink_side

_W_GH = np.exp(_GH32[1] - 0.5 * np.log(np.pi))   # Gauss-Hermite weights of N(0, 1/2) expectations


def _npdf(t, m, v):
    """N(t | m, v), the expression of ``likelihoods._npdf``."""
    return np.exp(-(t - m) ** 2 / (2.0 * v) - 0.5 * (LOG_2PI + np.log(v)))


def _dnpdf(t, m, v, dens):
    """(dN/dm, dN/dv) of N(t | m, v) = dens."""
    d = t - m
    return dens * d / v, dens * (d * d / (2.0 * v * v) - 0.5 / v)


def elbo_term_grad(m, v):
    """E_{z ~ N(m, v)} log(1 + e^{-z}) per row, and its derivatives in m and v (module docstring)."""
    val, dm, dv = np.empty_like(m), np.empty_like(m), np.empty_like(m)
    wide = _kink_side(m, v, -1.0)
    nar = ~wide
    if nar.any():
        mm, vv = m[nar], v[nar]
        t = _GH32[0]
        r = np.sqrt(2.0 * vv)
        z = mm[:, None] + r[:, None] * t
        val[nar] = np.sum(_W_GH * np.logaddexp(0.0, -z), axis=-1)
        ds = -_W_GH * special.expit(-z)                      # w_k d/dz_k log(1 + e^{-z_k})
        dm[nar] = ds.sum(axis=-1)
        dv[nar] = np.sum(ds * t, axis=-1) / r                 # dz_k/dv = t_k / sqrt(2 v)
    if wide.any():
        mm, vv = m[wide][:, None], v[wide][:, None]
        sd = np.sqrt(vv)
        tl, wl = _LAG64
        g = np.log1p(np.exp(-tl)) * np.exp(tl)
        n_p, n_m = _npdf(tl, mm, vv), _npdf(-tl, mm, vv)
        (a_m, a_v), (b_m, b_v) = _dnpdf(tl, mm, vv, n_p), _dnpdf(-tl, mm, vv, n_m)
        x = mm / sd
        phi = _npdf(x, 0.0, 1.0)
        head = -mm * np.exp(special.log_ndtr(-x)) + sd * phi
        val[wide] = (head + np.sum(wl * g * (n_p + n_m), axis=-1, keepdims=True))[:, 0]
        dm[wide] = (-np.exp(special.log_ndtr(-x)) + np.sum(wl * g * (a_m + b_m), axis=-1, keepdims=True))[:, 0]
        dv[wide] = (phi / (2.0 * sd) + np.sum(wl * g * (a_v + b_v), axis=-1, keepdims=True))[:, 0]
    return val, dm, dv


def log_pred_grad(lik: LogisticLikelihood, y, mu, v, par):
    """log E_{f ~ N(mu, v)} sigma(y f) per row, and its derivatives in mu and v (module docstring)."""
    m = y * mu
    val, dmu, dv = np.empty_like(mu), np.empty_like(mu), np.empty_like(mu)
    wide = _kink_side(m, v, 1.0)
    nar = ~wide
    if nar.any():
        yy, mu0, v0 = y[nar], mu[nar], v[nar]
        c = lik.tilted_mode(yy, mu0, v0, par)
        s = 1.0 / np.sqrt(-lik.d2logp(yy, c, par) + 1.0 / v0)
        t, lw = _GH32
        f = c[:, None] + np.sqrt(2.0) * s[:, None] * t
        d = f - mu0[:, None]
        lq = -0.5 * (LOG_2PI + np.log(v0))[:, None] - d ** 2 / (2.0 * v0[:, None])
        terms = (lw + t * t + 0.5 * np.log(2.0))[None] + np.log(s)[:, None] + lq + lik.log_p(yy[:, None], f, par)
        lse = special.logsumexp(terms, axis=-1)
        pi = np.exp(terms - lse[:, None])
        val[nar] = lse
        dmu[nar] = np.sum(pi * d, axis=-1) / v0
        dv[nar] = np.sum(pi * (d * d / (2.0 * v0[:, None] ** 2) - 0.5 / v0[:, None]), axis=-1)
    if wide.any():
        mm, vv = m[wide][:, None], v[wide][:, None]
        sd = np.sqrt(vv)
        tl, wl = _LAG64
        k = 1.0 / (1.0 + np.exp(-tl))
        n_m, n_p = _npdf(-tl, mm, vv), _npdf(tl, mm, vv)
        (a_m, a_v), (b_m, b_v) = _dnpdf(-tl, mm, vv, n_m), _dnpdf(tl, mm, vv, n_p)
        x = mm / sd
        phi = _npdf(x, 0.0, 1.0)
        P = np.exp(special.log_ndtr(x)) + np.sum(wl * (n_m - n_p) * k, axis=-1, keepdims=True)
        live = P > 1e-300
        val[wide] = np.log(np.maximum(P, 1e-300))[:, 0]
        inv = np.where(live, 1.0 / np.where(live, P, 1.0), 0.0)
        dP_m = phi / sd + np.sum(wl * (a_m - b_m) * k, axis=-1, keepdims=True)
        dP_v = -mm * phi / (2.0 * vv * sd) + np.sum(wl * (a_v - b_v) * k, axis=-1, keepdims=True)
        dmu[wide] = (y[wide][:, None] * inv * dP_m)[:, 0]
        dv[wide] = (inv * dP_v)[:, 0]
    return val, dmu, dv


def loss_grad(lik: LogisticLikelihood, objective: str, y, mu, v, par):
    """Sum over rows of ``objectives.loss_terms`` for the logistic likelihood, and its gradient in (mu, v, par).

    Returns ``(loss, g_mu, g_v, g_par)`` as autograd's ``value_and_grad`` of the traced sum would
    (``g_par`` empty: the logistic likelihood has no parameter).
    """
    if objective == "elbo":
        val, dm, dv = elbo_term_grad(y * mu, v)
        return float(np.sum(val)), y * dm, dv, np.zeros(np.shape(par))
    if objective == "dlm_log":
        val, dmu, dv = log_pred_grad(lik, y, mu, v, par)
        return float(-np.sum(val)), -dmu, -dv, np.zeros(np.shape(par))
    lp, dmu, dv = log_pred_grad(lik, np.ones(np.shape(mu)), mu, v, par)   # P(y = 1) = exp(lp)
    p = np.exp(lp)
    r = p - lik.target_mean(y)
    return float(np.sum(0.5 * r ** 2)), r * p * dmu, r * p * dv, np.zeros(np.shape(par))
