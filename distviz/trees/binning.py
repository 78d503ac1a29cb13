"""Feature quantisation: raw features -> small integer bin codes, computed once per boosting fit.

A feature with ``n_bins`` bins has ``n_bins - 1`` finite upper edges ``e_0 < ... < e_{n_bins-2}``
(the last bin is unbounded above).  A raw value ``x`` gets the code ``#{b : e_b < x}``, so that
``code <= b`` holds exactly when ``x <= e_b``: a split "bins 0..b go left" is the raw rule
``x <= threshold`` with ``threshold = e_b``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from distviz.errors import ConfigError, DataError

__all__ = ["Binner", "BinnedX"]

_SUBSAMPLE = 200_000


def _check_X(X, name: str = "X") -> np.ndarray:
    """Validate a raw feature matrix and return it as a 2-D float64 array."""
    try:
        X = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise DataError(f"{name} must be numeric; convert it to a float array first ({exc}).") from None
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2:
        raise DataError(f"{name} must be a 2-D array of shape (n_samples, n_features), got {X.ndim} dimensions.")
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise DataError(f"{name} is empty (shape {X.shape}); pass at least one row and one feature.")
    if not np.isfinite(X).all():
        raise DataError(f"{name} contains NaN or infinite values; impute or drop those rows before fitting a tree.")
    return X


@njit(cache=True)
def _bin_codes(XT, edges, n_edges, out):
    """Write the bin code of every value of XT (p, n) into out (p, n): the number of edges below x."""
    p, n = XT.shape
    for f in range(p):
        m = n_edges[f]
        e = edges[f]
        top = 1
        while top <= m:
            top <<= 1
        x_f = XT[f]
        o_f = out[f]
        for i in range(n):
            x = x_f[i]
            pos = 0  # branch-free binary search: pos = #{edges < x}
            step = top >> 1
            while step > 0:
                nxt = pos + step
                if nxt <= m and e[nxt - 1] < x:
                    pos = nxt
                step >>= 1
            o_f[i] = pos


# rows per block of the parallel binning kernel
_ROW_BLOCK = 1 << 13


@njit(cache=True, parallel=True)
def _bin_codes_rows(X, table, top, out):
    """Bin codes of X (n, p) in its own row order into out (p, n): code = #{edges < x}, rows in parallel blocks.

    table (p, top - 1) holds each feature's edges padded with +inf to one less than the power of two
    top, so the binary search needs no bounds test (an inf edge is never below a finite x); the
    codes equal _bin_codes's.  Reading X row by row avoids transposing it first.
    """
    n, p = X.shape
    nblk = (n + _ROW_BLOCK - 1) // _ROW_BLOCK
    for blk in prange(nblk):
        for i in range(blk * _ROW_BLOCK, min(n, (blk + 1) * _ROW_BLOCK)):
            for f in range(p):
                x = X[i, f]
                e = table[f]
                pos = 0
                step = top >> 1
                while step > 0:  # branch-free: a data-dependent branch mispredicts half the time
                    pos += step * np.intp(e[pos + step - 1] < x)
                    step >>= 1
                out[f, i] = pos


@dataclass(frozen=True, eq=False)
class BinnedX:
    """Bin codes of a feature matrix plus the Binner that made them (pass it to HistTree.fit to skip re-binning)."""

    codes_T: np.ndarray  # (p, n) uint8/uint16, C-contiguous: one contiguous row of codes per feature
    binner: "Binner"

    @property
    def codes(self) -> np.ndarray:
        """Bin codes as an (n, p) array (a Fortran-ordered view)."""
        return self.codes_T.T

    @property
    def shape(self) -> tuple[int, int]:
        """(n_samples, n_features)."""
        return (self.codes_T.shape[1], self.codes_T.shape[0])

    def __len__(self) -> int:
        return self.codes_T.shape[1]

    def take(self, idx) -> "BinnedX":
        """Rows idx of these codes (e.g. a bootstrap or a validation split), same binner."""
        return BinnedX(np.ascontiguousarray(self.codes_T[:, idx]), self.binner)


class Binner:
    """Quantile binning of each feature, fitted once and reused (``max_bins="exact"``: one bin per distinct value)."""

    def __init__(self, max_bins=255, subsample: int | None = _SUBSAMPLE, random_state=0):
        self.max_bins = max_bins
        self.subsample = subsample
        self.random_state = random_state

    def get_params(self, deep: bool = True) -> dict:
        """Constructor parameters (scikit-learn style)."""
        return {"max_bins": self.max_bins, "subsample": self.subsample, "random_state": self.random_state}

    def set_params(self, **params) -> "Binner":
        """Set constructor parameters (scikit-learn style)."""
        for k, v in params.items():
            if k not in self.get_params():
                raise ConfigError(f"Binner has no parameter {k!r}; valid ones are {sorted(self.get_params())}.")
            setattr(self, k, v)
        return self

    def _max_bins(self) -> int | None:
        mb = self.max_bins
        if isinstance(mb, str):
            if mb != "exact":
                raise ConfigError(f"max_bins must be an integer in [2, 65536] or 'exact', got {mb!r}.")
            return None
        if not (isinstance(mb, (int, np.integer)) and 2 <= mb <= 65536):
            raise ConfigError(f"max_bins must be an integer in [2, 65536] or 'exact', got {mb!r}.")
        return int(mb)

    def fit(self, X, sample_weight=None) -> "Binner":
        """Compute the bin edges of every feature (rows with zero sample_weight are ignored)."""
        X = _check_X(X)
        max_bins = self._max_bins()
        if sample_weight is not None:
            w = np.asarray(sample_weight, dtype=np.float64).reshape(-1)
            if w.shape[0] != X.shape[0]:
                raise DataError(f"sample_weight has {w.shape[0]} entries but X has {X.shape[0]} rows; pass one weight per row.")
            if (w > 0).any() and not (w > 0).all():
                X = X[w > 0]
        n, p = X.shape
        if max_bins is not None and self.subsample is not None and n > self.subsample:
            rng = np.random.default_rng(self.random_state)
            X = X[rng.choice(n, self.subsample, replace=False)]
        edges = []
        for f in range(p):  # once per fit, not in a hot path
            xs = np.sort(X[:, f])
            u = xs[np.concatenate(([True], xs[1:] != xs[:-1]))]
            if max_bins is None or u.size <= max_bins:
                e = 0.5 * (u[:-1] + u[1:])
                e = np.where(e < u[1:], e, u[:-1])  # adjacent floats: the midpoint may round up
                if max_bins is None and u.size > 65536:
                    raise ConfigError(
                        f"feature {f} has {u.size} distinct values, more than the 65536 bins 'exact' mode supports; "
                        "use an integer max_bins such as 255."
                    )
            else:  # quantiles at k / max_bins, k = 1..max_bins-1 (the midpoint of the two order statistics)
                pos = np.arange(1, max_bins) / max_bins * (xs.size - 1)
                e = np.unique(0.5 * (xs[np.floor(pos).astype(np.int64)] + xs[np.ceil(pos).astype(np.int64)]))
                e = e[e < u[-1]]  # an edge at the maximum would leave an empty last bin
            edges.append(np.ascontiguousarray(e, dtype=np.float64))
        return self._set_edges(edges)

    @classmethod
    def from_edges(cls, edges, max_bins=255) -> "Binner":
        """A fitted Binner with these per-feature upper edges (each increasing; e.g. from a distributed sketch)."""
        out = []
        for f, e in enumerate(edges):
            e = np.ascontiguousarray(e, dtype=np.float64).reshape(-1)
            if not (np.isfinite(e).all() and (np.diff(e) > 0).all() and e.size + 1 <= 65536):
                raise DataError(f"bin edges of feature {f} must be finite, strictly increasing and fewer than 65536.")
            out.append(e)
        if not out:
            raise DataError("bin edges must list at least one feature's edges.")
        return cls(max_bins=max_bins)._set_edges(out)

    def _set_edges(self, edges) -> "Binner":
        """Store the per-feature edges and the lookup tables derived from them; returns self."""
        p = len(edges)
        self.bin_thresholds_ = edges
        self.n_bins_ = np.array([e.size + 1 for e in edges], dtype=np.int64)
        self.n_features_in_ = p
        nb_max = int(self.n_bins_.max())
        self.n_bins_max_ = nb_max
        table = np.full((p, max(nb_max - 1, 1)), np.inf)
        for f, e in enumerate(edges):
            table[f, : e.size] = e
        self._edge_table = table
        top = 1
        while top <= max(nb_max - 1, 1):
            top <<= 1
        self._search_top = top   # search table: the edges padded with +inf to top - 1 entries
        self._search_table = np.full((p, top - 1), np.inf)
        self._search_table[:, : table.shape[1]] = table
        # thresholds indexed by (feature, bin): the upper edge of bin b (+inf for the last bin)
        self.threshold_table_ = np.concatenate([table[:, : nb_max - 1], np.full((p, 1), np.inf)], axis=1)
        self.code_dtype_ = np.uint8 if nb_max <= 256 else np.uint16
        return self

    def transform(self, X) -> BinnedX:
        """Bin codes of X (values beyond the fitted range fall into the first / last bin)."""
        if not hasattr(self, "n_bins_"):
            raise ConfigError("this Binner is not fitted yet; call fit(X) before transform(X).")
        if isinstance(X, BinnedX):
            if X.binner is not self:
                raise DataError("X was binned by a different Binner; pass raw X or codes made by this Binner.")
            return X
        X = _check_X(X)
        if X.shape[1] != self.n_features_in_:
            raise DataError(f"X has {X.shape[1]} features but the binner was fitted on {self.n_features_in_}; pass the same columns.")
        out = np.empty((X.shape[1], X.shape[0]), dtype=self.code_dtype_)
        if getattr(self, "_search_table", None) is not None and X.flags.c_contiguous:
            _bin_codes_rows(X, self._search_table, self._search_top, out)
        else:
            _bin_codes(np.ascontiguousarray(X.T), self._edge_table, self.n_bins_ - 1, out)
        return BinnedX(out, self)

    def fit_transform(self, X, sample_weight=None) -> BinnedX:
        """fit(X) then transform(X)."""
        return self.fit(X, sample_weight=sample_weight).transform(X)
