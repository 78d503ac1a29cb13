"""Per-round time of distviz's SKA-WGBoost against a numpy + scikit-learn re-implementation of the
authors' reference loop (BASELINE: one multi-output DecisionTreeRegressor per round, the SKA direction of
eq. 7-9 in vectorised numpy, the current particles cached instead of re-predicting all trees).

Settings: (a) App. E (200 inputs, 1 feature, N = 10, d = 1, depth 3; goal <= 0.5 ms per round) and
(b) n = 1000, 8 features, normal target d = 2, N = 10, depth 3 (goal <= 3 ms per round).
Times are the minimum over repeats of (fit time / rounds), which is robust on a shared machine.

    python benchmarks/wgboost.py [--rounds 200] [--repeats 3]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from sklearn.tree import DecisionTreeRegressor

from distviz.boosting import WGBoost
from distviz.boosting.wg_targets import NormalTarget, gaussian_location_target


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
    """Minimum over repeats of seconds per round of fn()."""
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, (time.perf_counter() - t0) / rounds)
    return best


def run_setting(name, X, y, target_factory, init, rounds, repeats, goal_ms):
    """Time ours (full fit incl. trace, and the boosting loop alone) and the baseline on one setting."""
    tgt = target_factory()
    Y = tgt.prepare_y(y)
    base = per_round(lambda: baseline_fit(X, Y, tgt, init, rounds), rounds, repeats)
    loop = [np.inf]

    def ours():
        est = WGBoost(target_factory(), init=init, n_rounds=rounds, random_state=0).fit(X, y)
        loop[0] = min(loop[0], est.fit_seconds_ / rounds)
        return est

    ours()  # compile
    loop[0] = np.inf
    full = per_round(ours, rounds, repeats)
    # same maths: final particles agree with the baseline's (same trees when splits are unambiguous)
    est = ours()
    P_ours = est.predict_particles(X)
    P_base = baseline_fit(X, Y, tgt, init, rounds)
    diff = float(np.abs(P_ours - P_base).max())
    print(f"{name}: ours {full * 1e3:.3f} ms/round (loop {loop[0] * 1e3:.3f}, goal <= {goal_ms}), "
          f"baseline {base * 1e3:.3f} ms/round, speed-up x{base / full:.1f} (loop x{base / loop[0]:.1f}); "
          f"max |particles ours - baseline| = {diff:.2e}")
    return {"ours_ms": full * 1e3, "ours_loop_ms": loop[0] * 1e3, "baseline_ms": base * 1e3,
            "speedup": base / full, "max_abs_diff": diff}


def main(argv=None):
    """Run both settings and print the per-round times and ratios."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args(argv)
    out = {}
    X = np.linspace(-3.5, 3.5, 200)[:, None]
    out["app_e"] = run_setting("App. E (n=200, p=1, N=10, d=1)", X, np.sin(X[:, 0]),
                               lambda: gaussian_location_target(0.5), np.linspace(-10, 10, 10)[:, None],
                               a.rounds, a.repeats, 0.5)
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(1000, 8))
    y = X[:, 0] - 2 * X[:, 1] ** 2 + np.abs(X[:, 2]) * rng.standard_normal(1000)
    init = np.column_stack([np.linspace(-1, 1, 10), np.zeros(10)])
    out["n1000"] = run_setting("n=1000, p=8, N=10, d=2", X, y, NormalTarget, init, a.rounds, a.repeats, 3.0)
    return out


if __name__ == "__main__":
    main()
