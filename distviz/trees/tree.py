"""HistTree: a histogram-binned regression tree with vector leaves that records every split gain."""

from __future__ import annotations

import numba
import numpy as np
from sklearn.base import BaseEstimator

from distviz.errors import ConfigError, DataError, check_fitted
from distviz.validation import check_sample_weight, check_X, check_y, kernel_array

from .binning import BinnedX, Binner, _row_major
from .frontier import grow_in_memory
from .grower import NO_AUX, NO_ROOT_LEAD, NO_ROOT_TOT, NO_WORK, grow_batch, no_row_codes, node_sums
from .histogram import lead_hist, row_stats
from .predictor import apply_binned, apply_raw
from .record import NODE_DTYPE, TreeRecord
from .splitting import best_split_entropy

__all__ = ["HistTree", "FitContext"]

_PARAMS = ("max_depth", "max_leaves", "min_weight_leaf", "min_samples_leaf", "l2", "criterion", "max_bins")


def _check_params(max_depth, max_leaves, min_weight_leaf, min_samples_leaf, l2, criterion):
    """Validate tree parameters; returns (depth, leaves) as ints with 'unlimited' made large."""
    if max_depth is None and max_leaves is None:
        raise ConfigError("set max_depth or max_leaves (or both); an unlimited tree is not supported.")
    if max_depth is not None and not (isinstance(max_depth, (int, np.integer)) and max_depth >= 0):
        raise ConfigError(f"max_depth must be a non-negative integer or None, got {max_depth!r}.")
    if max_leaves is not None and not (isinstance(max_leaves, (int, np.integer)) and max_leaves >= 1):
        raise ConfigError(f"max_leaves must be a positive integer or None, got {max_leaves!r}.")
    if not (np.isscalar(min_weight_leaf) and min_weight_leaf >= 0):
        raise ConfigError(f"min_weight_leaf must be a non-negative number, got {min_weight_leaf!r}.")
    if not (isinstance(min_samples_leaf, (int, np.integer)) and min_samples_leaf >= 1):
        raise ConfigError(f"min_samples_leaf must be an integer >= 1, got {min_samples_leaf!r}.")
    if not (np.isscalar(l2) and l2 >= 0):
        raise ConfigError(f"l2 must be a non-negative number, got {l2!r}.")
    if criterion not in ("variance", "entropy"):
        raise ConfigError(f"criterion must be 'variance' or 'entropy', got {criterion!r}.")
    depth = 62 if max_depth is None else min(int(max_depth), 62)
    leaves = (1 << 62) if max_leaves is None else int(max_leaves)
    return depth, leaves


def _capacity(depth: int, leaves: int, n_pos: int) -> int:
    """Maximal number of nodes of a tree with these limits."""
    cap = min(leaves, (1 << depth) if depth < 62 else leaves, max(n_pos, 1))
    return 2 * cap - 1


def _check_weight(sample_weight, n: int) -> np.ndarray:
    """Sample weights as a float64 (n,) array, ones when None (distviz.validation.check_sample_weight)."""
    w = check_sample_weight(sample_weight, n)
    return np.ones(n) if w is None else w


def _entropy_gains(family, W, S, left, right, n_nodes, W_root):
    """Gain^ent of every internal node from the node weights W (n_nodes,) and sums of T, S (n_nodes, d) (NaN for leaves)."""
    with np.errstate(all="ignore"):   # A* is NaN where the family cannot evaluate it
        a = np.asarray(family.conjugate(S / W[:, None]), dtype=np.float64).reshape(-1) * W
        out = np.full(n_nodes, np.nan)
        internal = left >= 0
        out[internal] = (a[left[internal]] + a[right[internal]] - a[internal]) / W_root
    return out


class FitContext:
    """What every tree of one boosting fit shares, checked once: X's bin codes, the weights, and (family, T) for Gain^ent.

    Build it with ``FitContext.make(Xb, sample_weight, family=None, T=None)`` and grow each round's
    tree with ``HistTree(...).fit_context(ctx, R)``.  ``for_rounds()`` additionally keeps what every
    tree of a boosting fit can reuse (the root's weight columns, partition scratch, row-major codes).
    The constructor takes already checked inputs; ``make`` checks them.

    Parameters
    ----------
    codes_T : ndarray of shape (p, n)
        Feature-major bin codes (``BinnedX.codes_T``).
    binner : Binner
        The binner that made the codes.
    w : ndarray of shape (n,)
        Checked sample weights (ones for unit weights).
    weights_none : bool
        True when the caller passed no sample weights.
    family : ExponentialFamily, optional
        The family of Gain^ent (mirror_vs_natural_boosting.tex, 'Entropy and the exact leafwise NLL
        criterion'); given together with `T` or not at all.
    T : array-like of shape (n, dim), optional
        The rows' sufficient statistics, checked here.

    Attributes
    ----------
    codes_T : ndarray of shape (p, n)
        The bin codes.
    binner : Binner
        Their binner.
    w : ndarray of shape (n,)
        The sample weights.
    family : ExponentialFamily or None
        The family of Gain^ent.
    T : ndarray of shape (n, dim) or None
        The sufficient statistics.
    unit : bool
        Whether every weight is 1 (no weights given, or all equal to 1).
    W_root : float
        The sum of the weights.
    row_major_ok : bool
        Whether trees with several outputs may use row-major codes (set by ``for_rounds``).
    root_lead, root_tot : ndarray
        The root's weight and count histogram columns and totals kept by ``for_rounds`` (empty
        stand-ins before).
    work : ndarray
        Partition scratch kept by ``for_rounds`` (an empty stand-in before).
    codes_R : ndarray
        Row-major codes (n, p) once made by ``row_codes``, else an empty stand-in.
    GT : ndarray
        Row statistics ``[w, 1{w>0}, w*T]`` of T, computed on first use and kept.

    Raises
    ------
    distviz.errors.ConfigError
        If only one of `family` and `T` is given.

    Examples
    --------
    >>> import numpy as np
    >>> from distviz.trees import Binner, FitContext, HistTree
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(100, 2))
    >>> ctx = FitContext.make(Binner(max_bins=16).fit_transform(X)).for_rounds()
    >>> ctx.unit, ctx.W_root
    (True, 100.0)
    >>> tree = HistTree(max_depth=2).fit_context(ctx, X[:, :1] ** 2)
    >>> tree.predict(X[:3]).shape
    (3, 1)
    """

    def __init__(self, codes_T, binner, w, weights_none, family=None, T=None):
        """Wrap checked codes and weights; T is checked here (once)."""
        n = codes_T.shape[1]
        if T is not None:
            T = check_y(T, n, name="T", ndim=2)
        if (family is None) != (T is None):
            raise ConfigError("pass both family and T (the rows' sufficient statistics) or neither.")
        self.codes_T, self.binner, self.w, self.family, self.T = codes_T, binner, w, family, T
        self.unit = weights_none or bool((w == 1.0).all())
        self.W_root = float(w.sum())
        self._GT = None
        self.codes_R = no_row_codes(codes_T)
        self.row_major_ok = False   # whether trees with several outputs may use (and make) row-major codes
        self.root_lead, self.root_tot = NO_ROOT_LEAD, NO_ROOT_TOT
        self.work = NO_WORK
        self._xb: BinnedX | None = None   # the BinnedX the codes came from (its row-major copy is kept there)

    def for_rounds(self) -> "FitContext":
        """Keep what every tree of a boosting fit can reuse: the root's weight columns, partition scratch, row-major codes.

        The root then sums only its target columns (its weight and count columns are the same for every tree), and
        trees with several outputs build the nodes below the root row by row from row-major codes (n, p), made on their
        first use (one output reads the column-major codes by row index, which is faster); the trees are identical.
        Worth the one-off pass when many trees are grown on the same X and weights.

        Returns
        -------
        self : FitContext
        """
        if self.work.shape[1] != self.codes_T.shape[1]:
            self.row_major_ok = True
            self.work = np.empty((2, self.codes_T.shape[1]), dtype=np.int32)
            self.root_lead, self.root_tot = lead_hist(self.codes_T, self.w, 1 if self.unit else 2, self.binner.n_hist_bins_)
        return self

    def row_codes(self, n_outputs: int) -> np.ndarray:
        """The row-major codes for a tree of this many outputs.

        Parameters
        ----------
        n_outputs : int
            The tree's number of outputs K.

        Returns
        -------
        codes : ndarray of shape (n, p), or an empty stand-in
            Row-major codes (made once) when ``n_outputs > 1`` and :meth:`for_rounds` allowed them, else the empty
            stand-in that tells the kernel to read the column-major codes.
        """
        if n_outputs > 1 and self.row_major_ok and self.codes_R.shape[0] != self.codes_T.shape[1]:
            self.codes_R = self._xb.row_major() if self._xb is not None else _row_major(self.codes_T)
        return self.codes_R if n_outputs > 1 else no_row_codes(self.codes_T)

    @classmethod
    def make(cls, Xb, sample_weight=None, family=None, T=None) -> "FitContext":
        """The context for trees on binned features with these sample weights and an optional family and T.

        Parameters
        ----------
        Xb : BinnedX
            The binned features.
        sample_weight : array-like of shape (n,) or None, default=None
            Row weights; None: unit weights.
        family : ExponentialFamily or None, default=None
            With ``T``, the family whose Gain^ent the trees record.
        T : ndarray of shape (n, dim) or None, default=None
            The sufficient statistics :math:`T(y)` of the rows.

        Returns
        -------
        FitContext

        Raises
        ------
        DataError
            When ``Xb`` is not a ``BinnedX`` or the weights are malformed.
        """
        if not isinstance(Xb, BinnedX):
            raise DataError("FitContext needs binned features; pass Binner(max_bins).fit_transform(X).")
        n = Xb.codes_T.shape[1]
        ctx = cls(Xb.codes_T, Xb.binner, _check_weight(sample_weight, n), sample_weight is None, family, T)
        ctx._xb = Xb
        return ctx

    @property
    def GT(self) -> np.ndarray:
        """Row statistics [w, 1{w>0}, w*T] of T (computed on first use, then kept)."""
        if self._GT is None:
            self._GT = row_stats(self.T, self.w, 2)
        return self._GT


class HistTree(BaseEstimator):
    """Histogram regression tree for vector targets; records Gain^reg (and Gain^ent with a family) of every split.

    Leaf values are the weighted means ``S_C / (W_C + l2)`` of the targets; splits maximise Gain^reg or
    Gain^ent (splitting.py; mirror_vs_natural_boosting.tex, "Split criterion from leaf predictions" and
    "Entropy and the exact leafwise NLL criterion").  A split at bin b sends ``x <= threshold`` left, with
    ``threshold`` the upper edge of bin b, b the largest bin present on the left (in exact mode the midpoint
    to the next distinct value of the whole sample).  Growth is best first (the leaf with the largest gain is
    split next); without ``max_leaves`` every admissible leaf is split, which equals depth-wise growth.

    A scikit-learn estimator (``clone`` / ``get_params`` work) but not a RegressorMixin: it is the boosting
    engine's building block, ``predict`` is (n, K) also for 1-D targets, and there is no ``score``.  Methods
    used before fit raise ``distviz.errors.NotFittedError``.

    Parameters
    ----------
    max_depth, max_leaves : int or None
        Limits of the tree (at least one is set).
    min_weight_leaf : float
        Least sum of sample weights in a leaf (an absolute weight, like LightGBM's min_sum_hessian_in_leaf).
    min_samples_leaf : int
        Least number of rows with positive weight in a leaf.
    l2 : float
        L2 penalty on the leaf values.
    criterion : {"variance", "entropy"}
        Gain^reg, or Gain^ent (``fit`` then needs family and T).
    max_bins : int or "exact"
        Bins per feature when ``fit`` gets raw X; a ``BinnedX`` (boosting bins once per fit) keeps its binner's.

    Attributes
    ----------
    record_ : TreeRecord
        The fitted tree (also ``nodes_``); ``value_`` and the counts read it.
    """

    def __init__(
        self,
        *,
        max_depth=3,
        max_leaves=None,
        min_weight_leaf=1e-3,
        min_samples_leaf=1,
        l2=0.0,
        criterion="variance",
        max_bins=255,
    ):
        self.max_depth = max_depth
        self.max_leaves = max_leaves
        self.min_weight_leaf = min_weight_leaf
        self.min_samples_leaf = min_samples_leaf
        self.l2 = l2
        self.criterion = criterion
        self.max_bins = max_bins

    # -- scikit-learn style parameters -------------------------------------------------------
    def __sklearn_tags__(self):
        """scikit-learn tags: NaN in X is a missing value the tree routes (see splitting.py)."""
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        return tags

    def set_params(self, **params) -> "HistTree":
        """Set constructor parameters."""
        for k, v in params.items():
            if k not in _PARAMS:
                raise ConfigError(f"HistTree has no parameter {k!r}; valid ones are {list(_PARAMS)}.")
            setattr(self, k, v)
        return self

    # -- fitting -------------------------------------------------------------------------------
    def fit(self, X, y, sample_weight=None, family=None, T=None) -> "HistTree":
        """Grow the tree on (X, y); with ``family`` and ``T`` also record every split's Gain^ent.

        Leaf values are :math:`S_C / (W_C + l_2)`; splits maximise Gain^reg, or Gain^ent with ``criterion="entropy"``
        (mirror_vs_natural_boosting.tex, "Split criterion from leaf predictions" and "Entropy and the exact leafwise NLL
        criterion").

        Parameters
        ----------
        X : array-like of shape (n, n_features) or BinnedX
            Raw features (binned here with ``max_bins``; NaN a missing value) or binned codes.
        y : array-like of shape (n,) or (n, K)
            Regression targets.
        sample_weight : array-like of shape (n,) or None, default=None
            Non-negative row weights; None: unit weights.
        family : ExponentialFamily or None, default=None
            The family whose Gain^ent is recorded (needed by ``criterion="entropy"``).
        T : array-like of shape (n, dim) or None, default=None
            The sufficient statistics :math:`T(y)` of the rows, with ``family``.

        Returns
        -------
        self : HistTree

        Raises
        ------
        ConfigError
            A parameter out of range, or ``criterion="entropy"`` without family and T.
        DataError
            X or y malformed (not finite, wrong shapes) or malformed weights.
        """
        depth, leaves = _check_params(
            self.max_depth, self.max_leaves, self.min_weight_leaf, self.min_samples_leaf, self.l2, self.criterion
        )
        if not isinstance(X, BinnedX):
            X = check_X(X, allow_nan=True)
        n = X.shape[0]
        R = check_y(y, n, name="R", ndim=2)
        w = _check_weight(sample_weight, n)
        if isinstance(X, BinnedX):
            codes_T, binner = X.codes_T, X.binner
        else:
            binner = Binner(self.max_bins).fit(X, sample_weight=sample_weight)
            codes_T = binner.transform(X).codes_T
        ctx = FitContext(codes_T, binner, w, sample_weight is None, family, T)
        if isinstance(X, BinnedX):   # several outputs: nodes below the root from the row-major codes kept on X (the same sums)
            ctx._xb = X
            ctx.row_major_ok = True
            if sample_weight is None:   # the root's count column, kept on X: the root pass sums only the targets
                ctx.root_lead, ctx.root_tot = X.unit_root_lead()
        return self._fit_in(ctx, R, depth, leaves)

    def fit_context(self, ctx: "FitContext", R) -> "HistTree":
        """:meth:`fit` on the rows, weights and (family, T) checked once in a ``FitContext``.

        The boosting engine fits one tree per round on the same X, weights and T: checking and preparing those once per
        fit (``FitContext``) instead of once per round saves several passes over the rows.  The tree is the same as
        ``fit(ctx's X, R, ctx's weights, family, T)``.

        Parameters
        ----------
        ctx : FitContext
            The checked rows (from ``FitContext.make``).
        R : array-like of shape (n,) or (n, K)
            Finite float64 targets.

        Returns
        -------
        self : HistTree

        Raises
        ------
        ConfigError
            A parameter out of range, or ``criterion="entropy"`` without family and T in ``ctx``.
        DataError
            When R does not have n rows.
        """
        depth, leaves = _check_params(
            self.max_depth, self.max_leaves, self.min_weight_leaf, self.min_samples_leaf, self.l2, self.criterion
        )
        R = np.ascontiguousarray(R, dtype=np.float64)
        if R.ndim == 1:
            R = R[:, None]
        if R.ndim != 2 or R.shape[0] != ctx.codes_T.shape[1]:
            raise DataError(f"R must have shape (n,) or (n, K) with n = {ctx.codes_T.shape[1]} rows of X, got {R.shape}.")
        return self._fit_in(ctx, R, depth, leaves)

    def _fit_in(self, ctx: "FitContext", R, depth, leaves) -> "HistTree":
        """Grow on checked inputs: ctx (X codes, weights, family, T) and finite C-contiguous targets R (n, K)."""
        codes_T, binner, w, unit, family, T = ctx.codes_T, ctx.binner, ctx.w, ctx.unit, ctx.family, ctx.T
        n = codes_T.shape[1]
        if self.criterion == "entropy" and family is None:
            raise ConfigError("criterion='entropy' needs family and T; pass them to fit or use criterion='variance'.")
        n_pos = n if unit else int(np.count_nonzero(w))
        M = _capacity(depth, leaves, n_pos)
        nb = binner.n_bins_
        nb_max = binner.n_hist_bins_  # histogram width: one more column for missing values when X had NaN
        min_w = float(self.min_weight_leaf)
        min_cnt = float(self.min_samples_leaf)
        l2 = float(self.l2)
        K = R.shape[1]
        S_aux = None
        if self.criterion == "variance":
            o = 1 if unit else 2
            # with a family, the node sums of T (unit weights) or of [w, 1{w>0}, wT] for Gain^ent come with the tree
            aux = NO_AUX if family is None else T if unit else ctx.GT
            nodes = np.empty((1, M), dtype=NODE_DTYPE)
            n_nodes, value, fgains, tl, aux_sums = grow_batch(
                codes_T, ctx.row_codes(K), ctx.root_lead, ctx.root_tot, nb, nb_max, R[None], w, o, M, depth, leaves, min_w,
                min_cnt, l2, numba.get_num_threads(), aux, ctx.work, binner.threshold_table_, nodes,
            )
            nn = int(n_nodes[0])
            rec = TreeRecord(nodes[0, :nn], value[0, :nn], fgains[0, :nn])
            train_leaf = tl[0]
            if family is not None:
                S_aux = aux_sums[0, :nn]
        else:
            W_root, conj = float(ctx.GT[:, 0].sum()), family.conjugate

            def scan_for(miss):
                return lambda h, sums: best_split_entropy(h, nb, conj, W_root, min_w, min_cnt, miss)

            grower, train_leaf = grow_in_memory(codes_T, nb, nb_max, ctx.GT, scan_for, depth, leaves, min_w, min_cnt)
            a = grower.nodes()
            nn, left, right = grower.n_nodes, a["left"], a["right"]
            sums = node_sums(train_leaf, row_stats(R, w, 2), left, right, nn)
            rec = record_from_sums(binner, sums, 2, l2, left, right, a["feature"], a["bin"], a["feature_gains"],
                                   depth=a["depth"], gain=a["gain"], gain_reg=_reg_gains(sums, left, right, l2, 2),
                                   missing_left=a["missing_left"])
        if family is not None:
            lf, rt = rec.left, rec.right
            if unit:  # every row weighs 1: W_C is the node's row count (exact), only T needs summing
                S = node_sums(train_leaf, T, lf, rt, nn) if S_aux is None else S_aux
                rec.nodes["gain_ent"] = _entropy_gains(family, rec.weight, S, lf, rt, nn, float(n))
            else:
                S = node_sums(train_leaf, ctx.GT, lf, rt, nn) if S_aux is None else S_aux
                rec.nodes["gain_ent"] = _entropy_gains(family, S[:, 0], S[:, 2:], lf, rt, nn, ctx.W_root)
        self._set_record(rec, binner, train_leaf)
        return self

    # -- fitted structure ----------------------------------------------------------------------
    @classmethod
    def from_record(cls, record: TreeRecord, binner: Binner, params: dict | None = None,
                    train_leaf: np.ndarray | None = None) -> "HistTree":
        """A fitted HistTree around a record.

        Parameters
        ----------
        record : TreeRecord
            The tree's nodes, binned by ``binner``.
        binner : Binner
            The fitted binner of the record's split bins.
        params : dict or None, default=None
            Constructor parameters.
        train_leaf : ndarray of int, shape (n,), or None, default=None
            The training rows' leaves (for ``train_predict_``).

        Returns
        -------
        HistTree
        """
        return cls(**(params or {}))._set_record(record, binner, train_leaf)

    def _set_record(self, record: TreeRecord, binner: Binner, train_leaf) -> "HistTree":
        self.record_ = record
        self.binner_ = binner
        self.n_outputs_ = int(record.value.shape[1])
        self.n_features_in_ = int(binner.n_features_in_)
        self.train_leaf_ = train_leaf
        return self

    def _check_fitted(self) -> None:
        if "record_" not in self.__dict__:   # (the boosting loop reads value_ every round: no sklearn call when fitted)
            check_fitted(self, "record_")

    @property
    def value_(self) -> np.ndarray:
        """Node values (``node_count_``, K): S_C / (W_C + l2) (leaves' values are the predictions)."""
        self._check_fitted()
        return self.record_.value

    @property
    def node_count_(self) -> int:
        """Number of nodes."""
        self._check_fitted()
        return self.record_.n_nodes

    @property
    def n_leaves_(self) -> int:
        """Number of leaves."""
        self._check_fitted()
        return int(np.count_nonzero(self.record_.is_leaf))

    @property
    def depth_(self) -> int:
        """Depth of the deepest leaf (0 for a single-leaf tree)."""
        self._check_fitted()
        return int(self.record_.depth.max())

    @property
    def leaf_ids_(self) -> np.ndarray:
        """Node ids of the leaves, increasing (the order set_leaf_values expects)."""
        self._check_fitted()
        return np.flatnonzero(self.record_.is_leaf)

    @property
    def train_predict_(self) -> np.ndarray:
        """Predictions (n, K) on the training rows, without re-traversing the tree."""
        self._check_fitted()
        return self.record_.value[self.train_leaf_]

    @property
    def nodes_(self) -> TreeRecord:
        """The node table: the tree's record (see distviz.trees.record)."""
        self._check_fitted()
        return self.record_

    def set_leaf_values(self, values) -> "HistTree":
        """Replace the leaf values (e.g. by a line search or a Newton step).

        Parameters
        ----------
        values : array-like of shape (``n_leaves_``, K) or (``node_count_``, K)
            One row per leaf in ``leaf_ids_`` order, or one per node indexed by node id (only the leaves' rows are
            read); a 1-D array is one output.

        Returns
        -------
        self : HistTree

        Raises
        ------
        NotFittedError
            Before a fit.
        DataError
            When ``values`` has neither shape.
        """
        self._check_fitted()
        v = np.asarray(values, dtype=np.float64)
        if v.ndim == 1:
            v = v[:, None]
        leaves = self.leaf_ids_
        K = self.n_outputs_
        new = self.value_.copy()
        if v.shape == (self.node_count_, K):
            new[leaves] = v[leaves]
        elif v.shape == (leaves.size, K):
            new[leaves] = v
        else:
            raise DataError(
                f"leaf values must have shape ({leaves.size}, {K}) (one row per leaf) or ({self.node_count_}, {K}), "
                f"got {v.shape}."
            )
        self.record_ = self.record_.with_values(new)
        return self

    # -- prediction ------------------------------------------------------------------------------
    def apply(self, X) -> np.ndarray:
        """The leaf every row reaches.

        Parameters
        ----------
        X : array-like of shape (n, n_features) or BinnedX
            Raw features (NaN a missing value) or codes made by this tree's binner.

        Returns
        -------
        leaf : ndarray of int, shape (n,)
            Node ids of the leaves.

        Raises
        ------
        NotFittedError
            Before a fit.
        DataError
            When X has another number of features or is a ``BinnedX`` of another binner.
        """
        self._check_fitted()
        if isinstance(X, BinnedX):
            if X.binner is not self.binner_:
                raise DataError("X was binned by a different Binner than the tree's; pass raw X or codes from tree.binner_.")
            feature, split_bin, left, right, missing_left = self._record_columns("bin")
            return apply_binned(X.codes_T, feature, split_bin, left, right, missing_left, self.binner_.missing_bin_)
        X = kernel_array(check_X(X, allow_nan=True, n_features=self.n_features_in_))
        feature, threshold, left, right, missing_left = self._record_columns("threshold")
        return apply_raw(X, feature, threshold, left, right, missing_left)

    def _record_columns(self, split: str) -> tuple[np.ndarray, ...]:
        """feature, `split` ("bin" or "threshold"), left, right and missing_left of the record as contiguous arrays
        (the record's fields are strided views; the kernels take one array layout, see validation.kernel_array)."""
        r = self.record_.nodes
        return tuple(kernel_array(r[k], r.dtype[k]) for k in ("feature", split, "left", "right", "missing_left"))

    def predict(self, X) -> np.ndarray:
        """The leaf values of every row.

        Parameters
        ----------
        X : array-like of shape (n, n_features) or BinnedX
            Raw features (NaN a missing value) or codes made by this tree's binner.

        Returns
        -------
        values : ndarray of shape (n, K)

        Raises
        ------
        NotFittedError
            Before a fit.
        DataError
            When X has another number of features or is a ``BinnedX`` of another binner.
        """
        leaf = self.apply(X)
        return self.value_[leaf]


def record_from_sums(binner, sums, o, l2, left, right, feature, split_bin, feature_gains, **columns) -> TreeRecord:
    """A tree record from node arrays and node sums (n_nodes, o + K) = [W, (count,) S]: grower._pack's rule in numpy.

    value S_C / (W_C + l2), weight W_C, n_samples the count column (o = 2) or W (o = 1, unit weights), threshold
    the upper edge of the split bin (binner.threshold_table_); columns: the other node columns (record.NODE_DTYPE).
    """
    internal = left >= 0
    thr = np.full(left.shape[0], np.nan)
    thr[internal] = binner.threshold_table_[feature[internal], split_bin[internal]]
    return TreeRecord.from_columns(left, right, sums[:, o:] / (sums[:, :1] + l2), feature_gains, feature=feature,
                                   bin=split_bin, threshold=thr, weight=sums[:, 0],
                                   n_samples=sums[:, o - 1].astype(np.int64), **columns)


def _reg_gains(sums, left, right, l2, o=2):
    """Gain^reg (regularised form) of every internal node from the node sums (NaN for leaves)."""
    t = (sums[:, o:] ** 2).sum(axis=1) / (sums[:, 0] + l2)
    out = np.full(sums.shape[0], np.nan)
    internal = left >= 0
    out[internal] = t[left[internal]] + t[right[internal]] - t[internal]
    return out
