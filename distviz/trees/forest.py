"""fit_many: B trees on B target matrices that share X and its bins, fitted in one call (WGBoost's particle trees)."""

from __future__ import annotations

import numpy as np

from distviz.errors import ConfigError, DataError
from distviz.validation import check_X

from .binning import BinnedX, Binner
from .grower import grow_many
from .predictor import apply_binned_many, apply_raw_many
from .record import NODE_DTYPE, TreeRecord
from .tree import HistTree, _capacity, _check_params, _check_weight

__all__ = ["fit_many", "Forest", "SharedForest"]


class Forest:
    """B independent trees as one (B, M) batch of tree records (record.NODE_DTYPE rows); predict returns (B, n, K).

    Tree t owns the first ``n_nodes_[t]`` rows of ``nodes[t]``, ``value_[t]`` and ``feature_gains_[t]``
    (the rest is padding); ``forest[t]`` is a HistTree around views of them.  ``fit_many`` (with
    ``shared=False``) grows the batch in one compiled call and wraps it; all trees share one Binner.

    Parameters
    ----------
    params : dict
        The ``HistTree`` parameters the trees were grown with.
    binner : Binner
        The binner of the training rows.
    n_nodes : ndarray of shape (B,)
        Node count of every tree.
    nodes : ndarray of shape (B, M), dtype NODE_DTYPE
        The node rows of every tree (see ``distviz.trees.record``).
    value : ndarray of shape (B, M, K)
        Node values.
    feature_gains : ndarray of shape (B, M, p)
        Best gain per feature at every internal node.
    train_leaf : ndarray of shape (B, n) or None
        Leaf id of every training row in every tree (None once released).

    Attributes
    ----------
    params : dict
        The trees' ``HistTree`` parameters.
    binner_ : Binner
        The binner of the training rows.
    n_nodes_ : ndarray of shape (B,)
        Node count of every tree.
    nodes : ndarray of shape (B, M)
        The node rows.
    value_ : ndarray of shape (B, M, K)
        Node values (replaced by ``set_leaf_values``).
    feature_gains_ : ndarray of shape (B, M, p)
        Best gain per feature and node.
    train_leaf_ : ndarray of shape (B, n) or None
        Leaf ids of the training rows.
    n_outputs_ : int
        K, the number of target columns of every tree.
    trees : list of HistTree
        The B trees as ``HistTree`` objects (views into the batch).
    train_predict_ : ndarray of shape (B, n, K)
        Predictions on the training rows.

    Examples
    --------
    >>> import numpy as np
    >>> from distviz.trees import fit_many
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(100, 2))
    >>> forest = fit_many(X, np.stack([X[:, 0], X[:, 1]]), max_depth=2)
    >>> len(forest), forest.predict(X[:5]).shape, forest.apply(X[:5]).shape
    (2, (2, 5, 1), (2, 5))
    """

    def __init__(self, params, binner, n_nodes, nodes, value, feature_gains, train_leaf):
        """Wrap the grower's batch: n_nodes (B,), nodes (B, M), value (B, M, K), feature_gains (B, M, p), train_leaf (B, n)."""
        self.params = params
        self.binner_ = binner
        self.n_nodes_ = n_nodes
        self.nodes = nodes
        self.value_ = value
        self.feature_gains_ = feature_gains
        self.train_leaf_ = train_leaf
        self.n_outputs_ = value.shape[2]

    def __len__(self) -> int:
        return int(self.n_nodes_.shape[0])

    def record(self, t: int) -> TreeRecord:
        """One tree's record (views into the batch's arrays).

        Parameters
        ----------
        t : int
            The tree, in [0, B).

        Returns
        -------
        TreeRecord
            Its nodes, node values and feature gains.
        """
        nn = int(self.n_nodes_[t])
        return TreeRecord(self.nodes[t, :nn], self.value_[t, :nn], self.feature_gains_[t, :nn])

    def __getitem__(self, t: int) -> HistTree:
        """Tree t as a HistTree (its record's arrays are views into the forest's)."""
        tl = None if self.train_leaf_ is None else self.train_leaf_[t]   # None: released after a boosting round
        return HistTree.from_record(self.record(t), self.binner_, self.params, tl)

    @property
    def trees(self) -> list[HistTree]:
        """The B trees as HistTree objects."""
        return [self[t] for t in range(len(self))]

    @property
    def train_predict_(self) -> np.ndarray:
        """Predictions (B, n, K) on the training rows."""
        return np.take_along_axis(self.value_, self.train_leaf_[:, :, None], axis=1)

    def apply(self, X) -> np.ndarray:
        """The leaf every row reaches in each of the B trees.

        Parameters
        ----------
        X : array-like of shape (n, n_features) or BinnedX
            Raw features (NaN a missing value) or codes made by the forest's binner.

        Returns
        -------
        leaf : ndarray of int, shape (B, n)

        Raises
        ------
        DataError
            When X has another number of features or is a ``BinnedX`` of another binner.
        """
        nd = self.nodes
        if isinstance(X, BinnedX):
            if X.binner is not self.binner_:
                raise DataError("X was binned by a different Binner than the forest's; pass raw X or codes from forest.binner_.")
            return apply_binned_many(X.codes_T, nd["feature"], nd["bin"], nd["left"], nd["right"], nd["missing_left"],
                                     self.binner_.missing_bin_)
        X = check_X(X, allow_nan=True, n_features=self.binner_.n_features_in_)
        return apply_raw_many(X, nd["feature"], nd["threshold"], nd["left"], nd["right"], nd["missing_left"])

    def predict(self, X) -> np.ndarray:
        """Every tree's leaf values at every row.

        Parameters
        ----------
        X : array-like of shape (n, n_features) or BinnedX
            Raw features (NaN a missing value) or codes made by the forest's binner.

        Returns
        -------
        values : ndarray of shape (B, n, K)

        Raises
        ------
        DataError
            When X has another number of features or is a ``BinnedX`` of another binner.
        """
        return np.take_along_axis(self.value_, self.apply(X)[:, :, None], axis=1)

    def set_leaf_values(self, values) -> "Forest":
        """Replace all node values (as ``value_``; only the leaves' rows matter), e.g. after a line search.

        Parameters
        ----------
        values : array-like of shape (B, M, K)
            New values of the shape of ``value_``; copied.

        Returns
        -------
        self : Forest

        Raises
        ------
        DataError
            When ``values`` has another shape than ``value_``.
        """
        v = np.asarray(values, dtype=np.float64)
        if v.shape != self.value_.shape:
            raise DataError(f"values must have shape {self.value_.shape} like value_, got {v.shape}.")
        self.value_ = v.copy()
        return self


class SharedForest:
    """One multi-output tree on all B*K columns (shared splits across particles); predict returns (B, n, K).

    ``fit_many(..., shared=True)`` makes it: the B target matrices (n, K) are laid side by side as
    the (n, B*K) targets of one ``HistTree``, so every particle gets the same partition (the
    WGBoost reference code's choice) and its own leaf values; predictions are split back into
    (B, n, K).

    Parameters
    ----------
    tree : HistTree
        The fitted tree with B*K outputs (column ``b*K + k`` is output k of particle b).
    B : int
        The number of target matrices (particles).
    K : int
        Columns per target matrix.

    Attributes
    ----------
    tree : HistTree
        The shared tree.
    B : int
        The number of target matrices.
    K : int
        Columns per target matrix.
    train_leaf_ : ndarray of shape (n,)
        Leaf id of every training row, the same for all B outputs.
    train_predict_ : ndarray of shape (B, n, K)
        Predictions on the training rows.

    Examples
    --------
    >>> import numpy as np
    >>> from distviz.trees import fit_many
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(100, 2))
    >>> shared = fit_many(X, np.stack([X[:, 0], X[:, 1]]), shared=True, max_depth=2)
    >>> len(shared), shared.predict(X[:5]).shape, shared.apply(X[:5]).shape
    (2, (2, 5, 1), (5,))
    """

    def __init__(self, tree: HistTree, B: int, K: int):
        self.tree = tree
        self.B = B
        self.K = K

    def __len__(self) -> int:
        return self.B

    def _split(self, v: np.ndarray) -> np.ndarray:
        return v.reshape(v.shape[0], self.B, self.K).transpose(1, 0, 2)

    @property
    def train_leaf_(self) -> np.ndarray:
        """Leaf id of every training row (n,), the same for all B outputs."""
        return self.tree.train_leaf_

    @property
    def train_predict_(self) -> np.ndarray:
        """Predictions (B, n, K) on the training rows."""
        return self._split(self.tree.train_predict_)

    def apply(self, X) -> np.ndarray:
        """The leaf every row reaches in the shared tree.

        Parameters
        ----------
        X : array-like of shape (n, n_features) or BinnedX
            Raw features (NaN a missing value) or codes made by the tree's binner.

        Returns
        -------
        leaf : ndarray of int, shape (n,)
            The same for all B outputs.

        Raises
        ------
        DataError
            When X has another number of features or is a ``BinnedX`` of another binner.
        """
        return self.tree.apply(X)

    def predict(self, X) -> np.ndarray:
        """The shared tree's leaf values at every row, split back per target matrix.

        Parameters
        ----------
        X : array-like of shape (n, n_features) or BinnedX
            Raw features (NaN a missing value) or codes made by the tree's binner.

        Returns
        -------
        values : ndarray of shape (B, n, K)

        Raises
        ------
        DataError
            When X has another number of features or is a ``BinnedX`` of another binner.
        """
        return self._split(self.tree.predict(X))


def fit_many(X, R_batch, sample_weight=None, shared: bool = False, **tree_params):
    """Fit B trees to B target matrices sharing X and its bins in one call.

    Parameters
    ----------
    X : ndarray of shape (n, p) or BinnedX
        The rows (raw, binned here, or binned once per fit).
    R_batch : ndarray of shape (B, n, K) or (B, n)
        The targets of each tree.
    sample_weight : ndarray of shape (n,), optional
        Weights of the rows (None: unit).
    shared : bool
        False: B independent trees (a ``Forest``); True: one tree on the (n, B*K) columns (a ``SharedForest``,
        the WGBoost reference code's choice).
    **tree_params
        ``HistTree``'s parameters; criterion must be "variance".

    Returns
    -------
    Forest or SharedForest
    """
    params = HistTree(**tree_params).get_params()
    if params["criterion"] != "variance":
        raise ConfigError("fit_many grows variance-criterion trees only; fit HistTree(criterion='entropy') one at a time.")
    Rb = np.asarray(R_batch, dtype=np.float64)
    if Rb.ndim == 2:
        Rb = Rb[:, :, None]
    if Rb.ndim != 3:
        raise DataError(f"R_batch must have shape (B, n, K) or (B, n), got {Rb.shape}.")
    B, n, K = Rb.shape
    if not isinstance(X, BinnedX):
        X = check_X(X, allow_nan=True)
    if X.shape[0] != n:
        raise DataError(f"R_batch has {n} rows per tree but X has {X.shape[0]}; pass matching arrays.")
    if not isinstance(X, BinnedX):
        X = Binner(params["max_bins"]).fit_transform(X, sample_weight=sample_weight)
    codes_T, binner = X.codes_T, X.binner
    if shared:
        Rs = np.ascontiguousarray(Rb.transpose(1, 0, 2).reshape(n, B * K))
        tree = HistTree(**params).fit(BinnedX(codes_T, binner), Rs, sample_weight=sample_weight)
        return SharedForest(tree, B, K)
    if not np.isfinite(Rb).all():
        raise DataError("R_batch contains NaN or infinite values; fix the targets before fitting the trees.")
    w = _check_weight(sample_weight, n)
    depth, leaves = _check_params(
        params["max_depth"], params["max_leaves"], params["min_weight_leaf"], params["min_samples_leaf"],
        params["l2"], params["criterion"],
    )
    unit = sample_weight is None or bool((w == 1.0).all())
    n_pos = n if unit else int(np.count_nonzero(w))
    o = 1 if unit else 2
    M = _capacity(depth, leaves, n_pos)
    nodes = np.empty((B, M), dtype=NODE_DTYPE)
    n_nodes, value, fgains, train_leaf = grow_many(
        codes_T, binner.n_bins_, binner.n_hist_bins_, np.ascontiguousarray(Rb), w, o, M, depth, leaves,
        float(params["min_weight_leaf"]), float(params["min_samples_leaf"]), float(params["l2"]), binner.threshold_table_,
        nodes,
    )
    return Forest(params, binner, n_nodes, nodes, value, fgains, train_leaf)
