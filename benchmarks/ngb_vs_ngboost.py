"""Seconds per boosting iteration: distviz NGB vs ngboost's NGBRegressor(Dist=MultivariateNormal(2)).

Both fit the Section 4 simulation of the multivariate NGBoost paper (X ~ Uniform(0, pi)) with the
same settings: depth-3 trees (one per parameter), learning rate 0.01, ngboost's line search, the
natural gradient of the Cholesky-of-precision chart.  A fixed number of rounds is timed (no early
stopping), and KL(pred || true) on 1000 test points is printed for both after those rounds, so that
the comparison is at equal work.  ``--full`` adds a complete early-stopped fit at N = 5000 (paper
protocol: patience 50, at most 1000 rounds, all trees) for both packages (~1-3 minutes more).

ngboost is single-threaded (scikit-learn trees, numpy); ours is timed at 1 thread (like with like) and
at the machine's cores, each section with the load printed before and after (``_peers.py``).

    python benchmarks/ngb_vs_ngboost.py [--rounds-small 100] [--rounds-large 15] [--full]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _peers import LoadWatch, thread_counts, threads  # noqa: E402

from distviz.data.mvn_sim import simulate_split  # noqa: E402
from distviz.estimators.ngboost import NGB  # noqa: E402
from distviz.metrics.divergence import kl_pred_true  # noqa: E402


def _clock():
    return time.perf_counter(), time.process_time()


def _since(t):
    w, c = _clock()
    return w - t[0], c - t[1]


def run_ngboost(d, rounds, early=False):
    """Fit ngboost; returns (wall s, cpu s, rounds fitted, KL(pred||true) with all trees)."""
    from ngboost import NGBRegressor
    from ngboost.distns import MultivariateNormal

    m = NGBRegressor(Dist=MultivariateNormal(2), n_estimators=rounds, learning_rate=0.01, verbose=False)
    t = _clock()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if early:
            m.fit(d.X_train, d.y_train, X_val=d.X_val, Y_val=d.y_val, early_stopping_rounds=50)
        else:
            m.fit(d.X_train, d.y_train)
    wall, cpu = _since(t)
    D = m.pred_dist(d.X_test)
    return wall, cpu, len(m.scalings), float(np.mean(kl_pred_true(D.loc, D.cov, d.mean_test, d.cov_test)))


def run_ours(d, rounds, early=False):
    """Fit distviz NGB; returns (wall s, cpu s, rounds fitted, KL(pred||true) with all trees)."""
    m = NGB(n_estimators=rounds, learning_rate=0.01, early_stopping_rounds=50 if early else None)
    t = _clock()
    if early:
        m.fit(d.X_train, d.y_train, eval_set=(d.X_val, d.y_val))
    else:
        m.fit(d.X_train, d.y_train)
    wall, cpu = _since(t)
    pred = m.predict_dist(d.X_test, "all")
    mu, cov = pred.mean(), pred.cov()
    return wall, cpu, m.n_iter_, float(np.mean(kl_pred_true(mu, cov, d.mean_test, d.cov_test)))


def main(argv=None):
    """Print per-iteration times, ratios and KL for N = 5e3 and 5e4."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds-small", type=int, default=100, help="timed rounds at N = 5000")
    ap.add_argument("--rounds-large", type=int, default=15, help="timed rounds at N = 50000")
    ap.add_argument("--full", action="store_true", help="also a full early-stopped fit at N = 5000")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    warm = simulate_split(200, 50, 50, rng=1)  # compile numba kernels outside the timings
    run_ours(warm, 3)

    for k in thread_counts():
        with LoadWatch(f"NGB vs ngboost: ours at {k} thread(s), ngboost single-threaded (BLAS limited to {k})") as watch, \
                threads(k):
            print(f"{'N':>6} {'rounds':>6} | {'ngboost s/it':>12} {'ours s/it':>10} {'ratio':>6} | "
                  f"{'ngboost cpu/it':>14} {'ours cpu/it':>11} {'ratio':>6} | {'KL ngboost':>10} {'KL ours':>8}")
            for n, rounds in ((5000, args.rounds_small), (50000, args.rounds_large)):
                d = simulate_split(n, rng=np.random.default_rng([args.seed, n]))
                rw, rc, rr, rk = run_ngboost(d, rounds)
                ow, oc, orr, ok = run_ours(d, rounds)
                print(f"{n:>6} {rounds:>6} | {rw / rr:>12.4f} {ow / orr:>10.4f} {rw / rr / (ow / orr):>5.1f}x | "
                      f"{rc / rr:>14.4f} {oc / orr:>11.4f} {rc / rr / (oc / orr):>5.1f}x | {rk:>10.4f} {ok:>8.4f}"
                      f"{watch.label()}", flush=True)
    if args.full:
        d = simulate_split(5000, rng=np.random.default_rng([args.seed, 1]))
        rw, rc, rr, rk = run_ngboost(d, 1000, early=True)
        ow, oc, orr, ok = run_ours(d, 1000, early=True)
        print(f"full fit N=5000 (patience 50, <= 1000 rounds, all trees): ngboost {rr} rounds {rw:.1f}s "
              f"KL {rk:.4f} | ours {orr} rounds {ow:.1f}s KL {ok:.4f} | fit-time ratio {rw / ow:.1f}x")


if __name__ == "__main__":
    main()
