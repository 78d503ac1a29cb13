"""NGBoost's law on the engine: boosting a chart's unconstrained parameters theta (O'Malley et al. 2023, Algorithm 1).

``ChartLaw`` is what the shared ``distviz.boosting.engine`` loop boosts for the estimators of
``distviz.estimators.ngboost`` (NGBoost, NGB, GB, IndepNGB) in memory and for ``distviz.distributed.ngb`` on Dask
workers: each round fits regression trees to minus the natural gradient ``-Fisher(theta)^-1 grad NLL`` (paper
eq. 1) or the plain gradient.  ``ChartEngine`` fits a round's per-parameter trees in one batched call;
:func:`select_rounds_per_param` chooses each parameter's number of rounds on validation rows.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from distviz.boosting.engine import BoostingEngine, weighted_mean
from distviz.boosting.law import Law
from distviz.errors import ConfigError, DataError
from distviz.validation import check_sample_weight, check_X, check_y

__all__ = ["ChartEngine", "ChartLaw", "check_normal_spread", "resolve_chart", "select_rounds_per_param"]

#: the Normal chart's initial variance is floored at 1e-12 (sd 1e-6): y must vary by more than this
NORMAL_MIN_SD = 1e-5

class ChartLaw(Law):
    """Engine law boosting a chart's theta with (natural) gradient targets; update is plain addition.

    O'Malley et al. 2023, Algorithm 1: the trees fit minus the natural gradient
    ``-Fisher(theta)^-1 grad NLL`` (eq. 1), or minus the plain gradient without ``natural_gradient``.

    Parameters
    ----------
    chart : chart
        A chart of ``distviz.families.charts`` (unconstrained parameters theta).
    natural_gradient : bool
        Natural gradient (NGB) or plain gradient (GB) targets.
    """

    gain_name = "Gain^reg"
    description = "NGBoost in the chart theta: trees on minus the (natural) gradient of the NLL"

    def __init__(self, chart, natural_gradient: bool = True):
        """`chart` follows the protocol of distviz.families.charts."""
        self.chart = chart
        self.natural_gradient = bool(natural_gradient)
        self.dim = int(chart.dim)
        self.name = ("ngd:" if natural_gradient else "gd:") + str(getattr(chart, "name", type(chart).__name__))
        # charts of this package with a fused unchecked kernel (inputs were validated at fit time)
        self._fast = getattr(chart, "_run_unchecked", None)
        self._along = getattr(chart, "_mean_nll_along", None)

    def prepare(self, y, w):
        """Cache the validated targets."""
        if self._fast is not None:
            y = np.ascontiguousarray(np.asarray(y, dtype=float).reshape(len(y), -1))
        return {"y": y}

    def init(self, data, w):
        """Marginal MLE of theta (Algorithm 1's theta^(0))."""
        return np.asarray(self.chart.init_theta(data["y"], w), dtype=float)

    def loss(self, F, data):
        """Per-row NLL at theta = F."""
        if self._fast is not None:
            return self._fast(data["y"], F, False, False)[0]
        return self.chart.nll(data["y"], F)

    def targets(self, F, data, learning_rate):
        """Pseudo-responses: minus the natural gradient (or gradient) of the NLL in theta."""
        if self._fast is not None:
            _, g, ng = self._fast(data["y"], F, not self.natural_gradient, self.natural_gradient)
            return -(ng if self.natural_gradient else g)
        if self.natural_gradient:
            return -self.chart.natural_gradient(data["y"], F)
        return -self.chart.nll_grad(data["y"], F)

    def update(self, F, step):
        """theta + step (every chart is unconstrained, nothing is projected)."""
        return F + step, np.zeros(F.shape[0], dtype=bool)

    def mean_loss_along(self, F, f, s, data, w):
        """Weighted mean NLL at theta = F + s f (fused for charts that offer it; for the line search)."""
        if self._along is not None:
            return self._along(data["y"], F, f, s, w)
        Fn, _ = self.update(F, s * f)
        return weighted_mean(self.loss(Fn, data), w)


@njit(cache=True)
def _gather_leaves(value, leaf, out, cols):
    """out[i, cols[b]] = value[b, leaf[b, i], 0]: the training-row outputs of B single-output trees."""
    for b in range(leaf.shape[0]):
        c = cols[b]
        for i in range(leaf.shape[1]):
            out[i, c] = value[b, leaf[b, i], 0]


class ChartEngine(BoostingEngine):
    """The shared engine fitting the per-parameter trees of a round in one batched call (``_fit_trees``)."""

    def __init__(self, law, **kw):
        super().__init__(law, **kw)
        self.forests: list = []

    def _fit_trees(self, Xb, R, w, cols, tree_kwargs):
        """One tree per output in ONE batched call (trees.fit_many) instead of a Python loop of fits."""
        from distviz.trees import BinnedX, fit_many

        if self.tree_mode != "separate" or tree_kwargs or not isinstance(Xb, BinnedX):
            return super()._fit_trees(Xb, R, w, cols, tree_kwargs)
        forest = fit_many(Xb, np.ascontiguousarray(R[:, cols].T), sample_weight=w, **self.tree_params)
        out = np.zeros_like(R)
        _gather_leaves(forest.value_, forest.train_leaf_, out, np.asarray(cols, dtype=np.int64))
        trees = forest.trees
        # the (B, n) training-row leaf ids are not needed after this round: keeping them would cost
        # rounds * params * n * 4 bytes (half a gigabyte for 1000 rounds of 27000 rows)
        forest.train_leaf_ = None
        for t in trees:
            t.train_leaf_ = None
        self.forests.append((forest, np.asarray(cols)))
        return trees, [np.asarray([k]) for k in cols], out


def select_rounds_per_param(model, X_val, y_val, w_val=None, sweeps: int = 2, max_rows: int = 4000) -> np.ndarray:
    """Per-parameter early stopping: each parameter's number of rounds, chosen on validation data.

    Starting from the joint best round for every parameter, coordinate descent sets parameter k's
    round count n_k in 0..n_iter_ to the value that minimises the validation NLL with the other
    counts fixed (``sweeps`` passes).  The additive model is truncated per parameter, not refitted
    (the stopping iterations of boosted GAMLSS, Mayr et al. 2012, chosen without a grid); the
    validation NLL can only fall below the joint best round's.  At most ``max_rows`` validation rows
    (a fixed random subset) are used.
    """
    model._check_fitted()
    X_val = check_X(X_val, allow_nan=True, name="X_val")
    yv = check_y(y_val, X_val.shape[0], name="y_val", ndim=2)
    wv = check_sample_weight(w_val, X_val.shape[0], name="w_val")
    if X_val.shape[0] > max_rows:  # bound the (rounds, rows, params) cache
        keep = np.sort(np.random.default_rng(0).choice(X_val.shape[0], max_rows, replace=False))
        X_val, yv, wv = X_val[keep], yv[keep], (None if wv is None else wv[keep])
    Xb = model._binned(X_val)
    yv = yv if model.chart_.y_dim > 1 else yv[:, 0]
    vdata = model.law_.prepare(yv, wv)
    K, R, nv = model.law_.dim, model.n_iter_, Xb.shape[0]
    # per-round validation contribution of every parameter, accumulated: cum[k][r] = sum of the first r steps
    steps = np.zeros((R, nv, K))
    forests = getattr(model, "forests_", None)
    for r, rnd in enumerate(model.result_.rounds):
        if forests is not None:
            forest, cols = forests[r]
            steps[r][:, cols] = rnd.multiplier * forest.predict(Xb)[:, :, 0].T
        else:
            for t, g in zip(rnd.trees, rnd.groups):
                steps[r][:, np.asarray(g)] = rnd.multiplier * t.predict(Xb).reshape(nv, len(g))
    cum = np.concatenate([np.zeros((1, nv, K)), np.cumsum(steps, axis=0)], axis=0)  # (R + 1, nv, K)
    del steps
    F0 = np.tile(model.init_params_, (nv, 1))
    n = np.full(K, int(model.result_.best_iteration) if model.valid_loss_.size > 1 else R)

    def loss(F):
        with np.errstate(all="ignore"):
            v = weighted_mean(model.law_.loss(F, vdata), wv)
        return v if np.isfinite(v) else np.inf

    F = F0 + cum[n, :, np.arange(K)].T
    best = loss(F)
    for _ in range(int(sweeps)):
        changed = False
        for k in range(K):
            G = F.copy()
            for r in range(R + 1):
                if r == n[k]:
                    continue
                G[:, k] = F0[:, k] + cum[r, :, k]
                v = loss(G)
                if v < best:
                    best, n[k], changed = v, r, True
            F[:, k] = F0[:, k] + cum[n[k], :, k]
        if not changed:
            break
    return n



def resolve_chart(chart, P: int):
    """The chart object of `chart`: a name (see distviz.families.charts.get; "mvn_cholesky" for P outputs) or an object
    with the chart protocol (ConfigError otherwise)."""
    from distviz.families import charts

    if isinstance(chart, str):
        key = chart.strip().lower().replace("-", "_")
        if key in ("mvn_cholesky", "mvn", "cholesky", "multivariate_normal"):
            from distviz.families.mvn_cholesky import MVNCholesky

            return MVNCholesky(P)
        return charts.get(chart)
    if not all(hasattr(chart, a) for a in ("dim", "nll", "nll_grad", "natural_gradient", "init_theta")):
        raise ConfigError(f"chart must be a chart name or an object with the chart protocol, got {chart!r}.")
    return chart

def check_normal_spread(chart, sd: float) -> None:
    """DataError when the Normal chart's targets vary by less than its start resolves (sd: y's standard deviation)."""
    if getattr(chart, "name", "") == "normal" and 0 < sd < NORMAL_MIN_SD:
        raise DataError(f"y varies by only {sd:.3g}, below what the Normal chart's start resolves; multiply y "
                        f"by {10.0 ** np.ceil(-np.log10(sd)):.0e} before fitting and divide predictions by it.")
