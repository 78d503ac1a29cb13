"""Measure the CPU time and peak memory of the Lab's fits, to calibrate and check the server's cost model.

For each (algorithm, family, size) case the Lab's own estimator (`distviz.ui.fits.make_estimator`) is fitted
twice in a fresh child process, with R1 and R2 rounds; the child reports its CPU time (all threads: numba's and
BLAS's pools included) and its peak resident memory above the baseline after imports and data generation.
The peak is the resident size's high-water mark (reset before the fit, after a one-round fit has loaded the compiled
kernels, as a running server has them) above the resident size at its start.  Set-up CPU and per-round CPU
follow from the two fits (per round = (cpu(R2) - cpu(R1)) / (R2 - R1)).  The
prediction of `distviz.ui.fits.predict_fit_seconds` / `estimate_fit_mb` is printed beside each measurement,
with the ratio predicted / measured for a fit of `--rounds` rounds (the cost model's goal: within 1.5x
either way where the budget is reached).

    .venv/bin/python scripts/calibrate_costs.py [--quick] [--only wg_nka] [--json out.json]

Numba's kernels should be in the cache first (scripts/warm_numba.py); the load average is printed, and a
run on a busy machine is labelled as such.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, os, sys, time
sys.path.insert(0, {root!r})
import numpy as np
from distviz.ui import fits
cfg = fits.FitConfig(**json.loads(sys.argv[1]))
rounds = int(sys.argv[2])
cfg = fits.replace(cfg, n_estimators=rounds)
if cfg.dataset == "wide":
    rng = np.random.default_rng(0)
    s = fits._synthetic(cfg.family, int(cfg.n), 0, 1)
    X = np.column_stack([s.X] + [rng.standard_normal(len(s.y)) for _ in range(int(cfg.p) - 1)])
    data = fits.LabData(X, s.y, "x", "y", "wide")
    cfg = fits.replace(cfg, dataset="synthetic")
else:
    data = fits.load_data(cfg)
fits.make_estimator(fits.replace(cfg, n_estimators=1)).fit(data.X, data.y)   # loads the compiled kernels, as a server has
est = fits.make_estimator(cfg)
def status_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0
with open("/proc/self/clear_refs", "w") as f:   # resets the peak resident size (VmHWM) to the current one
    f.write("5")
base = status_kib("VmRSS")
c0 = time.process_time(); w0 = time.perf_counter()
est.fit(data.X, data.y)
cpu = time.process_time() - c0; wall = time.perf_counter() - w0
peak = status_kib("VmHWM")
print(json.dumps(dict(cpu=cpu, wall=wall, peak_mib=max(peak - base, 0) / 1024.0)))
"""


def cases(quick: bool) -> list[tuple[dict, int, int]]:
    """(config fields, R1, R2): the Lab's heaviest reachable settings per algorithm and family, plus mid sizes."""
    out: list[tuple[dict, int, int]] = []
    wg_fams = [("normal", 3), ("poisson", 3), ("categorical", 6), ("categorical", 3)]
    for m in ("ska", "fka", "nka", "langevin"):
        for fam, K in wg_fams:
            sizes = [(5000, 5, 6, 30)] if quick else [(5000, 5, 6, 30), (5000, 1, 3, 10), (1000, 1, 3, 30)]
            for n, p, depth, N in sizes:
                r1, r2 = (1, 3) if m == "nka" and N == 30 else (2, 8)
                out.append((dict(family=fam, K=K, n=n, p=p, max_depth=depth, n_particles=N, algorithm=f"wg_{m}"),
                            r1, r2))
    laws = ("mgd", "ngd", "gd", "mgd_natural", "ngd_mean")
    for fam in ("poisson", "bernoulli", "normal", "gamma", "categorical", "mvn"):
        for law in (laws if fam in ("normal", "poisson") else ("mgd", "ngd")):
            out.append((dict(family=fam, K=6, n=5000, p=5, max_depth=6, algorithm=law), 5, 45))
            if not quick and law == "mgd":
                out.append((dict(family=fam, K=6, dataset="wide", n=5000, p=60, max_depth=6, algorithm=law), 5, 25))
    for fam in ("normal", "mvn"):
        out.append((dict(family=fam, n=5000, p=5, max_depth=6, algorithm="ngboost"), 5, 45))
    for algo in ("sgp_elbo", "sgp_dlm"):
        for fam in ("normal", "bernoulli", "poisson"):
            out.append((dict(family=fam, n=5000, p=5, algorithm=algo), 1, 1))
    return out


def measure(fields: dict, rounds: int, runs: int) -> dict:
    """Least CPU (and its peak memory) of `runs` child processes fitting `fields` with `rounds` rounds."""
    best: dict | None = None
    for _ in range(runs):
        env = dict(os.environ, OPENBLAS_NUM_THREADS=os.environ.get("OPENBLAS_NUM_THREADS", "1"))
        cp = subprocess.run([sys.executable, "-c", CHILD.format(root=str(ROOT)), json.dumps(fields), str(rounds)],
                            capture_output=True, text=True, env=env, check=False)
        if cp.returncode != 0:
            raise RuntimeError(f"{fields} failed: {cp.stderr[-2000:]}")
        r = json.loads(cp.stdout.strip().splitlines()[-1])
        if best is None or r["cpu"] < best["cpu"]:
            best = r
    assert best is not None
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="only the heaviest size per case")
    ap.add_argument("--only", default="", help="only algorithms whose key contains this text")
    ap.add_argument("--rounds", type=int, default=100, help="rounds of the fit whose prediction is compared")
    ap.add_argument("--runs", type=int, default=1, help="child processes per measurement (the least CPU is kept)")
    ap.add_argument("--json", default="", help="write the measurements to this file")
    a = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from distviz.ui import fits

    load = os.getloadavg()[0]
    print(f"load average at start: {load:.2f} on {os.cpu_count()} cores"
          + ("  (BUSY machine: figures are not quiet-machine results)" if load > 0.5 else ""))
    rows = []
    print(f"{'case':58s} {'setup':>7s} {'/round':>8s} {'pred/round':>10s} {'fit@R':>8s} {'pred@R':>8s} {'ratio':>6s} "
          f"{'MiB':>6s} {'predMiB':>7s}")
    for fields, r1, r2 in cases(a.quick):
        if a.only and a.only not in fields["algorithm"]:
            continue
        m1 = measure(fields, r1, a.runs)
        m2 = m1 if r2 == r1 else measure(fields, r2, a.runs)
        per = 0.0 if r2 == r1 else max(m2["cpu"] - m1["cpu"], 0.0) / (r2 - r1)
        setup = max(m1["cpu"] - r1 * per, 0.0)
        cfg = fits.replace(fits.FitConfig(**{k: v for k, v in fields.items() if k != "dataset"}), n_estimators=a.rounds)
        n, p = int(fields["n"]), int(fields["p"])
        gp = fields["algorithm"].startswith("sgp")
        meas = m1["cpu"] if gp else setup + a.rounds * per
        pred = fits.predict_fit_seconds(cfg, n, p)
        pred1 = fits.predict_fit_seconds(fits.replace(cfg, n_estimators=1), n, p)
        pred2 = fits.predict_fit_seconds(fits.replace(cfg, n_estimators=2), n, p)
        peak = max(m1["peak_mib"], m2["peak_mib"])
        pmb = fits.estimate_fit_mb(cfg, n, p)
        name = " ".join(f"{k}={v}" for k, v in fields.items())
        print(f"{name:58s} {setup:7.2f} {per:8.4f} {pred2 - pred1:10.4f} {meas:8.2f} {pred:8.2f} {pred / meas:6.2f} "
              f"{peak:6.0f} {pmb:7.0f}", flush=True)
        rows.append(dict(fields=fields, setup=setup, per_round=per, measured=meas, predicted=pred, peak_mib=peak,
                         predicted_mib=pmb, r1=r1, r2=r2))
    if a.json:
        Path(a.json).write_text(json.dumps(dict(load=load, rows=rows), indent=1))
    bad = [r for r in rows if not (1 / 1.5 <= r["predicted"] / max(r["measured"], 1e-9) <= 1.5)]
    print(f"{len(rows) - len(bad)} of {len(rows)} predictions within 1.5x of the measured CPU at {a.rounds} rounds")
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
