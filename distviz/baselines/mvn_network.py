"""The neural-network baseline of the multivariate NGBoost paper: an MLP that outputs a P-variate Gaussian.

O'Malley et al. (2023), Sec. 2.2 and Sec. 4 ("NN"), after Williams (1996): a multilayer perceptron maps
x to the parameters theta(x) = (mu, v) of N(mu, Sigma) in the Cholesky-of-precision chart
``Sigma^-1 = U^T U`` (paper eq. 3), the same chart NGB boosts (``distviz.families.mvn_cholesky``), and
is trained on the mean negative log-likelihood (paper eq. A.2).  Because the network's outputs live in
that chart, its predictions are scored by the same NLL, KL, coverage and area code as NGB.

Training as the paper's Sec. 4 says and as the authors' code does (MikeOMa/MV_Prediction,
``probdrift/mvn_models/mvn_nn.py`` and ``simulation_example/fittingmethods.py``): dense layers with
ReLU, Glorot-uniform weights, Adam (Kingma and Ba, 2015) at learning rate 0.01, **mini-batches of 256
rows** reshuffled every epoch, at most 1000 epochs, early stopping on the validation NLL with patience
50, and the weights restored to the best epoch.  The authors' grid of hidden layers
``(20,), (50,), (100,), (20, 20), (50, 20), (100, 20)`` is ``AUTHORS_GRID``; with
``hidden_layer_sizes="auto"`` the structure with the lowest validation NLL is kept (the paper chose one
structure per N from the test log-likelihood averaged over replications; here the choice is per fit
and never looks at test data).  The paper's Figure 1 network has one hidden layer of 100 units, the
default.

Two choices differ from the authors' Keras code and are options: inputs are standardised on the
training rows (``input_scaling="standard"``; the authors fed raw x in the simulation and min-max
scaled x for the drifters, ``"minmax"``), and the output bias starts at the marginal maximum-likelihood
Gaussian of the training targets, NGB's starting point (``output_init="marginal"``; Keras starts it at
zero, ``"zeros"``).  The chart carries NGB's jitter 1e-6 on U's diagonal (paper Sec. 3.3); the
gradient of the chart (taken in log a_ii, App. B) is chained to v_ii exactly, so backpropagation is the
exact gradient of the loss (checked by finite differences in the tests).
"""

from __future__ import annotations

import json
import time
from numbers import Integral, Real
from pathlib import Path

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from distviz.contract import Estimator
from distviz.errors import ConfigError, DataError, check_fitted

__all__ = ["MVNNetwork", "AUTHORS_GRID"]

#: Hidden-layer structures of the authors' grid search (simulation_example/eval_model.py, NN_LAYERS).
AUTHORS_GRID = ((20,), (50,), (100,), (20, 20), (50, 20), (100, 20))
FORMAT = "distviz.MVNNetwork/1"
_ACTIVATIONS = ("relu", "tanh")
_SCALINGS = ("standard", "minmax", None, "none")
_INITS = ("marginal", "zeros")


# ----------------------------------------------------------------------------------------------
# network maths (plain numpy; gradients by hand, checked against finite differences in the tests)


def _act(a, kind):
    """Hidden activation."""
    return np.maximum(a, 0.0) if kind == "relu" else np.tanh(a)


def _act_grad(a, h, kind):
    """Derivative of the activation at pre-activation a (h = activation(a))."""
    return (a > 0.0).astype(a.dtype) if kind == "relu" else 1.0 - h * h


def forward(params, Xs, activation="relu", keep=False):
    """Network output theta (n, dim) for standardised inputs Xs; with `keep`, also the layer values for backprop."""
    h = Xs
    cache = [(None, Xs)]
    for k in range(0, len(params) - 2, 2):
        a = h @ params[k] + params[k + 1]
        h = _act(a, activation)
        if keep:
            cache.append((a, h))
    theta = h @ params[-2] + params[-1]
    return (theta, cache) if keep else theta


def backward(params, cache, dtheta, activation="relu"):
    """Gradients of a loss with d loss / d theta = dtheta through the network, in the order of params."""
    grads = [None] * len(params)
    h = cache[-1][1]
    grads[-2] = h.T @ dtheta
    grads[-1] = dtheta.sum(axis=0)
    dh = dtheta @ params[-2].T
    for layer in range(len(cache) - 1, 0, -1):
        a, h = cache[layer]
        da = dh * _act_grad(a, h, activation)
        k = 2 * (layer - 1)
        grads[k] = cache[layer - 1][1].T @ da
        grads[k + 1] = da.sum(axis=0)
        if layer > 1:
            dh = da @ params[k].T
    return grads


def chart_loss_and_grad(chart, y, theta):
    """Mean NLL (paper eq. A.2) over rows and its exact gradient in theta, via the chart's App. B formulas.

    The chart differentiates the diagonal in log a_ii (a_ii = exp(v_ii) + jitter, App. B); the factor
    d log a_ii / d v_ii = exp(v_ii) / a_ii turns that into the derivative in v_ii.
    """
    nll, g, _ = chart.nll_and_grads(y, theta, natural=False)
    if chart.jitter:
        cols = chart.p + np.flatnonzero(np.asarray(chart._urow) == np.asarray(chart._ucol))
        e = np.exp(theta[:, cols])
        g[:, cols] *= e / (e + chart.jitter)
    n = theta.shape[0]
    return float(nll.mean()), g / n


def _glorot(rng, fan_in, fan_out):
    """Glorot-uniform weights (Keras' Dense default)."""
    lim = np.sqrt(6.0 / (fan_in + fan_out))
    return rng.uniform(-lim, lim, size=(fan_in, fan_out))


def _init_params(rng, sizes):
    """Weights and zero biases of a dense network with layer widths `sizes` (input ... output)."""
    out = []
    for i, j in zip(sizes[:-1], sizes[1:]):
        out.append(_glorot(rng, i, j))
        out.append(np.zeros(j))
    return out


# ----------------------------------------------------------------------------------------------
# the estimator


def _layers(h) -> tuple:
    """A hidden-layer structure as a tuple of positive ints; ConfigError otherwise."""
    if isinstance(h, (int, np.integer)):
        h = (h,)
    try:
        t = tuple(int(v) for v in h)
        ok = all(int(v) == v and v >= 1 for v in h)
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ConfigError(f"hidden layer sizes must be positive integers such as (100,) or (50, 20), got {h!r}.")
    return t


#: largest |log| of a predicted precision factor's diagonal entry (exp of it squared stays well inside float64)
_MAX_LOG_DIAG = 300.0


def _refuse_far_rows(bad: np.ndarray, what: str) -> None:
    """DataError naming the first row of X whose prediction overflows (a row far outside the training features)."""
    if bad.any():
        raise DataError(f"X row {int(np.flatnonzero(bad)[0])} lies too far from the training data for MVNNetwork: its "
                        f"predicted {what} overflows; pass rows within the range of the training features.")


class MVNNetwork(Estimator):
    """MLP whose outputs are a P-variate Gaussian in NGB's Cholesky-of-precision chart (the paper's NN, Sec. 4).

    Parameters
    ----------
    hidden_layer_sizes : hidden widths, e.g. (100,) (paper Fig. 1), or "auto" to pick from `hidden_grid` on
        validation NLL.
    hidden_grid : structures tried when hidden_layer_sizes="auto" (default: the authors' six).
    activation : "relu" (the authors') or "tanh".
    learning_rate : Adam step size (paper: 0.01).
    batch_size : rows per Adam step (authors: 256); None or 0 for full batch.
    max_epochs : epoch cap (authors: 1000).
    patience : epochs without a strict validation improvement before stopping (paper: 50); None trains all
        epochs and still restores the best one.
    validation_fraction : share of the training rows held out when fit gets no eval_set.
    input_scaling : "standard" (z-scores on the training rows), "minmax" (to [0, 1], the authors' drifter
        preprocessing) or None.
    output_init : "marginal" (output bias at the training targets' Gaussian MLE, NGB's start) or "zeros" (Keras).
    random_state : seed of the weights, the shuffling and the validation split.
    """

    def __init__(self, *, hidden_layer_sizes=(100,), hidden_grid=AUTHORS_GRID, activation="relu",
                 learning_rate=0.01, batch_size=256, max_epochs=1000, patience=50, validation_fraction=0.1,
                 input_scaling="standard", output_init="marginal", random_state=None):
        self.hidden_layer_sizes = hidden_layer_sizes
        self.hidden_grid = hidden_grid
        self.activation = activation
        self.learning_rate = learning_rate
        self.batch_size = batch_size
        self.max_epochs = max_epochs
        self.patience = patience
        self.validation_fraction = validation_fraction
        self.input_scaling = input_scaling
        self.output_init = output_init
        self.random_state = random_state

    _parameter_constraints: dict = {
        "hidden_layer_sizes": [StrOptions({"auto"}), "array-like", Interval(Integral, 1, None, closed="left")],
        "hidden_grid": ["array-like"],
        "activation": [StrOptions(set(_ACTIVATIONS))],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "batch_size": [Interval(Integral, 0, None, closed="left"), None],
        "max_epochs": [Interval(Integral, 1, None, closed="left")],
        "patience": [Interval(Integral, 1, None, closed="left"), None],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        "input_scaling": [StrOptions({"standard", "minmax", "none"}), None],
        "output_init": [StrOptions(set(_INITS))],
        "random_state": ["random_state"],
    }

    # ------------------------------------------------------------------ checks
    def _check_params(self) -> list[tuple]:
        """Validate the constructor parameters (``_parameter_constraints``); return the hidden structures to try."""
        self._validate_params()
        if isinstance(self.hidden_layer_sizes, str):
            if self.hidden_layer_sizes != "auto":
                raise ConfigError(f"hidden_layer_sizes must be 'auto' or sizes such as (100,), "
                                  f"got {self.hidden_layer_sizes!r}.")
            grid = [_layers(h) for h in self.hidden_grid]
            if not grid:
                raise ConfigError("hidden_grid is empty; pass structures such as ((50,), (100,)).")
            return grid
        return [_layers(self.hidden_layer_sizes)]

    def __sklearn_tags__(self):
        """scikit-learn tags: a regressor that takes 2-D Y (one column per output)."""
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        tags.regressor_tags.poor_score = True  # score is a log-likelihood, not R^2: no 0.5 threshold applies
        return tags

    def _check_fitted(self):
        check_fitted(self, "params_")

    # ------------------------------------------------------------------ fit
    def fit(self, X, Y, eval_set=None, progress=None):
        """Train the network(s) on X and Y by Adam on the mean NLL (O'Malley et al., Sec. 4 and eq. A.2).

        Each structure of the grid (one with ``hidden_layer_sizes`` given, ``hidden_grid`` with "auto") is trained with
        early stopping on the validation NLL and its best epoch's weights restored; the structure with the least
        validation NLL is kept.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training features (no missing values).
        Y : array-like of shape (n_samples, P) or (n_samples,)
            Targets, one column per output.
        eval_set : tuple (X_val, Y_val) or None, default=None
            Validation rows for early stopping and the grid choice; without it ``validation_fraction`` of the rows is
            held out.
        progress : callable or None, default=None
            Called as ``progress(done, total)`` after every epoch, counting epochs over all structures of the grid
            (total = structures x ``max_epochs``).

        Returns
        -------
        self : MVNNetwork
            The fitted estimator.

        Raises
        ------
        ConfigError
            A parameter out of range.
        DataError
            Y is None or has another length than X, X holds NaN, or there are fewer than P + 1 training rows.
        """
        from distviz.estimators.ngboost import _check_y
        from distviz.families.mvn_cholesky import MVNCholesky

        grid = self._check_params()
        if Y is None:
            raise DataError("MVNNetwork requires y to be passed, but the target y is None; call fit(X, Y) with the targets.")
        t0 = time.perf_counter()
        X = self._validate_X(X, reset=True, allow_nan=False)
        Y = _check_y(Y, X.shape[0], "Y")
        X, Y, _, ev = self._validation_rows(X, Y, None, eval_set, split=True, check_y=_check_y, allow_nan=False)
        Xv, Yv = ev[0], ev[1]
        P = Y.shape[1]
        chart = MVNCholesky(P)
        if X.shape[0] < P + 1:
            raise DataError(f"Need at least {P + 1} training rows to fit a {P}-variate Normal, got {X.shape[0]} "
                            f"sample{'s' if X.shape[0] != 1 else ''}.")
        if self.input_scaling == "standard":
            loc, scale = X.mean(axis=0), X.std(axis=0)
        elif self.input_scaling == "minmax":
            loc, scale = X.min(axis=0), X.max(axis=0) - X.min(axis=0)
        else:
            loc, scale = np.zeros(X.shape[1]), np.ones(X.shape[1])
        scale = np.where(scale > 0, scale, 1.0)
        Xs, Xvs = (X - loc) / scale, (Xv - loc) / scale
        theta0 = chart.init_theta(Y) if self.output_init == "marginal" else np.zeros(chart.dim)

        runs = {}
        total = len(grid) * int(self.max_epochs)
        for k, h in enumerate(grid):
            tick = None if progress is None else (lambda e, k=k: progress(k * int(self.max_epochs) + e, total))
            runs[h] = self._train(chart, h, Xs, Y, Xvs, Yv, theta0, tick)
        best_h = min(runs, key=lambda h: runs[h]["best_val"])
        r = runs[best_h]
        self.chart_ = chart
        self.x_loc_, self.x_scale_ = loc, scale
        self.params_ = r["params"]
        self.hidden_layer_sizes_ = best_h
        self.best_epoch_ = r["best_epoch"]
        self.n_epochs_ = r["n_epochs"]
        self.diverged_ = r["diverged"]
        self.train_loss_ = np.asarray(r["train"])
        self.valid_loss_ = np.asarray(r["valid"])
        self.best_valid_loss_ = float(r["best_val"])
        self.grid_valid_loss_ = {"x".join(map(str, h)): float(v["best_val"]) for h, v in runs.items()}
        self.n_outputs_ = P
        self.fit_seconds_ = time.perf_counter() - t0
        return self

    def _train(self, chart, hidden, Xs, Y, Xvs, Yv, theta0, progress):
        """One network of the given hidden widths, Adam on mini-batches, best-epoch weights restored."""
        rng = np.random.default_rng(self.random_state)
        n = Xs.shape[0]
        params = _init_params(rng, (Xs.shape[1],) + tuple(hidden) + (chart.dim,))
        params[-1] = np.array(theta0, dtype=float)
        lr = float(self.learning_rate)
        b1, b2, eps = 0.9, 0.999, 1e-7  # Keras' Adam defaults
        m = [np.zeros_like(p) for p in params]
        v = [np.zeros_like(p) for p in params]
        bs = n if not self.batch_size else min(int(self.batch_size), n)
        act = self.activation
        best_val, best_params, best_epoch, wait, step = np.inf, [p.copy() for p in params], 0, 0, 0
        train, valid, diverged = [], [], False
        for epoch in range(1, int(self.max_epochs) + 1):
            perm = rng.permutation(n)
            tot = 0.0
            for s in range(0, n, bs):
                idx = perm[s:s + bs]
                theta, cache = forward(params, Xs[idx], act, keep=True)
                if not np.isfinite(theta).all():
                    diverged = True
                    break
                loss, dtheta = chart_loss_and_grad(chart, Y[idx], theta)
                if not (np.isfinite(loss) and np.isfinite(dtheta).all()):
                    diverged = True
                    break
                tot += loss * len(idx)
                grads = backward(params, cache, dtheta, act)
                step += 1
                lr_t = lr * np.sqrt(1.0 - b2**step) / (1.0 - b1**step)
                for k, g in enumerate(grads):
                    m[k] = b1 * m[k] + (1.0 - b1) * g
                    v[k] = b2 * v[k] + (1.0 - b2) * g * g
                    params[k] = params[k] - lr_t * m[k] / (np.sqrt(v[k]) + eps)
            if diverged:
                break
            tv = forward(params, Xvs, act)
            val = float(np.mean(chart.nll(Yv, tv))) if np.isfinite(tv).all() else np.inf
            train.append(tot / n)
            valid.append(val)
            if val < best_val:
                best_val, best_params, best_epoch, wait = val, [p.copy() for p in params], epoch, 0
            else:
                wait += 1
            if progress is not None:
                progress(epoch)
            if self.patience is not None and wait >= int(self.patience):
                break
        return {"params": best_params, "best_val": best_val, "best_epoch": best_epoch, "n_epochs": len(valid),
                "train": train, "valid": valid, "diverged": diverged}

    # ------------------------------------------------------------------ predict
    def predict_params(self, X) -> np.ndarray:
        r"""The chart parameters :math:`\theta(x) = (\mu, v)` per row, with the best epoch's weights.

        The Cholesky-of-precision chart :math:`\Sigma^{-1} = U^\top U` of the paper's eq. 3 (as NGB's
        ``mvn_cholesky``): :math:`\mu` the P means, :math:`v` the entries of U (log of its diagonal).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features (no missing values).

        Returns
        -------
        theta : ndarray of shape (n_samples, P + P (P + 1) / 2)

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        DataError
            When X has another number of features than the fit's, holds NaN, or has a row so far from the training
            features that its prediction overflows.
        """
        self._check_fitted()
        X = self._validate_X(X, reset=False, allow_nan=False)
        with np.errstate(over="ignore", invalid="ignore"):
            F = forward(self.params_, (X - self.x_loc_) / self.x_scale_, self.activation)
        logdiag = F[:, self.chart_.p + self.chart_._diag]
        _refuse_far_rows(~np.isfinite(F).all(axis=1) | (np.abs(logdiag) > _MAX_LOG_DIAG).any(axis=1), "Normal")
        return F

    def predict_dist(self, X):
        """The predicted Gaussian per row (as NGB's).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features (no missing values).

        Returns
        -------
        dist : MultivariateNormalDist
            Mean (n_samples, P) and covariance (n_samples, P, P).

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        DataError
            When X has another number of features than the fit's, holds NaN, or has a row so far from the training
            features that its prediction overflows.
        """
        from distviz.families.dist import MultivariateNormalDist

        F = self.predict_params(X)
        return MultivariateNormalDist(self.chart_.mean(F), self.chart_.cov(F))

    def predict(self, X) -> np.ndarray:
        """The predicted mean (scikit-learn's ``predict``; :meth:`predict_dist` has the covariance).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features (no missing values).

        Returns
        -------
        mean : ndarray of shape (n_samples, P), or (n_samples,) for a single output

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        DataError
            When X has another number of features than the fit's, holds NaN, or has a row so far from the training
            features that its prediction overflows.
        """
        F = self.predict_params(X)
        m = self.chart_.mean(F)
        return m[:, 0].copy() if self.n_outputs_ == 1 else m

    def nll(self, X, Y) -> np.ndarray:
        """Per-row negative log-likelihood of Y under the prediction at X (the chart's NLL, paper eq. A.2).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features (no missing values).
        Y : array-like of shape (n_samples, P) or (n_samples,)
            One target row per row of X.

        Returns
        -------
        nll : ndarray of shape (n_samples,)

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        DataError
            When X has another number of features than the fit's, holds NaN, or has a row so far from the training
            features that its prediction overflows.
            Also when Y has another length than X or a row's NLL overflows.
        """
        from distviz.estimators.ngboost import _check_y

        F = self.predict_params(X)
        Y = _check_y(Y, F.shape[0], "Y")
        with np.errstate(over="ignore", invalid="ignore"):
            v = self.chart_.nll(Y, F)
        _refuse_far_rows(~np.isfinite(v), "NLL")
        return v

    def score(self, X, y, sample_weight=None) -> float:
        """Weighted mean log-likelihood of the outputs y, i.e. minus the mean NLL (higher is better).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features (no missing values).
        y : array-like of shape (n_samples, P) or (n_samples,)
            One target row per row of X.
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
            When X has another number of features than the fit's, holds NaN, or has a row so far from the training
            features that its prediction overflows.
        """
        from distviz.validation import check_sample_weight

        v = self.nll(X, y)
        return -float(np.average(v, weights=check_sample_weight(sample_weight, v.shape[0])))

    # ------------------------------------------------------------------ persistence
    def save(self, path) -> None:
        """Write the fitted network to a NetCDF file (weights as float64 arrays, parameters as JSON; no pickle).

        Parameters
        ----------
        path : str or path-like
            The file to write; an existing file is replaced.

        Returns
        -------
        None

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        """
        import xarray as xr

        from distviz.modelfile import engine as _engine

        self._check_fitted()
        data: dict[str, tuple] = {"x_loc": ("feature", self.x_loc_), "x_scale": ("feature", self.x_scale_),
                "train_loss": ("epoch", self.train_loss_), "valid_loss": ("epoch", self.valid_loss_)}
        for k in range(len(self.params_) // 2):
            W, b = self.params_[2 * k], self.params_[2 * k + 1]
            data[f"weight_{k}"] = ((f"in_{k}", f"out_{k}"), W)
            data[f"bias_{k}"] = ((f"out_{k}",), b)
        params = self.get_params()
        params["hidden_grid"] = [list(_layers(h)) for h in params["hidden_grid"]]
        if not isinstance(params["hidden_layer_sizes"], str):
            params["hidden_layer_sizes"] = list(_layers(params["hidden_layer_sizes"]))
        rs = params["random_state"]
        params["random_state"] = int(rs) if isinstance(rs, (int, np.integer)) else None
        attrs = {"model_format": FORMAT, "model_params": json.dumps(params),
                 "hidden_layer_sizes_fitted": json.dumps(list(self.hidden_layer_sizes_)),
                 "grid_valid_loss": json.dumps(self.grid_valid_loss_),
                 "n_features_in": int(self.n_features_in_), "n_outputs": int(self.n_outputs_),
                 "best_epoch": int(self.best_epoch_), "n_epochs": int(self.n_epochs_),
                 "best_valid_loss": float(self.best_valid_loss_), "diverged": int(self.diverged_),
                 "jitter": float(self.chart_.jitter)}
        if getattr(self, "feature_names_in_", None) is not None:
            attrs["feature_names"] = json.dumps([str(c) for c in self.feature_names_in_])
        xr.Dataset(data, attrs=attrs).to_netcdf(Path(path), engine=_engine())

    @classmethod
    def load(cls, path) -> "MVNNetwork":
        """Read a network written by :meth:`save`; every weight array is checked before use.

        Parameters
        ----------
        path : str or path-like
            A NetCDF file written by ``MVNNetwork.save``.

        Returns
        -------
        model : MVNNetwork
            The fitted estimator, predicting as the saved one did.

        Raises
        ------
        DataError
            When the file cannot be read as NetCDF or is not a valid MVNNetwork file.
        """
        import xarray as xr

        from distviz.families.mvn_cholesky import MVNCholesky
        from distviz.modelfile import engine as _engine

        name = Path(path).name
        try:
            with xr.open_dataset(Path(path), engine=_engine()) as ds0:
                ds = ds0.load()
        except (OSError, ValueError):
            raise DataError(f"Cannot read {name} as a NetCDF file; pass a file written by MVNNetwork.save().") from None
        bad = DataError(f"{name} is not a valid distviz MVNNetwork file; pass a file written by MVNNetwork.save().")
        if ds.attrs.get("model_format") != FORMAT:
            raise bad
        try:
            params = json.loads(ds.attrs["model_params"])
            hidden = tuple(json.loads(ds.attrs["hidden_layer_sizes_fitted"]))
            d, P = int(ds.attrs["n_features_in"]), int(ds.attrs["n_outputs"])
            if isinstance(params.get("hidden_layer_sizes"), list):
                params["hidden_layer_sizes"] = tuple(params["hidden_layer_sizes"])
            params["hidden_grid"] = tuple(tuple(h) for h in params.get("hidden_grid", AUTHORS_GRID))
            est = cls(**params)
            est._check_params()
            hidden = _layers(hidden) if hidden else ()
            chart = MVNCholesky(P, float(ds.attrs["jitter"]))
            sizes = (d,) + hidden + (chart.dim,)
            weights = []
            for k in range(len(sizes) - 1):
                W = np.asarray(ds[f"weight_{k}"].values, dtype=np.float64)
                b = np.asarray(ds[f"bias_{k}"].values, dtype=np.float64)
                if W.shape != (sizes[k], sizes[k + 1]) or b.shape != (sizes[k + 1],):
                    raise bad
                weights += [W, b]
            if f"weight_{len(sizes) - 1}" in ds:
                raise bad
            loc = np.asarray(ds["x_loc"].values, dtype=np.float64)
            scale = np.asarray(ds["x_scale"].values, dtype=np.float64)
            if loc.shape != (d,) or scale.shape != (d,) or not (scale > 0).all():
                raise bad
            if not all(np.isfinite(a).all() for a in weights + [loc, scale]):
                raise bad
            est.params_ = weights
            est.chart_ = chart
            est.x_loc_, est.x_scale_ = loc, scale
            est.hidden_layer_sizes_ = hidden
            est.n_features_in_, est.n_outputs_ = d, P
            if "feature_names" in ds.attrs:
                names = json.loads(ds.attrs["feature_names"])
                if not (isinstance(names, list) and len(names) == d and all(isinstance(c, str) for c in names)):
                    raise bad
                est.feature_names_in_ = np.asarray(names, dtype=object)
            est.best_epoch_, est.n_epochs_ = int(ds.attrs["best_epoch"]), int(ds.attrs["n_epochs"])
            est.best_valid_loss_ = float(ds.attrs["best_valid_loss"])
            est.diverged_ = bool(int(ds.attrs["diverged"]))
            est.grid_valid_loss_ = dict(json.loads(ds.attrs["grid_valid_loss"]))
            est.train_loss_ = np.asarray(ds["train_loss"].values, dtype=np.float64)
            est.valid_loss_ = np.asarray(ds["valid_loss"].values, dtype=np.float64)
        except DataError:
            raise
        except (KeyError, TypeError, ValueError, ConfigError):
            raise bad from None
        return est
