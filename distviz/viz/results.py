"""From fitted models and their traces to the Lab / Evolution figures (no Streamlit here).

`model` is a fitted DistributionalBoosting (kind "law"), WGBoost (kind "wg") or another estimator
with predict_natural / predict_mean; `data` has X, y, x_label, y_label and an optional synthetic truth.
"""

from __future__ import annotations

import json

import numpy as np

from . import fits as vf
from .palette import OKABE_ITO

__all__ = ["input_grid", "lab_figures", "trace_rounds", "law_round_figures", "wg_round_figure", "geometry_paths",
           "nll_from_trace", "wg_target_band"]


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
                title=f"output {j + 1}: data, fitted mean and 90% band{title_suffix}"))
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


def lab_figures(model, data, kind: str, algo: str) -> list:
    """The Lab's result figures: fitted distribution over x (first feature) and the NLL curves."""
    X = np.asarray(data.X, dtype=float)
    G = input_grid(X)
    gx = G[:, 0]
    figs = []
    truth = getattr(data, "truth", None)
    if kind == "wg":
        Gp = input_grid(X, 60)  # particles above 60 inputs stay readable
        P = model.predict_particles(Gp)  # (n, N, d)
        band = wg_target_band(data, gx)
        figs.append(vf.particles_figure(Gp[:, 0], P[:, :, 0], data_x=X[:, 0], data_y=np.asarray(data.y).reshape(len(X), -1)[:, 0],
                                        band=band, x_label=data.x_label, y_label=f"{data.y_label}: particle location",
                                        algo=algo[3:], title="WGBoost particles per input (first coordinate)",
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
                                                  title="predictive density p(y | x) (Bayes average over particles)"))
        figs.append(nll_from_trace(model.trace_, algo=algo[3:], title="negative log predictive per round"))
        return figs
    if kind == "ngboost":
        return _ngboost_figures(model, data, G, algo)
    if kind == "gp":
        return _gp_figures(model, data, G, algo)
    fam = model.family_ if hasattr(model, "family_") else None
    eta = np.asarray(model.predict_natural(G))
    teta = truth.truth_eta(G) if truth is not None else None
    figs += _family_figs(fam, X[:, 0], data.y, gx, eta, truth_eta=teta, x_label=data.x_label, y_label=data.y_label,
                         algo=algo)
    if hasattr(model, "trace_"):
        figs.append(nll_from_trace(model.trace_, algo=algo, current=getattr(model, "best_iteration_", None),
                                   title="NLL and entropy per round (ring: round used)"))
    return figs


def _ngboost_figures(model, data, G, algo):
    """NGBoost: fitted Gaussian mean and mean +- 1.645 sd per output, truth when known, NLL curves."""
    gx = G[:, 0]
    X = np.asarray(data.X, dtype=float)
    dist = model.predict_dist(G)
    m, sd = dist.mean, dist.sd
    yy = np.asarray(data.y, dtype=float).reshape(len(X), -1)
    truth = getattr(data, "truth", None)
    tm = tlo = thi = None
    if truth is not None:
        fam = truth.get_family()
        tm, tlo, thi = vf.predictive_band(fam, truth.truth_eta(G), seed=1)
        if tm.ndim == 1:
            tm, tlo, thi = tm[:, None], tlo[:, None], thi[:, None]
    figs = []
    for j in range(m.shape[1]):
        ylab = data.y_label if m.shape[1] == 1 else f"output y{j + 1}"
        figs.append(vf.regression_figure(
            X[:, 0], yy[:, j], gx, m[:, j], m[:, j] - 1.645 * sd[:, j], m[:, j] + 1.645 * sd[:, j],
            truth=None if tm is None else tm[:, j], truth_lo=None if tlo is None else tlo[:, j],
            truth_hi=None if thi is None else thi[:, j], x_label=data.x_label, y_label=ylab, algo=algo,
            title="data, NGBoost mean and 90% band" + ("" if m.shape[1] == 1 else f" (output {j + 1})")))
    tr = np.asarray(model.train_loss_, dtype=float)
    va = np.asarray(model.valid_loss_, dtype=float)
    figs.append(vf.nll_figure(np.arange(len(tr)), tr, va if va.size == tr.size else None, None, algo=algo,
                              title="NGBoost NLL per round"))
    return figs


def _gp_figures(model, data, G, algo):
    """Sparse GP: predictive mean and 90% band (Gaussian likelihood; the mean only otherwise), truth when known."""
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
    ylab = "P(y = 1 | x)" if model.likelihood == "probit" else data.y_label
    return [vf.regression_figure(X[:, 0], data.y, gx, mean, lo, hi, truth=tm, truth_lo=tlo, truth_hi=thi,
                                 x_label=data.x_label, y_label=ylab, algo=algo,
                                 title=f"data, sparse-GP mean{' and 90% band' if lo is not None else ''} ({model.objective})",
                                 name=f"sparse GP ({model.objective})")]


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
                              algo=algo, title_suffix=f" — round {r}")
    out["iterates"] = vf.iterates_figure(xs, eta, star, natural_names=_names(tr, "natural_names", fam.param_names),
                                         mean_names=_names(tr, "mean_names", fam.param_names), truth_eta=teta,
                                         truth_star=tstar, truth_x=xs, x_label=data.x_label, algo=algo, round_=r,
                                         title=f"iterates of every coordinate at round {r} (dashed: truth)")
    out["nll"] = nll_from_trace(tr, current=r, algo=algo, title="NLL and generalised entropy (marker: current round)")
    return out


def wg_round_figure(model, data, r: int, algo: str):
    """WGBoost particles per input at round r from the trace, with the true 95% band when known."""
    tr = model.trace_
    x = tr["x"].values[:, 0]
    P = tr["particles"].values[r][:, :, 0]
    o = np.argsort(x, kind="stable")
    band = wg_target_band(data, np.linspace(x.min(), x.max(), 200))
    X = np.asarray(data.X)
    return vf.particles_figure(x[o], P[o], data_x=X[:, 0], data_y=np.asarray(data.y).reshape(len(X), -1)[:, 0],
                               band=band, x_label=data.x_label, y_label=f"{data.y_label}: particle location",
                               algo=algo, title=f"particles per input at round {r}", band_label="true 95% band of y | x")


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
