"""Worker side of NGBoost on a cluster: the tasks that run a chart law (``ChartLaw``) on one shard's rows.

A round of ``distviz.estimators.ngboost.NGBoost`` grows one single-output tree per chart parameter
(O'Malley et al. 2023, Algorithm 1: trees fitted to the natural gradient, then a line search on the
scale rho); here each tree is one :class:`distviz.distributed.shard.Part` of the shard.  The tasks:

- :func:`moments`: sums for the marginal-MLE start theta^(0) (weighted mean and covariance of y);
- :func:`start`: F = theta^(0), its NLL, the first targets and root histograms;
- :func:`search`: label every tree's leaves, form the round's output f (n, K) (kept until :func:`step`),
  and return the NLL sums at F + s f for many scales s at once plus sum_i ||f_i||, so that the client
  runs the engine's line search (``distviz.boosting.rounds.line_search``) with one round trip;
- :func:`step`: F <- F + lr rho f, its NLL, the next targets and root histograms;

(validation rows take ``shard.valid_step``, as DistributionalBoosting's).  They return sums only (never rows),
which ``merge`` adds over chunks.
"""

from __future__ import annotations

import numpy as np

from distviz.trees.histogram import row_stats
from distviz.validation import check_sample_weight, check_X, check_y, kernel_array

from .shard import _wsum, finite_targets, label_leaves, reset_trees

__all__ = ["check_chunk", "loss_sums", "moments", "more_scales", "search", "start", "step"]


def _y(shard) -> np.ndarray:
    y = shard.data["y"]
    return y.reshape(y.shape[0], -1)


def moments(shard, means=None):
    """means None: [n, sum w, sum w y (P), sum y (P)]; means = (weighted mean, plain mean): [sum w (y - m)(y - m)^T
    (P * P), sum (y - ybar)^2 (P)], the centred sums of the in-memory start's two-pass formulas."""
    y = _y(shard)
    w = np.ones(shard.n) if shard.w is None else shard.w
    if means is None:
        return np.concatenate(([float(shard.n), w.sum()], w @ y, y.sum(axis=0)))
    d = y - means[0]
    e = y - means[1]
    return np.concatenate((((d * w[:, None]).T @ d).ravel(), (e * e).sum(axis=0)))


def _trees_G(shard, R, unit):
    """Row statistics of each parameter's tree: column k of R (unit weights) or [w, 1{w>0}, w R_k]."""
    K = R.shape[1]
    if unit:
        return [np.ascontiguousarray(R[:, k:k + 1]) for k in range(K)]
    return [row_stats(kernel_array(R[:, k:k + 1]), shard.w, 2) for k in range(K)]


def _moved(shard, law, learning_rate, next_hist, nb_max, C, unit):
    """After F moved: {"stats": [sum w NLL, rows with non-finite next targets], "hist": next root histograms}."""
    out = {"stats": np.array([_wsum(shard, law.loss(shard.F, shard.data)), 0.0])}
    if next_hist:
        R, n_bad = finite_targets(law, shard.F, shard.data, learning_rate)
        out["hist"] = reset_trees(shard, _trees_G(shard, R, unit), nb_max, C, unit)
        out["stats"][1] = float(n_bad)
    return out


def start(shard, law, F0, learning_rate, next_hist, nb_max, C, unit):
    """F = F0 on every row (the returns of ``_moved``)."""
    shard.F, _ = law.update(np.tile(F0, (shard.n, 1)), np.zeros((shard.n, law.dim)))
    return _moved(shard, law, learning_rate, next_hist, nb_max, C, unit)


def loss_sums(shard, law, scales) -> np.ndarray:
    """sum_i w_i NLL_i at F + s f for every s in scales (the line search's values, before dividing by sum w)."""
    W = float(shard.n) if shard.w is None else float(shard.w.sum())
    if W == 0.0:
        return np.zeros(len(scales))
    with np.errstate(all="ignore"):
        return np.array([law.mean_loss_along(shard.F, shard.f, float(s), shard.data, shard.w) * W for s in scales])


def search(shard, law, trees, scales):
    """Label the leaves of this round's trees (tree k feeds parameter k), keep f (n, K) and return
    {"ls": loss_sums at the scales, "norm": [sum_i ||f_i||]}."""
    f = np.zeros((shard.n, law.dim))
    for k, (part, tree) in enumerate(zip(shard.parts, trees)):
        leaf = label_leaves(shard, part, tree)
        f[:, k] = tree["value"][leaf, 0]
        part.G = None   # this round's targets are done with
    shard.f = f
    return {"ls": loss_sums(shard, law, scales), "norm": np.array([float(np.sqrt((f * f).sum(axis=1)).sum())])}


def more_scales(shard, law, scales):
    """{"ls": loss_sums at further scales} (when the replayed rule leaves the first batch)."""
    return {"ls": loss_sums(shard, law, scales)}


def step(shard, law, mult, learning_rate, next_hist, nb_max, C, unit):
    """F <- F + mult f (the returns of ``_moved``)."""
    shard.F, _ = law.update(shard.F, mult * shard.f)
    shard.f = None
    return _moved(shard, law, learning_rate, next_hist, nb_max, C, unit)


def check_chunk(chart, X, y, w):
    """The in-memory NGBoost's checks on one chunk: X (NaN allowed), finite 2-D y, valid weights."""
    X = check_X(X, allow_nan=True, model="this model")
    y = check_y(y, X.shape[0], ndim=2)
    return X, (y if chart.y_dim > 1 else y[:, 0]), check_sample_weight(w, X.shape[0])
