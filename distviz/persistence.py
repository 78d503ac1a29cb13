"""One file format for every fitted estimator: NetCDF through xarray, validated before anything is used.

A model file is an ``xarray.Dataset`` written with the netCDF4 engine.  Attributes: ``distviz_schema``
(SCHEMA), ``distviz_class`` (the estimator's class name), ``distviz_params`` (constructor parameters as
JSON) and ``distviz_fitted`` (scalar fitted attributes as JSON).  Arrays live in variables named
``model_<name>``; a forest (``distviz.trees.flat.FlatForest``) under ``model_<prefix>_<field>``; an
estimator's trace keeps its own variable names.  Files hold plain numbers only: nothing is unpickled
or evaluated (JSON is parsed with json.loads), and loading checks the schema, the class, every
array's shape, dtype and finiteness, every forest (``validate_arrays``) and the parameters' ranges
before a compiled kernel sees them; any problem is a DataError naming the file and the first problem.

Usage: ``est.save(path)``; ``Estimator.load(path)``; ``distviz.persistence.load(path)`` picks the class.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

import numpy as np
import xarray as xr

from distviz._optional import missing
from distviz.errors import ConfigError, DataError
from distviz.trees.flat import ARRAY_FIELDS, FlatForest

__all__ = ["SCHEMA", "ModelFile", "engine", "load", "save"]

SCHEMA = 2  # schema 1 was DistributionalBoosting's own "distviz.DistributionalBoosting/1" layout
_PREFIX = "model_"


def engine() -> Literal["netcdf4", "h5netcdf"]:
    """The NetCDF4 backend available here: netCDF4, else h5netcdf (needs h5py)."""
    try:
        import netCDF4  # noqa: F401
        return "netcdf4"
    except ImportError:
        return "h5netcdf"


def _jsonable(v):
    """A parameter value as plain JSON (numpy scalars and tuples converted); ConfigError when impossible."""
    if isinstance(v, (np.bool_, bool)):
        return bool(v)
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating):
        return float(v)
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if v is None or isinstance(v, (int, float, str)):
        return v
    raise ConfigError(f"a parameter value of type {type(v).__name__} cannot be saved; pass names and numbers "
                      f"as estimator parameters to save the model.")


class ModelWriter:
    """Collects arrays, forests and attributes of one estimator and writes them as one NetCDF file."""

    def __init__(self, est, params: dict, fitted: dict, trace: xr.Dataset | None = None):
        """`params` are constructor parameters, `fitted` scalar fitted attributes (both JSON-able)."""
        self.ds = trace.copy() if trace is not None else xr.Dataset()
        for v in list(self.ds.data_vars) + list(self.ds.coords):
            if str(v).startswith(_PREFIX):
                raise ConfigError(f"the trace variable {v} clashes with the model's names; rename it before saving.")
        self.ds.attrs = {k: v for k, v in self.ds.attrs.items() if not str(k).startswith("distviz_")}
        self.ds.attrs.update({"distviz_schema": SCHEMA, "distviz_class": type(est).__name__,
                              "distviz_params": json.dumps(_jsonable(params)),
                              "distviz_fitted": json.dumps(_jsonable(fitted))})

    def array(self, name: str, a) -> None:
        """Store one array (its dimensions are private to it)."""
        a = np.asarray(a)
        self.ds[_PREFIX + name] = (tuple(f"{_PREFIX}{name}_{i}" for i in range(a.ndim)), a)

    def forest(self, prefix: str, f: FlatForest) -> None:
        """Store a FlatForest's arrays and sizes."""
        for k, a in f.arrays().items():
            self.array(f"{prefix}_{k}", a)
        self.ds.attrs[f"{_PREFIX}{prefix}_n_features"] = int(f.n_features)
        self.ds.attrs[f"{_PREFIX}{prefix}_n_outputs"] = int(f.n_outputs)
        self.ds.attrs[f"{_PREFIX}{prefix}_float32_input"] = int(f.float32_input)

    def write(self, path) -> None:
        """Write the file (float64 kept as float64, so a loaded model predicts bit-identically)."""
        self.ds.to_netcdf(Path(path), engine=engine())


class ModelFile:
    """A model file opened for loading: every read is checked, every problem a DataError naming the file."""

    def __init__(self, path, cls_name: str):
        """Open and fully read `path`; check the schema and that it holds a `cls_name`."""
        self.name = Path(str(path)).name
        self.cls_name = cls_name
        try:
            with xr.open_dataset(Path(path), engine=engine()) as ds0:
                self.ds = ds0.load()
        except Exception:  # any reader failure (not NetCDF / HDF5, truncated, damaged) is a bad file
            raise DataError(f"Cannot read {self.name} as a distviz model file (not a readable NetCDF file); pass a "
                            f"file written by {cls_name}.save().") from None
        schema = self.ds.attrs.get("distviz_schema")
        if schema is None and self.ds.attrs.get("model_format") is not None:
            raise self.fail(f"it was written by an older distviz ({self.ds.attrs.get('model_format')!s:.60})")
        if not (isinstance(schema, (int, np.integer)) and int(schema) == SCHEMA):
            raise self.fail(f"its schema version is {str(schema)[:20]!r}, not {SCHEMA}")
        found = self.ds.attrs.get("distviz_class")
        if found != cls_name:
            raise self.fail(f"it holds a {str(found)[:40]}, not a {cls_name}")
        self.params = self._json("distviz_params")
        self.fitted = self._json("distviz_fitted")

    def fail(self, problem: str) -> DataError:
        """The DataError for the first problem found."""
        return DataError(f"{self.name} is not a usable {self.cls_name} model file: {problem}; save the model "
                         f"again with {self.cls_name}.save().")

    def _json(self, key) -> dict:
        raw = self.ds.attrs.get(key)
        if not isinstance(raw, str):
            raise self.fail(f"the attribute {key} is missing")
        try:
            out = json.loads(raw)
        except ValueError:
            raise self.fail(f"the attribute {key} is not valid JSON") from None
        if not isinstance(out, dict):
            raise self.fail(f"the attribute {key} is not a JSON object")
        return out

    def value(self, key: str, kind: type, low=None, high=None):
        """A fitted scalar from distviz_fitted: an int / float / str / bool in [low, high]."""
        v = self.fitted.get(key)
        ok = isinstance(v, kind) and not (kind in (int, float) and isinstance(v, bool))
        if kind is float and isinstance(v, int) and not isinstance(v, bool):
            v, ok = float(v), True
        if ok and kind in (int, float):
            ok = bool(np.isfinite(v)) and (low is None or v >= low) and (high is None or v <= high)  # type: ignore[arg-type]
        if not ok:
            raise self.fail(f"the fitted value {key} is missing or out of range")
        return v

    def array(self, name: str, shape=None, kind: str = "f", finite: bool = True) -> np.ndarray:
        """A stored array with the given dtype kind(s) and shape (None entries: any size); float64 / int64 copy."""
        var = _PREFIX + name
        if var not in self.ds.variables:
            raise self.fail(f"the variable {var} is missing")
        a = np.asarray(self.ds[var].values)
        if a.dtype.kind not in kind:
            raise self.fail(f"the variable {var} has dtype {a.dtype}")
        if shape is not None and (a.ndim != len(shape) or any(s is not None and s != t for s, t in zip(shape, a.shape))):
            want = "(" + ", ".join("any" if s is None else str(s) for s in shape) + ")"
            raise self.fail(f"the variable {var} has shape {a.shape}, not {want}")
        if a.dtype.kind == "f":
            a = a.astype(np.float64)
            if finite and not np.isfinite(a).all():
                raise self.fail(f"the variable {var} holds NaN or infinite values")
        elif a.dtype.kind in "iu":
            a = a.astype(np.int64)
        return a

    def forest(self, prefix: str, n_features: int, n_outputs: int) -> FlatForest:
        """A validated FlatForest (child ids forward in their tree, feature ids in range, finite values)."""
        arrays = {}
        for k, kinds in ARRAY_FIELDS.items():
            var = f"{_PREFIX}{prefix}_{k}"
            if var not in self.ds.variables:
                raise self.fail(f"the variable {var} is missing")
            a = np.asarray(self.ds[var].values)
            if a.dtype.kind not in kinds:
                raise self.fail(f"the variable {var} has dtype {a.dtype}")
            arrays[k] = a
        attrs = {}
        for k in ("n_features", "n_outputs", "float32_input"):
            v = self.ds.attrs.get(f"{_PREFIX}{prefix}_{k}")
            if not isinstance(v, (int, np.integer)) or isinstance(v, (bool, np.bool_)):
                raise self.fail(f"the attribute {_PREFIX}{prefix}_{k} is missing or not an integer")
            attrs[k] = int(v)
        if attrs["n_features"] != n_features or attrs["n_outputs"] != n_outputs:
            raise self.fail(f"the forest {prefix} has {attrs['n_features']} features and {attrs['n_outputs']} "
                            f"outputs, not {n_features} and {n_outputs}")
        if attrs["float32_input"] not in (0, 1):
            raise self.fail(f"the attribute {_PREFIX}{prefix}_float32_input is neither 0 nor 1")
        try:
            return FlatForest.from_arrays(arrays, n_features, n_outputs, bool(attrs["float32_input"]))
        except DataError as e:
            raise self.fail(f"in forest {prefix}, {e}") from None

    def construct(self, cls, params: dict, check=None, **extra):
        """cls(**params, **extra), then `check(est)` (the estimator's own range checks); DataError on failure."""
        try:
            est = cls(**params, **extra)
            if check is not None:
                check(est)
        except (TypeError, ValueError, ConfigError) as e:
            detail = str(e).split("\n")[0][:160].rstrip(".") if isinstance(e, ConfigError) else "they do not fit"
            raise self.fail(f"its parameters are invalid ({detail})") from None
        return est

    def trace(self) -> xr.Dataset:
        """The stored trace: every variable and attribute that is not the model's."""
        drop = [v for v in self.ds.variables if str(v).startswith(_PREFIX)]
        tr = self.ds.drop_vars(drop)
        tr.attrs = {k: v for k, v in self.ds.attrs.items() if not str(k).startswith(("distviz_", _PREFIX))}
        return tr


def _classes() -> dict:
    """The estimator classes that save files, by name (imported here, never from a name read in a file)."""
    from distviz.boosting.estimator import DistributionalBoosting
    from distviz.boosting.ngboost import GB, NGB, IndepNGB, NGBoost, skGB
    from distviz.boosting.wgboost import WGBoost

    classes = {c.__name__: c for c in (DistributionalBoosting, NGBoost, NGB, GB, IndepNGB, skGB, WGBoost)}
    try:
        from distviz.gp.model import SparseGP
    except ModuleNotFoundError:  # the sparse GP is the [gp] extra; load() says so for a SparseGP file
        return classes
    return {**classes, "SparseGP": SparseGP}


def save(est, path) -> None:
    """Write a fitted estimator to `path` (calls its own save)."""
    est.save(path)


def load(path):
    """Load any distviz model file, choosing the estimator class from the file's distviz_class attribute."""
    name = Path(str(path)).name
    try:
        with xr.open_dataset(Path(path), engine=engine()) as ds:
            cls_name = ds.attrs.get("distviz_class")
    except Exception:
        raise DataError(f"Cannot read {name} as a distviz model file (not a readable NetCDF file); pass a file "
                        f"written by an estimator's save().") from None
    classes = _classes()
    if cls_name == "SparseGP" and cls_name not in classes:
        raise missing("autograd", f"Loading {name} (a SparseGP model file)")
    if cls_name not in classes:
        raise DataError(f"{name} is not a distviz model file (it names no known estimator); pass a file written by "
                        f"an estimator's save().")
    return classes[cls_name].load(path)
