"""Out-of-core GDP archive pipeline (distviz.data.gdp_archive) against the in-memory loaders."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import dask
import numpy as np
import pytest
import xarray as xr

from distviz.cli import main
from distviz.data.drifters import load_drifters, load_gdp, load_table
from distviz.data.gdp_archive import (
    open_gdp_archive,
    read_gdp_table,
    trajectory_chunks,
    write_gdp_table,
)
from distviz.errors import DataError

SHARED_CSV = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "drifters" / "gdp_north_atlantic_subset.csv"
N_OBS = 1_000_000


def _ragged_archive(n_obs: int = N_OBS, seed: int = 0) -> xr.Dataset:
    """A drifter-like hourly GDP ragged array of at least `n_obs` observations (random-walk tracks, drogue loss)."""
    rng = np.random.default_rng(seed)
    rowsize = rng.integers(200, 4000, size=n_obs // 1500)
    rowsize[-1] += max(0, n_obs - int(rowsize.sum()))
    rowsize[3] = 0  # a trajectory without observations
    n, n_traj = int(rowsize.sum()), rowsize.size
    start = np.repeat(np.cumsum(rowsize) - rowsize, rowsize)
    k = np.arange(n) - start  # observation number inside its trajectory
    traj = np.repeat(np.arange(n_traj), rowsize)
    t0 = rng.uniform(8000, 18000, n_traj) * 86400 + rng.integers(0, 3600, n_traj)  # seconds since 1970
    time = (t0[traj] + 3600.0 * k).astype("datetime64[s]")
    ve = (0.3 * np.sin(k / 50.0 + traj) + 0.05 * rng.standard_normal(n)).astype(np.float32)
    vn = (0.2 * np.cos(k / 70.0 + traj) + 0.05 * rng.standard_normal(n)).astype(np.float32)
    ve[rng.random(n) < 0.002] = np.nan
    vn[rng.random(n) < 0.001] = -1e34  # GDP fill value
    step = 0.03 * np.nan_to_num(ve.astype(np.float64))
    c = np.cumsum(step)
    lon = rng.uniform(-90, 10, n_traj)[traj] + c - (c[start] - step[start])  # a random walk per trajectory
    lon = np.mod(lon + 180.0, 360.0) - 180.0 + 360.0 * (rng.random(n) < 0.001)  # a few in 0..360 convention
    lat = np.clip(rng.uniform(5, 60, n_traj)[traj] + 0.002 * k * np.sign(np.sin(traj)), -80, 80)
    drogue = (k < rng.integers(100, 5000, n_traj)[traj]).astype(np.int8)
    wind = rng.normal(0, 5, (2, n))
    return xr.Dataset(
        {"ve": ("obs", ve), "vn": ("obs", vn), "lon": ("obs", lon), "lat": ("obs", lat), "time": ("obs", time),
         "drogue_status": ("obs", drogue), "Wx": ("obs", wind[0]), "Wy": ("obs", wind[1]),
         "rowsize": ("traj", rowsize.astype(np.int64)), "id": ("traj", 100_000 + rng.permutation(n_traj) * 7)})


@pytest.fixture(scope="session")
def big_archive(tmp_path_factory) -> Path:
    """A >= 1e6-observation ragged NetCDF file stored in 64k-observation chunks."""
    ds = _ragged_archive()
    assert ds.sizes["obs"] >= N_OBS
    path = tmp_path_factory.mktemp("gdp") / "gdp_big.nc"
    enc = {v: {"chunksizes": (65536,)} for v in ds.data_vars if ds[v].dims == ("obs",)}
    ds.to_netcdf(path, encoding=enc)
    return path


@pytest.fixture(scope="session")
def big_table(big_archive, tmp_path_factory):
    """The pipeline's Parquet output for the big archive (50k observations per task) and its peak traced memory."""
    out = tmp_path_factory.mktemp("gdp_out") / "table"
    small = _ragged_archive(20_000, seed=6)
    small.to_netcdf(out.parent / "small.nc")
    write_gdp_table(out.parent / "small.nc", out.parent / "warm")  # imports (pyarrow, netCDF4) outside the trace
    tracemalloc.start()
    try:
        with dask.config.set(scheduler="threads", num_workers=2):  # two chunks in flight, whatever the machine
            info = write_gdp_table(big_archive, out, chunk_obs=50_000)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return out, info, peak


def _same(a, b):
    """Assert two DrifterData hold the same rows (features, velocities, ids, times)."""
    assert a.feature_names == b.feature_names
    assert len(a) == len(b)
    np.testing.assert_array_equal(a.id, b.id)
    np.testing.assert_allclose(a.t, b.t, rtol=0, atol=1e-9)
    np.testing.assert_allclose(a.X, b.X, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(a.Y, b.Y, rtol=1e-12, atol=1e-12)


def test_chunks_hold_whole_trajectories(big_archive):
    ds = open_gdp_archive(big_archive, chunks=100_000)
    ranges = json.loads(ds.attrs["traj_chunks"])
    rowsize = ds["rowsize"].values
    assert len(ranges) >= 8
    assert ds["ve"].data.chunks[0] == tuple(int(rowsize[a:b].sum()) for a, b in ranges)
    assert [r[0] for r in ranges[1:]] == [r[1] for r in ranges[:-1]] and ranges[-1][1] == rowsize.size
    assert trajectory_chunks(np.array([5, 50, 5, 5]), 10) == [(0, 1), (1, 2), (2, 4)]


def test_lazy_table_equals_in_memory_loader(big_table, big_archive):
    out, info, _ = big_table
    lazy, mem = read_gdp_table(out), load_gdp(big_archive)
    assert info["chunks"] >= 16 and info["observations"] >= N_OBS and info["rows"] == len(mem)
    assert lazy.feature_names == ("Wx", "Wy", "lon", "lat", "doy")
    _same(lazy, mem)


def test_bbox_and_dates_match_filtered_in_memory_rows(big_archive, tmp_path):
    box, start, end = (-60.0, -20.0, 10.0, 50.0), "1996-01-01", "2010-12-31"
    write_gdp_table(big_archive, tmp_path / "t", bbox=box, start=start, end=end, chunk_obs=300_000)
    mem = load_gdp(big_archive, bbox=box)
    t0, t1 = np.datetime64(start, "D").astype(float), np.datetime64(end, "D").astype(float) + 1
    _same(read_gdp_table(tmp_path / "t"), mem.subset((mem.t >= t0) & (mem.t < t1)))


def test_client_memory_stays_bounded(big_table, big_archive):
    _, info, peak = big_table
    full = info["observations"] * 8 * 8  # the archive's eight observation variables as float64
    print(f"peak traced memory {peak / 2**20:.1f} MiB for an archive of {full / 2**20:.1f} MiB as float64")
    assert peak < 0.3 * full


def test_shared_csv_through_a_ragged_archive(tmp_path):
    if not SHARED_CSV.exists():
        pytest.skip("the shared drifter subset ../shared/data/drifters/gdp_north_atlantic_subset.csv is absent")
    import pandas as pd

    df = pd.read_csv(SHARED_CSV).sort_values(["id", "t"], kind="stable")
    df = df.drop_duplicates(["id", "t"])
    ids, rowsize = np.unique(df["id"].to_numpy(), return_counts=True)
    data = {c: ("obs", df[c].to_numpy()) for c in ("Tx", "Ty", "Wx", "Wy", "u_av", "v_av", "lon", "lat")}
    ds = xr.Dataset({**data, "ve": ("obs", df["u"].to_numpy()), "vn": ("obs", df["v"].to_numpy()),
                     "time": ("obs", (df["t"].to_numpy() * 86400).astype("datetime64[s]")),
                     "drogue_status": ("obs", np.ones(len(df), np.int8)),
                     "rowsize": ("traj", rowsize), "id": ("traj", ids.astype(np.int64))})
    ds.to_netcdf(tmp_path / "subset.nc")
    write_gdp_table(tmp_path / "subset.nc", tmp_path / "t", chunk_obs=100)
    ref = load_table(SHARED_CSV)
    ref = ref.subset(np.lexsort((ref.t, ref.id)))
    ref = ref.subset(np.r_[True, (np.diff(ref.id) != 0) | (np.diff(ref.t) != 0)])
    _same(read_gdp_table(tmp_path / "t"), ref)


def _write(ds, path):
    ds.to_netcdf(path)
    return path


@pytest.mark.parametrize("change, words", [
    (lambda ds: ds.drop_vars("rowsize"), "lacks variable(s) rowsize"),
    (lambda ds: ds.assign(rowsize=ds.rowsize + 1), "rowsize sums to"),
    (lambda ds: ds.assign(rowsize=-ds.rowsize), "non-negative"),
    (lambda ds: ds.assign(id=ds.id * 0), "repeat"),
    (lambda ds: ds.assign(ve=ds.ve.astype(str)), "must be numeric"),
    (lambda ds: ds.assign(ve=ds.ve * 1000), "more than 10 m/s"),
])
def test_bad_archives_get_one_clear_sentence(tmp_path, change, words):
    path = _write(change(_ragged_archive(20_000, seed=1)), tmp_path / "bad.nc")
    with pytest.raises(DataError) as err:
        write_gdp_table(path, tmp_path / "out", chunk_obs=5_000)
    msg = str(err.value)
    assert words in msg and "Traceback" not in msg and "\n" not in msg


def test_zarr_archive_gives_the_netcdf_table(tmp_path):
    ds = _ragged_archive(30_000, seed=4)
    ds.to_zarr(tmp_path / "a.zarr")   # the [dask] extra installs zarr 3, which xarray writes and opens
    write_gdp_table(tmp_path / "a.zarr", tmp_path / "z", chunk_obs=7_000)
    _same(read_gdp_table(tmp_path / "z"), load_gdp(_write(ds, tmp_path / "a.nc")))


def test_pickle_codec_and_foreign_outputs_are_refused(tmp_path):
    store = tmp_path / "a.zarr"
    (store / "ve").mkdir(parents=True)
    (store / ".zgroup").write_text('{"zarr_format": 2}')
    (store / "ve" / ".zarray").write_text(json.dumps({
        "zarr_format": 2, "shape": [4], "chunks": [4], "dtype": "|O", "compressor": None, "fill_value": None,
        "order": "C", "filters": [{"id": "pickle", "protocol": 5}]}))
    with pytest.raises(DataError, match="pickle codec"):
        open_gdp_archive(store)
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("x")
    with pytest.raises(DataError, match="not empty"):
        write_gdp_table(_write(_ragged_archive(20_000, seed=3), tmp_path / "ok.nc"), tmp_path / "busy")
    with pytest.raises(DataError, match="does not exist"):
        open_gdp_archive(tmp_path / "missing.nc")


def test_cli_writes_the_table_and_load_drifters_reads_it(tmp_path, capsys):
    ds = _ragged_archive(30_000, seed=5)
    src = _write(ds, tmp_path / "a.nc")
    assert main(["data", "gdp", "--archive", str(src), "--out", str(tmp_path / "t"), "--bbox=-70,-10,0,70",
                 "--start", "1995-01-01", "--chunk-obs", "8000"]) == 0
    assert "daily rows" in capsys.readouterr().out
    mem = load_gdp(src, bbox=(-70, -10, 0, 70))
    _same(load_drifters(tmp_path / "t"), mem.subset(mem.t >= np.datetime64("1995-01-01", "D").astype(float)))
    assert main(["data", "gdp", "--archive", str(src), "--out", str(tmp_path / "u"), "--bbox", "1,2,3"]) == 2
    assert "bounding box" in capsys.readouterr().err
