"""Profile of one Poisson MGD boosting round: CPU time per round of the engine against LightGBM, and where it goes.

Measures CPU time (``time.process_time``) at ONE numba / LightGBM thread, so that the figure means
something on a shared machine; the engine loop (``BoostingEngine.fit`` on pre-binned X, trace
included) and ``lightgbm.train(objective="poisson")`` run interleaved in this process, best of
``--repeats``; the load average is printed with every figure.  Then a cProfile of the engine
(top functions by own time) and the CPU time of the tree growth kernel alone on the round-1 targets.
Run: ``python benchmarks/profile_rounds.py [--quick] [--n 1000000] [--rounds 20] [--repeats 3]``.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats

import numpy as np
from _peers import load_average, threads  # noqa: E402  (benchmarks/ is on sys.path)
from _timing import best_cpu_of  # noqa: E402


def _load() -> str:
    return f"load {load_average():.2f}"


def main(argv=None):
    """Print CPU ms per round (ours vs LightGBM, 1 thread), the engine's cProfile and the tree kernel's share."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="n = 1e5, 5 rounds, 1 repeat: a smoke run")
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-lightgbm", action="store_true", help="skip the LightGBM side")
    ap.add_argument("--top", type=int, default=18, help="functions listed by the profile")
    a = ap.parse_args(argv)
    if a.quick:
        a.n, a.rounds, a.repeats = 100_000, 5, 1
    from boosting import poisson_data

    from distviz.boosting.engine import BoostingEngine
    from distviz.boosting.laws import make_law
    from distviz.estimators import DistributionalBoosting
    from distviz.families import get
    from distviz.trees import Binner, HistTree

    X, y = poisson_data(a.n, 10)
    DistributionalBoosting("poisson", law="mgd", n_estimators=2, max_depth=3).fit(X[:5000], y[:5000])
    law = make_law("mgd", get("poisson"))
    tp = {"max_depth": 3, "min_weight_leaf": 1e-3}
    with threads(1):
        Xb = Binner(255).fit_transform(X)

        def ours():
            return BoostingEngine(law, n_rounds=a.rounds, learning_rate=0.1, tree_params=tp).fit(Xb, y)

        cases = {"ours engine": ours}
        if not a.no_lightgbm:
            import lightgbm as lgb

            params = {"objective": "poisson", "learning_rate": 0.1, "max_depth": 3, "num_leaves": 8, "max_bin": 255,
                      "min_data_in_leaf": 1, "min_sum_hessian_in_leaf": 1e-3, "verbose": -1, "num_threads": 1,
                      "force_col_wise": True}
            ds = lgb.Dataset(X, y, params=dict(params, feature_pre_filter=False)).construct()
            cases["LightGBM train"] = lambda: lgb.train(params, ds, num_boost_round=a.rounds)
        best = {k: np.inf for k in cases}
        print(f"n={a.n:,} p=10 depth 3, 255 bins, {a.rounds} rounds, 1 thread, CPU time, best of {a.repeats} "
              f"interleaved; {_load()} before")
        for _ in range(a.repeats):
            for k, fn in cases.items():
                best[k] = min(best[k], best_cpu_of(fn, 1))
        for k, v in best.items():
            print(f"  {k:<16} {v / a.rounds * 1e3:8.2f} ms/round CPU")
        if "LightGBM train" in best:
            print(f"  ratio ours / LightGBM: {best['ours engine'] / best['LightGBM train']:.2f}x  ({_load()} after)")

        R = y[:, None] - law.init(law.prepare(y), None)[None, :]
        tree_s = best_cpu_of(lambda: HistTree(**tp).fit(Xb, R), a.repeats)
        print(f"  HistTree.fit alone (round-1 targets): {tree_s * 1e3:.2f} ms CPU ({_load()})")

        pr = cProfile.Profile()
        pr.enable()
        ours()
        pr.disable()
        s = io.StringIO()
        pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(a.top)
        lines = [ln for ln in s.getvalue().splitlines() if ln.strip()]
        start = next(i for i, ln in enumerate(lines) if "ncalls" in ln)
        print(f"cProfile of the engine ({a.rounds} rounds), by own time:")
        print("\n".join(lines[start:]))


if __name__ == "__main__":
    main()
