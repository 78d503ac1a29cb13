"""Recognising dask collections and turning them into row-chunked dask arrays (no dask import unless one is used)."""

from __future__ import annotations

import math
import sys

from distviz.errors import ConfigError, DataError

__all__ = ["as_dask_array", "current_client", "is_dask_collection"]


def is_dask_collection(x) -> bool:
    """True for a dask array / DataFrame / Series or an xarray object backed by dask (False when dask is not loaded)."""
    if "dask" not in sys.modules:
        return False
    import dask
    return bool(dask.is_dask_collection(x))


def as_dask_array(x, name: str, ndim: int):
    """x (dask array, dask DataFrame / Series, xarray DataArray) as a dask array with ndim dims, one chunk across columns."""
    import dask.array as da

    if hasattr(x, "to_dask_array"):          # dask DataFrame / Series: chunk lengths are computed once
        x = x.to_dask_array(lengths=True)
    elif hasattr(x, "dims") and hasattr(x, "data"):   # xarray DataArray
        x = x.data
    x = da.asarray(x)
    if x.ndim == 1 and ndim == 2:
        x = x[:, None]
    if ndim == 1 and x.ndim == 2 and x.shape[1] == 1:
        x = x[:, 0]
    if x.ndim != ndim:
        raise DataError(f"{name} must have {ndim} dimension(s), got {x.ndim}; pass "
                        f"{'(n_samples, n_features)' if ndim == 2 else 'one value per row'}.")
    if any(math.isnan(c) for c in x.chunks[0]):
        raise DataError(f"{name} has chunks of unknown length; call compute_chunk_sizes() on it first.")
    if ndim == 2 and len(x.chunks[1]) > 1:
        x = x.rechunk({1: -1})
    return x


def current_client():
    """The running dask.distributed Client; ConfigError with the fix when there is none."""
    try:
        from distributed import get_client
        return get_client()
    except (ImportError, ValueError):
        raise ConfigError("fitting on a dask array needs a running dask.distributed Client; start one with "
                          "Client() (or Client('tcp://scheduler:8786')) first.") from None
