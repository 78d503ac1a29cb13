"""Wasserstein gradient boosting (WGBoost) for posterior regression: SKA, FKA, NKA and Langevin.

Matsubara, "Wasserstein Gradient Boosting" (../shared/papers/wasserstein_gradient_boosting.md).
Each input x gets N particles F^n(x) in R^d; every round fits trees to a kernelised Wasserstein
direction of KL(. | pi_i) at the current particles and moves them, F^n <- F^n + nu f^n (eq. 5):
  ska      v = -G* / H*              (eq. 7-9, Algorithm 3; the default)
  fka      v = -G*                   (eq. 7)
  nka      v = K H^{-1} (-G*)        (eq. 17, Algorithm 4; batched (N d) x (N d) solves, regularised:
                                     PD Hessian blocks + Levenberg ridge, and a damped step per round)
  langevin v = grad log pi + sqrt(2/nu) xi   (App. B, Algorithm 2)
The current particles at the training rows are kept from round to round (no re-prediction of
earlier trees), and a trace records particles, NLL and MMD^2 per round for the pages, with the same
fault counters as the law trace: ``n_projected`` (rows whose NKA step was damped into the trust region),
``n_nonfinite`` (rows whose direction was NaN / inf and got no update) and attribute ``stop_reason``
(why boosting stopped early, e.g. a round that would make the NLL non-finite; "" otherwise).
"""

from __future__ import annotations

import json
import time
import warnings

import numpy as np
import xarray as xr
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.exceptions import DataConversionWarning

from distviz.boosting import wg_kernels as K
from distviz.boosting.wg_init import VARIANTS as FLOW_VARIANTS, init_flow
from distviz.boosting.wg_targets import Target, lse, make_target
from distviz.boosting.params import check_int, check_number
from distviz.boosting.wg_trees import TreeLearner, wg_forest
from distviz.errors import ConfigError, DataError, check_fitted
from distviz.validation import check_X

METHODS = ("ska", "fka", "nka", "langevin")
SHARING = ("shared", "per_particle")
_PARAMS = ("target", "n_particles", "method", "bandwidth", "learning_rate", "n_rounds", "max_depth",
           "tree_sharing", "init", "init_rounds", "init_lr", "subsample", "early_stopping_rounds",
           "random_state", "max_bins", "display_size", "split_criterion", "early_stopping_metric", "init_flow")


def _check_X(X, name="X", n_features=None):
    """Features checked by distviz.validation.check_X; NaN is a missing value the trees route natively."""
    return check_X(X, allow_nan=True, n_features=n_features, name=name)


# NKA's trust region: a particle moves at most this far (Euclidean, in theta) per round before the tree
# fit; the full Newton direction of eq. 17 can be very long where a row's posterior is flat or not
# log-concave, and one such step sends sigma to 0 in the normal target (a damped Newton step).
_NKA_MAX_STEP = 1.0


def _damp(V, lr, max_step):
    """Scale each particle's direction so that lr * |v| <= max_step; returns (V, rows that were damped)."""
    norm = np.sqrt(np.sum(V * V, axis=2, keepdims=True))
    scale = np.minimum(1.0, max_step / np.maximum(lr * norm, 1e-300))
    damped = (scale < 1.0).any(axis=(1, 2))
    return V * scale, damped


class WGBoost(RegressorMixin, BaseEstimator):
    """Wasserstein gradient boosting: N particles per input approximating the pointwise posteriors pi_i.

    A scikit-learn estimator: parameters after ``target`` are keyword-only.  ``predict`` is the point
    prediction (the mean of the eq. 6 predictive), ``predict_particles`` / ``predict_density`` the
    distribution, ``score`` the mean log predictive density (higher is better); methods used before
    fit raise ``distviz.errors.NotFittedError``.

    Initial particles (App. F.4): ``init="flow"`` (default) runs the data-averaged particle flow for
    ``init_rounds`` steps (M0 = 5000) from standard-normal draws; ``"normal"`` keeps the draws, ``"zeros"``
    starts at 0, an (N, d) array gives them.  ``init_flow`` picks the flow: ``"authors"`` (default, the
    authors' code, src/swgboost.py) averages the gradient and Hessian over the data *before* forming the
    SKA ratio and steps with nu0 = 0.1; ``"paper"`` follows App. F.4's text, averaging each datum's
    direction (1/D) sum_i G_i with nu0 = 0.01 (D times the work per step).  ``init_lr`` is nu0; None takes
    the variant's own (0.1 authors, 0.01 paper).  See `distviz.boosting.wg_init`.
    """

    def __init__(self, target, *, n_particles=10, method="ska", bandwidth=0.1, learning_rate=0.1, n_rounds=500,
                 max_depth=3, tree_sharing="shared", init="flow", init_rounds=5000, init_lr=None, subsample=1.0,
                 early_stopping_rounds=None, random_state=None, max_bins=255, display_size=50,
                 split_criterion="variance", early_stopping_metric="nll", init_flow="authors"):
        self.target = target
        self.n_particles = n_particles
        self.method = method
        self.bandwidth = bandwidth
        self.learning_rate = learning_rate
        self.n_rounds = n_rounds
        self.max_depth = max_depth
        self.tree_sharing = tree_sharing
        self.init = init
        self.init_rounds = init_rounds
        self.init_lr = init_lr
        self.subsample = subsample
        self.early_stopping_rounds = early_stopping_rounds
        self.random_state = random_state
        self.max_bins = max_bins
        self.display_size = display_size
        self.split_criterion = split_criterion
        self.early_stopping_metric = early_stopping_metric
        self.init_flow = init_flow

    def __sklearn_tags__(self):
        """scikit-learn tags: a regressor whose score is a log predictive density (no R^2 threshold)."""
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True  # NaN in X is a missing value the trees route (distviz.validation)
        tags.regressor_tags.poor_score = True
        return tags

    def _validate_params(self):
        if self.method not in METHODS:
            raise ConfigError(f"Unknown WGBoost method '{self.method}'; choose one of {', '.join(METHODS)}.")
        if self.tree_sharing not in SHARING:
            raise ConfigError(f"tree_sharing must be 'shared' or 'per_particle', not {self.tree_sharing!r}.")
        check_int("n_particles", self.n_particles, example="10 (the paper's choice)")
        check_int("n_rounds", self.n_rounds, example="500")
        check_int("max_depth", self.max_depth, example="3")
        check_int("init_rounds", self.init_rounds, low=0, example="5000")
        check_int("display_size", self.display_size, example="50")
        for name, ex in (("bandwidth", "0.1"), ("learning_rate", "0.1"), ("init_lr", "0.1")):
            if name != "init_lr" or self.init_lr is not None:
                check_number(name, getattr(self, name), example=ex)
        if self.init_flow not in FLOW_VARIANTS:
            raise ConfigError("init_flow must be 'authors' (the authors' code: data-averaged gradient and Hessian, "
                              "nu0 0.1) or 'paper' (App. F.4's text: data-averaged directions, nu0 0.01).")
        check_number("subsample", self.subsample, high=1.0, example="1.0")
        if self.early_stopping_rounds is not None:
            check_int("early_stopping_rounds", self.early_stopping_rounds, example="200")
        if self.early_stopping_metric not in ("nll", "rmse", "both"):
            raise ConfigError("early_stopping_metric must be 'nll', 'rmse' or 'both' (stop when both stalled).")
        if self.split_criterion not in ("variance", "friedman_sum"):
            raise ConfigError("split_criterion must be 'variance' or 'friedman_sum' (the authors' sklearn "
                              "multi-output friedman_mse trees).")
        if isinstance(self.init, str) and self.init not in ("flow", "normal", "zeros"):
            raise ConfigError("init must be 'flow', 'normal', 'zeros' or an array of N x d initial particles.")

    # ------------------------------------------------------------------ fitting
    def _direction(self, P, Y, rng):
        t, h = self.target_, float(self.bandwidth)
        if self.method == "ska":
            G, Hd = t.grad_hess_diag(P, Y)
            return K.ska_direction(P, G, Hd, h)
        G = t.grad(P, Y)
        if self.method == "fka":
            return K.fka_direction(P, G, h)
        if self.method == "nka":
            return K.nka_direction(P, G, t.hess(P, Y), h)
        return K.langevin_direction(G, float(self.learning_rate), rng)

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

    def _nll(self, P, Y):
        """Negative log predictive (eq. 6) averaged over rows."""
        return K.mixture_nll(self.target_.log_likelihood_rows(Y, P))

    def fit(self, X, y, eval_set=None, progress=None):
        """Fit the N particle boostings to the pointwise posteriors of (X, y); eval_set=(X_val, y_val)."""
        self._validate_params()
        if y is None:
            raise DataError("WGBoost requires y to be passed, but the target y is None; call fit(X, y) with the targets.")
        if y is not None and np.asarray(y).ndim == 2 and np.asarray(y).shape[1] == 1:
            warnings.warn(DataConversionWarning("A column-vector y was passed when a 1d array was expected; it is "
                                                "read as y.ravel()."), stacklevel=2)
            y = np.ravel(y)
        X = _check_X(X)
        tgt = make_target(self.target)
        if isinstance(self.target, Target):
            tgt = self.target
        self.target_ = tgt
        Y = tgt.prepare_y(y)
        if Y.shape[0] != X.shape[0]:
            raise DataError(f"X has {X.shape[0]} rows but y has {Y.shape[0]}; pass one target per row.")
        if self.method == "nka" and tgt.d > 8:
            raise ConfigError("NKA solves (N d) x (N d) systems per row; use it only for small d (<= 8).")
        rng = np.random.default_rng(self.random_state)
        n, N, d = X.shape[0], int(self.n_particles), tgt.d
        self.n_features_in_, self.d_ = X.shape[1], d
        lr = float(self.learning_rate)

        has_eval = eval_set is not None
        if has_eval:
            Xe = _check_X(eval_set[0], "eval_set X")
            Ye = tgt.prepare_y(eval_set[1])
            if Xe.shape[1] != X.shape[1] or Ye.shape[0] != Xe.shape[0]:
                raise DataError("eval_set must be (X_val, y_val) with the training columns and one y per row.")
        if self.early_stopping_rounds is not None and not has_eval:
            raise ConfigError("early_stopping_rounds needs eval_set=(X_val, y_val) to monitor.")

        t0 = time.perf_counter()
        self.init_particles_ = self._initial(Y, rng, d)
        self.init_seconds_ = time.perf_counter() - t0
        learner = TreeLearner(int(self.max_depth), self.max_bins, self.split_criterion)
        Xb = learner.prepare(X)

        P = np.repeat(self.init_particles_[None], n, axis=0)
        Pe = np.repeat(self.init_particles_[None], Xe.shape[0], axis=0) if has_eval else None

        # trace on a display subset: rows evenly spaced in the order of the first feature
        m = min(n, int(self.display_size))
        obs = np.sort(np.argsort(X[:, 0], kind="stable")[np.linspace(0, n - 1, m).astype(int)])
        M = int(self.n_rounds)
        tr_p = np.full((M + 1, m, N, d), np.nan, dtype=np.float32)
        tr_train = np.full(M + 1, np.nan)
        tr_valid = np.full(M + 1, np.nan)
        tr_vrmse = np.full(M + 1, np.nan)
        tr_mmd = np.full(M + 1, np.nan)
        tr_sec = np.full(M + 1, np.nan)
        tr_damped = np.zeros(M + 1, dtype=np.int64)     # rows whose particle step was damped (trust region)
        tr_nonfinite = np.zeros(M + 1, dtype=np.int64)  # rows whose direction was non-finite (no update)
        gauss = tgt.gaussian(Y[obs])
        like = tgt.has_likelihood

        def record(r, secs):
            tr_p[r] = P[obs]
            tr_sec[r] = secs
            if like:
                tr_train[r] = self._nll(P, Y)
                if has_eval:
                    tr_valid[r] = self._nll(Pe, Ye)
            if has_eval and Ye.shape[1] == 1:
                pt = tgt.point(Pe)
                if pt.ndim == 1:
                    tr_vrmse[r] = float(np.sqrt(np.mean((Ye[:, 0] - pt) ** 2)))
            if gauss is not None:
                tr_mmd[r] = float(np.mean(K.mmd2_gaussian_rows(P[obs], gauss[0], gauss[1], 0.025)))

        record(0, 0.0)
        trees = []
        metrics = {"nll": tr_valid, "rmse": tr_vrmse}
        watched = ["nll", "rmse"] if self.early_stopping_metric == "both" else [self.early_stopping_metric]
        best = {m: np.inf for m in metrics}
        best_r = {m: 0 for m in metrics}
        stall = {m: 0 for m in metrics}
        shared = self.tree_sharing == "shared"
        n_sub = max(1, int(round(self.subsample * n)))
        fit_secs = 0.0
        stop_reason = ""
        for r in range(1, M + 1):
            ts = time.perf_counter()
            V = self._direction(P, Y, rng)
            bad = ~np.isfinite(V).all(axis=(1, 2))
            tr_nonfinite[r] = int(bad.sum())
            if bad.all():
                stop_reason = (f"every row's direction was non-finite at round {r}, so boosting stopped; "
                               f"lower learning_rate (now {lr:g}).")
                break
            if bad.any():  # a row whose direction overflowed gets no update this round (as the law engine does)
                V[bad] = 0.0
            if self.method == "nka":
                V, damped = _damp(V, lr, _NKA_MAX_STEP)
                tr_damped[r] = int(damped.sum())
            w = None
            if n_sub < n:
                w = np.zeros(n)
                w[rng.permutation(n)[:n_sub]] = 1.0
            P_old = P.copy()
            Pe_old = Pe.copy() if has_eval else None
            if shared:
                tree, pred = learner.fit(Xb, V.reshape(n, N * d), w)
                P += lr * pred.reshape(n, N, d)
                if has_eval:
                    Pe += lr * learner.predict(tree, Xe).reshape(-1, N, d)
            else:
                tree, pred = learner.fit_many(Xb, np.ascontiguousarray(V.transpose(1, 0, 2)), w)
                P += lr * pred.transpose(1, 0, 2)
                if has_eval:
                    Pe += lr * learner.predict_many(tree, Xe).transpose(1, 0, 2)
            fit_secs += time.perf_counter() - ts
            record(r, fit_secs)
            if not (np.all(np.isfinite(P)) and (not like or np.isfinite(tr_train[r]))
                    and (not (like and has_eval) or np.isfinite(tr_valid[r]))):
                # drop the round: its particles or NLL are not finite (a leaf overflowed the likelihood)
                P, Pe = P_old, Pe_old
                stop_reason = (f"the NLL became non-finite at round {r}, so boosting stopped after round "
                               f"{r - 1}; lower learning_rate (now {lr:g}) or max_depth.")
                break
            trees.append(tree)
            if progress is not None:
                progress(r, M)
            if has_eval:
                for mname, arr in metrics.items():
                    if arr[r] < best[mname] - 1e-12:
                        best[mname], best_r[mname], stall[mname] = arr[r], r, 0
                    else:
                        stall[mname] += 1
                if self.early_stopping_rounds is not None and all(
                        stall[m] >= self.early_stopping_rounds for m in watched):
                    break
        n_done = len(trees)
        self.best_rounds_ = {m: (int(best_r[m]) if best_r[m] > 0 else None) for m in metrics} if has_eval else {}
        primary = "rmse" if self.early_stopping_metric == "rmse" else "nll"
        self.best_round_ = int(best_r[primary]) if has_eval and best_r[primary] > 0 else n_done
        keep = n_done
        if self.early_stopping_rounds is not None:
            if any(best_r[m] == 0 for m in watched):
                raise ConfigError(f"early stopping on '{self.early_stopping_metric}' needs that metric on the "
                                  f"validation set; the target gives no {'NLL' if primary == 'nll' else 'RMSE'}.")
            keep = max(best_r[m] for m in watched)
        self.trees_ = trees[:keep]
        self.n_rounds_ = len(self.trees_)
        self.fit_seconds_ = fit_secs
        self._learner = learner
        self.forest_ = wg_forest(self.trees_, self.tree_sharing == "shared", N, d, lr, X.shape[1])
        rounds = np.arange(n_done + 1)
        ds = xr.Dataset(
            {
                "particles": (("round", "obs", "particle", "param"), tr_p[:n_done + 1]),
                "train_nll": (("round",), tr_train[:n_done + 1]),
                "valid_nll": (("round",), tr_valid[:n_done + 1]),
                "valid_rmse": (("round",), tr_vrmse[:n_done + 1]),
                "mmd2": (("round",), tr_mmd[:n_done + 1]),
                "seconds": (("round",), tr_sec[:n_done + 1]),
                "n_projected": (("round",), tr_damped[:n_done + 1]),
                "n_nonfinite": (("round",), tr_nonfinite[:n_done + 1]),
                "x": (("obs", "feature"), X[obs]),
            },
            coords={"round": rounds, "obs": obs, "particle": np.arange(N), "param": np.arange(d),
                    "feature": np.arange(X.shape[1])},
            attrs={"method": self.method, "tree_sharing": self.tree_sharing, "learning_rate": lr,
                   "bandwidth": float(self.bandwidth), "best_round": int(self.best_round_),
                   "mmd_bandwidth": 0.025, "target": tgt.name, "stop_reason": stop_reason},
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
        return _check_X(X, n_features=self.n_features_in_)

    def staged_predict_particles(self, X):
        """Yield the particles (n, N, d) after each boosting round 1..n_rounds_."""
        self._check_fitted()
        X = self._check_predict_X(X)
        shape = (X.shape[0],) + self.init_particles_.shape
        staged = self.forest_.staged_predict(X, self.init_particles_.reshape(-1))
        next(staged)
        for P in staged:
            yield P.reshape(shape)

    def predict_particles(self, X, n_rounds=None):
        """Particles of every input after n_rounds (default: all fitted rounds; slice rules), shape (n, N, d)."""
        X = self._check_predict_X(X)
        r = len(range(self.n_rounds_)[:n_rounds])
        P = self.forest_.predict(X, self.init_particles_.reshape(-1), r)
        return P.reshape((X.shape[0],) + self.init_particles_.shape)

    def predict_density(self, X, y_grid):
        """Predictive p(y | x) = (1/N) sum_n p(y | theta^n(x)) (Bayes model average, eq. 6), shape (n, G)."""
        P = self.predict_particles(X)
        yg = np.atleast_1d(np.asarray(y_grid))
        ll = self.target_.log_likelihood(yg, P)
        return np.exp(lse(ll, axis=1) - np.log(P.shape[1]))

    def predict_logpdf(self, X, y):
        """log p(y_i | x_i) of the eq. 6 predictive at each row's own y."""
        P = self.predict_particles(X)
        Y = self.target_.prepare_y(y)
        return lse(self.target_.log_likelihood_rows(Y, P), axis=1) - np.log(P.shape[1])

    def predict_mean(self, X):
        """Point prediction: the Bayes action under squared loss (mean of the predictive), Section 3.1."""
        P = self.predict_particles(X)
        return self.target_.point(P)

    def predict(self, X):
        """Point prediction as an array (scikit-learn's predict): the mean of the eq. 6 predictive, as predict_mean."""
        return np.asarray(self.predict_mean(X))

    def score(self, X, y, sample_weight=None) -> float:
        """Weighted mean log predictive density log p(y_i | x_i) of eq. 6 (higher is better, scikit-learn's convention)."""
        self._check_fitted()
        if not self.target_.has_likelihood:
            raise ConfigError("This target has no likelihood, so there is no log-likelihood to score; "
                              "compare predict(X) with y instead.")
        ll = self.predict_logpdf(X, y)
        w = None
        if sample_weight is not None:
            w = np.asarray(sample_weight, dtype=float).reshape(-1)
            if w.shape[0] != ll.shape[0] or not np.isfinite(w).all() or (w < 0).any() or not w.sum() > 0:
                raise DataError(f"sample_weight must be {ll.shape[0]} finite non-negative weights with a positive sum.")
        return float(np.average(ll, weights=w))

    def ood_score(self, X):
        """OOD score of Section 4.3: 1 / max_j Var_n[q_j^n(x)] (high = in-distribution)."""
        P = self.predict_particles(X)
        Q = self.target_.ood_params(P)
        v = Q.var(axis=1).max(axis=1)
        return 1.0 / np.maximum(v, 1e-300)

    # ------------------------------------------------------------------ persistence
    def save(self, path):
        """Save the fitted model to one NetCDF file (distviz.persistence; no pickle): parameters, particles, trees, trace."""
        from distviz.persistence import ModelWriter

        self._check_fitted()
        spec = self.target_.spec()
        if spec is None:
            raise ConfigError("a WGBoost with a callable target cannot be saved (its functions are code, not data); "
                              "use the 'normal', 'categorical' or 'poisson' target to save the model.")
        params = {k: v for k, v in self.get_params(deep=False).items() if k != "target"}
        params["init"] = self.init if isinstance(self.init, str) else "normal"
        rs = params["random_state"]
        params["random_state"] = int(rs) if isinstance(rs, (int, np.integer)) else None
        fitted = {"target": spec, "n_features": int(self.n_features_in_), "d": int(self.d_),
                  "n_rounds": int(self.n_rounds_), "best_round": int(self.best_round_)}
        w = ModelWriter(self, params, fitted, trace=self.trace_)
        w.array("init_particles", self.init_particles_)
        w.forest("forest", self.forest_)
        w.write(path)

    @classmethod
    def load(cls, path):
        """Load a model saved by `save`; DataError naming the file and the first problem of a bad one."""
        from distviz.persistence import ModelFile

        f = ModelFile(path, cls.__name__)
        spec = f.fitted.get("target")
        if not isinstance(spec, dict):
            raise f.fail("its target is not a stored specification")
        try:
            target = make_target(spec)
        except (ConfigError, TypeError, ValueError):
            raise f.fail("its target specification is invalid") from None
        est = f.construct(cls, f.params, lambda e: e._validate_params(), target=target)
        p, d = f.value("n_features", int, 1, 2**31 - 1), f.value("d", int, 1, 2**16)
        if d != target.d:
            raise f.fail(f"its particles have {d} coordinates, not the target's {target.d}")
        n_rounds = f.value("n_rounds", int, 0)
        N = int(est.n_particles)
        est.init_particles_ = f.array("init_particles", (N, d))
        est.forest_ = f.forest("forest", p, N * d)
        per_round = 1 if est.tree_sharing == "shared" else N
        if est.forest_.n_rounds != n_rounds or est.forest_.n_trees != n_rounds * per_round:
            raise f.fail(f"its forest does not hold {n_rounds} rounds of {per_round} tree(s)")
        if per_round == 1 and est.forest_.value.shape[1] != N * d or per_round > 1 and est.forest_.value.shape[1] != d:
            raise f.fail("its leaf values do not match the particles' shape")
        est.target_ = target
        est.n_features_in_, est.d_ = p, d
        est.n_rounds_, est.best_round_ = n_rounds, f.value("best_round", int, 0)
        est.trace_ = f.trace()
        return est
