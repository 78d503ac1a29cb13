"""One file format for every fitted estimator: NetCDF through xarray, validated before anything is used.

A model file is an ``xarray.Dataset`` written with the netCDF4 engine.  Attributes: ``distviz_schema``
(SCHEMA), ``distviz_class`` (the estimator's class name), ``distviz_params`` (constructor parameters as
JSON) and ``distviz_fitted`` (scalar fitted attributes as JSON).  Arrays live in variables named
``model_<name>``; a forest (``distviz.trees.flat.FlatForest``) under ``model_<prefix>_<field>``; an
estimator's trace keeps its own variable names.  Files hold plain numbers only: nothing is unpickled
or evaluated (JSON is parsed with json.loads), and loading checks the schema, the class, every
array's shape, dtype and finiteness, every forest (``validate_arrays``) and the parameters' ranges
before a compiled kernel sees them; any problem is a DataError naming the file and the first problem.

Nothing is read before the file's header is checked (``ModelFile``): the file's size, every variable's
declared size (shape x dtype, and its chunk's: HDF5 reads whole chunks) against
MAX_BYTES for all variables together and against the limits the class's parameters imply for the
model's own arrays (forest node arrays at most trees x nodes of a tree of depth max_depth, value
columns at most the forest's outputs), the filters (none that decompresses: HDF5's deflate filter grows
its buffer until the stream ends, past the declared chunk; save() writes no compression),
the data types (numbers and text), every text attribute's length and the nesting depth of the JSON ones
(before json.loads), and the feature count; only then is the file read, at most MAX_BYTES of it.

Usage: ``est.save(path)``; ``Estimator.load(path)``; ``distviz.persistence.load(path)`` picks the class.
This module sits below the estimators (they write and read through ``ModelWriter`` / ``ModelFile``) and
knows none of them; ``distviz.persistence`` above them maps a file's class name to its class.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Literal, NamedTuple

import numpy as np
import xarray as xr

from distviz.errors import ConfigError, DataError
from distviz.trees.flat import ARRAY_FIELDS, FlatForest

__all__ = ["MAX_BYTES", "MAX_FILE_BYTES", "SCHEMA", "ModelFile", "ModelWriter", "engine", "header_or_fail"]

SCHEMA = 2  # schema 1 was DistributionalBoosting's own "distviz.DistributionalBoosting/1" layout
_PREFIX = "model_"

#: most bytes the variables of one model file may declare together (model and trace; a chunk counts in full)
MAX_BYTES = 256 * 2**20
#: largest model file accepted: MAX_BYTES of variables plus room for attributes and metadata
MAX_FILE_BYTES = MAX_BYTES + 32 * 2**20
#: longest text attribute, and longest distviz_* / model_* attribute (JSON among them), in characters
MAX_ATTR_CHARS, MAX_JSON_CHARS = 2**20, 2**16
#: deepest nesting of brackets in a text attribute (json.loads recurses once per level)
MAX_JSON_DEPTH = 32
#: most attributes and variables a file may hold
MAX_ENTRIES = 10_000
#: largest feature count a model file may declare, and largest output count of a forest
MAX_FEATURES, MAX_OUTPUTS = 2**20, 2**16
_FILTERS_OK = {"shuffle", "fletcher32"}  # netCDF4's names of the filters read here (no compression)
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_NODE_FIELDS = ("feature", "threshold", "missing_left", "left", "right", "value")


class _Var(NamedTuple):
    """One variable as its header declares it: shape, item size in bytes (0: a type not read here), chunk, filters."""

    shape: tuple
    itemsize: int
    chunk: tuple | None
    filters: tuple


class _Header(NamedTuple):
    """What a model file declares, read without reading any variable: global attributes and variables."""

    attrs: dict
    variables: dict


def _itemsize(dtype) -> int:
    """Bytes per element of a netCDF data type: numbers and fixed text by size, variable-length text 16; other types 0."""
    if dtype is str:
        return 16
    if isinstance(dtype, np.dtype) and dtype.kind in "biufSU" and dtype.fields is None:
        return max(int(dtype.itemsize), 1)
    return 0


def _read_header(path) -> _Header:
    """Global attributes and every variable's declared shape, type, chunk and filters; reads no variable's data."""
    variables = {}
    if engine() == "netcdf4":
        import netCDF4

        with netCDF4.Dataset(str(path), "r") as nc:
            names = list(nc.ncattrs())
            if len(names) > MAX_ENTRIES or len(nc.variables) > MAX_ENTRIES:
                raise ValueError("too many entries")
            attrs = {k: nc.getncattr(k) for k in names}
            for name, v in nc.variables.items():
                ch = v.chunking()
                filt = tuple(sorted(k for k, on in v.filters().items() if on))
                dt = v.datatype  # variable-length data (text) lives uncompressed in the file: 16 bytes a pointer
                dt = str if isinstance(dt, netCDF4.VLType) or v.dtype is str else \
                    v.dtype if isinstance(dt, netCDF4.EnumType) else dt
                variables[name] = _Var(tuple(int(n) for n in v.shape), _itemsize(dt),
                                       None if ch == "contiguous" else tuple(int(n) for n in ch), filt)
    else:
        import h5netcdf

        with h5netcdf.File(str(path), "r") as h5:
            if len(h5.attrs) > MAX_ENTRIES or len(h5.variables) > MAX_ENTRIES:
                raise ValueError("too many entries")
            attrs = dict(h5.attrs)
            for name, v in h5.variables.items():
                comp = v.compression
                filt = (("zlib" if comp == "gzip" else str(comp),) if comp else ()) + \
                    (("shuffle",) if v.shuffle else ()) + (("fletcher32",) if v.fletcher32 else ())
                dt = str if getattr(v.dtype, "kind", "") == "O" else v.dtype  # object: variable-length text
                variables[name] = _Var(tuple(int(n) for n in v.shape), _itemsize(dt),
                                       None if v.chunks is None else tuple(int(n) for n in v.chunks),
                                       tuple(sorted(filt)))
    return _Header(attrs, variables)


def _json_depth(text: str) -> int:
    """Deepest bracket nesting of `text` outside JSON strings (an upper bound of json.loads' recursion)."""
    b = np.frombuffer(_JSON_STRING.sub("", text).encode("utf-8", "replace"), dtype=np.uint8)
    if b.size == 0:
        return 0
    step = np.isin(b, (ord("["), ord("{"))).astype(np.int64) - np.isin(b, (ord("]"), ord("}")))
    return int(np.cumsum(step).max(initial=0))


def _count(v, high: int = 2**40) -> int | None:
    """v as a count in [0, high] (a JSON or netCDF integer, whole floats too), else None."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
        return None
    f = float(v)
    if not (math.isfinite(f) and f == round(f) and 0 <= f <= high):
        return None
    return int(f)


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


def header_or_fail(path, name: str, writer: str) -> _Header:
    """The header of a model file no larger than MAX_FILE_BYTES; DataError (one sentence) when it cannot be read."""
    try:
        size = os.stat(Path(path)).st_size
    except (OSError, TypeError, ValueError):
        size = -1
    if size > MAX_FILE_BYTES:
        raise DataError(f"{name} is too large for a distviz model file ({size / 2**20:.0f} MiB, more than "
                        f"{MAX_FILE_BYTES // 2**20} MiB); pass a file written by {writer}.")
    try:
        if size < 0:
            raise OSError(name)
        return _read_header(path)
    except Exception:  # any reader failure (not NetCDF / HDF5, truncated, damaged) is a bad file
        raise DataError(f"Cannot read {name} as a distviz model file (not a readable NetCDF file); pass a "
                        f"file written by {writer}.") from None


class ModelWriter:
    """Collects arrays, forests and attributes of one estimator and writes them as one NetCDF file.

    An estimator's ``save`` makes one, adds its arrays (:meth:`array`) and forests (:meth:`forest`), then calls
    :meth:`write`.  The file's attributes ``distviz_schema``, ``distviz_class`` (the estimator's class name),
    ``distviz_params`` and ``distviz_fitted`` (both JSON) are set here; a pandas fit's ``feature_names_in_`` is
    stored as the array ``feature_names``.

    Parameters
    ----------
    est : estimator
        The fitted estimator (its class name and ``feature_names_in_`` are read).
    params : dict
        Constructor parameters; JSON-able after numpy scalars and tuples are converted (``ConfigError``
        otherwise).
    fitted : dict
        Scalar fitted attributes, JSON-able likewise.
    trace : xarray.Dataset or None, default=None
        The estimator's trace, copied into the file under its own variable names (a name starting with
        ``model_`` raises ``ConfigError``; its ``distviz_*`` attributes are dropped).

    Attributes
    ----------
    ds : xarray.Dataset
        The dataset being assembled, written by :meth:`write`.

    See Also
    --------
    ModelFile : Reads and checks such a file.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> from distviz.persistence import ModelWriter
    >>> class Est:
    ...     pass
    >>> w = ModelWriter(Est(), {"n_estimators": 5}, {"n_iter_": 5})
    >>> w.array("weights", np.arange(3.0))
    >>> w.write(os.path.join(tempfile.mkdtemp(), "est.nc"))
    >>> w.ds.attrs["distviz_class"], list(w.ds.data_vars)
    ('Est', ['model_weights'])
    """

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
        names = getattr(est, "feature_names_in_", None)   # the columns of a pandas X: one text per feature
        if names is not None:
            self.array("feature_names", np.asarray([str(c) for c in names], dtype=object))

    def array(self, name: str, a) -> None:
        """Store one array under the model's prefix (its dimensions are private to it).

        Parameters
        ----------
        name : str
            The array's name (stored as the variable ``model_<name>``).
        a : array-like
            The array, of any shape; float64 stays float64.

        Returns
        -------
        None
        """
        a = np.asarray(a)
        self.ds[_PREFIX + name] = (tuple(f"{_PREFIX}{name}_{i}" for i in range(a.ndim)), a)

    def forest(self, prefix: str, f: FlatForest) -> None:
        """Store a FlatForest's arrays and sizes.

        Parameters
        ----------
        prefix : str
            Name prefix of the forest's arrays and attributes (a model may hold several forests).
        f : FlatForest
            The compiled forest.

        Returns
        -------
        None
        """
        for k, a in f.arrays().items():
            self.array(f"{prefix}_{k}", a)
        self.ds.attrs[f"{_PREFIX}{prefix}_n_features"] = int(f.n_features)
        self.ds.attrs[f"{_PREFIX}{prefix}_n_outputs"] = int(f.n_outputs)
        self.ds.attrs[f"{_PREFIX}{prefix}_float32_input"] = int(f.float32_input)

    def write(self, path) -> None:
        """Write the file (float64 kept as float64, so a loaded model predicts bit-identically).

        Parameters
        ----------
        path : str or path-like
            The NetCDF file to write; an existing file is replaced.

        Returns
        -------
        None

        Raises
        ------
        ConfigError
            When the arrays exceed ``MAX_BYTES``, the most a model file may hold (it could not be loaded).
        """
        if self.ds.nbytes > MAX_BYTES:
            raise ConfigError(f"the model's arrays and trace take {self.ds.nbytes / 2**20:.0f} MiB, more than the "
                              f"{MAX_BYTES // 2**20} MiB a model file may hold; fit with a smaller trace (trace_rows) "
                              f"or fewer rounds to save it.")
        self.ds.to_netcdf(Path(path), engine=engine())


class ModelFile:
    """A model file opened for loading: every read is checked, every problem a DataError naming the file.

    The header is checked before any variable is read (see the module docstring): a file declaring more
    than its class's parameters imply, or more than MAX_BYTES in all, is refused unread.  Opening checks the
    file's size, the schema version (SCHEMA), the class name, every text attribute's length and JSON nesting,
    the declared sizes, data types and filters of the variables, then parses ``distviz_params`` and
    ``distviz_fitted`` with json.loads and reads the whole file into memory.  An estimator's ``load`` then takes
    what it needs through :meth:`value`, :meth:`array`, :meth:`forest`, :meth:`feature_names`,
    :meth:`construct` and :meth:`trace`, each of which checks what it returns.

    Parameters
    ----------
    path : str or path-like
        The file, as written by :class:`ModelWriter`.
    cls_name : str
        The estimator class the file must hold (its ``distviz_class`` attribute).

    Attributes
    ----------
    name : str
        The file's name (no folder), used in every error message.
    cls_name : str
        As given.
    params : dict
        The constructor parameters read from ``distviz_params`` (not yet range-checked: see :meth:`construct`).
    fitted : dict
        The scalar fitted attributes read from ``distviz_fitted`` (checked one by one by :meth:`value`).
    ds : xarray.Dataset
        The file's contents, loaded into memory.

    Raises
    ------
    DataError
        When the file cannot be read or fails a check; one sentence naming the file and the first problem.

    See Also
    --------
    ModelWriter : Writes such a file.
    distviz.persistence.load : Opens any model file with its estimator class.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> from distviz.persistence import ModelFile, ModelWriter
    >>> class Est:
    ...     pass
    >>> path = os.path.join(tempfile.mkdtemp(), "est.nc")
    >>> w = ModelWriter(Est(), {"n_estimators": 5}, {"n_iter_": 5})
    >>> w.array("weights", np.arange(3.0))
    >>> w.write(path)
    >>> f = ModelFile(path, "Est")
    >>> f.params, f.value("n_iter_", int, low=0), f.array("weights", shape=(3,)).tolist()
    ({'n_estimators': 5}, 5, [0.0, 1.0, 2.0])
    >>> ModelFile(path, "NGB")
    Traceback (most recent call last):
    ...
    distviz.errors.DataError: est.nc is not a usable NGB model file: it holds a Est, not a NGB; ...
    """

    def __init__(self, path, cls_name: str):
        """Check the header of `path` (schema, class, sizes, attributes), then read it; DataError on any problem."""
        self.name = Path(str(path)).name
        self.cls_name = cls_name
        head = header_or_fail(path, self.name, f"{cls_name}.save()")
        attrs = head.attrs
        schema = attrs.get("distviz_schema")
        if schema is None and attrs.get("model_format") is not None:
            raise self.fail(f"it was written by an older distviz ({attrs.get('model_format')!s:.60})")
        if not (isinstance(schema, (int, np.integer)) and not isinstance(schema, (bool, np.bool_))
                and int(schema) == SCHEMA):
            raise self.fail(f"its schema version is {str(schema)[:20]!r}, not {SCHEMA}")
        found = attrs.get("distviz_class")
        if not isinstance(found, str) or found != cls_name:
            raise self.fail(f"it holds a {str(found)[:40]}, not a {cls_name}")
        self._check_attrs(attrs)
        self.params = self._json(attrs, "distviz_params")
        self.fitted = self._json(attrs, "distviz_fitted")
        self._check_sizes(head)
        try:
            with xr.open_dataset(Path(path), engine=engine()) as ds0:
                self.ds = ds0.load()
        except Exception:  # a variable the header promised cannot be read (damaged data, an unknown filter)
            raise self.fail("its data cannot be read (the file is damaged)") from None

    def _check_attrs(self, attrs: dict) -> None:
        """Text attributes short and shallow (before any json.loads), counts of features and outputs in range."""
        for k, v in attrs.items():
            if isinstance(v, str):
                cap = MAX_JSON_CHARS if str(k).startswith(("distviz_", _PREFIX)) else MAX_ATTR_CHARS
                if len(v) > cap:
                    raise self.fail(f"the attribute {str(k)[:60]} holds {len(v)} characters, more than {cap}")
                if _json_depth(v) > MAX_JSON_DEPTH:
                    raise self.fail(f"the attribute {str(k)[:60]} nests deeper than {MAX_JSON_DEPTH} levels")
            elif np.size(v) > MAX_ATTR_CHARS // 8:
                raise self.fail(f"the attribute {str(k)[:60]} holds {np.size(v)} values")
            if str(k).startswith(_PREFIX) and str(k).endswith("_n_features") and _count(v, MAX_FEATURES) is None:
                raise self.fail(f"the attribute {str(k)[:60]} is not a feature count in [0, {MAX_FEATURES}]")
            if str(k).startswith(_PREFIX) and str(k).endswith("_n_outputs") and _count(v, MAX_OUTPUTS) is None:
                raise self.fail(f"the attribute {str(k)[:60]} is not an output count in [0, {MAX_OUTPUTS}]")

    def _check_sizes(self, head: _Header) -> None:
        """Every variable's declared size (and chunk) within the class's limits and, all together, MAX_BYTES."""
        fitted_p = self.fitted.get("n_features")
        if fitted_p is not None and _count(fitted_p, MAX_FEATURES) is None:
            raise self.fail(f"its feature count {str(fitted_p)[:24]} is not a whole number up to {MAX_FEATURES}")
        limits = self._limits(head)
        total = 0
        for name, v in head.variables.items():
            shown = str(name)[:60]
            if v.itemsize == 0:
                raise self.fail(f"the variable {shown} has a data type other than numbers or text")
            n = math.prod(v.shape)
            lim = limits.get(str(name))
            if lim is not None:
                bad = n > lim[0] or any(d > m for d, m in zip(v.shape, lim[1]))
                if bad:
                    raise self.fail(f"the variable {shown} declares shape {v.shape}, more than its parameters allow "
                                    f"({lim[2]})")
            cost = max(n, math.prod(v.chunk) if v.chunk else 0) * v.itemsize
            if cost > MAX_BYTES:
                what = "its chunks declare" if cost > n * v.itemsize else "it declares"
                raise self.fail(f"the variable {shown} is too large ({what} {cost / 2**20:.0f} MiB, more than "
                                f"the {MAX_BYTES // 2**20} MiB a model file may hold)")
            if v.chunk and len(v.chunk) != len(v.shape):
                raise self.fail(f"the variable {shown} has chunks of another rank than its shape")
            if set(v.filters) - _FILTERS_OK:  # a deflate stream can inflate past its chunk (HDF5 grows the buffer)
                raise self.fail(f"the variable {shown} is compressed ({'/'.join(sorted(set(v.filters) - _FILTERS_OK))}), "
                                f"and model files are read uncompressed only")
            total += cost
        if total > MAX_BYTES:
            raise self.fail(f"its variables declare {total / 2**20:.0f} MiB together, more than the "
                            f"{MAX_BYTES // 2**20} MiB a model file may hold")

    def _limits(self, head: _Header) -> dict:
        """Per model variable: (most elements, most size per dimension, why), from the class's parameters.

        A forest (an attribute ``model_<prefix>_n_outputs``) of R rounds with at most T trees a round, each
        of depth at most max_depth, holds at most R x T trees of 2**(max_depth + 1) - 1 nodes and value rows
        of its n_outputs columns; its other arrays follow from the tree and round counts.  The estimator's
        other model arrays hold at most (R + 1) x T x n_outputs values, its feature names (``model_feature_names``)
        one text per fitted feature.  A count the file does not give
        (or gives out of range) leaves only MAX_BYTES; the estimator's own checks then refuse the file.
        """
        params, fitted, attrs = self.params, self.fitted, head.attrs
        depth = _count(params.get("max_depth"), 30)
        npt = None if depth is None else 2 ** (depth + 1) - 1
        big = 2**62
        out: dict = {}
        other = 0
        for key, v in attrs.items():
            k = str(key)
            if not (k.startswith(_PREFIX) and k.endswith("_n_outputs")):
                continue
            prefix = k[len(_PREFIX):-len("_n_outputs")]
            K = _count(v, MAX_OUTPUTS) or 1
            own = attrs.get(f"{_PREFIX}{prefix[:-len('forest')]}fitted") if prefix.endswith("forest") else None
            try:
                own_rounds = json.loads(own).get("n_iter") if isinstance(own, str) else None
            except (ValueError, AttributeError):
                own_rounds = None
            R = next((c for c in (_count(own_rounds), _count(fitted.get("n_iter")), _count(fitted.get("n_rounds")),
                                  _count(params.get("n_estimators")), _count(params.get("n_rounds")))
                      if c is not None), None)   # n_rounds: the name before issue 28
            per_round = max(K, _count(params.get("n_particles")) or 1)
            T = big if R is None else max(R, 1) * per_round
            nodes = big if npt is None else T * npt
            why = f"{'?' if R is None else R} rounds of at most {per_round} trees of depth {'?' if depth is None else depth}"
            for f in _NODE_FIELDS:
                out[f"{_PREFIX}{prefix}_{f}"] = (nodes * (K if f == "value" else 1), (nodes, K), why)
            for f, n in (("tree_offsets", T + 1), ("multiplier", T), ("out_col", T),
                         ("round_offsets", big if R is None else R + 1)):
                out[f"{_PREFIX}{prefix}_{f}"] = (n, (n,), why)
            other = max(other, big if R is None else (R + 2) * per_round * K)
        p = _count(fitted.get("n_features"), MAX_FEATURES)
        out[f"{_PREFIX}feature_names"] = (0 if p is None else p, (0 if p is None else p,), "its feature count")
        if other:
            for name in head.variables:
                if str(name).startswith(_PREFIX) and str(name) not in out:
                    out[str(name)] = (other, (), "the rounds, trees and outputs of its forests")
        return out

    def fail(self, problem: str) -> DataError:
        """The DataError for a problem of this file (naming the file, the class and the fix).

        Parameters
        ----------
        problem : str
            What is wrong, e.g. "the variable model_init is missing".

        Returns
        -------
        DataError
            To be raised by the caller.
        """
        return DataError(f"{self.name} is not a usable {self.cls_name} model file: {problem}; save the model "
                         f"again with {self.cls_name}.save().")

    def _json(self, attrs: dict, key: str) -> dict:
        raw = attrs.get(key)
        if not isinstance(raw, str):
            raise self.fail(f"the attribute {key} is missing")
        try:
            out = json.loads(raw)  # short and shallow: checked by _check_attrs
        except (ValueError, RecursionError):
            raise self.fail(f"the attribute {key} is not valid JSON") from None
        if not isinstance(out, dict):
            raise self.fail(f"the attribute {key} is not a JSON object")
        return out

    def value(self, key: str, kind: type, low=None, high=None):
        """A fitted scalar from the file's ``distviz_fitted`` attribute, checked.

        Parameters
        ----------
        key : str
            The fitted value's name.
        kind : {int, float, str, bool}
            Its type (an int is accepted for a float).
        low, high : float or None, default=None
            Inclusive bounds of a number (None: unbounded).

        Returns
        -------
        int, float, str or bool

        Raises
        ------
        DataError
            When the value is missing, of another type, not finite or out of range.
        """
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
        """A stored array, checked for dtype kind, shape and finiteness.

        Parameters
        ----------
        name : str
            The array's name as given to ``ModelWriter.array``.
        shape : tuple of int or None, or None, default=None
            The expected shape (None entries: any size); None: any shape.
        kind : str, default="f"
            The accepted numpy dtype kinds (e.g. "f", "iu").
        finite : bool, default=True
            Whether a float array must be finite.

        Returns
        -------
        ndarray
            A float64 or int64 copy.

        Raises
        ------
        DataError
            When the array is missing or has another dtype kind or shape, or holds NaN / inf.
        """
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
        """A validated FlatForest (child ids forward in their tree, feature ids in range, finite values).

        Parameters
        ----------
        prefix : str
            The forest's name prefix as given to ``ModelWriter.forest``.
        n_features : int
            The features the forest must split on.
        n_outputs : int
            The outputs it must predict.

        Returns
        -------
        FlatForest

        Raises
        ------
        DataError
            When an array or attribute is missing, of another dtype, or the forest is malformed or of other sizes.
        """
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

    def feature_names(self, n_features: int):
        """The fit's feature names.

        Parameters
        ----------
        n_features : int
            The number of features of the fit.

        Returns
        -------
        ndarray of object, shape (n_features,), or None
            The names as texts, or None when the fit had none.

        Raises
        ------
        DataError
            When the stored names are not n_features texts.
        """
        var = f"{_PREFIX}feature_names"
        if var not in self.ds.variables:
            return None
        a = np.asarray(self.ds[var].values)
        if a.shape != (n_features,) or not all(isinstance(s, str) for s in a.tolist()):
            raise self.fail(f"its feature_names are not {n_features} texts")
        return a.astype(object)

    def construct(self, cls, params: dict, check=None, **extra):
        """The estimator of the stored parameters: ``cls(**params, **extra)``, then ``check(est)``.

        Parameters
        ----------
        cls : type
            The estimator class.
        params : dict
            Constructor parameters read from the file.
        check : callable or None, default=None
            Called with the new estimator (its own range checks, e.g. ``_validate_params``).
        **extra
            Further constructor arguments (e.g. a family or target object).

        Returns
        -------
        estimator
            An unfitted instance of ``cls``.

        Raises
        ------
        DataError
            When the parameters do not fit the class or fail its checks.
        """
        try:
            est = cls(**params, **extra)
            if check is not None:
                check(est)
        except (TypeError, ValueError, ConfigError) as e:
            detail = str(e).split("\n")[0][:160].rstrip(".") if isinstance(e, ConfigError) else "they do not fit"
            raise self.fail(f"its parameters are invalid ({detail})") from None
        return est

    def trace(self) -> xr.Dataset:
        """The stored trace: every variable and attribute that is not the model's.

        Returns
        -------
        xarray.Dataset
        """
        drop = [v for v in self.ds.variables if str(v).startswith(_PREFIX)]
        tr = self.ds.drop_vars(drop)
        tr.attrs = {k: v for k, v in self.ds.attrs.items() if not str(k).startswith(("distviz_", _PREFIX))}
        return tr
