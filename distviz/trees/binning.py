"""Feature quantisation: raw features -> small integer bin codes, computed once per boosting fit.

A feature with ``n_bins`` bins has ``n_bins - 1`` finite upper edges ``e_0 < ... < e_{n_bins-2}``
(the last bin is unbounded above).  A raw value ``x`` gets the code ``#{b : e_b < x}``, so that
``code <= b`` holds exactly when ``x <= e_b``: a split "bins 0..b go left" is the raw rule
``x <= threshold`` with ``threshold = e_b``.

Missing values (NaN) get their own code, ``missing_bin_ = n_bins_max_``: one past the largest real
bin of every feature, as scikit-learn's HistGradientBoosting reserves its last bin.  Edges come
from the non-missing values only.  When the fitted X held NaN (``has_missing_``), node histograms
have ``n_hist_bins_ = n_bins_max_ + 1`` columns and the last one collects the missing rows;
otherwise they have ``n_bins_max_`` columns, exactly as without missing-value support.  Codes are
uint8 while ``n_bins_max_ <= 255`` (so max_bins=255, the default, leaves code 255 for NaN), uint16
up to 65535 real bins, uint32 beyond.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numba import njit, prange

from distviz.errors import ConfigError, DataError
from distviz.validation import check_sample_weight, check_X, kernel_array

from .histogram import lead_hist

__all__ = ["Binner", "BinnedX"]

_SUBSAMPLE = 200_000


@njit(cache=True)
def _bin_codes(XT, edges, n_edges, out, miss=0):
    """Write the bin code of every value of XT (p, n) into out (p, n): the number of edges below x, miss for NaN."""
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
            o_f[i] = miss if x != x else pos


# rows per block of the parallel binning kernel
_ROW_BLOCK = 1 << 13


@njit(cache=True, parallel=True)
def _bin_codes_rows(X, table, top, out, miss=0):
    """Bin codes of X (n, p) in its own row order into out (p, n): code = #{edges < x} (miss for NaN), rows in parallel blocks.

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
                out[f, i] = miss if x != x else pos


@njit(cache=True, parallel=True)
def _row_major(codes_T):
    """codes_T (p, n) as a C-contiguous (n, p) array, row blocks in parallel (np.ascontiguousarray(codes_T.T) is
    serial)."""
    p, n = codes_T.shape
    out = np.empty((n, p), dtype=codes_T.dtype)
    for blk in prange((n + _ROW_BLOCK - 1) // _ROW_BLOCK):
        for i in range(blk * _ROW_BLOCK, min(n, (blk + 1) * _ROW_BLOCK)):
            for f in range(p):
                out[i, f] = codes_T[f, i]
    return out


@dataclass(frozen=True, eq=False)
class BinnedX:
    """Bin codes of a feature matrix plus the Binner that made them (pass it to HistTree.fit to skip re-binning).

    Made by ``Binner.fit_transform`` / ``Binner.transform``; a boosting fit bins X once and grows every
    tree on the same ``BinnedX``.  The codes are stored feature-major, ``codes_T`` (p, n), so that a
    histogram pass reads one contiguous row per feature; the row-major copy (``row_major``) and the
    unit-weight root histogram (``unit_root_lead``) are made on first use and kept with the object.
    It is frozen: the codes are not copied, so do not modify them in place.

    Parameters
    ----------
    codes_T : ndarray of shape (p, n), uint8 or uint16
        C-contiguous bin codes, one row per feature, made by `binner` (``binner.missing_bin_`` for a
        missing value).
    binner : Binner
        The fitted binner that made the codes (its edges map codes back to thresholds).

    Attributes
    ----------
    codes_T : ndarray of shape (p, n)
        The codes, feature-major.
    binner : Binner
        The binner that made them.
    codes : ndarray of shape (n, p)
        The codes as a row-by-feature (Fortran-ordered) view of ``codes_T``.
    shape : tuple of int
        ``(n_samples, n_features)``.

    Examples
    --------
    >>> import numpy as np
    >>> from distviz.trees import Binner
    >>> Xb = Binner(max_bins=4).fit_transform(np.arange(8.0).reshape(4, 2))
    >>> Xb.shape, Xb.codes_T.shape, len(Xb)
    ((4, 2), (2, 4), 4)
    >>> Xb.codes[:, 0].tolist()
    [0, 1, 2, 3]
    """

    codes_T: np.ndarray  # (p, n) uint8/uint16, C-contiguous: one contiguous row of codes per feature
    binner: "Binner"
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    def row_major(self) -> np.ndarray:
        """The codes as a C-contiguous row-major array, made on first use and kept.

        Trees fitted on these codes build their nodes' histograms row by row from it (a row's p codes share a cache
        line).

        Returns
        -------
        codes : ndarray of shape (n_samples, n_features), the dtype of ``codes_T``
        """
        c = self._cache.get("codes_R")
        if c is None:
            c = self._cache["codes_R"] = _row_major(self.codes_T)
        return c

    def unit_root_lead(self) -> tuple[np.ndarray, np.ndarray]:
        """The root's row-count histogram for unit weights, made on first use and kept.

        Every unweighted tree fitted on these codes has this root count column; with it the root pass sums only the
        targets (``histogram.lead_hist``, ``hist_root_targets``; the same trees).

        Returns
        -------
        counts : ndarray of shape (n_features, n_hist_bins, 1)
            Rows per (feature, bin).
        total : ndarray of shape (1,)
            The number of rows.
        """
        c = self._cache.get("unit_root_lead")
        if c is None:
            c = self._cache["unit_root_lead"] = lead_hist(self.codes_T, np.empty(0), 1, self.binner.n_hist_bins_)
        return c

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


class Binner:
    """Quantile binning of each feature, fitted once and reused (see the module docstring).

    Parameters
    ----------
    max_bins : int or "exact"
        Most bins per feature, in [2, 65536], or "exact": one bin per distinct value.
    subsample : int or None
        Rows the quantiles are taken from (a random subset of that many when there are more; None, or
        "exact" bins: all rows).
    random_state : int
        Seed of that subset.
    """

    def __init__(self, max_bins=255, subsample: int | None = _SUBSAMPLE, random_state=0):
        self.max_bins = max_bins
        self.subsample = subsample
        self.random_state = random_state

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
        """Compute the bin edges of every feature.

        Up to ``max_bins`` bins per feature at the quantiles k / max_bins of the (subsampled) rows, or one bin per
        distinct value when there are fewer (or with "exact"); a feature with NaN gets an extra missing-value bin.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features; NaN is a missing value.
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Rows with zero weight are ignored; None uses every row.

        Returns
        -------
        self : Binner
            The fitted binner.

        Raises
        ------
        ConfigError
            When ``max_bins`` is not an integer in [2, 65536] or "exact", or an "exact" feature has more than 65536
            distinct values.
        DataError
            When X is not a finite 2-D numeric array (NaN allowed) or the weights are malformed.
        """
        X = check_X(X, allow_nan=True)
        max_bins = self._max_bins()
        if sample_weight is not None:
            w = check_sample_weight(sample_weight, X.shape[0])
            if w is not None and not (w > 0).all():
                X = X[w > 0]
        n, p = X.shape
        if max_bins is not None and self.subsample is not None and n > self.subsample:
            rng = np.random.default_rng(self.random_state)
            X = X[rng.choice(n, self.subsample, replace=False)]
        edges = []
        has_missing = np.zeros(p, dtype=bool)
        for f in range(p):  # once per fit, not in a hot path
            xs = np.sort(X[:, f])  # NaN sorts last
            n_real = xs.size if not np.isnan(xs[-1]) else int(np.count_nonzero(~np.isnan(xs)))
            has_missing[f] = n_real < xs.size
            xs = xs[:n_real]
            if n_real == 0:  # all missing: one (empty) real bin, every row in the missing bin
                edges.append(np.empty(0))
                continue
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
        return self._set_edges(edges, has_missing)

    @classmethod
    def from_edges(cls, edges, max_bins=255, has_missing=None) -> "Binner":
        """A fitted Binner with given per-feature upper edges (e.g. from a distributed quantile sketch).

        Parameters
        ----------
        edges : sequence of array-like
            One strictly increasing, finite array of upper bin edges per feature (fewer than 65536 each).
        max_bins : int or "exact", default=255
            Stored as the binner's ``max_bins``.
        has_missing : array-like of bool, shape (n_features,), or None, default=None
            Features whose training rows hold NaN (they get the missing-value histogram column, see the module doc);
            None: no feature has missing values.

        Returns
        -------
        Binner
            A fitted binner.

        Raises
        ------
        DataError
            When an edge array is not finite and strictly increasing, there are no features, or ``has_missing`` has
            another length.

        Examples
        --------
        >>> import numpy as np
        >>> from distviz.trees import Binner
        >>> b = Binner.from_edges([np.array([0.5, 1.5])])
        >>> b.transform(np.array([[0.0], [1.0], [2.0]])).codes[:, 0].tolist()
        [0, 1, 2]
        """
        out = []
        for f, e in enumerate(edges):
            e = np.ascontiguousarray(e, dtype=np.float64).reshape(-1)
            if not (np.isfinite(e).all() and (np.diff(e) > 0).all() and e.size + 1 <= 65536):
                raise DataError(f"bin edges of feature {f} must be finite, strictly increasing and fewer than 65536.")
            out.append(e)
        if not out:
            raise DataError("bin edges must list at least one feature's edges.")
        hm = np.zeros(len(out), dtype=bool) if has_missing is None else np.asarray(has_missing, dtype=bool).reshape(-1)
        if hm.shape[0] != len(out):
            raise DataError(f"has_missing has {hm.shape[0]} entries for {len(out)} features; pass one flag per feature.")
        return cls(max_bins=max_bins)._set_edges(out, hm)

    def _set_edges(self, edges, has_missing) -> "Binner":
        """Store the per-feature edges, which features had NaN, and the lookup tables derived from them; returns self."""
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
        self.has_missing_ = has_missing
        self.missing_bin_ = nb_max
        self.n_hist_bins_ = nb_max + 1 if has_missing.any() else nb_max
        self.code_dtype_ = np.uint8 if nb_max <= 255 else np.uint16 if nb_max <= 65535 else np.uint32
        return self

    def transform(self, X) -> BinnedX:
        """Bin codes of X: values beyond the fitted range fall into the first / last bin, NaN into ``missing_bin_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or BinnedX
            Features (a ``BinnedX`` made by this binner is returned as it is).

        Returns
        -------
        BinnedX
            The codes, feature-major, with this binner.

        Raises
        ------
        ConfigError
            When the binner is not fitted.
        DataError
            When X has another number of features, is not numeric, or is a ``BinnedX`` of another binner.
        """
        if not hasattr(self, "n_bins_"):
            raise ConfigError("this Binner is not fitted yet; call fit(X) before transform(X).")
        if isinstance(X, BinnedX):
            if X.binner is not self:
                raise DataError("X was binned by a different Binner; pass raw X or codes made by this Binner.")
            return X
        X = check_X(X, allow_nan=True, n_features=self.n_features_in_)
        out = np.empty((X.shape[1], X.shape[0]), dtype=self.code_dtype_)
        if getattr(self, "_search_table", None) is not None and X.flags.c_contiguous:
            _bin_codes_rows(kernel_array(X), self._search_table, self._search_top, out, self.missing_bin_)
        else:
            _bin_codes(np.ascontiguousarray(X.T), self._edge_table, self.n_bins_ - 1, out, self.missing_bin_)
        return BinnedX(out, self)

    def fit_transform(self, X, sample_weight=None) -> BinnedX:
        """fit(X) then transform(X)."""
        return self.fit(X, sample_weight=sample_weight).transform(X)
