"""Benchmark: Poisson MGD on a dask.distributed LocalCluster against lightgbm.dask, same cluster, same dask array.

The data are drifter-like (lon, lat, season, wind, SST, ... : 10 features) with a Poisson count whose
log-rate follows a wind-and-latitude speed model; they are generated chunk by chunk ON THE WORKERS
from a seeded per-block generator (a dask array, never materialised on the client).

Printed for both models: seconds per round (the difference of a ``--rounds`` fit and a 1-round fit,
divided by ``--rounds - 1``, so set-up and binning drop out; each the best of ``--repeats`` interleaved
fits, ``_peers.interleaved_best``; ours also gives its in-loop mean; 100 rounds by default: with 20, the
rounds are a third of a 2-3 s fit and the difference mostly measures the noise of the fixed costs; on
the 2-core machine it once gave LightGBM 0.013 s a round, faster than its in-memory 2-thread round),
end-to-end seconds of the ``--rounds`` fit, and the train NLL (mean over rows of
mu - y log mu + log y!, computed the same way from both models' dask predictions).  LightGBM's Poisson
objective clamps each step (``poisson_max_delta_step`` 0.7 multiplies its hessian by e^0.7, about half the
rate), so one more LightGBM fit, not timed, turns the clamp off (1e-6) and the NLL is compared with both.  Then rows per
second of our fit, the peak RSS of each worker and of the client (ru_maxrss through ``client.run``)
next to each worker's share of the binned data, and the load average before and after
(``_peers.LoadWatch``: a run under load is labelled so).  Settings: depth 3, 8 leaves, 255 bins,
learning rate 0.1, min_weight_leaf 1e-3 / min_sum_hessian_in_leaf 1e-3, LocalCluster(processes=True)
with ``--workers`` workers of ``--threads`` threads each (LightGBM's num_threads the same), started with
distviz's worker preload (``distviz.distributed.preload``, which loads our kernels as a worker starts) unless
``--no-preload``; first, the time from the cluster's start to the end of a fresh cluster's first round, in parts.

``--ngb``: instead, multivariate NGBoost (``NGB``, bivariate Normal velocity-like target from the same
features) on the cluster against the same ``NGB`` fitted in this process at 1 thread on the computed
arrays (no peer library fits NGBoost on Dask): seconds per round of each (the difference of a
``--rounds`` and a 1-round fit), end-to-end seconds, the train NLL and the largest difference of the
predicted parameters (both use the in-memory bin edges, so the models agree to rounding).

Run: ``python benchmarks/distributed.py [--rows 1000000] [--rounds 100] [--workers 2] [--chunk 250000] [--ngb]``
(``--rounds`` is 20 by default for ``--ngb`` and for the large fit without LightGBM);
above 1e7 rows (``--rows 50000000``) LightGBM is skipped unless ``--lightgbm`` is given (it copies every
partition into its workers as float64: 4 GB at that size) and ours is fitted once, its seconds per
round timed inside the loop and printed as the rounds finish.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time

import numpy as np

# this file is called distributed.py: its folder goes to the END of the path, so that `import distributed`
# (here and in the worker processes, which re-run this file) finds dask's package and `_peers` is still found
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [q for q in sys.path if os.path.abspath(q or ".") != _HERE] + [_HERE]

from _peers import LGB_POISSON_NO_CLAMP, LoadWatch, cores, interleaved_best  # noqa: E402  (after the sys.path fix above)

P = 10


def drifter_block(block_info=None, seed=0):
    """One chunk of drifter-like features (rows, 10), seeded by the chunk's index."""
    info = block_info[None]
    (r0, r1), _ = info["array-location"]
    rng = np.random.default_rng([seed, info["chunk-location"][0]])
    m = r1 - r0
    X = np.empty((m, P))
    X[:, 0] = rng.uniform(-80, 0, m)            # longitude
    X[:, 1] = rng.uniform(0, 65, m)             # latitude
    doy = rng.uniform(0, 365, m)
    X[:, 2] = np.sin(2 * np.pi * doy / 365)     # season
    X[:, 3] = np.cos(2 * np.pi * doy / 365)
    X[:, 4] = rng.normal(0, 6, m)               # wind u (m/s)
    X[:, 5] = rng.normal(0, 6, m)               # wind v
    X[:, 6] = 28 - 0.35 * X[:, 1] + rng.normal(0, 1, m)   # SST
    X[:, 7] = rng.exponential(1.0, m)           # distance to front (100 km)
    X[:, 8] = rng.uniform(0, 5, m)              # ocean depth (km)
    X[:, 9] = rng.normal(0, 1, m)               # noise feature
    return X


def poisson_target(X, seed=0, block_info=None):
    """Poisson counts (speed in 5 cm/s units) from a wind / latitude / front speed model, seeded by chunk."""
    rng = np.random.default_rng([seed, 1, block_info[0]["chunk-location"][0]])
    wind = np.hypot(X[:, 4], X[:, 5])
    eta = 0.3 + 0.08 * wind + 0.6 * np.exp(-X[:, 7]) + 0.4 * (np.abs(X[:, 1] - 38) < 5) + 0.2 * X[:, 2]
    return rng.poisson(np.exp(eta)).astype(float)


def make_data(rows, chunk, seed=0):
    """(X, y) dask arrays generated block by block where they are computed."""
    import dask.array as da
    chunks = ((chunk,) * (rows // chunk) + ((rows % chunk,) if rows % chunk else ()), (P,))
    X = da.map_blocks(drifter_block, chunks=chunks, dtype=float, seed=seed, meta=np.empty((0, P)))
    y = X.map_blocks(poisson_target, seed=seed, drop_axis=1, dtype=float, meta=np.empty(0))
    return X, y


def normal2_target(X, seed=0, block_info=None):
    """Bivariate Normal velocities (m/s) whose mean, scales and correlation follow wind and latitude, seeded by chunk."""
    rng = np.random.default_rng([seed, 2, block_info[0]["chunk-location"][0]])
    mu = np.column_stack([0.02 * X[:, 4] + 0.3 * (np.abs(X[:, 1] - 38) < 5), 0.02 * X[:, 5] - 0.05 * X[:, 2]])
    sd = np.column_stack([0.1 + 0.02 * np.hypot(X[:, 4], X[:, 5]), 0.1 + 0.1 * np.exp(-X[:, 7])])
    rho = 0.6 * np.tanh(X[:, 4] / 6)
    z = rng.standard_normal((X.shape[0], 2))
    return mu + sd * np.column_stack([z[:, 0], rho * z[:, 0] + np.sqrt(1 - rho ** 2) * z[:, 1]])


def bench_ngb(client, args, chunk):
    """NGB on the cluster vs the same NGB in this process (1 thread) on the computed arrays; prints the table."""
    import distviz.distributed as dd
    from distviz.estimators.ngboost import NGB
    from distviz.trees import Binner

    X, _ = make_data(args.rows, chunk)
    Y = X.map_blocks(normal2_target, chunks=(X.chunks[0], (2,)), dtype=float, meta=np.empty((0, 2)))
    Xm, Ym = (np.asarray(a) for a in client.compute([X, Y], sync=True))
    b0 = Binner(args.bins).fit(Xm)
    edges = Binner.from_edges(b0.bin_thresholds_, max_bins=args.bins, has_missing=b0.has_missing_)

    def make(rounds):
        return NGB(n_estimators=rounds, learning_rate=args.lr, max_depth=args.depth, max_bins=args.bins,
                   early_stopping_rounds=None)

    print(f"NGB (bivariate Normal, MVN-Cholesky chart, ngboost's line search): {args.rows:,} rows x {P} features, "
          f"{X.numblocks[0]} chunks, {args.workers} worker processes x {args.threads} thread(s); in memory: this "
          f"process, 1 numba thread")
    dd.fit(make(1), X[:chunk], Y[:chunk], binner=edges)   # compiles in the workers before timing
    make(1).fit(Xm[:chunk], Ym[:chunk])
    with LoadWatch(f"NGB on the cluster vs in memory, {args.rows:,} rows") as watch:
        best, last = interleaved_best({
            "cl_1": lambda: dd.fit(make(1), X, Y, binner=edges),
            "cl_R": lambda: dd.fit(make(args.rounds), X, Y, binner=edges),
            "mem_1": lambda: make(1).fit(Xm, Ym),
            "mem_R": lambda: make(args.rounds).fit(Xm, Ym)}, repeats=args.repeats)
    print(f"\n{'NGB':<22}{'s / round':>11}{'end-to-end s':>14}{'train NLL':>12}")
    for k, name in (("cl", "on the cluster"), ("mem", "in memory, 1 thread")):
        per = (best[k + "_R"] - best[k + "_1"]) / (args.rounds - 1)
        print(f"{name:<22}{per:>11.3f}{best[k + '_R']:>14.2f}{last[k + '_R'].train_loss_[-1]:>12.5f}")
    diff = np.abs(last["cl_R"].predict_params(Xm[:20000]) - last["mem_R"].predict_params(Xm[:20000])).max()
    print(f"largest difference of the predicted parameters (20,000 rows): {diff:.1e}{watch.label()}")


def poisson_nll(mu, y):
    """Mean Poisson NLL mu - y log mu + log y! over the rows of the dask arrays mu, y."""
    from scipy.special import gammaln
    v = mu - y * np.log(mu) + y.map_blocks(lambda b: gammaln(b + 1.0), dtype=float)
    return float(v.mean().compute())


def fit_ours(X, y, rounds, args, verbose=False):
    """Our DaskDistributionalBoosting Poisson MGD on the cluster: (model, seconds, perf_counter when round 1 ended);
    verbose prints every round."""
    from distviz.dask import DaskDistributionalBoosting
    m = DaskDistributionalBoosting("poisson", law="mgd", n_estimators=rounds, learning_rate=args.lr, max_depth=args.depth,
                                   max_bins=args.bins, min_weight_leaf=1e-3, trace_rows=200)
    t0 = time.perf_counter()

    first = []

    def progress(r, n):
        first.append(time.perf_counter())
        if verbose:
            print(f"   round {r}/{n} done at {time.perf_counter() - t0:.1f} s", flush=True)

    m.fit(X, y, progress=progress)
    return m, time.perf_counter() - t0, first[0] if first else np.nan


def fit_lgb(X, y, rounds, args, client, max_delta_step=None):
    """lightgbm.dask.DaskLGBMRegressor(objective='poisson') with the same settings, fitted (max_delta_step: LightGBM's
    poisson_max_delta_step, its default 0.7 when None)."""
    import lightgbm as lgb
    extra = {} if max_delta_step is None else {"poisson_max_delta_step": float(max_delta_step)}
    m = lgb.DaskLGBMRegressor(objective="poisson", n_estimators=rounds, learning_rate=args.lr, max_depth=args.depth,
                              num_leaves=2 ** args.depth, max_bin=args.bins, min_child_samples=1,
                              min_child_weight=1e-3, num_threads=args.threads, verbose=-1, client=client, **extra)
    return m.fit(X, y)


def peak_rss_mib():
    """Peak RSS of the calling process in MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def main():
    """Parse the options, start the LocalCluster and print the side-by-side table and the memory figures."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--chunk", type=int, default=None, help="rows per chunk (default rows / 8, at most 1e6)")
    ap.add_argument("--rounds", type=int, default=None,
                    help="rounds of the timed fits: 100 against LightGBM (see the module doc), else 20")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1, help="threads per worker (and LightGBM's num_threads)")
    ap.add_argument("--depth", type=int, default=3)
    ap.add_argument("--bins", type=int, default=255)
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--repeats", type=int, default=2, help="interleaved repeats, best time kept")
    ap.add_argument("--lightgbm", action="store_true", help="run LightGBM also above 1e7 rows")
    ap.add_argument("--ngb", action="store_true", help="NGB on the cluster vs in memory instead (default rows 200,000)")
    ap.add_argument("--no-preload", action="store_true",
                    help="start the workers without distviz's preload (distviz.distributed.preload)")
    ap.add_argument("--no-lightgbm", action="store_true",
                    help="fit ours only, once (its workers' peak RSS is then ours alone)")
    args = ap.parse_args()
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
        os.environ[k] = str(args.threads)   # the worker processes inherit these
    from distributed import Client, LocalCluster

    if args.ngb and "--rows" not in " ".join(sys.argv):
        args.rows = 200_000
    chunk = args.chunk or min(max(args.rows // 8, 1), 1_000_000)
    with_lgb = (args.rows <= 10_000_000 or args.lightgbm) and not args.no_lightgbm
    if args.rounds is None:
        args.rounds = 100 if with_lgb and not args.ngb else 20
    t_import = time.perf_counter()
    import distviz.dask  # noqa: F401  (the client's one-time import of the estimators, timed apart: not the cluster's)
    t_start = time.perf_counter()
    preload = [] if args.no_preload else ["distviz.distributed.preload"]   # the workers load the kernels as they start
    with LocalCluster(n_workers=args.workers, threads_per_worker=args.threads, processes=True,
                      dashboard_address=":0", memory_limit=0, preload=preload) as lc, Client(lc) as client:
        if args.ngb:
            bench_ngb(client, args, chunk)
            return
        t_up = time.perf_counter()
        X, y = make_data(args.rows, chunk)
        print(f"rows {args.rows:,}, features {P}, chunks {X.numblocks[0]} of {chunk:,} rows, {args.workers} worker "
              f"processes x {args.threads} thread(s) on {cores()} cores; depth {args.depth}, {args.bins} bins, "
              f"lr {args.lr}, {args.rounds} rounds")
        t_data = time.perf_counter()
        first = fit_ours(X[:chunk], y[:chunk], 1, args)[2]   # numba compiles (cached) in the workers before timing
        how = "without" if args.no_preload else "with"
        print(f"fresh cluster: its first round done {first - t_start:.1f} s after the cluster was started "
              f"(goal <= 5 s with numba's cache warm, e.g. after `distviz warm`; workers {how} the preload): the "
              f"cluster's start "
              f"{t_up - t_start:.1f} s, the data {t_data - t_up:.1f} s, the first fit to its first round "
              f"{first - t_data:.1f} s; before the cluster, the client imported distviz.dask in {t_start - t_import:.1f} s")
        table = {}
        rss_fit: dict = {}
        with LoadWatch(f"Poisson MGD vs lightgbm.dask, {args.rows:,} rows") as watch:
            if not with_lgb:   # large: one fit, its rounds timed inside the loop
                m, tR, _ = fit_ours(X, y, args.rounds, args, verbose=True)
                rss_fit = client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0)
                loop = float(np.mean(m.result_.seconds[1:]))
                table["ours (MGD)"] = (loop, tR, poisson_nll(m.predict_mean(X)[:, 0], y), loop)
            else:
                best, last = interleaved_best({
                    "ours_1": lambda: fit_ours(X, y, 1, args)[0],
                    "ours_R": lambda: fit_ours(X, y, args.rounds, args)[0],
                    "lgb_1": lambda: fit_lgb(X, y, 1, args, client),
                    "lgb_R": lambda: fit_lgb(X, y, args.rounds, args, client)}, repeats=args.repeats)
                m, tR = last["ours_R"], best["ours_R"]
                loop = float(np.mean(m.result_.seconds[1:]))
                table["ours (MGD)"] = ((tR - best["ours_1"]) / (args.rounds - 1), tR,
                                       poisson_nll(m.predict_mean(X)[:, 0], y), loop)
                table["lightgbm.dask"] = ((best["lgb_R"] - best["lgb_1"]) / (args.rounds - 1), best["lgb_R"],
                                          poisson_nll(last["lgb_R"].predict(X), y), np.nan)
                # one more fit, not timed: the same model with LightGBM's step clamp off (the NLL comparison)
                t0 = time.perf_counter()
                free = fit_lgb(X, y, args.rounds, args, client, max_delta_step=LGB_POISSON_NO_CLAMP)
                table["lightgbm, no clamp"] = (np.nan, time.perf_counter() - t0, poisson_nll(free.predict(X), y), np.nan)
        print(f"\n{'model':<20}{'s / round':>11}{'end-to-end s':>14}{'train NLL':>12}{'in-loop s/round':>17}")
        for k, (pr, e2e, nll, lp) in table.items():
            print(f"{k:<20}{pr:>11.3f}{e2e:>14.2f}{nll:>12.5f}{lp:>17.3f}")
        if with_lgb:
            a, b, c = table["ours (MGD)"], table["lightgbm.dask"], table["lightgbm, no clamp"]
            print(f"ratio ours / LightGBM per round: {a[0] / b[0]:.2f}x (goal <= 1.0x){watch.label()}")
            print(f"train NLL, ours against LightGBM: {100 * (a[2] - b[2]) / abs(b[2]):+.2f}% with its default step "
                  f"clamp (poisson_max_delta_step 0.7), {100 * (a[2] - c[2]) / abs(c[2]):+.2f}% with the clamp off "
                  f"({LGB_POISSON_NO_CLAMP:g}: the same unclamped step as ours; goal within 1%)")
        print(f"\nrows per second (ours, {args.rounds} rounds end to end): {args.rows * args.rounds / tR:,.0f}; "
              f"per round: {args.rows / table['ours (MGD)'][0]:,.0f}")
        rss = client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0)
        share = args.rows * P / args.workers / 2 ** 20
        state = args.rows * (8 * 3 + 4) / args.workers / 2 ** 20
        print(f"binned data per worker (uint8 codes): {share:,.0f} MiB; per-row state per worker (T, F, R float64, "
              f"partition int32: 28 bytes a row): {state:,.0f} MiB")
        bound = share + 32 * args.rows / args.workers / 2 ** 20 + 450
        for addr, r in sorted(rss.items()):
            fit_only = f" ({rss_fit[addr]:,.0f} MiB at the end of the fit, before the NLL pass)" if rss_fit else ""
            print(f"peak RSS worker {addr}: {r:,.0f} MiB{fit_only} (goal <= bin codes + 32 bytes a row + 450 MiB "
                  f"= {bound:,.0f} MiB)")
        print(f"peak RSS client: {peak_rss_mib():,.0f} MiB (goal <= 1024 MiB){watch.label()}")


if __name__ == "__main__":
    main()
