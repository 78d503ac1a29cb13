"""Figures of fitted distributional models: data with mean and band, iterates, NLL curves, particles, geometry.

Pure functions: arrays (or a trace) in, plotly figures out.  Colours come from distviz.viz.palette.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .palette import COORD_COLORS, OKABE_ITO, ROLE_COLORS, algo_color, algo_label, hex_to_rgba
from .style import apply_style

__all__ = ["predictive_band", "regression_figure", "class_prob_figure", "nll_figure", "iterates_figure",
           "particles_figure", "geometry_figure", "density_heatmap_figure", "sort_by_x"]


def sort_by_x(x, *arrays):
    """Sort a 1-D x and companion arrays (first axis) by x."""
    x = np.asarray(x, dtype=float).reshape(-1)
    o = np.argsort(x, kind="stable")
    return (x[o],) + tuple(np.asarray(a)[o] for a in arrays)


def predictive_band(family, eta, *, level: float = 0.9, n_draws: int = 400, seed: int = 0):
    """(mean, lower, upper) of y | eta per row: exact mean, Monte-Carlo central `level` interval.

    For the multivariate Normal the arrays have a trailing output axis (n, P).
    """
    eta = np.asarray(eta, dtype=float)
    n = eta.shape[0]
    rng = np.random.default_rng(seed)
    draws = np.asarray(family.sample(np.repeat(eta, n_draws, axis=0), rng), dtype=float)
    draws = draws.reshape((n, n_draws) + draws.shape[1:])
    a = (1 - level) / 2
    lo, hi = np.quantile(draws, [a, 1 - a], axis=1)
    m, _ = family.mean_and_variance(eta)
    m = np.asarray(m, dtype=float)
    if m.ndim == 2 and getattr(family, "y_dim", 1) == 1:
        m = m[:, 0]
    return m, lo, hi


def regression_figure(x, y, grid, mean, lo=None, hi=None, *, truth=None, truth_lo=None, truth_hi=None,
                      x_label="x", y_label="y", algo="mgd", title=None, level=0.9, name=None) -> go.Figure:
    """Data, fitted mean and central band over a 1-D input (truth dashed when known)."""
    fig = go.Figure()
    c = algo_color(algo)
    if truth_lo is not None and truth_hi is not None:
        fig.add_scatter(x=np.r_[grid, grid[::-1]], y=np.r_[truth_hi, truth_lo[::-1]], fill="toself",
                        fillcolor=ROLE_COLORS["truth_band"], line=dict(width=0), name=f"true {int(level * 100)}% band",
                        hoverinfo="skip")
    if lo is not None and hi is not None:
        fig.add_scatter(x=np.r_[grid, grid[::-1]], y=np.r_[hi, lo[::-1]], fill="toself",
                        fillcolor=hex_to_rgba(c, 0.2), line=dict(width=0), name=f"fitted {int(level * 100)}% band",
                        hoverinfo="skip")
    fig.add_scatter(x=np.asarray(x).reshape(-1), y=np.asarray(y).reshape(-1), mode="markers", name="data",
                    marker=dict(color=ROLE_COLORS["data"], size=5, opacity=0.55))
    if truth is not None:
        fig.add_scatter(x=grid, y=truth, mode="lines", name="true mean", line=dict(color=ROLE_COLORS["marker"], dash="dash", width=2))
    fig.add_scatter(x=grid, y=mean, mode="lines", name=name or f"fitted mean ({algo_label(algo)})", line=dict(color=c, width=3))
    fig.update_xaxes(title_text=x_label)
    fig.update_yaxes(title_text=y_label)
    return apply_style(fig, title=title, height=430)


def class_prob_figure(grid, probs, *, truth=None, x_label="x", title=None) -> go.Figure:
    """Fitted class probabilities p_k(x) over a 1-D input (truth dashed when known)."""
    probs = np.asarray(probs)
    fig = go.Figure()
    for k in range(probs.shape[1]):
        col = COORD_COLORS[k % len(COORD_COLORS)]
        fig.add_scatter(x=grid, y=probs[:, k], mode="lines", name=f"p(y={k} | x)", line=dict(color=col, width=3))
        if truth is not None:
            fig.add_scatter(x=grid, y=np.asarray(truth)[:, k], mode="lines", name=f"true p(y={k})",
                            line=dict(color=col, width=1.5, dash="dash"), showlegend=k == 0)
    fig.update_xaxes(title_text=x_label)
    fig.update_yaxes(title_text="class probability", range=[0, 1])
    return apply_style(fig, title=title, height=430)


def nll_figure(rounds, train, valid=None, entropy=None, *, current=None, title=None, algo=None,
               extra: dict | None = None) -> go.Figure:
    """Train / validation NLL per round (and the generalised entropy on a second axis), marker at `current`."""
    fig = make_subplots(specs=[[{"secondary_y": entropy is not None}]])
    fig.add_scatter(x=rounds, y=train, mode="lines", name="train NLL", line=dict(color=ROLE_COLORS["train"], width=2.5))
    if valid is not None and np.isfinite(np.asarray(valid, dtype=float)).any():
        fig.add_scatter(x=rounds, y=valid, mode="lines", name="validation NLL",
                        line=dict(color=ROLE_COLORS["valid"], width=2.5, dash="dot"))
    for name, (r, v, col) in (extra or {}).items():
        fig.add_scatter(x=r, y=v, mode="lines", name=name, line=dict(color=col, width=2))
    if entropy is not None:
        fig.add_scatter(x=rounds, y=entropy, mode="lines", name="generalised entropy H (right axis)",
                        line=dict(color=ROLE_COLORS["entropy"], width=1.5), secondary_y=True)
        fig.update_yaxes(title_text="entropy H (nats)", secondary_y=True, showgrid=False)
    if current is not None:
        i = int(np.searchsorted(np.asarray(rounds), current))
        i = min(i, len(rounds) - 1)
        fig.add_vline(x=float(rounds[i]), line=dict(color=ROLE_COLORS["marker"], width=1.5, dash="dash"))
        fig.add_scatter(x=[rounds[i]], y=[train[i]], mode="markers", name=f"round {int(rounds[i])}",
                        marker=dict(color=ROLE_COLORS["marker"], size=11, symbol="circle-open", line=dict(width=2)))
    fig.update_xaxes(title_text="boosting round")
    fig.update_yaxes(title_text="mean NLL (nats per observation)", secondary_y=False)
    return apply_style(fig, title=title, height=380)


def iterates_figure(x, eta, eta_star, *, natural_names, mean_names, truth_eta=None, truth_star=None,
                    truth_x=None, x_label="x", algo="mgd", round_=None, title=None) -> go.Figure:
    """Every coordinate of eta (top row) and eta* (bottom row) against a 1-D input at one round."""
    eta, eta_star = np.asarray(eta), np.asarray(eta_star)
    d = eta.shape[1]
    cols = min(d, 5)
    fig = make_subplots(rows=2, cols=cols, shared_xaxes=True, vertical_spacing=0.12, horizontal_spacing=0.06,
                        subplot_titles=[f"η: {n}" for n in natural_names[:cols]] + [f"η*: {n}" for n in mean_names[:cols]])
    c = algo_color(algo)
    for j in range(cols):
        for row, arr, tr in ((1, eta, truth_eta), (2, eta_star, truth_star)):
            if tr is not None:
                fig.add_scatter(x=truth_x, y=np.asarray(tr)[:, j], mode="lines", line=dict(color=ROLE_COLORS["marker"], dash="dash", width=1.5),
                                name="truth", showlegend=(row == 1 and j == 0), row=row, col=j + 1)
            fig.add_scatter(x=x, y=arr[:, j], mode="lines", line=dict(color=c, width=2.5, shape="hv"),
                            name=f"iterate ({algo_label(algo)})" + (f", round {round_}" if round_ is not None else ""),
                            showlegend=(row == 1 and j == 0), row=row, col=j + 1)
        fig.update_xaxes(title_text=x_label, row=2, col=j + 1)
    return apply_style(fig, title=title, height=520)


def particles_figure(x, particles, *, data_x=None, data_y=None, band=None, x_label="x",
                     y_label="particle value", algo="ska", title=None, band_label="target 95% band") -> go.Figure:
    """WGBoost particles per input (WGBoost paper Figs. 2 and 4): N dots above each x, target band shaded."""
    x = np.asarray(x, dtype=float).reshape(-1)
    P = np.asarray(particles, dtype=float)  # (m, N)
    fig = go.Figure()
    if band is not None:
        bx, blo, bhi = band
        fig.add_scatter(x=np.r_[bx, bx[::-1]], y=np.r_[bhi, blo[::-1]], fill="toself", fillcolor=ROLE_COLORS["truth_band"],
                        line=dict(width=0), name=band_label, hoverinfo="skip")
    if data_x is not None:
        fig.add_scatter(x=np.asarray(data_x).reshape(-1), y=np.asarray(data_y).reshape(-1), mode="markers", name="data",
                        marker=dict(color=ROLE_COLORS["data"], size=4, opacity=0.4))
    xs = np.repeat(x, P.shape[1])
    fig.add_scatter(x=xs, y=P.reshape(-1), mode="markers", name=f"particles ({algo_label(algo)})",
                    marker=dict(color=algo_color(algo), size=5, opacity=0.85))
    fig.update_xaxes(title_text=x_label)
    fig.update_yaxes(title_text=y_label)
    return apply_style(fig, title=title, height=430)


def geometry_figure(paths: dict, *, natural_names, mean_names, current=None, title=None,
                    target_eta=None, target_star=None) -> go.Figure:
    """Path of the iterate at one input in the eta chart (left) and the eta* chart (right), per algorithm.

    `paths` maps an algorithm key to (eta_path (R+1, d), eta_star_path (R+1, d)).  With d >= 2 the
    first two coordinates are drawn against each other; with d == 1 the coordinate against the round.
    """
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.12,
                        subplot_titles=["natural chart η", "mean chart η* = E[T(y)]"])
    for algo, (pe, ps) in paths.items():
        pe, ps = np.asarray(pe, dtype=float), np.asarray(ps, dtype=float)
        c = algo_color(algo)
        for col, p in ((1, pe), (2, ps)):
            if p.shape[1] >= 2:
                xx, yy = p[:, 0], p[:, 1]
            else:
                xx, yy = np.arange(p.shape[0]), p[:, 0]
            fig.add_scatter(x=xx, y=yy, mode="lines+markers", line=dict(color=c, width=2.5), marker=dict(size=3),
                            name=algo_label(algo), showlegend=col == 1, legendgroup=algo, row=1, col=col)
            fig.add_scatter(x=[xx[0]], y=[yy[0]], mode="markers", marker=dict(color=c, size=10, symbol="square"),
                            name="start", showlegend=False, legendgroup=algo, row=1, col=col)
            if current is not None:
                i = min(int(current), len(xx) - 1)
                fig.add_scatter(x=[xx[i]], y=[yy[i]], mode="markers", legendgroup=algo, showlegend=False,
                                marker=dict(color=c, size=13, symbol="circle-open", line=dict(width=3)),
                                name=f"round {i}", row=1, col=col)
    for col, t in ((1, target_eta), (2, target_star)):
        if t is not None:
            t = np.asarray(t, dtype=float).reshape(-1)
            if t.size >= 2:
                fig.add_scatter(x=[t[0]], y=[t[1]], mode="markers", name="truth at this x", showlegend=col == 1,
                                marker=dict(color=ROLE_COLORS["marker"], size=14, symbol="star"), row=1, col=col)
    d_nat = list(natural_names)
    d_mean = list(mean_names)
    if len(d_nat) >= 2:
        fig.update_xaxes(title_text=d_nat[0], row=1, col=1)
        fig.update_yaxes(title_text=d_nat[1], row=1, col=1)
        fig.update_xaxes(title_text=d_mean[0], row=1, col=2)
        fig.update_yaxes(title_text=d_mean[1], row=1, col=2)
    else:
        fig.update_xaxes(title_text="boosting round", row=1, col=1)
        fig.update_xaxes(title_text="boosting round", row=1, col=2)
        fig.update_yaxes(title_text=d_nat[0], row=1, col=1)
        fig.update_yaxes(title_text=d_mean[0], row=1, col=2)
    return apply_style(fig, title=title, height=430)


def density_heatmap_figure(x_grid, y_grid, density, *, particles_x=None, particles_y=None, data_x=None, data_y=None,
                           x_label="x", y_label="y", algo="ska", title=None) -> go.Figure:
    """Conditional density p(y | x) as a heat map (x across, y up) with data and particle means overlaid."""
    fig = go.Figure()
    fig.add_heatmap(x=x_grid, y=y_grid, z=np.asarray(density).T, colorscale="Cividis",
                    colorbar=dict(title="p(y | x)"), name="predictive density", zsmooth="best")
    if data_x is not None:
        fig.add_scatter(x=np.asarray(data_x).reshape(-1), y=np.asarray(data_y).reshape(-1), mode="markers", name="data",
                        marker=dict(color="white", size=5, line=dict(color="black", width=0.7)))
    if particles_x is not None:
        P = np.asarray(particles_y)
        fig.add_scatter(x=np.repeat(np.asarray(particles_x).reshape(-1), P.shape[1]), y=P.reshape(-1), mode="markers",
                        name=f"particle locations ({algo_label(algo)})",
                        marker=dict(color=algo_color(algo), size=4, symbol="x"))
    fig.update_xaxes(title_text=x_label)
    fig.update_yaxes(title_text=y_label)
    return apply_style(fig, title=title, height=460)
