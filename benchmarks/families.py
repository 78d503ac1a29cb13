"""Benchmark the per-round natural-gradient work of distviz.families against ngboost's distributions.

Usage: python benchmarks/families.py [--n 100000] [--reps 3]

One boosting round of NGBoost / NGD boosting evaluates, for every training row, the NLL gradient and
solves it against the Fisher information.  We time that step:
  * ngboost: Dist(params).grad(Y, natural=True)  (d_score, metric, np.linalg.solve);
  * ours: chart.natural_gradient(y, theta) in the same chart (Normal (mu, log sigma), Poisson log rate),
    and family.natural_gradient(y, eta) in the natural chart (NGD boosting in eta) for Normal and the
    bivariate Normal (ngboost's MultivariateNormal(2) works in its Cholesky chart: same job, other chart).
Also printed: the geometry maps a boosting round calls (to_mean, to_natural, conjugate, solve_fisher).
Every figure is the best of `reps` CPU-time (time.process_time) repetitions after a warm-up call (numba compiled);
ratio = ngboost time / our time (> 1: we are faster).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from distviz import families as F  # noqa: E402
from distviz.families import charts  # noqa: E402


def best_of(fn, reps):
    """Best CPU time (process_time: robust on a shared machine) over reps calls, after a warm-up call, in seconds."""
    fn()
    best = np.inf
    for _ in range(reps):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args(argv)
    n, reps = a.n, a.reps
    rng = np.random.default_rng(0)
    rows = []

    try:
        from ngboost.distns import MultivariateNormal, Normal, Poisson
        from ngboost.manifold import manifold
        from ngboost.scores import LogScore
        # what NGBRegressor uses: the distribution mixed with its LogScore implementation
        Normal, Poisson = manifold(LogScore, Normal), manifold(LogScore, Poisson)
        MultivariateNormal = manifold(LogScore, MultivariateNormal(2))
    except ImportError:  # pragma: no cover
        Normal = Poisson = MultivariateNormal = None
        print("ngboost not installed: printing our timings only")

    # Normal in (mu, log sigma)
    mu, logs = rng.normal(0, 1, n), rng.normal(0, 0.3, n)
    y = mu + np.exp(logs) * rng.standard_normal(n)
    theta = np.stack([mu, logs], 1)
    ch = charts.get("normal")
    ours = best_of(lambda: ch.natural_gradient(y, theta), reps)
    peer = best_of(lambda: Normal(theta.T).grad(y, natural=True), reps) if Normal is not None else np.nan
    if Normal is not None:
        np.testing.assert_allclose(ch.natural_gradient(y, theta), Normal(theta.T).grad(y, natural=True), rtol=1e-8, atol=1e-8)
    rows.append(("Normal (mu, log sigma) natural gradient", peer, ours))
    eta = ch.to_natural(theta)
    fam = F.get("normal")
    rows.append(("Normal natural gradient in eta (NGD boosting)", peer, best_of(lambda: fam.natural_gradient(y, eta), reps)))

    # Poisson in log rate
    lr = rng.normal(1, 0.5, n)
    yc = rng.poisson(np.exp(lr)).astype(float)
    pc = charts.get("poisson")
    ours = best_of(lambda: pc.natural_gradient(yc, lr[:, None]), reps)
    peer = best_of(lambda: Poisson(lr[None, :]).grad(yc, natural=True), reps) if Poisson is not None else np.nan
    if Poisson is not None:
        np.testing.assert_allclose(pc.natural_gradient(yc, lr[:, None]), Poisson(lr[None, :]).grad(yc, natural=True), rtol=1e-8)
    rows.append(("Poisson (log rate) natural gradient", peer, ours))

    # bivariate Normal: ngboost's Cholesky chart vs our natural chart
    mvn = F.get("mvn", P=2)
    m2 = rng.normal(0, 1, (n, 2))
    L = rng.normal(0, 0.3, (n, 2, 2)) + np.eye(2)
    cov = L @ L.transpose(0, 2, 1)
    eta2 = mvn.from_mean_cov(m2, cov)
    y2 = mvn.sample(eta2, rng)
    ours = best_of(lambda: mvn.natural_gradient(y2, eta2), reps)
    if MultivariateNormal is not None:
        D = MultivariateNormal
        params = np.zeros((D.n_params, n))
        params[:2] = m2.T  # mean, then log-diagonal and off-diagonal of its Cholesky factor (zeros: identity)
        peer = best_of(lambda: D(params).grad(y2, natural=True), reps)
    else:
        peer = np.nan
    rows.append(("bivariate Normal natural gradient (ngboost: Cholesky chart; ours: eta)", peer, ours))

    print(f"n = {n} rows, best of {reps}")
    print(f"{'step':<75} {'ngboost ms':>11} {'ours ms':>9} {'ratio':>7}")
    for name, p, o in rows:
        print(f"{name:<75} {p * 1e3:>11.2f} {o * 1e3:>9.2f} {p / o:>7.1f}")

    print("\ngeometry maps (ms per call, n rows)")
    names = ("to_mean", "to_natural", "conjugate", "log_partition", "solve_fisher")
    print(f"{'family':<16}" + "".join(f"{k:>14}" for k in names))
    for name, kw in [("poisson", {}), ("bernoulli", {}), ("normal", {}), ("gamma", {}), ("exponential", {}),
                     ("categorical", {"K": 5}), ("mvn", {"P": 2}), ("mvn", {"P": 3})]:
        f = F.get(name, **kw)
        e = f.project_natural(f.default_natural(n) + 0.1 * rng.standard_normal((n, f.dim)))
        m = f.to_mean(e)
        v = rng.standard_normal((n, f.dim))
        ts = [best_of(lambda g=g, x=x: g(*x), reps) for g, x in
              [(f.to_mean, (e,)), (f.to_natural, (m,)), (f.conjugate, (m,)), (f.log_partition, (e,)), (f.solve_fisher, (e, v))]]
        label = name + (f"(K={kw['K']})" if "K" in kw else f"(P={kw['P']})" if "P" in kw else "")
        print(f"{label:<16}" + "".join(f"{t * 1e3:>14.2f}" for t in ts))


if __name__ == "__main__":
    main()
