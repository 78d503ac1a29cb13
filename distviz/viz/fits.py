"""Figures of fitted distributional models: data with mean and band, iterates, NLL curves, particles, geometry.

Pure functions: arrays (or a trace) in, plotly figures out.  Colours come from distviz.viz.palette.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import plotly.graph_objects as go

from .notation import math_names
from .palette import COORD_COLORS, ROLE_COLORS, algo_color, algo_label, hex_to_rgba
from .safe_text import plot_text
from .style import apply_style, axis_grid, axis_key, make_figure

__all__ = ["predictive_band", "exact_quantiles", "regression_figure", "class_prob_figure", "nll_figure", "iterates_figure",
           "particles_figure", "geometry_figure", "density_heatmap_figure", "sort_by_x", "nll_axis_range",
           "running_mean", "correlation_figure", "ellipse_xy", "ellipses_figure", "particle_probs_figure",
           "params_by_round_figure", "objective_figure"]


def sort_by_x(x, *arrays):
    """Sort a 1-D x and companion arrays (first axis) by x."""
    x = np.asarray(x, dtype=float).reshape(-1)
    o = np.argsort(x, kind="stable")
    return (x[o],) + tuple(np.asarray(a)[o] for a in arrays)


def exact_quantiles(family, eta, probs):
    """Exact quantiles of y | eta per row at the probabilities `probs`, shape (len(probs), n[, P]); None when unknown.

    From the family's mean and variance: Normal(m, v); Poisson(rate m); Gamma(shape m^2 / v, rate m / v);
    Exponential(rate 1 / m); Bernoulli(p = m); for the multivariate Normal each output's marginal is
    Normal(m_j, Sigma_jj).  Discrete quantiles are scipy's ppf (the smallest y with F(y) >= q).
    """
    from scipy import stats

    kind = str(getattr(family, "name", "")).lower()
    if kind not in ("normal", "poisson", "gamma", "exponential", "bernoulli", "mvn"):
        return None
    m, v = family.mean_and_variance(np.asarray(eta, dtype=float))
    m, v = np.asarray(m, dtype=float), np.asarray(v, dtype=float)
    q = np.asarray(probs, dtype=float).reshape((-1,) + (1,) * (m.ndim if kind == "mvn" else 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        if kind == "mvn":
            sd = np.sqrt(np.diagonal(v, axis1=-2, axis2=-1))
            return stats.norm.ppf(q, loc=m, scale=sd)
        m, v = m.reshape(-1), v.reshape(-1)
        if kind == "normal":
            return stats.norm.ppf(q, loc=m, scale=np.sqrt(v))
        if kind == "poisson":
            return stats.poisson.ppf(q, m)
        if kind == "bernoulli":
            return stats.bernoulli.ppf(q, np.clip(m, 0.0, 1.0))
        if kind == "gamma":
            return stats.gamma.ppf(q, m * m / v, scale=v / m)
        return stats.expon.ppf(q, scale=m)  # exponential: mean 1 / rate


def _smooth_rows(a, window: int):
    """Centred running mean over the first axis (rows on an input grid), edges averaged over what exists."""
    window = min(int(window), a.shape[0])
    window -= 1 - window % 2  # an odd window keeps the running mean centred
    if window <= 1:
        return a
    k = np.ones(window) / window
    flat = a.reshape(a.shape[0], -1)
    num = np.apply_along_axis(lambda c: np.convolve(c, k, mode="same"), 0, flat)
    den = np.convolve(np.ones(a.shape[0]), k, mode="same")[:, None]
    return (num / den).reshape(a.shape)


def predictive_band(family, eta, *, level: float = 0.9, n_draws: int = 2000, seed: int = 0, smooth: int = 5):
    """(mean, lower, upper) of y | eta per row: exact mean and central `level` interval.

    The interval uses exact quantiles (`exact_quantiles`) for Normal, Poisson, Gamma, Exponential,
    Bernoulli and the multivariate Normal's marginals; another family falls back to `n_draws` Monte-Carlo
    draws per row with common random numbers (one seed for every row), smoothed by a running mean over `smooth` neighbouring rows
    (rows are points of an input grid).  The true and the fitted band of a chart use the same rule.
    For the multivariate Normal the arrays have a trailing output axis (n, P).
    """
    eta = np.asarray(eta, dtype=float)
    n = eta.shape[0]
    a = (1 - level) / 2
    qs = exact_quantiles(family, eta, [a, 1 - a])
    if qs is not None:
        lo, hi = qs[0], qs[1]
    else:
        # common random numbers: every row draws from the same seed, so neighbouring rows' quantiles move together
        draws = np.stack([np.asarray(family.sample(np.repeat(eta[i:i + 1], n_draws, axis=0), np.random.default_rng(seed)),
                                     dtype=float) for i in range(n)])
        lo, hi = np.quantile(draws, [a, 1 - a], axis=1)
        lo, hi = _smooth_rows(lo, smooth), _smooth_rows(hi, smooth)
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
        tr.append(_band(grid, np.asarray(truth_lo), np.asarray(truth_hi), ROLE_COLORS["truth_band"],
                        f"true {int(level * 100)}% band"))
    if lo is not None and hi is not None:
        tr.append(_band(grid, np.asarray(lo), np.asarray(hi), hex_to_rgba(c, 0.2), f"fitted {int(level * 100)}% band"))
    tr.append(dict(type="scatter", x=np.asarray(x).reshape(-1), y=np.asarray(y).reshape(-1), mode="markers", name="data",
                   marker=dict(color=ROLE_COLORS["data"], size=5, opacity=0.55)))
    if truth is not None:
        tr.append(dict(type="scatter", x=grid, y=truth, mode="lines", name="true mean",
                       line=dict(color=ROLE_COLORS["marker"], dash="dash", width=2)))
    tr.append(dict(type="scatter", x=grid, y=mean, mode="lines", name=name or f"fitted mean ({algo_label(algo)})",
                   line=dict(color=c, width=3)))
    layout = dict(xaxis=dict(title=dict(text=plot_text(x_label))), yaxis=dict(title=dict(text=plot_text(y_label))))
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
    layout = dict(xaxis=dict(title=dict(text=plot_text(x_label))),
                  yaxis=dict(title=dict(text="class probability"), range=[0, 1]))
    return make_figure(tr, layout, title=title, height=430)


def running_mean(v, window: int = 9) -> np.ndarray:
    """Centred running mean of a 1-D series over `window` points (NaNs skipped; edges average what exists)."""
    v = np.asarray(v, dtype=float).reshape(-1)
    window = max(1, min(int(window), v.size))
    window -= 1 - window % 2
    ok = np.isfinite(v)
    k = np.ones(window)
    num = np.convolve(np.where(ok, v, 0.0), k, mode="same")
    den = np.convolve(ok.astype(float), k, mode="same")
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.maximum(den, 1), np.nan)


def nll_axis_range(series, *, reach: float = 2.0):
    """(lo, hi) of a readable NLL axis from finite values of `series`, or None when nothing is finite.

    The axis spans the smallest value up to the largest value that lies within `reach` times the
    improvement (start - best) above the starting value; a blow-up beyond that is off-scale (the figure
    marks those points at the top edge and says how many there are).
    """
    vals = [np.asarray(v, dtype=float).reshape(-1) for v in series if v is not None]
    fin = [v[np.isfinite(v)] for v in vals]
    allv = np.concatenate(fin) if fin else np.empty(0)
    if allv.size == 0:
        return None
    start = max(float(f[0]) for f in fin if f.size)
    vmin = float(allv.min())
    span = max(start - vmin, 1e-3 * max(1.0, abs(start)))
    cap = start + reach * span
    inside = allv[allv <= cap]
    vmax = float(inside.max()) if inside.size else cap
    pad = 0.05 * max(vmax - vmin, 1e-9)
    return vmin - pad, vmax + pad


def _first_bad_round(rounds, v):
    """(first round with a non-finite value, whether every later round is non-finite too, count) or None."""
    bad = ~np.isfinite(np.asarray(v, dtype=float))
    if not bad.any():
        return None
    i = int(np.argmax(bad))
    return int(rounds[i]), bool(bad[i:].all()), int(bad.sum())


def nll_figure(rounds, train, valid=None, entropy=None, *, current=None, title=None, algo=None,
               extra: dict | None = None) -> go.Figure:
    """Train / validation NLL per round (entropy in its own small panel below), marker at `current`.

    The NLL axis covers the useful range (see nll_axis_range): points of a blow-up above it are drawn as
    triangles on the top edge with a note, and non-finite NLL values are named in a note ("not finite from
    round r") instead of being dropped silently.  The entropy of each round's partition zig-zags from
    round to round; its panel shows a running mean with the raw values as a thin line.
    """
    rounds = np.asarray(rounds)
    train = np.asarray(train, dtype=float)
    has_valid = valid is not None and np.isfinite(np.asarray(valid, dtype=float)).any()
    series: dict[str, tuple] = {"train": (train, ROLE_COLORS["train"], None)}
    if has_valid:
        series["validation"] = (np.asarray(valid, dtype=float), ROLE_COLORS["valid"], "dot")
    tr = [dict(type="scatter", x=rounds, y=v, mode="lines", name=f"{k} NLL", line=dict(color=c, width=2.5, dash=d))
          for k, (v, c, d) in series.items()]
    for name, (r, v, col) in (extra or {}).items():
        tr.append(dict(type="scatter", x=r, y=v, mode="lines", name=name, line=dict(color=col, width=2)))
    ent = None if entropy is None else np.asarray(entropy, dtype=float)
    if ent is not None and not np.isfinite(ent).any():
        ent = None
    top = [0.0, 1.0] if ent is None else [0.42, 1.0]
    layout: dict[str, Any] = dict(xaxis=dict(title=dict(text="boosting round" if ent is None else "")),
                                  yaxis=dict(title=dict(text="mean NLL (nats per observation)"), domain=top))
    notes = []
    rng = nll_axis_range([v for v, _, _ in series.values()] + [np.asarray(v[1], dtype=float) for v in (extra or {}).values()])
    if rng is not None:
        layout["yaxis"]["range"] = list(rng)
        for k, (v, c, _) in series.items():
            off = np.isfinite(v) & (v > rng[1])
            if off.any():
                tr.append(dict(type="scatter", x=rounds[off], y=np.full(int(off.sum()), rng[1]), mode="markers",
                               name=f"{k} NLL above the axis", cliponaxis=False,
                               marker=dict(color=c, size=8, symbol="triangle-up"),
                               hovertext=[f"round {int(r)}: {k} NLL {val:.4g}" for r, val in zip(rounds[off], v[off])],
                               hoverinfo="text"))
                notes.append(f"{k} NLL above the axis at {int(off.sum())} round{'s' if off.sum() > 1 else ''} "
                             f"(up to {float(v[off].max()):.3g}; triangles)")
    for k, (v, _, _) in series.items():
        bad = _first_bad_round(rounds, v)
        if bad is not None:
            r0, persistent, count = bad
            notes.append(f"{k} NLL not finite from round {r0}" if persistent
                         else f"{k} NLL not finite at {count} round{'s' if count > 1 else ''} (first: round {r0})")
            layout.setdefault("shapes", []).append(dict(type="line", xref="x", yref="paper", x0=r0, x1=r0, y0=top[0], y1=1,
                                                        line=dict(color=ROLE_COLORS["marker"], width=1.5, dash="dot")))
    if notes:
        # in the gap above the entropy panel; without it, bottom left of the NLL panel (NLL curves start high
        # on the left and fall, so that corner is usually free)
        y, anchor = (top[0] - 0.01, "top") if ent is not None else (0.02, "bottom")
        layout["annotations"] = [dict(text="<br>".join(notes), xref="paper", yref="paper", x=0.0, y=y,
                                      xanchor="left", yanchor=anchor, showarrow=False, align="left",
                                      bgcolor="rgba(255,255,255,0.85)", font=dict(size=12, color="#7a2e00"))]
    if ent is not None:
        layout["xaxis"].update(matches="x2", showticklabels=False, anchor="y")
        layout["xaxis2"] = dict(title=dict(text="boosting round"), anchor="y2", domain=[0.0, 1.0])
        layout["yaxis2"] = dict(title=dict(text="entropy H"), domain=[0.0, 0.24], anchor="x2")
        tr.append(dict(type="scatter", x=rounds, y=ent, mode="lines", name="entropy H of the round's partition (raw)",
                       line=dict(color=ROLE_COLORS["entropy"], width=1), opacity=0.35, xaxis="x2", yaxis="y2"))
        tr.append(dict(type="scatter", x=rounds, y=running_mean(ent), mode="lines",
                       name="entropy H, running mean of 9 rounds (nats)", line=dict(color=ROLE_COLORS["entropy"], width=2.5),
                       xaxis="x2", yaxis="y2"))
    if current is not None and len(rounds):
        i = min(int(np.searchsorted(rounds, current)), len(rounds) - 1)
        layout.setdefault("shapes", []).append(dict(type="line", xref="x", yref="paper", x0=float(rounds[i]), x1=float(rounds[i]),
                                                    y0=0, y1=1, line=dict(color=ROLE_COLORS["marker"], width=1.5, dash="dash")))
        yi = train[i]
        if rng is not None and (not np.isfinite(yi) or yi > rng[1]):
            yi = rng[1]
        tr.append(dict(type="scatter", x=[rounds[i]], y=[yi], mode="markers", name=f"round {int(rounds[i])}",
                       marker=dict(color=ROLE_COLORS["marker"], size=11, symbol="circle-open", line=dict(width=2))))
    return make_figure(tr, layout, title=title, height=380 if ent is None else 500)


def iterates_figure(x, eta, eta_star, *, natural_names, mean_names, truth_eta=None, truth_star=None,
                    truth_x=None, x_label="x", algo="mgd", round_=None, title=None) -> go.Figure:
    """Every coordinate of eta (top row) and eta* (bottom row) against a 1-D input at one round."""
    eta, eta_star = np.asarray(eta), np.asarray(eta_star)
    d = eta.shape[1]
    cols = min(d, 5)
    layout, ref = axis_grid(2, cols, titles=[f"η: {n}" for n in math_names(natural_names[:cols])]
                            + [f"η*: {n}" for n in math_names(mean_names[:cols])],
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
        layout[axis_key(ref(2, j + 1), "x")]["title"] = dict(text=plot_text(x_label))
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
    layout = dict(xaxis=dict(title=dict(text=plot_text(x_label))), yaxis=dict(title=dict(text=plot_text(y_label))))
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
    d_nat, d_mean = math_names(natural_names), math_names(mean_names)
    if len(d_nat) >= 2:
        labels = ((1, "x", d_nat[0]), (1, "y", d_nat[1]), (2, "x", d_mean[0]), (2, "y", d_mean[1]))
    else:
        labels = ((1, "x", "boosting round"), (2, "x", "boosting round"), (1, "y", d_nat[0]), (2, "y", d_mean[0]))
    for col, which, text in labels:
        layout[axis_key(ref(1, col), which)]["title"] = dict(text=text)
    return make_figure(tr, layout, title=title, height=430)


def _evenly_spaced(grid) -> bool:
    """Whether the points of `grid` are evenly spaced (to 1e-6 of the step)."""
    d = np.diff(np.asarray(grid, dtype=float).reshape(-1))
    return d.size == 0 or bool(np.all(np.abs(d - d[0]) <= 1e-6 * abs(d[0])))


def density_heatmap_figure(x_grid, y_grid, density, *, particles_x=None, particles_y=None, data_x=None, data_y=None,
                           x_label="x", y_label="y", algo="ska", title=None) -> go.Figure:
    """Conditional density p(y | x) as a heat map (x across, y up) with data and particle means overlaid.

    On evenly spaced grids the browser's own image scaling smooths the cells (plotly's ``zsmooth="fast"``), which
    looks the same as plotly's per-pixel interpolation (``"best"``) and draws faster; uneven grids keep ``"best"``
    (``"fast"`` would place the cells as if they were even).
    """
    fig = go.Figure()
    fig.add_heatmap(x=x_grid, y=y_grid, z=np.asarray(density).T, colorscale="Cividis",
                    colorbar=dict(title="p(y | x)"), name="predictive density",
                    zsmooth="fast" if _evenly_spaced(x_grid) and _evenly_spaced(y_grid) else "best")
    if data_x is not None:
        fig.add_scatter(x=np.asarray(data_x).reshape(-1), y=np.asarray(data_y).reshape(-1), mode="markers", name="data",
                        marker=dict(color="white", size=5, line=dict(color="black", width=0.7)))
    if particles_x is not None:
        P = np.asarray(particles_y)
        fig.add_scatter(x=np.repeat(np.asarray(particles_x).reshape(-1), P.shape[1]), y=P.reshape(-1), mode="markers",
                        name=f"particle locations ({algo_label(algo)})",
                        marker=dict(color=algo_color(algo), size=4, symbol="x"))
    # the axes end where the heat map's cells end (cells are centred on the grid points): no blank strip
    fig.update_xaxes(title_text=plot_text(x_label), range=_cell_range(x_grid))
    fig.update_yaxes(title_text=plot_text(y_label), range=_cell_range(y_grid))
    return apply_style(fig, title=title, height=460)


def _cell_range(grid) -> list:
    """[first, last] grid point widened by half a cell at each end (a heat map's cells are centred on the points)."""
    g = np.sort(np.asarray(grid, dtype=float).reshape(-1))
    if len(g) == 1:
        return [float(g[0] - 0.5), float(g[0] + 0.5)]
    return [float(g[0] - (g[1] - g[0]) / 2), float(g[-1] + (g[-1] - g[-2]) / 2)]


def correlation_figure(grid, rho, *, truth=None, x_label="x", algo="mgd", title=None) -> go.Figure:
    """Fitted correlation rho(x) of a bivariate Normal's two outputs against a 1-D input (truth dashed when known)."""
    tr = []
    if truth is not None:
        tr.append(dict(type="scatter", x=grid, y=np.asarray(truth, dtype=float), mode="lines", name="true ρ(x)",
                       line=dict(color=ROLE_COLORS["marker"], dash="dash", width=2)))
    tr.append(dict(type="scatter", x=grid, y=np.asarray(rho, dtype=float), mode="lines",
                   name=f"fitted ρ(x) ({algo_label(algo)})", line=dict(color=algo_color(algo), width=3)))
    layout = dict(xaxis=dict(title=dict(text=plot_text(x_label))),
                  yaxis=dict(title=dict(text="correlation ρ of y1 and y2"), range=[-1.02, 1.02], zeroline=True))
    return make_figure(tr, layout, title=title, height=430)


#: chi-square(2) quantile at 0.9: the Gaussian's 90% region is {d : d' Σ^-1 d <= this}
_CHI2_2_90 = 4.605170185988091


def ellipse_xy(mean, cov, *, level_chi2: float = _CHI2_2_90, n: int = 73) -> tuple[np.ndarray, np.ndarray]:
    """Outline of the region {y : (y - m)' Σ^-1 (y - m) <= c} of a 2-D Gaussian (c = chi-square quantile)."""
    L = np.linalg.cholesky(np.asarray(cov, dtype=float) + 1e-12 * np.eye(2))
    t = np.linspace(0.0, 2.0 * np.pi, n)
    pts = np.asarray(mean, dtype=float)[:, None] + np.sqrt(level_chi2) * L @ np.vstack([np.cos(t), np.sin(t)])
    return pts[0], pts[1]


def ellipses_figure(y, x, at_x, means, covs, *, truth_means=None, truth_covs=None, x_label="x", algo="mgd",
                    title=None) -> go.Figure:
    """2-D view of a bivariate Normal fit: data (y1, y2) and the fitted 90% ellipse at a few inputs.

    The rows whose input lies nearest to each chosen x are coloured like its ellipse; the true ellipse
    is dashed when known.
    """
    y = np.asarray(y, dtype=float).reshape(-1, 2)
    x = np.asarray(x, dtype=float).reshape(-1)
    at_x = np.asarray(at_x, dtype=float).reshape(-1)
    near = np.argmin(np.abs(x[:, None] - at_x[None, :]), axis=1)          # the chosen x each row is closest to
    tr = [dict(type="scatter", x=y[:, 0], y=y[:, 1], mode="markers", name="data", hoverinfo="skip",
               marker=dict(color=ROLE_COLORS["data"], size=4, opacity=0.25))]
    width = (x.max() - x.min()) / (2.5 * max(len(at_x), 1))
    for k, x0 in enumerate(at_x):
        col = COORD_COLORS[k % len(COORD_COLORS)]
        rows = (near == k) & (np.abs(x - x0) <= width)
        tr.append(dict(type="scatter", x=y[rows, 0], y=y[rows, 1], mode="markers", legendgroup=str(k), showlegend=False,
                       name=f"data near x = {x0:.3g}", marker=dict(color=col, size=5, opacity=0.7)))
        ex, ey = ellipse_xy(means[k], covs[k])
        tr.append(dict(type="scatter", x=ex, y=ey, mode="lines", legendgroup=str(k), name=f"x = {x0:.3g}",
                       line=dict(color=col, width=3)))
        if truth_means is not None:
            tx, ty = ellipse_xy(truth_means[k], truth_covs[k])
            tr.append(dict(type="scatter", x=tx, y=ty, mode="lines", legendgroup=str(k), showlegend=False,
                           name=f"truth at x = {x0:.3g}", line=dict(color=col, width=1.5, dash="dash")))
    layout = dict(xaxis=dict(title=dict(text="output y1")),
                  yaxis=dict(title=dict(text="output y2"), scaleanchor="x", scaleratio=1))
    return make_figure(tr, layout, title=title, height=430)


def particle_probs_figure(x, probs, *, truth_x=None, truth=None, x_label="x", title=None) -> go.Figure:
    """Categorical WGBoost: each particle's class probabilities above its input, one panel per class.

    `probs` is (m, N, K): for every input the N particles' probability vectors; each panel shows the
    particles of one class as dots, their average as a line and the true probability (dashed) when known.
    The figure is meant to span the page (layout.meta["wide"]).
    """
    x = np.asarray(x, dtype=float).reshape(-1)
    P = np.asarray(probs, dtype=float)
    K = P.shape[2]
    cols = min(K, 3)
    rows = -(-K // cols)
    layout, ref = axis_grid(rows, cols, titles=[f"class {k}: p(y = {k} | x)" for k in range(K)], hspace=0.05,
                            vspace=0.22 if rows > 1 else 0.14)
    tr = []
    for k in range(K):
        col = COORD_COLORS[k % len(COORD_COLORS)]
        a = ref(k // cols + 1, k % cols + 1)
        tr.append(dict(type="scatter", x=np.repeat(x, P.shape[1]), y=P[:, :, k].reshape(-1), mode="markers",
                       name="particles (one dot each)", legendgroup="p", showlegend=k == 0,
                       marker=dict(color=col, size=4, opacity=0.5), **a))
        tr.append(dict(type="scatter", x=x, y=P[:, :, k].mean(axis=1), mode="lines", name="particle average",
                       legendgroup="m", showlegend=k == 0, line=dict(color=col, width=2.5), **a))
        if truth is not None:
            tr.append(dict(type="scatter", x=truth_x, y=np.asarray(truth)[:, k], mode="lines", name="true probability",
                           legendgroup="t", showlegend=k == 0,
                           line=dict(color=ROLE_COLORS["marker"], width=1.5, dash="dash"), **a))
        layout[axis_key(a, "y")].update(range=[-0.02, 1.02], showticklabels=k % cols == 0)
        if k // cols == rows - 1 or k + cols >= K:
            layout[axis_key(a, "x")]["title"] = dict(text=plot_text(x_label))
    layout[axis_key(ref(1, 1), "y")]["title"] = dict(text="class probability")
    layout["meta"] = {"wide": True}
    return make_figure(tr, layout, title=title, height=330 * rows + 60)


def params_by_round_figure(rounds, series: dict, *, current=None, best=None, title=None) -> go.Figure:
    """Parameters per boosting round at a few inputs, one panel per parameter (e.g. mean, sd, ρ).

    `series` maps a panel title to {legend name: values per round}; a dashed line marks `current`,
    a dotted one the best validation round.
    """
    names = list(series)
    cols = len(names)
    layout, ref = axis_grid(1, cols, titles=names, hspace=0.09 if cols > 2 else 0.12)
    tr, seen = [], set()
    for j, panel in enumerate(names):
        for i, (label, v) in enumerate(series[panel].items()):
            tr.append(dict(type="scatter", x=rounds, y=np.asarray(v, dtype=float), mode="lines", name=label,
                           legendgroup=label, showlegend=label not in seen,
                           line=dict(color=COORD_COLORS[i % len(COORD_COLORS)], width=2.5), **ref(1, j + 1)))
            seen.add(label)
        layout[axis_key(ref(1, j + 1), "x")]["title"] = dict(text="boosting round")
    shapes = []
    for r, dash in ((current, "dash"), (best, "dot")):
        if r is None:
            continue
        for j in range(cols):
            a = ref(1, j + 1)
            shapes.append(dict(type="line", xref=a["xaxis"], yref=f"{a['yaxis']} domain", x0=r, x1=r, y0=0, y1=1,
                               line=dict(color=ROLE_COLORS["marker"], width=1.5, dash=dash)))
    layout["shapes"] = shapes
    return make_figure(tr, layout, title=title, height=400)


def objective_figure(iterations, values, *, current=None, ylabel="objective", algo="sgp_elbo", title=None) -> go.Figure:
    """An optimiser's objective per iteration (e.g. the sparse GP's negative ELBO per row), marker at `current`."""
    it = np.asarray(iterations)
    v = np.asarray(values, dtype=float)
    tr = [dict(type="scatter", x=it, y=v, mode="lines", name=ylabel, line=dict(color=algo_color(algo), width=2.5))]
    layout: dict[str, Any] = dict(xaxis=dict(title=dict(text="optimiser iteration")), yaxis=dict(title=dict(text=ylabel)))
    fin = v[np.isfinite(v)]
    if fin.size > 3:
        # the first steps fall steeply: the axis starts a few iterations in so the rest of the path is not flat
        k = min(fin.size - 1, max(2, fin.size // 40))
        lo, hi = float(fin.min()), float(fin[k])
        if fin[0] > hi:
            pad = 0.05 * max(hi - lo, 1e-9)
            layout["yaxis"]["range"] = [lo - pad, hi + pad]
            layout["annotations"] = [dict(text=f"start {fin[0]:.3g} (above the axis)", xref="paper", yref="paper",
                                          x=0.02, y=0.98, xanchor="left", yanchor="top", showarrow=False,
                                          font=dict(size=12, color="#7a2e00"))]
    if current is not None and len(it):
        i = min(int(np.searchsorted(it, current)), len(it) - 1)
        layout["shapes"] = [dict(type="line", xref="x", yref="paper", x0=float(it[i]), x1=float(it[i]), y0=0, y1=1,
                                 line=dict(color=ROLE_COLORS["marker"], width=1.5, dash="dash"))]
        top = layout["yaxis"].get("range", [None, np.inf])[1]
        tr.append(dict(type="scatter", x=[it[i]], y=[min(v[i], top)], mode="markers", name=f"iteration {int(it[i])}",
                       cliponaxis=False,
                       marker=dict(color=ROLE_COLORS["marker"], size=11, symbol="circle-open", line=dict(width=2))))
    return make_figure(tr, layout, title=title, height=380)
