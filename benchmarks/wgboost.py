"""Per-round time of distviz's SKA-WGBoost against a numpy + scikit-learn re-implementation of the
authors' reference loop (BASELINE: one multi-output DecisionTreeRegressor per round, the SKA direction of
eq. 7-9 in vectorised numpy, the current particles cached instead of re-predicting all trees).

Settings: (a) App. E (200 inputs, 1 feature, N = 10, d = 1, depth 3; goal <= 0.5 ms per round) and
(b) n = 1000, 8 features, normal target d = 2, N = 10, depth 3 (goal <= 3 ms per round).
Times are the minimum over repeats of (fit time / rounds), both wall-clock and CPU time of this
process (the fair measure on a shared, oversubscribed machine); our fit includes its trace.

Also the App. F.4 initial flow at n = 1000 (goal < 1 s for 5000 steps) against the reference-style flow.

Ours runs at 1 thread and at the machine's cores (the baseline is single-threaded numpy + scikit-learn,
so the 1-thread line is the like-with-like one); the load is printed before and after (``_peers.py``).

    python benchmarks/wgboost.py [--rounds 200] [--repeats 3] [--init-steps 5000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _peers import LoadWatch, thread_counts, threads  # noqa: E402  (benchmarks/ is on sys.path)
from sklearn.tree import DecisionTreeRegressor

from distviz.estimators import WGBoost
from distviz.families.posteriors import NormalTarget, gaussian_location_target


# ----------------------------------------------------------------------------- BASELINE
def baseline_ska_direction(P, G, Hd, h):
    """BASELINE: SKA target phi / psi in broadcast numpy, as the authors' torch code computes it."""
    diffs = P[:, :, None, :] - P[:, None, :, :]             # [i, a, b] = theta^a - theta^b
    kern = np.exp(-np.sum(diffs ** 2, -1) / h)
    gradk = -(2.0 / h) * diffs * kern[..., None]
    phi = np.mean(kern[..., None] * G[:, :, None, :] + gradk, axis=1)
    psi = np.mean(-(kern[..., None] ** 2) * Hd[:, :, None, :] + gradk ** 2, axis=1)
    return phi / psi


def baseline_fit(X, Y, target, init, rounds, lr=0.1, h=0.1, depth=3):
    """BASELINE reference loop with particles cached: returns the final training particles."""
    n = X.shape[0]
    N, d = init.shape
    P = np.repeat(init[None], n, axis=0)
    for _ in range(rounds):
        V = baseline_ska_direction(P, target.grad(P, Y), target.hess_diag(P, Y), h)
        tree = DecisionTreeRegressor(max_depth=depth, random_state=1).fit(X, V.reshape(n, N * d))
        P += lr * tree.predict(X).reshape(n, N, d)
    return P


def per_round(fn, rounds, repeats):
    """Minimum over repeats of (wall seconds, CPU seconds of this process) per round of fn()."""
    wall, cpu = np.inf, np.inf
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall = min(wall, (time.perf_counter() - t0) / rounds)
        cpu = min(cpu, (time.process_time() - c0) / rounds)
    return wall, cpu


def baseline_init_flow(target, Y, theta0, steps, lr=0.1, h=0.1):
    """BASELINE App. F.4 flow as the reference computes it: per step, gradients at all n rows, then averaged."""
    th = theta0.copy()
    n = Y.shape[0]
    for _ in range(steps):
        P = np.broadcast_to(th, (n,) + th.shape)
        g = target.grad(P, Y).mean(0)[None]
        hd = target.hess_diag(P, Y).mean(0)[None]
        th = th + lr * baseline_ska_direction(th[None], g, hd, h)[0]
    return th


def run_init(steps, repeats):
    """Time the App. F.4 initial flow at n = 1000 (normal target): ours (compiled, sufficient stats) vs baseline."""
    from distviz.boosting.wg_init import init_flow

    rng = np.random.default_rng(1)
    tgt = NormalTarget()
    Y = tgt.prepare_y(rng.normal(3.0, 2.0, size=1000))
    th0 = rng.standard_normal((10, 2))
    init_flow(tgt, Y, th0, n_steps=10)  # compile
    ours = min(_timed(lambda: init_flow(tgt, Y, th0, n_steps=steps)) for _ in range(repeats))
    nb = max(steps // 10, 1)
    base = _timed(lambda: baseline_init_flow(tgt, Y, th0, nb)) * steps / nb
    a, b = init_flow(tgt, Y, th0, n_steps=200), baseline_init_flow(tgt, Y, th0, 200)
    print(f"init flow (n=1000, N=10, d=2, {steps} steps): ours {ours:.3f} s (goal < 1 s), baseline {base:.2f} s "
          f"(timed on {nb} steps, scaled), speed-up x{base / ours:.0f}; max |ours - baseline| after 200 steps = "
          f"{np.abs(a - b).max():.1e}")
    return {"ours_s": ours, "baseline_s": base, "speedup": base / ours}


def _timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def run_setting(name, X, y, target_factory, init, rounds, repeats, goal_ms, compare=True):
    """Time ours (full fit incl. trace, and the boosting loop alone) and the baseline on one setting."""
    tgt = target_factory()
    Y = tgt.prepare_y(y)
    base = per_round(lambda: baseline_fit(X, Y, tgt, init, rounds), rounds, repeats)

    def ours():
        return WGBoost(target_factory(), init=init, n_estimators=rounds, random_state=0).fit(X, y)

    ours()  # compile
    full = per_round(ours, rounds, repeats)
    msg = (f"{name}: ours {full[1] * 1e3:.3f} ms/round CPU, {full[0] * 1e3:.3f} wall (goal <= {goal_ms}); "
           f"BASELINE {base[1] * 1e3:.3f} ms/round CPU, {base[0] * 1e3:.3f} wall; "
           f"speed-up x{base[1] / full[1]:.1f} CPU, x{base[0] / full[0]:.1f} wall")
    diff = float("nan")
    if compare:  # same maths: exact bins give the baseline's trees, so the particles agree
        est = WGBoost(target_factory(), init=init, n_estimators=rounds, max_bins="exact").fit(X, y)
        diff = float(np.abs(est.predict_particles(X) - baseline_fit(X, Y, tgt, init, rounds)).max())
        msg += f"; max |particles ours - baseline| = {diff:.1e}"
    print(msg)
    return {"ours_cpu_ms": full[1] * 1e3, "ours_wall_ms": full[0] * 1e3, "baseline_cpu_ms": base[1] * 1e3,
            "baseline_wall_ms": base[0] * 1e3, "speedup_cpu": base[1] / full[1], "max_abs_diff": diff}


def main(argv=None):
    """Run both settings and print the per-round times and ratios."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--init-steps", type=int, default=5000)
    a = ap.parse_args(argv)
    out = {}
    X = np.linspace(-3.5, 3.5, 200)[:, None]
    rng = np.random.default_rng(0)
    X8 = rng.uniform(-1, 1, size=(1000, 8))
    y8 = X8[:, 0] - 2 * X8[:, 1] ** 2 + np.abs(X8[:, 2]) * rng.standard_normal(1000)
    init8 = np.column_stack([np.linspace(-1, 1, 10), np.zeros(10)])
    for k in thread_counts():
        with LoadWatch(f"WGBoost SKA: ours at {k} thread(s); the BASELINE loop (numpy + scikit-learn trees) is "
                       f"single-threaded, BLAS limited to {k}") as watch, threads(k):
            out[f"app_e_{k}"] = run_setting(f"[{k} thr] App. E (n=200, p=1, N=10, d=1)", X, np.sin(X[:, 0]),
                                            lambda: gaussian_location_target(0.5), np.linspace(-10, 10, 10)[:, None],
                                            a.rounds, a.repeats, 0.5)
            out[f"n1000_{k}"] = run_setting(f"[{k} thr] n=1000, p=8, N=10, d=2", X8, y8, NormalTarget, init8,
                                            a.rounds, a.repeats, 3.0, compare=False)
        if watch.under_load:
            print(watch.label().strip())
    out["init"] = run_init(a.init_steps, a.repeats)
    return out


if __name__ == "__main__":
    main()
