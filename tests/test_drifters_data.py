"""Drifter loaders (real subset, GDP ragged arrays, bad files) and the seeded synthetic generator."""

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from distviz.data import drifters as dr
from distviz.data.drifter_sim import SimConfig, mean_and_cov, simulate_drifters
from distviz.data.paths import shared_data_path
from distviz.errors import ConfigError, DataError

REAL = shared_data_path("drifters", "gdp_north_atlantic_subset.csv")
needs_real = pytest.mark.skipif(REAL is None, reason="../shared/data/drifters subset is not present on this machine")


@needs_real
def test_real_subset_loads_with_nine_features():
    d = dr.load_drifters(REAL)
    assert len(d) == 1000 and d.n_drifters == 120
    assert d.feature_names == dr.FEATURES and d.absent_features == ()
    assert d.X.shape == (1000, 9) and d.Y.shape == (1000, 2)
    assert np.all((d.feature("doy") >= 0) & (d.feature("doy") < 1))
    assert not d.synthetic and "1000 daily rows" in d.summary()
    # the table's own values come through unchanged
    raw = pd.read_csv(REAL)
    np.testing.assert_allclose(d.Y[:, 0], raw["u"].to_numpy())
    np.testing.assert_allclose(d.feature("u_av"), raw["u_av"].to_numpy())


@needs_real
def test_real_subset_roundtrips_through_hdf5_and_netcdf(tmp_path):
    raw = pd.read_csv(REAL)
    h5 = tmp_path / "drifters.h5"
    raw.to_hdf(h5, key="data")
    a = dr.load_drifters(h5)
    nc = tmp_path / "drifters.nc"
    raw.to_xarray().to_netcdf(nc)
    b = dr.load_drifters(nc)
    c = dr.load_drifters(raw)
    for other in (a, b, c):
        np.testing.assert_allclose(other.X, dr.load_drifters(REAL).X)
    box = dr.load_drifters(REAL, bbox=dr.NORTH_ATLANTIC_BBOX)
    assert 0 < len(box) < 1000 and box.lon.min() >= -83 and box.lon.max() <= -40


@needs_real
def test_real_subset_nan_rows_are_dropped_and_counted(tmp_path):
    raw = pd.read_csv(REAL)
    raw.loc[[3, 10, 11], "Wx"] = np.nan
    raw.loc[20, "v"] = np.nan
    d = dr.load_drifters(raw)
    assert len(d) == 996 and d.n_dropped_nan == 4 and "4 rows dropped for NaN" in d.summary()


def _gdp(n_traj=3, hours=6, days=4, drogue_off_after=None, extra=None):
    """A small GDP-like ragged-array dataset: n_traj drifters observed every `hours` for `days` days."""
    rng = np.random.default_rng(0)
    per = int(days * 24 / hours)
    rowsize = np.full(n_traj, per)
    n = int(rowsize.sum())
    t0 = np.datetime64("2005-09-23T00:00:00")
    time = np.concatenate([t0 + np.arange(per) * np.timedelta64(hours, "h") for _ in range(n_traj)])
    drogue = np.ones(n, dtype=np.int8)
    if drogue_off_after is not None:
        drogue[drogue_off_after:per] = 0  # first drifter loses its drogue
    data = dict(ve=("obs", rng.normal(0, 0.3, n)), vn=("obs", rng.normal(0, 0.3, n)),
                lon=("obs", rng.uniform(280, 300, n)), lat=("obs", rng.uniform(25, 40, n)),
                time=("obs", time), drogue_status=("obs", drogue),
                rowsize=("traj", rowsize), id=("traj", np.arange(n_traj) + 54386))
    data.update(extra or {})
    return xr.Dataset(data)


def test_gdp_ragged_array_keeps_drogued_daily_rows(tmp_path):
    ds = _gdp(n_traj=3, hours=6, days=4, drogue_off_after=8)
    p = tmp_path / "gdp.nc"
    ds.to_netcdf(p)
    d = dr.load_drifters(p)
    # drifter 1 drogued for its first 8 six-hour rows = days 0,1; drifters 2,3: days 0..3
    assert len(d) == 2 + 4 + 4
    assert d.feature_names == ("lon", "lat", "doy")
    assert set(d.absent_features) == {"Tx", "Ty", "Wx", "Wy", "u_av", "v_av"}
    assert "absent features: Tx, Ty, Wx, Wy, u_av, v_av" in d.summary()
    assert np.all(np.mod(d.t, 1.0) == 0)  # kept rows are at 00:00
    assert d.lon.max() < 0  # 0..360 longitudes are wrapped to -180..180
    ids, counts = np.unique(d.id, return_counts=True)
    assert dict(zip(ids.tolist(), counts.tolist())) == {54386: 2, 54387: 4, 54388: 4}


def test_gdp_uses_features_it_holds_and_drops_fill_values():
    ds = _gdp(n_traj=2, hours=24, days=5)
    n = ds.sizes["obs"]
    ds["u_av"] = ("obs", np.linspace(-0.1, 0.1, n))
    ds["ve"].values[1] = -1e34  # GDP fill value
    d = dr.gdp_from_dataset(ds)
    assert d.feature_names == ("u_av", "lon", "lat", "doy") and d.n_dropped_nan == 1 and len(d) == n - 1


@pytest.mark.parametrize("case", ["missing_column", "all_nan", "wrong_type", "empty", "cm_per_s"])
def test_bad_tables_give_data_errors(case):
    df = pd.DataFrame({c: np.arange(5, dtype=float) * 0.01 for c in dr.TABLE_COLUMNS})
    df["t"] = 8553.0
    if case == "missing_column":
        df = df.drop(columns=["Wy", "v_av"])
        with pytest.raises(DataError, match="lacks column\\(s\\) Wy, v_av"):
            dr.load_drifters(df)
        return
    if case == "all_nan":
        df["u"] = np.nan
        with pytest.raises(DataError, match="all 5 rows have NaN"):
            dr.load_drifters(df)
        return
    if case == "wrong_type":
        df["lat"] = df["lat"].astype(object)
        df.loc[2, "lat"] = "north"
        with pytest.raises(DataError, match="'lat'.*numeric.*'north'"):
            dr.load_drifters(df)
        return
    if case == "empty":
        with pytest.raises(DataError, match="no rows"):
            dr.load_drifters(df.iloc[:0])
        return
    df["u"] = df["u"] * 10000.0  # cm/s by mistake
    with pytest.raises(DataError, match="m/s"):
        dr.load_drifters(df)


def test_bad_files_give_data_errors(tmp_path):
    with pytest.raises(DataError, match="does not exist"):
        dr.load_drifters(tmp_path / "nope.csv")
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(DataError, match="empty.csv is empty"):
        dr.load_drifters(empty)
    header_only = tmp_path / "header.csv"
    header_only.write_text(",".join(dr.TABLE_COLUMNS) + "\n")
    with pytest.raises(DataError, match="no rows"):
        dr.load_drifters(header_only)
    junk = tmp_path / "junk.nc"
    junk.write_bytes(b"not a netcdf file at all")
    with pytest.raises(DataError, match="NetCDF") as exc:
        dr.load_drifters(junk)
    assert "Error" not in str(exc.value) and "(" not in str(exc.value), "no exception class in the sentence"
    with pytest.raises(DataError, match="give 'sample'"):
        dr.load_drifters(42)


def test_bad_gdp_files_give_data_errors():
    with pytest.raises(DataError, match="lacks variable\\(s\\) drogue_status"):
        dr.gdp_from_dataset(_gdp().drop_vars("drogue_status"))
    bad = _gdp()
    bad["rowsize"] = ("traj", np.array([1, 2, 3]))
    with pytest.raises(DataError, match="rowsize sums to 6"):
        dr.gdp_from_dataset(bad)
    off = _gdp()
    off["drogue_status"] = ("obs", np.zeros(off.sizes["obs"], dtype=np.int8))
    with pytest.raises(DataError, match="no drogued observations"):
        dr.gdp_from_dataset(off)
    strs = _gdp()
    strs["ve"] = ("obs", np.array(["x"] * strs.sizes["obs"]))
    with pytest.raises(DataError, match="'ve'.*numeric"):
        dr.gdp_from_dataset(strs)
    with pytest.raises(DataError, match="lacks variable"):
        dr.load_drifters(_gdp().drop_vars(["rowsize", "vn"]))


def test_drifter_messages_name_the_table_once_and_gdp_rowsize_is_consistent():
    df = pd.DataFrame({c: np.arange(5, dtype=float) * 0.01 for c in dr.TABLE_COLUMNS}).drop(columns=["Wy"])
    with pytest.raises(DataError) as exc:
        dr.load_drifters(df)
    assert "table table" not in str(exc.value) and str(exc.value).startswith("The drifter table lacks")
    neg = _gdp()
    n = neg.sizes["obs"]
    neg["rowsize"] = ("traj", np.array([n + 2, -1, -1]))   # sums to n, but two counts are negative
    with pytest.raises(DataError, match="negative") as exc:
        dr.gdp_from_dataset(neg)
    assert f"sums to {n} but there are {n}" not in str(exc.value)
    frac = _gdp()
    frac["rowsize"] = ("traj", frac["rowsize"].values.astype(float) + np.array([0.5, -0.5, 0.0]))
    with pytest.raises(DataError, match="whole numbers"):
        dr.gdp_from_dataset(frac)


def test_split_by_id_keeps_drifters_whole():
    ids = np.repeat(np.arange(200), 5)
    tr, va, te = dr.split_by_id(ids, random_state=3)
    assert np.all(tr ^ va ^ te) and not np.any(tr & te)
    assert set(ids[te]).isdisjoint(ids[tr]) and set(ids[va]).isdisjoint(ids[tr])
    assert np.unique(ids[te]).size == 20 and np.unique(ids[va]).size == 18
    with pytest.raises(DataError):
        dr.split_by_id(np.array([1, 1, 2]))


def test_generator_is_deterministic_and_synthetic():
    a = simulate_drifters(n_drifters=12, seed=5, mean_life_days=20, max_life_days=40)
    b = simulate_drifters(SimConfig(n_drifters=12, seed=5, mean_life_days=20, max_life_days=40))
    c = simulate_drifters(n_drifters=12, seed=6, mean_life_days=20, max_life_days=40)
    xr.testing.assert_identical(a, b)
    assert a.sizes["obs"] != c.sizes["obs"] or not np.array_equal(a["u"].values, c["u"].values)
    assert a.attrs["synthetic"] == "yes" and "SYNTHETIC" in a.attrs["title"]
    d = dr.load_drifters(a)
    assert d.synthetic and d.feature_names == dr.FEATURES and d.truth is not None
    box = (d.lon >= -83) & (d.lon <= -40) & (d.lat >= 15) & (d.lat <= 55)
    assert box.all()
    with pytest.raises(ConfigError, match="Unknown generator setting"):
        simulate_drifters(n_drifers=3)


def test_generator_noise_is_correlated_along_the_jet_only():
    lon = np.array([-76.5, -60.0])  # on the jet north-east of Cape Hatteras; Sargasso Sea interior
    lat = np.array([34.3, 28.0])
    f = mean_and_cov(lon, lat, np.array([16500.0, 16500.0]))
    rho = f["true_cov_uv"] / np.sqrt(f["true_cov_uu"] * f["true_cov_vv"])
    assert np.hypot(f["u_av"][0], f["v_av"][0]) > 1.0 and rho[0] > 0.5
    assert np.hypot(f["u_av"][1], f["v_av"][1]) < 0.3 and abs(rho[1]) < 0.2


def test_shipped_sample_is_synthetic_small_and_reproducible():
    p = dr.sample_path()
    assert p.exists() and p.stat().st_size <= 5e6
    d = dr.load_drifters("sample")
    assert d.synthetic and 20000 <= len(d) <= 40000 and 200 <= d.n_drifters <= 600
    with xr.open_dataset(p) as ds:
        assert ds.attrs["synthetic"] == "yes" and "zenodo" in ds.attrs["real_data"].lower()
        assert int(ds.attrs["seed"]) == SimConfig.seed and int(ds.attrs["n_drifters"]) == SimConfig.n_drifters
    # the file's features and true law are what the generator's code gives at those positions and times
    rows = np.random.default_rng(0).choice(len(d), 300, replace=False)
    f = mean_and_cov(d.lon[rows], d.lat[rows], d.t[rows])
    for j, name in enumerate(dr.FEATURES[:6]):
        np.testing.assert_allclose(d.X[rows, j], f[name], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(d.truth["true_cov_uv"][rows], f["true_cov_uv"], rtol=1e-4, atol=1e-6)
    z = (d.Y[:, 0] - d.truth["true_u_mean"]) / np.sqrt(d.truth["true_cov_uu"])
    assert abs(z.mean()) < 0.03 and abs(z.std() - 1) < 0.03
