"""Base learners of WGBoost: one multi-output tree per round ("shared") or one tree per particle.

split_criterion "variance" (default) chooses splits by the summed squared-error reduction over all
outputs; "friedman_sum" chooses them on the row sums sum_k R_ik and then fills every output's leaf
mean: this is what scikit-learn's multi-output criterion="friedman_mse" did before 1.8 (it summed the
outputs before squaring; scikit-learn issue #32718), i.e. the trees of the authors' Section 4 code.
Fitted trees are kept as flat node arrays (`FlatTree`: feature, threshold, children, leaf values;
x goes left when x[feature] <= threshold) so that prediction, staging and saving need no pickle.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from distviz.trees import Binner, HistTree, fit_many


def _start_numba_threads():
    """Start numba's thread pool before any cached tree kernel is loaded.

    A cached function that calls a cached parallel=True function fails to link when loaded from the
    cache in a fresh process ("LLVM ERROR: Symbol not found: allocate_sched", numba issue #2439 family)
    unless the threading layer is already up; starting it first is harmless.
    """
    try:
        from numba.np.ufunc import parallel

        parallel._launch_threads()
    except Exception:  # pragma: no cover - numba internals moved: nothing to work around then
        pass


_start_numba_threads()


@njit(cache=True)
def _predict_flat(X, feature, threshold, left, right, value):
    n = X.shape[0]
    out = np.empty((n, value.shape[1]))
    for i in range(n):
        node = 0
        while left[node] >= 0:
            if X[i, feature[node]] <= threshold[node]:
                node = left[node]
            else:
                node = right[node]
        out[i] = value[node]
    return out


class FlatTree:
    """A fitted regression tree as flat arrays; leaves have left = right = -1 and a value row each."""

    __slots__ = ("feature", "threshold", "left", "right", "value")

    def __init__(self, feature, threshold, left, right, value):
        self.feature = np.ascontiguousarray(feature, dtype=np.int64)
        self.threshold = np.ascontiguousarray(threshold, dtype=np.float64)
        self.left = np.ascontiguousarray(left, dtype=np.int64)
        self.right = np.ascontiguousarray(right, dtype=np.int64)
        self.value = np.ascontiguousarray(value, dtype=np.float64)

    def predict(self, X):
        """Leaf values at rows X, shape (m, K)."""
        return _predict_flat(np.ascontiguousarray(X, dtype=np.float64), self.feature, self.threshold, self.left,
                             self.right, self.value)


class TreeLearner:
    """Fits distviz.trees histogram trees with vector leaves to WGBoost targets.

    Features are binned once per fit (`prepare`); every round fits one multi-output tree on the
    (n, N*d) targets (`fit`, shared splits across particles as in the authors' code) or N trees in
    one batched call (`fit_many`, Algorithm 3 as written). The training-row predictions come from
    the trees' leaf ids, so the current particles are updated without re-traversing any tree.
    """

    def __init__(self, max_depth=3, max_bins=255, criterion="variance"):
        self.max_depth = max_depth
        self.max_bins = max_bins
        self.criterion = criterion

    def _params(self):
        return {"max_depth": int(self.max_depth), "max_bins": self.max_bins, "min_weight_leaf": 0.0}

    def prepare(self, X):
        """Bin the training inputs once per fit."""
        return Binner(self.max_bins).fit_transform(X)

    def fit(self, Xb, R, w=None):
        """Fit one tree to targets R (n, K); return (tree, its prediction at the training rows (n, K))."""
        if self.criterion == "variance":
            t = HistTree(**self._params()).fit(Xb, R, sample_weight=w)
            return t, t.value_[t.train_leaf_]
        # "friedman_sum": splits chosen on the row sums sum_k R_ik, leaves = per-column means
        t = HistTree(**self._params()).fit(Xb, R.sum(axis=1), sample_weight=w)
        vals = _leaf_means(t.train_leaf_, R, w, t.node_count_)
        return _flat_with_values(t, vals), vals[t.train_leaf_]

    def fit_many(self, Xb, R, w=None):
        """Fit B trees to R (B, n, K) in one batched call; return (trees, predictions (B, n, K))."""
        if self.criterion == "variance":
            f = fit_many(Xb, R, sample_weight=w, shared=False, **self._params())
            return f, f.train_predict_
        f = fit_many(Xb, R.sum(axis=2), sample_weight=w, shared=False, **self._params())
        trees, preds = [], np.empty(R.shape)
        for b in range(R.shape[0]):
            tb = f[b]
            vals = _leaf_means(tb.train_leaf_, R[b], w, tb.node_count_)
            trees.append(_flat_with_values(tb, vals))
            preds[b] = vals[tb.train_leaf_]
        return trees, preds

    def predict(self, tree, X):
        """Leaf values of `tree` (HistTree or FlatTree) at rows X, shape (m, K)."""
        return tree.predict(X)

    def predict_many(self, trees, X):
        """Leaf values of B trees (a Forest or a list of FlatTree) at rows X, shape (B, m, K)."""
        if isinstance(trees, list):
            return np.stack([t.predict(X) for t in trees])
        return trees.predict(X)


def _leaf_means(leaf, R, w, n_nodes):
    """Weighted mean of every column of R over the rows of each node id in `leaf` (0 where empty)."""
    K = R.shape[1]
    if w is None:
        W = np.bincount(leaf, minlength=n_nodes).astype(np.float64)
        S = np.stack([np.bincount(leaf, R[:, k], minlength=n_nodes) for k in range(K)], 1)
    else:
        W = np.bincount(leaf, w, minlength=n_nodes)
        S = np.stack([np.bincount(leaf, R[:, k] * w, minlength=n_nodes) for k in range(K)], 1)
    return S / np.where(W > 0, W, 1.0)[:, None]


def _flat_with_values(tree, values) -> FlatTree:
    nd = tree.nodes_
    return FlatTree(np.maximum(nd.feature, 0), np.where(nd.is_leaf, np.inf, nd.threshold), nd.left, nd.right,
                    values)


def flatten(tree) -> FlatTree:
    """A FlatTree from a fitted HistTree's node table (or the FlatTree itself)."""
    if isinstance(tree, FlatTree):
        return tree
    nd = tree.nodes_
    return FlatTree(np.maximum(nd.feature, 0), np.where(nd.is_leaf, np.inf, nd.threshold), nd.left, nd.right,
                    nd.value)


def _flatten_round(trees):
    if isinstance(trees, list):
        return [flatten(t) for t in trees]
    return [flatten(trees[b]) for b in range(len(trees))]


_FIELDS = ("feature", "threshold", "left", "right", "value")


def trees_to_arrays(trees, shared=True) -> dict:
    """Concatenate the node arrays of all rounds' trees into a dict of arrays for np.savez."""
    flat = [flatten(t) for t in trees] if shared else [t for rnd in trees for t in _flatten_round(rnd)]
    per_round = 1 if shared else (len(trees[0]) if trees else 0)
    sizes = np.array([len(t.left) for t in flat], dtype=np.int64)
    out = {"tree_sizes": sizes, "tree_per_round": np.array(per_round)}
    for f in _FIELDS:
        arrs = [getattr(t, f) for t in flat]
        out[f"tree_{f}"] = np.concatenate(arrs) if arrs else np.zeros((0,) + ((1,) if f == "value" else ()))
    return out


def trees_from_arrays(arrays, shared=True):
    """Inverse of trees_to_arrays."""
    sizes = arrays["tree_sizes"]
    offs = np.concatenate([[0], np.cumsum(sizes)])
    flat = [FlatTree(*(arrays[f"tree_{f}"][offs[j]:offs[j + 1]] for f in _FIELDS)) for j in range(len(sizes))]
    if shared:
        return flat
    B = int(arrays["tree_per_round"])
    return [flat[j:j + B] for j in range(0, len(flat), B)]
