"""`SparseGP`: a sparse variational-style GP fitted by ELBO, beta-ELBO, direct loss minimisation or FITC.

Wei, Sheth & Khardon, "Direct loss minimization for sparse Gaussian processes" (Section 2 for the
objectives, Section 3 / Appendix A for uPS, Section 4 eq. 7-8 for bMC, Section 6.1 for the two DLM
variants and the beta grid, Appendix D for the collapsed FITC baseline of ``distviz.gp.fitc``).
q(u) = N(m, L L^T) over M inducing values, RBF kernel (optionally ARD), learnable inducing inputs,
a constant prior mean.
"""

from __future__ import annotations

import copy
import warnings
from numbers import Integral, Real

import numpy as np
from scipy import optimize, special
from scipy.linalg import solve_triangular
from sklearn.exceptions import DataConversionWarning
from sklearn.utils._param_validation import Interval, StrOptions
from threadpoolctl import threadpool_limits

from distviz.contract import Estimator
from distviz.errors import ConfigError, DataError, check_fitted
from distviz.gp import objectives as obj
from distviz.gp.fitc import FITCObjective
from distviz.gp.kernels import rbf
from distviz.gp.likelihoods import LIKELIHOODS, make_likelihood
from distviz.gp.square_dlm import SquareDLMObjective
from distviz.validation import check_sample_weight, check_X, check_y

_OPTIMIZERS = ("auto", "lbfgs", "adam")


def _check_X(X, name="X", n_features=None) -> np.ndarray:
    """2-D finite float array (a 1-D input is one feature), by distviz.validation.check_X; the GP has no missing values."""
    return check_X(X, allow_nan=False, n_features=n_features, name=name, model="SparseGP")


def _check_y(y, n, name="y") -> np.ndarray:
    """1-D finite target of length n, by distviz.validation.check_y."""
    return check_y(y, n, name=name, ndim=1)


def _breakdown_sentence(y, likelihood, jitter) -> str:
    """One sentence for a fit whose linear algebra broke down (a singular covariance or non-finite values)."""
    y = np.asarray(y, dtype=float)
    sd, scale = float(np.std(y)), float(np.max(np.abs(y))) if y.size else 0.0
    if likelihood == "gaussian" and sd <= 1e-6 * max(scale, 1e-300):
        return (f"y is constant (every value is about {float(np.mean(y)):.6g}), so the Gaussian noise variance "
                f"shrinks to zero and the fit breaks down; use a target that varies, or objective='dlm_log'.")
    return (f"The GP fit broke down numerically (a singular covariance matrix); rescale y (sd {sd:.3g}) and X "
            f"to order one, or raise jitter (now {float(jitter):g}).")


class SparseGP(Estimator):
    """Sparse GP with q(u) = N(m, L L^T), fitted by ELBO / beta-ELBO / log-loss DLM / square-loss DLM / FITC.

    A scikit-learn estimator (``distviz.contract.Estimator``): parameters after ``likelihood`` are keyword-only.
    ``predict`` is the
    predictive mean, ``predict_dist`` (a ``distviz.families.dist`` object), ``predict_density`` /
    ``predict_latent`` the distribution, ``score`` the mean log
    predictive density (higher is better; the paper's test log-loss is ``-score``); methods used before
    fit raise ``distviz.errors.NotFittedError``.

    Parameters
    ----------
    likelihood : "gaussian" | "probit" | "logistic" | "poisson" (log link). Logistic is sigma(y f) of
        the paper's Table 1; its ELBO and log-loss terms are quadratures (``distviz.gp.likelihoods``).
    objective : "elbo" | "dlm_log" | "dlm_square" (paper Section 2) | "fitc" (Snelson & Ghahramani's
        collapsed objective -log N(y | c, Q_ff + diag(K_ff - Q_ff) + s I), the paper's regression
        baseline, Appendix D; ``distviz.gp.fitc``). FITC needs the Gaussian likelihood, exact
        gradients, full batches and beta = 1 (it has no KL term); q(u) is computed from the
        hyperparameters, so q_mean / q_chol are not used. With the Gaussian likelihood and full
        batches, "dlm_square" is collapsed too: m is solved in closed form at every step (Appendix D;
        ``distviz.gp.square_dlm``), S = K_uu, and q_mean / q_chol are not used; with a ``batch_size``
        m is optimised with the rest.
    beta : weight of KL(q(u) || p(u)).
    n_inducing : M; M >= n uses all training inputs.
    gradient : "exact" (closed form; Poisson log-loss by adaptive Gauss-Hermite) | "bmc" (eq. 7-8)
        | "ups" (Proposition 1). Only the log-loss DLM term is ever sampled; other objectives are exact.
    n_samples : L, draws per point and step for bMC / uPS.
    bmc_form : "reparam" (pathwise gradient of the bMC log-mean, default) | "price" (eq. 8 with phi'').
    fit_hyperparameters : learn kernel lengthscale(s), variance, prior mean and noise jointly
        (False keeps them at their initial values: Section 6.1's fixed-hyperparameter DLM).
    learn_inducing : learn the inducing inputs Z.
    ard : one lengthscale per feature.
    optimizer : "auto" (L-BFGS for exact gradients, Adam for sampled ones) | "lbfgs" | "adam".
    max_iter : L-BFGS iterations or Adam steps (with ``convergence_window``: the cap on Adam's steps).
    batch_size : Adam minibatch size (None = full batch).
    learning_rate : Adam step size.
    tol : L-BFGS gradient tolerance; with Adam and a ``convergence_window``, the largest range of the loss over
        the window that counts as converged.
    convergence_window : None (default: Adam runs all ``max_iter`` steps) or I >= 2: Adam stops after step t >= I
        when the objective (divided by n) over the last I steps has max - min <= ``tol``, the stopping rule of the
        paper's Appendix D (I = 50 for regression, I = 20 for classification and counts, tolerance 1e-4, caps 5000
        and 3000 steps). ``n_iter_`` is the steps run and ``converged_`` whether the rule stopped them. L-BFGS
        ignores it.
    mean_function : "constant" (default: a constant prior mean c, learnt with the hyperparameters) | "zero" (c = 0,
        never learnt). The paper's Appendix D uses a constant mean for binary prediction and a zero mean for
        regression and counts.
    normalize_X : standardise inputs internally (Z, lengthscales live in the standardised space).
    input_scaling : (mean, scale) to standardise with instead of the training data's own (None = compute).
    lengthscale, variance, noise, mean, inducing : initial values (None = data-based defaults).
    q_mean, q_chol : initial whitened q(w) = N(q_mean, q_chol q_chol^T) (None = prior N(0, I)).
    jitter : relative jitter added to K_uu.
    random_state : seed or numpy Generator (inducing-input subset, Monte Carlo draws, minibatches).
    """

    def __init__(self, likelihood="gaussian", *, objective="elbo", beta=1.0, n_inducing=20, gradient="exact",
                 n_samples=10, bmc_form="reparam", fit_hyperparameters=True, learn_inducing=True, ard=False, optimizer="auto",
                 max_iter=500, batch_size=None, learning_rate=0.01, tol=1e-6, convergence_window=None,
                 mean_function="constant", normalize_X=True, input_scaling=None, lengthscale=None, variance=None,
                 noise=None, mean=None, inducing=None, q_mean=None,
                 q_chol=None, jitter=1e-6, random_state=None):
        self.likelihood = likelihood
        self.objective = objective
        self.beta = beta
        self.n_inducing = n_inducing
        self.gradient = gradient
        self.n_samples = n_samples
        self.bmc_form = bmc_form
        self.fit_hyperparameters = fit_hyperparameters
        self.learn_inducing = learn_inducing
        self.ard = ard
        self.optimizer = optimizer
        self.max_iter = max_iter
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.tol = tol
        self.convergence_window = convergence_window
        self.mean_function = mean_function
        self.normalize_X = normalize_X
        self.input_scaling = input_scaling
        self.lengthscale = lengthscale
        self.variance = variance
        self.noise = noise
        self.mean = mean
        self.inducing = inducing
        self.q_mean = q_mean
        self.q_chol = q_chol
        self.jitter = jitter
        self.random_state = random_state

    def __sklearn_tags__(self):
        """scikit-learn tags: a regressor whose score is a log predictive density (no R^2 threshold)."""
        tags = super().__sklearn_tags__()
        tags.regressor_tags.poor_score = True
        return tags

    _parameter_constraints: dict = {
        "likelihood": [StrOptions(set(LIKELIHOODS))],
        "objective": [StrOptions(set(obj.OBJECTIVES))],
        "beta": [Interval(Real, 0, None, closed="left")],
        "n_inducing": [Interval(Integral, 1, None, closed="left")],
        "gradient": [StrOptions(set(obj.GRADIENTS))],
        "n_samples": [Interval(Integral, 1, None, closed="left")],
        "bmc_form": [StrOptions({"reparam", "price"})],
        "fit_hyperparameters": ["boolean"],
        "learn_inducing": ["boolean"],
        "ard": ["boolean"],
        "optimizer": [StrOptions(set(_OPTIMIZERS))],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "batch_size": [Interval(Integral, 1, None, closed="left"), None],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "convergence_window": [Interval(Integral, 2, None, closed="left"), None],
        "mean_function": [StrOptions({"constant", "zero"})],
        "normalize_X": ["boolean"],
        "input_scaling": ["array-like", None],
        "lengthscale": [Interval(Real, 0, None, closed="neither"), "array-like", None],
        "variance": [Interval(Real, 0, None, closed="neither"), None],
        "noise": [Interval(Real, 0, None, closed="neither"), None],
        "mean": [Interval(Real, None, None, closed="neither"), None],
        "inducing": ["array-like", None],
        "q_mean": ["array-like", None],
        "q_chol": ["array-like", None],
        "jitter": [Interval(Real, 0, None, closed="left")],
        "random_state": ["random_state", np.random.Generator],
    }

    # ------------------------------------------------------------------ configuration checks
    def _check_config(self):
        """The parameters' constraints (``_parameter_constraints``) and their combinations; the optimiser to use."""
        self._validate_params()
        stochastic = obj.is_stochastic(self.objective, self.gradient) or self.batch_size is not None
        if self.objective == "fitc":
            bad = [w for w, cond in (("likelihood='gaussian'", self.likelihood != "gaussian"),
                                     ("gradient='exact'", self.gradient != "exact"),
                                     ("batch_size=None", self.batch_size is not None),
                                     ("beta=1", float(self.beta) != 1.0)) if cond]
            if bad:
                raise ConfigError("objective='fitc' is FITC's collapsed Gaussian marginal likelihood (no KL term, "
                                  f"not separable over rows); use {', '.join(bad)}.")
        if self.optimizer == "lbfgs" and stochastic:
            raise ConfigError("L-BFGS needs exact full-batch gradients; use optimizer='adam' with "
                              "gradient='bmc'/'ups' or with a batch_size.")
        if self.mean_function == "zero" and self.mean is not None and float(self.mean) != 0.0:
            raise ConfigError(f"mean_function='zero' fixes the prior mean at 0; got mean={self.mean}. Use "
                              "mean_function='constant' or leave mean=None.")
        return "adam" if (self.optimizer == "adam" or (self.optimizer == "auto" and stochastic)) else "lbfgs"

    # ------------------------------------------------------------------ fitting
    def _init_params(self, X, y, lik, rng):
        n, d = X.shape
        M = min(self.n_inducing, n)
        if self.inducing is not None:
            Z = np.array(self.inducing, dtype=float).reshape(-1, d)
            M = Z.shape[0]
        else:
            Z = X[np.sort(rng.choice(n, size=M, replace=False))].copy()
        n_ell = d if self.ard else 1
        if self.lengthscale is not None:
            ell = np.broadcast_to(np.asarray(self.lengthscale, dtype=float), (n_ell,)).copy()
        else:
            sub = X[rng.choice(n, size=min(n, 300), replace=False)]
            dist = np.sqrt(np.maximum(((sub[:, None, :] - sub[None]) ** 2).sum(-1), 0))
            med = np.median(dist[np.triu_indices(len(sub), 1)]) if len(sub) > 1 else 1.0
            ell = np.full(n_ell, med / np.sqrt(2.0) if med > 0 else 1.0)
        if np.any(ell <= 0):
            raise ConfigError("lengthscale must be positive.")
        sf2 = float(self.variance) if self.variance is not None else lik.init_variance(y)
        if self.mean_function == "zero":
            c = 0.0
        else:
            c = float(self.mean) if self.mean is not None else lik.init_mean(y)
        par = lik.init_par(y)
        if self.noise is not None and lik.n_par:
            par = np.array([np.log(float(self.noise))])
        mw = np.zeros(M) if self.q_mean is None else np.array(self.q_mean, dtype=float).reshape(M)
        Lraw = np.zeros((M, M)) if self.q_chol is None else obj.unlower(np.asarray(self.q_chol, dtype=float))
        hyp = {"log_ell": np.log(ell), "log_sf2": np.array(np.log(sf2)), "mean": np.array(c), "lik": par}
        free = {"m": mw, "Lw": Lraw}
        fixed = {}
        (free if self.learn_inducing else fixed)["Z"] = Z
        target = free if self.fit_hyperparameters else fixed
        if self.objective == "dlm_square" and self.likelihood == "gaussian":
            fixed["lik"] = hyp.pop("lik")  # the noise does not enter the square loss
        if self.mean_function == "zero":
            fixed["mean"] = hyp.pop("mean")   # c = 0, never learnt
        target.update(hyp)
        return free, fixed

    def fit(self, X, y, progress=None):
        """Fit q(u) (and the hyperparameters, the inducing inputs) by minimising the chosen objective.

        The objectives are Wei, Sheth & Khardon's Section 2 (ELBO, beta-ELBO, log-loss and square-loss DLM; the DLM
        gradient sampled by bMC, eq. 7-8, or uPS, Proposition 1) and FITC's collapsed marginal likelihood (Appendix D),
        optimised by L-BFGS (exact gradients) or Adam (sampled gradients, minibatches).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs (finite; a 1-D input is one feature).
        y : array-like of shape (n_samples,)
            Targets in the likelihood's support (reals for gaussian, labels {0, 1} for probit / logistic, counts for
            poisson); a column vector is read as ``y.ravel()`` with a warning.
        progress : callable or None, default=None
            Called as ``progress(step, total)`` during the optimisation.

        Returns
        -------
        self : SparseGP
            The fitted estimator.

        Raises
        ------
        ConfigError
            A parameter out of range or an invalid combination (L-BFGS with sampled gradients or minibatches; FITC with
            another likelihood, sampled gradients, minibatches or beta != 1); a non-positive lengthscale or input
            scale.
        DataError
            y is None, has another length than X, or lies outside the likelihood's support; X is not finite or has one
            row; the linear algebra broke down (a constant y, or inputs and targets far from order one) or the
            optimisation diverged.
        """
        # the matrices are small (M x n): multithreaded BLAS only adds contention
        with threadpool_limits(1, user_api="blas"):
            return self._fit(X, y, progress)

    def _fit(self, X, y, progress):
        method = self._check_config()
        if y is None:
            raise DataError("SparseGP requires y to be passed, but the target y is None; call fit(X, y) with the targets.")
        if np.asarray(y).ndim == 2 and np.asarray(y).shape[1] == 1:
            warnings.warn(DataConversionWarning("A column-vector y was passed when a 1d array was expected; it is "
                                                "read as y.ravel()."), stacklevel=3)
        X = self._validate_X(X, reset=True, allow_nan=False)
        y = _check_y(y, X.shape[0])
        if X.shape[0] < 2:
            raise DataError("A sparse GP needs at least 2 rows, got 1 sample; pass more rows.")
        lik = make_likelihood(self.likelihood)
        yi = lik.validate(y)
        rng = np.random.default_rng(self.random_state)
        if self.input_scaling is not None:
            mean, scale = (np.broadcast_to(np.asarray(a, dtype=float), (X.shape[1],)).copy() for a in self.input_scaling)
            if np.any(scale <= 0):
                raise ConfigError("input_scaling's scale must be positive.")
            self.x_mean_, self.x_scale_ = mean, scale
        elif self.normalize_X:
            self.x_mean_ = X.mean(axis=0)
            sd = X.std(axis=0)
            self.x_scale_ = np.where(sd > 0, sd, 1.0)
        else:
            self.x_mean_, self.x_scale_ = np.zeros(X.shape[1]), np.ones(X.shape[1])
        Xs = (X - self.x_mean_) / self.x_scale_
        free, fixed = self._init_params(Xs, yi, lik, rng)
        pb = obj.Problem(Xs, yi, lik, self.objective, float(self.beta), self.gradient, int(self.n_samples),
                         self.bmc_form, float(self.jitter), fixed)
        if self.objective == "fitc":
            fun = FITCObjective(pb, free)
        elif self.objective == "dlm_square" and self.likelihood == "gaussian" and self.batch_size is None:
            fun = SquareDLMObjective(pb, free)   # m in closed form at every step (Appendix D)
        else:
            fun = obj.Objective(pb, free)
        self.lik_ = lik
        try:
            if method == "lbfgs":
                self._fit_lbfgs(fun, progress)
            else:
                self._fit_adam(fun, Xs.shape[0], rng, progress)
            self.params_ = fun.params(self.flat_)
            self.packer_, self.fixed_ = fun.path_packer, fixed   # for at_iteration
            self.sampler_stats_ = fun.sampler_stats
            self._cache()
        except (np.linalg.LinAlgError, ValueError, FloatingPointError) as e:
            if isinstance(e, (DataError, ConfigError)):
                raise
            raise DataError(_breakdown_sentence(y, self.likelihood, self.jitter)) from None
        return self

    def _fit_lbfgs(self, fun, progress):
        it, path, hist = [0], [fun.record(fun.flat0)], [float(fun(fun.flat0)[0])]
        if fun.flat0.size == 0:   # FITC with fixed hyperparameters and inducing inputs: nothing to optimise
            self.flat_, self.objective_, self.n_iter_, self.converged_ = fun.flat0, hist[0], 0, True
            self.history_, self.path_ = np.asarray(hist), np.asarray(path)
            return

        def cb(intermediate_result):   # scipy passes the iterate and its objective under this argument name
            it[0] += 1
            path.append(fun.record(intermediate_result.x))
            hist.append(float(intermediate_result.fun))
            if progress is not None:
                progress(it[0], self.max_iter)

        res = optimize.minimize(fun, fun.flat0, jac=True, method="L-BFGS-B", callback=cb,
                                options={"maxiter": self.max_iter, "gtol": self.tol, "ftol": 1e-12 * self.tol,
                                         "maxcor": 30})
        if not np.all(np.isfinite(res.x)):
            raise DataError("The optimisation diverged (non-finite parameters); rescale the inputs/targets "
                            "or increase beta.")
        self.flat_ = res.x
        self.objective_ = float(res.fun)
        self.n_iter_ = int(res.nit)
        self.converged_ = bool(res.success)
        self.history_ = np.asarray(hist)   # objective / n at the start and after every iteration
        self.path_ = np.asarray(path)      # the flat parameters at the same points (Evolution replays them)

    def _fit_adam(self, fun, n, rng, progress, b1=0.9, b2=0.999, eps=1e-8):
        x = fun.flat0.copy()
        if x.size == 0:   # a collapsed objective with nothing free (fixed hyperparameters and inducing inputs)
            self.flat_, self.objective_, self.n_iter_, self.converged_ = x, float(fun(x)[0]), 0, True
            self.history_, self.path_ = np.asarray([self.objective_]), None
            return
        m = np.zeros_like(x)
        s = np.zeros_like(x)
        bs = n if self.batch_size is None else min(self.batch_size, n)
        hist = np.empty(self.max_iter)
        window = self.convergence_window
        stopped = False
        perm, pos = rng.permutation(n), 0
        t = 0
        for t in range(1, self.max_iter + 1):
            if bs == n:
                idx = np.arange(n)
            else:
                if pos + bs > n:
                    perm, pos = rng.permutation(n), 0
                idx = perm[pos:pos + bs]
                pos += bs
            val, g = fun(x, idx, rng)
            if not np.all(np.isfinite(g)):
                raise DataError("The optimisation diverged (non-finite gradient); lower learning_rate or "
                                "rescale the inputs/targets.")
            m = b1 * m + (1 - b1) * g
            s = b2 * s + (1 - b2) * g * g
            x = x - self.learning_rate * (m / (1 - b1 ** t)) / (np.sqrt(s / (1 - b2 ** t)) + eps)
            hist[t - 1] = val
            if progress is not None:
                progress(t, self.max_iter)
            if window is not None and t >= window:   # the paper's rule (Appendix D): the loss's range over I steps
                last = hist[t - window:t]
                if np.all(np.isfinite(last)) and float(last.max() - last.min()) <= self.tol:
                    stopped = True
                    break
        hist = hist[:t]
        self.flat_ = x
        self.objective_ = float(np.mean(hist[-max(1, t // 20):]))
        self.n_iter_ = t
        self.converged_ = stopped if window is not None else True
        self.history_ = hist
        self.path_ = None

    def _cache(self):
        """Precompute the factors used at prediction time."""
        p = self.params_
        ell, sf2 = np.exp(p["log_ell"]), float(np.exp(p["log_sf2"]))
        Z = p["Z"]
        M = Z.shape[0]
        Kuu = rbf(Z, Z, ell, sf2) + self.jitter * sf2 * np.eye(M)
        self._Luu = np.linalg.cholesky(Kuu)
        self._Lw = obj.lower(p["Lw"])
        self._ell, self._sf2, self._c = ell, sf2, float(p["mean"])

    def at_iteration(self, i: int) -> "SparseGP":
        """A copy of this L-BFGS fit with the parameters it had after one optimiser iteration.

        Parameters
        ----------
        i : int
            The iteration (0: the start), clipped to the iterations run.

        Returns
        -------
        SparseGP
            A fitted copy that predicts with those parameters.

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        ConfigError
            For a fit that did not keep its path (an Adam fit).
        """
        self._check_fitted()
        if getattr(self, "path_", None) is None:
            raise ConfigError("Only L-BFGS fits keep their parameters per iteration; refit with optimizer='lbfgs'.")
        i = int(min(max(int(i), 0), len(self.path_) - 1))
        m = copy.copy(self)
        m.params_ = obj.assemble(self.packer_(self.path_[i]), self.fixed_)
        m._cache()
        return m

    # ------------------------------------------------------------------ prediction
    def _check_fitted(self):
        check_fitted(self, "params_")

    def predict_latent(self, X):
        r"""Mean and variance of the latent :math:`q(f(x)) = N(\mu(x), v(x))` at every row (Wei et al., Section 2).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs (finite; no missing values).

        Returns
        -------
        mu : ndarray of shape (n_samples,)
            :math:`\mu(x) = c + a(x)^\top m_w`.
        v : ndarray of shape (n_samples,)
            :math:`v(x) = k(x, x) - a^\top a + a^\top S_w a` (floored at 1e-12 times the kernel variance), with
            :math:`a = L_{uu}^{-1} k(Z, x)` and the whitened :math:`q(w) = N(m_w, S_w)`.

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        DataError
            When X is not finite or has another number of features than the fit's.
        """
        self._check_fitted()
        X = self._validate_X(X, reset=False, allow_nan=False)
        Xs = (X - self.x_mean_) / self.x_scale_
        with threadpool_limits(1, user_api="blas"):
            A = solve_triangular(self._Luu, rbf(self.params_["Z"], Xs, self._ell, self._sf2), lower=True)
        mu = self._c + A.T @ self.params_["m"]
        B = self._Lw.T @ A
        v = np.maximum(self._sf2 - np.sum(A * A, 0) + np.sum(B * B, 0), 1e-12 * self._sf2)
        return mu, v

    def predict_mean(self, X):
        r"""The predictive mean :math:`E_q[y \mid x]` (Gaussian: :math:`\mu`; probit, logistic: :math:`P(y = 1)`; Poisson:
        :math:`\exp(\mu + v/2)`).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs (finite; no missing values).

        Returns
        -------
        mean : ndarray of shape (n_samples,)

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        DataError
            When X is not finite or has another number of features than the fit's.
        """
        mu, v = self.predict_latent(X)
        return np.asarray(self.lik_.pred_mean(mu, v, self.params_["lik"]))

    def predict(self, X) -> np.ndarray:
        """The predictive mean as an array (scikit-learn's ``predict``; as :meth:`predict_mean`).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs (finite; no missing values).

        Returns
        -------
        mean : ndarray of shape (n_samples,)

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        DataError
            When X is not finite or has another number of features than the fit's.
        """
        return self.predict_mean(X)

    def predict_dist(self, X):
        r"""The predictive law :math:`q(y \mid x) = E_{q(f)} p(y \mid f)` per row as a ``distviz.families.dist`` object.

        Gaussian likelihood: ``NormalDist(mu, sqrt(v + s))`` (s the noise variance); probit: ``BernoulliDist`` with
        :math:`P(y = 1) = \Phi(\mu / \sqrt{1 + v})` on the labels {0, 1} (paper Section 2), logistic: ``BernoulliDist``
        with :math:`P(y = 1) = E_q[\sigma(f)]` (quadrature, ``distviz.gp.likelihoods.LogisticLikelihood``); Poisson: the
        Poisson-lognormal law as a ``MixtureDist`` of :math:`\mathrm{Poisson}(e^{f_k})` at the 64 Gauss-Hermite nodes
        :math:`f_k` of :math:`N(\mu, v)`, weighted by the nodes' weights (its logpdf is that quadrature;
        ``log_predictive`` centres its nodes at the tilted mode).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs (finite; no missing values).

        Returns
        -------
        dist : NormalDist, BernoulliDist or MixtureDist
            n_samples laws.

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        DataError
            When X is not finite or has another number of features than the fit's.
        """
        from scipy import stats

        from distviz.families.dist import BernoulliDist, MixtureDist, NormalDist

        mu, v = self.predict_latent(X)
        par = self.params_["lik"]
        if self.likelihood == "gaussian":
            return NormalDist(mu, np.sqrt(v + float(np.exp(par[0]))))
        if self.likelihood in ("probit", "logistic"):
            return BernoulliDist(np.asarray(self.lik_.pred_mean(mu, v, par)))
        t, w = np.polynomial.hermite.hermgauss(64)
        f = mu[:, None] + np.sqrt(2.0 * v)[:, None] * t[None, :]
        return MixtureDist(stats.poisson(np.exp(f)), weights=np.broadcast_to(w / np.sqrt(np.pi), f.shape), discrete=True)

    def predict_density(self, X, y_grid):
        r"""The predictive density (or mass) :math:`q(y \mid x) = E_q\, p(y \mid f)` on a grid of y.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs (finite; no missing values).
        y_grid : array-like of shape (G,)
            Finite y values (in the likelihood's support for probit, logistic and Poisson).

        Returns
        -------
        density : ndarray of shape (n_samples, G)

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        DataError
            When X is not finite or has another number of features than the fit's.
            Also when ``y_grid`` holds NaN, infinite or unsupported values.
        """
        mu, v = self.predict_latent(X)
        yg = np.asarray(y_grid, dtype=float).ravel()
        if not np.all(np.isfinite(yg)):
            raise DataError("y_grid contains NaN or infinite values.")
        yg = self.lik_.validate(yg) if self.likelihood != "gaussian" else yg
        lp = self.lik_.log_pred(yg[None, :], mu[:, None], v[:, None], self.params_["lik"])
        return np.exp(np.asarray(lp))

    def log_predictive(self, X, y):
        r"""The log predictive density :math:`\log q(y_i \mid x_i)` at each row's own y (the paper's test log-loss is its
        negative mean).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs (finite; no missing values).
        y : array-like of shape (n_samples,)
            One target per row, in the likelihood's support.

        Returns
        -------
        log_pred : ndarray of shape (n_samples,)

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        DataError
            When X is not finite or has another number of features than the fit's.
            Also when y has another length than X or lies outside the likelihood's support.
        """
        mu, v = self.predict_latent(X)
        y = self.lik_.validate(_check_y(y, mu.shape[0]))
        return np.asarray(self.lik_.log_pred(y, mu, v, self.params_["lik"]))

    def score(self, X, y, sample_weight=None) -> float:
        r"""Weighted mean log predictive density :math:`\sum_i w_i \log q(y_i \mid x_i) / \sum_i w_i` (higher is better;
        the paper's test log-loss is ``-score``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs (finite; no missing values).
        y : array-like of shape (n_samples,)
            One target per row, in the likelihood's support.
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
            When X is not finite or has another number of features than the fit's.
            Also when y has another length than X or lies outside the likelihood's support.
        """
        lp = self.log_predictive(X, y)
        w = check_sample_weight(sample_weight, lp.shape[0])
        return float(np.average(lp, weights=w))

    def predict_interval(self, X, level=0.9):
        r"""The central predictive interval of y (Gaussian likelihood: variance :math:`v + s`) or of the latent f (the
        other likelihoods: variance v), :math:`\mu \pm z_{(1 + \text{level})/2} \sqrt{\cdot}`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs (finite; no missing values).
        level : float, default=0.9
            The central probability, in (0, 1).

        Returns
        -------
        lower, upper : ndarray of shape (n_samples,) each

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        DataError
            When X is not finite or has another number of features than the fit's.
        """
        mu, v = self.predict_latent(X)
        z = special.ndtri(0.5 + level / 2)
        t = v + (float(np.exp(self.params_["lik"][0])) if self.likelihood == "gaussian" else 0.0)
        return mu - z * np.sqrt(t), mu + z * np.sqrt(t)

    # ------------------------------------------------------------------ persistence
    def _model_writer(self):
        """The model file :meth:`save` writes (``distviz.modelfile.ModelWriter``): the fitted inducing points, variational
        parameters, hyperparameters and input scaling.  Array-valued initial values (inducing, q_mean, ...) and a
        Generator random_state only steer fit and are stored as None."""
        from distviz.modelfile import ModelWriter

        params = {k: (None if isinstance(v, (np.ndarray, tuple, list, np.random.Generator)) else v)
                  for k, v in self.get_params(deep=False).items()}
        w = ModelWriter(self, params, {"n_features": int(self.n_features_in_), "n_iter": int(self.n_iter_),
                                       "objective": float(self.objective_), "converged": bool(self.converged_)})
        for k, v in self.params_.items():
            w.array(f"param_{k}", v)
        w.array("x_mean", self.x_mean_)
        w.array("x_scale", self.x_scale_)
        return w

    @classmethod
    def _read_model(cls, f) -> "SparseGP":
        """The fitted estimator :meth:`load` reads from the opened model file `f` (``distviz.modelfile.ModelFile``),
        every value checked before use."""
        est = f.construct(cls, f.params, lambda e: e._check_config())
        p = f.value("n_features", int, 1, 2**31 - 1)
        Z = f.array("param_Z", (None, p))
        M = Z.shape[0]
        if M < 1:
            raise f.fail("it has no inducing points")
        est.params_ = {"Z": Z, "Lw": f.array("param_Lw", (M, M)), "m": f.array("param_m", (M,)),
                       "lik": f.array("param_lik", (None,)), "log_ell": f.array("param_log_ell", (None,)),
                       "log_sf2": f.array("param_log_sf2", ()), "mean": f.array("param_mean", ())}
        if est.params_["log_ell"].shape[0] not in (1, p):
            raise f.fail("its lengthscales do not match the features")
        est.x_mean_, est.x_scale_ = f.array("x_mean", (p,)), f.array("x_scale", (p,))
        if not (est.x_scale_ > 0).all():
            raise f.fail("an input scale is not positive")
        est.lik_ = make_likelihood(est.likelihood)
        est._names_from_file(f, p)
        est.n_iter_, est.objective_ = f.value("n_iter", int, 0), f.value("objective", float)
        est.converged_, est.history_, est.sampler_stats_ = f.value("converged", bool), None, None
        try:
            est._cache()
        except np.linalg.LinAlgError:
            raise f.fail("its inducing points give a singular kernel matrix") from None
        return est

    # ------------------------------------------------------------------ fitted quantities
    @property
    def hyperparameters_(self) -> dict:
        """Fitted lengthscale(s), kernel variance, prior mean, noise variance, inducing inputs, input scaling.

        Lengthscales and inducing inputs are in the standardised input space given by input_scaling.
        Pass as keyword arguments to a new SparseGP (with fit_hyperparameters=False) for Section 6.1's
        fixed-hyperparameter DLM variant.
        """
        self._check_fitted()
        p = self.params_
        out = {"lengthscale": np.exp(p["log_ell"]), "variance": float(np.exp(p["log_sf2"])),
               "mean": float(p["mean"]), "inducing": p["Z"].copy(),
               "input_scaling": (self.x_mean_.copy(), self.x_scale_.copy())}
        if self.likelihood == "gaussian":
            out["noise"] = float(np.exp(p["lik"][0]))
        return out

    @property
    def q_u_(self):
        """(m, S) of q(u) = N(m, S) in the original (unwhitened) coordinates: m = L_uu m_w, S = L_uu S_w L_uu^T."""
        self._check_fitted()
        LL = self._Luu @ self._Lw
        return self._c + self._Luu @ self.params_["m"], LL @ LL.T


def beta_grid(n: int, low: float = 0.01, factor: float = 2.0) -> list[float]:
    """The beta grid of dlm_sparse_gp.txt Section 6.1: ``[n, n/2, n/4, ..., low]``.

    Starting at ``n`` (the number of training rows), each value is the previous one divided by
    `factor` while it stays above `low`; `low` itself closes the grid.  ``factor=4`` gives a coarser
    grid of the same range.

    Parameters
    ----------
    n : int
        Number of training rows: the largest beta.
    low : float, default=0.01
        The smallest beta, always the last entry.
    factor : float, default=2.0
        Ratio of consecutive values; must be > 1.

    Returns
    -------
    list of float
        The grid, in decreasing order.

    Raises
    ------
    distviz.errors.ConfigError
        If `factor` is not greater than 1.

    Examples
    --------
    >>> from distviz.gp import beta_grid
    >>> beta_grid(100, factor=4)
    [100.0, 25.0, 6.25, 1.5625, 0.390625, 0.09765625, 0.0244140625, 0.01]
    """
    if factor <= 1:
        raise ConfigError(f"beta grid factor must be > 1; got {factor}.")
    out, b = [], float(n)
    while b > low:
        out.append(b)
        b /= factor
    out.append(low)
    return out


def warm_start_params(model: SparseGP) -> dict:
    """Constructor arguments that start a new SparseGP at a fitted model's parameters.

    The fitted hyperparameters (``model.hyperparameters_``: lengthscale(s), kernel variance, prior
    mean, inducing inputs, input scaling, and the noise variance of a Gaussian likelihood) plus the
    whitened variational distribution ``q(w) = N(q_mean, q_chol q_chol^T)``.  `select_beta` uses
    them for its ``warm_start`` option.

    Parameters
    ----------
    model : SparseGP
        A fitted model.

    Returns
    -------
    dict
        Keyword arguments for ``SparseGP(**params)``: the keys of ``model.hyperparameters_`` plus
        ``q_mean`` (M,) and ``q_chol`` (M, M), copies of the fitted arrays.

    Examples
    --------
    >>> import numpy as np
    >>> from distviz.gp import SparseGP, warm_start_params
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-3, 3, (40, 1))
    >>> y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(40)
    >>> gp = SparseGP(n_inducing=5, max_iter=50, random_state=0).fit(X, y)
    >>> sorted(warm_start_params(gp))
    ['inducing', 'input_scaling', 'lengthscale', 'mean', 'noise', 'q_chol', 'q_mean', 'variance']
    >>> SparseGP(**{**gp.get_params(), **warm_start_params(gp), "beta": 0.5}).fit(X, y).beta
    0.5
    """
    hp = model.hyperparameters_
    return {**hp, "q_mean": model.params_["m"].copy(), "q_chol": np.array(obj.lower(model.params_["Lw"]))}


def select_beta(estimator: SparseGP, X, y, X_val, y_val, grid=None, metric=None, refit=True, warm_start=False,
                progress=None, on_fit=None):
    """Pick beta on a validation split (dlm_sparse_gp.txt Section 6.1) by log-loss or squared error.

    For every beta of the grid, a copy of `estimator` (its ``get_params()`` with that ``beta``) is fitted
    on ``(X, y)`` and scored on ``(X_val, y_val)``: by the validation log-loss ``-estimator.score``
    (minus the mean log predictive density) or by the mean squared error of ``predict_mean`` against
    the likelihood's target mean.  The beta with the lowest finite score wins (the grid's first beta
    when none is finite).

    The grid runs from large to small beta; with warm_start each fit starts at the previous beta's
    solution (off by default: a large beta can collapse q(u) to the prior and the kernel variance to
    zero, a stationary point that warm-started fits then never leave).

    Parameters
    ----------
    estimator : SparseGP
        Template; its parameters other than ``beta`` are kept.  It is not fitted itself.
    X : array-like of shape (n, p)
        Training inputs.
    y : array-like of shape (n,)
        Training targets.
    X_val : array-like of shape (n_val, p)
        Validation inputs.
    y_val : array-like of shape (n_val,)
        Validation targets.
    grid : iterable of float, optional
        The betas to try (sorted into decreasing order); None uses ``beta_grid(n)``.
    metric : {'log_loss', 'squared_error'}, optional
        Validation score; None picks ``'squared_error'`` for ``objective='dlm_square'`` and
        ``'log_loss'`` otherwise.
    refit : bool, default=True
        Refit with the chosen beta on the training and validation rows together (``X`` stacked on
        ``X_val``); otherwise return the model fitted on ``X``.
    warm_start : bool, default=False
        Start each fit at the previous (finite-scored) fit's solution (`warm_start_params`); with
        ``fit_hyperparameters=False`` only q(u) and the inducing inputs are carried over.
    progress : callable, optional
        Called as ``progress(done, total)`` after each grid value.
    on_fit : callable, optional
        Called with each grid value's fitted estimator (e.g. to count the fits that converged, ``converged_``).

    Returns
    -------
    estimator : SparseGP
        The fitted model with the chosen beta.
    best : float
        The chosen beta.
    scores : dict of float to float
        Validation score of every beta (lower is better; may be inf or NaN for a failed fit).

    Raises
    ------
    distviz.errors.ConfigError
        If `metric` is unknown.

    See Also
    --------
    beta_grid : the default grid.

    Examples
    --------
    >>> import numpy as np
    >>> from distviz.gp import SparseGP, select_beta
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-3, 3, (60, 1))
    >>> y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(60)
    >>> gp = SparseGP(objective="dlm_log", n_inducing=5, max_iter=50, random_state=0)
    >>> model, best, scores = select_beta(gp, X[:40], y[:40], X[40:], y[40:], grid=[1.0, 0.1])
    >>> sorted(scores), best in scores, model.beta == best
    ([0.1, 1.0], True, True)
    """
    X, X_val = _check_X(X), _check_X(X_val, "X_val")
    y, y_val = _check_y(y, X.shape[0]), _check_y(y_val, X_val.shape[0], "y_val")
    grid = beta_grid(X.shape[0]) if grid is None else sorted((float(b) for b in grid), reverse=True)
    if metric is None:
        metric = "squared_error" if estimator.objective == "dlm_square" else "log_loss"
    if metric not in ("log_loss", "squared_error"):
        raise ConfigError(f"Unknown metric '{metric}'; choose 'log_loss' or 'squared_error'.")
    scores, models = {}, {}
    base = estimator.get_params()
    prev = None
    for k, b in enumerate(grid):
        params = {**base, "beta": float(b)}
        if warm_start and prev is not None:
            init = warm_start_params(prev)
            if not estimator.fit_hyperparameters:  # keep the given (fixed) hyperparameters
                init = {key: init[key] for key in ("q_mean", "q_chol", "inducing")}
            params.update(init)
        est = estimator.__class__(**params).fit(X, y)
        if metric == "log_loss":
            scores[b] = -est.score(X_val, y_val)  # validation log-loss (lower is better)
        else:
            target = est.lik_.target_mean(est.lik_.validate(y_val))
            scores[b] = float(np.mean((est.predict_mean(X_val) - target) ** 2))
        models[b] = est
        if on_fit is not None:
            on_fit(est)
        prev = est if np.isfinite(scores[b]) else prev
        if progress is not None:
            progress(k + 1, len(grid))
    finite = {b: s for b, s in scores.items() if np.isfinite(s)}
    best = min(finite, key=finite.__getitem__) if finite else grid[0]
    if refit:
        est = estimator.__class__(**{**base, "beta": float(best)})
        est.fit(np.vstack([X, X_val]), np.concatenate([y, y_val]))
    else:
        est = models[best]
    return est, best, scores
