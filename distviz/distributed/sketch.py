"""Bin edges of a chunked feature matrix from a distributed quantile sketch (no row leaves its worker).

Each chunk summarises every feature where the chunk lives: its quantiles at k / max_bins of the
non-missing values, their number, their maximum and whether NaN occurs.  The client merges the
summaries, weighted by the chunks' counts, with dask's own ``merge_percentiles``; the edges are the
distinct merged quantiles below the feature's maximum (the rule of ``distviz.trees.Binner`` on a
subsample), and features holding NaN get the missing-value bin.  With given edges
(``Binner.from_edges``) a distributed fit bins exactly as an in-memory one.
"""

from __future__ import annotations

import numpy as np

from distviz.errors import ConfigError, DataError
from distviz.trees import Binner

__all__ = ["fit_binner", "sketch_binner"]


def chunk_summary(X, q):
    """Per feature of one chunk (m, p): (quantiles at q percent of the non-NaN values, count, max, has NaN)."""
    out = []
    for f in range(X.shape[1]):
        v = X[:, f]
        ok = ~np.isnan(v)
        v = v[ok] if not ok.all() else v
        out.append((np.percentile(v, q) if v.size else np.full(q.size, np.nan), int(v.size),
                    float(v.max()) if v.size else -np.inf, bool(not ok.all())))
    return out


def sketch_binner(X, max_bins) -> Binner:
    """A fitted Binner for the dask array X (n, p) from per-chunk quantile summaries merged on the client."""
    import dask
    from dask.array.percentile import merge_percentiles

    if isinstance(max_bins, str) or not (isinstance(max_bins, (int, np.integer)) and 2 <= max_bins <= 65536):
        raise ConfigError(f"max_bins must be an integer in [2, 65536] for a fit on a dask array, got {max_bins!r}.")
    q = 100.0 * np.arange(1, int(max_bins)) / int(max_bins)
    qfine = np.linspace(0.0, 100.0, 4 * int(max_bins) + 1)   # each chunk's summary: 4x finer than the bins
    parts = [dask.delayed(chunk_summary)(b, qfine) for b in X.to_delayed(optimize_graph=False).ravel()]
    summaries = dask.compute(*parts, optimize_graph=False)   # unoptimised: the same task keys as the fit sends
    edges, has_missing = [], []
    for f in range(X.shape[1]):
        s = [c[f] for c in summaries if c[f][1] > 0]
        has_missing.append(any(c[f][3] for c in summaries))
        if not s:
            edges.append(np.zeros(0))
            continue
        e = merge_percentiles(q, [qfine] * len(s), [c[0] for c in s], Ns=[c[1] for c in s], method="linear")
        e = np.unique(np.asarray(e, dtype=np.float64))
        edges.append(e[e < max(c[2] for c in s)])
    return Binner.from_edges(edges, max_bins=max_bins, has_missing=np.asarray(has_missing))


def fit_binner(X, max_bins, binner=None) -> Binner:
    """The bin edges of a fit on the dask array X: ``binner`` (a fitted Binner, checked against X's columns) when
    given, else ``sketch_binner(X, max_bins)``."""
    if binner is None:
        return sketch_binner(X, max_bins)
    if getattr(binner, "n_features_in_", None) != X.shape[1]:
        raise DataError(f"the binner was fitted on {getattr(binner, 'n_features_in_', 0)} features but X has "
                        f"{X.shape[1]}; pass a Binner fitted on the same columns.")
    return binner
