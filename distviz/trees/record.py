"""TreeRecord: the one representation of a fitted tree, an array of nodes (the idea of scikit-learn's PREDICTOR_RECORD_DTYPE).

``nodes`` is a structured array of :data:`NODE_DTYPE`, one row per node (node 0 is the root; children
have larger ids than their parent), beside two per-node matrices that cannot be fixed-width fields:
``value`` (n_nodes, K) and ``feature_gains`` (n_nodes, p).  The grower writes it (``grower._pack``),
``HistTree`` wraps one, ``fit_many``'s ``Forest`` holds a (B, M) batch of them, ``FlatForest`` concatenates
them for its compiled predictors and the model file, and the trace, the figures and the Split-gains
page read its columns (``as_dict``, ``to_dataframe``).

Columns: feature / bin / threshold: the split rule ``x[feature] <= threshold`` (bin codes: ``code <= bin``)
goes left; -1 / -1 / NaN for leaves.  missing_left (uint8): 1 when a missing value (NaN) of the split
feature goes left, 0 when it goes right (and at leaves).  left / right: child ids, -1 at leaves.  depth:
the root has 0.  weight: W_C, the sum of sample weights; n_samples: rows with positive weight.  value
(n_nodes, K): the node's value S_C / (W_C + l2) (leaves' values are what a tree predicts).  gain: the gain
that chose the split (Gain^reg for criterion="variance", Gain^ent for "entropy"); gain_reg:
W_L|Rbar_L|^2 + W_R|Rbar_R|^2 - W_J|Rbar_J|^2 (regularised form with l2, see splitting.py); gain_ent:
(W_L A*(eta*_L) + W_R A*(eta*_R) - W_J A*(eta*_J)) / W (mirror_vs_natural_boosting.tex, "Entropy and the
exact leafwise NLL criterion"; NaN without a family); all three NaN at leaves.  feature_gains
(n_nodes, p): the best gain of the criterion on every feature at an internal node (-inf: no valid
split; NaN at leaves).
"""

from __future__ import annotations

import numpy as np

__all__ = ["NODE_DTYPE", "TreeRecord"]

#: one row per node (aligned: the grower writes the rows in numba, see grower._pack)
NODE_DTYPE = np.dtype([
    ("feature", np.int64), ("bin", np.int64), ("threshold", np.float64), ("left", np.int64), ("right", np.int64),
    ("depth", np.int64), ("weight", np.float64), ("n_samples", np.int64), ("gain", np.float64),
    ("gain_reg", np.float64), ("gain_ent", np.float64), ("missing_left", np.uint8),
], align=True)
_FIELDS: tuple[str, ...] = tuple(NODE_DTYPE.names or ())

#: the columns of as_dict and to_dataframe, in order ("value" and "feature_gains" are the matrices)
COLUMNS = ("feature", "threshold", "bin", "left", "right", "is_leaf", "depth", "weight", "n_samples", "value", "gain",
           "gain_reg", "gain_ent", "feature_gains", "missing_left")


def _column(name: str, doc: str) -> property:
    return property(lambda self: self.nodes[name], doc=doc)


class TreeRecord:
    """One fitted tree as an array of nodes (see the module docstring); every column is a view of ``nodes``.

    Node 0 is the root and children have larger ids than their parent.  The split rule of an
    internal node sends ``x[feature] <= threshold`` (bin codes: ``code <= bin``) to the left child;
    a missing value goes left when ``missing_left`` is 1.  Gain^reg and Gain^ent are those of
    mirror_vs_natural_boosting.tex ('Split criterion from leaf predictions', 'Entropy and the exact
    leafwise NLL criterion'; formulas in the module docstring).

    Parameters
    ----------
    nodes : ndarray of shape (M,), dtype NODE_DTYPE
        One structured row per node.
    value : ndarray of shape (M, K), float64
        Every node's value ``S_C / (W_C + l2)``; the leaves' values are the tree's predictions.
    feature_gains : ndarray of shape (M, p), optional
        The best gain on every feature at every internal node (-inf: no valid split, NaN at
        leaves); None stores an empty (M, 0) matrix.

    Attributes
    ----------
    nodes : ndarray of shape (M,)
        The structured node array.
    value : ndarray of shape (M, K)
        The node values.
    feature_gains : ndarray of shape (M, p)
        The per-feature gains (p = 0 when none were recorded).
    feature, bin, threshold, left, right, depth, weight, n_samples, gain, gain_reg, gain_ent, missing_left : ndarray of shape (M,)
        Views of the ``nodes`` fields (see the module docstring); -1 / NaN at leaves where a field
        describes a split.
    is_leaf : ndarray of bool, shape (M,)
        True at leaves (``left < 0``).
    n_nodes : int
        M, the number of nodes.

    Examples
    --------
    A stump: the root splits feature 0 at 0.5 into two leaves.

    >>> import numpy as np
    >>> from distviz.trees import NODE_DTYPE, TreeRecord
    >>> nodes = np.zeros(3, dtype=NODE_DTYPE)
    >>> nodes["left"], nodes["right"], nodes["feature"] = [1, -1, -1], [2, -1, -1], [0, -1, -1]
    >>> nodes["threshold"], nodes["depth"] = [0.5, np.nan, np.nan], [0, 1, 1]
    >>> rec = TreeRecord(nodes, np.array([[0.0], [-1.0], [1.0]]))
    >>> rec.n_nodes, rec.is_leaf.tolist(), rec.feature_gains.shape
    (3, [False, True, True], (3, 0))
    >>> float(rec["threshold"][0])
    0.5
    """

    __slots__ = ("nodes", "value", "feature_gains")

    def __init__(self, nodes: np.ndarray, value: np.ndarray, feature_gains: np.ndarray | None = None):
        """nodes (M,) of NODE_DTYPE, value (M, K) float64, feature_gains (M, p) (None: no per-feature gains, p = 0)."""
        self.nodes = nodes
        self.value = value
        self.feature_gains = np.full((nodes.shape[0], 0), np.nan) if feature_gains is None else feature_gains

    feature = _column("feature", "Split feature per node (-1 at leaves).")
    bin = _column("bin", "Split bin per node: codes <= bin go left (-1 at leaves).")
    threshold = _column("threshold", "Raw-unit threshold per node: x <= threshold goes left (NaN at leaves).")
    left = _column("left", "Left child id (-1 at leaves).")
    right = _column("right", "Right child id (-1 at leaves).")
    depth = _column("depth", "Depth of every node (the root: 0).")
    weight = _column("weight", "W_C: sum of the node's sample weights.")
    n_samples = _column("n_samples", "Rows with positive weight in the node.")
    gain = _column("gain", "The gain that chose the split (NaN at leaves).")
    gain_reg = _column("gain_reg", "Gain^reg of the split (NaN at leaves).")
    gain_ent = _column("gain_ent", "Gain^ent of the split (NaN at leaves and without a family).")
    missing_left = _column("missing_left", "uint8: 1 when a missing value of the split feature goes left.")

    @property
    def is_leaf(self) -> np.ndarray:
        """Boolean per node: True at leaves."""
        return self.nodes["left"] < 0

    @property
    def n_nodes(self) -> int:
        """Number of nodes."""
        return int(self.nodes.shape[0])

    def __len__(self) -> int:
        return self.n_nodes

    def __getitem__(self, key: str) -> np.ndarray:
        """A column by name (as_dict's names)."""
        if key not in COLUMNS:
            raise KeyError(key)
        return getattr(self, key)

    def as_dict(self) -> dict[str, np.ndarray]:
        """The node columns as a dict of arrays.

        Returns
        -------
        dict of str to ndarray
            Every column of ``COLUMNS``: the 1-D node columns of shape (n_nodes,), ``value`` (n_nodes, K) and
            ``feature_gains`` (n_nodes, p).
        """
        return {k: getattr(self, k) for k in COLUMNS}

    def to_dataframe(self):
        """A pandas DataFrame with one row per node (index "node").

        Returns
        -------
        pandas.DataFrame
            The 1-D columns as they are; ``value_k`` and ``gain_feature_f`` columns for the 2-D arrays.
        """
        import pandas as pd

        cols = {}
        for name, a in self.as_dict().items():
            if a.ndim == 1:
                cols[name] = a
            else:
                prefix = "value" if name == "value" else "gain_feature"
                for k in range(a.shape[1]):
                    cols[f"{prefix}_{k}"] = a[:, k]
        df = pd.DataFrame(cols)
        df.index.name = "node"
        return df

    def with_values(self, value) -> "TreeRecord":
        """The same tree with its node values replaced (the node rows are shared, not copied).

        Parameters
        ----------
        value : array-like of shape (n_nodes, K) or (n_nodes,)
            The new node values.

        Returns
        -------
        TreeRecord
        """
        v = np.asarray(value, dtype=np.float64).reshape(self.n_nodes, -1)
        return TreeRecord(self.nodes, v, self.feature_gains)

    # ------------------------------------------------------------------ construction
    @classmethod
    def empty(cls, M: int, K: int, p: int = 0) -> "TreeRecord":
        """A record of M nodes, all leaves: feature / bin / children -1; gains, threshold and weight NaN; counts 0.

        Parameters
        ----------
        M : int
            Number of nodes.
        K : int
            Outputs per node value.
        p : int, default=0
            Columns of the per-feature gains (NaN).

        Returns
        -------
        TreeRecord
        """
        nodes = np.zeros(M, dtype=NODE_DTYPE)
        for k in ("feature", "bin", "left", "right"):
            nodes[k] = -1
        for k in ("threshold", "weight", "gain", "gain_reg", "gain_ent"):
            nodes[k] = np.nan
        return cls(nodes, np.zeros((M, K)), np.full((M, p), np.nan))

    @classmethod
    def from_columns(cls, left, right, value, feature_gains=None, **columns) -> "TreeRecord":
        """A record from per-node columns (``NODE_DTYPE``'s names); absent ones keep :meth:`empty`'s defaults.

        Leaves get feature / bin -1, threshold / gains NaN, missing_left 0 and NaN feature gains, whatever the columns
        held there.

        Parameters
        ----------
        left, right : array-like of int, shape (M,)
            Children ids (-1 at leaves).
        value : array-like of shape (M, K) or (M,)
            Node values.
        feature_gains : array-like of shape (M, p) or None, default=None
            Per-feature gains of each node's split.
        **columns : array-like of shape (M,)
            Further node columns by name (feature, bin, threshold, missing_left, depth, weight, n_samples, gain, ...).

        Returns
        -------
        TreeRecord

        Raises
        ------
        TypeError
            When a keyword is not a node column.

        Examples
        --------
        >>> from distviz.trees import TreeRecord
        >>> rec = TreeRecord.from_columns([1, -1, -1], [2, -1, -1], [0.0, -1.0, 1.0], feature=[0, 0, 0],
        ...                               threshold=[0.5, 0.0, 0.0])
        >>> rec.is_leaf.tolist(), rec.feature.tolist()
        ([False, True, True], [0, -1, -1])
        """
        left = np.asarray(left, dtype=np.int64)
        value = np.asarray(value, dtype=np.float64).reshape(left.shape[0], -1)
        rec = cls.empty(left.shape[0], value.shape[1])
        nodes = rec.nodes
        nodes["left"] = left
        nodes["right"] = right
        for k, a in columns.items():
            if k not in _FIELDS:
                raise TypeError(f"{k!r} is not a node column; the columns are {_FIELDS}.")
            nodes[k] = a
        leaf = left < 0
        nodes["feature"][leaf] = -1
        nodes["bin"][leaf] = -1
        nodes["missing_left"][leaf] = 0
        for k in ("threshold", "gain", "gain_reg", "gain_ent"):
            nodes[k][leaf] = np.nan
        fg = None
        if feature_gains is not None:
            fg = np.array(feature_gains, dtype=np.float64).reshape(left.shape[0], -1)
            fg[leaf] = np.nan
        return cls(nodes, value, fg)

    @classmethod
    def leaf(cls, value) -> "TreeRecord":
        """A one-node tree predicting the same value everywhere.

        Parameters
        ----------
        value : array-like of shape (K,)
            The leaf's value.

        Returns
        -------
        TreeRecord
        """
        return cls.from_columns([-1], [-1], np.asarray(value, dtype=np.float64).reshape(1, -1))

    @classmethod
    def from_sklearn_tree(cls, est) -> "TreeRecord":
        """The record of a fitted scikit-learn regression tree (single output; depths from the children, gains NaN).

        Parameters
        ----------
        est : sklearn.tree.DecisionTreeRegressor
            A fitted tree (anything with a ``tree_``).

        Returns
        -------
        TreeRecord
        """
        t = est.tree_
        left = np.where(t.children_left < 0, -1, t.children_left).astype(np.int64)
        right = np.where(left < 0, -1, t.children_right).astype(np.int64)
        ml = getattr(t, "missing_go_to_left", None)
        return cls.from_columns(
            left, right, np.asarray(t.value, dtype=np.float64).reshape(t.node_count, -1), feature=t.feature,
            threshold=t.threshold, missing_left=0 if ml is None else ml, depth=_depths(left, right),
            weight=t.weighted_n_node_samples, n_samples=t.n_node_samples,
        )

    @classmethod
    def from_sklearn_predictor(cls, pred) -> "TreeRecord":
        """The record of a scikit-learn HistGradientBoosting ``TreePredictor`` (its leaf values include the learning
        rate).

        Parameters
        ----------
        pred : sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor
            One tree of a fitted ``HistGradientBoostingRegressor`` (``_predictors[i][0]``).

        Returns
        -------
        TreeRecord
        """
        nd = pred.nodes
        left = np.where(nd["is_leaf"].astype(bool), -1, nd["left"].astype(np.int64))
        right = np.where(left < 0, -1, nd["right"].astype(np.int64))
        return cls.from_columns(
            left, right, np.asarray(nd["value"], dtype=np.float64).reshape(-1, 1), feature=nd["feature_idx"],
            threshold=nd["num_threshold"], missing_left=nd["missing_go_to_left"], depth=nd["depth"],
            n_samples=nd["count"], gain=nd["gain"],
        )


def _depths(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Depth of every node of a tree whose children have larger ids than their parent."""
    depth = np.zeros(left.shape[0], dtype=np.int64)
    for j in np.flatnonzero(left >= 0):
        depth[left[j]] = depth[right[j]] = depth[j] + 1
    return depth
