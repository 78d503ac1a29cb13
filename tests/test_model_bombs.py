"""Model files that declare more than they hold: refused from their header, before any variable is read.

A small file can declare a 1 GiB variable (zlib-compressed zeros, or chunks never written, which read as
the fill value); reading it would take 1 GiB of memory.  ``distviz.persistence.ModelFile`` checks every
declared size (and chunk size) against the limits the class's parameters imply and against MAX_BYTES
before reading, and refuses compressed variables (HDF5's deflate filter grows its output buffer until
the stream ends, so a 1 MiB chunk can inflate to 1 GiB); the peak memory of the refused loads is
measured in a fresh process.
"""

import json
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from distviz import modelfile, persistence
from distviz.errors import ConfigError, DataError
from distviz.estimators import DistributionalBoosting

GIB_FLOATS = 2**27  # 1 GiB of float64


@pytest.fixture(scope="module")
def poisson_file(tmp_path_factory):
    """A saved 3-round Poisson DistributionalBoosting."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    p = tmp_path_factory.mktemp("bombs") / "poisson.nc"
    DistributionalBoosting("poisson", n_estimators=3, trace_rows=20).fit(X, rng.poisson(np.exp(X[:, 0]))).save(p)
    return p


def _bomb(src, dst, kind):
    """Copy src to dst and plant one oversized declaration with netCDF4 directly (cheap to write)."""
    import netCDF4

    shutil.copy(src, dst)
    with netCDF4.Dataset(dst, "a") as nc:
        if kind in ("init", "trace"):  # 1 GiB of zlib zeros: one chunk written, the others read as the fill value 0
            name = "model_init" if kind == "init" else "eta_bomb"
            if kind == "init":
                nc.renameVariable("model_init", "old_init")
            nc.createDimension("bomb_0", GIB_FLOATS)
            v = nc.createVariable(name, "f8", ("bomb_0",), zlib=True, complevel=1, chunksizes=(2**20,),
                                  fill_value=0.0)
            v[: 2**20] = np.zeros(2**20)
        elif kind == "chunk":  # 4 values declared, each read inflates a 512 MiB chunk
            nc.createDimension("grow", None)
            nc.createVariable("grow_small", "f8", ("grow",), chunksizes=(1,))[:4] = np.arange(4.0)
            nc.createVariable("model_chunky", "f8", ("grow",), zlib=True, chunksizes=(2**26,))
        elif kind == "nodes":  # a forest of 3 depth-3 trees holds at most 45 nodes, not a million
            nc.renameVariable("model_forest_feature", "old_feature")
            nc.createDimension("many_nodes", 10**6)
            nc.createVariable("model_forest_feature", "i8", ("many_nodes",), zlib=True, fill_value=0)
        elif kind == "zlib_small":  # compressed at all: a deflate stream may inflate past its declared chunk
            nc.createDimension("mi", 2**17)
            nc.createVariable("eta_x", "f8", ("mi",), zlib=True, chunksizes=(2**17,))[:] = np.zeros(2**17)
        elif kind == "init_length":  # the family's start value has 1 entry
            nc.renameVariable("model_init", "old_init")
            nc.createDimension("two", 2)
            nc.createVariable("model_init", "f8", ("two",))[:] = [0.0, 1.0]
        elif kind == "deep_json":
            nc.setncattr("distviz_params", "[" * 100_000 + "]" * 100_000)
        elif kind == "deep_model_json":  # parsed by the NGBoost loaders themselves: checked here first
            nc.setncattr("model_fitted", '{"n_iter": ' + "[" * 5_000 + "]" * 5_000 + "}")
        elif kind == "n_features":
            fitted = json.loads(nc.getncattr("distviz_fitted"))
            nc.setncattr("distviz_fitted", json.dumps({**fitted, "n_features": 10**9}))
            nc.setncattr("model_forest_n_features", np.int64(10**9))
        elif kind == "schema_text":
            nc.setncattr("distviz_schema", "2")
    return dst


@pytest.mark.parametrize("kind, problem", [
    ("init", "model_init declares shape \\(134217728,\\), more than its parameters allow"),
    ("trace", "eta_bomb is too large \\(it declares 1024 MiB"),
    ("chunk", "model_chunky is too large \\(its chunks declare 512 MiB"),
    ("nodes", "model_forest_feature declares shape \\(1000000,\\), more than its parameters allow"),
    ("zlib_small", "eta_x is compressed \\(complevel/zlib\\), and model files are read uncompressed only"),
    ("init_length", "model_init has shape \\(2,\\), not \\(1\\)"),
    ("deep_json", "distviz_params holds 200000 characters"),
    ("deep_model_json", "model_fitted nests deeper than 32 levels"),
    ("n_features", "feature count"),
    ("schema_text", "schema version is '2'"),
])
def test_oversized_or_malformed_declarations_are_refused(poisson_file, tmp_path, kind, problem):
    p = _bomb(poisson_file, tmp_path / f"{kind}.nc", kind)
    for loader in (DistributionalBoosting.load, persistence.load):
        with pytest.raises(DataError, match=f"{kind}.nc is not a usable DistributionalBoosting model file: .*{problem}"):
            loader(p)


def test_bomb_files_are_small_and_refused_within_300_mib(poisson_file, tmp_path):
    paths = [_bomb(poisson_file, tmp_path / f"{k}.nc", k) for k in ("init", "trace", "chunk")]
    sizes = [p.stat().st_size for p in paths]
    assert max(sizes) < 8 * 2**20, sizes
    script = textwrap.dedent('''
        import json, resource, sys
        import netCDF4, xarray  # imported before the baseline: only the load is measured
        from distviz import persistence
        from distviz.estimators import DistributionalBoosting
        from distviz.errors import DataError
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        out = []
        for p in sys.argv[1:]:
            for loader in (DistributionalBoosting.load, persistence.load):
                try:
                    loader(p)
                    out.append("loaded")
                except DataError as e:
                    out.append("DataError" if "\\n" not in str(e) else "long")
        growth = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024  # KiB on Linux
        print(json.dumps({"results": out, "growth_mib": growth}))
    ''')
    run = subprocess.run([sys.executable, "-c", script, *map(str, paths)], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    rep = json.loads(run.stdout.strip().splitlines()[-1])
    assert rep["results"] == ["DataError"] * 6, rep
    assert rep["growth_mib"] < 300, rep


def test_file_and_writer_caps(poisson_file, tmp_path, monkeypatch):
    m = DistributionalBoosting.load(poisson_file)
    monkeypatch.setattr(modelfile, "MAX_FILE_BYTES", 1000)
    with pytest.raises(DataError, match="poisson.nc is too large for a distviz model file"):
        DistributionalBoosting.load(poisson_file)
    monkeypatch.setattr(modelfile, "MAX_BYTES", 1000)
    with pytest.raises(ConfigError, match="more than the 0 MiB a model file may hold; fit with a smaller trace"):
        m.save(tmp_path / "big.nc")
    assert not (tmp_path / "big.nc").exists()
