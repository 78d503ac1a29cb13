"""Benchmark: sparse GP (distviz.gp.SparseGP) against scikit-learn's exact GP regression, same run.

1. Objective + gradient evaluation of the ELBO at n = 2000, M = 50: our hand-derived reverse pass
   (``Objective.__call__``) against autograd traced through the whole objective (``Objective._exact``).
2. Fit and predict on a 1-D sine regression (n = 500 .. 2000, with --large also 4000; noise sd 0.3): ``SparseGP`` (ELBO,
   M = 30, L-BFGS, 150 iterations, joint hyperparameters) against
   ``sklearn.gaussian_process.GaussianProcessRegressor`` with ConstantKernel * RBF + WhiteKernel
   (exact O(n^3) marginal-likelihood fit, no restarts), with test log-loss of each.

Each timing is the best of `repeats` runs (the machine is shared). Run:
``python benchmarks/gp.py [--quick | --large]`` (--large adds n = 4000, where sklearn alone needs ~7 min here).
"""

from __future__ import annotations

import argparse

import numpy as np
from _timing import best_of  # noqa: E402  (benchmarks/ is on sys.path when a script runs)
from threadpoolctl import threadpool_limits


def sine(n, seed=0):
    """1-D inputs on [-3, 3], y = sin(2x) + N(0, 0.3^2)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, (n, 1))
    return X, np.sin(2 * X[:, 0]) + 0.3 * rng.standard_normal(n)


def bench_gradient(n=2000, M=50, repeats=5):
    """Seconds per objective+gradient evaluation: hand-derived vs autograd end to end."""
    from autograd import value_and_grad

    from distviz.gp import SparseGP
    from distviz.gp import objectives as obj
    from distviz.gp.likelihoods import make_likelihood

    X, y = sine(n)
    lik = make_likelihood("gaussian")
    est = SparseGP(n_inducing=M)
    free, fixed = est._init_params(X, y, lik, np.random.default_rng(0))
    f = obj.Objective(obj.Problem(X, y, lik, "elbo", 1.0, "exact", 10, "reparam", 1e-6, fixed), free)
    idx = np.arange(n)
    ag = value_and_grad(f._exact)
    with threadpool_limits(1, user_api="blas"):
        t_ours, _ = best_of(lambda: f(f.flat0), repeats)
        t_ag, _ = best_of(lambda: ag(f.flat0, idx), repeats)
    print(f"ELBO value+gradient, n={n}, M={M}: hand-derived {t_ours * 1e3:.1f} ms, autograd {t_ag * 1e3:.1f} ms, "
          f"speed-up {t_ag / t_ours:.1f}x")


def bench_fit(sizes, repeats=1):
    """Fit time and test log-loss of SparseGP (ELBO) and sklearn's exact GP."""
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

    from distviz.gp import SparseGP

    Xt, yt = sine(2000, seed=1)
    print(f"{'n':>6s} {'ours s':>8s} {'sklearn s':>10s} {'ratio':>7s} {'ours LL':>8s} {'sklearn LL':>10s}")
    for n in sizes:
        X, y = sine(n)
        t_ours, m = best_of(lambda: SparseGP(n_inducing=30, max_iter=150, random_state=0).fit(X, y), repeats)
        kern = ConstantKernel(1.0) * RBF(1.0) + WhiteKernel(0.1)

        def sk():
            with threadpool_limits(1, user_api="blas"):
                return GaussianProcessRegressor(kern, normalize_y=True, n_restarts_optimizer=0).fit(X, y)

        t_sk, g = best_of(sk, repeats)
        mu, sd = g.predict(Xt, return_std=True)
        ll_sk = float(np.mean(0.5 * np.log(2 * np.pi * sd**2) + (yt - mu) ** 2 / (2 * sd**2)))
        print(f"{n:6d} {t_ours:8.2f} {t_sk:10.2f} {t_sk / t_ours:7.2f} {-m.score(Xt, yt):8.4f} {ll_sk:10.4f}")


def main():
    """Run the benchmarks."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes")
    ap.add_argument("--large", action="store_true", help="also n = 4000 (slow for the exact GP)")
    a = ap.parse_args()
    bench_gradient(n=1000 if a.quick else 2000)
    bench_fit([500, 1000] if a.quick else [500, 1000, 2000] + ([4000] if a.large else []))


if __name__ == "__main__":
    main()
