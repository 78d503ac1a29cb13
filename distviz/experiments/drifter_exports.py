"""Downloads of a drifter comparison: per-row test predictions (CSV, NetCDF) and the fitted models (NetCDF).

`per_row_dataset` turns the comparison's test predictions (``DrifterComparison.predictions``) into one flat
table, one variable per column over the test rows: position, drifter id, time, the observed velocity and, for
each method, the predicted mean, the covariance entries, the correlation rho and the row's negative
log-likelihood.  `per_row_csv` and `per_row_netcdf` write it; `model_file_bytes` writes a fitted model through
its own ``save`` (``distviz.modelfile.ModelWriter``), which ``distviz.persistence.load`` reads back.
`export_stem` names the files after the comparison's data and settings.  No Streamlit here.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import numpy as np

__all__ = ["per_row_dataset", "per_row_table", "per_row_csv", "per_row_netcdf", "model_file_bytes",
           "saveable_models", "export_stem"]

#: (column, long name, units) of the per-row table's leading columns, taken from the predictions as they are
_ROW_COLUMNS = (("id", "drifter id", ""), ("t", "time", "days since 1970-01-01"),
                ("lon", "longitude", "degrees_east"), ("lat", "latitude", "degrees_north"),
                ("u", "observed eastward velocity", "cm s-1"), ("v", "observed northward velocity", "cm s-1"))


def _methods(pred) -> list[str]:
    """Methods with a per-row NLL in `pred`, in the order the comparison stored them."""
    return [str(k)[4:] for k in pred.data_vars if str(k).startswith("nll_")]


def per_row_dataset(pred):
    """The test predictions of a drifter comparison as one flat table over the test rows (an xarray Dataset).

    Parameters
    ----------
    pred : xarray.Dataset
        ``DrifterComparison.predictions``: over ``obs`` the positions, ids, times, observed (u, v) and per
        method ``mean_<m>`` (obs, comp), ``cov_<m>`` (obs, comp, comp2) and ``nll_<m>`` (obs).

    Returns
    -------
    xarray.Dataset
        Variables over ``obs`` only, each with ``units`` and ``long_name``: id, t, lon, lat, u, v, then per
        method ``<m>_mean_u``, ``<m>_mean_v`` (cm s-1), ``<m>_var_u``, ``<m>_cov_uv``, ``<m>_var_v``
        (cm2 s-2), ``<m>_rho`` = cov_uv / sqrt(var_u var_v) and ``<m>_nll`` (nats, the bivariate Normal's
        -log p(u, v | x) with velocities in cm/s); a mixture average (Mix-*) has only its NLL.  The pool weight
        ``w_region`` follows when the comparison has it.
    """
    import xarray as xr

    out = {}
    for name, long, units in _ROW_COLUMNS:
        if name in pred:
            out[name] = ("obs", np.asarray(pred[name].values), {"long_name": long, **({"units": units} if units else {})})
    for m in _methods(pred):
        if f"mean_{m}" in pred and f"cov_{m}" in pred:
            mu = np.asarray(pred[f"mean_{m}"].values, dtype=float)
            S = np.asarray(pred[f"cov_{m}"].values, dtype=float)
            out[f"{m}_mean_u"] = ("obs", mu[:, 0], {"long_name": f"{m} predicted mean of u", "units": "cm s-1"})
            out[f"{m}_mean_v"] = ("obs", mu[:, 1], {"long_name": f"{m} predicted mean of v", "units": "cm s-1"})
            out[f"{m}_var_u"] = ("obs", S[:, 0, 0], {"long_name": f"{m} predicted variance of u", "units": "cm2 s-2"})
            out[f"{m}_cov_uv"] = ("obs", S[:, 0, 1], {"long_name": f"{m} predicted covariance of u and v",
                                                      "units": "cm2 s-2"})
            out[f"{m}_var_v"] = ("obs", S[:, 1, 1], {"long_name": f"{m} predicted variance of v", "units": "cm2 s-2"})
            out[f"{m}_rho"] = ("obs", S[:, 0, 1] / np.sqrt(S[:, 0, 0] * S[:, 1, 1]),
                               {"long_name": f"{m} predicted correlation of u and v", "units": "1"})
        out[f"{m}_nll"] = ("obs", np.asarray(pred[f"nll_{m}"].values, dtype=float),
                           {"long_name": f"{m} negative log-likelihood of (u, v) in cm/s", "units": "nats"})
    if "w_region" in pred:
        out["w_region"] = ("obs", np.asarray(pred["w_region"].values, dtype=float),
                           {"long_name": "Pool-region weight of NGB", "units": "1"})
    attrs = {k: (int(v) if isinstance(v, (bool, np.bool_)) else v) for k, v in pred.attrs.items()
             if isinstance(v, (str, int, float, np.integer, np.floating, bool, np.bool_))}
    return xr.Dataset(out, attrs={**attrs, "title": "drifter comparison: per-row test predictions"})


def per_row_table(pred):
    """`per_row_dataset` as a pandas DataFrame, one row per test row (columns in the same order)."""
    return per_row_dataset(pred).to_dataframe().reset_index(drop=True)


def per_row_csv(pred) -> bytes:
    """The per-row table as UTF-8 CSV bytes (header row, no index; floats as their shortest exact decimal)."""
    return per_row_table(pred).to_csv(index=False).encode("utf-8")


def _written(write) -> bytes:
    """The bytes of a file that `write(path)` creates in a fresh temporary folder."""
    with tempfile.TemporaryDirectory(prefix="distviz-export-") as tmp:
        path = Path(tmp) / "out.nc"
        write(path)
        return path.read_bytes()


def per_row_netcdf(pred) -> bytes:
    """The per-row table as NetCDF bytes (the engine model files use, ``distviz.modelfile.engine``)."""
    from distviz.modelfile import engine

    ds = per_row_dataset(pred)
    return _written(lambda p: ds.to_netcdf(p, engine=engine()))


def saveable_models(models: dict) -> dict:
    """The fitted models that ``distviz.persistence.load`` reads back (by method name), in their order."""
    from distviz.persistence import _classes

    known = _classes()
    return {m: est for m, est in models.items() if type(est).__name__ in known}


def model_file_bytes(model) -> bytes:
    """A fitted estimator written by its own ``save`` (one NetCDF file, no pickle) as bytes.

    ``distviz.persistence.load(path)`` of the written file returns an estimator that predicts as `model`.
    """
    return _written(model.save)


def _slug(text: object, limit: int = 40) -> str:
    """`text` reduced to lower-case letters, digits, '.' and '-' (at most `limit` characters; 'data' if empty)."""
    s = re.sub(r"[^a-z0-9.]+", "-", str(text).lower()).strip("-.")
    return s[:limit].strip("-.") or "data"


def export_stem(info: dict) -> str:
    """A file-name stem naming a comparison's data and settings, e.g.
    ``drifters-north-atlantic-synthetic-r300-lr0.1-train29654-seed0``.

    Parameters
    ----------
    info : dict
        ``DrifterComparison.info`` (source, rounds, learning_rate, n_train, seed).

    Returns
    -------
    str
        Only letters, digits, '.' and '-': safe as a file name on any system.
    """
    src = Path(str(info.get("source") or "data")).stem
    src = re.sub(r"^drifters?[_-]", "", src)
    parts = ["drifters", _slug(src), f"r{int(info.get('rounds', 0))}", f"lr{float(info.get('learning_rate', 0)):g}",
             f"train{int(info.get('n_train', 0))}", f"seed{int(info.get('seed', 0))}"]
    return "-".join(parts)
