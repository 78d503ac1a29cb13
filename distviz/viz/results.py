"""From fitted models and their traces to the Lab / Evolution figures (no Streamlit here).

`model` is a fitted DistributionalBoosting (`law_lab_figures`), WGBoost (`wg_lab_figures`), NGBoost or sparse GP
(the Lab's algorithm registry, distviz.ui.algorithms, picks the function); `data` has X, y, x_label, y_label and an
optional synthetic truth.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from . import fits as vf
from .palette import OKABE_ITO

__all__ = ["input_grid", "law_lab_figures", "wg_lab_figures", "ngboost_lab_figures", "gp_lab_figures", "trace_rounds",
           "law_round_figures", "wg_round_figure", "geometry_paths",
           "nll_from_trace", "wg_target_band", "mvn_figures", "ngboost_best_round", "ngboost_nll_figure",
           "ngboost_params_by_round", "ngboost_round_figures", "gp_iteration_figures", "gp_objective_figure",
           "wg_class_prob_figure"]


def input_grid(X, n: int = 200) -> np.ndarray:
    """Rows on an even grid of the first feature over its range (other features at their medians)."""
    X = np.asarray(X, dtype=float)
    G = np.repeat(np.median(X, axis=0, keepdims=True), n, axis=0)
    G[:, 0] = np.linspace(X[:, 0].min(), X[:, 0].max(), n)
    return G


def _names(trace, attr, fallback):
    try:
        return list(json.loads(trace.attrs[attr]))
    except (KeyError, TypeError, ValueError):
        return list(fallback)


def _family_figs(family, x, y, grid_x, eta, *, truth_eta=None, x_label, y_label, algo, title_suffix=""):
    """Regression / class-probability figures for one family at natural parameters `eta` on `grid_x`."""
    name = str(family.name).lower()
    if name == "categorical":
        probs = family.mean_and_variance(eta)[0]
        tp = family.mean_and_variance(truth_eta)[0] if truth_eta is not None else None
        return [vf.class_prob_figure(grid_x, probs, truth=tp, x_label=x_label,
                                     title=f"fitted class probabilities{title_suffix}")]
    m, lo, hi = vf.predictive_band(family, eta)
    tm = tlo = thi = None
    if truth_eta is not None:
        tm, tlo, thi = vf.predictive_band(family, truth_eta, seed=1)
    if name == "bernoulli":
        lo = hi = tlo = thi = None
    if getattr(family, "y_dim", 1) > 1:
        figs = []
        yy = np.asarray(y)
        for j in range(m.shape[1]):
            figs.append(vf.regression_figure(
                x, yy[:, j], grid_x, m[:, j], lo[:, j], hi[:, j],
                truth=None if tm is None else tm[:, j], truth_lo=None if tlo is None else tlo[:, j],
                truth_hi=None if thi is None else thi[:, j], x_label=x_label, y_label=f"output y{j + 1}", algo=algo,
                title=f"output y{j + 1}: mean and 90% band{title_suffix}"))
        return figs
    ylab = "P(y = 1 | x)" if name == "bernoulli" else y_label
    return [vf.regression_figure(x, y, grid_x, m, lo, hi, truth=tm, truth_lo=tlo, truth_hi=thi, x_label=x_label,
                                 y_label=ylab, algo=algo,
                                 title=f"data, fitted mean{'' if name == 'bernoulli' else ' and 90% band'}{title_suffix}")]


def nll_from_trace(trace, *, current=None, algo="mgd", title="NLL per round"):
    """NLL (train / validation) and entropy curves of a boosting trace."""
    rounds = trace["round"].values
    ent = trace["entropy"].values if "entropy" in trace else None
    if ent is not None and not np.isfinite(ent).any():
        ent = None
    extra = None
    if "mmd2" in trace and np.isfinite(trace["mmd2"].values).any():
        extra = {"MMD² to target (×100)": (rounds, 100 * trace["mmd2"].values, OKABE_ITO["green"])}
    tr = trace["train_nll"].values
    va = trace["valid_nll"].values if "valid_nll" in trace else None
    return vf.nll_figure(rounds, tr, va, ent, current=current, algo=algo, title=title, extra=extra)


def wg_target_band(data, grid_x):
    """(x, lo, hi) of the true 95% band of y | x for synthetic Normal data, else None."""
    truth = getattr(data, "truth", None)
    if truth is None or getattr(truth, "family", "") != "normal":
        return None
    fam = truth.get_family()
    G = np.zeros((len(grid_x), truth.X.shape[1]))
    G[:, 0] = grid_x
    m, v = fam.mean_and_variance(truth.truth_eta(G))
    s = np.sqrt(v)
    return grid_x, m - 1.96 * s, m + 1.96 * s


def wg_lab_figures(model, data, algo: str) -> list:
    """The Lab's figures of a WGBoost fit (`algo`: the Lab's key, e.g. 'wg_ska'): the particles per input (class
    probabilities of every particle for the categorical target), the predictive density and the NLL per round."""
    X = np.asarray(data.X, dtype=float)
    gx = input_grid(X)[:, 0]
    figs = []
    Gp = input_grid(X, 60)  # particles above 60 inputs stay readable
    P = model.predict_particles(Gp)  # (n, N, d)
    if getattr(model.target_, "name", "") == "categorical":
        figs.append(wg_class_prob_figure(model, data, Gp[:, 0], P, title="class probabilities of every particle"))
        figs.append(nll_from_trace(model.trace_, algo=algo[3:], title="negative log predictive per round"))
        return figs
    band = wg_target_band(data, gx)
    values, y_label, sub = wg_particle_axis(model, P, data.y_label)
    figs.append(vf.particles_figure(Gp[:, 0], values, data_x=X[:, 0], data_y=np.asarray(data.y).reshape(len(X), -1)[:, 0],
                                    band=band, x_label=data.x_label, y_label=y_label,
                                    algo=algo[3:], title=f"WGBoost particles per input<br><sup>{sub}</sup>",
                                    band_label="true 95% band of y | x"))
    tname = getattr(model.target_, "name", "")
    if tname in ("normal", "poisson"):
        yv = np.asarray(data.y, dtype=float).reshape(-1)
        lo, hi = np.percentile(yv, [0.5, 99.5])
        pad = 0.15 * (hi - lo + 1e-9)
        yg = np.linspace(lo - pad, hi + pad, 120) if tname == "normal" else np.arange(max(0, lo - pad), hi + pad + 1)
        Gs = input_grid(X, 90)
        dens = model.predict_density(Gs, yg)
        figs.append(vf.density_heatmap_figure(Gs[:, 0], yg, dens, data_x=X[:, 0], data_y=yv, x_label=data.x_label,
                                              y_label=data.y_label, algo=algo[3:],
                                              title="predictive density p(y | x)<br><sup>Bayes average over the "
                                                    "particles</sup>"))
    figs.append(nll_from_trace(model.trace_, algo=algo[3:], title="negative log predictive per round"))
    return figs


def ngboost_lab_figures(model, data, algo: str) -> list:
    """The Lab's figures of an NGBoost fit: the fit at the best validation round and the NLL per round."""
    return _ngboost_figures(model, data, input_grid(np.asarray(data.X, dtype=float)), algo)


def gp_lab_figures(model, data, algo: str) -> list:
    """The Lab's figures of a sparse-GP fit: predictive mean and band, and the objective per optimiser iteration."""
    return _gp_figures(model, data, input_grid(np.asarray(data.X, dtype=float)), algo, objective=True)


def law_lab_figures(model, data, algo: str) -> list:
    """The Lab's figures of a boosting law's fit (DistributionalBoosting): the fitted distribution over x (first
    feature; means, variances and correlation for the multivariate Normal) and the NLL and entropy per round."""
    X = np.asarray(data.X, dtype=float)
    G = input_grid(X)
    gx = G[:, 0]
    figs: list = []
    truth = getattr(data, "truth", None)
    fam: Any = model.family_ if hasattr(model, "family_") else None
    eta = np.asarray(model.predict_natural(G))
    teta = truth.truth_eta(G) if truth is not None else None
    figs += _family_figs(fam, X[:, 0], data.y, gx, eta, truth_eta=teta, x_label=data.x_label, y_label=data.y_label,
                         algo=algo)
    if str(getattr(fam, "name", "")).lower() == "mvn":
        m, v = fam.mean_and_variance(eta)
        tm, tv = fam.mean_and_variance(teta) if teta is not None else (None, None)
        figs += mvn_figures(X[:, 0], data.y, gx, m, v, truth_mean=tm, truth_cov=tv, x_label=data.x_label, algo=algo)
    if hasattr(model, "trace_"):
        figs.append(nll_from_trace(model.trace_, algo=algo, current=getattr(model, "best_iteration_", None),
                                   title="NLL and entropy per round<br><sup>ring: the round used (best validation)</sup>"))
    return figs


def ngboost_best_round(model) -> int | None:
    """The validation round NGBoost predicts with (None when it was fitted without validation data)."""
    va = np.asarray(getattr(model, "valid_loss_", []), dtype=float)
    if va.size == 0 or not np.isfinite(va).any():
        return None
    return int(getattr(model, "best_iteration_", int(np.nanargmin(va))))


def gaussian_arrays(dist):
    """(mean (n, P), sd (n, P), cov (n, P, P)) of a predicted Normal (P = 1) or multivariate Normal law."""
    m, sd = np.asarray(dist.mean(), dtype=float), np.asarray(dist.std(), dtype=float)
    if m.ndim == 1:
        return m[:, None], sd[:, None], (sd * sd)[:, None, None]
    return m, sd, np.asarray(dist.cov(), dtype=float)


def _ngboost_figures(model, data, G, algo, r=None, title_suffix=""):
    """NGBoost at round r (default: the best validation round): mean and mean +- 1.645 sd per output, truth when
    known; for two outputs the correlation rho(x) and 90% ellipses; NLL curves with the round marked."""
    gx = G[:, 0]
    X = np.asarray(data.X, dtype=float)
    best = ngboost_best_round(model)
    r = best if r is None else int(r)
    dist = model.predict_dist(G, max_iter=r if r is not None else "all")
    m, sd, cov = gaussian_arrays(dist)
    yy = np.asarray(data.y, dtype=float).reshape(len(X), -1)
    truth = getattr(data, "truth", None)
    tm = tlo = thi = tmean = tcov = None
    if truth is not None:
        fam = truth.get_family()
        teta = truth.truth_eta(G)
        tm, tlo, thi = vf.predictive_band(fam, teta, seed=1)
        if tm.ndim == 1:
            tm, tlo, thi = tm[:, None], tlo[:, None], thi[:, None]
        if m.shape[1] == 2:
            tmean, tcov = fam.mean_and_variance(teta)
    at = f"round {r}" if r is not None else "all rounds"
    figs = []
    for j in range(m.shape[1]):
        ylab = data.y_label if m.shape[1] == 1 else f"output y{j + 1}"
        figs.append(vf.regression_figure(
            X[:, 0], yy[:, j], gx, m[:, j], m[:, j] - 1.645 * sd[:, j], m[:, j] + 1.645 * sd[:, j],
            truth=None if tm is None else tm[:, j], truth_lo=None if tlo is None else tlo[:, j],
            truth_hi=None if thi is None else thi[:, j], x_label=data.x_label, y_label=ylab, algo=algo,
            title=("NGBoost mean and 90% band" if m.shape[1] == 1 else f"output {j + 1}: NGBoost mean, 90% band")
                  + f"<br><sup>{at}{' (best validation round)' if r is not None and r == best else ''}{title_suffix}</sup>"))
    if m.shape[1] == 2:
        figs += mvn_figures(X[:, 0], yy, gx, m, cov, truth_mean=tmean, truth_cov=tcov, x_label=data.x_label,
                            algo=algo, subtitle=at)
    figs.append(ngboost_nll_figure(model, current=r, algo=algo))
    return figs


def ngboost_nll_figure(model, *, current=None, algo="ngboost"):
    """NGBoost's training and validation NLL per round, ring at `current`, dotted line at the best validation round."""
    tr = np.asarray(model.train_loss_, dtype=float)
    va = np.asarray(model.valid_loss_, dtype=float)
    best = ngboost_best_round(model)
    fig = vf.nll_figure(np.arange(len(tr)), tr, va if va.size == tr.size else None, None, algo=algo, current=current,
                        title="NGBoost NLL per round" + ("" if best is None else f"<br><sup>best validation round: {best}</sup>"))
    if best is not None and current != best:   # (in the Lab the ring already sits on the best round)
        fig.add_vline(x=best, line=dict(color=OKABE_ITO["vermillion"], width=1.5, dash="dot"))
    return fig


def mvn_figures(x, y, gx, mean, cov, *, truth_mean=None, truth_cov=None, x_label="x", algo="mgd", subtitle=None) -> list:
    """The bivariate Normal's own views: fitted correlation rho(x) against the truth, and the 2-D data with
    the fitted (solid) and true (dashed) 90% covariance ellipses at three inputs."""
    cov = np.asarray(cov, dtype=float)
    sd = np.sqrt(np.einsum("nii->ni", cov))
    rho = cov[:, 0, 1] / (sd[:, 0] * sd[:, 1])
    trho = None
    if truth_cov is not None:
        tc = np.asarray(truth_cov, dtype=float)
        tsd = np.sqrt(np.einsum("nii->ni", tc))
        trho = tc[:, 0, 1] / (tsd[:, 0] * tsd[:, 1])
    sub = f"<br><sup>{subtitle}</sup>" if subtitle else ""
    xs = np.asarray(x, dtype=float).reshape(-1)
    idx = np.unique([int(np.argmin(np.abs(gx - q))) for q in np.quantile(xs, [0.15, 0.5, 0.85])])
    return [vf.correlation_figure(gx, rho, truth=trho, x_label=x_label, algo=algo,
                                  title="correlation ρ(x) of y1 and y2" + sub),
            vf.ellipses_figure(y, xs, gx[idx], np.asarray(mean)[idx], cov[idx],
                               truth_means=None if truth_mean is None else np.asarray(truth_mean)[idx],
                               truth_covs=None if truth_cov is None else np.asarray(truth_cov)[idx],
                               x_label=x_label, algo=algo, title="90% ellipses at three inputs" + (
                                   sub or "<br><sup>solid: fitted, dashed: truth</sup>"))]


def wg_class_prob_figure(model, data, x, P, *, title):
    """Categorical WGBoost: the class probabilities of every particle at inputs x (particles P: (m, N, K - 1))."""
    probs = model.target_._probs(np.asarray(P, dtype=float))   # log-ratio coordinates -> K probabilities
    truth = getattr(data, "truth", None)
    tp = None
    if truth is not None and getattr(truth, "family", "") == "categorical":
        Gt = np.zeros((len(x), truth.X.shape[1]))
        Gt[:, 0] = x
        tp = truth.get_family().mean_and_variance(truth.truth_eta(Gt))[0]
    return vf.particle_probs_figure(x, probs, truth_x=x, truth=tp, x_label=data.x_label, title=title)


def ngboost_params_by_round(model, data, *, n_x: int = 3) -> tuple[np.ndarray, dict, np.ndarray]:
    """NGBoost's parameters after every round at `n_x` inputs (quantiles of the first feature):
    (rounds, {panel: {"x = ...": values per round}}, the inputs). Panels: mean and sd of every output, and rho
    for two outputs."""
    X = np.asarray(data.X, dtype=float)
    G = np.repeat(np.median(X, axis=0, keepdims=True), n_x, axis=0)
    G[:, 0] = np.quantile(X[:, 0], np.linspace(0.15, 0.85, n_x))
    means: Any = []
    sds: Any = []
    rhos: Any = []
    for d in model.staged_predict_dist(G, max_iter="all"):
        m, sd, cov = gaussian_arrays(d)
        means.append(m)
        sds.append(sd)
        rhos.append(cov[:, 0, 1] / (sd[:, 0] * sd[:, 1]) if m.shape[1] >= 2 else np.zeros(m.shape[0]))
    means, sds, rhos = np.asarray(means), np.asarray(sds), np.asarray(rhos)   # (R + 1, n_x, P) / (R + 1, n_x)
    P = means.shape[2]
    lab = [f"x = {v:.3g}" for v in G[:, 0]]
    panels = {}
    for j in range(P):
        out = "" if P == 1 else f" of y{j + 1}"
        panels[f"mean{out}"] = {lab[i]: means[:, i, j] for i in range(n_x)}
        panels[f"sd{out}"] = {lab[i]: sds[:, i, j] for i in range(n_x)}
    if P == 2:
        panels["correlation ρ"] = {lab[i]: rhos[:, i] for i in range(n_x)}
    return np.arange(means.shape[0]), panels, G[:, 0]


def ngboost_round_figures(model, data, r: int, algo: str = "ngboost", params=None) -> dict:
    """Evolution figures of an NGBoost fit at round r: the fit at r, the NLL per round and its parameters per
    round at three inputs (`params`: a cached ngboost_params_by_round result)."""
    G = input_grid(np.asarray(data.X, dtype=float), 120)
    figs = _ngboost_figures(model, data, G, algo, r=r)
    rounds, panels, _ = params if params is not None else ngboost_params_by_round(model, data)
    # the parameters' panels sit in one row: at most three (mean, sd, rho of the first output pair)
    keep = dict(list(panels.items())[:2] + ([("correlation ρ", panels["correlation ρ"])] if "correlation ρ" in panels else []))
    par = vf.params_by_round_figure(rounds, keep, current=r, best=ngboost_best_round(model),
                                    title=f"NGBoost parameters per round at three inputs<br><sup>dashed: round {r}, "
                                          "dotted: best validation round</sup>")
    return {"fit": figs[:-1], "nll": figs[-1], "params": par}


def gp_iteration_figures(model, data, i: int, algo: str) -> dict:
    """Evolution figures of a sparse-GP fit at optimiser iteration i: predictive mean (and band) and the objective."""
    G = input_grid(np.asarray(data.X, dtype=float), 120)
    m_i = model.at_iteration(i)
    fit = _gp_figures(m_i, data, G, algo, subtitle=f"optimiser iteration {i}")
    return {"fit": fit[0], "objective": gp_objective_figure(model, algo, current=i)}


def gp_objective_figure(model, algo: str, current=None):
    """The sparse GP's objective (negative ELBO or log-loss DLM objective per row) per optimiser iteration."""
    h = np.asarray(getattr(model, "history_", None) if getattr(model, "history_", None) is not None else [], dtype=float)
    name = "negative ELBO per row" if model.objective == "elbo" else "DLM objective per row"
    return vf.objective_figure(np.arange(len(h)), h, current=current, ylabel=name, algo=algo,
                               title=f"L-BFGS objective<br><sup>{name}, {len(h) - 1} iterations</sup>")


def _gp_figures(model, data, G, algo, subtitle=None, objective=False):
    """Sparse GP: predictive mean and 90% band (Gaussian likelihood; the mean only otherwise), truth when known;
    with `objective` also the optimiser's objective per iteration."""
    X = np.asarray(data.X, dtype=float)
    gx = G[:, 0]
    mean = np.asarray(model.predict_mean(G), dtype=float).reshape(-1)
    lo = hi = None
    if model.likelihood == "gaussian":
        lo, hi = model.predict_interval(G, 0.9)
    truth = getattr(data, "truth", None)
    tm = tlo = thi = None
    if truth is not None:
        fam = truth.get_family()
        tm, tlo, thi = vf.predictive_band(fam, truth.truth_eta(G), seed=1)
        if model.likelihood != "gaussian":
            tlo = thi = None
    ylab = "P(y = 1 | x)" if model.likelihood in ("probit", "logistic") else data.y_label
    sub = subtitle or ("fitted by the ELBO" if model.objective == "elbo" else "fitted by log-loss DLM")
    figs = [vf.regression_figure(X[:, 0], data.y, gx, mean, lo, hi, truth=tm, truth_lo=tlo, truth_hi=thi,
                                 x_label=data.x_label, y_label=ylab, algo=algo,
                                 title=f"sparse-GP mean{' and 90% band' if lo is not None else ''}<br><sup>{sub}</sup>",
                                 name=f"sparse GP ({model.objective})")]
    if objective and getattr(model, "history_", None) is not None:
        figs.append(gp_objective_figure(model, algo))
    return figs


def trace_rounds(trace) -> int:
    """Index of the last round stored in a trace."""
    return int(trace["round"].values[-1])


def law_round_figures(model, data, r: int, algo: str) -> dict:
    """Evolution figures of an exponential-family fit at round r, read from the trace (no refit, no predict)."""
    tr = model.trace_
    fam = model.family_
    x = tr["X"].values[:, 0]
    o = np.argsort(x, kind="stable")
    xs = x[o]
    eta = tr["eta"].values[r][o]
    star = tr["eta_star"].values[r][o]
    y = tr["y"].values[o]
    y = y[:, 0] if y.shape[1] == 1 else y
    truth = getattr(data, "truth", None)
    teta = tstar = None
    if truth is not None:
        G = np.zeros((len(xs), truth.X.shape[1]))
        G[:, 0] = xs
        teta = truth.truth_eta(G)
        tstar = fam.to_mean(teta)
    out = {}
    out["fit"] = _family_figs(fam, xs, y, xs, eta, truth_eta=teta, x_label=data.x_label, y_label=data.y_label,
                              algo=algo, title_suffix=f"<br><sup>round {r}</sup>")
    out["iterates"] = vf.iterates_figure(xs, eta, star, natural_names=_names(tr, "natural_names", fam.param_names),
                                         mean_names=_names(tr, "mean_names", fam.param_names), truth_eta=teta,
                                         truth_star=tstar, truth_x=xs, x_label=data.x_label, algo=algo, round_=r,
                                         title=f"iterates of every coordinate at round {r} (dashed: truth)")
    out["nll"] = nll_from_trace(tr, current=r, algo=algo, title=f"NLL and entropy per round<br><sup>ring: round {r}</sup>")
    return out


def wg_round_figure(model, data, r: int, algo: str):
    """WGBoost particles per input at round r from the trace, with the true 95% band when known."""
    tr = model.trace_
    x = tr["x"].values[:, 0]
    o = np.argsort(x, kind="stable")
    if getattr(model.target_, "name", "") == "categorical":
        return wg_class_prob_figure(model, data, x[o], tr["particles"].values[r][o],
                                    title=f"class probabilities of every particle, round {r}")
    values, y_label, _ = wg_particle_axis(model, tr["particles"].values[r], data.y_label)
    band = wg_target_band(data, np.linspace(x.min(), x.max(), 200))
    X = np.asarray(data.X)
    return vf.particles_figure(x[o], values[o], data_x=X[:, 0], data_y=np.asarray(data.y).reshape(len(X), -1)[:, 0],
                               band=band, x_label=data.x_label, y_label=y_label,
                               algo=algo, title=f"particles per input at round {r}", band_label="true 95% band of y | x")


def wg_particle_axis(model, particles, y_label: str):
    """The particles of a WGBoost fit in the units of its data's y axis: (values (m, N), y-axis title, subtitle).

    The Poisson target's particles are log rates θ = log λ (distviz.families.posteriors.PoissonTarget), so they
    are drawn as rates λ = e^θ, the mean count, on the axis of the counts; the normal target's first coordinate
    is already the location m of y (its second, log σ, is not drawn).
    """
    P = np.asarray(particles, dtype=float)[:, :, 0]
    if getattr(model.target_, "name", "") == "poisson":
        return np.exp(P), f"{y_label} (data) · particles: rate λ = e^θ", "Poisson rate λ of every particle"
    return P, f"{y_label}: particle location m", "location m of every particle"


def geometry_paths(models: dict, x0: float, data=None):
    """Per algorithm, the path (eta, eta*) over rounds of the traced row nearest to input x0; plus the truth there."""
    paths = {}
    truth_eta = truth_star = None
    fam = None
    for algo, model in models.items():
        tr = model.trace_
        x = tr["X"].values[:, 0]
        i = int(np.argmin(np.abs(x - x0)))
        paths[algo] = (tr["eta"].values[:, i, :], tr["eta_star"].values[:, i, :])
        fam = model.family_
    truth = getattr(data, "truth", None) if data is not None else None
    if truth is not None and fam is not None:
        G = np.zeros((1, truth.X.shape[1]))
        G[0, 0] = x0
        truth_eta = truth.truth_eta(G)[0]
        truth_star = fam.to_mean(truth.truth_eta(G))[0]
    return paths, truth_eta, truth_star
