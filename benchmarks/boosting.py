"""Benchmark: exponential-family boosting against LightGBM (Poisson) and ngboost (Normal), same run.

1. Poisson MGD, n = 1e6, p = 10, depth 3, 255 bins, lr 0.1: seconds per round of
   ``DistributionalBoosting(law="mgd")`` (the engine loop: tree, update, train NLL, entropy, trace)
   against ``lightgbm.train(objective="poisson")`` with max_depth 3, 8 leaves, 255 bins, lr 0.1.
   Binning (ours) and Dataset construction (LightGBM) are timed separately.  Goal: within 2x.
2. NGD for the Normal at n = 5e3 and 5e4: seconds per round of ``DistributionalBoosting(law="ngd")``
   (one shared depth-3 tree on the 2-vector U, with the trace) and of the bare engine with one
   depth-3 tree per parameter as ngboost fits them (no line search), against
   ``ngboost.NGBRegressor(Dist=Normal, Base=DecisionTreeRegressor(max_depth=3), natural_gradient=True)``.
   Goal: >= 10x faster per iteration.

Each timing is the best of 3 repeats (the machine is shared).  Run:
``python benchmarks/boosting.py [--quick]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


from _timing import best_of  # noqa: E402  (benchmarks/ is on sys.path when a script runs)


def poisson_data(n, p, seed=0):
    """Poisson counts whose log-rate depends on three of p uniform features."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, p))
    eta = 0.5 + np.sin(X[:, 0]) + 0.5 * X[:, 1] * (X[:, 2] > 0)
    return X, rng.poisson(np.exp(eta)).astype(float)


def bench_poisson(n, p, rounds, repeats):
    """Seconds per round: our Poisson MGD vs LightGBM objective='poisson'."""
    import lightgbm as lgb

    from distviz.boosting import DistributionalBoosting
    from distviz.boosting.engine import BoostingEngine
    from distviz.boosting.laws import make_law
    from distviz.families import get
    from distviz.trees import Binner

    X, y = poisson_data(n, p)
    # warm up numba
    DistributionalBoosting("poisson", law="mgd", n_rounds=2, max_depth=3).fit(X[:5000], y[:5000])

    t_bin, Xb = best_of(lambda: Binner(255).fit_transform(X), repeats)
    law = make_law("mgd", get("poisson"))

    def ours_engine():
        return BoostingEngine(law, n_rounds=rounds, learning_rate=0.1,
                              tree_params={"max_depth": 3, "min_weight_leaf": 1e-3}).fit(Xb, y)

    t_eng, _ = best_of(ours_engine, repeats)

    def ours_full():
        return DistributionalBoosting("poisson", law="mgd", n_rounds=rounds, learning_rate=0.1, max_depth=3,
                                      max_bins=255, min_weight_leaf=1e-3).fit(X, y)

    t_full, m = best_of(ours_full, repeats)

    params = {"objective": "poisson", "learning_rate": 0.1, "max_depth": 3, "num_leaves": 8, "max_bin": 255,
              "min_data_in_leaf": 1, "min_sum_hessian_in_leaf": 1e-3, "verbose": -1, "num_threads": 0,
              "force_col_wise": True}
    t_ds, ds = best_of(lambda: lgb.Dataset(X, y, params=dict(params, feature_pre_filter=False)).construct(), repeats)
    t_lgb, booster = best_of(lambda: lgb.train(params, ds, num_boost_round=rounds), repeats)
    nll_ours = m.score(X, y)
    mu = booster.predict(X)
    nll_lgb = float(np.mean(mu - y * np.log(mu)) - np.mean(get("poisson").log_base_measure(y)))
    return {
        "n": n, "p": p, "rounds": rounds,
        "ours_engine_s_per_round": t_eng / rounds,
        "ours_fit_total_s": t_full,
        "ours_binning_s": t_bin,
        "lightgbm_s_per_round": t_lgb / rounds,
        "lightgbm_dataset_s": t_ds,
        "ratio_engine_vs_lightgbm": (t_eng / rounds) / (t_lgb / rounds),
        "ratio_fit_vs_lightgbm": t_full / (t_ds + t_lgb),
        "train_nll_ours": nll_ours, "train_nll_lightgbm": nll_lgb,
    }


def bench_ngd_normal(n, rounds_ours, rounds_ngb, repeats):
    """Seconds per round: our NGD for the Normal vs ngboost NGBRegressor(Dist=Normal)."""
    from ngboost import NGBRegressor
    from ngboost.distns import Normal
    from sklearn.tree import DecisionTreeRegressor

    from distviz.boosting import DistributionalBoosting
    from distviz.boosting.engine import BoostingEngine
    from distviz.boosting.laws import make_law
    from distviz.families import get
    from distviz.trees import Binner

    rng = np.random.default_rng(1)
    X = rng.uniform(-3, 3, size=(n, 5))
    y = 2 * np.sin(X[:, 0]) + np.exp(-1 + 0.4 * X[:, 1]) * rng.standard_normal(n)
    DistributionalBoosting("normal", law="ngd", n_rounds=2).fit(X[:500], y[:500])

    t_ours, m = best_of(lambda: DistributionalBoosting("normal", law="ngd", n_rounds=rounds_ours, learning_rate=0.01,
                                                       max_depth=3, min_weight_leaf=1e-3).fit(X, y), repeats)
    Xb = Binner(255).fit_transform(X)
    law = make_law("ngd", get("normal"))
    law.tree_kwargs = lambda data: {}   # bare engine: no Gain^ent bookkeeping

    def ours_like_ngboost():
        return BoostingEngine(law, n_rounds=rounds_ours, learning_rate=0.01, tree_mode="separate",
                              tree_params={"max_depth": 3, "min_weight_leaf": 1e-3}).fit(Xb, y)

    t_sep, _ = best_of(ours_like_ngboost, repeats)

    def ngb():
        base = DecisionTreeRegressor(criterion="squared_error", max_depth=3, random_state=0)
        return NGBRegressor(Dist=Normal, Base=base, n_estimators=rounds_ngb, natural_gradient=True,
                            learning_rate=0.01, minibatch_frac=1.0, verbose=False, random_state=0).fit(X, y)

    t_ngb, _ = best_of(ngb, repeats)
    a, b, c = t_ours / rounds_ours, t_sep / rounds_ours, t_ngb / rounds_ngb
    return {"n": n, "ours_s_per_round": a, "ours_separate_trees_s_per_round": b,
            "ngboost_s_per_round": c, "speedup_ours": c / a, "speedup_separate": c / b}


def main(argv=None):
    """Run both benchmarks and print seconds and ratios."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller n for a smoke run")
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args(argv)
    n_pois = 100_000 if a.quick else 1_000_000
    t0 = time.perf_counter()
    r = bench_poisson(n_pois, 10, rounds=5, repeats=a.repeats)
    print(f"[Poisson MGD] n={r['n']:,} p={r['p']} depth 3, 255 bins, lr 0.1, {r['rounds']} rounds, best of {a.repeats}")
    print(f"  ours (engine loop)          {r['ours_engine_s_per_round'] * 1e3:8.1f} ms/round")
    print(f"  LightGBM objective=poisson  {r['lightgbm_s_per_round'] * 1e3:8.1f} ms/round")
    print(f"  ratio per round ours/LightGBM: {r['ratio_engine_vs_lightgbm']:.2f}x (goal <= 2x)")
    print(f"  end to end ({r['rounds']} rounds): ours DistributionalBoosting.fit {r['ours_fit_total_s']:.2f} s "
          f"(checks, binning {r['ours_binning_s']:.2f} s, trace) vs LightGBM Dataset {r['lightgbm_dataset_s']:.2f} s + "
          f"train {r['lightgbm_s_per_round'] * r['rounds']:.2f} s: ratio {r['ratio_fit_vs_lightgbm']:.2f}x")
    print(f"  train NLL after {r['rounds']} rounds: ours {r['train_nll_ours']:.4f}, LightGBM {r['train_nll_lightgbm']:.4f}")
    for n in ((5_000,) if a.quick else (5_000, 50_000)):
        s = bench_ngd_normal(n, rounds_ours=30, rounds_ngb=5 if n > 10_000 else 10, repeats=a.repeats)
        print(f"[Normal NGD] n={n:,} p=5 depth 3, best of {a.repeats}")
        print(f"  ours (shared vector tree)              {s['ours_s_per_round'] * 1e3:8.2f} ms/round")
        print(f"  ours (one tree per parameter, engine)  {s['ours_separate_trees_s_per_round'] * 1e3:8.2f} ms/round")
        print(f"  ngboost NGBRegressor(Dist=Normal)      {s['ngboost_s_per_round'] * 1e3:8.2f} ms/round")
        print(f"  speed-up: {s['speedup_ours']:.1f}x (shared tree), {s['speedup_separate']:.1f}x "
              f"(tree per parameter) (goal >= 10x)")
    print(f"total {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
