"""Ocean-drifter loaders: the processed table of O'Malley et al. (Zenodo 5644972), GDP ragged arrays, the sample.

Every loader returns a :class:`DrifterData`: features ``X`` (n, d), velocities ``Y`` (n, 2) in m/s,
positions, drifter ids, time and the feature names actually present. The nine features of the
paper (Section 5.1) are Tx, Ty (wind stress, Pa), Wx, Wy (wind speed, m/s), u_av, v_av
(geostrophic velocity, m/s), lon, lat (degrees) and the time of year ``doy`` (fraction of 365.25,
"percentage of 365" in the paper), which we derive from ``t`` (days since 1970-01-01).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from distviz.data.paths import regular_file, sample_file
from distviz.errors import DataError

#: Columns of the processed table (Zenodo 5644972 and the shared 1000-row subset).
TABLE_COLUMNS = ("Tx", "Ty", "Wx", "Wy", "u_av", "v_av", "lon", "lat", "t", "u", "v", "id")
#: The nine features of the paper, in the order used for ``X``.
FEATURES = ("Tx", "Ty", "Wx", "Wy", "u_av", "v_av", "lon", "lat", "doy")
#: Variables a GDP ragged-array file must hold.
GDP_VARIABLES = ("ve", "vn", "lon", "lat", "time", "drogue_status", "rowsize", "id")
#: File name of the shipped synthetic sample inside ``distviz/data/sample/``.
SAMPLE_FILE = "drifters_north_atlantic_synthetic.nc"
#: The paper's longitude band for the North Atlantic (Section 5.1).
NORTH_ATLANTIC_BBOX = (-83.0, -40.0, 0.0, 70.0)

_EPOCH = np.datetime64("1970-01-01T00:00:00", "s")


@dataclass
class DrifterData:
    """Drifter rows ready for a fit: features X, velocities Y (m/s), lon, lat, id, t (days since 1970)."""

    X: np.ndarray
    Y: np.ndarray
    lon: np.ndarray
    lat: np.ndarray
    id: np.ndarray
    t: np.ndarray
    feature_names: tuple[str, ...]
    absent_features: tuple[str, ...] = ()
    n_dropped_nan: int = 0
    source: str = ""
    synthetic: bool = False
    truth: dict[str, np.ndarray] | None = None
    attrs: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        """Number of rows."""
        return int(self.Y.shape[0])

    @property
    def n_drifters(self) -> int:
        """Number of distinct drifter ids."""
        return int(np.unique(self.id).size)

    def subset(self, rows) -> "DrifterData":
        """A new DrifterData holding only `rows` (boolean mask or integer index)."""
        rows = np.asarray(rows)
        truth = None if self.truth is None else {k: v[rows] for k, v in self.truth.items()}
        return DrifterData(self.X[rows], self.Y[rows], self.lon[rows], self.lat[rows], self.id[rows],
                           self.t[rows], self.feature_names, self.absent_features, self.n_dropped_nan,
                           self.source, self.synthetic, truth, dict(self.attrs))

    def feature(self, name: str) -> np.ndarray:
        """Column `name` of X."""
        if name not in self.feature_names:
            raise DataError(f"Feature '{name}' is not in this drifter data; it has {', '.join(self.feature_names)}.")
        return self.X[:, self.feature_names.index(name)]

    def summary(self) -> str:
        """One sentence describing the data (rows, drifters, features, dropped rows, synthetic or real)."""
        kind = "SYNTHETIC sample" if self.synthetic else "drifter data"
        s = (f"{kind} from {self.source}: {len(self)} daily rows of {self.n_drifters} drifters, "
             f"{len(self.feature_names)} features ({', '.join(self.feature_names)})")
        return s + summary_tail(self.absent_features, self.n_dropped_nan)

    def to_dataset(self):
        """The rows as an xarray.Dataset over dimension `obs` (features, u, v, lon, lat, id, t)."""
        import xarray as xr

        data = {name: ("obs", self.X[:, j]) for j, name in enumerate(self.feature_names) if name not in ("lon", "lat")}
        data.update(u=("obs", self.Y[:, 0]), v=("obs", self.Y[:, 1]), lon=("obs", self.lon), lat=("obs", self.lat),
                    id=("obs", self.id), t=("obs", self.t))
        if self.truth:
            data.update({k: ("obs", v) for k, v in self.truth.items()})
        attrs = {k: v for k, v in self.attrs.items() if isinstance(v, (str, int, float))}
        attrs.update(source=self.source, synthetic=int(self.synthetic),
                     feature_names=",".join(self.feature_names), absent_features=",".join(self.absent_features))
        return xr.Dataset(data, attrs=attrs)


# ----------------------------------------------------------------------------------------------
# helpers


def summary_tail(absent_features, n_dropped_nan: int) -> str:
    """The end of a drifter data summary sentence: absent features and rows dropped for NaN, then the full stop."""
    s = f"; absent features: {', '.join(absent_features)}" if absent_features else ""
    return s + (f"; {n_dropped_nan} rows dropped for NaN" if n_dropped_nan else "") + "."


def _day_of_year_fraction(t_days: np.ndarray) -> np.ndarray:
    """Time of year in [0, 1) from days since 1970-01-01 (the paper's 'percentage of 365')."""
    return np.mod(t_days, 365.25) / 365.25


def _numeric_column(df, name: str, where: str) -> np.ndarray:
    """Column `name` of `df` as float64, or a DataError naming it when it is not numeric."""
    col = df[name]
    if np.issubdtype(np.asarray(col).dtype, np.datetime64):
        return _time_to_days(np.asarray(col))
    try:
        return np.asarray(col, dtype=np.float64)
    except (TypeError, ValueError):
        bad = next((v for v in col if not _is_number(v)), None)
        raise DataError(f"Column '{name}' in {where} must be numeric but holds {bad!r}; "
                        f"fix or remove those rows.") from None


def _is_number(v) -> bool:
    """Whether `v` converts to float."""
    try:
        float(v)
        return True
    except (TypeError, ValueError):
        return False


def _finish(cols: dict[str, np.ndarray], present: list[str], where: str, *, source: str,
            synthetic: bool = False, truth: dict | None = None, attrs: dict | None = None,
            bbox=None) -> DrifterData:
    """Drop NaN rows, apply the bounding box, check sizes and build DrifterData."""
    n0 = cols["u"].shape[0]
    if n0 == 0:
        raise DataError(f"{where} holds no rows; give a file with at least one drifter observation.")
    ok, n_drop = usable_rows(cols, present, bbox)
    if not ok.any():
        why = f"all {n0} rows have NaN in a feature or velocity" if n_drop == n0 else "no row lies in the bounding box"
        raise DataError(f"{where} has no usable rows ({why}); check the file's missing values and extent.")
    X = np.column_stack([cols[n][ok] for n in present]).astype(np.float64)
    Y = np.column_stack([cols["u"][ok], cols["v"][ok]]).astype(np.float64)
    check_velocities(Y, where)
    tr = None if truth is None else {k: np.asarray(v, dtype=np.float64)[ok] for k, v in truth.items()}
    absent = tuple(f for f in FEATURES if f not in present)
    return DrifterData(X, Y, cols["lon"][ok].astype(np.float64), cols["lat"][ok].astype(np.float64),
                       cols["id"][ok].astype(np.int64), cols["t"][ok].astype(np.float64), tuple(present), absent,
                       n_drop, source, synthetic, tr, dict(attrs or {}))


def usable_rows(cols: dict[str, np.ndarray], present, bbox=None) -> tuple[np.ndarray, int]:
    """Rows with finite features, velocities, position, time and id, inside `bbox`; and the count dropped for NaN."""
    ok = np.ones(cols["u"].shape[0], dtype=bool)
    for name in dict.fromkeys(list(present) + ["u", "v", "lon", "lat", "t", "id"]):
        ok &= np.isfinite(cols[name])
    n_drop = int(ok.size - ok.sum())
    if bbox is not None:
        lo0, lo1, la0, la1 = bbox
        ok &= (cols["lon"] >= lo0) & (cols["lon"] <= lo1) & (cols["lat"] >= la0) & (cols["lat"] <= la1)
    return ok, n_drop


def check_velocities(Y: np.ndarray, where: str) -> None:
    """DataError when velocities reach 10 m/s (a file in cm/s rather than m/s)."""
    if Y.size and np.nanmax(np.abs(Y)) > 10.0:
        raise DataError(f"Velocities in {where} reach {np.nanmax(np.abs(Y)):.3g}, more than 10 m/s; give u, v in m/s "
                        f"(divide cm/s by 100).")


def _normalise_lon(lon: np.ndarray) -> np.ndarray:
    """Longitudes in [-180, 180)."""
    return np.mod(lon + 180.0, 360.0) - 180.0


# ----------------------------------------------------------------------------------------------
# processed table (Zenodo 5644972 layout)


def table_from_frame(df, *, source: str = "table", bbox=None, synthetic: bool = False,
                     attrs: dict | None = None) -> DrifterData:
    """Validate a pandas DataFrame in the processed-table layout and turn it into DrifterData."""
    import pandas as pd

    if not isinstance(df, pd.DataFrame):
        raise DataError(f"Expected a table of drifter rows, got {type(df).__name__}; pass a CSV, HDF5 or NetCDF file.")
    where = "the drifter table" if source in ("", "table") else f"the drifter table {source}"
    missing = [c for c in TABLE_COLUMNS if c not in df.columns]
    if missing:
        raise DataError(f"{where[0].upper()}{where[1:]} lacks column(s) {', '.join(missing)}; it needs "
                        f"{', '.join(TABLE_COLUMNS)} (the layout of Zenodo record 5644972).")
    if len(df) == 0:
        raise DataError(f"{where[0].upper()}{where[1:]} holds no rows; give a file with at least one observation.")
    cols = {c: _numeric_column(df, c, where) for c in TABLE_COLUMNS}
    cols["lon"] = _normalise_lon(cols["lon"])
    cols["doy"] = _day_of_year_fraction(cols["t"])
    truth = None
    tcols = ("true_u_mean", "true_v_mean", "true_cov_uu", "true_cov_uv", "true_cov_vv")
    if all(c in df.columns for c in tcols):
        truth = {c: _numeric_column(df, c, where) for c in tcols}
    return _finish(cols, list(FEATURES), where, source=source, synthetic=synthetic,
                   truth=truth, attrs=attrs, bbox=bbox)


def load_table(path: str | Path, *, key: str | None = None, bbox=None) -> DrifterData:
    """Load the processed drifter table (CSV, pandas HDF5 `.h5/.hdf5/.hdf`, or flat NetCDF) from `path`.

    HDF5 files are read by :func:`distviz.data.tables.read_hdf_frame` (numeric arrays only, never
    unpickled); CSV files by :func:`distviz.data.tables.read_csv_bytes` (any common encoding and delimiter).
    """
    from distviz.data.tables import read_csv_bytes, read_hdf_frame

    path = Path(path)
    if not path.exists():
        raise DataError(f"Drifter file {path} does not exist; give the path of a CSV, HDF5 or NetCDF drifter file.")
    regular_file(path, what="drifter file")   # a FIFO, device or folder is refused before anything opens it
    suf = path.suffix.lower()
    if suf in (".nc", ".nc4", ".cdf"):
        return load_netcdf(path, bbox=bbox)
    if suf in (".h5", ".hdf5", ".hdf"):
        df = read_hdf_frame(path, key=key, what=f"the drifter file {path.name}")
    else:
        try:
            data = path.read_bytes()
        except OSError:
            raise DataError(f"Could not read drifter file {path.name}; check that it is a readable file.") from None
        df = read_csv_bytes(data, what=f"The drifter file {path.name}")
    return table_from_frame(df, source=path.name, bbox=bbox)


# ----------------------------------------------------------------------------------------------
# GDP ragged arrays (NOAA / clouddrift layout)


def _time_to_days(time) -> np.ndarray:
    """Days since 1970-01-01 from a datetime64 array or numbers already in seconds since 1970."""
    arr = np.asarray(time)
    if np.issubdtype(arr.dtype, np.datetime64):
        return (arr.astype("datetime64[s]") - _EPOCH).astype(np.float64) / 86400.0
    return arr.astype(np.float64) / 86400.0


def gdp_from_dataset(ds, *, source: str = "GDP ragged array", bbox=None, daily: bool = True,
                     max_offset_hours: float = 3.0) -> DrifterData:
    """Validate a GDP ragged-array xarray.Dataset, keep drogued rows, decimate to daily and build DrifterData.

    The rows are those of :func:`gdp_daily_columns`, less NaN rows and rows outside `bbox`, sorted by id and time.
    """
    cols, present = gdp_daily_columns(ds, source=source, daily=daily, max_offset_hours=max_offset_hours)
    if cols["u"].size == 0:
        raise DataError(f"The GDP file {source} has no drogued observations (drogue_status all false); "
                        f"the paper uses drogued drifters only.")
    out = _finish(cols, present, f"the GDP file {source}", source=source, bbox=bbox)
    order = np.lexsort((out.t, out.id))
    out = out.subset(order)
    return out


def gdp_daily_columns(ds, *, source: str = "GDP ragged array", daily: bool = True,
                      max_offset_hours: float = 3.0) -> tuple[dict[str, np.ndarray], list[str]]:
    """Columns (u, v, lon, lat, t, id, features) of a GDP ragged-array Dataset's drogued daily rows, and the features.

    Observations are kept where ``drogue_status`` is true (drogue attached), then one row per drifter
    and calendar day: the observation closest to 00:00 UTC, if within `max_offset_hours` (the paper keeps
    00:00 of the 6-hourly product, App. A). The
    features the GDP file lacks (wind, wind stress, geostrophic velocity unless present under their
    table names) are reported in ``absent_features``; the fit then uses lon, lat and time of year.
    """
    missing = [v for v in GDP_VARIABLES if v not in ds.variables]
    if missing:
        raise DataError(f"The GDP file {source} lacks variable(s) {', '.join(missing)}; a ragged-array file needs "
                        f"{', '.join(GDP_VARIABLES)}.")
    rowsize = np.asarray(ds["rowsize"].values)
    ids = np.asarray(ds["id"].values)
    if not np.issubdtype(rowsize.dtype, np.number) or not np.issubdtype(ids.dtype, np.number):
        raise DataError(f"In the GDP file {source}, 'rowsize' and 'id' must be integers per trajectory; fix their type.")
    n_obs = int(np.asarray(ds["ve"]).shape[0])
    if rowsize.ndim != 1 or ids.shape != rowsize.shape:
        raise DataError(f"In the GDP file {source}, 'rowsize' and 'id' must be 1-D of equal length (one per drifter).")
    if not np.all(np.isfinite(rowsize)) or np.any(rowsize != np.round(rowsize)):
        raise DataError(f"In the GDP file {source}, 'rowsize' holds values that are not whole numbers; it must count "
                        f"the observations of each drifter.")
    if np.any(rowsize < 0):
        raise DataError(f"In the GDP file {source}, 'rowsize' holds {int(np.sum(rowsize < 0))} negative count(s); "
                        f"every drifter must have zero or more observations.")
    rowsize = rowsize.astype(np.int64)
    if int(rowsize.sum()) != n_obs:
        raise DataError(f"In the GDP file {source}, rowsize sums to {int(rowsize.sum())} but there are {n_obs} "
                        f"observations; the ragged array is inconsistent.")
    if n_obs == 0:
        raise DataError(f"The GDP file {source} holds no observations; give a file with at least one drifter row.")
    obs_id = np.repeat(ids.astype(np.float64), rowsize)
    cols: dict[str, np.ndarray] = {}
    for name, var in (("u", "ve"), ("v", "vn"), ("lon", "lon"), ("lat", "lat")):
        a = np.asarray(ds[var].values)
        if not np.issubdtype(a.dtype, np.number) or a.shape != (n_obs,):
            raise DataError(f"Variable '{var}' in the GDP file {source} must be numeric with one value per observation.")
        a = a.astype(np.float64)
        a[np.abs(a) > 1e10] = np.nan  # GDP fill values such as -1e34
        cols[name] = a
    try:
        cols["t"] = _time_to_days(ds["time"].values)
    except (TypeError, ValueError):
        raise DataError(f"Variable 'time' in the GDP file {source} must be datetimes or seconds since 1970.") from None
    cols["lon"] = _normalise_lon(cols["lon"])
    cols["id"] = obs_id
    cols["doy"] = _day_of_year_fraction(cols["t"])
    drogue = np.asarray(ds["drogue_status"].values)
    if drogue.shape != (n_obs,):
        raise DataError(f"Variable 'drogue_status' in the GDP file {source} must have one value per observation.")
    drogued = np.asarray(drogue, dtype=np.float64) > 0 if drogue.dtype != bool else drogue
    present = []
    for f in FEATURES:
        if f in ("lon", "lat", "doy"):
            present.append(f)
        elif f in ds.variables and np.asarray(ds[f]).shape == (n_obs,):
            cols[f] = np.asarray(ds[f].values, dtype=np.float64)
            present.append(f)
    keep = drogued.copy()
    if daily:
        day = np.floor(cols["t"] + 1e-9)
        frac = cols["t"] - day
        dist = np.minimum(frac, 1.0 - frac)  # distance to the nearest midnight in days
        day = np.where(frac > 0.5, day + 1, day)
        keep &= dist <= max_offset_hours / 24.0 + 1e-9
        order = np.lexsort((dist, day, obs_id))
        o = order[keep[order]]
        first = np.ones(o.size, dtype=bool)
        first[1:] = (obs_id[o][1:] != obs_id[o][:-1]) | (day[o][1:] != day[o][:-1])
        sel = np.zeros(n_obs, dtype=bool)
        sel[o[first]] = True
        keep = sel
    cols = {k: v[keep] for k, v in cols.items()}
    return cols, [f for f in FEATURES if f in present]


def load_gdp(path: str | Path, *, bbox=None, daily: bool = True, max_offset_hours: float = 3.0) -> DrifterData:
    """Load a Global Drifter Program ragged-array NetCDF file (ve, vn, lon, lat, time, drogue_status, rowsize, id)."""
    import xarray as xr

    path = Path(path)
    if not path.exists():
        raise DataError(f"GDP file {path} does not exist; give the path of a ragged-array NetCDF file.")
    regular_file(path, what="GDP file")
    try:
        with xr.open_dataset(path, decode_times=True) as ds:
            ds.load()
    except Exception:  # netCDF4 / h5netcdf / xarray raise many kinds of errors for foreign files
        raise DataError(f"Could not read GDP file {path.name} as NetCDF; give a NetCDF file "
                        f"from the Global Drifter Program or clouddrift.") from None
    return gdp_from_dataset(ds, source=path.name, bbox=bbox, daily=daily, max_offset_hours=max_offset_hours)


# ----------------------------------------------------------------------------------------------
# NetCDF dispatch, the shipped sample and the one-stop loader


def dataset_to_drifters(ds, *, source: str = "dataset", bbox=None) -> DrifterData:
    """DrifterData from an xarray.Dataset: GDP ragged array when it has `rowsize`, else the flat table layout."""
    if "rowsize" in ds.variables:
        return gdp_from_dataset(ds, source=source, bbox=bbox)
    if "ve" in ds.variables and "u" not in ds.variables:
        missing = [v for v in GDP_VARIABLES if v not in ds.variables]
        raise DataError(f"The GDP file {source} lacks variable(s) {', '.join(missing)}; a ragged-array file needs "
                        f"{', '.join(GDP_VARIABLES)}.")
    missing = [c for c in TABLE_COLUMNS if c not in ds.variables]
    if missing:
        raise DataError(f"The drifter file {source} lacks variable(s) {', '.join(missing)}; it needs "
                        f"{', '.join(TABLE_COLUMNS)} (processed table) or {', '.join(GDP_VARIABLES)} (GDP ragged array).")
    keep = [c for c in ds.data_vars if ds[c].ndim == 1] + [c for c in ds.coords if ds[c].ndim == 1]
    df = ds[list(dict.fromkeys(keep))].to_dataframe() if keep else None
    if df is not None:
        df = df.reset_index(drop=True) if df.index.name not in TABLE_COLUMNS else df.reset_index()
    synthetic = str(ds.attrs.get("synthetic", "")).lower() in ("1", "yes", "true")
    attrs = {k: v for k, v in ds.attrs.items() if isinstance(v, (str, int, float, np.integer, np.floating))}
    return table_from_frame(df, source=source, bbox=bbox, synthetic=synthetic, attrs=attrs)


def load_netcdf(path: str | Path, *, bbox=None) -> DrifterData:
    """Load a NetCDF drifter file: a GDP ragged array or a flat table (such as the shipped sample)."""
    import xarray as xr

    path = Path(path)
    if not path.exists():
        raise DataError(f"Drifter file {path} does not exist; give the path of a NetCDF drifter file.")
    regular_file(path, what="drifter file")
    try:
        with xr.open_dataset(path) as ds:
            ds.load()
    except Exception:  # netCDF4 / h5netcdf / xarray raise many kinds of errors for foreign files
        raise DataError(f"Could not read {path.name} as NetCDF; give a valid NetCDF file.") from None
    return dataset_to_drifters(ds, source=path.name, bbox=bbox)


def sample_path() -> Path:
    """Path of the shipped synthetic North Atlantic sample (`distviz/data/sample/drifters_north_atlantic_synthetic.nc`)."""
    return sample_file(SAMPLE_FILE)


def load_sample(*, bbox=None) -> DrifterData:
    """The shipped SYNTHETIC North Atlantic sample."""
    d = load_netcdf(sample_path(), bbox=bbox)
    d.synthetic = True
    return d


def load_drifters(source="sample", *, bbox=None, key: str | None = None) -> DrifterData:
    """Load drifters from 'sample', a path (CSV, HDF5, NetCDF table or GDP ragged array), a DataFrame or a Dataset.

    `bbox` = (lon0, lon1, lat0, lat1) keeps rows inside it (the paper uses 83W-40W of the North Atlantic,
    ``NORTH_ATLANTIC_BBOX``); `key` picks the table of a pandas HDF5 file holding several.
    """
    import pandas as pd
    import xarray as xr

    if isinstance(source, DrifterData):
        return source
    if isinstance(source, pd.DataFrame):
        return table_from_frame(source, source="table", bbox=bbox)
    if isinstance(source, xr.Dataset):
        return dataset_to_drifters(source, source="dataset", bbox=bbox)
    if isinstance(source, str) and source.strip().lower() in ("sample", "synthetic", ""):
        return load_sample(bbox=bbox)
    if isinstance(source, (str, Path)):
        p = Path(source)
        if p.is_dir() and (p / "_distviz_gdp.json").exists():  # a table written by `distviz data gdp`
            from distviz.data.gdp_archive import read_gdp_table

            return read_gdp_table(p, bbox=bbox)
        if p.suffix.lower() in (".nc", ".nc4", ".cdf"):
            return load_netcdf(p, bbox=bbox)
        return load_table(p, bbox=bbox, key=key)
    raise DataError(f"Cannot load drifters from a {type(source).__name__}; give 'sample', a file path, "
                    f"a pandas DataFrame or an xarray Dataset.")


def split_ids(uniq: np.ndarray, fractions=(0.81, 0.09, 0.10), random_state=0):
    """The drifter ids (train, validation, test) of the by-drifter split (paper Section 5.3) of the sorted distinct ids."""
    rng = np.random.default_rng(random_state)
    uniq = np.asarray(uniq)
    if uniq.size < 3:
        raise DataError(f"Splitting by drifter needs at least 3 drifters, got {uniq.size}; load more data.")
    perm = rng.permutation(uniq)
    f = np.asarray(fractions, dtype=float)
    f = f / f.sum()
    n_test = max(1, int(round(f[2] * uniq.size)))
    n_val = max(1, int(round(f[1] * uniq.size)))
    return perm[n_test + n_val:], perm[n_test:n_test + n_val], perm[:n_test]


def split_by_id(ids: np.ndarray, fractions=(0.81, 0.09, 0.10), random_state=0):
    """Boolean masks (train, validation, test) that keep every drifter in one set (paper Section 5.3)."""
    _, val_ids, test_ids = split_ids(np.unique(ids), fractions, random_state)
    te = np.isin(ids, test_ids)
    va = np.isin(ids, val_ids)
    return ~(te | va), va, te
