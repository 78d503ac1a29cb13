"""Model checks of predictive distributions on held-out rows, as numbers and plotly figures.

:func:`model_checks` scores one method's predicted laws (a ``predict_dist`` object, ``distviz.families.dist``)
at the held-out observations: the probability integral transform (PIT, ``distviz.metrics.pit``), the coverage
of the central intervals at several nominal levels (``distviz.metrics.coverage``), the mean CRPS (the energy
score for a multivariate Normal, ``distviz.metrics.crps``) and the mean negative log-likelihood.
:func:`pit_histogram` and :func:`coverage_figure` draw several methods' checks in one chart each, with the
band a calibrated model's sampling variability fills (binomial, +-2 standard deviations).  No Streamlit here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from distviz.families.dist import MultivariateNormalDist
from distviz.metrics import coverage, crps, pit
from distviz.metrics.calibration import observed

from .palette import ALGO_COLORS, OKABE_ITO, ROLE_COLORS, algo_color, hex_to_rgba
from .safe_text import plot_text
from .style import make_figure

__all__ = ["NOMINAL_LEVELS", "ModelChecks", "model_checks", "pit_counts", "pit_histogram", "coverage_figure",
           "checks_frame", "drifter_checks"]

#: Nominal levels of the coverage curve: 0.1, 0.2, ..., 0.9 and 0.95.
NOMINAL_LEVELS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)


@dataclass(frozen=True)
class ModelChecks:
    """One method's checks on held-out rows (:func:`model_checks`).

    Attributes
    ----------
    name : str
        The method's name (its colour comes from ``distviz.viz.palette`` when it is a known algorithm).
    pit : ndarray of shape (rows,)
        PIT values in [0, 1].
    levels : ndarray of shape (L,)
        Nominal levels of the central intervals (prediction ellipsoids for a multivariate Normal).
    coverage : ndarray of shape (L,)
        Share of rows inside each level's interval.
    crps : float
        Mean CRPS (mean energy score for a multivariate Normal), in the units of y.
    nll : float
        Mean negative log-likelihood, nats per row.
    n : int
        Number of held-out rows.
    multivariate : bool
        True for a multivariate Normal (PIT of the squared Mahalanobis distance, ellipsoids, energy score).
    """

    name: str
    pit: np.ndarray
    levels: np.ndarray
    coverage: np.ndarray
    crps: float
    nll: float
    n: int
    multivariate: bool = False

    @property
    def score_name(self) -> str:
        """'energy score' for a multivariate Normal, else 'CRPS'."""
        return "energy score" if self.multivariate else "CRPS"


def model_checks(dist, y, *, name: str, levels=NOMINAL_LEVELS, n_samples: int = 500,
                 random_state=0) -> ModelChecks:
    """PIT, coverage at `levels`, mean CRPS and mean NLL of the predicted laws `dist` at the observations `y`.

    Parameters
    ----------
    dist : distribution object
        The predicted laws of the held-out rows (an estimator's ``predict_dist(X_test)``).
    y : array-like of shape (rows,) or (rows, P)
        The held-out observations.
    name : str
        The method's name, kept for the figures and tables.
    levels : sequence of float, default=NOMINAL_LEVELS
        Nominal levels of the coverage curve, each strictly between 0 and 1.
    n_samples : int, default=500
        Draws of the sample-based CRPS / energy score where no closed form applies (``distviz.metrics.crps``).
    random_state : int, Generator or None, default=0
        Seed of the randomised PIT of a discrete law and of those draws.

    Returns
    -------
    ModelChecks
        The PIT values (Gneiting, Balabdaoui & Raftery 2007, Sec. 3), the coverage per level, the mean CRPS
        (Gneiting & Raftery 2007, eq. 20-22) and the mean negative log predictive density
        -1/n sum_i log p(y_i | x_i).
    """
    y = observed(dist, y)
    rng = np.random.default_rng(random_state)
    lv = np.asarray(levels, dtype=float)
    return ModelChecks(name=str(name), pit=np.asarray(pit(dist, y, random_state=rng), dtype=float), levels=lv,
                       coverage=np.asarray(coverage(dist, y, lv), dtype=float),
                       crps=float(np.mean(crps(dist, y, n_samples=n_samples, random_state=rng))),
                       nll=float(-np.mean(dist.logpdf(y))), n=int(len(y)),
                       multivariate=isinstance(dist, MultivariateNormalDist))


def pit_counts(values, bins: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """Counts of PIT values in `bins` equal bins of [0, 1] (the last bin closed): (edges (bins + 1,), counts (bins,))."""
    edges = np.linspace(0.0, 1.0, int(bins) + 1)
    counts, _ = np.histogram(np.clip(np.asarray(values, dtype=float), 0.0, 1.0), bins=edges)
    return edges, counts


#: colours for methods without a fixed algorithm colour, in order (Okabe-Ito; yellow last: faint on white)
_SPARE = [OKABE_ITO[k] for k in ("blue", "orange", "sky", "vermillion", "black", "yellow")]


def _colors(checks: Sequence[ModelChecks]) -> list[str]:
    """A colour per method: its fixed algorithm colour when known (the truth's grey for an oracle), else the next
    Okabe-Ito colour no other method uses."""
    out: list[str] = []
    for c in checks:
        col = ALGO_COLORS["truth"] if c.name.lower() == "oracle" else algo_color(c.name)
        if col == "#7f7f7f" or col in out:
            col = next((s for s in _SPARE if s not in out), col)
        out.append(col)
    return out


def pit_histogram(checks: Sequence[ModelChecks], bins: int = 10, *, title: str | None = None):
    """Histogram of the PIT values of each method (density: 1 is uniform), with the uniform law's +-2 sd band.

    Parameters
    ----------
    checks : sequence of ModelChecks
        One per method; bars are grouped per bin.
    bins : int, default=10
        Equal bins of [0, 1].
    title : str, optional
        Chart title (the default names the row count).

    Returns
    -------
    plotly.graph_objects.Figure
        Bars of count / (rows x bin width) per bin, so a calibrated model's bars scatter around 1: the grey
        band is 1 +- 2 sqrt(bins (1 - 1 / bins) / rows), two binomial standard deviations of a bin's density
        under uniform PIT values.  A U shape means the predicted laws are too narrow, a hump too wide, a
        slope a biased centre.
    """
    traces: list[dict] = []
    n = max((c.n for c in checks), default=0)
    if n:
        p = 1.0 / bins
        half = 2.0 * np.sqrt(p * (1.0 - p) / n) / p
        for i, lvl in enumerate((1 - half, 1 + half)):
            traces.append(dict(type="scatter", x=[0, 1], y=[lvl, lvl], mode="lines", name="uniform ±2 sd",
                               legendgroup="band", showlegend=i == 0, hoverinfo="skip",
                               line=dict(color=ALGO_COLORS["truth"], dash="dot", width=1.2)))
    one = len(checks) == 1
    for c, col in zip(checks, _colors(checks)):
        edges, counts = pit_counts(c.pit, bins)
        dens = counts / (max(c.n, 1) * np.diff(edges))
        hover = dict(customdata=np.column_stack([edges[:-1], edges[1:], counts]),
                     hovertemplate=plot_text(c.name) + "<br>PIT %{customdata[0]:.1f}–%{customdata[1]:.1f}: "
                                   "%{customdata[2]} rows<br>density %{y:.2f}<extra></extra>")
        if one:   # one method: bars
            traces.append(dict(type="bar", x=0.5 * (edges[:-1] + edges[1:]), y=dens, name=plot_text(c.name),
                               marker=dict(color=hex_to_rgba(col, 0.75), line=dict(color=col, width=1)), **hover))
        else:     # several: one step outline each (grouped bars of near-equal heights cannot be told apart)
            traces.append(dict(type="scatter", x=edges, y=np.r_[dens, dens[-1]], mode="lines", name=plot_text(c.name),
                               line=dict(color=col, width=2, shape="hv"), hoverinfo="skip"))
            traces.append(dict(type="scatter", x=0.5 * (edges[:-1] + edges[1:]), y=dens, mode="markers",
                               marker=dict(color=col, size=6), showlegend=False, name=plot_text(c.name), **hover))
    traces.append(dict(type="scatter", x=[0, 1], y=[1, 1], mode="lines", name="uniform (calibrated)",
                       line=dict(color=ROLE_COLORS["marker"], dash="dash", width=1.5), hoverinfo="skip"))
    multi = any(c.multivariate for c in checks)
    xlab = "PIT: χ² cdf of the Mahalanobis distance² (probability)" if multi else "PIT value F(y | x) (probability)"
    layout = dict(bargap=0.05,
                  xaxis=dict(title=dict(text=xlab), range=[0, 1], dtick=1.0 / bins if bins <= 10 else None),
                  yaxis=dict(title=dict(text="density (rows per bin ÷ expected; 1 = uniform)"), rangemode="tozero"))
    return make_figure(traces, layout, title=title or f"PIT histogram, {n:,} held-out rows")


def coverage_figure(checks: Sequence[ModelChecks], *, title: str | None = None):
    """Observed coverage of the central intervals against their nominal level, one line per method.

    Parameters
    ----------
    checks : sequence of ModelChecks
        One per method, each with its levels and coverages.
    title : str, optional
        Chart title.

    Returns
    -------
    plotly.graph_objects.Figure
        The diagonal (a calibrated model), the band level +- 2 sqrt(level (1 - level) / rows) a calibrated model's
        coverage scatters in (binomial), and each method's coverage; below the diagonal the intervals are too
        narrow, above too wide.
    """
    n = max((c.n for c in checks), default=0)
    grid = np.linspace(0.0, 1.0, 51)
    traces: list[dict] = []
    if n:
        half = 2.0 * np.sqrt(grid * (1.0 - grid) / n)
        traces.append(dict(type="scatter", x=np.r_[grid, grid[::-1]], y=np.r_[grid - half, (grid + half)[::-1]],
                           fill="toself", mode="lines", line=dict(width=0), fillcolor=ROLE_COLORS["truth_band"],
                           name="calibrated ±2 sd", hoverinfo="skip"))
    traces.append(dict(type="scatter", x=[0, 1], y=[0, 1], mode="lines", name="nominal = observed",
                       line=dict(color=ROLE_COLORS["marker"], dash="dash", width=1.5), hoverinfo="skip"))
    for c, col in zip(checks, _colors(checks)):
        traces.append(dict(type="scatter", x=c.levels, y=c.coverage, mode="lines+markers", name=plot_text(c.name),
                           line=dict(color=col, width=2), marker=dict(color=col, size=7),
                           hovertemplate=plot_text(c.name) + "<br>nominal %{x:.0%}: %{y:.1%} of rows covered"
                                                             "<extra></extra>"))
    multi = any(c.multivariate for c in checks)
    what = "prediction ellipsoid" if multi else "central interval"
    layout = dict(xaxis=dict(title=dict(text=f"nominal level of the {what} (probability)"), range=[0, 1],
                             tickformat=".0%"),
                  yaxis=dict(title=dict(text="observed coverage (share of held-out rows)"), range=[0, 1],
                             tickformat=".0%"))
    return make_figure(traces, layout, title=title or f"Coverage vs nominal level, {n:,} held-out rows")


def checks_frame(checks: Sequence[ModelChecks], units: str = "", levels=None):
    """One row per method: held-out rows, mean NLL, mean CRPS / energy score and the coverage at each level.

    Parameters
    ----------
    checks : sequence of ModelChecks
    units : str, default=""
        Units of y, written into the CRPS column's heading (e.g. ``"cm/s"``).
    levels : sequence of float, optional
        The nominal levels to give a coverage column (those of the checks that are among them); all by default.

    Returns
    -------
    pandas.DataFrame
    """
    import pandas as pd

    rows = []
    for c in checks:
        score = f"{c.score_name} ({units})" if units else c.score_name
        row = {"method": c.name, "held-out rows": c.n, "NLL (nats)": c.nll, score: c.crps}
        row.update({f"coverage {lv:.0%}": cv for lv, cv in zip(c.levels, c.coverage)
                    if levels is None or np.any(np.isclose(lv, levels))})
        rows.append(row)
    return pd.DataFrame(rows)


def drifter_checks(pred, *, levels=NOMINAL_LEVELS, n_samples: int = 200, random_state=0) -> list[ModelChecks]:
    """:func:`model_checks` of every method of a drifter comparison with a bivariate Normal per test row.

    Parameters
    ----------
    pred : xarray.Dataset
        ``DrifterComparison.predictions``: the observed ``u``, ``v`` (cm/s) and per method ``mean_<m>`` and
        ``cov_<m>`` over the test rows (a mixture average, which has only ``nll_<m>``, is left out).
    levels, n_samples, random_state
        As :func:`model_checks` (the energy score is estimated from `n_samples` draws per row; its Monte Carlo
        error shrinks further in the mean over the test rows).

    Returns
    -------
    list of ModelChecks
        One per method, in the order of the comparison; PIT of the squared Mahalanobis distance, coverage of
        the prediction ellipses, energy score in cm/s, NLL in nats (velocities in cm/s).
    """
    y = np.column_stack([np.asarray(pred["u"].values, dtype=float), np.asarray(pred["v"].values, dtype=float)])
    out = []
    for k in pred.data_vars:
        m = str(k)[5:]
        if str(k).startswith("mean_") and f"cov_{m}" in pred:
            dist = MultivariateNormalDist(np.asarray(pred[k].values, dtype=float),
                                          np.asarray(pred[f"cov_{m}"].values, dtype=float))
            out.append(model_checks(dist, y, name=m, levels=levels, n_samples=n_samples, random_state=random_state))
    return out
