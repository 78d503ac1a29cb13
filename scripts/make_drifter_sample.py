"""Write the shipped SYNTHETIC drifter sample `distviz/data/sample/drifters_north_atlantic_synthetic.nc`.

Usage (from the repository root):

    python scripts/make_drifter_sample.py            # default seed and size: the shipped files (about 15 s)
    python scripts/make_drifter_sample.py --out my.nc --n-drifters 100 --seed 1 --no-comparison
    python scripts/make_drifter_sample.py --comparison-only   # only the precomputed comparison (about 30 s)

By default it also writes `distviz/data/sample/drifters_comparison_default.nc`: the NGB vs IndepNGB comparison
(`distviz.experiments.drifters.precompute_comparison`, settings `APP_DEFAULTS`, seeded) that the app's
Drifters page shows on its first load without fitting. That file records the sample's SHA-1 and the
settings; the app ignores it (and refits) when either no longer matches.

The data come from `distviz.data.drifter_sim.simulate_drifters` (an analytic Gulf-Stream-like flow,
analytic winds and spatially varying along-stream-correlated noise; see that module's docstring).
The same seed gives the same rows, so the file can always be rebuilt; `load_drifters("sample")`
rebuilds it in memory when the file is missing. The file is marked synthetic in its attributes.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from distviz.data.drifter_sim import SimConfig, simulate_drifters
from distviz.data.drifters import sample_path
from distviz.experiments.drifters import APP_DEFAULTS, precompute_comparison, precomputed_path


def main(argv=None) -> int:
    """Parse arguments, simulate and write the NetCDF sample (zlib-compressed float32)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, default=sample_path(), help="output NetCDF path")
    p.add_argument("--n-drifters", type=int, default=SimConfig.n_drifters)
    p.add_argument("--seed", type=int, default=SimConfig.seed)
    p.add_argument("--comparison-out", type=Path, default=precomputed_path(),
                   help="output NetCDF of the precomputed default comparison (only with the default --out)")
    p.add_argument("--no-comparison", action="store_true", help="skip the precomputed comparison")
    p.add_argument("--comparison-only", action="store_true",
                   help="keep the shipped sample and only rewrite the precomputed comparison")
    a = p.parse_args(argv)
    if a.comparison_only:
        return _write_comparison(a.comparison_out)
    ds = simulate_drifters(n_drifters=a.n_drifters, seed=a.seed)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    enc = {k: {"zlib": True, "complevel": 5} for k in ds.data_vars}
    ds.to_netcdf(a.out, encoding=enc)
    print(f"wrote {a.out}: {ds.sizes['obs']} rows, {int(ds['id'].to_series().nunique())} drifters, "
          f"{a.out.stat().st_size / 1e6:.2f} MB (SYNTHETIC)")
    if not a.no_comparison and a.out.resolve() == sample_path().resolve():
        return _write_comparison(a.comparison_out)
    return 0


def _write_comparison(out: Path) -> int:
    """Precompute the app's default comparison (APP_DEFAULTS) on the shipped sample and write it to `out`.

    A small comparison runs first so that the compiled kernels' one-off compile time is not reported as fit
    time; nothing is written when a method failed.
    """
    precompute_comparison(None, rounds=2, max_train=1000)   # compile the kernels (not timed, not saved)
    res = precompute_comparison(None)
    missing = [m for m in APP_DEFAULTS["methods"] if "NLL" not in res.table.get(m, {})]
    if missing:
        raise SystemExit(f"not written: {', '.join(missing)} failed to fit ({res.table.get(missing[0])})")
    res.save(out)
    nll = {m: round(res.table[m]["NLL"], 4) for m in APP_DEFAULTS["methods"]}
    print(f"wrote {out}: NGB vs IndepNGB on {res.info['n_train']} training rows, {res.info['n_test']} test rows, "
          f"test NLL {nll}, {out.stat().st_size / 1e6:.2f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
