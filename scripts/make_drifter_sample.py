"""Write the shipped SYNTHETIC drifter sample `sample_data/drifters_north_atlantic_synthetic.nc`.

Usage (from the repository root):

    python scripts/make_drifter_sample.py            # default seed and size: the shipped files (about 15 s)
    python scripts/make_drifter_sample.py --out my.nc --n-drifters 100 --seed 1 --no-comparison

By default it also writes `sample_data/drifters_comparison_default.nc`: the NGB vs IndepNGB comparison
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
from distviz.experiments.drifters import precompute_comparison, precomputed_path


def main(argv=None) -> int:
    """Parse arguments, simulate and write the NetCDF sample (zlib-compressed float32)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, default=sample_path(), help="output NetCDF path")
    p.add_argument("--n-drifters", type=int, default=SimConfig.n_drifters)
    p.add_argument("--seed", type=int, default=SimConfig.seed)
    p.add_argument("--comparison-out", type=Path, default=precomputed_path(),
                   help="output NetCDF of the precomputed default comparison (only with the default --out)")
    p.add_argument("--no-comparison", action="store_true", help="skip the precomputed comparison")
    a = p.parse_args(argv)
    ds = simulate_drifters(n_drifters=a.n_drifters, seed=a.seed)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    enc = {k: {"zlib": True, "complevel": 5} for k in ds.data_vars}
    ds.to_netcdf(a.out, encoding=enc)
    print(f"wrote {a.out}: {ds.sizes['obs']} rows, {int(ds['id'].to_series().nunique())} drifters, "
          f"{a.out.stat().st_size / 1e6:.2f} MB (SYNTHETIC)")
    if not a.no_comparison and a.out.resolve() == sample_path().resolve():
        res = precompute_comparison(a.comparison_out)
        print(f"wrote {a.comparison_out}: NGB vs IndepNGB on {res.info['n_train']} training rows, "
              f"{res.info['n_test']} test rows, {a.comparison_out.stat().st_size / 1e6:.2f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
