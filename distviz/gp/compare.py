"""Plot-ready 1-D comparison of sparse-GP posteriors fitted by different objectives (posterior-regression page)."""

from __future__ import annotations

import numpy as np
import xarray as xr
from scipy import special

from distviz.errors import ConfigError, DataError
from distviz.gp.model import SparseGP, select_beta
from distviz.gp.objectives import OBJECTIVES

LABELS = {"elbo": "ELBO", "beta_elbo": "beta-ELBO", "dlm_log": "DLM (log loss)", "dlm_square": "DLM (square loss)",
          "fitc": "FITC"}


def _bands(model: SparseGP, x_grid: np.ndarray, level: float):
    """Predictive mean and central `level` band of y on the grid (probit, logistic: band of P(y=1|f))."""
    mu, v = model.predict_latent(x_grid)
    mean = model.predict_mean(x_grid)
    z = special.ndtri(0.5 + level / 2)
    if model.likelihood == "gaussian":
        sd = np.sqrt(v + model.hyperparameters_["noise"])
        lo, hi = mu - z * sd, mu + z * sd
    elif model.likelihood in ("probit", "logistic"):
        link = special.ndtr if model.likelihood == "probit" else special.expit
        lo, hi = link(mu - z * np.sqrt(v)), link(mu + z * np.sqrt(v))
    else:
        top = int(np.ceil(np.max(mean) + 10 * np.sqrt(np.max(mean) + 1) + 10))
        pmf = model.predict_density(x_grid, np.arange(top + 1))
        cdf = np.cumsum(pmf, axis=1)
        lo = np.argmax(cdf >= (1 - level) / 2, axis=1).astype(float)
        hi = np.argmax(cdf >= 1 - (1 - level) / 2, axis=1).astype(float)
    return mean, lo, hi, mu - z * np.sqrt(v), mu + z * np.sqrt(v)


def compare_1d(X, y, x_grid, objectives=("elbo", "dlm_log", "dlm_square"), likelihood="gaussian",
               beta=1.0, level=0.9, n_inducing=20, max_iter=200, fixed_hyperparameters=("dlm_square",),
               val_fraction=0.25, random_state=0, progress=None) -> xr.Dataset:
    """Fit one SparseGP per objective on 1-D data and return its predictive mean and `level` band on x_grid.

    objectives: any of "elbo" (beta = 1), "beta_elbo" (beta chosen on a validation split over
    [n, n/2, ..., 0.01], paper Section 6.1), "dlm_log", "dlm_square" (both at `beta`, or selected
    when beta="select"), "fitc" (Gaussian likelihood; FITC has no beta). Returns an xarray Dataset with dims
    (objective, x) and variables
    mean, lower, upper (bands of y; probit, logistic: of P(y=1|f)), latent_lower, latent_upper (bands of f),
    and per-objective beta and train log-loss; attrs carry level and likelihood.
    Objectives named in `fixed_hyperparameters` reuse the ELBO fit's kernel, noise and inducing
    inputs (Section 6.1's fixed variant). That is the default for square-loss DLM: it learns only the
    mean, its q(u) covariance stays at the KL optimum S = K_uu (prior-wide bands, which is the point
    of showing it), and with joint hyperparameters its KL term m^T K_uu^-1 m drives the kernel
    variance up without bound. beta="select" picks beta on a validation split for every objective
    except "elbo" and "fitc" (slow: one fit per grid value).

    The bands are central `level` intervals: ``mu +- z sqrt(v + noise)`` for the Gaussian
    likelihood, ``Phi(mu +- z sqrt(v))`` for probit (``sigma(mu +- z sqrt(v))`` for logistic), and the predictive
    pmf's ``(1 - level) / 2`` and ``1 - (1 - level) / 2`` quantiles for Poisson, with ``z = Phi^-1(1/2 + level/2)`` and
    ``N(mu, v)`` the latent posterior at the grid point; the latent band is ``mu +- z sqrt(v)``.

    Parameters
    ----------
    X : array-like of shape (n,) or (n, 1)
        The one input feature.
    y : array-like of shape (n,)
        Targets, valid for `likelihood`.
    x_grid : array-like
        Points at which to evaluate the posteriors (flattened; finite).
    objectives : sequence of str, default=("elbo", "dlm_log", "dlm_square")
        Objectives to fit, in order (see above).
    likelihood : {"gaussian", "probit", "logistic", "poisson"}, default="gaussian"
        The likelihood of every model.
    beta : float or "select", default=1.0
        Beta of the DLM objectives, or ``"select"`` to choose it by `select_beta`.
    level : float, default=0.9
        Probability content of the bands.
    n_inducing : int, default=20
        Inducing points per model.
    max_iter : int, default=200
        Optimiser iterations per fit.
    fixed_hyperparameters : sequence of str, default=("dlm_square",)
        Objectives that reuse the ELBO fit's hyperparameters (fitted once more for this purpose).
    val_fraction : float, default=0.25
        Share of the rows (at least one) held out when beta is selected; the split is a random
        permutation drawn from `random_state`.
    random_state : int, default=0
        Seed of the split and of every model.
    progress : callable, optional
        Called as ``progress(done, total)`` after each objective.

    Returns
    -------
    xarray.Dataset
        Dims ``(objective, x)``: ``mean``, ``lower``, ``upper``, ``latent_lower``,
        ``latent_upper``; per objective: ``beta``, ``train_log_loss`` (minus the mean log predictive
        density on all of ``X, y``), ``fixed_hyperparameters`` (bool) and the coordinate ``label``
        (a display name); attrs ``level``, ``likelihood``, ``n_inducing``.

    Raises
    ------
    distviz.errors.DataError
        If X has more than one feature or `x_grid` is not finite.
    distviz.errors.ConfigError
        If an objective is unknown.

    Examples
    --------
    >>> import numpy as np
    >>> from distviz.gp import compare_1d
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-3, 3, 40)
    >>> y = np.sin(X) + 0.1 * rng.standard_normal(40)
    >>> ds = compare_1d(X, y, np.linspace(-3, 3, 7), objectives=("elbo", "dlm_log"), n_inducing=5, max_iter=30)
    >>> dict(ds.sizes), ds["label"].values.tolist()
    ({'objective': 2, 'x': 7}, ['ELBO', 'DLM (log loss)'])
    >>> bool((ds["lower"] <= ds["upper"]).all())
    True
    """
    X = np.asarray(X, dtype=float)
    if X.ndim == 2 and X.shape[1] == 1:
        X = X[:, 0]
    if X.ndim != 1:
        raise DataError(f"compare_1d needs one input feature; got X of shape {np.shape(X)}.")
    xg = np.asarray(x_grid, dtype=float).ravel()
    if not np.all(np.isfinite(xg)):
        raise DataError("x_grid contains NaN or infinite values.")
    known = set(OBJECTIVES) | {"beta_elbo"}
    bad = [o for o in objectives if o not in known]
    if bad:
        raise ConfigError(f"Unknown objective(s) {bad}; choose from {sorted(known)}.")
    rng = np.random.default_rng(random_state)
    n = X.shape[0]
    perm = rng.permutation(n)
    n_val = max(1, int(round(val_fraction * n)))
    tr, va = perm[n_val:], perm[:n_val]
    out: dict[str, list] = {k: [] for k in ("mean", "lower", "upper", "latent_lower", "latent_upper")}
    betas, train_ll = [], []
    elbo_hp = None
    if any(o in fixed_hyperparameters for o in objectives):
        elbo_hp = SparseGP(likelihood=likelihood, n_inducing=n_inducing, max_iter=max_iter,
                           random_state=random_state).fit(X[:, None], y).hyperparameters_
    for k, o in enumerate(objectives):
        extra = dict(fit_hyperparameters=False, **(elbo_hp or {})) if o in fixed_hyperparameters else {}
        base = SparseGP(likelihood=likelihood, objective="elbo" if o == "beta_elbo" else o, beta=float(beta)
                        if beta != "select" and o != "fitc" else 1.0, n_inducing=n_inducing, max_iter=max_iter,
                        random_state=random_state, **extra)
        if o == "beta_elbo" or (beta == "select" and o not in ("elbo", "fitc")):
            model, b, _ = select_beta(base, X[tr, None], y[tr], X[va, None], y[va], refit=True)
        else:
            model, b = base.fit(X[:, None], y), base.beta
        mean, lo, hi, llo, lhi = _bands(model, xg[:, None], level)
        for key, val in zip(out, (mean, lo, hi, llo, lhi)):
            out[key].append(val)
        betas.append(float(b))
        train_ll.append(-model.score(X[:, None], y))  # log-loss = minus the mean log predictive
        if progress is not None:
            progress(k + 1, len(objectives))
    ds = xr.Dataset({k: (("objective", "x"), np.array(v)) for k, v in out.items()},
                    coords={"objective": list(objectives), "x": xg,
                            "label": ("objective", [LABELS[o] for o in objectives])})
    ds["beta"] = ("objective", np.array(betas))
    ds["train_log_loss"] = ("objective", np.array(train_ll))
    ds["fixed_hyperparameters"] = ("objective", np.array([o in fixed_hyperparameters for o in objectives]))
    ds.attrs.update(level=level, likelihood=likelihood, n_inducing=n_inducing)
    return ds
