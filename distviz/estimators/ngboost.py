"""NGBoost in a family's chart theta, and the presets of the multivariate NGBoost paper.

``NGBoost`` boosts the unconstrained parameters theta of a chart (``distviz.families.charts``):
each round fits depth-3 regression trees to the natural gradient ``-Fisher(theta)^-1 grad NLL``
(paper eq. 1; O'Malley et al. 2023, Sec. 2.1, Algorithm 1), scales the step by a line search and
stops early on the validation NLL.  It is a *law* on the shared ``distviz.boosting.engine`` loop
(``ChartLaw``), not a second boosting loop.

Presets of the paper (Sec. 4), each predicting a P-variate Gaussian per row:

- ``NGB``: multivariate Normal in the Cholesky-of-precision chart (App. B), natural gradient;
- ``GB``: the same without the natural gradient (plain gradient of the NLL);
- ``IndepNGB``: P univariate Normal NGBoosts in (mu, log sigma), each with its own early stopping,
  combined into a diagonal covariance;
- ``skGB`` (``distviz.baselines.skgb``, not on this engine): scikit-learn's GradientBoostingRegressor per
  output dimension (own early stopping on the validation set) plus a constant diagonal covariance from the
  training residuals.

Conventions matched to the ``ngboost`` package (0.5.x): parameter order of its MultivariateNormal,
the marginal MLE start, depth-3 trees (one per parameter), its line search (double the scale while
the training loss stays below the round's starting loss, up to 512, then halve until it is
below), early stopping after ``early_stopping_rounds`` rounds without a strict improvement.
"""

from __future__ import annotations

import time
from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from distviz.boosting.charts import (
    ChartEngine,
    ChartLaw,
    check_normal_spread,
    resolve_chart,
    select_rounds_per_param,
)
from distviz.boosting.engine import weighted_mean
from distviz.boosting.predict import rounds_forest
from distviz.contract import Estimator
from distviz.errors import ConfigError, DataError, check_fitted
from distviz.families.dist import MultivariateNormalDist, NormalDist, from_natural
from distviz.validation import check_sample_weight, check_y

__all__ = ["NGBoost", "NGB", "GB", "IndepNGB"]

# ---------------------------------------------------------------------------------------------
# input checks
def _check_y(y, n, name="y") -> np.ndarray:
    """Targets (n, P) checked by distviz.validation.check_y (a 1-D y is one column)."""
    return check_y(y, n, name=name, ndim=2)


#: the parameter constraints the NGBoost family shares (scikit-learn's, distviz.contract)
_ROUND_PARAMS: dict = {
    "n_estimators": [Interval(Integral, 0, None, closed="left")],
    "learning_rate": [Interval(Real, 0, None, closed="neither")],
    "max_depth": [Interval(Integral, 1, None, closed="left")],
    "early_stopping_rounds": [Interval(Integral, 1, None, closed="left"), None],
    "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
    "use_best": ["boolean"],
    "random_state": ["random_state"],
}
_NGB_PARAMS: dict = {
    **_ROUND_PARAMS,
    "min_samples_leaf": [Interval(Integral, 1, None, closed="left")],
    "max_bins": "no_validation",   # an int or "exact", checked by distviz.trees.Binner
    "line_search": [StrOptions({"ngboost", "grow"}), "boolean", None],
}


# ---------------------------------------------------------------------------------------------
class _PredictedLaw(Estimator):
    """The predictions every NGBoost estimator derives from its predicted law: the mean, its stages, the NLL and the
    score.  Each estimator gives its state per row (``_state``: ``NGBoost``'s chart parameters, ``IndepNGB``'s
    diagonal Gaussian), the states after each round (``_staged_states``), the mean (``_mean``) and the NLL (``_nll``)
    of a state."""

    def predict(self, X, max_iter=None) -> np.ndarray:
        r"""The predicted mean :math:`E[y \mid x]` (scikit-learn's ``predict``; ``predict_dist`` has the spread).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features; NaN is a missing value, routed by each split.
        max_iter : int, "best", "all" or None, default=None
            Rounds to use (per parameter, or per output): None follows ``use_best`` (the best validation round, or all
            rounds), "best" / "all" force either, an int caps the rounds at it.

        Returns
        -------
        mean : ndarray of shape (n_samples,) for one output, (n_samples, P) for P outputs

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        ConfigError
            When ``max_iter`` is not a non-negative integer, "best", "all" or None.
        DataError
            When X has another number of features (or other feature names) than the fit's.
        """
        return self._mean(self._state(X, max_iter))

    def staged_predict(self, X, max_iter=None):
        """The predicted mean (as :meth:`predict`) after each round.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features; NaN is a missing value, routed by each split.
        max_iter : int, "best", "all" or None, default=None
            Rounds to use, as in :meth:`predict`.

        Yields
        ------
        mean : ndarray of shape (n_samples,) or (n_samples, P)
            The mean after rounds 0, 1, 2, ... (a parameter or output past its own round count stays put).

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        ConfigError
            When ``max_iter`` is not a non-negative integer, "best", "all" or None.
        DataError
            When X has another number of features (or other feature names) than the fit's.
        """
        for state in self._staged_states(X, max_iter):
            yield self._mean(state)

    def nll(self, X, y, max_iter=None) -> np.ndarray:
        r"""Per-row negative log-likelihood of y under the predicted law, :math:`-\log p(y_i \mid x_i)`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features; NaN is a missing value, routed by each split.
        y : array-like of shape (n_samples,) or (n_samples, P)
            Targets (one column per output).
        max_iter : int, "best", "all" or None, default=None
            Rounds to use, as in :meth:`predict`.

        Returns
        -------
        nll : ndarray of shape (n_samples,)

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        ConfigError
            When ``max_iter`` is not a non-negative integer, "best", "all" or None.
        DataError
            When X has another number of features (or other feature names) than the fit's, or y another number of
            rows than X.
        """
        return self._nll(self._state(X, max_iter), y)

    def score(self, X, y, sample_weight=None, max_iter=None) -> float:
        r"""Weighted mean log-likelihood of y, i.e. minus the mean NLL (higher is better, scikit-learn's convention).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features; NaN is a missing value, routed by each split.
        y : array-like of shape (n_samples,) or (n_samples, P)
            Targets (one column per output).
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Row weights of the average; None weighs every row 1.
        max_iter : int, "best", "all" or None, default=None
            Rounds to use, as in :meth:`predict`.

        Returns
        -------
        score : float
            :math:`\sum_i w_i \log p(y_i \mid x_i) / \sum_i w_i`.

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        ConfigError
            When ``max_iter`` is not a non-negative integer, "best", "all" or None.
        DataError
            When X has another number of features (or other feature names) than the fit's, or y another number of
            rows than X.
        """
        return -weighted_mean(self.nll(X, y, max_iter), check_sample_weight(sample_weight, np.asarray(X).shape[0]))


class NGBoost(_PredictedLaw):
    r"""Natural-gradient boosting of a chart's :math:`\theta` with histogram trees (Duan et al. 2020; O'Malley et al.
    2023, Algorithm 1).

    Each round fits one tree per parameter (or one multi-output tree) to minus the natural gradient
    :math:`\mathcal{I}(\theta)^{-1} \nabla_\theta \mathrm{NLL}` and scales the step by a line search.

    Parameters
    ----------
    chart : str or chart object, default="mvn_cholesky"
        A chart name ("mvn_cholesky", "normal", "poisson", "gamma", "eta:<family>"; see
        :func:`distviz.families.charts.get`) or a chart object.
    natural_gradient : bool, default=True
        Fit the trees to the natural gradient (True) or to the plain gradient in :math:`\theta` (False: the
        paper's GB).
    n_estimators : int, default=500
        Boosting rounds.
    learning_rate : float, default=0.01
        Shrinkage of every round's step (the paper's 0.01).
    max_depth : int, default=3
        Depth of each tree (ngboost's default learner is depth 3).
    min_samples_leaf : int, default=1
        Least number of rows in a leaf.
    max_bins : int or "exact", default=255
        Histogram bins per feature.
    tree_mode : {"separate", "shared"}, default="separate"
        One tree per parameter (ngboost, the paper) or one multi-output tree per round.
    line_search : {"ngboost", "grow", False}, default="ngboost"
        The step's scale: ngboost's doubling / halving rule, the engine's rule (grow while the loss falls), or 1.
    early_stopping_rounds : int or None, default=50
        Patience on the validation NLL (the paper's 50); None disables early stopping.
    validation_fraction : float or None, default=0.1
        Share of the training rows held out when :meth:`fit` gets no ``eval_set``.
    per_parameter_early_stopping : bool, default=False
        Each parameter keeps its own number of rounds, chosen on the validation data after the joint fit
        (``best_iteration_per_param_`` holds them).
    use_best : bool, default=True
        Predict with the best validation round (True) or with all fitted rounds.
    random_state : int, RandomState or None, default=None
        Seed of the validation split.

    Notes
    -----
    A scikit-learn estimator: parameters after ``chart`` are keyword-only. :meth:`predict` returns the mean
    :math:`E[y \mid x]` ((n,) for one output, (n, P) for P outputs); :meth:`predict_dist` gives the predicted law
    (a ``distviz.families.dist`` object), :meth:`predict_params` the chart parameters; :meth:`score` is the mean
    log-likelihood (higher is better). Methods used before fit raise ``distviz.errors.NotFittedError``.
    """

    def __init__(self, chart="mvn_cholesky", *, natural_gradient=True, n_estimators=500, learning_rate=0.01,
                 max_depth=3, min_samples_leaf=1, max_bins=255, tree_mode="separate", line_search="ngboost",
                 early_stopping_rounds=50, validation_fraction=0.1, per_parameter_early_stopping=False,
                 use_best=True, random_state=None):
        self.chart = chart
        self.natural_gradient = natural_gradient
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.max_depth = max_depth
        self.min_samples_leaf = min_samples_leaf
        self.max_bins = max_bins
        self.tree_mode = tree_mode
        self.line_search = line_search
        self.early_stopping_rounds = early_stopping_rounds
        self.validation_fraction = validation_fraction
        self.per_parameter_early_stopping = per_parameter_early_stopping
        self.use_best = use_best
        self.random_state = random_state

    def __sklearn_tags__(self):
        """scikit-learn tags: a regressor that takes 2-D y (one column per output)."""
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True  # NaN in X is a missing value the trees route (distviz.validation)
        tags.target_tags.multi_output = True
        tags.regressor_tags.poor_score = True  # score is a log-likelihood, not R^2: no 0.5 threshold applies
        return tags

    _dask_trainer = "ngboost"
    _parameter_constraints: dict = {
        **_NGB_PARAMS,
        "chart": "no_validation",   # a name or an object with the chart protocol (checked by resolve_chart)
        "natural_gradient": ["boolean"],
        "tree_mode": [StrOptions({"separate", "shared"})],
        "per_parameter_early_stopping": ["boolean"],
    }

    # ------------------------------------------------------------------ fit

    def _engine(self, law) -> ChartEngine:
        """The boosting engine of this model's settings (its rules drive the in-memory and the Dask fit alike)."""
        rule = "ngboost" if self.line_search == "ngboost" else bool(self.line_search)
        return ChartEngine(law, n_rounds=self.n_estimators, learning_rate=self.learning_rate,
                       tree_params=dict(max_depth=int(self.max_depth), min_samples_leaf=int(self.min_samples_leaf),
                                        max_bins=self.max_bins),
                       tree_mode=self.tree_mode, line_search=rule, early_stopping_rounds=self.early_stopping_rounds)

    def fit(self, X, y, sample_weight=None, eval_set=None, callbacks=(), progress=None):
        r"""Boost the chart's parameters :math:`\theta` on (X, y) (Duan et al.'s NGBoost; the paper's Sec. 3).

        Each round fits one tree per parameter (or one multi-output tree, ``tree_mode="shared"``) to the natural gradient
        :math:`I(\theta)^{-1} \nabla_\theta \mathrm{NLL}` (or the plain gradient when ``natural_gradient=False``), scales
        the step by the line search and shrinks it by ``learning_rate``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training features; NaN is a missing value, routed by each split.
        y : array-like of shape (n_samples,) or (n_samples, P)
            Targets: one column for a univariate chart, P columns for ``mvn_cholesky``.
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Non-negative row weights; None weighs every row 1.
        eval_set : tuple (X_val, y_val) or (X_val, y_val, w_val), or None, default=None
            Validation rows for early stopping. Without it and with ``early_stopping_rounds`` set,
            ``validation_fraction`` of the training rows is held out.
        callbacks : sequence of callables, default=()
            Engine callbacks, called after every round (see ``distviz.boosting.engine``).
        progress : callable or None, default=None
            Called as ``progress(round, n_estimators)`` after every round.

        Returns
        -------
        self : NGBoost
            The fitted estimator.

        Raises
        ------
        ConfigError
            A parameter out of range or an unknown chart, or ``per_parameter_early_stopping`` without validation rows.
        DataError
            y is None, has another length than X or another number of columns than the chart models, or varies too
            little for the Normal chart's start.
        InputTypeError
            X is a dask collection (fit it with the ``distviz.dask`` estimator).
        """
        from distviz.trees import Binner

        self._validate_params()
        if y is None:
            raise DataError("NGBoost requires y to be passed, but the target y is None; call fit(X, y) with the targets.")
        t0 = time.perf_counter()
        X = self._validate_X(X, reset=True, allow_nan=True)
        y = _check_y(y, X.shape[0])
        w = check_sample_weight(sample_weight, X.shape[0])
        X, y, w, ev = self._validation_rows(X, y, w, eval_set, split=self.early_stopping_rounds is not None,
                                           check_y=_check_y)
        chart = resolve_chart(self.chart, y.shape[1])
        if getattr(chart, "y_dim", y.shape[1]) != y.shape[1]:
            raise DataError(f"the {getattr(chart, 'name', 'chart')} chart models {chart.y_dim} output(s) but y has "
                            f"{y.shape[1]} columns; pass matching y or another chart.")
        y_fit = y if chart.y_dim > 1 else y[:, 0]
        check_normal_spread(chart, float(np.std(y_fit)) if getattr(chart, "name", "") == "normal" else 1.0)
        law = ChartLaw(chart, self.natural_gradient)
        self.binner_ = Binner(self.max_bins).fit(X, sample_weight=w)
        Xb = self.binner_.transform(X)
        valid = None
        cbs = list(callbacks)
        if ev is not None:
            Xv, yv, wv = ev
            yv_fit = yv if chart.y_dim > 1 else yv[:, 0]
            valid = (self.binner_.transform(Xv), yv_fit, wv)
        if self.per_parameter_early_stopping and valid is None:
            raise ConfigError("per_parameter_early_stopping needs validation data: pass eval_set or early_stopping_rounds.")
        engine = self._engine(law)
        res = engine.fit(Xb, y_fit, sample_weight=w, valid=valid, callbacks=cbs, progress=progress)
        self._set_result(res, chart, law, X.shape[1], y.shape[1], valid is not None,
                         engine.forests if len(engine.forests) == res.n_rounds else None)
        if self.per_parameter_early_stopping:
            self.best_iteration_per_param_ = select_rounds_per_param(self, ev[0], ev[1], ev[2])
        self.fit_seconds_ = time.perf_counter() - t0
        return self

    def _set_result(self, res, chart, law, n_features: int, n_outputs: int, has_valid: bool, forests=None) -> None:
        """The fitted attributes from the engine's result (the in-memory and the Dask fit alike)."""
        self.chart_, self.law_, self.forests_, self.result_ = chart, law, forests, res
        self.n_outputs_ = int(n_outputs)
        if getattr(self, "n_features_in_", None) != int(n_features):   # a Dask fit (the in-memory one set it)
            self.n_features_in_ = int(n_features)
            self.__dict__.pop("feature_names_in_", None)
        self.init_params_ = res.init
        self.forest_ = rounds_forest(res.rounds, int(n_features), law.dim)
        self.n_iter_ = res.n_rounds
        self.best_iteration_ = int(res.best_iteration) if has_valid else res.n_rounds
        self.best_iteration_per_param_ = np.full(law.dim, self.best_iteration_)
        self.train_loss_ = np.asarray(res.train_loss)
        self.valid_loss_ = np.asarray(res.valid_loss)
        self.scalings_ = np.asarray(res.scales[1:])

    # ------------------------------------------------------------------ predict
    def _check_fitted(self):
        check_fitted(self, "forest_")

    def _rounds_per_param(self, max_iter):
        """Number of rounds each parameter uses."""
        if max_iter is None:
            if self.use_best:
                return np.asarray(self.best_iteration_per_param_)
            return np.full(self.law_.dim, self.n_iter_)
        if max_iter == "best":
            return np.asarray(self.best_iteration_per_param_)
        if max_iter == "all":
            return np.full(self.law_.dim, self.n_iter_)
        if int(max_iter) != max_iter or max_iter < 0:
            raise ConfigError(f"max_iter must be a non-negative integer, 'best', 'all' or None, got {max_iter!r}.")
        return np.full(self.law_.dim, min(int(max_iter), self.n_iter_))

    def _binned(self, X):
        return self.binner_.transform(self._X(X))

    def _X(self, X) -> np.ndarray:
        return self._validate_X(X, reset=False, allow_nan=True)

    def staged_predict_params(self, X, max_iter=None):
        r"""The chart parameters :math:`\theta` after each round.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features; NaN is a missing value, routed by each split.
        max_iter : int, "best", "all" or None, default=None
            Rounds to use: None follows ``use_best`` (each parameter's best validation round, or all rounds), "best" /
            "all" force either, an int caps every parameter's rounds at it.

        Yields
        ------
        theta : ndarray of shape (n_samples, dim)
            The parameters after rounds 0 (the start value), 1, 2, ...; a parameter past its own round count stays put.

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        ConfigError
            When ``max_iter`` is not a non-negative integer, "best", "all" or None.
        DataError
            When X has another number of features (or other feature names) than the fit's.
        """
        self._check_fitted()
        X = self._X(X)
        yield from self.forest_.staged_predict(X, self.init_params_, self._rounds_per_param(max_iter))

    def predict_params(self, X, max_iter=None) -> np.ndarray:
        r"""The chart parameters :math:`\theta(x)` per row (e.g. :math:`(\mu, \log\sigma)` for the Normal chart).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features; NaN is a missing value, routed by each split.
        max_iter : int, "best", "all" or None, default=None
            Rounds to use: None follows ``use_best`` (each parameter's best validation round, or all rounds), "best" /
            "all" force either, an int caps every parameter's rounds at it.

        Returns
        -------
        theta : ndarray of shape (n_samples, dim)
            The boosted parameters, ``dim`` the chart's dimension (P + P(P+1)/2 for ``mvn_cholesky``).

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        ConfigError
            When ``max_iter`` is not a non-negative integer, "best", "all" or None.
        DataError
            When X has another number of features (or other feature names) than the fit's.
        """
        self._check_fitted()
        return self.forest_.predict(self._X(X), self.init_params_, self._rounds_per_param(max_iter))

    def _to_dist(self, F):
        ch = self.chart_
        if hasattr(ch, "cov"):
            return MultivariateNormalDist(ch.mean(F), ch.cov(F))
        if getattr(ch, "name", "") == "normal":
            return NormalDist(F[:, 0], np.exp(F[:, 1]))
        return from_natural(ch.family, ch.to_natural(F))

    def predict_dist(self, X, max_iter=None):
        """The predicted law per row, a ``distviz.families.dist`` object.

        ``MultivariateNormalDist`` for the mvn_cholesky chart (NGB, GB), ``NormalDist`` for ngboost's Normal chart, else
        the law of the chart's exponential family.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features; NaN is a missing value, routed by each split.
        max_iter : int, "best", "all" or None, default=None
            Rounds to use: None follows ``use_best`` (each parameter's best validation round, or all rounds), "best" /
            "all" force either, an int caps every parameter's rounds at it.

        Returns
        -------
        dist : UnivariateDistribution or MultivariateNormalDist
            n_samples laws, with ``mean``, ``var``, ``logpdf``, ``cdf`` / ``ppf`` / ``interval`` (univariate) and
            ``sample``.

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        ConfigError
            When ``max_iter`` is not a non-negative integer, "best", "all" or None.
        DataError
            When X has another number of features (or other feature names) than the fit's.

        Examples
        --------
        >>> import numpy as np
        >>> from distviz.estimators import NGBoost
        >>> X = np.linspace(0, 1, 40).reshape(-1, 1)
        >>> m = NGBoost("normal", n_estimators=5, early_stopping_rounds=None).fit(X, 2 * X[:, 0])
        >>> m.predict_dist(X[:3]).std().shape
        (3,)
        """
        return self._to_dist(self.predict_params(X, max_iter))

    def _mean(self, F) -> np.ndarray:
        """E[y | x] from theta: (n,) for one output, (n, P) for P outputs."""
        m = np.asarray(self.chart_.mean(F), dtype=float)
        return m.reshape(-1) if self.n_outputs_ == 1 else m.reshape(F.shape[0], self.n_outputs_)

    def staged_predict_dist(self, X, max_iter=None):
        """The predicted law (as :meth:`predict_dist`) after each round.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features; NaN is a missing value, routed by each split.
        max_iter : int, "best", "all" or None, default=None
            Rounds to use: None follows ``use_best`` (each parameter's best validation round, or all rounds), "best" /
            "all" force either, an int caps every parameter's rounds at it.

        Yields
        ------
        dist : UnivariateDistribution or MultivariateNormalDist
            The n_samples laws after rounds 0, 1, 2, ...

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        ConfigError
            When ``max_iter`` is not a non-negative integer, "best", "all" or None.
        DataError
            When X has another number of features (or other feature names) than the fit's.
        """
        for F in self.staged_predict_params(X, max_iter):
            yield self._to_dist(F)

    def _state(self, X, max_iter):
        return self.predict_params(X, max_iter)

    def _staged_states(self, X, max_iter):
        return self.staged_predict_params(X, max_iter)

    def _nll(self, F, y) -> np.ndarray:
        y = _check_y(y, F.shape[0])
        return self.chart_.nll(y if self.chart_.y_dim > 1 else y[:, 0], F)

    # ------------------------------------------------------------------ persistence
    def _model_writer(self):
        """The model file :meth:`save` writes (``distviz.modelfile.ModelWriter``): the
        parameters, the output and feature counts and the forest."""
        from distviz.modelfile import ModelWriter

        w = ModelWriter(self, _saved_params(self), {"n_outputs": int(self.n_outputs_),
                                                    "n_features": int(self.n_features_in_)})
        _write_ngboost(w, self, "")
        return w

    @classmethod
    def _read_model(cls, f) -> "NGBoost":
        """The fitted estimator :meth:`load` reads from the opened model file `f` (``distviz.modelfile.ModelFile``),
        every value checked before use."""
        m = f.construct(cls, f.params, lambda e: e._validate_params())
        p = f.value("n_features", int, 1, 2**31 - 1)
        _read_ngboost(f, m, "", p, f.value("n_outputs", int, 1, 2**20))
        m._names_from_file(f, p)
        return m


class NGB(NGBoost):
    """Multivariate Gaussian NGBoost in the Cholesky-of-precision chart (the paper's NGB, Sec. 3).

    :class:`NGBoost` with ``chart="mvn_cholesky"`` and the natural gradient: y of shape (n, P), one bivariate (or
    P-variate) Normal with full covariance per row.

    Parameters
    ----------
    n_estimators : int, default=500
        Boosting rounds.
    learning_rate : float, default=0.01
        Shrinkage of every round's step (the paper's 0.01).
    max_depth : int, default=3
        Depth of each tree (ngboost's default learner is depth 3).
    min_samples_leaf : int, default=1
        Least number of rows in a leaf.
    max_bins : int or "exact", default=255
        Histogram bins per feature.
    tree_mode : {"separate", "shared"}, default="separate"
        One tree per parameter (the paper) or one multi-output tree per round.
    line_search : {"ngboost", "grow", False}, default="ngboost"
        The step's scale: ngboost's doubling / halving rule, the engine's rule (grow while the loss falls), or 1.
    early_stopping_rounds : int or None, default=50
        Patience on the validation NLL (the paper's 50); None disables early stopping.
    validation_fraction : float or None, default=0.1
        Share of the training rows held out when :meth:`fit` gets no ``eval_set``.
    per_parameter_early_stopping : bool, default=False
        Each parameter keeps its own number of rounds, chosen on the validation data after the joint fit.
    use_best : bool, default=True
        Predict with the best validation round (True) or with all fitted rounds.
    random_state : int, RandomState or None, default=None
        Seed of the validation split.

    See Also
    --------
    IndepNGB : P independent univariate NGBoosts, the paper's baseline.
    distviz.dask.DaskNGB : the same estimator fitted on a Dask cluster.

    Examples
    --------
    >>> import numpy as np
    >>> from distviz.estimators import NGB
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(400, 2))
    >>> Y = np.c_[X[:, 0], X[:, 0] + X[:, 1]] + rng.normal(size=(400, 2))
    >>> est = NGB(n_estimators=30, learning_rate=0.1, early_stopping_rounds=None).fit(X, Y)
    >>> est.predict(X[:5]).shape
    (5, 2)
    """

    _parameter_constraints: dict = {k: v for k, v in NGBoost._parameter_constraints.items()
                                    if k not in ("chart", "natural_gradient")}
    _dask_estimator: str | None = "DaskNGB"

    def __init__(self, *, n_estimators=500, learning_rate=0.01, max_depth=3, min_samples_leaf=1, max_bins=255,
                 tree_mode="separate", line_search="ngboost", early_stopping_rounds=50, validation_fraction=0.1,
                 per_parameter_early_stopping=False, use_best=True, random_state=None):
        super().__init__("mvn_cholesky", natural_gradient=True, n_estimators=n_estimators,
                         learning_rate=learning_rate, max_depth=max_depth, min_samples_leaf=min_samples_leaf,
                         max_bins=max_bins, tree_mode=tree_mode, line_search=line_search,
                         early_stopping_rounds=early_stopping_rounds, validation_fraction=validation_fraction,
                         per_parameter_early_stopping=per_parameter_early_stopping, use_best=use_best,
                         random_state=random_state)


class GB(NGB):
    """NGB without the natural gradient: trees fit the plain NLL gradient in theta (the paper's GB).

    Parameters
    ----------
    n_estimators : int, default=500
        Boosting rounds.
    learning_rate : float, default=0.01
        Shrinkage of every round's step (the paper's 0.01).
    max_depth : int, default=3
        Depth of each tree (ngboost's default learner is depth 3).
    min_samples_leaf : int, default=1
        Least number of rows in a leaf.
    max_bins : int or "exact", default=255
        Histogram bins per feature.
    tree_mode : {"separate", "shared"}, default="separate"
        One tree per parameter or one multi-output tree per round.
    line_search : {"ngboost", "grow", False}, default="ngboost"
        The step's scale: ngboost's doubling / halving rule, the engine's rule (grow while the loss falls), or 1.
    early_stopping_rounds : int or None, default=50
        Patience on the validation NLL (the paper's 50); None disables early stopping.
    validation_fraction : float or None, default=0.1
        Share of the training rows held out when :meth:`fit` gets no ``eval_set``.
    per_parameter_early_stopping : bool, default=False
        Each parameter keeps its own number of rounds, chosen on the validation data after the joint fit.
    use_best : bool, default=True
        Predict with the best validation round (True) or with all fitted rounds.
    random_state : int, RandomState or None, default=None
        Seed of the validation split.
    """

    _dask_estimator = None

    def __init__(self, *, n_estimators=500, learning_rate=0.01, max_depth=3, min_samples_leaf=1, max_bins=255,
                 tree_mode="separate", line_search="ngboost", early_stopping_rounds=50, validation_fraction=0.1,
                 per_parameter_early_stopping=False, use_best=True, random_state=None):
        super().__init__(n_estimators=n_estimators, learning_rate=learning_rate, max_depth=max_depth,
                         min_samples_leaf=min_samples_leaf, max_bins=max_bins, tree_mode=tree_mode,
                         line_search=line_search, early_stopping_rounds=early_stopping_rounds,
                         validation_fraction=validation_fraction,
                         per_parameter_early_stopping=per_parameter_early_stopping, use_best=use_best,
                         random_state=random_state)
        self.natural_gradient = False


# ---------------------------------------------------------------------------------------------
class _MultiOutputGaussian(_PredictedLaw):
    """Shared fit/predict plumbing of the per-dimension baselines (IndepNGB, distviz.baselines.skGB).

    scikit-learn estimators: ``predict`` is the mean ((n,) for one output, (n, P) for P), ``predict_dist``
    the diagonal Gaussian, ``score`` the mean log-likelihood (higher is better).
    """

    def __sklearn_tags__(self):
        """scikit-learn tags: a regressor that takes 2-D y (one column per output)."""
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True  # NaN in X is a missing value the trees route (distviz.validation)
        tags.target_tags.multi_output = True
        tags.regressor_tags.poor_score = True  # score is a log-likelihood, not R^2: no 0.5 threshold applies
        return tags

    def _prep(self, X, y, sample_weight, eval_set):
        if y is None:
            raise DataError(f"{type(self).__name__} requires y to be passed, but the target y is None; call fit(X, y) "
                            "with the targets.")
        self._validate_params()
        X = self._validate_X(X, reset=True, allow_nan=True)   # skGB's gbr backend refuses NaN with its own sentence
        y = _check_y(y, X.shape[0])
        w = check_sample_weight(sample_weight, X.shape[0])
        X, y, w, ev = self._validation_rows(X, y, w, eval_set, split=self.early_stopping_rounds is not None,
                                           check_y=_check_y)
        self.n_outputs_ = y.shape[1]
        return X, y, w, ev

    def _mean(self, d) -> np.ndarray:
        """The mean of a MultivariateNormalDist: (n,) for one output, (n, P) for P outputs."""
        return d.mean()[:, 0].copy() if self.n_outputs_ == 1 else d.mean()

    def _state(self, X, max_iter):
        return self.predict_dist(X, max_iter)

    def _staged_states(self, X, max_iter):
        return self.staged_predict_dist(X, max_iter)

    def _nll(self, d, y) -> np.ndarray:
        return -d.logpdf(_check_y(y, len(d)))

    def _check_fitted(self):
        check_fitted(self, "models_")


class IndepNGB(_MultiOutputGaussian):
    """P independent univariate Normal NGBoosts in (mu, log sigma), each with its own early stopping (paper Sec. 4).

    Parameters
    ----------
    n_estimators : int, default=500
        Boosting rounds.
    learning_rate : float, default=0.01
        Shrinkage of every round's step (the paper's 0.01).
    max_depth : int, default=3
        Depth of each tree (ngboost's default learner is depth 3).
    min_samples_leaf : int, default=1
        Least number of rows in a leaf.
    max_bins : int or "exact", default=255
        Histogram bins per feature.
    line_search : {"ngboost", "grow", False}, default="ngboost"
        The step's scale: ngboost's doubling / halving rule, the engine's rule (grow while the loss falls), or 1.
    early_stopping_rounds : int or None, default=50
        Patience on the validation NLL (the paper's 50); None disables early stopping.
    validation_fraction : float or None, default=0.1
        Share of the training rows held out when :meth:`fit` gets no ``eval_set``.
    use_best : bool, default=True
        Predict with each output's best validation round (True) or with all fitted rounds.
    random_state : int, RandomState or None, default=None
        Seed of the validation split.

    Attributes
    ----------
    models_ : list of NGBoost
        The P univariate NGBoosts.
    n_iter_, best_iterations_ : ndarray of int, shape (P,)
        Rounds fitted and best validation round, per output.
    best_iteration_ : int
        The largest of ``best_iterations_``: the rounds the combined prediction reaches.
    """

    _parameter_constraints: dict = _NGB_PARAMS
    _dask_estimator = "DaskIndepNGB"
    _dask_trainer = "indep_ngb"

    def __init__(self, *, n_estimators=500, learning_rate=0.01, max_depth=3, min_samples_leaf=1, max_bins=255,
                 line_search="ngboost", early_stopping_rounds=50, validation_fraction=0.1, use_best=True,
                 random_state=None):
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.max_depth = max_depth
        self.min_samples_leaf = min_samples_leaf
        self.max_bins = max_bins
        self.line_search = line_search
        self.early_stopping_rounds = early_stopping_rounds
        self.validation_fraction = validation_fraction
        self.use_best = use_best
        self.random_state = random_state

    def fit(self, X, y, sample_weight=None, eval_set=None, progress=None):
        r"""Fit one univariate Normal NGBoost in :math:`(\mu, \log\sigma)` per output column, each with its own early
        stopping.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training features; NaN is a missing value, routed by each split.
        y : array-like of shape (n_samples,) or (n_samples, P)
            Targets, one column per output.
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Non-negative row weights; None weighs every row 1.
        eval_set : tuple (X_val, y_val) or (X_val, y_val, w_val), or None, default=None
            Validation rows for the outputs' early stopping.
        progress : callable or None, default=None
            Called as ``progress(done, P * n_estimators)`` after every round of every output.

        Returns
        -------
        self : IndepNGB
            The fitted estimator.

        Raises
        ------
        ConfigError
            A parameter out of range.
        DataError
            y is None or has another length than X.
        InputTypeError
            X is a dask collection (fit it with ``distviz.dask.DaskIndepNGB``).
        """
        t0 = time.perf_counter()
        X, y, w, ev = self._prep(X, y, sample_weight, eval_set)

        def fit_one(m, k, prog, evk):
            m.fit(X, y[:, k], sample_weight=w, eval_set=evk, progress=prog)
            m.__dict__.pop("feature_names_in_", None)   # the names are IndepNGB's (each output's fit saw an array)
            return m
        return self._fit_outputs(y.shape[1], ev, fit_one, progress, t0)

    def _fit_outputs(self, P, ev, fit_one, progress, t0):
        """Fit output k's univariate NGBoost by fit_one(model, k, progress, eval_set of column k) for k < P, one after
        another (the in-memory and the Dask fit alike), and keep them; returns self."""
        self.models_ = []
        for k in range(P):
            prog = None if progress is None else (lambda r, n, k=k: progress(k * n + r, P * n))
            self.models_.append(fit_one(self._univariate(), k, prog, None if ev is None else (ev[0], ev[1][:, k], ev[2])))
        self.best_iterations_ = np.array([m.best_iteration_ for m in self.models_])
        self.best_iteration_ = int(self.best_iterations_.max())
        self.n_iter_ = np.array([m.n_iter_ for m in self.models_])
        self.fit_seconds_ = time.perf_counter() - t0
        return self

    def _univariate(self) -> NGBoost:
        """The unfitted univariate Normal NGBoost of one output column."""
        return NGBoost("normal", natural_gradient=True, n_estimators=self.n_estimators,
                       learning_rate=self.learning_rate, max_depth=self.max_depth,
                       min_samples_leaf=self.min_samples_leaf, max_bins=self.max_bins, tree_mode="separate",
                       line_search=self.line_search, early_stopping_rounds=self.early_stopping_rounds,
                       validation_fraction=0.1, per_parameter_early_stopping=False, use_best=self.use_best,
                       random_state=self.random_state)

    def _combine(self, Fs) -> MultivariateNormalDist:
        mean = np.stack([F[:, 0] for F in Fs], axis=1)
        var = np.stack([np.exp(2 * F[:, 1]) for F in Fs], axis=1)
        cov = np.zeros(var.shape + (var.shape[1],))
        idx = np.arange(var.shape[1])
        cov[:, idx, idx] = var
        return MultivariateNormalDist(mean, cov)

    def predict_dist(self, X, max_iter=None) -> MultivariateNormalDist:
        r"""The diagonal Gaussian per row from the P univariate fits.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features; NaN is a missing value, routed by each split.
        max_iter : int, "best", "all" or None, default=None
            Rounds to use per output (as ``NGBoost.predict_params``): None follows ``use_best``.

        Returns
        -------
        dist : MultivariateNormalDist
            Mean (n_samples, P), covariance (n_samples, P, P) with :math:`\sigma_k^2(x)` on the diagonal.

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        DataError
            When X has another number of features (or other feature names) than the fit's.
        """
        self._check_fitted()
        X = self._validate_X(X, reset=False, allow_nan=True)
        return self._combine([m.predict_params(X, max_iter) for m in self.models_])

    def staged_predict_dist(self, X, max_iter=None):
        """The diagonal Gaussian after each round (an output past its own round count stays put).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features; NaN is a missing value, routed by each split.
        max_iter : int, "best", "all" or None, default=None
            Rounds to use per output (as ``NGBoost.predict_params``): None follows ``use_best``.

        Yields
        ------
        dist : MultivariateNormalDist
            The n_samples laws after rounds 0, 1, 2, ... up to the largest output's count.

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        DataError
            When X has another number of features (or other feature names) than the fit's.
        """
        self._check_fitted()
        X = self._validate_X(X, reset=False, allow_nan=True)
        gens = [m.staged_predict_params(X, max_iter) for m in self.models_]
        last = [next(g) for g in gens]
        yield self._combine(last)
        while True:
            moved = False
            for i, g in enumerate(gens):
                F = next(g, None)
                if F is not None:
                    last[i], moved = F, True
            if not moved:
                return
            yield self._combine(last)


    # ------------------------------------------------------------------ persistence
    def _model_writer(self):
        """The model file :meth:`save` writes (``distviz.modelfile.ModelWriter``): the
        parameters and the P univariate fits, each under its own prefix."""
        from distviz.modelfile import ModelWriter

        w = ModelWriter(self, _saved_params(self), {"n_outputs": int(self.n_outputs_),
                                                    "n_features": int(self.n_features_in_)})
        for k, m in enumerate(self.models_):
            _write_ngboost(w, m, f"dim{k}_")
        return w

    @classmethod
    def _read_model(cls, f) -> "IndepNGB":
        """The fitted estimator :meth:`load` reads from the opened model file `f` (``distviz.modelfile.ModelFile``),
        every value checked before use."""
        est = f.construct(cls, f.params)
        p, P = f.value("n_features", int, 1, 2**31 - 1), f.value("n_outputs", int, 1, 2**16)
        est.models_ = []
        for k in range(P):
            m = f.construct(NGBoost, est._univariate().get_params(deep=False), lambda e: e._validate_params())
            est.models_.append(_read_ngboost(f, m, f"dim{k}_", p, 1))
        est._names_from_file(f, p)
        est.n_outputs_ = P
        est.best_iterations_ = np.array([m.best_iteration_ for m in est.models_])
        est.best_iteration_ = int(est.best_iterations_.max())
        est.n_iter_ = np.array([m.n_iter_ for m in est.models_])
        return est


# ---------------------------------------------------------------------------------------------
# flat forests and persistence

def _saved_params(est) -> dict:
    """Constructor parameters of an estimator for its file; a chart object cannot be saved."""
    params = est.get_params(deep=False)
    if not isinstance(params.get("chart", ""), str):
        raise ConfigError("a model with a chart object cannot be saved; pass the chart by name (e.g. 'normal') "
                          "to save it.")
    rs = params.get("random_state")
    if rs is not None and not isinstance(rs, (int, np.integer)):
        params["random_state"] = None
    return params


def _write_ngboost(w, m, prefix: str) -> None:
    """Store a fitted NGBoost's prediction state under names starting with prefix."""
    import json

    w.ds.attrs[f"model_{prefix}fitted"] = json.dumps({"n_iter": int(m.n_iter_), "best_iteration": int(m.best_iteration_)})
    w.array(prefix + "init", m.init_params_)
    w.array(prefix + "best_iteration_per_param", np.asarray(m.best_iteration_per_param_, dtype=np.int64))
    w.array(prefix + "train_loss", m.train_loss_)
    w.array(prefix + "valid_loss", m.valid_loss_)
    w.array(prefix + "scalings", m.scalings_)
    w.forest(prefix + "forest", m.forest_)


def _read_ngboost(f, m, prefix: str, n_features: int, n_outputs: int):
    """Restore what _write_ngboost stored into the fresh NGBoost m (validated); returns m."""
    import json

    try:
        fitted = json.loads(f.ds.attrs[f"model_{prefix}fitted"])
        n_iter, best = int(fitted["n_iter"]), int(fitted["best_iteration"])
        if not (0 <= best <= n_iter) or fitted["n_iter"] != n_iter or fitted["best_iteration"] != best:
            raise ValueError
    except (KeyError, TypeError, ValueError):
        raise f.fail(f"the attribute model_{prefix}fitted is damaged") from None
    try:
        chart = resolve_chart(m.chart, n_outputs)
    except (ConfigError, TypeError, ValueError):
        raise f.fail("its chart is unknown") from None
    if getattr(chart, "y_dim", n_outputs) != n_outputs:
        raise f.fail(f"its chart models {chart.y_dim} outputs, not {n_outputs}")
    law = ChartLaw(chart, m.natural_gradient)
    m.init_params_ = f.array(prefix + "init", (law.dim,))
    per = f.array(prefix + "best_iteration_per_param", (law.dim,), "iu")
    if (per < 0).any() or (per > n_iter).any():
        raise f.fail("a per-parameter round count is out of range")
    m.train_loss_ = f.array(prefix + "train_loss", (None,), finite=False)
    m.valid_loss_ = f.array(prefix + "valid_loss", (None,), finite=False)
    m.scalings_ = f.array(prefix + "scalings", (None,), finite=False)
    m.forest_ = f.forest(prefix + "forest", n_features, law.dim)
    if m.forest_.n_rounds != n_iter:
        raise f.fail(f"its forest has {m.forest_.n_rounds} rounds, not {n_iter}")
    m.chart_, m.law_ = chart, law
    m.n_iter_, m.best_iteration_, m.best_iteration_per_param_ = n_iter, best, per
    m.n_features_in_, m.n_outputs_ = n_features, n_outputs
    m.forests_ = None
    return m
