"""Wasserstein gradient boosting (WGBoost) for posterior regression: SKA, FKA, NKA and Langevin.

Matsubara, "Wasserstein Gradient Boosting" (../shared/papers/wasserstein_gradient_boosting.md).
Each input x gets N particles F^n(x) in R^d; every round fits trees to a kernelised Wasserstein
direction of KL(. | pi_i) at the current particles and moves them, F^n <- F^n + nu f^n (eq. 5):
  ska      v = -G* / H*              (eq. 7-9, Algorithm 3; the default)
  fka      v = -G*                   (eq. 7)
  nka      v = K H^{-1} (-G*)        (eq. 17, Algorithm 4; batched (N d) x (N d) solves, regularised:
                                     PD Hessian blocks + Levenberg ridge, and a damped step per round)
  langevin v = grad log pi + sqrt(2/nu) xi   (App. B, Algorithm 2)
The rounds run on the shared boosting engine (`distviz.boosting.engine.BoostingEngine`, with the law
`distviz.boosting.wg_law.WGLaw`): the current particles at the training rows are kept from round to
round (no re-prediction of earlier trees), early stopping is the engine's rule (on the validation NLL,
RMSE or both), and a trace records particles, NLL and MMD^2 per round for the pages, with the same
fault counters as the law trace: ``n_projected`` (rows whose NKA step was damped into the trust region),
``n_nonfinite`` (rows whose direction was NaN / inf and got no update) and attribute ``stop_reason``
(why boosting stopped early, e.g. early stopping or a round that would make the NLL non-finite; ""
when it ran every round).
"""

from __future__ import annotations

import time
import warnings
from numbers import Integral, Real

import numpy as np
import xarray as xr
from sklearn.exceptions import DataConversionWarning
from sklearn.utils._param_validation import Interval, StrOptions

from distviz.boosting.engine import BoostingEngine
from distviz.boosting.predict import rounds_forest
from distviz.boosting.wg_init import VARIANTS as FLOW_VARIANTS
from distviz.boosting.wg_init import init_flow
from distviz.boosting.wg_law import ParticleTrace, WGLaw
from distviz.boosting.wg_trees import TreeLearner
from distviz.contract import Estimator, renamed_params
from distviz.errors import ConfigError, DataError, check_fitted
from distviz.families.posteriors import CategoricalTarget, NormalTarget, PoissonTarget, lse, make_target
from distviz.validation import check_sample_weight, check_y

METHODS = ("ska", "fka", "nka", "langevin")
SHARING = ("shared", "per_particle")


class WGBoost(Estimator):
    r"""Wasserstein gradient boosting: N particles per input approximating the pointwise posteriors :math:`\pi_i`.

    Each round fits trees to the kernelised Wasserstein gradient direction of every input's particles towards
    its posterior (WGBoost paper, eq. 5) and moves the particles along it; the prediction is the particles'
    predictive mixture (eq. 6).

    Parameters
    ----------
    target : str, dict or Target
        The pointwise posterior: "normal", "categorical" or "poisson", a spec dict, or a
        ``distviz.families.posteriors.Target`` object.
    n_particles : int, default=10
        Particles N per input.
    method : {"ska", "fka", "nka", "langevin"}, default="ska"
        The direction: SKA (eq. 7-9), FKA (eq. 7), NKA (eq. 17; only for small dimension, d <= 8) or Langevin
        (App. B).
    bandwidth : float, default=0.1
        The kernel bandwidth h.
    learning_rate : float, default=0.1
        Step of every round.
    n_estimators : int, default=500
        Boosting rounds.
    max_depth : int, default=3
        Depth of each tree.
    tree_sharing : {"shared", "per_particle"}, default="shared"
        One multi-output tree for all particles per round, or one tree per particle.
    init : {"flow", "normal", "zeros"} or array of shape (N, d), default="flow"
        Initial particles (App. F.4): "flow" runs the data-averaged particle flow for ``init_rounds`` steps from
        standard-normal draws, "normal" keeps the draws, "zeros" starts at 0; an array gives them.
    init_rounds : int, default=5000
        Steps of the initial flow.
    init_lr : float or None, default=None
        Step :math:`\nu_0` of the initial flow; None takes the variant's own (0.1 for "authors", 0.01 for
        "paper").
    subsample : float, default=1.0
        Share of the rows each round's trees see.
    early_stopping_rounds : int or None, default=None
        Patience on the validation metric; needs ``eval_set`` in :meth:`fit`.
    random_state : int, Generator or None, default=None
        Seed of the initial draws, the Langevin noise and the row subsampling.
    max_bins : int or "exact", default=255
        Histogram bins per feature.
    trace_rows : int, default=50
        Training rows whose particles the trace records each round.
    split_criterion : {"variance", "friedman_sum"}, default="variance"
        The trees' split gain: the squared-error reduction summed over all outputs, or splits chosen on the rows'
        sums over outputs (scikit-learn's multi-output "friedman_mse" before 1.8: the trees of the authors' code).
    early_stopping_metric : {"nll", "rmse", "both"}, default="nll"
        The validation metric early stopping watches.
    init_flow : {"authors", "paper"}, default="authors"
        The initial flow: the authors' code (src/swgboost.py) averages the gradient and Hessian over the data
        before forming the SKA ratio; "paper" follows App. F.4's text, averaging each datum's direction (D times
        the work per step). See ``distviz.boosting.wg_init``.

    Attributes
    ----------
    n_iter_ : int
        Rounds kept.
    best_iteration_ : int
        The best validation round of the first watched metric; the last round without ``eval_set``.
    best_iterations_ : dict
        Each watched metric's best round.
    trace_ : xarray.Dataset
        Particles of ``trace_rows`` training rows per round.
    feature_names_in_ : ndarray of str
        Column names of a pandas X.

    Notes
    -----
    A scikit-learn estimator: parameters after ``target`` are keyword-only. :meth:`predict` is the point prediction
    (the mean of the eq. 6 predictive), :meth:`predict_dist` the predicted law (a ``distviz.families.dist``
    object), ``predict_particles`` / ``predict_density`` the particles and their density, :meth:`score` the mean
    log predictive density (higher is better). Methods used before fit raise ``distviz.errors.NotFittedError``.
    """

    def __init__(self, target, *, n_particles=10, method="ska", bandwidth=0.1, learning_rate=0.1, n_estimators=500,
                 max_depth=3, tree_sharing="shared", init="flow", init_rounds=5000, init_lr=None, subsample=1.0,
                 early_stopping_rounds=None, random_state=None, max_bins=255, trace_rows=50,
                 split_criterion="variance", early_stopping_metric="nll", init_flow="authors"):
        self.target = target
        self.n_particles = n_particles
        self.method = method
        self.bandwidth = bandwidth
        self.learning_rate = learning_rate
        self.n_estimators = n_estimators
        self.max_depth = max_depth
        self.tree_sharing = tree_sharing
        self.init = init
        self.init_rounds = init_rounds
        self.init_lr = init_lr
        self.subsample = subsample
        self.early_stopping_rounds = early_stopping_rounds
        self.random_state = random_state
        self.max_bins = max_bins
        self.trace_rows = trace_rows
        self.split_criterion = split_criterion
        self.early_stopping_metric = early_stopping_metric
        self.init_flow = init_flow

    def __sklearn_tags__(self):
        """scikit-learn tags: a regressor whose score is a log predictive density (no R^2 threshold)."""
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True  # NaN in X is a missing value the trees route (distviz.validation)
        tags.regressor_tags.poor_score = True
        return tags

    _parameter_constraints: dict = {
        "target": "no_validation",   # a name, a spec dict or a Target object (distviz.families.posteriors)
        "n_particles": [Interval(Integral, 1, None, closed="left")],
        "method": [StrOptions(set(METHODS))],
        "bandwidth": [Interval(Real, 0, None, closed="neither")],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "n_estimators": [Interval(Integral, 1, None, closed="left")],
        "max_depth": [Interval(Integral, 1, None, closed="left")],
        "tree_sharing": [StrOptions(set(SHARING))],
        "init": [StrOptions({"flow", "normal", "zeros"}), "array-like"],
        "init_rounds": [Interval(Integral, 0, None, closed="left")],
        "init_lr": [Interval(Real, 0, None, closed="neither"), None],
        "subsample": [Interval(Real, 0, 1, closed="right")],
        "early_stopping_rounds": [Interval(Integral, 1, None, closed="left"), None],
        "random_state": ["random_state"],
        "max_bins": "no_validation",   # an int or "exact", checked by the tree learner's binner
        "trace_rows": [Interval(Integral, 1, None, closed="left")],
        "split_criterion": [StrOptions({"variance", "friedman_sum"})],
        "early_stopping_metric": [StrOptions({"nll", "rmse", "both"})],
        "init_flow": [StrOptions(set(FLOW_VARIANTS))],
    }

    # ------------------------------------------------------------------ fitting
    def _initial(self, Y, rng, d):
        N = int(self.n_particles)
        if not isinstance(self.init, str):
            th = np.asarray(self.init, dtype=np.float64)
            if th.ndim == 1 and d == 1:
                th = th[:, None]
            if th.shape != (N, d) or not np.all(np.isfinite(th)):
                raise ConfigError(f"init as an array must have shape (n_particles, d) = ({N}, {d}) and be finite.")
            return th.copy()
        if self.init == "zeros":
            return np.zeros((N, d))
        th = rng.standard_normal((N, d))
        if self.init == "normal" or self.init_rounds == 0:
            return th
        out = init_flow(self.target_, Y, th, self.method, float(self.bandwidth), int(self.init_rounds),
                        None if self.init_lr is None else float(self.init_lr), rng, variant=self.init_flow)
        if not np.all(np.isfinite(out)):
            raise ConfigError("The initial particle flow diverged; lower init_lr or use init='normal'.")
        return out

    def fit(self, X, y, eval_set=None, progress=None):
        r"""Fit the N particle boostings to the pointwise posteriors :math:`\pi_i` of (X, y).

        Every round fits trees to the kernelised Wasserstein direction of :math:`\mathrm{KL}(\cdot \mid \pi_i)` at the
        current particles and moves them, :math:`F^n \leftarrow F^n + \nu f^n` (wasserstein_gradient_boosting.md, eq. 5;
        the direction of ``method``: eq. 7-9 for ska, eq. 7 for fka, eq. 17 for nka, App. B for langevin).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training features; NaN is a missing value, routed by each split.
        y : array-like of shape (n_samples,) or (n_samples, k)
            Targets in the target's support (a column vector is read as ``y.ravel()`` with a warning).
        eval_set : tuple (X_val, y_val) or None, default=None
            Validation rows for the traced validation NLL / RMSE and early stopping (no weights).
        progress : callable or None, default=None
            Called as ``progress(round, n_estimators)`` after every round.

        Returns
        -------
        self : WGBoost
            The fitted estimator.

        Raises
        ------
        ConfigError
            A parameter out of range; ``method="nka"`` with more than 8 coordinates; validation weights; early
            stopping on a metric the target does not give; an initial particle flow that diverged.
        DataError
            y is None or has another number of rows than X, or holds values outside the target's support.
        InputTypeError
            X is a dask collection.
        """
        self._validate_params()
        if y is None:
            raise DataError("WGBoost requires y to be passed, but the target y is None; call fit(X, y) with the targets.")
        if y is not None and np.asarray(y).ndim == 2 and np.asarray(y).shape[1] == 1:
            warnings.warn(DataConversionWarning("A column-vector y was passed when a 1d array was expected; it is "
                                                "read as y.ravel()."), stacklevel=2)
            y = np.ravel(y)
        X = self._validate_X(X, reset=True, allow_nan=True)   # NaN: a missing value the trees route
        y = check_y(y, X.shape[0])   # numbers, 1-D or 2-D, one per row of X: the target checks its own support
        tgt = self.target_ = make_target(self.target)   # a Target object is used as it is
        Y = tgt.prepare_y(y)
        if Y.shape[0] != X.shape[0]:
            raise DataError(f"X has {X.shape[0]} rows but y has {Y.shape[0]}; pass one target per row.")
        if self.method == "nka" and tgt.d > 8:
            raise ConfigError("NKA solves (N d) x (N d) systems per row; use it only for small d (<= 8).")
        rng = np.random.default_rng(self.random_state)
        n, N, d = X.shape[0], int(self.n_particles), tgt.d
        self.d_ = d
        lr = float(self.learning_rate)

        _, _, _, ev = self._validation_rows(X, Y, None, eval_set, split=False,
                                            check_y=lambda v, m, name: tgt.prepare_y(check_y(v, m, name=name)))
        has_eval = ev is not None
        if has_eval:
            Xe, Ye, we = ev
            if we is not None:
                raise ConfigError("WGBoost takes no validation weights; pass eval_set=(X_val, y_val).")

        watched = ("nll", "rmse") if self.early_stopping_metric == "both" else (self.early_stopping_metric,)
        if self.early_stopping_rounds is not None:
            rmse_ok = Ye.shape[1] == 1 and np.ndim(tgt.point(np.zeros((1, N, d)))) == 1
            for m, ok in (("nll", tgt.has_likelihood), ("rmse", rmse_ok)):
                if m in watched and not ok:
                    raise ConfigError(f"early stopping on '{self.early_stopping_metric}' needs the validation "
                                      f"{m.upper()}, which this target does not give; use early_stopping_metric="
                                      f"'{'rmse' if m == 'nll' else 'nll'}'.")

        t0 = time.perf_counter()
        self.init_particles_ = self._initial(Y, rng, d)
        self.init_seconds_ = time.perf_counter() - t0
        learner = TreeLearner(int(self.max_depth), self.max_bins, self.split_criterion)
        Xb = learner.prepare(X)
        law = WGLaw(tgt, self.method, self.init_particles_, self.bandwidth, rng, self.subsample)
        shared = self.tree_sharing == "shared"
        engine = BoostingEngine(law, n_rounds=int(self.n_estimators), learning_rate=lr,
                                tree_mode="shared" if shared else "blocks", n_blocks=None if shared else N,
                                learner=learner, early_stopping_rounds=self.early_stopping_rounds, tol=1e-12,
                                early_stopping_metric=watched)

        # trace on a display subset: rows evenly spaced in the order of the first feature
        m = min(n, int(self.trace_rows))
        obs = np.sort(np.argsort(X[:, 0], kind="stable")[np.linspace(0, n - 1, m).astype(int)])
        recorder = ParticleTrace(law, obs, tgt.gaussian(Y[obs]))
        res = engine.fit(Xb, Y, valid=(Xe, Ye) if has_eval else None, callbacks=[recorder], progress=progress)

        n_done = res.n_rounds
        self.best_iterations_ = dict(res.best_rounds) if has_eval else {}
        self.best_iteration_ = int(res.best_iteration)
        keep = n_done
        if self.early_stopping_rounds is not None:
            keep = max(res.best_rounds[m] for m in watched)
        self.trees_ = [rnd.trees[0] for rnd in res.rounds[:keep]]
        self.n_iter_ = len(self.trees_)
        self.fit_seconds_ = float(np.sum(res.seconds))
        self.forest_ = rounds_forest(res.rounds[:keep], X.shape[1], N * d)
        nan = np.full(n_done + 1, np.nan)
        ds = xr.Dataset(
            {
                "particles": (("round", "obs", "particle", "param"), np.stack(recorder.particles[:n_done + 1])),
                "train_nll": (("round",), np.asarray(res.train_loss, dtype=float)),
                "valid_nll": (("round",), np.asarray(res.valid_loss, dtype=float)),
                "valid_rmse": (("round",), np.asarray(res.valid_metrics["rmse"]) if has_eval else nan),
                "mmd2": (("round",), np.asarray(recorder.mmd2[:n_done + 1], dtype=float)),
                "seconds": (("round",), np.cumsum(res.seconds)),
                "n_projected": (("round",), np.asarray(res.n_projected, dtype=np.int64)),
                "n_nonfinite": (("round",), np.asarray(res.n_nonfinite, dtype=np.int64)),
                "x": (("obs", "feature"), X[obs]),
            },
            coords={"round": np.arange(n_done + 1), "obs": obs, "particle": np.arange(N), "param": np.arange(d),
                    "feature": (np.arange(X.shape[1]) if getattr(self, "feature_names_in_", None) is None
                                else [str(c) for c in self.feature_names_in_])},
            attrs={"method": self.method, "tree_sharing": self.tree_sharing, "learning_rate": lr,
                   "bandwidth": float(self.bandwidth), "best_iteration": int(self.best_iteration_),
                   "mmd_bandwidth": 0.025, "target": tgt.name, "stop_reason": res.stop_reason},
        )
        if Y.shape[1] >= 1:
            ds["y"] = (("obs", "ycol"), Y[obs])
        self.trace_ = ds
        return self

    # ------------------------------------------------------------------ prediction
    def _check_fitted(self):
        check_fitted(self, "forest_")

    def _check_predict_X(self, X):
        self._check_fitted()
        return self._validate_X(X, reset=False, allow_nan=True)

    def staged_predict_particles(self, X):
        r"""The particles of every input after each round.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features; NaN is a missing value, routed by each split.

        Yields
        ------
        particles : ndarray of shape (n_samples, N, d)
            :math:`F^1(x), \dots, F^N(x)` after rounds 1, 2, ..., ``n_iter_``.

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        DataError
            When X has another number of features (or other feature names) than the fit's.
        """
        self._check_fitted()
        X = self._check_predict_X(X)
        shape = (X.shape[0],) + self.init_particles_.shape
        staged = self.forest_.staged_predict(X, self.init_particles_.reshape(-1))
        next(staged)
        for P in staged:
            yield P.reshape(shape)

    def predict_particles(self, X, max_iter=None):
        r"""The particles :math:`F^1(x), \dots, F^N(x)` of every input: the particle approximation of the posterior
        :math:`\pi(\theta \mid x)`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features; NaN is a missing value, routed by each split.
        max_iter : int or None, default=None
            Rounds to use, read as a slice ``range(n_iter_)[:max_iter]`` (None: all fitted rounds; negative values
            count from the end).

        Returns
        -------
        particles : ndarray of shape (n_samples, N, d)
            N particles of d coordinates per row.

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        DataError
            When X has another number of features (or other feature names) than the fit's.
        """
        X = self._check_predict_X(X)
        r = len(range(self.n_iter_)[:max_iter])
        P = self.forest_.predict(X, self.init_particles_.reshape(-1), r)
        return P.reshape((X.shape[0],) + self.init_particles_.shape)

    def predict_density(self, X, y_grid):
        r"""The predictive density :math:`p(y \mid x) = \frac1N \sum_n p(y \mid \theta^n(x))` on a grid of y (Bayes model
        average, wasserstein_gradient_boosting.md eq. 6).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features; NaN is a missing value, routed by each split.
        y_grid : array-like of shape (G,)
            The y values at which to evaluate the density.

        Returns
        -------
        density : ndarray of shape (n_samples, G)
            :math:`p(y_g \mid x_i)`.

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        DataError
            When X has another number of features (or other feature names) than the fit's.
        """
        P = self.predict_particles(X)
        yg = np.atleast_1d(np.asarray(y_grid))
        ll = self.target_.log_likelihood(yg, P)
        return np.exp(lse(ll, axis=1) - np.log(P.shape[1]))

    def predict_logpdf(self, X, y):
        r"""The log predictive density :math:`\log p(y_i \mid x_i)` of eq. 6 at each row's own y.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features; NaN is a missing value, routed by each split.
        y : array-like of shape (n_samples,) or (n_samples, k)
            One target per row of X.

        Returns
        -------
        logpdf : ndarray of shape (n_samples,)
            :math:`\log \frac1N \sum_n p(y_i \mid \theta^n(x_i))` (a log-sum-exp).

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        DataError
            When X has another number of features (or other feature names) than the fit's.
            Also when y has another number of rows than X.
        """
        P = self.predict_particles(X)
        Y = self.target_.prepare_y(check_y(y, P.shape[0]))
        return lse(self.target_.log_likelihood_rows(Y, P), axis=1) - np.log(P.shape[1])

    def predict_mean(self, X):
        """The point prediction: the Bayes action under squared loss, the mean of the eq. 6 predictive (Section 3.1).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features; NaN is a missing value, routed by each split.

        Returns
        -------
        mean : ndarray of shape (n_samples,) or (n_samples, k)
            The target's point prediction from the particles (the mixture's mean for the normal and Poisson targets,
            the mean class probabilities (n_samples, K) for the categorical one).

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        DataError
            When X has another number of features (or other feature names) than the fit's.
        """
        P = self.predict_particles(X)
        return self.target_.point(P)

    def predict_dist(self, X, max_iter=None):
        r"""The eq. 6 predictive per row as a ``distviz.families.dist`` object.

        The particles :math:`\theta_1..\theta_N` of a row make the equally weighted mixture
        :math:`\frac1N \sum_n p(y \mid \theta_n)`, the same law as :meth:`predict_density` and the Posterior page's heat
        map: the normal target a ``MixtureDist`` of :math:`N(m_n, \sigma_n^2)`, the Poisson target a ``MixtureDist`` of
        :math:`\mathrm{Poisson}(e^{\theta_n})` (discrete), the categorical target a ``CategoricalDist`` with the
        particles' mean class probabilities.  A target without an output likelihood (a callable target, e.g. the App. E
        location target) has no law of y: its one-dimensional particles give the ``EmpiricalDist`` of N equal point
        masses, the particle approximation of the posterior :math:`\pi_i` itself.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features; NaN is a missing value, routed by each split.
        max_iter : int or None, default=None
            Rounds to use, as :meth:`predict_particles`.

        Returns
        -------
        dist : MixtureDist, CategoricalDist or EmpiricalDist
            n_samples laws.

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        DataError
            When X has another number of features (or other feature names) than the fit's.
        ConfigError
            When the target has no output likelihood and more than one coordinate (use :meth:`predict_particles`).
        """
        from scipy import stats

        from distviz.families.dist import CategoricalDist, EmpiricalDist, MixtureDist

        P = self.predict_particles(X, max_iter)
        tgt = self.target_
        if isinstance(tgt, NormalTarget):
            return MixtureDist(stats.norm(P[..., 0], np.exp(P[..., 1])))
        if isinstance(tgt, PoissonTarget):
            return MixtureDist(stats.poisson(np.exp(P[..., 0])), discrete=True)
        if isinstance(tgt, CategoricalTarget):
            return CategoricalDist(tgt.point(P))
        if P.shape[2] == 1:
            return EmpiricalDist(P[..., 0])
        raise ConfigError(f"this target's particles have {P.shape[2]} coordinates and no output likelihood, so there "
                          f"is no predictive law of y; use predict_particles.")

    def predict(self, X):
        """The point prediction as an array (scikit-learn's ``predict``): the mean of the eq. 6 predictive, as
        :meth:`predict_mean`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features; NaN is a missing value, routed by each split.

        Returns
        -------
        mean : ndarray of shape (n_samples,) or (n_samples, k)

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        DataError
            When X has another number of features (or other feature names) than the fit's.
        """
        return np.asarray(self.predict_mean(X))

    def score(self, X, y, sample_weight=None) -> float:
        r"""Weighted mean log predictive density :math:`\log p(y_i \mid x_i)` of eq. 6 (higher is better,
        scikit-learn's convention).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features; NaN is a missing value, routed by each split.
        y : array-like of shape (n_samples,) or (n_samples, k)
            One target per row of X.
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Row weights of the average; None weighs every row 1.

        Returns
        -------
        score : float

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        DataError
            When X has another number of features (or other feature names) than the fit's.
        ConfigError
            When the target has no likelihood (a callable target).
        """
        self._check_fitted()
        if not self.target_.has_likelihood:
            raise ConfigError("This target has no likelihood, so there is no log-likelihood to score; "
                              "compare predict(X) with y instead.")
        ll = self.predict_logpdf(X, y)
        w = check_sample_weight(sample_weight, ll.shape[0])
        return float(np.average(ll, weights=w))

    def ood_score(self, X):
        r"""The out-of-distribution score of Section 4.3: :math:`1 / \max_j \mathrm{Var}_n[q_j^n(x)]`.

        :math:`q^n` are the target's OOD parameters of particle n (e.g. the class probabilities); inputs far from the
        training data spread their particles, so a low score flags them.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features; NaN is a missing value, routed by each split.

        Returns
        -------
        score : ndarray of shape (n_samples,)
            High for in-distribution inputs.

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        DataError
            When X has another number of features (or other feature names) than the fit's.
        """
        P = self.predict_particles(X)
        Q = self.target_.ood_params(P)
        v = Q.var(axis=1).max(axis=1)
        return 1.0 / np.maximum(v, 1e-300)

    # ------------------------------------------------------------------ persistence
    def _model_writer(self):
        """The model file :meth:`save` writes (``distviz.modelfile.ModelWriter``): the parameters, the target's specification,
        the initial particles, the forest and the trace; ConfigError for a callable target (its functions are code, not
        data)."""
        from distviz.modelfile import ModelWriter

        spec = self.target_.spec()
        if spec is None:
            raise ConfigError("a WGBoost with a callable target cannot be saved (its functions are code, not data); "
                              "use the 'normal', 'categorical' or 'poisson' target to save the model.")
        params = {k: v for k, v in self.get_params(deep=False).items() if k != "target"}
        params["init"] = self.init if isinstance(self.init, str) else "normal"
        rs = params["random_state"]
        params["random_state"] = int(rs) if isinstance(rs, (int, np.integer)) else None
        fitted = {"target": spec, "n_features": int(self.n_features_in_), "d": int(self.d_),
                  "n_iter": int(self.n_iter_), "best_iteration": int(self.best_iteration_)}
        w = ModelWriter(self, params, fitted, trace=self.trace_)
        w.array("init_particles", self.init_particles_)
        w.forest("forest", self.forest_)
        return w

    @classmethod
    def _read_model(cls, f):
        """The fitted estimator :meth:`load` reads from the opened model file `f` (``distviz.modelfile.ModelFile``),
        every value checked before use."""
        spec = f.fitted.get("target")
        if not isinstance(spec, dict):
            raise f.fail("its target is not a stored specification")
        try:
            target = make_target(spec)
        except (ConfigError, TypeError, ValueError):
            raise f.fail("its target specification is invalid") from None
        est = f.construct(cls, renamed_params(f.params), lambda e: e._validate_params(), target=target)
        p, d = f.value("n_features", int, 1, 2**31 - 1), f.value("d", int, 1, 2**16)
        if d != target.d:
            raise f.fail(f"its particles have {d} coordinates, not the target's {target.d}")
        old = "n_iter" not in f.fitted   # a file written before issue 28 (n_rounds, best_round)
        n_iter = f.value("n_rounds" if old else "n_iter", int, 0)
        N = int(est.n_particles)
        est.init_particles_ = f.array("init_particles", (N, d))
        est.forest_ = f.forest("forest", p, N * d)
        per_round = 1 if est.tree_sharing == "shared" else N
        if est.forest_.n_rounds != n_iter or est.forest_.n_trees != n_iter * per_round:
            raise f.fail(f"its forest does not hold {n_iter} rounds of {per_round} tree(s)")
        if per_round == 1 and est.forest_.value.shape[1] != N * d or per_round > 1 and est.forest_.value.shape[1] != d:
            raise f.fail("its leaf values do not match the particles' shape")
        est.target_ = target
        est._names_from_file(f, p)
        est.d_ = d
        est.n_iter_, est.best_iteration_ = n_iter, f.value("best_round" if old else "best_iteration", int, 0)
        est.trace_ = f.trace()
        return est
