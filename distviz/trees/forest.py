"""fit_many: B trees on B target matrices that share X and its bins, fitted in one call (WGBoost's particle trees)."""

from __future__ import annotations

import numpy as np

from distviz.errors import ConfigError, DataError
from distviz.validation import check_X

from .binning import BinnedX, Binner
from .grower import grow_many
from .predictor import apply_binned_many, apply_raw_many
from .tree import HistTree, _capacity, _check_params, _check_weight

__all__ = ["fit_many", "Forest", "SharedForest"]


class Forest:
    """B independent trees with array-backed node tables (B, M); predict returns (B, n, K)."""

    def __init__(self, params, binner, o, n_nodes, feature, split_bin, left, right, depth, gain, sums, feat_gain, train_leaf,
                 missing_left=None):
        """Wrap the grower's (B, M) node arrays; missing_left (B, M) uint8: 1 = a NaN goes left (None: all 0)."""
        self.params = params
        self.binner_ = binner
        self.n_nodes_ = n_nodes
        self.feature_ = feature
        self.bin_ = split_bin
        self.left_ = left
        self.right_ = right
        self.missing_left_ = (np.zeros(feature.shape, dtype=np.uint8) if missing_left is None
                              else np.ascontiguousarray(missing_left, dtype=np.uint8))
        self.depth_ = depth
        self.gain_ = gain
        self.sums_ = sums
        self._o = o
        self.feature_gains_ = feat_gain
        self.train_leaf_ = train_leaf
        l2 = float(params["l2"])
        with np.errstate(all="ignore"):
            self.value_ = sums[:, :, o:] / (sums[:, :, :1] + l2)
        internal = left >= 0
        thr = np.full(feature.shape, np.nan)
        thr[internal] = binner.threshold_table_[feature[internal], split_bin[internal]]
        self.threshold_ = thr
        self.n_outputs_ = self.value_.shape[2]

    def __len__(self) -> int:
        return int(self.n_nodes_.shape[0])

    def __getitem__(self, t: int) -> HistTree:
        """Tree t as a HistTree (its arrays are views into the forest's)."""
        nn = int(self.n_nodes_[t])
        tree = HistTree(**self.params)
        tree.binner_ = self.binner_
        tree.n_outputs_ = self.n_outputs_
        tree.n_features_in_ = self.binner_.n_features_in_
        tree._feature = self.feature_[t, :nn]
        tree._bin = self.bin_[t, :nn]
        tree._left = self.left_[t, :nn]
        tree._right = self.right_[t, :nn]
        tree._missing_left = self.missing_left_[t, :nn]
        tree._depth = self.depth_[t, :nn]
        tree._sums = self.sums_[t, :nn]
        tree._o = self._o
        tree._gain = self.gain_[t, :nn]
        tree._gain_reg = tree._gain
        tree._feat_gain = self.feature_gains_[t, :nn]
        tree._threshold = self.threshold_[t, :nn]
        tree.value_ = self.value_[t, :nn]
        tree.train_leaf_ = None if self.train_leaf_ is None else self.train_leaf_[t]   # None: released after a boosting round
        tree._gain_ent = None
        tree._nodes = None
        return tree

    @property
    def trees(self) -> list[HistTree]:
        """The B trees as HistTree objects."""
        return [self[t] for t in range(len(self))]

    @property
    def train_predict_(self) -> np.ndarray:
        """Predictions (B, n, K) on the training rows."""
        return np.take_along_axis(self.value_, self.train_leaf_[:, :, None], axis=1)

    def apply(self, X) -> np.ndarray:
        """Leaf ids (B, n) for raw X or a BinnedX made by the forest's binner."""
        if isinstance(X, BinnedX):
            if X.binner is not self.binner_:
                raise DataError("X was binned by a different Binner than the forest's; pass raw X or codes from forest.binner_.")
            return apply_binned_many(X.codes_T, self.feature_, self.bin_, self.left_, self.right_, self.missing_left_,
                                     self.binner_.missing_bin_)
        X = check_X(X, allow_nan=True, n_features=self.binner_.n_features_in_)
        return apply_raw_many(X, self.feature_, self.threshold_, self.left_, self.right_, self.missing_left_)

    def predict(self, X) -> np.ndarray:
        """Predictions (B, n, K)."""
        return np.take_along_axis(self.value_, self.apply(X)[:, :, None], axis=1)

    def set_leaf_values(self, values) -> "Forest":
        """Replace all node values with values (B, M, K) (as value_; only leaf rows matter)."""
        v = np.asarray(values, dtype=np.float64)
        if v.shape != self.value_.shape:
            raise DataError(f"values must have shape {self.value_.shape} like value_, got {v.shape}.")
        self.value_ = v.copy()
        return self


class SharedForest:
    """One multi-output tree on all B*K columns (shared splits across particles); predict returns (B, n, K)."""

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
        """Leaf ids (n,) of the shared tree."""
        return self.tree.apply(X)

    def predict(self, X) -> np.ndarray:
        """Predictions (B, n, K)."""
        return self._split(self.tree.predict(X))


def fit_many(X, R_batch, sample_weight=None, shared: bool = False, **tree_params):
    """Fit B trees to R_batch (B, n, K) (or (B, n)) sharing X (raw or BinnedX) in one call.

    ``shared=False``: B independent trees (a Forest); ``shared=True``: one tree on the (n, B*K)
    columns (a SharedForest, WGBoost reference code's choice).  tree_params are HistTree's;
    criterion must be "variance".
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
    if isinstance(X, BinnedX):
        codes_T, binner = X.codes_T, X.binner
        if codes_T.shape[1] != n:
            raise DataError(f"R_batch has {n} rows per tree but X has {codes_T.shape[1]}; pass matching arrays.")
    else:
        X = check_X(X, allow_nan=True)
        if X.shape[0] != n:
            raise DataError(f"R_batch has {n} rows per tree but X has {X.shape[0]}; pass matching arrays.")
        binner = Binner(params["max_bins"]).fit(X, sample_weight=sample_weight)
        codes_T = binner.transform(X).codes_T
        X = BinnedX(codes_T, binner)
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
    out = grow_many(
        codes_T, binner.n_bins_, binner.n_hist_bins_, np.ascontiguousarray(Rb), w, o, M, depth, leaves,
        float(params["min_weight_leaf"]), float(params["min_samples_leaf"]), float(params["l2"]),
    )
    n_nodes, ints, floats, train_leaf = out
    feature, split_bin, left, right, dep, missing_left = (ints[:, i] for i in range(6))
    gain, sums, feat_gain = floats[:, :, 0], floats[:, :, 1 : 1 + o + K], floats[:, :, 1 + o + K :]
    return Forest(params, binner, o, n_nodes, feature, split_bin, left, right, dep, gain, sums, feat_gain, train_leaf,
                  missing_left)
