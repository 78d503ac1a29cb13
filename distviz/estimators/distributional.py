"""``DistributionalBoosting``: exponential-family boosting with the five laws, in scikit-learn style.

Usage::

    from distviz.estimators import DistributionalBoosting
    m = DistributionalBoosting("poisson", law="mgd", n_estimators=300, learning_rate=0.1).fit(X, y)
    m.predict(X_new)           # E[y | x] (scikit-learn's predict; predict_moments gives mean and variance)
    m.predict_mean(X_new)      # eta*(x) = E[T(y) | x]
    m.score(X_test, y_test)    # mean log-likelihood (higher is better)
    m.trace_                   # xarray.Dataset: NLL, entropy, eta / eta* per round, node tables
    m.save("model.nc"); DistributionalBoosting.load("model.nc")

Laws (mirror_vs_natural_boosting.tex): ``mgd`` (M-law additive in eta*), ``ngd`` (N-law additive
in eta), ``gd`` (raw gradient additive in eta), and the crossed, biased ``mgd_natural`` /
``ngd_mean``; see ``distviz.boosting.laws``.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from distviz.boosting.engine import BoostingEngine
from distviz.boosting.laws import LAWS, bind_data_range, make_law
from distviz.boosting.predict import LawForest
from distviz.boosting.trace import TraceRecorder, build_trace, display_subset
from distviz.contract import Estimator, is_dask_collection, renamed_params
from distviz.errors import ConfigError, DataError, check_fitted
from distviz.validation import check_sample_weight, check_y_resolution

__all__ = ["DistributionalBoosting"]


class DistributionalBoosting(Estimator):
    r"""Gradient boosting of an exponential-family distribution (MGD, NGD, GD, crossed laws) with a full trace.

    Each round fits one regression tree to the law's pseudo-responses and adds its leaf values to the iterate:
    mirror-descent boosting (``law="mgd"``) is additive in the mean coordinate :math:`\eta^* = E[T(y) \mid x]`
    with tree target :math:`T(y) - \eta^*_t`; natural-gradient boosting (``"ngd"``) is additive in the natural
    coordinate :math:`\eta` with target :math:`g(\eta_t)^{-1} (T(y) - \eta^*_t)`, :math:`g` the Fisher
    information (mirror_vs_natural_boosting.tex, "Boosting of MGD" and "Boosting of NGD").

    Parameters
    ----------
    family : str or ExponentialFamily, default="normal"
        The output law: a name of :func:`distviz.families.get` (poisson, bernoulli, normal, gamma, exponential,
        categorical, mvn) or a family object.
    law : {"mgd", "ngd", "gd", "mgd_natural", "ngd_mean"}, default="mgd"
        The boosting law (see ``distviz.boosting.laws``): mirror descent, natural gradient, plain gradient descent
        in :math:`\eta`, and the two crossed (biased) realisations.
    n_estimators : int, default=500
        Boosting rounds (one tree each).
    learning_rate : float, default=0.1
        Shrinkage of every tree's leaf values.
    max_depth : int, default=3
        Depth of each tree.
    max_bins : int or "exact", default=255
        Histogram bins per feature, or one bin per distinct value.
    min_weight_leaf : float, default=1.0
        Least sum of sample weights in a leaf (an absolute weight).
    l2 : float, default=0.0
        L2 penalty on the leaf values.
    early_stopping_rounds : int or None, default=None
        Stop when the validation NLL has not improved for this many rounds; needs ``eval_set`` in :meth:`fit` or
        ``validation_fraction``.
    validation_fraction : float or None, default=None
        Share of the training rows held out as validation data when no ``eval_set`` is given.
    domain : {"backtrack", "project"}, default="backtrack"
        What happens to a row whose update leaves the family's domain (MGD can: a leaf mean is shared by rows with
        different iterates). "backtrack" halves that row's step until it goes at most half way to the boundary, so
        its slack (variance, rate, ...) at least halves and the NLL stays moderate; "project" maps it back with the
        family's ``project_mean`` / ``project_natural`` to within the family's margin of the boundary, which can
        make the NLL explode. Both count the rows in ``trace_.n_projected`` and give identical fits when no row
        leaves.
    trace_rows : int, default=2000
        Size of the subset of training rows whose iterates the trace records.
    random_state : int, RandomState or None, default=None
        Seed of the validation split and of the trace's subset.
    family_params : dict or None, default=None
        The family's options, such as ``{"K": 3}`` for categorical or ``{"P": 2}`` for mvn.

    Attributes
    ----------
    family_ : ExponentialFamily
        The fitted family object.
    n_iter_ : int
        Rounds fitted.
    best_iteration_ : int
        The round with the least validation NLL after an early-stopped fit (else ``n_iter_``); the ``predict_*``
        methods use it by default.
    trace_ : xarray.Dataset
        Train and validation NLL, generalised entropy, rows projected, :math:`\eta` and :math:`\eta^*` of the
        trace's rows per round, and every tree's node table (see ``distviz.boosting.trace``).
    result_ : BoostingResult
        The engine's record of the fit.
    n_features_in_ : int
        Features seen in :meth:`fit`.

    See Also
    --------
    distviz.estimators.NGB : NGBoost in a chart, univariate or multivariate.
    distviz.dask.DaskDistributionalBoosting : the same estimator fitted on a Dask cluster.

    Notes
    -----
    A scikit-learn estimator: every parameter but ``family`` is keyword-only and stored unchanged (checked in
    :meth:`fit`), so ``clone``, ``GridSearchCV`` and ``cross_val_score`` work. :meth:`predict` returns
    :math:`E[y \mid x]` (shape (n,), or (n, P) for the mvn family); :meth:`predict_dist` returns the predicted
    distribution (a ``distviz.families.dist`` object), :meth:`predict_moments` its mean and variance,
    :meth:`predict_natural` / :meth:`predict_mean` the iterates :math:`\eta` / :math:`\eta^*`. :meth:`score` is
    the mean log-likelihood (minus the mean NLL; higher is better). Methods used before fit raise
    ``distviz.errors.NotFittedError``.

    Examples
    --------
    >>> import numpy as np
    >>> from distviz.estimators import DistributionalBoosting
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(500, 2))
    >>> y = rng.poisson(np.exp(1 + X[:, 0]))
    >>> est = DistributionalBoosting("poisson", law="ngd", n_estimators=50).fit(X, y)
    >>> est.predict(X[:3]).shape
    (3,)
    >>> est.predict_dist(X[:3]).interval(0.9)[0].shape
    (3,)
    """

    def __init__(self, family="normal", *, law="mgd", n_estimators=500, learning_rate=0.1, max_depth=3, max_bins=255,
                 min_weight_leaf=1.0, l2=0.0, early_stopping_rounds=None, validation_fraction=None,
                 domain="backtrack", trace_rows=2000, random_state=None, family_params=None):
        """Store the settings; validation happens in fit."""
        self.family = family
        self.law = law
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.max_depth = max_depth
        self.max_bins = max_bins
        self.min_weight_leaf = min_weight_leaf
        self.l2 = l2
        self.early_stopping_rounds = early_stopping_rounds
        self.validation_fraction = validation_fraction
        self.domain = domain
        self.trace_rows = trace_rows
        self.random_state = random_state
        self.family_params = family_params

    _dask_estimator = "DaskDistributionalBoosting"
    _dask_trainer = "distributional"
    _parameter_constraints: dict = {
        "family": "no_validation",   # a name or an ExponentialFamily object (checked by _family_obj)
        "law": [StrOptions(set(LAWS))],
        "n_estimators": [Interval(Integral, 1, None, closed="left")],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "max_depth": [Interval(Integral, 1, None, closed="left")],
        "max_bins": "no_validation",   # an int or "exact", checked by distviz.trees.Binner
        "min_weight_leaf": [Interval(Real, 0, None, closed="left")],
        "l2": [Interval(Real, 0, None, closed="left")],
        "early_stopping_rounds": [Interval(Integral, 1, None, closed="left"), None],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither"), None],
        "domain": [StrOptions({"project", "backtrack"})],
        "trace_rows": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
        "family_params": [dict, None],
    }

    @property
    def family_kwargs(self) -> dict:
        """The family options (``family_params``, empty when None)."""
        return dict(self.family_params or {})

    def __sklearn_tags__(self):
        """scikit-learn tags: a regressor; the mvn family takes 2-D y."""
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True  # NaN in X is a missing value the trees route (distviz.validation)
        tags.target_tags.multi_output = True
        tags.regressor_tags.poor_score = True  # score is a log-likelihood, not R^2: no 0.5 threshold applies
        return tags

    def _family_obj(self):
        from distviz.families import ExponentialFamily, get
        if isinstance(self.family, ExponentialFamily):
            return self.family
        return get(self.family, **self.family_kwargs)


    # ------------------------------------------------------------------ fit
    def fit(self, X, y, sample_weight=None, eval_set=None, progress=None) -> "DistributionalBoosting":
        r"""Boost the family's distribution on (X, y): one tree per round, the law's update of the iterate.

        Each round fits a regression tree to the law's pseudo-responses (MGD: :math:`T(y) - \eta^*_t`, NGD:
        :math:`g(\eta_t)^{-1}(T(y) - \eta^*_t)`; mirror_vs_natural_boosting.tex, "Boosting of MGD" / "Boosting of NGD")
        and adds ``learning_rate`` times its leaf values to the iterate.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training features; NaN is a missing value, routed by each split.
        y : array-like of shape (n_samples,) or (n_samples, P)
            Targets in the family's support (counts for poisson, 0/1 for bernoulli, class labels 0..K-1 for
            categorical, P columns for mvn).
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Non-negative row weights; None weighs every row 1.
        eval_set : tuple (X_val, y_val) or (X_val, y_val, w_val), or None, default=None
            Validation rows: their NLL is traced each round and drives ``early_stopping_rounds``. Without it,
            ``validation_fraction`` (when set) holds out a share of the training rows.
        progress : callable or None, default=None
            Called as ``progress(round, n_estimators)`` after every round.

        Returns
        -------
        self : DistributionalBoosting
            The fitted estimator.

        Raises
        ------
        ConfigError
            A parameter out of range or an unknown option (raised from the constructor's settings here), or
            ``early_stopping_rounds`` without validation rows.
        DataError
            y is None, has the wrong length, or holds values outside the family's support; X holds infinite values.
        InputTypeError
            X is a dask collection (fit it with ``distviz.dask.DaskDistributionalBoosting``).
        """
        from distviz.trees import Binner

        self._validate_params()
        if y is None:
            raise DataError("DistributionalBoosting requires y to be passed, but the target y is None; "
                            "call fit(X, y) with the targets.")
        fam = self._family_obj()
        X = self._validate_X(X, reset=True, allow_nan=True)   # NaN: a missing value, routed by each split
        y = _family_y(fam, y, X.shape[0])
        check_y_resolution(getattr(fam, "name", ""), y)
        w = _check_weight(sample_weight, X.shape[0])
        rng = np.random.default_rng(self.random_state)
        X, y, w, valid = self._validation_rows(X, y, w, eval_set, split=self.validation_fraction is not None,
                                               check_y=lambda v, n, name: _family_y(fam, v, n, name),
                                               random_state=rng)
        fam = bind_data_range(fam, self.law, lambda: (np.min(y), np.max(y)))   # NGD: y's range bounds the domain
        law = make_law(self.law, fam, domain=self.domain)
        binner = Binner(max_bins=self.max_bins)
        Xb = binner.fit_transform(X) if w is None else binner.fit(X, sample_weight=w).transform(X)
        vb = None if valid is None else (binner.transform(valid[0]), valid[1], valid[2])
        idx = display_subset(X.shape[0], int(self.trace_rows), rng)
        rec = TraceRecorder(law, idx)
        res = self._engine(law).fit(Xb, y, sample_weight=w, valid=vb, callbacks=[rec], progress=progress)
        self._set_result(res, law, fam, rec, X, y, law.prepare(y, w).T)
        return self

    def _set_result(self, res, law, fam, rec, X, y, T) -> None:
        """The fitted attributes from the engine's result and the trace recorder's display rows (X, y, T(y)), the
        in-memory and the Dask fit alike."""
        self._law, self.family_, self.result_ = law, fam, res
        self.forest_ = LawForest.from_result(res)
        self.n_iter_ = res.n_rounds
        self.best_iteration_ = int(res.best_iteration)
        if getattr(self, "n_features_in_", None) != int(X.shape[1]):   # a Dask fit (the in-memory one set it)
            self.n_features_in_ = int(X.shape[1])
            self.__dict__.pop("feature_names_in_", None)
        self.trace_ = build_trace(res, rec, law, X=X, y=y, T=T, attrs=self._trace_attrs(),
                                  feature_names=getattr(self, "feature_names_in_", None))

    def _engine(self, law) -> BoostingEngine:
        """The boosting engine of this model's settings (its rules drive the in-memory and the Dask fit alike)."""
        return BoostingEngine(law, n_rounds=int(self.n_estimators), learning_rate=float(self.learning_rate),
                              tree_params=self._tree_params(), tree_mode="shared",
                              early_stopping_rounds=self.early_stopping_rounds)

    def _tree_params(self) -> dict:
        return {"max_depth": int(self.max_depth), "min_weight_leaf": float(self.min_weight_leaf), "l2": float(self.l2)}

    def _trace_attrs(self) -> dict:
        p = self.get_params()
        p["family"] = self.family_.name
        p["family_params"] = self.family_kwargs
        p = {k: (v if isinstance(v, (int, float, str, dict)) else str(v)) for k, v in p.items() if v is not None}
        return p

    # ------------------------------------------------------------------ predict
    def _check_fitted(self):
        check_fitted(self, "family_")

    def _rounds(self, max_iter):
        if max_iter is None:
            return self.best_iteration_
        max_iter = int(max_iter)
        if not 0 <= max_iter <= self.n_iter_:
            raise ConfigError(f"max_iter must lie in [0, {self.n_iter_}], got {max_iter}.")
        return max_iter

    def _predict_blocks(self, method, X, n_out, max_iter):
        """`method` on a dask array X: a dask array of predictions, chunk by chunk (distviz.distributed.predict_blocks)."""
        self._check_fitted()
        from distviz.distributed import predict_blocks
        return predict_blocks(method, X, n_out, max_iter=max_iter)

    def _raw(self, X, max_iter=None):
        self._check_fitted()
        X = self._validate_X(X, reset=False, allow_nan=True)
        return self.forest_.predict(self._law, X, self._rounds(max_iter))

    def predict_natural(self, X, max_iter=None) -> np.ndarray:
        r"""The natural parameter :math:`\eta(x)` of the predicted law per row.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features; NaN is a missing value, routed by each split. A dask array gives a dask array of predictions,
            computed chunk by chunk.
        max_iter : int or None, default=None
            Rounds of the forest to use, in ``[0, n_iter_]``; None uses ``best_iteration_``.

        Returns
        -------
        eta : ndarray of shape (n_samples, d)
            The natural coordinates (``d`` the family's dimension: 1 for poisson, 2 for normal, K-1 for categorical...).

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        ConfigError
            When ``max_iter`` lies outside ``[0, n_iter_]``.
        DataError
            When X has another number of features (or other feature names) than the fit's.
        """
        if is_dask_collection(X):
            return self._predict_blocks(self.predict_natural, X, self._law.dim, max_iter)
        F = self._raw(X, max_iter)
        return np.asarray(self._law.natural(F))

    def predict_mean(self, X, max_iter=None) -> np.ndarray:
        r"""The mean parameter :math:`\eta^*(x) = E[T(y) \mid x] = \nabla A(\eta(x))` of the predicted law per row.

        The expectation coordinates of mirror_vs_natural_boosting.tex Sec. 1 (the iterate of MGD).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features; NaN is a missing value, routed by each split. A dask array gives a dask array of predictions,
            computed chunk by chunk.
        max_iter : int or None, default=None
            Rounds of the forest to use, in ``[0, n_iter_]``; None uses ``best_iteration_``.

        Returns
        -------
        eta_star : ndarray of shape (n_samples, d)
            The expected sufficient statistics.

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        ConfigError
            When ``max_iter`` lies outside ``[0, n_iter_]``.
        DataError
            When X has another number of features (or other feature names) than the fit's.
        """
        if is_dask_collection(X):
            return self._predict_blocks(self.predict_mean, X, self._law.dim, max_iter)
        F = self._raw(X, max_iter)
        return np.asarray(self._law.mean(F))

    def predict(self, X, max_iter=None) -> np.ndarray:
        r"""The predicted mean :math:`E[y \mid x]` (scikit-learn's ``predict``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features; NaN is a missing value, routed by each split. A dask array gives a dask array of predictions,
            computed chunk by chunk.
        max_iter : int or None, default=None
            Rounds of the forest to use, in ``[0, n_iter_]``; None uses ``best_iteration_``.

        Returns
        -------
        mean : ndarray of shape (n_samples,), (n_samples, P) for mvn, or (n_samples, K) for categorical
            The mean of the predicted law on the scale of y (for categorical, the class probabilities).

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        ConfigError
            When ``max_iter`` lies outside ``[0, n_iter_]``.
        DataError
            When X has another number of features (or other feature names) than the fit's.

        Examples
        --------
        >>> import numpy as np
        >>> from distviz.estimators import DistributionalBoosting
        >>> X = np.linspace(0, 1, 40).reshape(-1, 1)
        >>> m = DistributionalBoosting("poisson", n_estimators=5).fit(X, (10 * X[:, 0]).round())
        >>> m.predict(X[:2]).shape
        (2,)
        """
        if is_dask_collection(X):
            return self._predict_blocks(self.predict, X, None, max_iter)
        return self.predict_moments(X, max_iter)["mean"]

    def predict_moments(self, X, max_iter=None) -> dict:
        """Mean and variance of the predicted law on the scale of y.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features; NaN is a missing value, routed by each split.
        max_iter : int or None, default=None
            Rounds of the forest to use, in ``[0, n_iter_]``; None uses ``best_iteration_``.

        Returns
        -------
        moments : dict
            ``{"mean": E[y | x], "variance": Var[y | x]}``, arrays of the shapes the family's ``mean_and_variance``
            gives: (n_samples,) each for a scalar y; for mvn the mean (n_samples, P) and covariance (n_samples, P, P);
            for categorical the class probabilities (n_samples, K) and the one-hot vector's covariance
            (n_samples, K, K).

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        ConfigError
            When ``max_iter`` lies outside ``[0, n_iter_]``.
        DataError
            When X has another number of features (or other feature names) than the fit's.
        """
        eta = self.predict_natural(X, max_iter)
        m, v = self.family_.mean_and_variance(eta)
        return {"mean": np.asarray(m), "variance": np.asarray(v)}

    def predict_dist(self, X, max_iter=None):
        """The predicted law of y per row, a ``distviz.families.dist`` object.

        Poisson, Bernoulli, Normal, Gamma, Exponential: the scipy.stats law of each row (a ``ScipyDistribution``);
        categorical: ``CategoricalDist`` (class probabilities); mvn: ``MultivariateNormalDist``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features; NaN is a missing value, routed by each split.
        max_iter : int or None, default=None
            Rounds of the forest to use, in ``[0, n_iter_]``; None uses ``best_iteration_``.

        Returns
        -------
        dist : UnivariateDistribution or MultivariateNormalDist
            n_samples laws, with ``mean``, ``var``, ``logpdf``, ``cdf``, ``ppf``, ``interval`` and ``sample``.

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        ConfigError
            When ``max_iter`` lies outside ``[0, n_iter_]``.
        DataError
            When X has another number of features (or other feature names) than the fit's.

        Examples
        --------
        >>> import numpy as np
        >>> from distviz.estimators import DistributionalBoosting
        >>> X = np.linspace(0, 1, 40).reshape(-1, 1)
        >>> m = DistributionalBoosting("normal", n_estimators=5).fit(X, 2 * X[:, 0])
        >>> lo, hi = m.predict_dist(X[:3]).interval(0.9)
        >>> bool(np.all(lo < hi))
        True
        """
        from distviz.families.dist import from_natural

        eta = self.predict_natural(X, max_iter)   # (checks the fit before family_ is read)
        return from_natural(self.family_, eta)

    def staged_predict_natural(self, X):
        r"""The natural parameter :math:`\eta(x)` after each round.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features; NaN is a missing value, routed by each split.

        Yields
        ------
        eta : ndarray of shape (n_samples, d)
            The natural coordinates after rounds 1, 2, ..., ``n_iter_``.

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        DataError
            When X has another number of features than the fit's.
        """
        self._check_fitted()
        X = self._validate_X(X, reset=False, allow_nan=True)
        for r, F in enumerate(self.forest_.staged(self._law, X, self.n_iter_)):
            if r:
                yield np.asarray(self._law.natural(F))

    def staged_predict_mean(self, X):
        r"""The mean parameter :math:`\eta^*(x) = E[T(y) \mid x]` after each round.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features; NaN is a missing value, routed by each split.

        Yields
        ------
        eta_star : ndarray of shape (n_samples, d)
            The expected sufficient statistics after rounds 1, 2, ..., ``n_iter_``.

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        DataError
            When X has another number of features than the fit's.
        """
        self._check_fitted()
        X = self._validate_X(X, reset=False, allow_nan=True)
        for r, F in enumerate(self.forest_.staged(self._law, X, self.n_iter_)):
            if r:
                yield np.asarray(self._law.mean(F))

    def nll(self, X, y, max_iter=None) -> np.ndarray:
        r"""Per-row negative log-likelihood of y under the predicted law, :math:`A(\eta) - \eta^\top T(y) - \log h(y)`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features; NaN is a missing value, routed by each split.
        y : array-like of shape (n_samples,) or (n_samples, P)
            Targets in the family's support.
        max_iter : int or None, default=None
            Rounds of the forest to use, in ``[0, n_iter_]``; None uses ``best_iteration_``.

        Returns
        -------
        nll : ndarray of shape (n_samples,)
            :math:`-\log p(y_i \mid x_i)` per row.

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        ConfigError
            When ``max_iter`` lies outside ``[0, n_iter_]``.
        DataError
            When X has another number of features (or other feature names) than the fit's.
            Also when y lies outside the family's support.
        """
        self._check_fitted()
        y = self.family_.check_y(y)
        return self.family_.nll(y, self.predict_natural(X, max_iter))

    def score(self, X, y, sample_weight=None, max_iter=None) -> float:
        r"""Weighted mean log-likelihood of y, i.e. minus the mean NLL (higher is better, scikit-learn's convention).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features; NaN is a missing value, routed by each split.
        y : array-like of shape (n_samples,) or (n_samples, P)
            Targets in the family's support.
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Row weights of the average; None weighs every row 1.
        max_iter : int or None, default=None
            Rounds of the forest to use, in ``[0, n_iter_]``; None uses ``best_iteration_``.

        Returns
        -------
        score : float
            :math:`\sum_i w_i \log p(y_i \mid x_i) / \sum_i w_i`.

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        ConfigError
            When ``max_iter`` lies outside ``[0, n_iter_]``.
        DataError
            When X has another number of features (or other feature names) than the fit's.
            Also when y lies outside the family's support.

        Examples
        --------
        >>> import numpy as np
        >>> from distviz.estimators import DistributionalBoosting
        >>> X = np.linspace(0, 1, 40).reshape(-1, 1)
        >>> y = (10 * X[:, 0]).round()
        >>> m = DistributionalBoosting("poisson", n_estimators=5).fit(X, y)
        >>> m.score(X, y) > DistributionalBoosting("poisson", n_estimators=1).fit(X, y).score(X, y)
        True
        """
        v = self.nll(X, y, max_iter)
        w = _check_weight(sample_weight, len(v))
        return -float(np.average(v, weights=w))

    # ------------------------------------------------------------------ persistence
    def _model_writer(self):
        """The model file :meth:`save` writes (``distviz.modelfile.ModelWriter``): the parameters, the iteration counts, the
        training targets' range that bounded the domain, the start F_0, the forest and the trace."""
        from distviz.modelfile import ModelWriter

        params = self.get_params()
        fam = params["family"]
        params["family"] = fam if isinstance(fam, str) else self.family_.name
        if not isinstance(fam, str):
            params["family_params"] = {k: int(getattr(self.family_, k)) for k in ("K", "P")
                                       if hasattr(self.family_, k) and self.family_.name in ("categorical", "mvn")}
        fitted: dict = {"n_iter": int(self.n_iter_), "best_iteration": int(self.best_iteration_),
                        "n_features": int(self.n_features_in_)}
        y_range = getattr(self.family_, "y_range", None)
        if y_range is not None:   # the training targets' range that bounded the domain (predictions replay it)
            fitted["y_range_lo"], fitted["y_range_hi"] = float(y_range[0]), float(y_range[1])
        flat = self.forest_.flat
        flat.n_features = int(self.n_features_in_)  # the fit's feature count (a forest of no trees cannot tell)
        w = ModelWriter(self, params, fitted, trace=self.trace_)
        w.array("init", self.forest_.init)
        w.forest("forest", flat)
        return w

    @classmethod
    def _read_model(cls, f) -> "DistributionalBoosting":
        """The fitted estimator :meth:`load` reads from the opened model file `f` (``distviz.modelfile.ModelFile``),
        every value checked before use."""
        params = renamed_params(f.params)
        family = params.pop("family", None)
        if not isinstance(family, str):
            raise f.fail("its family is not a name")
        own = set(cls().get_params()) - {"family"}
        extra = {k: params.pop(k) for k in list(params) if k not in own}   # family options of files before family_params
        if extra and params.get("family_params") is None:
            params["family_params"] = extra
        m = f.construct(cls, params, lambda e: (e._validate_params(), e._family_obj()), family=family)
        fam = m._family_obj()
        n_iter = f.value("n_iter" if "n_iter" in f.fitted else "n_rounds", int, 0)   # "n_rounds": files before 28
        p = f.value("n_features", int, 1, 2**31 - 1)
        init = f.array("init", (fam.dim if hasattr(fam, "dim") else None,))
        flat = f.forest("forest", p, init.shape[0])
        if flat.n_rounds != n_iter or flat.n_trees != n_iter:
            raise f.fail(f"its forest has {flat.n_rounds} rounds, not n_iter={n_iter}")
        m.best_iteration_ = f.value("best_iteration", int, 0, n_iter)
        if "y_range_lo" in f.fitted:
            fam = fam.with_data_range(f.value("y_range_lo", float), f.value("y_range_hi", float))
        m.family_ = fam
        m._law = make_law(m.law, fam, domain=m.domain)
        if m._law.dim != init.shape[0]:
            raise f.fail(f"its start value has {init.shape[0]} entries, not the family's {m._law.dim}")
        m.forest_ = LawForest(init, flat)
        m.n_iter_ = n_iter
        m._names_from_file(f, p)
        m.trace_ = f.trace()
        return m


def _family_y(fam, y, n: int, name: str = "y") -> np.ndarray:
    """Targets checked by the family (its support and shape), one per row of X."""
    y = fam.check_y(y)
    if len(y) != n:
        raise DataError(f"{name} has {len(y)} rows but X has {n}; pass one target per row.")
    return y


def _check_weight(w, n):
    """None, or sample weights checked by distviz.validation.check_sample_weight."""
    return check_sample_weight(w, n)
