"""Figures of fitted distributional models: data with mean and band, iterates, NLL curves, particles, geometry.

Pure functions: arrays (or a trace) in, plotly figures out.  Colours come from distviz.viz.palette.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .palette import COORD_COLORS, OKABE_ITO, ROLE_COLORS, algo_color, algo_label, hex_to_rgba
from .style import apply_style, axis_grid, axis_key, make_figure

__all__ = ["predictive_band", "regression_figure", "class_prob_figure", "nll_figure", "iterates_figure",
           "particles_figure", "geometry_figure", "density_heatmap_figure", "sort_by_x"]


def sort_by_x(x, *arrays):
    """Sort a 1-D x and companion arrays (first axis) by x."""
    x = np.asarray(x, dtype=float).reshape(-1)
    o = np.argsort(x, kind="stable")
    return (x[o],) + tuple(np.asarray(a)[o] for a in arrays)


def predictive_band(family, eta, *, level: float = 0.9, n_draws: int = 200, seed: int = 0):
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


def _band(x, lo, hi, color, name):
    """A filled band trace between lo and hi over x."""
    return dict(type="scatter", x=np.r_[x, x[::-1]], y=np.r_[hi, lo[::-1]], fill="toself", fillcolor=color,
                line=dict(width=0), name=name, hoverinfo="skip")


def regression_figure(x, y, grid, mean, lo=None, hi=None, *, truth=None, truth_lo=None, truth_hi=None,
                      x_label="x", y_label="y", algo="mgd", title=None, level=0.9, name=None) -> go.Figure:
    """Data, fitted mean and central band over a 1-D input (truth dashed when known)."""
    c = algo_color(algo)
    grid = np.asarray(grid, dtype=float)
    tr = []
    if truth_lo is not None and truth_hi is not None:
        tr.append(_band(grid, np.asarray(truth_lo), np.asarray(truth_hi), ROLE_COLORS["truth_band"], f"true {int(level * 100)}% band"))
    if lo is not None and hi is not None:
        tr.append(_band(grid, np.asarray(lo), np.asarray(hi), hex_to_rgba(c, 0.2), f"fitted {int(level * 100)}% band"))
    tr.append(dict(type="scatter", x=np.asarray(x).reshape(-1), y=np.asarray(y).reshape(-1), mode="markers", name="data",
                   marker=dict(color=ROLE_COLORS["data"], size=5, opacity=0.55)))
    if truth is not None:
        tr.append(dict(type="scatter", x=grid, y=truth, mode="lines", name="true mean",
                       line=dict(color=ROLE_COLORS["marker"], dash="dash", width=2)))
    tr.append(dict(type="scatter", x=grid, y=mean, mode="lines", name=name or f"fitted mean ({algo_label(algo)})",
                   line=dict(color=c, width=3)))
    layout = dict(xaxis=dict(title=dict(text=x_label)), yaxis=dict(title=dict(text=y_label)))
    return make_figure(tr, layout, title=title, height=430)


def class_prob_figure(grid, probs, *, truth=None, x_label="x", title=None) -> go.Figure:
    """Fitted class probabilities p_k(x) over a 1-D input (truth dashed when known)."""
    probs = np.asarray(probs)
    tr = []
    for k in range(probs.shape[1]):
        col = COORD_COLORS[k % len(COORD_COLORS)]
        tr.append(dict(type="scatter", x=grid, y=probs[:, k], mode="lines", name=f"p(y={k} | x)", line=dict(color=col, width=3)))
        if truth is not None:
            tr.append(dict(type="scatter", x=grid, y=np.asarray(truth)[:, k], mode="lines", name="truth (dashed)",
                           line=dict(color=col, width=1.5, dash="dash"), showlegend=k == 0))
    layout = dict(xaxis=dict(title=dict(text=x_label)), yaxis=dict(title=dict(text="class probability"), range=[0, 1]))
    return make_figure(tr, layout, title=title, height=430)


def nll_figure(rounds, train, valid=None, entropy=None, *, current=None, title=None, algo=None,
               extra: dict | None = None) -> go.Figure:
    """Train / validation NLL per round (and the generalised entropy on a second axis), marker at `current`."""
    rounds = np.asarray(rounds)
    train = np.asarray(train, dtype=float)
    tr = [dict(type="scatter", x=rounds, y=train, mode="lines", name="train NLL", line=dict(color=ROLE_COLORS["train"], width=2.5))]
    if valid is not None and np.isfinite(np.asarray(valid, dtype=float)).any():
        tr.append(dict(type="scatter", x=rounds, y=valid, mode="lines", name="validation NLL",
                       line=dict(color=ROLE_COLORS["valid"], width=2.5, dash="dot")))
    for name, (r, v, col) in (extra or {}).items():
        tr.append(dict(type="scatter", x=r, y=v, mode="lines", name=name, line=dict(color=col, width=2)))
    layout = dict(xaxis=dict(title=dict(text="boosting round")),
                  yaxis=dict(title=dict(text="mean NLL (nats per observation)")))
    if entropy is not None:
        tr.append(dict(type="scatter", x=rounds, y=entropy, mode="lines",
                       name="entropy H of the round's tree partition (right axis)",
                       line=dict(color=ROLE_COLORS["entropy"], width=1.2), opacity=0.8, yaxis="y2"))
        layout["yaxis2"] = dict(title=dict(text="entropy H (nats)"), overlaying="y", side="right", showgrid=False)
    if current is not None and len(rounds):
        i = min(int(np.searchsorted(rounds, current)), len(rounds) - 1)
        layout["shapes"] = [dict(type="line", xref="x", yref="paper", x0=float(rounds[i]), x1=float(rounds[i]), y0=0, y1=1,
                                 line=dict(color=ROLE_COLORS["marker"], width=1.5, dash="dash"))]
        tr.append(dict(type="scatter", x=[rounds[i]], y=[train[i]], mode="markers", name=f"round {int(rounds[i])}",
                       marker=dict(color=ROLE_COLORS["marker"], size=11, symbol="circle-open", line=dict(width=2))))
    return make_figure(tr, layout, title=title, height=380)


def iterates_figure(x, eta, eta_star, *, natural_names, mean_names, truth_eta=None, truth_star=None,
                    truth_x=None, x_label="x", algo="mgd", round_=None, title=None) -> go.Figure:
    """Every coordinate of eta (top row) and eta* (bottom row) against a 1-D input at one round."""
    eta, eta_star = np.asarray(eta), np.asarray(eta_star)
    d = eta.shape[1]
    cols = min(d, 5)
    layout, ref = axis_grid(2, cols, titles=[f"η: {n}" for n in natural_names[:cols]] + [f"η*: {n}" for n in mean_names[:cols]],
                            hspace=0.06, vspace=0.16)
    c = algo_color(algo)
    tr = []
    for j in range(cols):
        for row, arr, truth in ((1, eta, truth_eta), (2, eta_star, truth_star)):
            if truth is not None:
                tr.append(dict(type="scatter", x=truth_x, y=np.asarray(truth)[:, j], mode="lines",
                               line=dict(color=ROLE_COLORS["marker"], dash="dash", width=1.5), name="truth",
                               showlegend=(row == 1 and j == 0), **ref(row, j + 1)))
            tr.append(dict(type="scatter", x=x, y=arr[:, j], mode="lines", line=dict(color=c, width=2.5, shape="hv"),
                           name=f"iterate ({algo_label(algo)})" + (f", round {round_}" if round_ is not None else ""),
                           showlegend=(row == 1 and j == 0), **ref(row, j + 1)))
        layout[axis_key(ref(2, j + 1), "x")]["title"] = dict(text=x_label)
    return make_figure(tr, layout, title=title, height=520)


def particles_figure(x, particles, *, data_x=None, data_y=None, band=None, x_label="x",
                     y_label="particle value", algo="ska", title=None, band_label="target 95% band") -> go.Figure:
    """WGBoost particles per input (WGBoost paper Figs. 2 and 4): N dots above each x, target band shaded."""
    x = np.asarray(x, dtype=float).reshape(-1)
    P = np.asarray(particles, dtype=float)  # (m, N)
    tr = []
    if band is not None:
        bx, blo, bhi = band
        tr.append(_band(np.asarray(bx), np.asarray(blo), np.asarray(bhi), ROLE_COLORS["truth_band"], band_label))
    if data_x is not None:
        tr.append(dict(type="scatter", x=np.asarray(data_x).reshape(-1), y=np.asarray(data_y).reshape(-1), mode="markers",
                       name="data", marker=dict(color=ROLE_COLORS["data"], size=4, opacity=0.4)))
    tr.append(dict(type="scatter", x=np.repeat(x, P.shape[1]), y=P.reshape(-1), mode="markers",
                   name=f"particles ({algo_label(algo)})", marker=dict(color=algo_color(algo), size=5, opacity=0.85)))
    layout = dict(xaxis=dict(title=dict(text=x_label)), yaxis=dict(title=dict(text=y_label)))
    return make_figure(tr, layout, title=title, height=430)


def geometry_figure(paths: dict, *, natural_names, mean_names, current=None, title=None,
                    target_eta=None, target_star=None) -> go.Figure:
    """Path of the iterate at one input in the eta chart (left) and the eta* chart (right), per algorithm.

    `paths` maps an algorithm key to (eta_path (R+1, d), eta_star_path (R+1, d)).  With d >= 2 the
    first two coordinates are drawn against each other; with d == 1 the coordinate against the round.
    """
    layout, ref = axis_grid(1, 2, titles=["natural chart η", "mean chart η* = E[T(y)]"], hspace=0.12)
    tr = []
    for algo, (pe, ps) in paths.items():
        pe, ps = np.asarray(pe, dtype=float), np.asarray(ps, dtype=float)
        c = algo_color(algo)
        for col, p in ((1, pe), (2, ps)):
            if p.shape[1] >= 2:
                xx, yy = p[:, 0], p[:, 1]
            else:
                xx, yy = np.arange(p.shape[0]), p[:, 0]
            tr.append(dict(type="scatter", x=xx, y=yy, mode="lines+markers", line=dict(color=c, width=2.5), marker=dict(size=3),
                           name=algo_label(algo), showlegend=col == 1, legendgroup=algo, **ref(1, col)))
            tr.append(dict(type="scatter", x=[xx[0]], y=[yy[0]], mode="markers", marker=dict(color=c, size=10, symbol="square"),
                           name="start", showlegend=False, legendgroup=algo, **ref(1, col)))
            if current is not None:
                i = min(int(current), len(xx) - 1)
                tr.append(dict(type="scatter", x=[xx[i]], y=[yy[i]], mode="markers", legendgroup=algo, showlegend=False,
                               marker=dict(color=c, size=13, symbol="circle-open", line=dict(width=3)), name=f"round {i}",
                               **ref(1, col)))
    for col, t in ((1, target_eta), (2, target_star)):
        if t is not None:
            t = np.asarray(t, dtype=float).reshape(-1)
            if t.size >= 2:
                tr.append(dict(type="scatter", x=[t[0]], y=[t[1]], mode="markers", name="truth at this x", showlegend=col == 1,
                               marker=dict(color=ROLE_COLORS["marker"], size=14, symbol="star"), **ref(1, col)))
    d_nat, d_mean = list(natural_names), list(mean_names)
    if len(d_nat) >= 2:
        labels = ((1, "x", d_nat[0]), (1, "y", d_nat[1]), (2, "x", d_mean[0]), (2, "y", d_mean[1]))
    else:
        labels = ((1, "x", "boosting round"), (2, "x", "boosting round"), (1, "y", d_nat[0]), (2, "y", d_mean[0]))
    for col, which, text in labels:
        layout[axis_key(ref(1, col), which)]["title"] = dict(text=text)
    return make_figure(tr, layout, title=title, height=430)


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
    # the axes end where the heat map's cells end (cells are centred on the grid points): no blank strip
    fig.update_xaxes(title_text=x_label, range=_cell_range(x_grid))
    fig.update_yaxes(title_text=y_label, range=_cell_range(y_grid))
    return apply_style(fig, title=title, height=460)


def _cell_range(grid) -> list:
    """[first, last] grid point widened by half a cell at each end (a heat map's cells are centred on the points)."""
    g = np.sort(np.asarray(grid, dtype=float).reshape(-1))
    if len(g) == 1:
        return [float(g[0] - 0.5), float(g[0] + 0.5)]
    return [float(g[0] - (g[1] - g[0]) / 2), float(g[-1] + (g[-1] - g[-2]) / 2)]
