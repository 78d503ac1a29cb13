"""Benchmark: exponential-family boosting against LightGBM (Poisson) and ngboost (Normal), same run.

1. Poisson MGD, n = 1e6, p = 10, depth 3, 255 bins, lr 0.1: seconds per round of
   ``DistributionalBoosting(law="mgd")`` (the engine loop: tree, update, train NLL, entropy, trace)
   against ``lightgbm.train(objective="poisson")`` with max_depth 3, 8 leaves, 255 bins, lr 0.1.
   Binning (ours) and Dataset construction (LightGBM) are timed separately.  Goal: <= 1.0x per round.
   Then both fitted models predict the n training rows (``predict_mean`` against ``Booster.predict``).
2. NGD for the Normal at n = 5e3 and 5e4: seconds per round of ``DistributionalBoosting(law="ngd")``
   (one shared depth-3 tree on the 2-vector U, with the trace) and of the bare engine with one
   depth-3 tree per parameter as ngboost fits them (no line search), against
   ``ngboost.NGBRegressor(Dist=Normal, Base=DecisionTreeRegressor(max_depth=3), natural_gradient=True)``.
   Goal: >= 10x faster per iteration.
3. Prediction (``--only predict``, also part of 1): a fitted 50-round Poisson MGD model predicting the 1e6
   rows (``predict_mean``, one compiled pass) against LightGBM's ``Booster.predict``.  Goal: <= 0.6x at 1
   and at 2 threads.

Both sides run in this process at the same explicit thread counts (1 and the machine's cores; ngboost
is single-threaded, so ours is also given at 1 thread), interleaved, best of 3; the load average is
printed before and after each section and a section run under load is labelled so (``_peers.py``).

Run: ``python benchmarks/boosting.py [--quick] [--rounds 50] [--repeats 3] [--only poisson|ngd|predict]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _peers import LGB_POISSON_NO_CLAMP, LoadWatch, interleaved_best, load_average, thread_counts, threads  # noqa: E402  (benchmarks/ is on sys.path)


def poisson_data(n, p, seed=0):
    """Poisson counts whose log-rate depends on three of p uniform features."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, p))
    eta = 0.5 + np.sin(X[:, 0]) + 0.5 * X[:, 1] * (X[:, 2] > 0)
    return X, rng.poisson(np.exp(eta)).astype(float)


def bench_poisson(n, p, rounds, repeats):
    """Poisson MGD vs LightGBM objective='poisson' at equal thread counts (1 and the cores), interleaved.

    Returns one dict per thread count: seconds per round of our engine loop (binning excluded), of
    ``DistributionalBoosting.fit`` (binning, checks and trace included), our binning, LightGBM's
    ``train`` per round and its Dataset construction, each the best of `repeats` interleaved runs;
    then the two fitted models' predictions on the n rows (``predict_mean`` / ``Booster.predict``).
    """
    import lightgbm as lgb

    from distviz.boosting.engine import BoostingEngine
    from distviz.boosting.laws import make_law
    from distviz.estimators import DistributionalBoosting
    from distviz.families import get
    from distviz.trees import Binner

    X, y = poisson_data(n, p)
    # warm up numba (compiles every kernel the timed calls use)
    DistributionalBoosting("poisson", law="mgd", n_estimators=2, max_depth=3).fit(X[:5000], y[:5000])
    law = make_law("mgd", get("poisson"))
    out = []
    for k in thread_counts():
        params = {"objective": "poisson", "learning_rate": 0.1, "max_depth": 3, "num_leaves": 8, "max_bin": 255,
                  "min_data_in_leaf": 1, "min_sum_hessian_in_leaf": 1e-3, "verbose": -1, "num_threads": k,
                  "force_col_wise": True}
        with threads(k):
            Xb = Binner(255).fit_transform(X)
            ds = lgb.Dataset(X, y, params=dict(params, feature_pre_filter=False)).construct()
            cases = {
                "ours_binning": lambda: Binner(255).fit_transform(X),
                "lgb_dataset": lambda: lgb.Dataset(X, y, params=dict(params, feature_pre_filter=False)).construct(),
                "ours_engine": lambda: BoostingEngine(law, n_rounds=rounds, learning_rate=0.1,
                                                      tree_params={"max_depth": 3, "min_weight_leaf": 1e-3}).fit(Xb, y),
                "lgb_train": lambda: lgb.train(params, ds, num_boost_round=rounds),
                "ours_fit": lambda: DistributionalBoosting("poisson", law="mgd", n_estimators=rounds, learning_rate=0.1,
                                                           max_depth=3, max_bins=255, min_weight_leaf=1e-3).fit(X, y),
            }
            best, last = interleaved_best(cases, repeats)
            # prediction of the fitted models on the n training rows (rounds trees each), same threads
            model, booster = last["ours_fit"], last["lgb_train"]
            pred, _ = interleaved_best({"ours_predict": lambda: model.predict_mean(X),
                                        "lgb_predict": lambda: booster.predict(X, num_threads=k)}, repeats)
        nll_lgb = _lgb_nll(last["lgb_train"], X, y)
        out.append({
            "threads": k, "n": n, "p": p, "rounds": rounds,
            "ours_engine_s_per_round": best["ours_engine"] / rounds,
            "ours_fit_s_per_round": best["ours_fit"] / rounds,
            "ours_binning_s": best["ours_binning"],
            "lightgbm_s_per_round": best["lgb_train"] / rounds,
            "lightgbm_dataset_s": best["lgb_dataset"],
            "ours_predict_s": pred["ours_predict"],
            "lightgbm_predict_s": pred["lgb_predict"],
            "train_nll_ours": _poisson_nll(last["ours_fit"], X, y),
            "train_nll_lightgbm": nll_lgb,
        })
    # once, not timed: the same LightGBM fit with its Poisson step clamp off, the model whose NLL ours should match
    free = lgb.train(dict(params, poisson_max_delta_step=LGB_POISSON_NO_CLAMP), ds, num_boost_round=rounds)
    out[-1]["train_nll_lightgbm_no_clamp"] = _lgb_nll(free, X, y)
    return out


def bench_predict(n, p, rounds, repeats):
    """Prediction of n rows by a fitted Poisson MGD model and by LightGBM, equal threads (1 and the cores), interleaved.

    Both models are fitted once (``rounds`` depth-3 trees, the settings of :func:`bench_poisson`); then, at
    each thread count, ``predict_mean`` (E[y | x], one compiled pass through the trees with the domain check
    of ``distviz.boosting.predict``) and ``predict`` (the same through eta) against ``Booster.predict``, best
    of `repeats` interleaved runs.  Goal (issue 26): predict_mean <= 0.6x LightGBM at 1 and at 2 threads.
    """
    import lightgbm as lgb

    from distviz.estimators import DistributionalBoosting

    X, y = poisson_data(n, p)
    k_fit = max(thread_counts())
    params = {"objective": "poisson", "learning_rate": 0.1, "max_depth": 3, "num_leaves": 8, "max_bin": 255,
              "min_data_in_leaf": 1, "min_sum_hessian_in_leaf": 1e-3, "verbose": -1, "num_threads": k_fit,
              "force_col_wise": True}
    with threads(k_fit):
        model = DistributionalBoosting("poisson", law="mgd", n_estimators=rounds, learning_rate=0.1, max_depth=3,
                                       max_bins=255, min_weight_leaf=1e-3).fit(X, y)
        booster = lgb.train(params, lgb.Dataset(X, y, params=dict(params, feature_pre_filter=False)),
                            num_boost_round=rounds)
    model.predict_mean(X[:1000])   # compile / load the prediction kernels
    out = []
    for k in thread_counts():
        with threads(k):
            load = load_average()
            best, last = interleaved_best({"ours_predict_mean": lambda: model.predict_mean(X),
                                           "ours_predict": lambda: model.predict(X),
                                           "lgb_predict": lambda: booster.predict(X, num_threads=k)}, repeats)
        gap = float(np.max(np.abs(np.asarray(last["ours_predict_mean"]).reshape(-1) - last["ours_predict"])))
        out.append(dict(best, threads=k, n=n, rounds=rounds, load=load, mean_vs_predict=gap))
    return out


def print_predict(rows, repeats, watch):
    """The prediction table: seconds and ratio to LightGBM per thread count, with the load average."""
    r0 = rows[0]
    print(f"[Poisson MGD prediction] {r0['n']:,} rows, {r0['rounds']} depth-3 trees, best of {repeats} interleaved "
          f"runs, same process")
    for r in rows:
        ratio = r["ours_predict_mean"] / r["lgb_predict"]
        print(f"  {r['threads']} / {r['threads']} threads: ours predict_mean {r['ours_predict_mean']:.3f} s, "
              f"predict {r['ours_predict']:.3f} s, LightGBM predict {r['lgb_predict']:.3f} s: "
              f"{ratio:.2f}x (goal <= 0.6x), load average {r['load']:.2f}{watch.label()}")


def _mean_poisson_nll(mu, y):
    """Mean Poisson negative log-likelihood of means mu at counts y (lower is better)."""
    from distviz.families import get

    return float(np.mean(mu - y * np.log(mu)) - np.mean(get("poisson").log_base_measure(y)))


def _lgb_nll(booster, X, y):
    """Mean Poisson NLL of a LightGBM booster's predicted means."""
    return _mean_poisson_nll(booster.predict(X), y)


def _poisson_nll(model, X, y):
    """Mean Poisson NLL of a fitted DistributionalBoosting model."""
    return _mean_poisson_nll(np.asarray(model.predict_mean(X), dtype=float).reshape(-1), y)


def print_poisson(rows, repeats, watch):
    """The like-with-like table of the Poisson MGD comparison."""
    r0 = rows[0]
    print(f"[Poisson MGD] n={r0['n']:,} p={r0['p']} depth 3, 8 leaves, 255 bins, lr 0.1, {r0['rounds']} rounds, "
          f"best of {repeats} interleaved runs, same process")
    print(f"  {'threads (numba / LightGBM)':<27} {'ours engine':>12} {'ours fit':>10} {'LightGBM':>10} "
          f"{'ratio':>7} | {'our binning':>11} {'LGB Dataset':>11} {'ratio':>6}")
    print(f"  {'':<27} {'ms/round':>12} {'ms/round*':>10} {'ms/round':>10} {'eng/LGB':>7} | {'s':>11} {'s':>11} {'':>6}")
    for r in rows:
        tag = f"{r['threads']} / {r['threads']}"
        print(f"  {tag:<27} {r['ours_engine_s_per_round'] * 1e3:12.1f} "
              f"{r['ours_fit_s_per_round'] * 1e3:10.1f} {r['lightgbm_s_per_round'] * 1e3:10.1f} "
              f"{r['ours_engine_s_per_round'] / r['lightgbm_s_per_round']:6.2f}x | {r['ours_binning_s']:11.3f} "
              f"{r['lightgbm_dataset_s']:11.3f} {r['ours_binning_s'] / r['lightgbm_dataset_s']:5.2f}x{watch.label()}")
    if len(rows) > 1:
        a, b = rows[0], rows[-1]
        print(f"  speed-up 1 -> {b['threads']} threads: ours engine "
              f"{a['ours_engine_s_per_round'] / b['ours_engine_s_per_round']:.2f}x, LightGBM "
              f"{a['lightgbm_s_per_round'] / b['lightgbm_s_per_round']:.2f}x (goal for ours >= 1.7x)")
    print("  * ours fit = DistributionalBoosting.fit per round: binning, checks and the trace included")
    for r in rows:
        print(f"  predict the {r['n']:,} rows ({r['rounds']} trees), {r['threads']} / {r['threads']} threads: ours "
              f"predict_mean {r['ours_predict_s']:.3f} s, LightGBM predict {r['lightgbm_predict_s']:.3f} s, "
              f"{r['ours_predict_s'] / r['lightgbm_predict_s']:.2f}x (goal <= 0.6x){watch.label()}")
    last = rows[-1]
    print(f"  train NLL after {r0['rounds']} rounds: ours {last['train_nll_ours']:.4f}, LightGBM "
          f"{last['train_nll_lightgbm']:.4f} (its default step clamp, poisson_max_delta_step 0.7), "
          f"{last['train_nll_lightgbm_no_clamp']:.4f} with the clamp off ({LGB_POISSON_NO_CLAMP:g}: the same "
          f"unclamped step as ours)")


def bench_ngd_normal(n, rounds_ours, rounds_ngb, repeats):
    """Seconds per round: our NGD for the Normal vs ngboost NGBRegressor(Dist=Normal)."""
    from ngboost import NGBRegressor
    from ngboost.distns import Normal
    from sklearn.tree import DecisionTreeRegressor

    from distviz.boosting.engine import BoostingEngine
    from distviz.boosting.laws import make_law
    from distviz.estimators import DistributionalBoosting
    from distviz.families import get
    from distviz.trees import Binner

    rng = np.random.default_rng(1)
    X = rng.uniform(-3, 3, size=(n, 5))
    y = 2 * np.sin(X[:, 0]) + np.exp(-1 + 0.4 * X[:, 1]) * rng.standard_normal(n)
    DistributionalBoosting("normal", law="ngd", n_estimators=2).fit(X[:500], y[:500])

    Xb = Binner(255).fit_transform(X)
    law = make_law("ngd", get("normal"))
    law.tree_kwargs = lambda data: {}   # bare engine: no Gain^ent bookkeeping

    def ours_like_ngboost():
        return BoostingEngine(law, n_rounds=rounds_ours, learning_rate=0.01, tree_mode="separate",
                              tree_params={"max_depth": 3, "min_weight_leaf": 1e-3}).fit(Xb, y)


    def ngb():
        base = DecisionTreeRegressor(criterion="squared_error", max_depth=3, random_state=0)
        return NGBRegressor(Dist=Normal, Base=base, n_estimators=rounds_ngb, natural_gradient=True,
                            learning_rate=0.01, minibatch_frac=1.0, verbose=False, random_state=0).fit(X, y)

    best, _ = interleaved_best({
        "ours": lambda: DistributionalBoosting("normal", law="ngd", n_estimators=rounds_ours, learning_rate=0.01,
                                               max_depth=3, min_weight_leaf=1e-3).fit(X, y),
        "separate": ours_like_ngboost,
        "ngboost": ngb,
    }, repeats)
    t_ours, t_sep, t_ngb = best["ours"], best["separate"], best["ngboost"]
    a, b, c = t_ours / rounds_ours, t_sep / rounds_ours, t_ngb / rounds_ngb
    return {"n": n, "ours_s_per_round": a, "ours_separate_trees_s_per_round": b,
            "ngboost_s_per_round": c, "speedup_ours": c / a, "speedup_separate": c / b}


def main(argv=None):
    """Run both benchmarks and print seconds and ratios."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller n for a smoke run")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=50, help="rounds of the Poisson comparison")
    ap.add_argument("--only", choices=("poisson", "ngd", "predict"),
                    help="run one of the comparisons (predict: the prediction of a fitted Poisson MGD model only)")
    a = ap.parse_args(argv)
    n_pois = 100_000 if a.quick else 1_000_000
    t0 = time.perf_counter()
    if a.only == "predict":
        with LoadWatch("Poisson MGD prediction vs LightGBM predict, equal threads") as watch:
            rows = bench_predict(n_pois, 10, rounds=a.rounds, repeats=a.repeats)
        print_predict(rows, a.repeats, watch)
    if a.only in (None, "poisson"):
        with LoadWatch("Poisson MGD vs LightGBM, equal threads") as watch:
            rows = bench_poisson(n_pois, 10, rounds=a.rounds, repeats=a.repeats)
        print_poisson(rows, a.repeats, watch)
    ngd_cases = [] if a.only in ("poisson", "predict") else [(n, k) for n in ((5_000,) if a.quick else (5_000, 50_000))
                                                for k in thread_counts()]
    for n, k in ngd_cases:
        with LoadWatch(f"Normal NGD vs ngboost, n = {n:,}: ours at {k} thread(s), ngboost single-threaded "
                       f"(BLAS limited to {k})") as watch, threads(k):
            s = bench_ngd_normal(n, rounds_ours=30, rounds_ngb=5 if n > 10_000 else 10, repeats=a.repeats)
        print(f"[Normal NGD] n={n:,} p=5 depth 3, ours {k} thread(s) / ngboost 1, best of {a.repeats} interleaved")
        print(f"  ours (shared vector tree)              {s['ours_s_per_round'] * 1e3:8.2f} ms/round")
        print(f"  ours (one tree per parameter, engine)  {s['ours_separate_trees_s_per_round'] * 1e3:8.2f} ms/round")
        print(f"  ngboost NGBRegressor(Dist=Normal)      {s['ngboost_s_per_round'] * 1e3:8.2f} ms/round")
        print(f"  speed-up: {s['speedup_ours']:.1f}x (shared tree), {s['speedup_separate']:.1f}x "
              f"(tree per parameter) (goal >= 10x){watch.label()}")
    print(f"total {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
