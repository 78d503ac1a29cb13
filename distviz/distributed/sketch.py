"""Bin edges of a chunked feature matrix from a distributed quantile sketch (no row leaves its worker).

Each chunk's quantiles at k / max_bins are computed where the chunk lives and merged on the client,
weighted by the chunks' lengths (``dask.array.percentile``); the edges are the distinct merged
quantiles below each feature's maximum, the rule of ``distviz.trees.Binner`` on a subsample.  With
given edges (``Binner.from_edges``) a distributed fit bins exactly as an in-memory one.
"""

from __future__ import annotations

import numpy as np

from distviz.errors import ConfigError
from distviz.trees import Binner

__all__ = ["sketch_binner"]


def sketch_binner(X, max_bins) -> Binner:
    """A fitted Binner for the dask array X (n, p) from per-chunk quantiles merged on the client."""
    import dask
    import dask.array as da

    if isinstance(max_bins, str) or not (isinstance(max_bins, (int, np.integer)) and 2 <= max_bins <= 65536):
        raise ConfigError(f"max_bins must be an integer in [2, 65536] for a fit on a dask array, got {max_bins!r}.")
    q = 100.0 * np.arange(1, int(max_bins)) / int(max_bins)
    parts = [da.percentile(X[:, f], q) for f in range(X.shape[1])]
    *qs, hi = dask.compute(*parts, X.max(axis=0), optimize_graph=False)   # keys as the fit will send them
    edges = []
    for f, e in enumerate(qs):
        e = np.unique(np.asarray(e, dtype=np.float64))
        edges.append(e[e < hi[f]])
    return Binner.from_edges(edges, max_bins=max_bins)
