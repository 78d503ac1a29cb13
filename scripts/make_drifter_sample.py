"""Write the shipped SYNTHETIC drifter sample `sample_data/drifters_north_atlantic_synthetic.nc`.

Usage (from the repository root):

    python scripts/make_drifter_sample.py            # default seed and size: the shipped file
    python scripts/make_drifter_sample.py --out my.nc --n-drifters 100 --seed 1

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


def main(argv=None) -> int:
    """Parse arguments, simulate and write the NetCDF sample (zlib-compressed float32)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, default=sample_path(), help="output NetCDF path")
    p.add_argument("--n-drifters", type=int, default=SimConfig.n_drifters)
    p.add_argument("--seed", type=int, default=SimConfig.seed)
    a = p.parse_args(argv)
    ds = simulate_drifters(n_drifters=a.n_drifters, seed=a.seed)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    enc = {k: {"zlib": True, "complevel": 5} for k in ds.data_vars}
    ds.to_netcdf(a.out, encoding=enc)
    print(f"wrote {a.out}: {ds.sizes['obs']} rows, {int(ds['id'].to_series().nunique())} drifters, "
          f"{a.out.stat().st_size / 1e6:.2f} MB (SYNTHETIC)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
