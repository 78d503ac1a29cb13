"""Initial particles of WGBoost by the data-averaged particle flow of App. F.4.

The flow moves N constants by theta^n += nu0 * v^n for M0 steps from standard-normal draws (App. F.4).
Two variants (``WGBoost(init_flow=...)``):

* ``"authors"`` (the default; the authors' code, takuomatsubara/WGBoost): the data are
  averaged *before* the direction is formed: v is the chosen method's direction computed with the
  data-averaged gradient and Hessian (1/D) sum_i grad log pi_i, (1/D) sum_i Hess log pi_i, with
  nu0 = 0.1 (``DEFAULT_LR["authors"]``).  The named targets give those averages from sufficient
  statistics (`Target.flow_stats`), and the whole flow then runs in one compiled loop: one step costs
  O(N^2 d) whatever the data size.  Other targets use `Target.averaged` from Python.
* ``"paper"`` (the text of App. F.4): the *directions* are averaged, G-bar = (1/D) sum_i G_i, i.e. each
  datum's SKA direction phi_i / psi_i (eq. 7-9) is formed from its own gradient and Hessian and the
  ratios are averaged, with nu0 = 0.01 (``DEFAULT_LR["paper"]``); one step costs O(D N^2 d).  For FKA
  and Langevin the direction is linear in the gradient, so averaging directions equals averaging
  gradients and the variants differ only in nu0.

In both, NKA starts from the SKA flow (the full averaged Hessian can be indefinite: normal target,
|ybar - m| > sd(y)), and LGBoost runs an unadjusted Langevin flow.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from distviz.boosting import wg_kernels as K

#: The App. F.4 flow variants and their step size nu0 when WGBoost's init_lr is left at None.
VARIANTS = ("authors", "paper")
DEFAULT_LR = {"authors": 0.1, "paper": 0.01}


@njit(cache=True)
def _avg_grad_hess(kind, stats, theta, g, hd):
    """Data-averaged gradient and Hessian diagonal of the named targets from sufficient statistics."""
    N, d = theta.shape
    if kind == 0:  # normal in (m, log sigma): stats = ybar, var(y), s0, a0, b0
        ybar, vy, s0, a0, b0 = stats[0], stats[1], stats[2], stats[3], stats[4]
        for n in range(N):
            m, s = theta[n, 0], theta[n, 1]
            e2, e1 = np.exp(-2.0 * s), np.exp(-s)
            r2 = vy + (ybar - m) ** 2
            g[n, 0] = (ybar - m) * e2 - m / s0 ** 2
            g[n, 1] = r2 * e2 - (a0 + 1.0) + b0 * e1
            hd[n, 0] = -e2 - 1.0 / s0 ** 2
            hd[n, 1] = -2.0 * r2 * e2 - b0 * e1
    elif kind == 1:  # categorical log-ratios: stats = class frequencies 1..K-1, s0
        s0 = stats[d]
        for n in range(N):
            mx = 0.0
            for t in range(d):
                mx = max(mx, theta[n, t])
            z = np.exp(-mx)
            for t in range(d):
                z += np.exp(theta[n, t] - mx)
            for t in range(d):
                p = np.exp(theta[n, t] - mx) / z
                g[n, t] = stats[t] - p - theta[n, t] / s0 ** 2
                hd[n, t] = -p * (1.0 - p) - 1.0 / s0 ** 2
    else:  # poisson log rate: stats = ybar, s0
        ybar, s0 = stats[0], stats[1]
        for n in range(N):
            lam = np.exp(theta[n, 0])
            g[n, 0] = ybar - lam - theta[n, 0] / s0 ** 2
            hd[n, 0] = -lam - 1.0 / s0 ** 2


@njit(cache=True)
def _flow_compiled(kind, stats, theta, h, lr, n_steps, second_order):
    N, d = theta.shape
    g = np.empty((N, d))
    hd = np.empty((N, d))
    phi = np.empty((N, d))
    psi = np.empty((N, d))
    c = 2.0 / h
    for _ in range(n_steps):
        _avg_grad_hess(kind, stats, theta, g, hd)
        phi[:] = 0.0
        psi[:] = 0.0
        for b in range(N):
            for a in range(N):
                r2 = 0.0
                for t in range(d):
                    diff = theta[a, t] - theta[b, t]
                    r2 += diff * diff
                k = np.exp(-r2 / h)
                for t in range(d):
                    gk = -c * (theta[a, t] - theta[b, t]) * k
                    phi[b, t] += k * g[a, t] + gk
                    psi[b, t] += -k * k * hd[a, t] + gk * gk
        ok = True
        for b in range(N):
            for t in range(d):
                v = phi[b, t] / N
                if second_order:
                    v = phi[b, t] / psi[b, t]
                theta[b, t] += lr * v
                if not np.isfinite(theta[b, t]):
                    ok = False
        if not ok:
            break
    return theta


def _paper_ska_direction(target, y, theta, h):
    """App. F.4 as written: (1/D) sum_i of each datum's SKA direction phi_i / psi_i (eq. 7-9) at theta (N, d).

    The kernel k(a, b) = exp(-|theta^a - theta^b|^2 / h) and its gradient terms are shared by all data;
    only the gradient and Hessian terms differ per datum (same sums as the compiled authors' flow).
    """
    D = y.shape[0]
    T = np.broadcast_to(theta, (D,) + theta.shape)
    g, hd = target.grad_hess_diag(T, y)                        # (D, N, d) each
    diff = theta[:, None, :] - theta[None, :, :]               # (a, b, d): theta^a - theta^b
    k = np.exp(-np.sum(diff * diff, axis=2) / h)               # (a, b)
    gk = (-2.0 / h) * diff * k[:, :, None]                     # grad_{theta^a} k(a, b)
    phi = np.einsum("ab,iad->ibd", k, np.asarray(g, dtype=np.float64)) + gk.sum(axis=0)
    psi = np.einsum("ab,iad->ibd", k * k, -np.asarray(hd, dtype=np.float64)) + (gk * gk).sum(axis=0)
    return np.mean(phi / psi, axis=0)


def init_flow(target, y, theta0, method="ska", bandwidth=0.1, n_steps=5000, lr=None, rng=None, variant="authors"):
    """Run the averaged particle flow of App. F.4 from theta0 (N, d) for n_steps; returns the final (N, d) constants.

    `variant` "authors" averages gradient and Hessian over the data before their ratio (the authors' code),
    "paper" averages the per-datum directions (App. F.4's text); `lr` is nu0, None for the variant's own
    (0.1 authors' code, 0.01 paper).
    """
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, not {variant!r}")
    lr = DEFAULT_LR[variant] if lr is None else float(lr)
    theta = np.array(theta0, dtype=np.float64, copy=True)
    if rng is None:
        rng = np.random.default_rng()
    if method == "nka":
        method = "ska"
    if variant == "paper" and method == "ska":
        for _ in range(int(n_steps)):
            theta += lr * _paper_ska_direction(target, y, theta, float(bandwidth))
            if not np.all(np.isfinite(theta)):
                break
        return theta
    fs = target.flow_stats(y) if hasattr(target, "flow_stats") else None
    if fs is not None and method in ("ska", "fka"):
        kind, stats = fs
        return _flow_compiled(int(kind), np.asarray(stats, dtype=np.float64), theta, float(bandwidth),
                              float(lr), int(n_steps), method == "ska")
    for _ in range(int(n_steps)):
        g, hd = target.averaged(theta, y)
        t3, g3 = theta[None], np.asarray(g, dtype=np.float64)[None]
        if method == "ska":
            v = K.ska_direction(t3, g3, np.asarray(hd, dtype=np.float64)[None], bandwidth)[0]
        elif method == "fka":
            v = K.fka_direction(t3, g3, bandwidth)[0]
        else:  # langevin: unadjusted Langevin step on the averaged log-density
            v = g + np.sqrt(2.0 / lr) * rng.standard_normal(theta.shape)
        theta += lr * v
        if not np.all(np.isfinite(theta)):
            break
    return theta
