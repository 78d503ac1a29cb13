"""Save and load ``DistributionalBoosting`` models with their trace as one NetCDF file (no pickle).

The file is an ``xarray.Dataset``: the trace variables as they are, plus the model under names
starting with ``model_`` (start iterate, per-round multipliers, flat node arrays of all trees with
per-round offsets) and the constructor parameters as JSON in the attribute ``model_params``.
All floats are stored as float64, so a loaded model predicts bit-identically.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import xarray as xr

from distviz.errors import DataError

__all__ = ["save_model", "load_model", "tree_arrays", "apply_tree"]

FORMAT = "distviz.DistributionalBoosting/1"


def tree_arrays(tree, K: int) -> dict:
    """Prediction arrays of a fitted HistTree: feature, raw threshold, left, right (-1 at leaves), value (M, K)."""
    nodes = tree.nodes_
    get = (lambda k: np.asarray(nodes[k]))
    value = np.asarray(get("value"), dtype=float).reshape(len(get("feature")), -1)
    return {
        "feature": get("feature").astype(np.int64),
        "threshold": get("threshold").astype(float),
        "left": get("left").astype(np.int64),
        "right": get("right").astype(np.int64),
        "value": value,
    }


def apply_tree(X, feature, threshold, left, right) -> np.ndarray:
    """Node id of the leaf of every row of raw X (go left when x <= threshold)."""
    from distviz.trees.predictor import apply_raw
    return apply_raw(np.ascontiguousarray(X, dtype=np.float64), np.ascontiguousarray(feature),
                     np.ascontiguousarray(threshold), np.ascontiguousarray(left), np.ascontiguousarray(right))


def save_model(model, path) -> None:
    """Write a fitted DistributionalBoosting (model arrays + trace) to a NetCDF file."""
    model._check_fitted()
    f = model.forest_
    ds = model.trace_.copy()
    ds["model_init"] = ("model_param", f.init)
    ds["model_multiplier"] = ("model_round", f.multiplier)
    ds["model_offsets"] = ("model_offset", f.offsets)
    ds["model_feature"] = ("model_node", f.feature)
    ds["model_threshold"] = ("model_node", f.threshold)
    ds["model_left"] = ("model_node", f.left)
    ds["model_right"] = ("model_node", f.right)
    ds["model_value"] = (("model_node", "model_param"), f.value)
    params = model.get_params()
    fam = params["family"]
    params["family"] = fam if isinstance(fam, str) else model.family_.name
    if not isinstance(fam, str):
        params.update(_family_options(model.family_))
    ds.attrs["model_format"] = FORMAT
    ds.attrs["model_params"] = json.dumps(params)
    ds.attrs["model_n_rounds"] = int(model.n_rounds_)
    ds.attrs["model_best_iteration"] = int(model.best_iteration_)
    ds.attrs["model_n_features"] = int(model.n_features_in_)
    ds.to_netcdf(Path(path), engine=_engine())


def _engine() -> str:
    """The NetCDF4 backend available here: netCDF4, else h5netcdf (needs h5py)."""
    try:
        import netCDF4  # noqa: F401
        return "netcdf4"
    except ImportError:
        return "h5netcdf"


def _family_options(fam) -> dict:
    """Constructor options of a family object that a name alone does not carry."""
    out = {}
    for k in ("K", "P"):
        if hasattr(fam, k) and fam.name in ("categorical", "mvn"):
            out[k] = int(getattr(fam, k))
    return out


def load_model(path):
    """Read a model written by save_model; DataError when the file is not one."""
    from .estimator import DistributionalBoosting, _Forest
    from .laws import make_law

    try:
        with xr.open_dataset(Path(path), engine=_engine()) as ds0:
            ds = ds0.load()
    except (OSError, ValueError):
        raise DataError(f"Cannot read a distviz model from {Path(path).name} (not a NetCDF file); pass a file "
                        f"written by save().") from None
    if ds.attrs.get("model_format") != FORMAT:
        raise DataError(f"{Path(path).name} is not a distviz DistributionalBoosting file (no '{FORMAT}' marker).")
    try:
        params = json.loads(ds.attrs["model_params"])
        m = DistributionalBoosting(**params)
    except (KeyError, TypeError, ValueError):
        raise DataError(f"{Path(path).name} holds damaged model parameters; save the model again with save().") from None
    fam = m._family_obj()
    m.family_ = fam
    m._law = make_law(m.law, fam, domain=m.domain)
    m.forest_ = _Forest(ds["model_init"].values, ds["model_multiplier"].values, ds["model_offsets"].values,
                        ds["model_feature"].values, ds["model_threshold"].values, ds["model_left"].values,
                        ds["model_right"].values, ds["model_value"].values.reshape(-1, len(ds["model_init"])))
    m.n_rounds_ = int(ds.attrs["model_n_rounds"])
    m.best_iteration_ = int(ds.attrs["model_best_iteration"])
    m.n_features_in_ = int(ds.attrs["model_n_features"])
    drop = [v for v in ds.data_vars if str(v).startswith("model_")]
    tr = ds.drop_vars(drop)
    tr.attrs = {k: v for k, v in ds.attrs.items() if not k.startswith("model_")}
    m.trace_ = tr
    return m
