"""Base learners of WGBoost: one multi-output tree per round ("shared") or one tree per particle.

split_criterion "variance" (default) chooses splits by the summed squared-error reduction over all
outputs; "friedman_sum" chooses them on the row sums sum_k R_ik and then fills every output's leaf
mean: this is what scikit-learn's multi-output criterion="friedman_mse" did before 1.8 (it summed the
outputs before squaring; scikit-learn issue #32718), i.e. the trees of the authors' Section 4 code.
A fit's rounds become one `distviz.trees.flat.FlatForest` (``distviz.boosting.predict.rounds_forest``) for
prediction, staging and saving.
"""

from __future__ import annotations

import numpy as np

from distviz.trees import Binner, HistTree, fit_many


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
        return _with_values(t, vals), vals[t.train_leaf_]

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
            trees.append(_with_values(tb, vals))
            preds[b] = vals[tb.train_leaf_]
        return trees, preds

    def predict(self, tree, X):
        """Leaf values of `tree` (a HistTree) at rows X, shape (m, K)."""
        return tree.predict(X)

    def predict_many(self, trees, X):
        """Leaf values of B trees (a Forest or a list of HistTrees) at rows X, shape (B, m, K)."""
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


def _with_values(tree: HistTree, values) -> HistTree:
    """The tree with its node values replaced by `values` (n_nodes, K) (the same node rows)."""
    return HistTree.from_record(tree.record_.with_values(values), tree.binner_, tree.get_params())
