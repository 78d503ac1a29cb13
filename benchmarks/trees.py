"""Benchmark distviz.trees against scikit-learn's DecisionTreeRegressor and one LightGBM iteration.

Usage: python benchmarks/trees.py [--quick]

Every figure is the best of 3 repetitions (after a warm-up call that also compiles numba), measured
in the same run as its peer: wall-clock time and, in parentheses, the CPU time of this process (all
threads; it is less disturbed by other jobs on a shared machine).  Ratios are peer / ours (> 1: we
are faster).
What is timed:
  * sklearn: DecisionTreeRegressor(max_depth=3).fit(X, R) on raw float X.
  * ours (raw): HistTree(max_depth=3).fit(X, R): binning of X (255 quantile bins) + tree growth.
  * ours (binned): HistTree(max_depth=3).fit(Xb, R) on a BinnedX made once outside the timer
    (what boosting does every round).
  * LightGBM: Booster.update() = exactly one boosting iteration (gradients, growth of one tree with
    max_depth=3, num_leaves=8, max_bin=255, training-score update) on a Dataset constructed outside
    the timer.  "steady": iterations 2-4 of one Booster (its buffers already allocated); "first": the
    first update() of a freshly created Booster (includes LightGBM's per-booster setup).  Ours:
    residuals y - score, HistTree.fit(Xb, residuals) and the training-score update via train_leaf_,
    i.e. the same work, allocating everything afresh on every call.
  * fit_many: fit_many(Xb, R (B, n, K), max_depth=3) vs B sklearn fits on raw X and vs B HistTree fits.
The LightGBM section runs both sides at the same explicit thread count (1, then the machine's cores),
interleaved in this process, best of 3, with the load average before and after (``_peers.py``); its
ratios are ours / LightGBM (< 1: we are faster).  scikit-learn's trees are single-threaded.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from distviz.trees import Binner, HistTree, fit_many  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _peers import LoadWatch, interleaved_best, thread_counts, threads  # noqa: E402


def best_of(fn, reps: int = 3, inner: int = 1) -> tuple[float, float]:
    """(best wall time, best CPU time of this process) over reps repetitions of inner calls, per call, seconds."""
    wall = cpu = np.inf
    for _ in range(reps):
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(inner):
            fn()
        wall = min(wall, (time.perf_counter() - t0) / inner)
        cpu = min(cpu, (time.process_time() - c0) / inner)
    return wall, cpu


def make_data(n: int, p: int, K: int, seed: int = 0):
    """Features N(0, I_p) and K noisy versions of a nonlinear signal."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    Z = np.concatenate([X, rng.normal(size=(n, max(0, 4 - p)))], axis=1)
    f = np.sin(2 * Z[:, 0]) + Z[:, 1] * Z[:, 2] + 0.5 * (Z[:, 3] > 0.3)
    R = f[:, None] * np.linspace(0.5, 1.5, K)[None, :] + rng.normal(scale=0.5, size=(n, K))
    return X, R


def fmt(t: float) -> str:
    return f"{t * 1e3:9.2f} ms" if t >= 1e-3 else f"{t * 1e6:9.1f} us"


def row(name, ours, peer, peer_name):
    """One line: wall (cpu) of ours and the peer, and the wall-time and CPU-time ratios peer / ours."""
    print(
        f"{name:<36} ours {fmt(ours[0])} (cpu {fmt(ours[1])})   {peer_name:>12} {fmt(peer[0])} (cpu {fmt(peer[1])})"
        f"   ratio {peer[0] / ours[0]:6.1f}x (cpu {peer[1] / ours[1]:5.1f}x)"
    )


def bench_sklearn(quick: bool):
    from sklearn.tree import DecisionTreeRegressor

    print("\n== depth-3 tree fit vs scikit-learn DecisionTreeRegressor (p = 10) ==")
    for n in (10_000, 100_000):
        for K in (1, 20):
            if quick and n > 10_000:
                continue
            X, R = make_data(n, 10, K)
            y = R[:, 0] if K == 1 else R
            Xb = Binner(255).fit_transform(X)
            HistTree(max_depth=3).fit(Xb, R)  # warm-up / compile
            HistTree(max_depth=3).fit(X, R)
            t_sk = best_of(lambda: DecisionTreeRegressor(max_depth=3).fit(X, y))
            t_raw = best_of(lambda: HistTree(max_depth=3).fit(X, R))
            t_bin = best_of(lambda: HistTree(max_depth=3).fit(Xb, R))
            row(f"n={n:>7} K={K:>2} ours(raw X)", t_raw, t_sk, "sklearn")
            row(f"n={n:>7} K={K:>2} ours(BinnedX)", t_bin, t_sk, "sklearn")


def bench_lightgbm(quick: bool):
    """One boosting iteration and the binning vs LightGBM, at 1 thread and at the machine's cores (equal on both sides)."""
    try:
        import lightgbm as lgb
    except ImportError:
        print("\n(lightgbm not installed: LightGBM comparison skipped)")
        return
    for n in (100_000, 1_000_000):
        if quick and n > 100_000:
            continue
        X, R = make_data(n, 10, 1)
        y = R[:, 0]
        Xb = Binner(255).fit_transform(X)
        for k in thread_counts():
            with LoadWatch(f"one boosting iteration vs LightGBM Booster.update(), n = {n:,} (p = 10, K = 1, depth 3, "
                           f"255 bins), {k} thread(s) on both sides, interleaved") as watch, threads(k):
                params = dict(
                    objective="regression", max_depth=3, num_leaves=8, max_bin=255, learning_rate=1.0,
                    min_data_in_leaf=1, min_sum_hessian_in_leaf=1e-3, lambda_l2=0.0, verbose=-1,
                    num_threads=k, boost_from_average=True, bagging_fraction=1.0, feature_fraction=1.0,
                )
                ds_params = {"max_bin": 255, "verbose": -1, "num_threads": k}
                ds = lgb.Dataset(X, y, params=ds_params, free_raw_data=False).construct()
                fresh = [lgb.Booster(params=params, train_set=ds) for _ in range(4)]
                fresh[0].update()  # warm-up
                it = iter(fresh[1:])
                booster = lgb.Booster(params=params, train_set=ds)
                booster.update()
                score = np.full(n, y.mean())

                def ours():
                    r = (y - score)[:, None]
                    tree = HistTree(max_depth=3).fit(Xb, r)
                    return score + tree.value_[tree.train_leaf_, 0]

                ours()
                cases = {"ours": ours, "lgb_steady": booster.update, "lgb_first": lambda: next(it).update(),
                         "ours_bin": lambda: Binner(255).fit_transform(X),
                         "lgb_bin": lambda: lgb.Dataset(X, y, params=ds_params).construct()}
                best, _ = interleaved_best(cases, repeats=3)
            tag = watch.label()
            for name, peer in (("one iteration (steady)", "lgb_steady"), ("one iteration (first)", "lgb_first")):
                print(f"   n={n:>8} {k} thr {name:<24} ours {fmt(best['ours'])}   LightGBM {fmt(best[peer])}   "
                      f"ours / LightGBM {best['ours'] / best[peer]:5.2f}x{tag}")
            print(f"   n={n:>8} {k} thr {'binning (once per fit)':<24} ours {fmt(best['ours_bin'])}   LightGBM "
                  f"{fmt(best['lgb_bin'])}   ours / LightGBM {best['ours_bin'] / best['lgb_bin']:5.2f}x{tag}")


def bench_many(quick: bool):
    from sklearn.tree import DecisionTreeRegressor

    print("\n== fit_many: B = 10 trees sharing X (depth 3) ==")
    for n, p, K in ((200, 5, 10), (10_000, 10, 1), (10_000, 10, 5)):
        X, _ = make_data(n, p, 1)
        rng = np.random.default_rng(1)
        B = 10
        Rb = np.sin(X[None, :, :1] * rng.normal(size=(B, 1, K))) + rng.normal(scale=0.3, size=(B, n, K))
        Xb = Binner(255).fit_transform(X)
        fit_many(Xb, Rb, max_depth=3)
        fit_many(Xb, Rb, max_depth=3, shared=True)
        inner = 50 if n <= 1000 else 1
        t_many = best_of(lambda: fit_many(Xb, Rb, max_depth=3), inner=inner)
        t_shared = best_of(lambda: fit_many(Xb, Rb, max_depth=3, shared=True), inner=inner)
        t_loop = best_of(lambda: [HistTree(max_depth=3).fit(Xb, Rb[b]) for b in range(B)], inner=inner)
        t_sk = best_of(
            lambda: [DecisionTreeRegressor(max_depth=3).fit(X, Rb[b] if K > 1 else Rb[b, :, 0]) for b in range(B)],
            inner=max(1, inner // 10),
        )
        tag = f"n={n:>6} p={p:>2} K={K:>2}"
        row(f"{tag} fit_many", t_many, t_sk, "10x sklearn")
        row(f"{tag} fit_many", t_many, t_loop, "10x HistTree")
        row(f"{tag} shared tree (B*K cols)", t_shared, t_sk, "10x sklearn")


def bench_small():
    print("\n== per-call latency, depth 3, BinnedX input (WGBoost-sized calls) ==")
    for n, p, K in ((200, 1, 10), (200, 5, 10)):
        X, R = make_data(n, p, K)
        Xb = Binner(255).fit_transform(X)
        tree = HistTree(max_depth=3)
        tree.fit(Xb, R)
        t_fit = best_of(lambda: tree.fit(Xb, R), inner=500)
        t_pred = best_of(lambda: tree.predict(Xb), inner=500)
        print(
            f"n={n} p={p} K={K}: fit {fmt(t_fit[0])} (cpu {fmt(t_fit[1])})   "
            f"predict {fmt(t_pred[0])} (cpu {fmt(t_pred[1])})"
        )


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="skip the largest sizes")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    with threads(1):  # scikit-learn's trees are single-threaded: ours at 1 thread beside them (like with like)
        bench_small()
        with LoadWatch("scikit-learn comparisons, ours at 1 thread") as watch:
            bench_sklearn(args.quick)
            bench_many(args.quick)
        if watch.under_load:
            print(watch.label().strip())
    bench_lightgbm(args.quick)
    print(f"\ntotal benchmark time {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
