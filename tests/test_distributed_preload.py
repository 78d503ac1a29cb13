"""The dask worker preload (``distviz.distributed.preload``): a worker started with it loads the kernels of a
Poisson fit before the fit asks, so the fit's own calls load none."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# A fresh interpreter (no kernel loaded yet) records every numba dispatch that loads or compiles an overload, with
# the thread that made it; a one-worker in-process cluster started with the preload then fits Poisson MGD twice
# without and with missing values.
_SCRIPT = r"""
import json, sys, threading
import numba.core.dispatcher as D
loads = []
orig = D.Dispatcher._compile_for_args
def record(self, *a, **k):
    loads.append([threading.current_thread().name, self.py_func.__qualname__])
    return orig(self, *a, **k)
D.Dispatcher._compile_for_args = record
import numpy as np, dask.array as da
from distributed import Client, LocalCluster
from distviz.dask import DaskDistributionalBoosting
from distviz.distributed import preload
out = {}
with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None,
                  preload=["distviz.distributed.preload"]) as lc, Client(lc):
    out["thread_started"] = bool(preload._WARMING)
    rng = np.random.default_rng(1)
    for name, nan in (("poisson", False), ("poisson_nan", True)):
        X = rng.normal(size=(2000, 3))
        if nan:
            X[::5, 1] = np.nan
        y = rng.poisson(np.exp(0.3 * X[:, 0])).astype(float)
        before = len(loads)
        DaskDistributionalBoosting("poisson", n_estimators=3, max_depth=3).fit(da.from_array(X, chunks=(500, 3)),
                                                                               da.from_array(y, chunks=500))
        # (the client's split scan may load in its own thread, distviz-load-kernels: in-process, that is this one)
        out[name] = [n for t, n in loads[before:] if t not in ("distviz-warm-kernels", "distviz-load-kernels")]
out["warm"] = sorted({n for t, n in loads if t == "distviz-warm-kernels"})
print("RESULT " + json.dumps(out))
"""


def test_a_worker_started_with_the_preload_has_loaded_a_poisson_fits_kernels_before_the_fit():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, env=env, timeout=600,
                          cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.split("RESULT ", 1)[1])
    assert out["thread_started"]
    # the warm-up ran the shard steps (binning, histograms, partition) and the fused Poisson update
    assert {"_bin_codes_rows", "hist_root_targets", "partition", "_poisson_mgd_round"} <= set(out["warm"]), out["warm"]
    assert out["poisson"] == [] and out["poisson_nan"] == [], out


def test_the_preload_imports_dask_array_without_xarray_and_xarray_still_imports_afterwards():
    code = ("import sys, distributed\n"
            "from distviz.distributed.preload import _import_dask_array\n"
            "_import_dask_array()\n"
            "assert 'dask.array' in sys.modules and 'xarray' not in sys.modules and 'pandas' not in sys.modules\n"
            "import xarray\n"
            "print('OK', xarray.DataArray([1.0]).values.sum())\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=300, cwd=ROOT)
    assert proc.returncode == 0 and "OK 1.0" in proc.stdout, proc.stderr[-3000:]
