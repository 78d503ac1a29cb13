"""A processed GDP table (``distviz data gdp``'s Parquet directory) read part by part on a Dask cluster.

:class:`ClusterDrifterTable` never reads the table into the client: one task per Parquet part (run where the
part is read, on the workers of the current ``dask.distributed`` client) returns the part's drifter ids with
their row counts and the lon / lat range; the by-drifter split is then made on the client from the ids alone
(:func:`distviz.data.drifters.split_ids`, the same sets as ``split_by_id`` on the loaded rows), the training
rows of a set of drifters become dask arrays whose chunks are those parts' rows (:meth:`arrays`), and only
the rows a caller asks for (validation and test) are gathered into a ``DrifterData`` (:meth:`load`).

Each part's rows are the in-memory loader's (:func:`distviz.data.gdp_archive.read_gdp_table`): the same
columns, NaN rows dropped, the bounding box applied, velocities checked, rows sorted by drifter and time.
The workers must see the table's directory (a shared file system), as for ``write_gdp_table``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from distviz.data.drifters import FEATURES, DrifterData, check_velocities, summary_tail, usable_rows
from distviz.errors import DataError

__all__ = ["ClusterDrifterTable", "is_processed_table"]


def is_processed_table(source) -> bool:
    """True when `source` is a path to a directory written by ``distviz data gdp`` (its marker file is there)."""
    from distviz.data.gdp_archive import MARKER

    if not isinstance(source, (str, Path)):
        return False
    p = Path(source)
    return p.is_dir() and (p / MARKER).exists()


def _part_columns(path: str, bbox) -> tuple[dict[str, np.ndarray], list[str], int]:
    """The usable rows of one Parquet part as float64 columns (present features, u, v, lon, lat, id, t),
    the present features and the number of rows dropped for NaN."""
    import pandas as pd

    from distviz.data.gdp_archive import table_columns

    name = Path(path).parent.name
    try:
        df = pd.read_parquet(path)
    except Exception:  # pyarrow raises many kinds of errors for damaged files
        raise DataError(f"Could not read {Path(path).name} of the Parquet table {name}; write it again with "
                        f"'distviz data gdp'.") from None
    cols, present = table_columns(df, name)
    ok, n_nan = usable_rows(cols, present, bbox)
    out = {c: v[ok] for c, v in cols.items()}
    order = np.lexsort((out["t"], out["id"]))
    out = {c: v[order] for c, v in out.items()}
    check_velocities(np.column_stack([out["u"], out["v"]]), f"the table {name}")
    return out, present, n_nan


def _part_summary(path: str, bbox) -> dict:
    """One part's drifter ids with their row counts, lon / lat range, present features and NaN rows dropped."""
    cols, present, n_nan = _part_columns(path, bbox)
    ids, counts = np.unique(cols["id"].astype(np.int64), return_counts=True)
    rng = [float(cols[c].min()) if ids.size else np.inf for c in ("lon", "lat")]
    rng += [float(cols[c].max()) if ids.size else -np.inf for c in ("lon", "lat")]
    return {"ids": ids, "counts": counts, "range": rng, "features": present, "nan": n_nan}


def _part_xy(path: str, bbox, ids: np.ndarray, y_scale: float) -> tuple[np.ndarray, np.ndarray]:
    """Features X (m, p) and velocities Y (m, 2) times y_scale of one part's rows whose drifter is in ids (sorted)."""
    cols, present, _ = _part_columns(path, bbox)
    keep = np.isin(cols["id"].astype(np.int64), ids)
    X = np.column_stack([cols[f][keep] for f in present])
    Y = np.column_stack([cols["u"][keep], cols["v"][keep]]) * y_scale
    return X, Y


def _part_rows(path: str, bbox, ids: np.ndarray) -> dict[str, np.ndarray]:
    """All columns of one part's rows whose drifter is in ids (sorted)."""
    cols, _, _ = _part_columns(path, bbox)
    keep = np.isin(cols["id"].astype(np.int64), ids)
    return {c: v[keep] for c, v in cols.items()}


class ClusterDrifterTable:
    """A processed GDP table whose rows stay in its Parquet parts: ids and counts on the client, rows on the workers."""

    def __init__(self, path, *, bbox=None):
        """Summarise every part in one task each (on the current dask client's workers when there is one)."""
        import dask

        from distviz.data.gdp_archive import _require

        _require("Reading a processed GDP table (Parquet) on a Dask cluster", archive=False)
        self.path = Path(path)
        if not is_processed_table(self.path):
            raise DataError(f"{self.path.name} is not a table written by 'distviz data gdp'; give its output directory.")
        self.parts = [str(p) for p in sorted(self.path.glob("part-*.parquet"))]
        if not self.parts:
            raise DataError(f"The table {self.path.name} holds no rows; run 'distviz data gdp' again with a wider "
                            f"box or dates.")
        self.bbox = None if bbox is None else tuple(float(v) for v in bbox)
        task = dask.delayed(_part_summary, pure=True)
        self._summaries = list(dask.compute(*[task(p, self.bbox) for p in self.parts]))
        feats = {tuple(s["features"]) for s in self._summaries}
        if len(feats) > 1:
            raise DataError(f"The parts of the table {self.path.name} hold different columns; write it again with "
                            f"'distviz data gdp'.")
        self.feature_names = feats.pop()
        self.absent_features = tuple(f for f in FEATURES if f not in self.feature_names)
        self.ids = np.unique(np.concatenate([s["ids"] for s in self._summaries]))
        self.n_rows = int(sum(int(s["counts"].sum()) for s in self._summaries))
        self.n_dropped_nan = int(sum(s["nan"] for s in self._summaries))
        if self.n_rows == 0:
            raise DataError(f"The table {self.path.name} has no usable rows (NaN or outside the box); check the "
                            f"bounding box.")
        r = np.array([s["range"] for s in self._summaries])
        self.lon_range = (float(r[:, 0].min()), float(r[:, 2].max()))
        self.lat_range = (float(r[:, 1].min()), float(r[:, 3].max()))

    @property
    def n_drifters(self) -> int:
        """Number of distinct drifter ids."""
        return int(self.ids.size)

    def summary(self) -> str:
        """One sentence like DrifterData.summary, from the parts' counts."""
        s = (f"drifter data from {self.path.name} (read on the cluster, {len(self.parts)} parts): {self.n_rows} "
             f"daily rows of {self.n_drifters} drifters, {len(self.feature_names)} features "
             f"({', '.join(self.feature_names)})")
        return s + summary_tail(self.absent_features, self.n_dropped_nan)

    def arrays(self, ids, *, y_scale: float = 1.0):
        """Dask arrays X (n, p) and Y (n, 2) * y_scale of the drifters `ids`: one chunk per part that holds any.

        Each chunk is read and filtered on the worker that computes it; the client holds only the counts.
        """
        import dask
        import dask.array as da

        ids = np.unique(np.asarray(ids, dtype=np.int64))
        p = len(self.feature_names)
        xs, ys = [], []
        for path, s in zip(self.parts, self._summaries):
            m = int(s["counts"][np.isin(s["ids"], ids)].sum())
            if m == 0:
                continue
            part = dask.delayed(_part_xy, pure=True, nout=2)(path, self.bbox, ids, float(y_scale))
            xs.append(da.from_delayed(part[0], shape=(m, p), dtype=np.float64))
            ys.append(da.from_delayed(part[1], shape=(m, 2), dtype=np.float64))
        if not xs:
            raise DataError(f"None of the given drifters has rows in the table {self.path.name}.")
        return da.concatenate(xs), da.concatenate(ys)

    def load(self, ids) -> DrifterData:
        """The rows of the drifters `ids` gathered into memory, sorted by drifter and time (as read_gdp_table's)."""
        import dask

        ids = np.unique(np.asarray(ids, dtype=np.int64))
        task = dask.delayed(_part_rows, pure=True)
        wanted = [path for path, s in zip(self.parts, self._summaries) if np.isin(s["ids"], ids).any()]
        got = dask.compute(*[task(path, self.bbox, ids) for path in wanted])
        if not got:
            raise DataError(f"None of the given drifters has rows in the table {self.path.name}.")
        cols = {c: np.concatenate([g[c] for g in got]) for c in got[0]}
        order = np.lexsort((cols["t"], cols["id"]))
        cols = {c: v[order] for c, v in cols.items()}
        X = np.column_stack([cols[f] for f in self.feature_names])
        return DrifterData(X, np.column_stack([cols["u"], cols["v"]]), cols["lon"], cols["lat"],
                           cols["id"].astype(np.int64), cols["t"], tuple(self.feature_names), self.absent_features,
                           self.n_dropped_nan, self.path.name)
