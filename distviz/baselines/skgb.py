"""skGB, the multivariate NGBoost paper's scikit-learn baseline (O'Malley et al. 2023, Sec. 4).

scikit-learn's GradientBoostingRegressor (or, with ``backend="hist"``, HistGradientBoostingRegressor) per
output dimension with its own early stopping on the validation set, plus a constant diagonal covariance
from the training residuals.  It boosts with scikit-learn's loop, not distviz's engine; its fitted trees are
concatenated into one ``distviz.trees.flat.FlatForest`` (prediction, model files), and it shares the
per-dimension plumbing of ``IndepNGB`` (``distviz.estimators.ngboost._MultiOutputGaussian``).
"""

from __future__ import annotations

import time
from numbers import Integral

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from distviz.boosting.law import weighted_mean
from distviz.errors import DataError, check_fitted
from distviz.estimators.ngboost import _ROUND_PARAMS, _MultiOutputGaussian, _saved_params
from distviz.families.dist import MultivariateNormalDist
from distviz.validation import check_X

__all__ = ["skGB"]


def _check_float32_range(X, name="X") -> None:
    """Refuse finite features beyond float32's range, which GradientBoostingRegressor (float32 features) cannot hold."""
    big = np.abs(X) > np.finfo(np.float32).max
    if big.any():
        j = int(np.flatnonzero(big.any(axis=0))[0])
        raise DataError(f"{name} has values beyond +-3.4e38 in column {j}, which skGB with backend='gbr' stores as "
                        "float32; rescale that column or use backend='hist'.")


class _StopMonitor:
    """GradientBoostingRegressor monitor: validation MSE tracked incrementally, stop `patience` after the best."""

    def __init__(self, Xv, yv, wv, patience, learning_rate):
        self.Xv, self.yv, self.wv = Xv, yv, wv
        self.patience = patience
        self.lr = learning_rate
        self.pred = None
        self.losses = []
        self.best = 0

    def __call__(self, i, est, _locals):
        if self.pred is None:
            self.pred = np.asarray(est.init_.predict(self.Xv), dtype=float).reshape(-1)
        self.pred = self.pred + self.lr * est.estimators_[i, 0].predict(self.Xv)
        self.losses.append(weighted_mean((self.pred - self.yv) ** 2, self.wv))
        if self.best == 0 or self.losses[-1] < self.losses[self.best - 1]:
            self.best = i + 1
        return self.patience is not None and (i + 1) - self.best >= self.patience


class skGB(_MultiOutputGaussian):
    """scikit-learn GradientBoostingRegressor per output plus a constant diagonal covariance (paper Sec. 4).

    Each dimension stops ``early_stopping_rounds`` rounds after its best validation squared error (a
    fit monitor, as in the authors' code) and predicts with its trees up to that round; the
    covariance is the variance of its training residuals at the chosen round.
    ``backend="hist"`` uses HistGradientBoostingRegressor instead (depth 3, no leaf minimum, all
    ``n_estimators`` rounds fitted, then cut at best + patience): much faster for tens of
    thousands of rows, not the paper's learner.

    The predictive law of a row is ``N(mean(x), diag(var_))`` (``predict_dist``), with the mean
    of output k the k-th regressor's prediction after its chosen number of rounds.  The fitted
    trees are kept as one ``distviz.trees.flat.FlatForest`` (``forest_``), which predicts and is
    written by ``save``.

    Parameters
    ----------
    n_estimators : int, default=500
        Boosting rounds per output (at least 1).
    learning_rate : float, default=0.01
        Shrinkage of every tree (> 0).
    max_depth : int, default=3
        Depth of the regression trees.
    early_stopping_rounds : int or None, default=50
        Patience: stop an output this many rounds after its best validation squared error.  None
        fits all ``n_estimators`` rounds and holds out no rows.
    validation_fraction : float, default=0.1
        Share of the training rows held out for early stopping when :meth:`fit` gets no ``eval_set``.
    use_best : bool, default=True
        Predict with each output's best validation round (and ``var_``) rather than with all fitted
        rounds (and ``var_all_``).
    random_state : int, RandomState or None, default=None
        Seed of the validation split and of the scikit-learn regressors.
    backend : {"gbr", "hist"}, default="gbr"
        ``GradientBoostingRegressor`` (the paper's learner; no missing values in X) or
        ``HistGradientBoostingRegressor`` (missing values allowed).

    Attributes
    ----------
    models_ : list of sklearn regressors
        The fitted regressor of every output.
    n_iter_ : ndarray of shape (P,)
        Rounds kept per output (``gbr``: those fitted before the stop; ``hist``: at most best +
        patience).
    best_iterations_ : ndarray of shape (P,)
        Each output's round with the least validation squared error (``n_iter_`` without
        validation rows).
    best_iteration_ : int
        The largest of ``best_iterations_``.
    var_ : ndarray of shape (P,)
        Weighted variance (mean square) of the training residuals at the best rounds: the diagonal
        of the predicted covariance.
    var_all_ : ndarray of shape (P,)
        The same at ``n_iter_`` rounds.
    forest_ : distviz.trees.flat.FlatForest
        The kept trees of all outputs, used for prediction and persistence.
    init_ : ndarray of shape (P,)
        The regressors' start values.
    n_outputs_ : int
        P, the number of output columns.
    n_features_in_ : int
        Number of features seen in fit.
    fit_seconds_ : float
        Wall time of the last fit.

    See Also
    --------
    distviz.estimators.IndepNGB : the per-dimension NGBoost baseline of the same paper.

    Examples
    --------
    >>> import numpy as np
    >>> from distviz.baselines import skGB
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 3))
    >>> y = np.c_[X[:, 0], X[:, 1] - X[:, 2]] + 0.1 * rng.normal(size=(200, 2))
    >>> model = skGB(n_estimators=30, learning_rate=0.1, early_stopping_rounds=5, random_state=0).fit(X, y)
    >>> model.predict(X[:4]).shape, model.predict_dist(X[:4]).cov().shape
    ((4, 2), (4, 2, 2))
    >>> bool((model.best_iterations_ <= model.n_iter_).all())
    True
    """

    _parameter_constraints: dict = {**_ROUND_PARAMS, "n_estimators": [Interval(Integral, 1, None, closed="left")],
                                    "backend": [StrOptions({"gbr", "hist"})]}

    def __init__(self, *, n_estimators=500, learning_rate=0.01, max_depth=3, early_stopping_rounds=50,
                 validation_fraction=0.1, use_best=True, random_state=None, backend="gbr"):
        self.backend = backend
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.max_depth = max_depth
        self.early_stopping_rounds = early_stopping_rounds
        self.validation_fraction = validation_fraction
        self.use_best = use_best
        self.random_state = random_state

    def __sklearn_tags__(self):
        """scikit-learn tags: NaN in X only with backend='hist' (GradientBoostingRegressor refuses it)."""
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = self.backend == "hist"
        return tags

    def fit(self, X, y, sample_weight=None, eval_set=None, progress=None):
        """Fit one scikit-learn gradient boosting regressor per output column, with early stopping on ``eval_set``.

        The covariance is the diagonal of each output's training residual variance (at its best round and at all
        rounds), constant over x (the paper's skGB baseline, Sec. 4).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training features; NaN only with ``backend="hist"``.
        y : array-like of shape (n_samples,) or (n_samples, P)
            Targets, one column per output.
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Non-negative row weights; None weighs every row 1.
        eval_set : tuple (X_val, y_val) or (X_val, y_val, w_val), or None, default=None
            Validation rows whose squared error picks each output's best round.
        progress : callable or None, default=None
            Called as ``progress(k, P)`` after output k is fitted.

        Returns
        -------
        self : skGB
            The fitted estimator.

        Raises
        ------
        ConfigError
            A parameter out of range.
        DataError
            y is None or has another length than X; X holds NaN (``backend="gbr"``) or values beyond float32's range.
        """
        from sklearn.ensemble import GradientBoostingRegressor, HistGradientBoostingRegressor

        t0 = time.perf_counter()
        X, y, w, ev = self._prep(X, y, sample_weight, eval_set)
        if self.backend == "gbr":  # GradientBoostingRegressor has no missing-value support (the 'hist' backend has)
            for Z, nm in ((X, "X"),) + (((ev[0], "X_val"),) if ev is not None else ()):
                check_X(Z, allow_nan=False, name=nm, model="skGB with backend='gbr' (use backend='hist' for missing values)")
                _check_float32_range(Z, nm)
        P = y.shape[1]
        self.models_, best, n_iter, self.var_, self.var_all_ = [], [], [], [], []
        patience = self.early_stopping_rounds
        for k in range(P):
            if self.backend == "gbr":
                m = GradientBoostingRegressor(learning_rate=self.learning_rate, max_depth=self.max_depth,
                                              n_estimators=self.n_estimators, random_state=self.random_state)
                mon = None
                if ev is not None:
                    mon = _StopMonitor(ev[0], ev[1][:, k], ev[2], patience, self.learning_rate)
                m.fit(X, y[:, k], sample_weight=w, monitor=mon)
                n_k = m.n_estimators_
                best_k = mon.best if mon is not None and mon.best > 0 else n_k
            else:
                m = HistGradientBoostingRegressor(learning_rate=self.learning_rate, max_depth=self.max_depth,
                                                  max_iter=self.n_estimators, max_leaf_nodes=None,
                                                  min_samples_leaf=1, early_stopping=False,
                                                  random_state=self.random_state)
                m.fit(X, y[:, k], sample_weight=w)
                n_k = m.n_iter_
                best_k = n_k
                if ev is not None:
                    mse = [weighted_mean((p - ev[1][:, k]) ** 2, ev[2]) for p in m.staged_predict(ev[0])]
                    best_k = int(np.argmin(mse)) + 1
                    if patience is not None:
                        n_k = min(n_k, best_k + int(patience))
            self.models_.append(m)
            best.append(best_k)
            n_iter.append(n_k)
            for n_use, store in ((best_k, self.var_), (n_k, self.var_all_)):
                store.append(weighted_mean((y[:, k] - _staged_at(m, X, n_use)) ** 2, w))
            if progress is not None:
                progress(k + 1, P)
        self.best_iterations_ = np.asarray(best)
        self.best_iteration_ = int(self.best_iterations_.max())
        self.n_iter_ = np.asarray(n_iter)
        self.var_ = np.asarray(self.var_)
        self.var_all_ = np.asarray(self.var_all_)
        self.forest_, self.init_ = _skgb_forest(self.models_, self.n_iter_, X.shape[1])
        self.fit_seconds_ = time.perf_counter() - t0
        return self

    def _stops(self, max_iter):
        if max_iter is None:
            max_iter = "best" if self.use_best else "all"
        if max_iter == "best":
            return self.best_iterations_, self.var_
        if max_iter == "all":
            return self.n_iter_, self.var_all_
        return np.minimum(int(max_iter), self.n_iter_), None

    def _cov(self, n, var) -> np.ndarray:
        cov = np.zeros((n, len(var), len(var)))
        cov[:, np.arange(len(var)), np.arange(len(var))] = var
        return cov

    def predict_dist(self, X, max_iter=None) -> MultivariateNormalDist:
        """The predicted Gaussian per row: each output's boosted mean, a constant diagonal covariance of training residuals.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features; NaN (a missing value) only with ``backend="hist"``.
        max_iter : int, "best", "all" or None, default=None
            Rounds per output: None follows ``use_best``; "best" each output's best validation round (with the
            residual variance at it), "all" every fitted round, an int caps every output's rounds at it.

        Returns
        -------
        dist : MultivariateNormalDist
            Mean (n_samples, P), covariance (n_samples, P, P), the same diagonal on every row.

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        DataError
            When X has another number of features than the fit's (or NaN with ``backend="gbr"``).
        """
        self._check_fitted()
        X = self._validate_X(X, reset=False, allow_nan=self.backend == "hist")
        stops, var = self._stops(max_iter)
        var = self.var_ if var is None else var
        mean = self.forest_.predict(X, self.init_, np.maximum(np.asarray(stops, dtype=np.int64), 1))
        return MultivariateNormalDist(mean, self._cov(X.shape[0], var))

    def staged_predict_dist(self, X, max_iter=None):
        """The predicted Gaussian after each round (constant covariance; an output past its round count stays put).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features; NaN (a missing value) only with ``backend="hist"``.
        max_iter : int, "best", "all" or None, default=None
            Rounds per output: None follows ``use_best``; "best" each output's best validation round (with the
            residual variance at it), "all" every fitted round, an int caps every output's rounds at it.

        Yields
        ------
        dist : MultivariateNormalDist
            The n_samples laws after rounds 1, 2, ...

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        DataError
            When X has another number of features than the fit's (or NaN with ``backend="gbr"``).
        """
        self._check_fitted()
        X = self._validate_X(X, reset=False, allow_nan=self.backend == "hist")
        stops, var = self._stops(max_iter)
        cov = self._cov(X.shape[0], self.var_ if var is None else var)
        staged = self.forest_.staged_predict(X, self.init_, np.maximum(np.asarray(stops, dtype=np.int64), 1))
        next(staged)
        for mean in staged:
            yield MultivariateNormalDist(mean, cov)

    def _check_fitted(self):
        check_fitted(self, "forest_")

    # ------------------------------------------------------------------ persistence
    def _model_writer(self):
        """The model file :meth:`save` writes (``distviz.modelfile.ModelWriter``): the per-output start values, iteration
        counts, variances and the forest."""
        from distviz.modelfile import ModelWriter

        w = ModelWriter(self, _saved_params(self), {"n_outputs": int(self.n_outputs_),
                                                    "n_features": int(self.n_features_in_)})
        for name in ("init_", "best_iterations_", "n_iter_", "var_", "var_all_"):
            w.array(name.rstrip("_"), getattr(self, name))
        w.forest("forest", self.forest_)
        return w

    @classmethod
    def _read_model(cls, f) -> "skGB":
        """The fitted estimator :meth:`load` reads from the opened model file `f` (``distviz.modelfile.ModelFile``),
        every value checked before use."""
        est = f.construct(cls, f.params)
        p, P = f.value("n_features", int, 1, 2**31 - 1), f.value("n_outputs", int, 1, 2**16)
        est.init_ = f.array("init", (P,))
        est.n_iter_ = f.array("n_iter", (P,), "iu")
        est.best_iterations_ = f.array("best_iterations" if "model_best_iterations" in f.ds else "best_iteration", (P,), "iu")
        est.var_, est.var_all_ = f.array("var", (P,)), f.array("var_all", (P,))
        est.forest_ = f.forest("forest", p, P)
        if (est.n_iter_ < 1).any() or (est.best_iterations_ < 1).any() or (est.best_iterations_ > est.n_iter_).any():
            raise f.fail("its per-dimension round counts are out of range")
        if (est.var_ < 0).any() or (est.var_all_ < 0).any():
            raise f.fail("a residual variance is negative")
        if int(est.n_iter_.max()) != est.forest_.n_rounds:
            raise f.fail("its forest does not hold the fitted rounds")
        est.best_iteration_ = int(est.best_iterations_.max())
        est._names_from_file(f, p)
        est.n_outputs_ = P
        return est


def _staged_at(model, X, n):
    """Prediction of a fitted (Hist)GradientBoostingRegressor using its first n >= 1 trees."""
    n = max(int(n), 1)
    if n >= getattr(model, "n_estimators_", getattr(model, "n_iter_", 0)):
        return model.predict(X)
    for i, p in enumerate(model.staged_predict(X), start=1):
        if i == n:
            return p
    return model.predict(X)


def _skgb_forest(models, n_iter, n_features: int):
    """FlatForest and start values of skGB's per-dimension regressors, their first n_iter[k] trees each."""
    from distviz.trees.flat import FlatForest
    from distviz.trees.record import TreeRecord

    per_dim: list = []
    init: list = []
    f32 = True
    for m in models:
        if hasattr(m, "estimators_"):
            per_dim.append([TreeRecord.from_sklearn_tree(e) for e in m.estimators_[: int(n_iter[len(per_dim)]), 0]])
            init.append(float(np.asarray(m.init_.predict(np.zeros((1, n_features)))).reshape(-1)[0]))
        else:
            f32 = False
            per_dim.append([TreeRecord.from_sklearn_predictor(p[0]) for p in m._predictors[: int(n_iter[len(per_dim)])]])
            init.append(float(np.asarray(m._baseline_prediction).reshape(-1)[0]))
    trees, sizes, mult, cols = [], [], [], []
    for r in range(max(len(t) for t in per_dim)):
        k_r = [k for k, t in enumerate(per_dim) if r < len(t)]
        for k in k_r:
            trees.append(per_dim[k][r])
            cols.append(k)
            mult.append(float(models[k].learning_rate) if f32 else 1.0)
        sizes.append(len(k_r))
    return (FlatForest.from_records(trees, sizes, mult, cols, n_features, len(models), float32_input=f32),
            np.asarray(init))
