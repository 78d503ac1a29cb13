"""Family explorer: a family's density or pmf at chosen parameters, with its natural and mean coordinates.

The user picks familiar parameters (a Poisson rate, a Normal's mean and standard deviation, ...);
`natural_from_conventional` turns them into the mean coordinates eta* = E[T(y)] and hands those to the
family's own `to_natural`, so the explorer uses exactly the library's maps.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from scipy.special import digamma

from distviz.errors import ConfigError

from .notation import math_names, math_text
from .palette import OKABE_ITO, ROLE_COLORS, hex_to_rgba
from .style import apply_style

__all__ = ["ParamSpec", "conventional_specs", "natural_from_conventional", "density_figure", "parameter_table",
           "summary_numbers", "describe_family", "is_discrete", "tidy", "format_number"]

#: relative size below which a displayed number is rounding noise of the maps and shown as 0
TINY = 1e-12


def tidy(values, scale=None):
    """`values` with entries below TINY x max(1, scale) in absolute value set to exactly 0 (float noise such as -3.7e-17)."""
    a = np.array(values, dtype=float, copy=True)
    ref = float(np.nanmax(np.abs(a[np.isfinite(a)]))) if scale is None and np.isfinite(a).any() else float(scale or 0.0)
    a[np.abs(a) < TINY * max(1.0, ref)] = 0.0
    return a


def format_number(v: float, digits: int = 4) -> str:
    """A short display string for a metric card: `digits` significant digits, rounding noise shown as 0."""
    v = float(tidy([v], scale=1.0)[0])
    return "—" if not np.isfinite(v) else f"{v:.{digits}g}"


def is_discrete(family) -> bool:
    """Whether `family` has a probability mass function (counts, binary, classes) rather than a density."""
    return _kind(family) in ("poisson", "bernoulli", "categorical")


def describe_family(family) -> str:
    """One plain sentence naming the family, T(y), the number of natural parameters (singular or plural) and the support."""
    d = int(family.dim)
    return (f"{family.name} family: T(y) = ({', '.join(math_names(family.param_names))}), "
            f"{d} natural parameter{'' if d == 1 else 's'}, support {math_text(family.support)}.")


@dataclass(frozen=True)
class ParamSpec:
    """One familiar parameter of a family: slider range, default and a short help text."""

    name: str
    label: str
    default: float
    lo: float
    hi: float
    step: float
    help: str


def _kind(family) -> str:
    """'mvn' for multivariate families, else the family's registry name."""
    return "mvn" if getattr(family, "y_dim", 1) > 1 else str(family.name).lower()


def conventional_specs(family) -> list[ParamSpec]:
    """The familiar parameters of `family` with slider ranges (used by the explorer's sliders)."""
    kind = _kind(family)
    if kind == "poisson":
        return [ParamSpec("rate", "rate λ (mean count)", 4.0, 0.1, 30.0, 0.1, "Expected number of events; also the variance.")]
    if kind == "bernoulli":
        return [ParamSpec("p", "success probability p", 0.3, 0.01, 0.99, 0.01, "Probability that y = 1.")]
    if kind == "normal":
        return [ParamSpec("mu", "mean μ", 0.0, -5.0, 5.0, 0.1, "Centre of the bell curve (units of y)."),
                ParamSpec("sigma", "standard deviation σ", 1.0, 0.1, 5.0, 0.05, "Spread of the bell curve (units of y).")]
    if kind == "gamma":
        return [ParamSpec("shape", "shape α", 2.0, 0.2, 20.0, 0.1, "α < 1: mode at 0; large α: nearly Normal."),
                ParamSpec("rate", "rate β", 1.0, 0.1, 10.0, 0.1, "Inverse scale: the mean is α / β.")]
    if kind == "exponential":
        return [ParamSpec("rate", "rate λ", 1.0, 0.1, 10.0, 0.1, "Inverse mean waiting time: the mean is 1 / λ.")]
    if kind == "categorical":
        K = int(getattr(family, "K", family.dim + 1))
        return [ParamSpec(f"w{k}", f"weight of class {k}", float(K - k), 0.05, 10.0, 0.05,
                          "Unnormalised weight; probabilities are weights / sum of weights.") for k in range(K)]
    if kind == "mvn":
        P = int(family.y_dim)
        specs = []
        for i in range(P):
            specs.append(ParamSpec(f"mu{i + 1}", f"mean μ{i + 1}", 0.0, -5.0, 5.0, 0.1, f"Centre of output {i + 1}."))
        for i in range(P):
            specs.append(ParamSpec(f"sigma{i + 1}", f"std σ{i + 1}", 1.0, 0.1, 5.0, 0.05, f"Spread of output {i + 1}."))
        lo = -1.0 / (P - 1) + 0.01 if P > 1 else -0.95
        specs.append(ParamSpec("rho", "correlation ρ", 0.5, round(max(lo, -0.95), 2), 0.95, 0.01,
                               "Correlation between every pair of outputs."))
        return specs
    raise ConfigError(f"the explorer does not know the family {family.name!r}; choose one of the listed families.")


def natural_from_conventional(family, values: dict) -> tuple[np.ndarray, np.ndarray]:
    """(eta, eta*) as rows of shape (1, dim) for the familiar parameters `values` (see conventional_specs)."""
    kind = _kind(family)
    v = {s.name: float(values.get(s.name, s.default)) for s in conventional_specs(family)}
    if kind in ("poisson", "bernoulli"):
        mean = np.array([[v["rate" if kind == "poisson" else "p"]]])
    elif kind == "exponential":
        mean = np.array([[1.0 / v["rate"]]])
    elif kind == "gamma":
        a, b = v["shape"], v["rate"]
        e = {"log y": digamma(a) - np.log(b), "y": a / b}
        mean = np.array([[e[s] for s in family.param_names]])
    elif kind == "categorical":
        w = np.array([v[f"w{k}"] for k in range(family.dim + 1)])
        mean = (w / w.sum())[None, :-1]
    elif kind in ("normal", "mvn"):
        # T(y) is at most quadratic, so E[T(y)] is exactly the average of T over the 2P sigma points
        # mu +- sqrt(P) L e_i (L the Cholesky factor of Sigma); this is independent of T's ordering.
        if kind == "normal":
            mu, L = np.array([v["mu"]]), np.array([[v["sigma"]]])
        else:
            P = int(family.y_dim)
            mu = np.array([v[f"mu{i + 1}"] for i in range(P)])
            sd = np.array([v[f"sigma{i + 1}"] for i in range(P)])
            R = np.full((P, P), v["rho"])
            np.fill_diagonal(R, 1.0)
            try:
                L = np.linalg.cholesky(R * np.outer(sd, sd))
            except np.linalg.LinAlgError:
                raise ConfigError(f"correlation ρ = {v['rho']:g} does not give a valid covariance for "
                                  f"{P} outputs; choose ρ between {-1 / (P - 1):.2f} and 1.") from None
        P = mu.size
        pts = np.concatenate([mu + np.sqrt(P) * L.T, mu - np.sqrt(P) * L.T])
        y = pts[:, 0] if kind == "normal" else pts
        mean = family.sufficient_stats(y).mean(axis=0, keepdims=True)
    else:  # pragma: no cover - conventional_specs already raised
        raise ConfigError(f"unknown family {family.name!r}")
    eta = family.to_natural(mean)
    return np.asarray(eta, dtype=float).reshape(1, -1), np.asarray(mean, dtype=float).reshape(1, -1)


def _discrete_support(family, eta) -> np.ndarray | None:
    """Support points to draw as bars, or None for continuous families."""
    kind = _kind(family)
    if kind == "bernoulli":
        return np.array([0.0, 1.0])
    if kind == "categorical":
        return np.arange(family.dim + 1, dtype=float)
    if kind == "poisson":
        m, var = family.mean_and_variance(eta)
        hi = float(m[0] + 5 * np.sqrt(var[0]) + 3)
        return np.arange(0.0, np.ceil(hi) + 1)
    return None


def _continuous_grid(family, eta, n: int = 400) -> np.ndarray:
    """A grid of y covering the bulk of a continuous univariate family."""
    m, var = family.mean_and_variance(eta)
    m, sd = float(np.ravel(m)[0]), float(np.sqrt(np.ravel(var)[0]))
    if _kind(family) in ("gamma", "exponential"):
        return np.linspace(1e-3 * max(m, 1e-3), m + 5 * sd, n)
    return np.linspace(m - 4.5 * sd, m + 4.5 * sd, n)


def density_figure(family, eta, *, n_samples: int = 4000, seed: int = 0, title: str | None = None) -> go.Figure:
    """Density (line) or pmf (bars) of `family` at one natural parameter, over a histogram of draws."""
    eta = np.asarray(eta, dtype=float).reshape(1, -1)
    rng = np.random.default_rng(seed)
    draws = np.asarray(family.sample(np.repeat(eta, n_samples, axis=0), rng), dtype=float)
    fig = go.Figure()
    blue = OKABE_ITO["blue"]
    if _kind(family) == "mvn":
        return _mvn_figure(family, eta, draws, title)
    ys = _discrete_support(family, eta)
    if ys is not None:
        p = np.exp(family.logpdf(ys, np.repeat(eta, ys.size, axis=0)))
        freq = np.array([(draws == y).mean() for y in ys])
        fig.add_bar(x=ys, y=freq, name=f"{n_samples} draws (frequency)", marker_color=hex_to_rgba(OKABE_ITO["orange"], 0.55))
        fig.add_scatter(x=ys, y=p, mode="markers", name="pmf p(y | η)", marker=dict(color=blue, size=10, symbol="diamond"))
        fig.update_layout(bargap=0.25)
        ylab = "probability"
        top = max(float(np.nanmax(p)), float(freq.max()))
    else:
        ys = _continuous_grid(family, eta)
        p = np.exp(family.logpdf(ys, np.repeat(eta, ys.size, axis=0)))
        lo, hi = ys[0], ys[-1]
        fig.add_histogram(x=draws[(draws >= lo) & (draws <= hi)], histnorm="probability density",
                          xbins=dict(start=lo, end=hi, size=(hi - lo) / 60), name=f"{n_samples} draws",
                          marker_color=hex_to_rgba(OKABE_ITO["orange"], 0.45))
        fig.add_scatter(x=ys, y=p, mode="lines", name="density p(y | η)", line=dict(color=blue, width=3))
        ylab = "density (per unit of y)"
        top = float(np.nanmax(p[np.isfinite(p)])) if np.isfinite(p).any() else 1.0
    m, var = family.mean_and_variance(eta)
    m0 = float(np.ravel(m)[0]) if _kind(family) != "categorical" else None
    if m0 is not None:
        fig.add_vline(x=m0, line=dict(color=ROLE_COLORS["marker"], dash="dash", width=1.5),
                      annotation_text=f"E[y] = {m0:.3g}", annotation_position="top right")
    fig.update_xaxes(title_text="y (outcome)")
    fig.update_yaxes(title_text=ylab, range=[0, 1.2 * top] if np.isfinite(top) and top > 0 else None)  # room for the E[y] label
    what = "probability mass function" if is_discrete(family) else "density"
    # the detail on a second line: the chart is ~370 px wide at 1024x768 and plotly never wraps a title
    return apply_style(fig, title=title or f"{family.name}: {what}<br><sup>at the chosen parameters</sup>", height=420)


def _mvn_figure(family, eta, draws, title):
    """Contour of a bivariate density (first two outputs) with a scatter of draws."""
    P = draws.shape[1]
    if P != 2:
        raise ConfigError("the density explorer draws the bivariate Normal only; choose P = 2.")
    k = min(600, draws.shape[0])
    shown = draws[:k]
    # the heat map covers every draw that is drawn on it (and the central 99% of all draws), with a margin
    lo = np.minimum(np.percentile(draws, 0.5, axis=0), shown.min(axis=0))
    hi = np.maximum(np.percentile(draws, 99.5, axis=0), shown.max(axis=0))
    pad = 0.08 * (hi - lo)
    g1 = np.linspace(lo[0] - pad[0], hi[0] + pad[0], 90)
    g2 = np.linspace(lo[1] - pad[1], hi[1] + pad[1], 90)
    Y1, Y2 = np.meshgrid(g1, g2)
    pts = np.column_stack([Y1.ravel(), Y2.ravel()])
    dens = np.exp(family.logpdf(pts, np.repeat(eta, pts.shape[0], axis=0))).reshape(Y1.shape)
    fig = go.Figure()
    fig.add_contour(x=g1, y=g2, z=dens, colorscale="Cividis", contours=dict(coloring="heatmap"),
                    colorbar=dict(title="density"), name="density", showscale=True)
    fig.add_scatter(x=shown[:, 0], y=shown[:, 1], mode="markers", name=f"{k} draws",
                    marker=dict(color=OKABE_ITO["orange"], size=4, opacity=0.6))
    fig.update_xaxes(title_text="y1 (output 1)", range=[float(g1[0]), float(g1[-1])])
    fig.update_yaxes(title_text="y2 (output 2)", scaleanchor="x", range=[float(g2[0]), float(g2[-1])])
    return apply_style(fig, title=title or "bivariate Normal: density and draws", height=460)


def parameter_table(family, eta) -> pd.DataFrame:
    """Natural eta and mean eta* = E[T(y)] side by side, one row per component of T(y)."""
    eta = np.asarray(eta, dtype=float).reshape(1, -1)
    mean = np.asarray(family.to_mean(eta), dtype=float).reshape(-1)
    names = math_names(family.param_names)
    return pd.DataFrame({
        "T(y) component": names,
        "natural η": tidy(eta.reshape(-1)),
        "mean η* = E[T(y)]": tidy(mean),
    })


def summary_numbers(family, eta) -> dict:
    """A few scalar summaries for metric cards: E[y], Var[y], A(eta) and the entropy-like A*(eta*)."""
    eta = np.asarray(eta, dtype=float).reshape(1, -1)
    out = {}
    if _kind(family) not in ("categorical", "mvn"):
        m, var = family.mean_and_variance(eta)
        out["E[y]"] = float(np.ravel(m)[0])
        out["Var[y]"] = float(np.ravel(var)[0])
    out["A(η)"] = float(np.ravel(family.log_partition(eta))[0])
    out["A*(η*)"] = float(np.ravel(family.conjugate(family.to_mean(eta)))[0])
    return {k: float(tidy([v], scale=1.0)[0]) for k, v in out.items()}
