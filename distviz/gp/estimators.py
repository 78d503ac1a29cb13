"""Sampling estimators of gradients of log-expectation terms log E_{N(f|mu,v)} p(y|f).

* bMC (Wei, Sheth & Khardon, Section 4, eq. 7-8): ratios of Monte Carlo sums with L draws
  f^(l) ~ q; consistent but biased for finite L.
* uPS (Section 3, Proposition 1): grad_theta log q(f|theta) at f ~ q~(f) ∝ q(f) p(y|f), which is
  unbiased; q~ is sampled exactly by the rejection sampler of the paper's Appendix A (proposal
  N(mu, n v) with the width n <= 10 chosen so that m1 sqrt(n) <= K, K = max_f p(y|f)); slots still
  empty after a few vectorised rounds are filled by a second exact rejection sampler whose
  proposal N(f*, v) sits at the tilted mode f* (valid because log p(y|f) is concave, so
  log q~ <= log q~(f*) - (f - f*)^2 / (2 v)).

All functions work on vectors of points i (one Gaussian marginal per point) and return, per point,
the estimated value of log E_q p(y|f) and its derivatives in mu, v (and the likelihood parameter).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from distviz.gp.likelihoods import Likelihood


@dataclass
class LogExpEstimate:
    """Per-point estimates of log E_q p(y|f) and its gradient in (mu, v, likelihood parameter)."""

    value: np.ndarray
    d_mu: np.ndarray
    d_v: np.ndarray
    d_par: np.ndarray


def bmc(lik: Likelihood, y, mu, v, par, n_samples: int, rng: np.random.Generator,
        form: str = "reparam") -> LogExpEstimate:
    """bMC estimate (Section 4): the fraction of the true gradient replaced by sum grad_r p / sum p.

    With f^(l) = mu + sqrt(v) eps_l, phi = p(y|f^(l)), phi' = phi dlogp, phi'' = phi (d2logp + dlogp^2):
    d_mu = sum phi' / sum phi (eq. 7) and

    * form="reparam" (default): d_v = sum phi' eps / (2 sqrt(v) sum phi), the pathwise gradient of
      the bMC objective log (1/L) sum p(y|f^(l)) itself (the first line of eq. 6, what autodiff of
      the Monte Carlo log-mean computes; L = 1 gives the ELBO's reparameterisation gradient);
    * form="price": d_v = (1/2) sum phi'' / sum phi (eq. 8, Price's theorem applied per sample).

    Both are consistent as L grows; for small L the "price" form is biased upwards in v
    (E[(1/2)(d2logp + dlogp^2)] at L = 1), which can make v run away during optimisation.
    Weights w_l = phi_l / sum phi are computed in log space; draws with p(y|f) = 0 carry no weight.
    The value is the Monte Carlo log-mean ``log (1/L) sum_l p(y|f^(l))`` and ``d_par`` is
    ``sum_l w_l d log p / d par``.

    Parameters
    ----------
    lik : Likelihood
        The likelihood p(y|f) (``distviz.gp.likelihoods``, e.g. ``make_likelihood("gaussian")``).
    y : array-like of shape (n,)
        One observation per point.
    mu : array-like of shape (n,)
        Means of the Gaussian marginals q(f_i) = N(mu_i, v_i).
    v : array-like of shape (n,)
        Their variances (positive).
    par : ndarray
        The likelihood's parameters (for the Gaussian likelihood ``[log noise variance]``; empty
        when ``lik.n_par == 0``).
    n_samples : int
        L, the number of draws per point.
    rng : numpy.random.Generator
        Source of the standard normal draws eps_l.
    form : {"reparam", "price"}, default="reparam"
        The estimator of d_v (see above).

    Returns
    -------
    LogExpEstimate
        Per-point arrays (n,): ``value`` (the estimate of log E_q p(y|f)), ``d_mu``, ``d_v`` and
        ``d_par`` (the derivative in the likelihood parameter; zeros when ``lik.n_par == 0``).

    Raises
    ------
    ValueError
        If `form` is unknown.

    Examples
    --------
    Gaussian likelihood with unit noise, q = N(0, 1), y = 1: the exact gradients are
    ``d_mu = 0.5`` and ``d_v = -0.125`` (see `quadrature`).

    >>> import numpy as np
    >>> from distviz.gp import bmc
    >>> from distviz.gp.likelihoods import make_likelihood
    >>> est = bmc(make_likelihood("gaussian"), np.array([1.0]), np.array([0.0]), np.array([1.0]),
    ...           np.array([0.0]), 20000, np.random.default_rng(0))
    >>> bool(abs(est.d_mu[0] - 0.5) < 0.02), bool(abs(est.d_v[0] + 0.125) < 0.02)
    (True, True)
    """
    if form not in ("reparam", "price"):
        raise ValueError(f"unknown bMC form {form!r}")
    y, mu, v = (np.asarray(a, dtype=float) for a in (y, mu, v))
    eps = rng.standard_normal((mu.shape[0], n_samples))
    f = mu[:, None] + np.sqrt(v)[:, None] * eps
    yy = y[:, None]
    lp = lik.log_p(yy, f, par)
    lse = logsumexp(lp, axis=1, keepdims=True)
    w = np.exp(lp - lse)
    with np.errstate(over="ignore", invalid="ignore"):
        g1 = lik.dlogp(yy, f, par)
        g2 = lik.d2logp(yy, f, par)
        live = w > 0  # draws with p = 0 carry no weight (avoid 0 * inf)
        d_mu = np.sum(np.where(live, w * g1, 0.0), axis=1)
        if form == "price":
            d_v = 0.5 * np.sum(np.where(live, w * (g2 + g1 * g1), 0.0), axis=1)
        else:
            d_v = np.sum(np.where(live, w * g1 * eps, 0.0), axis=1) / (2.0 * np.sqrt(v))
        d_par = np.sum(np.where(live, w * lik.dlogp_dpar(yy, f, par), 0.0), axis=1) if lik.n_par \
            else np.zeros_like(mu)
    return LogExpEstimate(lse[:, 0] - np.log(n_samples), d_mu, d_v, d_par)


def paper_width(lik: Likelihood, y, mu, v, par, n_max: int = 10) -> np.ndarray:
    """The width multiplier n of Appendix A: the largest n <= n_max with m1(n) sqrt(n) <= K.

    [a, b] = mu +- r with r = sigma sqrt(log n / (1 - 1/n)) are where N(mu, v) and N(mu, n v)
    cross; m1 = max_{[a, b]} p(y|f) (p is unimodal, so it is p at the clipped maximiser).
    """
    y, mu, v = np.broadcast_arrays(*(np.asarray(a, dtype=float) for a in (y, mu, v)))
    sd = np.sqrt(v)
    log_k = lik.log_max(y, par)
    fstar = lik.argmax_f(y, par)
    best = np.ones(mu.shape, dtype=float)
    for n in range(2, n_max + 1):
        r = sd * np.sqrt(np.log(n) / (1.0 - 1.0 / n))
        f_at = np.clip(fstar, mu - r, mu + r)
        log_m1 = lik.log_p(y, f_at, par)
        ok = log_m1 + 0.5 * np.log(n) <= log_k + 1e-12
        best = np.where(ok, float(n), best)
    return best


@dataclass
class SamplerStats:
    """Diagnostics of one call of the tilted sampler: proposals drawn and slots filled by the fallback."""

    proposals: int = 0
    accepted_paper: int = 0
    fallback: int = 0


def sample_tilted(lik: Likelihood, y, mu, v, par, n_samples: int, rng: np.random.Generator,
                  paper_rounds: int = 4, max_rounds: int = 10_000,
                  stats: SamplerStats | None = None) -> np.ndarray:
    """Exact draws f ~ q~(f) ∝ N(f|mu, v) p(y|f), shape (n_points, n_samples).

    First `paper_rounds` vectorised rounds of the Appendix-A sampler of dlm_sparse_gp.txt
    (proposal N(mu, n v) with the width n of ``paper_width``, K = max p); remaining slots use the
    exact mode-centred sampler N(f*, v) (module docstring), which needs log p(y|f) concave in f.
    Both are rejection samplers, so every draw is an exact sample of the tilted law.

    Parameters
    ----------
    lik : Likelihood
        The likelihood p(y|f) (``distviz.gp.likelihoods``, e.g. ``make_likelihood("gaussian")``).
    y : array-like of shape (n,)
        One observation per point.
    mu : array-like of shape (n,)
        Means of the Gaussian marginals q(f_i) = N(mu_i, v_i).
    v : array-like of shape (n,)
        Their variances (positive).
    par : ndarray
        The likelihood's parameters (for the Gaussian likelihood ``[log noise variance]``; empty
        when ``lik.n_par == 0``).
    n_samples : int
        Draws per point.
    rng : numpy.random.Generator
        Source of the proposals and the uniform acceptance draws.
    paper_rounds : int, default=4
        Vectorised rounds of the Appendix-A sampler before the fallback takes over.
    max_rounds : int, default=10000
        Rounds of the fallback sampler before giving up.
    stats : SamplerStats, optional
        Counters updated in place: ``proposals`` (all proposals), ``accepted_paper`` (draws accepted
        by the Appendix-A sampler) and ``fallback`` (slots left to the fallback).

    Returns
    -------
    ndarray of shape (n, n_samples)
        The draws.

    Raises
    ------
    RuntimeError
        If slots are still empty after `max_rounds` fallback rounds (a degenerate variance).

    Examples
    --------
    Gaussian likelihood with unit noise, q = N(0, 1), y = 1: the tilted law is N(0.5, 0.5).

    >>> import numpy as np
    >>> from distviz.gp import sample_tilted
    >>> from distviz.gp.likelihoods import make_likelihood
    >>> f = sample_tilted(make_likelihood("gaussian"), np.array([1.0]), np.array([0.0]), np.array([1.0]),
    ...                   np.array([0.0]), 20000, np.random.default_rng(0))
    >>> f.shape, bool(abs(f.mean() - 0.5) < 0.02), bool(abs(f.var() - 0.5) < 0.02)
    ((1, 20000), True, True)
    """
    y, mu, v = (np.asarray(a, dtype=float) for a in (y, mu, v))
    npts = mu.shape[0]
    out = np.empty((npts, n_samples))
    todo = np.ones((npts, n_samples), dtype=bool)
    st = stats if stats is not None else SamplerStats()
    width = paper_width(lik, y, mu, v, par)
    log_k = lik.log_max(y, par)
    yy, mm, vv, ww, kk = (np.broadcast_to(a[:, None], (npts, n_samples)) for a in (y, mu, v, width, log_k))
    for _ in range(paper_rounds):
        idx = np.nonzero(todo)
        if idx[0].size == 0:
            break
        ys, ms, vs, ns, ks = yy[idx], mm[idx], vv[idx], ww[idx], kk[idx]
        f = ms + np.sqrt(ns * vs) * rng.standard_normal(ms.shape)
        # log q(f) - log h2(f) = 0.5 log n - (f - mu)^2 / (2 v) (1 - 1/n)
        log_acc = 0.5 * np.log(ns) - (f - ms) ** 2 / (2.0 * vs) * (1.0 - 1.0 / ns) \
            + lik.log_p(ys, f, par) - ks
        acc = np.log(rng.uniform(size=f.shape)) < log_acc
        st.proposals += f.size
        st.accepted_paper += int(acc.sum())
        rows, cols = idx[0][acc], idx[1][acc]
        out[rows, cols] = f[acc]
        todo[rows, cols] = False
    if todo.any():
        fmode = lik.tilted_mode(y, mu, v, par)
        lmode = lik.log_p(y, fmode, par)
        fm = np.broadcast_to(fmode[:, None], (npts, n_samples))
        lm = np.broadcast_to(lmode[:, None], (npts, n_samples))
        st.fallback += int(todo.sum())
        for _ in range(max_rounds):
            idx = np.nonzero(todo)
            if idx[0].size == 0:
                break
            ys, ms, vs, fs, ls = yy[idx], mm[idx], vv[idx], fm[idx], lm[idx]
            f = fs + np.sqrt(vs) * rng.standard_normal(ms.shape)
            # log q~(f) - [log q~(f*) - (f - f*)^2 / (2 v)] <= 0 by strong concavity
            log_acc = lik.log_p(ys, f, par) - ls - ((f - ms) ** 2 - (fs - ms) ** 2 - (f - fs) ** 2) / (2.0 * vs)
            acc = np.log(rng.uniform(size=f.shape)) < log_acc
            st.proposals += f.size
            rows, cols = idx[0][acc], idx[1][acc]
            out[rows, cols] = f[acc]
            todo[rows, cols] = False
        if todo.any():  # pragma: no cover - acceptance >= ~1/sqrt(1 + v max|d2logp|) makes this unreachable
            raise RuntimeError("the tilted rejection sampler did not finish; the variational variance is degenerate")
    return out


def ups(lik: Likelihood, y, mu, v, par, n_samples: int, rng: np.random.Generator,
        stats: SamplerStats | None = None, value: bool = True) -> LogExpEstimate:
    """uPS estimate (Proposition 1): mean over f ~ q~ of grad_{mu, v} log N(f | mu, v).

    d/dmu log q = (f - mu)/v, d/dv log q = ((f - mu)^2 / v - 1) / (2 v); the likelihood parameter's
    gradient E_{q~}[d log p / d par] uses the same draws. The value reported is a bMC estimate from
    the same number of plain draws (the value itself is not needed for the gradient).  The draws
    f ~ q~ come from `sample_tilted`; the gradient estimates are unbiased (dlm_sparse_gp.txt
    Section 3, Proposition 1).

    Parameters
    ----------
    lik : Likelihood
        The likelihood p(y|f) (``distviz.gp.likelihoods``, e.g. ``make_likelihood("gaussian")``).
    y : array-like of shape (n,)
        One observation per point.
    mu : array-like of shape (n,)
        Means of the Gaussian marginals q(f_i) = N(mu_i, v_i).
    v : array-like of shape (n,)
        Their variances (positive).
    par : ndarray
        The likelihood's parameters (for the Gaussian likelihood ``[log noise variance]``; empty
        when ``lik.n_par == 0``).
    n_samples : int
        Draws per point from the tilted law (and plain draws for the value).
    rng : numpy.random.Generator
        Source of all random draws.
    stats : SamplerStats, optional
        Counters of the tilted sampler, updated in place (see `sample_tilted`).
    value : bool, default=True
        Also estimate the value by `bmc`; False returns NaN values and saves those draws.

    Returns
    -------
    LogExpEstimate
        Per-point arrays (n,): ``value`` (the estimate of log E_q p(y|f)), ``d_mu``, ``d_v`` and
        ``d_par`` (the derivative in the likelihood parameter; zeros when ``lik.n_par == 0``).

    Examples
    --------
    >>> import numpy as np
    >>> from distviz.gp import ups
    >>> from distviz.gp.likelihoods import make_likelihood
    >>> est = ups(make_likelihood("gaussian"), np.array([1.0]), np.array([0.0]), np.array([1.0]),
    ...           np.array([0.0]), 20000, np.random.default_rng(0))
    >>> bool(abs(est.d_mu[0] - 0.5) < 0.02), bool(abs(est.d_v[0] + 0.125) < 0.02)
    (True, True)
    """
    y, mu, v = (np.asarray(a, dtype=float) for a in (y, mu, v))
    f = sample_tilted(lik, y, mu, v, par, n_samples, rng, stats=stats)
    z = f - mu[:, None]
    d_mu = np.mean(z, axis=1) / v
    d_v = np.mean((z * z / v[:, None] - 1.0), axis=1) / (2.0 * v)
    d_par = np.mean(lik.dlogp_dpar(y[:, None], f, par), axis=1) if lik.n_par else np.zeros_like(mu)
    val = bmc(lik, y, mu, v, par, n_samples, rng).value if value else np.full_like(mu, np.nan)
    return LogExpEstimate(val, d_mu, d_v, d_par)


def quadrature(lik: Likelihood, y, mu, v, par, n_nodes: int = 200) -> LogExpEstimate:
    """Reference value and gradient of log E_q p(y|f) by Gauss-Hermite quadrature with many nodes.

    d_mu = E_q[p dlogp] / E_q[p], d_v = E_q[p (d2logp + dlogp^2)] / (2 E_q[p]) (dlm_sparse_gp.txt
    eq. 5-6, exact form); the likelihood parameter's derivative is E_q[p dlogp/dpar] / E_q[p].  The
    nodes are ``f = mu + sqrt(2 v) t`` for the roots t of the Hermite polynomial, and the sums are
    taken in log space.  No randomness: it is the reference for `bmc` and `ups`.

    Parameters
    ----------
    lik : Likelihood
        The likelihood p(y|f) (``distviz.gp.likelihoods``, e.g. ``make_likelihood("gaussian")``).
    y : array-like of shape (n,)
        One observation per point.
    mu : array-like of shape (n,)
        Means of the Gaussian marginals q(f_i) = N(mu_i, v_i).
    v : array-like of shape (n,)
        Their variances (positive).
    par : ndarray
        The likelihood's parameters (for the Gaussian likelihood ``[log noise variance]``; empty
        when ``lik.n_par == 0``).
    n_nodes : int, default=200
        Number of Gauss-Hermite nodes.

    Returns
    -------
    LogExpEstimate
        Per-point arrays (n,): ``value`` (the estimate of log E_q p(y|f)), ``d_mu``, ``d_v`` and
        ``d_par`` (the derivative in the likelihood parameter; zeros when ``lik.n_par == 0``).

    Examples
    --------
    For the Gaussian likelihood the value is ``log N(y | mu, v + s)``; with s = 1, q = N(0, 1), y = 1:

    >>> import numpy as np
    >>> from distviz.gp import quadrature
    >>> from distviz.gp.likelihoods import make_likelihood
    >>> est = quadrature(make_likelihood("gaussian"), np.array([1.0]), np.array([0.0]), np.array([1.0]),
    ...                  np.array([0.0]))
    >>> np.round([est.value[0], est.d_mu[0], est.d_v[0]], 4).tolist()
    [-1.5155, 0.5, -0.125]
    """
    y, mu, v = (np.atleast_1d(np.asarray(a, dtype=float)) for a in (y, mu, v))
    t, w = np.polynomial.hermite.hermgauss(n_nodes)
    lw = np.log(w) - 0.5 * np.log(np.pi)
    f = mu[:, None] + np.sqrt(2.0 * v)[:, None] * t
    yy = y[:, None]
    lp = lik.log_p(yy, f, par) + lw
    lse = logsumexp(lp, axis=1, keepdims=True)
    wt = np.exp(lp - lse)
    g1 = lik.dlogp(yy, f, par)
    g2 = lik.d2logp(yy, f, par)
    d_par = np.sum(wt * lik.dlogp_dpar(yy, f, par), axis=1) if lik.n_par else np.zeros_like(mu)
    return LogExpEstimate(lse[:, 0], np.sum(wt * g1, axis=1), 0.5 * np.sum(wt * (g2 + g1 * g1), axis=1), d_par)
