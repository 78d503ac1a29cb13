"""Out-of-core GDP archive pipeline: a ragged-array NetCDF / Zarr archive to the paper's processed table, chunk-wise.

:func:`open_gdp_archive` opens the archive lazily (xarray + dask) and checks it on the client from the
per-trajectory ``rowsize`` and ``id`` alone; the observation variables are rechunked so that every chunk
holds whole trajectories (chunk boundaries from :func:`clouddrift.ragged.rowsize_to_index`).
:func:`write_gdp_table` then runs one Dask task per chunk: the task reads its chunk, applies the
in-memory loader's row definition (:func:`distviz.data.drifters.gdp_daily_columns`: drogued rows, one
per drifter and day nearest 00:00 UTC, the paper's features, App. A of O'Malley et al.), drops NaN
rows, keeps the bounding box and the time window, and writes its rows as one Parquet file.  No process
ever holds the whole archive; :func:`read_gdp_table` reads the result back as DrifterData.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np

from distviz import _optional
from distviz.data.drifters import (
    FEATURES,
    GDP_VARIABLES,
    DrifterData,
    _finish,
    check_velocities,
    gdp_daily_columns,
    usable_rows,
)
from distviz.errors import DataError

#: Name of the file that marks a directory as this pipeline's output (settings and row counts, JSON).
MARKER = "_distviz_gdp.json"
#: Default target number of observations per chunk (whole trajectories; a longer trajectory is one chunk).
CHUNK_OBS = 2_000_000
#: Columns of the written table besides the features present: velocities (m/s), id and t (days since 1970).
OUT_COLUMNS = ("u", "v", "id", "t")


def _require(what: str, *, archive: bool = True) -> None:
    """Raise the [dask] extra's sentence unless pyarrow (and for an archive, dask and clouddrift) are installed."""
    try:
        import pyarrow  # noqa: F401
        if archive:
            import clouddrift  # noqa: F401
            import dask  # noqa: F401
    except ModuleNotFoundError as e:
        top = (e.name or "").split(".")[0]
        if top not in ("pyarrow", "clouddrift", "dask"):
            raise
        raise _optional.missing(top, what) from None


def _zarr_codec_ids(node) -> list[str]:
    """Every codec / filter id named anywhere in a Zarr metadata document."""
    ids: list[str] = []
    if isinstance(node, dict):
        if isinstance(node.get("id"), str):
            ids.append(node["id"].lower())
        if isinstance(node.get("name"), str) and "configuration" in node:
            ids.append(node["name"].lower())
        for v in node.values():
            ids += _zarr_codec_ids(v)
    elif isinstance(node, list):
        for v in node:
            ids += _zarr_codec_ids(v)
    return ids


def _check_zarr_store(path: Path) -> None:
    """DataError when a Zarr store's metadata asks for the pickle codec (reading it would unpickle file content)."""
    names = {".zarray", ".zmetadata", "zarr.json"}
    for i, meta in enumerate(p for p in path.rglob("*") if p.name in names):
        if i > 100_000:
            break
        try:
            doc = json.loads(meta.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError):
            raise DataError(f"The Zarr store {path.name} has unreadable metadata ({meta.name}); "
                            f"give a valid GDP Zarr archive.") from None
        if "pickle" in _zarr_codec_ids(doc):
            raise DataError(f"The Zarr store {path.name} stores a variable with the pickle codec, which distviz never "
                            f"reads; rewrite the archive with numeric variables only.")


def _zarr_readable() -> bool:
    """Whether the installed zarr is one that this xarray opens (zarr 3, which the [dask] extra installs)."""
    try:
        import zarr
    except ModuleNotFoundError:
        return False
    return int(str(zarr.__version__).split(".")[0]) >= 3


def _open_lazy(path: Path, chunks):
    """The archive at `path` as a lazily read xarray.Dataset (NetCDF file or Zarr directory)."""
    import xarray as xr

    is_zarr = path.is_dir() or path.suffix.lower() == ".zarr"
    if is_zarr:
        if not path.is_dir():
            raise DataError(f"The Zarr store {path.name} is not a directory; give the path of an unzipped Zarr store.")
        _check_zarr_store(path)
    try:
        with warnings.catch_warnings():  # trajectory-aligned chunks cut across the file's own chunks by design
            warnings.filterwarnings("ignore", message=".*separate the stored chunks.*")
            if is_zarr:
                return xr.open_zarr(path, chunks=chunks, decode_times=True)
            return xr.open_dataset(path, chunks=chunks, decode_times=True)
    except Exception:  # netCDF4 / zarr / xarray raise many kinds of errors for foreign files
        if is_zarr and not _zarr_readable():
            raise DataError(f"This installation cannot read the Zarr store {path.name} (xarray needs zarr 3, this "
                            f"environment has an older one); install distviz[dask] or give the archive as a ragged-array "
                            f"NetCDF file.") from None
        kind = "Zarr store" if is_zarr else "NetCDF file"
        raise DataError(f"Could not read the GDP archive {path.name} as a {kind}; give a ragged-array NetCDF file "
                        f"or Zarr store from the Global Drifter Program or clouddrift.") from None


def trajectory_chunks(rowsize: np.ndarray, chunk_obs: int = CHUNK_OBS) -> list[tuple[int, int]]:
    """(first, stop) trajectory ranges whose observations add up to about `chunk_obs` each, never splitting one."""
    _require("Splitting a GDP archive into chunks")
    from clouddrift.ragged import rowsize_to_index

    offsets = rowsize_to_index(rowsize)  # offsets[i]: first observation of trajectory i
    out: list[tuple[int, int]] = []
    first = 0
    n_traj = len(rowsize)
    while first < n_traj:
        stop = int(np.searchsorted(offsets, offsets[first] + chunk_obs, side="right")) - 1
        stop = min(max(stop, first + 1), n_traj)
        out.append((first, stop))
        first = stop
    return out


def open_gdp_archive(path, chunks: int = CHUNK_OBS):
    """Open a GDP ragged-array archive lazily, check it, and rechunk its observations along trajectory boundaries.

    `chunks` is the target number of observations per chunk.  Only ``rowsize`` and ``id`` (one value per
    trajectory) are read here; the result is an xarray.Dataset of dask arrays with attribute
    ``traj_chunks`` (the trajectory range of each chunk) and the observation / trajectory dimension names.
    """
    _require("Opening a GDP archive out of core")
    path = Path(path)
    if not path.exists():
        raise DataError(f"GDP archive {path} does not exist; give the path of a ragged-array NetCDF file or Zarr store.")
    if not isinstance(chunks, (int, np.integer)) or chunks < 1:
        raise DataError(f"The chunk size must be a positive number of observations such as 2000000, got {chunks!r}.")
    ds = _open_lazy(path, None)  # lazily indexed, not yet chunked: reads nothing but metadata
    src = path.name
    missing = [v for v in GDP_VARIABLES if v not in ds.variables]
    if missing:
        raise DataError(f"The GDP archive {src} lacks variable(s) {', '.join(missing)}; a ragged-array archive needs "
                        f"{', '.join(GDP_VARIABLES)}.")
    if ds["rowsize"].ndim != 1 or ds["id"].dims != ds["rowsize"].dims:
        raise DataError(f"In the GDP archive {src}, 'rowsize' and 'id' must be 1-D over the same trajectory dimension.")
    if ds["ve"].ndim != 1:
        raise DataError(f"In the GDP archive {src}, 've' must be 1-D over the observation dimension.")
    traj_dim, obs_dim = ds["rowsize"].dims[0], ds["ve"].dims[0]
    if traj_dim == obs_dim:
        raise DataError(f"In the GDP archive {src}, 'rowsize' and 've' share dimension '{obs_dim}'; a ragged array has "
                        f"one dimension per trajectory and one per observation.")
    n_obs = int(ds.sizes[obs_dim])
    obs_vars = ["ve", "vn", "lon", "lat", "time", "drogue_status"] + [
        f for f in FEATURES if f in ds.variables and f not in ("lon", "lat", "doy")]
    for v in obs_vars:
        if ds[v].dims != (obs_dim,):
            raise DataError(f"Variable '{v}' in the GDP archive {src} must have one value per observation "
                            f"(dimension '{obs_dim}').")
        if not (np.issubdtype(ds[v].dtype, np.number) or np.issubdtype(ds[v].dtype, np.datetime64)
                or ds[v].dtype == bool):
            raise DataError(f"Variable '{v}' in the GDP archive {src} must be numeric, not {ds[v].dtype}; "
                            f"fix its type.")
    rowsize = np.asarray(ds["rowsize"].values)
    ids = np.asarray(ds["id"].values)
    if not np.issubdtype(rowsize.dtype, np.number) or not np.issubdtype(ids.dtype, np.number):
        raise DataError(f"In the GDP archive {src}, 'rowsize' and 'id' must be integers per trajectory; fix their type.")
    if not np.all(np.isfinite(rowsize)) or np.any(rowsize != np.round(rowsize)) or np.any(rowsize < 0):
        raise DataError(f"In the GDP archive {src}, 'rowsize' must hold whole non-negative counts of each drifter's "
                        f"observations.")
    if not np.all(np.isfinite(ids)):
        raise DataError(f"In the GDP archive {src}, 'id' holds missing values; every trajectory needs an id.")
    rowsize = rowsize.astype(np.int64)
    if int(rowsize.sum()) != n_obs:
        raise DataError(f"In the GDP archive {src}, rowsize sums to {int(rowsize.sum())} but there are {n_obs} "
                        f"observations; the ragged array is inconsistent.")
    if n_obs == 0:
        raise DataError(f"The GDP archive {src} holds no observations; give an archive with at least one drifter row.")
    if np.unique(ids).size != ids.size:
        raise DataError(f"In the GDP archive {src}, {ids.size - np.unique(ids).size} trajectory id(s) repeat; "
                        f"every trajectory needs its own id.")
    ranges = trajectory_chunks(rowsize, int(chunks))
    sizes = tuple(int(rowsize[a:b].sum()) for a, b in ranges)
    ds.close()
    # reopen with dask chunks that follow trajectory boundaries: each task reads its own slice of the file
    ds = _open_lazy(path, {obs_dim: sizes, traj_dim: tuple(b - a for a, b in ranges)})
    ds = ds[obs_vars + ["rowsize", "id"]]
    ds.attrs = {"traj_chunks": json.dumps(ranges), "obs_vars": ",".join(obs_vars), "obs_dim": obs_dim,
                "traj_dim": traj_dim, "source": src}
    return ds


def parse_bbox(text):
    """(lon0, lon1, lat0, lat1) from 'lon0,lon1,lat0,lat1', or None for None / ''."""
    if text is None or str(text).strip() == "":
        return None
    try:
        box = tuple(float(v) for v in str(text).split(","))
    except ValueError:
        box = ()
    if len(box) != 4 or not all(np.isfinite(box)) or box[0] > box[1] or box[2] > box[3]:
        raise DataError(f"The bounding box must be lon0,lon1,lat0,lat1 with lon0 <= lon1 and lat0 <= lat1, "
                        f"such as -83,-40,0,70; got {text!r}.")
    return box


def _day(text, what: str) -> float | None:
    """Days since 1970-01-01 of a date such as '2010-01-01' (None for None)."""
    if text is None or str(text).strip() == "":
        return None
    try:
        d = np.datetime64(str(text).strip(), "D")
    except ValueError:
        d = None
    if d is None or np.isnat(d):
        raise DataError(f"The {what} date must look like 2010-01-31, got {text!r}.")
    return float(d.astype(np.int64))


def _chunk_rows(i: int, blocks: dict, rowsize, ids, *, source: str, bbox, t0, t1, out_dir: str | None):
    """One chunk's processed rows: write them to `out_dir`/part-i.parquet (or return the frame); returns counts."""
    import pandas as pd
    import xarray as xr

    obs = {k: ("obs", np.asarray(v)) for k, v in blocks.items()}
    ds = xr.Dataset({**obs, "rowsize": ("traj", np.asarray(rowsize)), "id": ("traj", np.asarray(ids))})
    cols, present = gdp_daily_columns(ds, source=source)
    ok, n_nan = usable_rows(cols, present, bbox)
    if t0 is not None:
        ok &= cols["t"] >= t0
    if t1 is not None:
        ok &= cols["t"] < t1 + 1.0
    frame = pd.DataFrame({name: cols[name][ok].astype(np.float64) for name in present})
    frame["u"], frame["v"] = cols["u"][ok].astype(np.float64), cols["v"][ok].astype(np.float64)
    check_velocities(frame[["u", "v"]].to_numpy(), f"the GDP archive {source}")
    frame["id"] = cols["id"][ok].astype(np.int64)
    frame["t"] = cols["t"][ok].astype(np.float64)
    frame = frame.iloc[np.lexsort((frame["t"].to_numpy(), frame["id"].to_numpy()))].reset_index(drop=True)
    info = {"rows": len(frame), "nan": n_nan, "drifters": int(frame["id"].nunique()), "features": present}
    if out_dir is None:
        return info, frame
    if len(frame):
        frame.to_parquet(Path(out_dir) / f"part-{i:06d}.parquet", index=False)
    return info


def _prepare_out(out: Path) -> None:
    """Create `out`, or clear a previous output of this pipeline there; refuse any other non-empty directory."""
    if out.exists() and not out.is_dir():
        raise DataError(f"The output {out.name} is a file; give a directory path for the Parquet table.")
    if out.is_dir() and any(out.iterdir()):
        if not (out / MARKER).exists():
            raise DataError(f"The output directory {out.name} is not empty and was not written by 'distviz data gdp'; "
                            f"give a new or empty directory.")
        for p in out.glob("part-*.parquet"):
            p.unlink()
        (out / MARKER).unlink()
    out.mkdir(parents=True, exist_ok=True)


def _chunk_tasks(ds, *, bbox, start, end, out_dir):
    """One dask.delayed task per trajectory chunk of `ds` (from :func:`open_gdp_archive`)."""
    import dask

    ranges = json.loads(ds.attrs["traj_chunks"])
    names = ds.attrs["obs_vars"].split(",")
    blocks = {v: ds[v].data.to_delayed().ravel() for v in names}
    rowsize = np.asarray(ds["rowsize"].values).astype(np.int64)
    ids = np.asarray(ds["id"].values)
    t0, t1 = _day(start, "start"), _day(end, "end")
    if t0 is not None and t1 is not None and t1 < t0:
        raise DataError(f"The end date {end} is before the start date {start}; give --start before --end.")
    task = dask.delayed(_chunk_rows, pure=True)
    return [task(i, {v: blocks[v][i] for v in names}, rowsize[a:b], ids[a:b], source=ds.attrs["source"],
                 bbox=bbox, t0=t0, t1=t1, out_dir=out_dir)
            for i, (a, b) in enumerate(ranges)]


def write_gdp_table(archive, out, *, bbox=None, start=None, end=None, chunk_obs: int = CHUNK_OBS,
                    client=None) -> dict:
    """Write the processed table of GDP `archive` to the Parquet directory `out`, one task per trajectory chunk.

    Runs on `client`, a ``dask.distributed.Client``, when one is given (its workers must see `archive` and
    `out`; ``distviz data gdp --scheduler`` passes the one it entered), else on local threads.  Returns the
    counts written (rows, drifters, observations, chunks).
    """
    _require("Writing the processed GDP table")
    import dask

    ds = open_gdp_archive(archive, chunks=chunk_obs)
    out = Path(out)
    if out.suffix.lower() == ".zarr":
        raise DataError("The processed table is written as Parquet; give an output directory not ending in .zarr.")
    tasks = _chunk_tasks(ds, bbox=bbox, start=start, end=end, out_dir=str(out))
    _prepare_out(out)
    infos = client.compute(tasks, sync=True) if client is not None else dask.compute(*tasks)
    rows = sum(i["rows"] for i in infos)
    if rows == 0:
        if not any(out.iterdir()):
            out.rmdir()
        raise DataError(f"The GDP archive {ds.attrs['source']} has no drogued daily rows inside the bounding box and "
                        f"dates asked for; widen --bbox or --start/--end.")
    info = {"rows": rows, "drifters": sum(i["drifters"] for i in infos), "observations": int(ds.sizes[ds.attrs["obs_dim"]]),
            "chunks": len(infos), "dropped_nan": sum(i["nan"] for i in infos), "features": infos[0]["features"],
            "source": ds.attrs["source"], "bbox": None if bbox is None else list(bbox), "start": start, "end": end,
            "out": str(out)}
    (out / MARKER).write_text(json.dumps(info, indent=1), encoding="utf-8")
    return info


def table_columns(df, name: str) -> tuple[dict[str, np.ndarray], list[str]]:
    """The written table's columns of frame df as float64 (features present, u, v, id, t) and the features present;
    a DataError naming table `name` when a column is missing."""
    present = [f for f in FEATURES if f in df.columns]
    missing = [c for c in ("lon", "lat", "doy") + OUT_COLUMNS if c not in df.columns]
    if missing:
        raise DataError(f"The table {name} lacks column(s) {', '.join(missing)}; write it again with "
                        f"'distviz data gdp'.")
    return {c: df[c].to_numpy(dtype=np.float64) for c in present + list(OUT_COLUMNS)}, present


def read_gdp_table(path, *, bbox=None) -> DrifterData:
    """DrifterData from a Parquet table written by :func:`write_gdp_table` (rows sorted by id and time)."""
    _require("Reading a processed GDP table (Parquet)", archive=False)
    import pandas as pd

    path = Path(path)
    if not (path / MARKER).exists():
        raise DataError(f"{path.name} is not a table written by 'distviz data gdp'; give its output directory.")
    parts = sorted(path.glob("part-*.parquet"))
    if not parts:
        raise DataError(f"The table {path.name} holds no rows; run 'distviz data gdp' again with a wider box or dates.")
    try:
        df = pd.concat([pd.read_parquet(p) for p in parts], ignore_index=True)
    except Exception:  # pyarrow raises many kinds of errors for damaged files
        raise DataError(f"Could not read the Parquet table {path.name}; write it again with 'distviz data gdp'.") from None
    cols, present = table_columns(df, path.name)
    out = _finish(cols, present, f"the table {path.name}", source=path.name, bbox=bbox)
    return out.subset(np.lexsort((out.t, out.id)))
