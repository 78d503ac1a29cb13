"""Studies of direct loss minimisation for sparse GPs (Wei, Sheth & Khardon): gradient bias, DLM vs ELBO."""

from __future__ import annotations

import functools
import time
from typing import Any

import numpy as np

from distviz._optional import missing
from distviz.errors import ConfigError
from distviz.experiments import registry
from distviz.experiments.parallel import is_distributed, map_units

# --------------------------------------------------------------------------------------- gradient bias


def gradient_bias(y=5, mu=0.0, sigma=1.0, sample_sizes=(1, 10, 100, 1000), replicates=2000, seed=0,
                  forms=("reparam", "price")) -> dict:
    """Bias / spread of bMC and uPS estimates of grad_{mu, sigma} log E_{N(f|mu, sigma^2)} Poisson(y | e^f).

    Truth by 200-node Gauss-Hermite quadrature. Each estimator is drawn `replicates` times per L.
    """
    from distviz.gp import estimators as E
    from distviz.gp.likelihoods import make_likelihood

    if sigma <= 0 or y < 0 or y != int(y) or replicates < 2:
        raise ConfigError("Need sigma > 0, a non-negative integer y and at least 2 replicates.")
    lik = make_likelihood("poisson")
    par = np.zeros(0)
    rng = np.random.default_rng(seed)
    v = sigma * sigma
    q = E.quadrature(lik, float(y), mu, v, par)
    truth = np.array([q.d_mu[0], 2.0 * sigma * q.d_v[0]])
    rows: dict[str, Any] = {}
    plot: dict[str, Any] = {"L": list(sample_sizes)}
    R = int(replicates)
    yy, mm, vv = np.full(R, float(y)), np.full(R, float(mu)), np.full(R, v)
    methods = [(f"bMC-{f}", f) for f in forms] + [("uPS", None)]
    for name, form in methods:
        series: dict[str, list[float]] = {k: [] for k in ("bias_mu", "bias_sigma", "sd_mu", "sd_sigma", "se_mu",
                                                           "se_sigma", "seconds")}
        for L in sample_sizes:
            t0 = time.perf_counter()
            if form is None:
                st = E.SamplerStats()
                est = E.ups(lik, yy, mm, vv, par, int(L), rng, stats=st, value=False)
            else:
                est = E.bmc(lik, yy, mm, vv, par, int(L), rng, form=form)
            sec = time.perf_counter() - t0
            g = np.stack([est.d_mu, 2.0 * sigma * est.d_v], axis=1)
            bias = g.mean(axis=0) - truth
            sd = g.std(axis=0, ddof=1)
            se = sd / np.sqrt(R)
            row = {"L": int(L), "bias_mu": bias[0], "bias_sigma": bias[1], "sd_mu": sd[0], "sd_sigma": sd[1],
                   "z_mu": bias[0] / se[0], "z_sigma": bias[1] / se[1],
                   "rmse_mu": float(np.sqrt(bias[0] ** 2 + sd[0] ** 2)),
                   "rmse_sigma": float(np.sqrt(bias[1] ** 2 + sd[1] ** 2)), "seconds": sec}
            if form is None:
                row["accept_rate_paper"] = st.accepted_paper / max(st.proposals, 1)
                row["fallback_share"] = st.fallback / (R * L)
            rows[f"{name} L={L}"] = row
            for k, val in zip(series, (bias[0], bias[1], sd[0], sd[1], se[0], se[1], sec)):
                series[k].append(float(val))
        plot[name] = series
    return {**rows, "truth": {"grad_mu": truth[0], "grad_sigma": truth[1], "log_E": q.value[0],
                              "y": y, "mu": mu, "sigma": sigma, "replicates": R},
            "plot": plot}


def _bias_table(res: dict) -> str:
    """Plain-text table of the gradient-bias study."""
    t = res["truth"]
    out = [f"q(f) = N({t['mu']}, {t['sigma']}^2), y = {t['y']}, {t['replicates']} replicates; quadrature: "
           f"d/dmu = {t['grad_mu']:.5f}, d/dsigma = {t['grad_sigma']:.5f}",
           f"{'estimator':22s} {'bias_mu':>10s} {'sd_mu':>9s} {'z_mu':>7s} {'bias_sig':>10s} {'sd_sig':>9s} "
           f"{'z_sig':>7s} {'sec':>6s}"]
    for k, r in res.items():
        if k in ("truth", "plot"):
            continue
        out.append(f"{k:22s} {r['bias_mu']:10.4f} {r['sd_mu']:9.4f} {r['z_mu']:7.1f} {r['bias_sigma']:10.4f} "
                   f"{r['sd_sigma']:9.4f} {r['z_sigma']:7.1f} {r['seconds']:6.2f}")
    out.append("z = bias / standard error of the mean over replicates (|z| < 3: no detectable bias).")
    return "\n".join(out)


@registry.study("dlm-gradient-bias", options=[
    registry.Option("y", int, 5, "observed count"),
    registry.Option("mu", float, 0.0, "mean of q(f)"),
    registry.Option("sigma", float, 1.0, "standard deviation of q(f)"),
    registry.Option("replicates", int, 2000, "independent estimates per sample size"),
    registry.Option("seed", int, 0, "random seed"),
], format_table=_bias_table)
def dlm_gradient_bias(y=5, mu=0.0, sigma=1.0, replicates=2000, seed=0) -> dict:
    """Bias and spread of bMC (eq. 7-8) vs uPS (Prop. 1) gradients of log E_q p(y|f), Poisson, L = 1..1000."""
    return gradient_bias(y=y, mu=mu, sigma=sigma, replicates=replicates, seed=seed)


# --------------------------------------------------------------------------------------- DLM vs ELBO


def load_counts(n_train=1000, n_test=2000, seed=0):
    """RAND health-insurance experiment counts (statsmodels' bundled `randhie`): doctor visits on 9 covariates."""
    try:
        from statsmodels.datasets import randhie
    except ModuleNotFoundError:
        raise missing("statsmodels", "The count data set (randhie)") from None
    df = randhie.load_pandas().data
    y = df["mdvis"].to_numpy(float)
    X = df.drop(columns=["mdvis"]).to_numpy(float)
    rng = np.random.default_rng(seed)
    idx = rng.permutation(len(y))
    if n_train + n_test > len(y):
        raise ConfigError(f"randhie has {len(y)} rows; ask for at most that many train + test rows.")
    tr, te = idx[:n_train], idx[n_train:n_train + n_test]
    return X[tr], y[tr], X[te], y[te]


def _metrics(model, X, y, y_shift, y_scale):
    """Test log-loss and squared error in the original units of y."""
    ll = -model.score(X, y) + np.log(y_scale)  # score is the mean log predictive; the log-loss is its negative
    target = model.lik_.target_mean(model.lik_.validate(y))
    mse = float(np.mean((model.predict_mean(X) - target) ** 2)) * y_scale ** 2
    return ll, mse


def _likelihood_for(data: str, likelihood: str | None) -> str:
    """The likelihood of `data`: Poisson for randhie, probit or logistic (default) for Breiman's sets, else Gaussian."""
    from distviz.data.breiman import BREIMAN

    allowed = {"randhie": ("poisson",)}.get(data, ("logistic", "probit") if data in BREIMAN else ("gaussian",))
    if likelihood in (None, ""):
        return allowed[0]
    if likelihood not in allowed:
        raise ConfigError(f"data '{data}' takes likelihood {' or '.join(allowed)}; got '{likelihood}'.")
    return likelihood


def dlm_vs_elbo(data="concrete", split=0, n_inducing=20, max_iter=100, max_train=400, grid_factor=4.0,
                val_fraction=0.2, seed=0, gradient="exact", likelihood=None, n_test=1000, progress=None) -> dict:
    """Test log-loss and squared error of ELBO, beta-ELBO, DLM-log and DLM-square (joint and fixed hyperparameters).

    Regression on a UCI split (y standardised on the training part; metrics in original units), with
    FITC's collapsed objective as a further baseline (the paper's regression experiments, Appendix D);
    Poisson count regression on statsmodels' randhie (data="randhie"); or binary classification on
    Breiman's twonorm / ringnorm (``distviz.data.breiman``; `max_train` training and `n_test` test rows
    drawn with `seed`) with the logistic (default) or probit likelihood, where the squared error is
    the Brier score of P(y = 1). beta is chosen on a validation split over beta_grid(n,
    factor=grid_factor) (factor 2 = the paper's grid), by log-loss for ELBO/DLM-log and squared
    error for DLM-square; FITC has no beta. Fixed variants reuse the ELBO fit's hyperparameters and
    inducing inputs (Section 6.1).
    """
    from distviz.data.breiman import BREIMAN, make_breiman
    from distviz.gp.model import SparseGP, beta_grid, select_beta

    t_start = time.perf_counter()
    likelihood = _likelihood_for(data, likelihood)
    if data == "randhie":
        Xtr, ytr, Xte, yte = load_counts(n_train=max_train, seed=seed)
        shift, scale = 0.0, 1.0
    elif data in BREIMAN:
        X, y = make_breiman(data, int(max_train) + int(n_test), random_state=seed)
        Xtr, ytr, Xte, yte = X[:max_train], y[:max_train], X[max_train:], y[max_train:]
        shift, scale = 0.0, 1.0
    else:
        from distviz.data.uci import load_uci
        s = load_uci(data, split)
        Xtr, ytr, Xte, yte = s.X_train, s.y_train, s.X_test, s.y_test
        if max_train and Xtr.shape[0] > max_train:
            keep = np.random.default_rng(seed).choice(Xtr.shape[0], max_train, replace=False)
            Xtr, ytr = Xtr[keep], ytr[keep]
        shift, scale = float(ytr.mean()), float(ytr.std()) or 1.0
        ytr, yte = (ytr - shift) / scale, (yte - shift) / scale
    rng = np.random.default_rng(seed)
    perm = rng.permutation(Xtr.shape[0])
    n_val = max(1, int(round(val_fraction * Xtr.shape[0])))
    va, tr = perm[:n_val], perm[n_val:]
    Xa, ya, Xv, yv = Xtr[tr], ytr[tr], Xtr[va], ytr[va]
    grid = beta_grid(len(tr), factor=grid_factor)
    common = dict(likelihood=likelihood, n_inducing=n_inducing, max_iter=max_iter, random_state=seed)
    dlm_kw = (dict(gradient=gradient, n_samples=10, max_iter=max(300, 3 * max_iter), learning_rate=0.03)
              if gradient != "exact" else {})
    res = {}

    def record(name, model, beta, t0):
        ll, mse = _metrics(model, Xte, yte, shift, scale)
        res[name] = {"test_log_loss": ll, "test_sq_error": mse, "beta": None if beta is None else float(beta),
                     "seconds": time.perf_counter() - t0}

    t0 = time.perf_counter()
    elbo = SparseGP(objective="elbo", beta=1.0, **common).fit(Xa, ya)
    record("ELBO", elbo, 1.0, t0)
    if likelihood == "gaussian":   # FITC's collapsed objective: the paper's other regression baseline (no beta)
        t0 = time.perf_counter()
        record("FITC", SparseGP(objective="fitc", **common).fit(Xa, ya), None, t0)
    hp = elbo.hyperparameters_
    fixed = dict(fit_hyperparameters=False, **hp)
    specs = [("beta-ELBO", dict(objective="elbo")),
             ("DLM-log (joint)", dict(objective="dlm_log", **dlm_kw)),
             ("DLM-log (fixed)", dict(objective="dlm_log", **dlm_kw, **fixed)),
             ("DLM-square (joint)", dict(objective="dlm_square")),
             ("DLM-square (fixed)", dict(objective="dlm_square", **fixed))]
    for k, (name, kw) in enumerate(specs):
        t0 = time.perf_counter()
        base = SparseGP(**{**common, **kw})
        model, best, _ = select_beta(base, Xa, ya, Xv, yv, grid=grid, refit=False)
        record(name, model, best, t0)
        if progress is not None:
            progress(k + 1, len(specs))
    res["info"] = {"data": data, "likelihood": likelihood, "n_train": int(len(tr)), "n_val": int(n_val),
                   "n_test": int(Xte.shape[0]), "n_inducing": n_inducing, "beta_grid": grid,
                   "gradient": gradient, "seconds": time.perf_counter() - t_start}
    return res


def _one_split(sp, *, kw: dict) -> dict:
    """:func:`dlm_vs_elbo` on split `sp` (randhie, twonorm, ringnorm: seed `sp`) with the other settings `kw`."""
    from distviz.data.breiman import BREIMAN

    drawn = kw.get("data") == "randhie" or kw.get("data") in BREIMAN
    return dlm_vs_elbo(**(dict(kw, seed=int(sp)) if drawn else dict(kw, split=int(sp))))


def dlm_vs_elbo_splits(splits=(0,), **kw) -> dict:
    """Run :func:`dlm_vs_elbo` on several UCI splits (randhie, twonorm, ringnorm: seeds); mean and standard error."""
    if is_distributed():  # a progress callback lives in this process only
        kw = {k: v for k, v in kw.items() if k != "progress"}
    runs = map_units(functools.partial(_one_split, kw=kw), splits)  # one unit per split: serial or Dask tasks
    if len(runs) == 1:
        return runs[0]
    out: dict[str, Any] = {}
    for k in runs[0]:
        if k == "info":
            continue
        row: dict[str, Any] = {}
        for metric in ("test_log_loss", "test_sq_error"):
            vals = np.array([r[k][metric] for r in runs])
            row[metric] = float(vals.mean())
            row[metric + "_se"] = float(vals.std(ddof=1) / np.sqrt(len(vals)))
        betas = [r[k]["beta"] for r in runs]
        row["beta"] = None if None in betas else float(np.median(betas))
        row["seconds"] = float(np.sum([r[k]["seconds"] for r in runs]))
        out[k] = row
    out["info"] = {**runs[0]["info"], "splits": list(map(int, splits)),
                   "seconds": float(sum(r["info"]["seconds"] for r in runs))}
    return out


def _vs_table(res: dict) -> str:
    """Plain-text table of the DLM-vs-elbo study (mean +- standard error over splits when several)."""
    info = res["info"]
    multi = "splits" in info
    head = f"{info['data']} ({info['likelihood']}): n_train={info['n_train']} n_val={info['n_val']} " \
           f"n_test={info['n_test']} M={info['n_inducing']}, beta grid {len(info['beta_grid'])} values"
    if multi:
        head += f", splits {info['splits']} (mean +- s.e.; beta = median)"
    out = [head, f"{'method':20s} {'test log-loss':>18s} {'test sq.error':>18s} {'beta':>9s} {'sec':>6s}"]
    for k, r in res.items():
        if k == "info":
            continue
        if multi:
            ll = f"{r['test_log_loss']:.4f}+-{r['test_log_loss_se']:.4f}"
            se = f"{r['test_sq_error']:.3f}+-{r['test_sq_error_se']:.3f}"
        else:
            ll, se = f"{r['test_log_loss']:.4f}", f"{r['test_sq_error']:.4f}"
        beta = "-" if r["beta"] is None else f"{r['beta']:.3g}"
        out.append(f"{k:20s} {ll:>18s} {se:>18s} {beta:>9s} {r['seconds']:6.1f}")
    if "FITC" in res:
        out.append("FITC: Snelson & Ghahramani's collapsed objective (no beta; the paper's regression baseline).")
    if info["likelihood"] in ("probit", "logistic"):
        out.append("Binary labels: the squared error is the Brier score of P(y = 1).")
    out.append(f"total {info['seconds']:.1f} s")
    return "\n".join(out)


@registry.study("dlm-vs-elbo", options=[
    registry.Option("data", str, "concrete", "UCI set (boston, concrete, energy, wine, yacht), 'randhie' (counts) "
                    "or 'twonorm' / 'ringnorm' (Breiman's binary problems, simulated)"),
    registry.Option("splits", str, "0", "UCI split(s), e.g. 0 or 0-4 (randhie, twonorm, ringnorm: seeds of the row draws)"),
    registry.Option("likelihood", str, "", "'' for the data's own (gaussian, poisson; logistic for twonorm/ringnorm) "
                    "or probit / logistic for twonorm and ringnorm"),
    registry.Option("n-inducing", int, 20, "number of inducing points M"),
    registry.Option("max-iter", int, 100, "L-BFGS iterations per fit"),
    registry.Option("max-train", int, 400, "training rows used (subsampled; randhie: rows drawn)"),
    registry.Option("grid-factor", float, 4.0, "beta grid ratio (2 = the paper's [n, n/2, ..., 0.01])"),
    registry.Option("gradient", str, "exact", "log-loss DLM gradient: exact, bmc or ups"),
], format_table=_vs_table)
def dlm_vs_elbo_study(data="concrete", splits="0", likelihood="", n_inducing=20, max_iter=100, max_train=400,
                      grid_factor=4.0, gradient="exact") -> dict:
    """Test log-loss and squared error of ELBO, beta-ELBO, DLM-log, DLM-square (and FITC for regression) on UCI
    regression, randhie counts or Breiman's twonorm / ringnorm classification."""
    from distviz.data.uci import parse_splits

    if gradient not in ("exact", "bmc", "ups"):
        raise ConfigError(f"Unknown gradient '{gradient}'; choose exact, bmc or ups.")
    _likelihood_for(data, likelihood)   # a wrong combination fails before any fit
    return dlm_vs_elbo_splits(parse_splits(splits), data=data, likelihood=likelihood or None, n_inducing=n_inducing,
                              max_iter=max_iter, max_train=max_train, grid_factor=grid_factor, gradient=gradient)
