"""The validation rows of a fit on dask collections: ``eval_set``, or a seeded ``validation_fraction`` split made per
chunk on the workers.

The split has the in-memory meaning (``distviz.contract.validation_split``): round(fraction * n) random rows are
held out for early stopping and both parts keep the rows' order; only which rows differs.  The held-out count is
shared among the chunks in proportion to their lengths (largest remainders), so every part's chunk lengths are
known before anything runs, and chunk i draws its rows from a generator seeded by (seed, i), the seed drawn from
``random_state``.  Each part is one ``map_blocks`` over X, y and the weights: a worker computes the chunk's
permutation and keeps its rows of the part; no row comes to the client.
"""

from __future__ import annotations

import numpy as np

from distviz.errors import ConfigError

from .collections import dask_eval_set

__all__ = ["split_counts", "validation_rows", "validation_split_chunks"]


def split_counts(chunks, fraction: float) -> np.ndarray:
    """Held-out rows per chunk: round(fraction * n) in all, shared in proportion to the chunk lengths (each chunk
    gets the floor of its share, the rest go one each to the chunks with the largest remainders, the first on a
    tie); DataError when a part would be too small (``distviz.contract.validation_count``)."""
    from distviz.contract import validation_count  # not at import: the workers import this package, not sklearn

    c = np.asarray(chunks, dtype=np.int64)
    n = int(c.sum())
    nv = validation_count(n, fraction)
    share = nv * c / n
    out = np.floor(share).astype(np.int64)
    rest = nv - int(out.sum())
    out[np.argsort(-(share - out), kind="stable")[:rest]] += 1
    return out


def _chunk_part(block, counts, seed, held_out, block_info=None):
    """The rows of one chunk in the held-out (held_out True) or the training part, in their order (a map_blocks
    function: the chunk's index comes from block_info)."""
    i = block_info[0]["chunk-location"][0]
    perm = np.random.default_rng([seed, i]).permutation(block.shape[0])
    k = int(counts[i])
    return block[np.sort(perm[:k] if held_out else perm[k:])]


def _part(a, counts, seed, held_out):
    """The held-out or training part of the dask array a (rows chunked as the split's counts were computed for)."""
    import dask.array as da

    sizes = tuple(int(k) if held_out else int(c - k) for c, k in zip(a.chunks[0], counts))
    out = a.map_blocks(_chunk_part, counts=tuple(int(k) for k in counts), seed=seed, held_out=held_out,
                       chunks=(sizes,) + a.chunks[1:], dtype=a.dtype, meta=np.empty((0,) * a.ndim, dtype=a.dtype))
    keep = [i for i, s in enumerate(sizes) if s]
    if len(keep) == len(sizes):
        return out
    return da.concatenate([out.blocks[i] for i in keep], axis=0)   # no empty chunk (a shard of no rows)


def validation_split_chunks(X, y, w, fraction: float, random_state):
    """Hold out round(fraction * n) rows of the dask arrays X, y and w (or None), chunked alike (module doc):
    (X_train, y_train, w_train, (X_val, y_val, w_val)).  random_state: a seed or a numpy Generator (one number
    is drawn from it: the split's seed)."""
    counts = split_counts(X.chunks[0], fraction)
    seed = int(np.random.default_rng(random_state).integers(2 ** 63))
    parts = [tuple(None if a is None else _part(a, counts, seed, held) for a in (X, y, w)) for held in (False, True)]
    return (*parts[0], parts[1])


def validation_rows(model, X, y, w, eval_set, *, split: bool, random_state=None):
    """(X, y, w, valid) of a fit on dask arrays, by the in-memory rule (``Estimator._validation_rows``): valid =
    eval_set (as chunked dask arrays), else (when split) a ``validation_fraction`` share held out on the workers,
    else None; ConfigError when ``early_stopping_rounds`` is set and there are no validation rows to watch.
    random_state defaults to the model's."""
    if eval_set is not None:
        return X, y, w, dask_eval_set(eval_set, X, y)
    if split:
        rs = model.random_state if random_state is None else random_state
        return validation_split_chunks(X, y, w, model.validation_fraction, rs)
    if getattr(model, "early_stopping_rounds", None) is not None:
        alt = " or validation_fraction" if "validation_fraction" in model.get_params() else ""
        raise ConfigError(f"early_stopping_rounds needs validation rows to watch; pass eval_set=(X_val, y_val){alt}.")
    return X, y, w, None
