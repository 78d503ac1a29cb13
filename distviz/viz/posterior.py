"""Figures of the Posterior-regression page: WGBoost method comparison and the OOD-score demo."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .palette import OKABE_ITO, algo_color, algo_label
from .safe_text import plot_text
from .style import apply_style

__all__ = ["method_comparison_figure", "ood_figure", "gp_bands_figure", "comparison_table", "column_label"]


def method_comparison_figure(result: dict, *, title=None) -> go.Figure:
    """MMD^2 to the target against the round (log scale) and milliseconds per round, one colour per method.

    `result` is the output of the `wgboost-synthetic` study: {method: {"mmd2@r": v, ..., "ms_per_round": t}}.
    Its "authors@r" values (stars) were measured by running the authors' code: App. E shows only a figure.
    """
    fig = make_subplots(rows=1, cols=2, column_widths=[0.65, 0.35], horizontal_spacing=0.12,
                        subplot_titles=["MMD² to the target N(sin x, 0.5²) (lower is better)", "time per round"])
    for m, row in result.items():
        rs = sorted(int(k.split("@")[1]) for k in row if k.startswith("mmd2@"))
        vals = [row[f"mmd2@{r}"] for r in rs]
        fig.add_scatter(x=rs, y=vals, mode="lines+markers", name=algo_label(m), line=dict(color=algo_color(m), width=2.5),
                        legendgroup=m, row=1, col=1)
        ref = {int(k.split("@")[1]): v for k, v in row.items() if k.startswith("authors@")}
        if ref:
            fig.add_scatter(x=list(ref), y=list(ref.values()), mode="markers", name="authors' code (measured)", legendgroup=m,
                            marker=dict(color=algo_color(m), symbol="star-open", size=13, line=dict(width=2)),
                            showlegend=m == next(iter(result)), row=1, col=1)
        fig.add_bar(x=[algo_label(m)], y=[row.get("ms_per_round", np.nan)], marker_color=algo_color(m), showlegend=False,
                    legendgroup=m, row=1, col=2)
    fig.update_xaxes(title_text="boosting round", row=1, col=1)
    fig.update_yaxes(title_text="MMD² (Gaussian kernel, h = 0.025)", type="log", row=1, col=1)
    fig.update_yaxes(title_text="milliseconds per round", row=1, col=2)
    fig.update_xaxes(tickangle=-30, row=1, col=2)
    return apply_style(fig, title=title, height=430)


#: Column names of the `wgboost-synthetic` study as table headings; "@r" keys get "at r trees" appended.
_COLUMNS = {"mmd2": "MMD² at {r} trees", "authors": "authors' code: MMD² at {r} trees",
            "rel_diff": "relative difference to the authors' code at {r} trees", "ms_per_round": "ms per round",
            "rounds_used": "rounds used", "PR90_area": "90% region area", "PR90_cov": "90% region coverage"}


def column_label(key: str) -> str:
    """A study's column key as a heading for people: mmd2@10 -> "MMD² at 10 trees", ms_per_round -> "ms per round"."""
    name, _, r = str(key).partition("@")
    fmt = _COLUMNS.get(name)
    if fmt is None:
        return str(key).replace("_", " ")
    return fmt.format(r=r) if r else fmt.replace(" at {r} trees", "")


def comparison_table(result: dict):
    """The App. E study result as a DataFrame: one row per method (SKA, ...), columns with readable names,
    ordered MMD² by round, then the authors' values and differences, then time per round."""
    import pandas as pd

    df = pd.DataFrame(result).T
    def order(k):
        name, _, r = k.partition("@")
        return ({"mmd2": 0, "authors": 1, "rel_diff": 2}.get(name, 3), int(r) if r.isdigit() else 0)
    df = df[sorted(df.columns, key=order)]
    df.index = [algo_label(m) for m in df.index]
    return df.rename(columns=column_label).rename_axis("method").reset_index()


#: x-axis title of `ood_figure`: the paper's score (Sec. 4.3) is high where the particles agree, i.e. *in*
#: distribution, so the title says which end is which instead of "high: in-distribution" after a variance
OOD_AXIS = ("log10 OOD score = −log10 (largest variance of a class probability over the particles)<br>"
            "← out of distribution: particles disagree  ·  in distribution: particles agree →")


def ood_figure(score_in, score_out, *, title=None) -> go.Figure:
    """Histograms of the OOD score (log10) for in-distribution test rows and the held-out class."""
    a = np.log10(np.maximum(np.asarray(score_in, dtype=float), 1e-300))
    b = np.log10(np.maximum(np.asarray(score_out, dtype=float), 1e-300))
    lo, hi = float(min(a.min(), b.min())), float(max(a.max(), b.max()))
    size = (hi - lo) / 40 if hi > lo else 1.0
    fig = go.Figure()
    fig.add_histogram(x=a, name="in-distribution test rows", marker_color=OKABE_ITO["blue"], opacity=0.7,
                      xbins=dict(start=lo, end=hi + size, size=size))
    fig.add_histogram(x=b, name="held-out class (out of distribution)", marker_color=OKABE_ITO["vermillion"], opacity=0.7,
                      xbins=dict(start=lo, end=hi + size, size=size))
    fig.update_layout(barmode="overlay")
    fig.update_xaxes(title_text=OOD_AXIS)
    fig.update_yaxes(title_text="number of rows")
    return apply_style(fig, title=title, height=420)


def gp_bands_figure(ds, x, y, *, density=None, x_label="x", y_label="y", title=None) -> go.Figure:
    """Sparse-GP predictive means and bands per objective (from distviz.gp.compare_1d) over the data."""
    fig = go.Figure()
    xg = np.asarray(ds["x"].values, dtype=float)
    level = float(ds.attrs.get("level", 0.9))
    fig.add_scatter(x=np.asarray(x).reshape(-1), y=np.asarray(y).reshape(-1), mode="markers", name="data",
                    marker=dict(color="#7f7f7f", size=5, opacity=0.55))
    for obj in ds["objective"].values:
        key = {"elbo": "sgp_elbo", "dlm_log": "sgp_dlm"}.get(str(obj), str(obj))
        c = algo_color(key)
        sub = ds.sel(objective=obj)
        fig.add_scatter(x=np.r_[xg, xg[::-1]], y=np.r_[sub["upper"].values, sub["lower"].values[::-1]], fill="toself",
                        fillcolor=_rgba(c, 0.15), line=dict(width=0),
                        name=f"{algo_label(key)}: {int(level * 100)}% band", hoverinfo="skip")
        fig.add_scatter(x=xg, y=sub["mean"].values, mode="lines", line=dict(color=c, width=2.5), name=f"{algo_label(key)}: mean")
    if density is not None:
        gx, m, lo, hi, algo = density
        c = algo_color(algo)
        fig.add_scatter(x=gx, y=lo, mode="lines", line=dict(color=c, dash="dot", width=2),
                        name=f"{algo_label(algo)}: {int(level * 100)}% band")
        fig.add_scatter(x=gx, y=hi, mode="lines", line=dict(color=c, dash="dot", width=2), showlegend=False)
    fig.update_xaxes(title_text=plot_text(x_label))
    fig.update_yaxes(title_text=plot_text(y_label))
    return apply_style(fig, title=title, height=430)


def _rgba(color: str, alpha: float) -> str:
    from .palette import hex_to_rgba

    return hex_to_rgba(color, alpha)


def density_band(y_grid, density, level: float = 0.9):
    """(mean, lower, upper) per row of a gridded predictive density: mean and central `level` quantiles."""
    yg = np.asarray(y_grid, dtype=float)
    p = np.asarray(density, dtype=float)
    dy = np.gradient(yg)
    w = p * dy
    tot = np.maximum(w.sum(axis=1, keepdims=True), 1e-300)
    cdf = np.cumsum(w, axis=1) / tot
    a = (1 - level) / 2
    lo = yg[np.clip(np.argmax(cdf >= a, axis=1), 0, len(yg) - 1)]
    hi = yg[np.clip(np.argmax(cdf >= 1 - a, axis=1), 0, len(yg) - 1)]
    mean = (w * yg).sum(axis=1) / tot[:, 0]
    return mean, lo, hi
