"""`distviz lessons check`: put every lesson step's view into its state, as its "show me" link does, and evaluate
the step's claims (distviz.ui.claims) on what that view draws.

A step's URL parameters become the page's fit through the functions the pages themselves call, without Streamlit
running: `fits.config_from_params` and `fits.fit_result` (Lab, Evolution, Split gains; the Evolution geometry panel's
MGD and NGD companions with `FitConfig.with_algorithm`), `posterior.cde_config_from_params` and `ood_demo`,
`drifters.run_comparison` and `explorer.explorer_from_params`.  Every fit goes through the fit governor and the
process-wide result store of distviz.ui.jobs, so steps with the same fit settings share one fit.  The quantities
are read from the same traces and helpers the pages draw from (distviz.viz).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from distviz.errors import ConfigError, DistvizError
from distviz.viz.typed_arrays import decode_typed_array, is_typed_array

from .claims import Claim, Quantity


class _Unavailable(ConfigError):
    """A quantity the step's view does not show (e.g. a particle spread of a boosting law)."""


def _arg(q: Quantity) -> str:
    """The argument of `q` (parse_quantity made sure a quantity that needs one has one)."""
    if q.arg is None:
        raise _Unavailable(f"{q} needs an argument.")
    return q.arg


def _coord(q: Quantity, v) -> float:
    v = np.asarray(v, dtype=float).reshape(-1)
    i = int(_arg(q)) - 1
    if not 0 <= i < v.size:
        raise _Unavailable(f"{q} asks for coordinate {i + 1} of {v.size}.")
    return float(v[i])


class _ExplorerView:
    def __init__(self, params: dict):
        from .explorer import explorer_from_params

        _, self.eta, self.mean = explorer_from_params(params)

    def value(self, q: Quantity) -> float:
        return _coord(q, self.eta if q.name == "eta" else self.mean)


def _round(q: Quantity, model, trace) -> int:
    """The round index `q.round` names ('best': the model's best validation round, 'last': the trace's last)."""
    last = int(trace["round"].values[-1])
    if q.round == "last":
        return last
    if q.round == "best":
        best = getattr(model, "best_iteration_", None)
        if best is None:
            raise _Unavailable(f"{q}: this fit has no best validation round.")
        return int(best)
    r = int(str(q.round))
    if r > last:
        raise _Unavailable(f"{q}: the fit has {last} rounds.")
    return r


def _plotly_values(v) -> np.ndarray:
    """The numbers of a plotly data array of a figure distviz drew: a list, an array or plotly's typed-array form
    {"dtype", "bdata" (base64), "shape"}, flattened; only numeric dtypes are read."""
    if is_typed_array(v):
        dtype = np.dtype(str(v.get("dtype", "")))
        if dtype.kind not in "iuf":
            raise _Unavailable(f"The figure holds a {dtype} array, not numbers.")
        return decode_typed_array(v, dtype).astype(float).reshape(-1)
    return np.asarray(v, dtype=float).reshape(-1)


def _rises(series) -> float:
    s = np.asarray(series, dtype=float)
    s = s[np.isfinite(s)]
    return float(np.count_nonzero(np.diff(s) > 0))


def _bend(path: np.ndarray, scale: np.ndarray) -> float:
    """How far a 2-D path strays from the straight line between its ends: the largest distance of a point from
    that line over the line's length, in axis units (each axis divided by `scale`, the span the chart shows);
    0 for a straight path, even one that goes back and forth along its line."""
    p = np.asarray(path, dtype=float) / scale
    chord = p[-1] - p[0]
    length = float(np.linalg.norm(chord))
    if length == 0:
        return math.inf if np.ptp(p, axis=0).any() else 0.0
    rel = p - p[0]
    dist = np.abs(rel[:, 0] * chord[1] - rel[:, 1] * chord[0]) / length
    return float(np.max(dist) / length)


def page_fit_config(page: str, params: dict):
    """The FitConfig of the fit that `page` draws in the state of the URL parameters `params` (``{}``: the page's
    default view), as the page's own widgets read them; None where the view is not one such fit (the Explorer,
    the Drifters page, the Posterior page's method comparison and OOD demo).

    Raises
    ------
    ConfigError
        When `params` name a setting no URL can name (an uploaded data set).
    """
    from . import algorithms, fits

    if page in ("lab", "evolution"):
        return fits.config_from_params(params)
    if page == "split_gains":
        return fits.config_from_params(params, algorithms=algorithms.keys(lambda a: a.offers_split_gains),
                                       own=fits.SPLIT_OWN)
    if page == "posterior":
        from .params import applied_value
        from .posterior import SECTIONS, cde_config_from_params

        if applied_value(params, "section", SECTIONS[0], options=SECTIONS) != "conditional density":
            return None
        return cde_config_from_params(params)
    return None


class _FitView:
    """A Lab / Evolution / Split-gains / Posterior (conditional density) view: the page's fit and its companions."""

    def __init__(self, page: str, params: dict):
        self.page, self.params = page, params
        self.cfg = page_fit_config(page, params)
        self._fits: dict[str, Any] = {}

    def fit(self, algo: str | None = None):
        """The page's fit, or the same settings with `algo` (a companion fit, as the geometry panel makes)."""
        from . import algorithms
        from .fits import fit_result

        cfg = self.cfg
        if algo is not None:
            cfg = cfg.with_algorithm(algorithms.wg_method(algo).key if algo in algorithms.wg_methods()
                                     and self.page == "posterior" else algo)
        if cfg.algorithm not in self._fits:
            self._fits[cfg.algorithm] = fit_result(cfg)
        return self._fits[cfg.algorithm]

    def value(self, q: Quantity) -> float:
        res = self.fit(q.fit)
        model, trace = res.model, getattr(res.model, "trace_", None)
        if q.name == "warnings":
            from .fits import fit_warnings
            return float(len(fit_warnings(res)))
        if trace is None:
            raise _Unavailable(f"{q}: this fit ({res.config.algorithm}) has no trace.")
        if q.name in ("train_nll", "valid_nll", "entropy"):
            if q.name not in trace:
                raise _Unavailable(f"{q}: this fit's trace has no {q.name}.")
            return float(trace[q.name].values[_round(q, model, trace)])
        if q.name == "best_round":
            return float(_round(Quantity(q.name, round="best"), model, trace))
        if q.name == "rises":
            if q.arg not in trace:
                raise _Unavailable(f"{q}: this fit's trace has no {q.arg}.")
            return _rises(trace[q.arg].values)
        if q.name.startswith("particle"):
            return self._particles(q, res, trace)
        if q.name == "pred_mean":
            return float(np.ravel(model.predict_mean(np.array([[float(_arg(q))]])))[0])
        if q.name == "density_peak":
            return self._density_peak(q, res)
        if q.name in ("path_eta", "path_eta_star", "truth_eta", "truth_eta_star", "bend"):
            return self._geometry(q, res)
        return self._split(q, res, trace)

    # -- WGBoost particles (the particles figure draws the first parameter: the location)
    def _particles(self, q: Quantity, res, trace) -> float:
        if not res.algo.has_particles:
            raise _Unavailable(f"{q}: the fit is not WGBoost, so it has no particles.")
        P = np.asarray(trace["particles"].values, dtype=float)
        if q.name == "particles":
            return float(P.shape[2])
        r = _round(q, res.model, trace)
        loc = P[..., 0]
        if q.name == "particle_spread":
            return float(np.mean(np.std(loc[r], axis=1)))
        return float(np.mean(np.abs(loc[r] - loc[0])))

    # -- the predictive-density heat map, read from the figure the page draws
    def _density_peak(self, q: Quantity, res) -> float:
        figs = res.algo.lab_figures(res.model, res.data)
        heat = [t for f in figs if "density" in (f.layout.title.text or "") for t in f.data if t.type == "heatmap"]
        if not heat:
            raise _Unavailable(f"{q}: this fit draws no predictive density.")
        return float(np.nanmax(_plotly_values(heat[0].z)))

    # -- the Evolution page's geometry panel
    def x0(self, res) -> float:
        from .params import applied_value

        xt = res.model.trace_["X"].values[:, 0]
        lo, hi = float(np.min(xt)), float(np.max(xt))
        return float(applied_value(self.params, "x0", round(lo + 0.3 * (hi - lo), 6), lo=lo, hi=hi))

    def _geometry(self, q: Quantity, res) -> float:
        from distviz.viz import results as vr

        if not res.algo.offers_geometry:
            raise _Unavailable(f"{q}: the geometry panel draws exponential-family laws only.")
        base = self.fit()
        from .algorithms import GEOMETRY_PAIR

        models = {a: self.fit(a).model for a in dict.fromkeys([base.config.algorithm, *GEOMETRY_PAIR])}
        paths, teta, tstar = vr.geometry_paths(models, self.x0(base), base.data)
        if q.name in ("truth_eta", "truth_eta_star"):
            t = teta if q.name == "truth_eta" else tstar
            if t is None:
                raise _Unavailable(f"{q}: these data have no known truth.")
            return _coord(q, t)
        pe, ps = paths[res.config.algorithm]
        if q.name != "bend":
            return _coord(q, (pe if q.name == "path_eta" else ps)[_round(q, res.model, res.model.trace_)])
        col = 0 if q.arg == "eta" else 1
        drawn = [np.asarray(p[col], dtype=float) for p in paths.values()]
        target = teta if col == 0 else tstar
        if drawn[0].shape[1] < 2:   # one coordinate: drawn against the round
            drawn = [np.column_stack([np.arange(len(d)), d[:, 0]]) for d in drawn]
            target = None
        pts = np.vstack([d[:, :2] for d in drawn] + ([np.asarray(target, dtype=float).reshape(1, -1)[:, :2]]
                                                     if target is not None else []))
        span = np.ptp(pts, axis=0)
        mine = np.asarray((pe if col == 0 else ps), dtype=float)
        mine = mine[:, :2] if mine.shape[1] >= 2 else np.column_stack([np.arange(len(mine)), mine[:, 0]])
        return _bend(mine, np.where(span > 0, span, 1.0))

    # -- the Split gains page's trees
    def _split(self, q: Quantity, res, trace) -> float:
        from distviz.viz import trees as vt

        if q.name == "leafwise_nll":
            from .lab import standalone_trees
            from .params import applied_value

            depth = int(applied_value(self.params, "tdepth", 3, lo=1, hi=6))
            return float(standalone_trees(res.config, None, depth)[3][q.arg]["nll"])
        if "node_gain" not in trace:
            raise _Unavailable(f"{q}: this fit's trace stores no trees.")
        gain, feat = trace["node_gain"].values, trace["node_feature"].values
        ok = np.isfinite(gain) & (feat >= 0)
        if "node_is_leaf" in trace:
            ok &= trace["node_is_leaf"].values == 0
        if q.name == "gain_rank_corr":
            from scipy.stats import spearmanr

            reg = trace["node_gain_reg"].values if "node_gain_reg" in trace else gain
            ent = trace["node_gain_ent"].values
            both = ok & np.isfinite(reg) & np.isfinite(ent)
            return float(spearmanr(reg[both], ent[both])[0])
        r = max(_round(q, res.model, trace), 1)   # the page shows round 1 for round 0
        if q.name == "importance":
            return float(vt.importance_shares(trace)[r][int(_arg(q)[1:]) - 1])
        if q.name == "root_feature":
            return float(feat[r, 0] + 1) if ok[r, 0] else 0.0
        if q.name == "max_gain":
            return float(np.max(gain[r][ok[r]])) if ok[r].any() else 0.0
        if q.name == "splits":
            return float(np.count_nonzero(ok[r]))
        if q.name == "noise_splits":
            return float(np.count_nonzero(ok[r] & (feat[r] > 0)))
        raise _Unavailable(f"{q} is not shown on this page.")


class _OODView:
    def __init__(self, params: dict):
        from .params import applied_value
        from .posterior import OOD_DEFAULT_ROUNDS, OOD_ROUNDS, ood_demo

        self.o = ood_demo(int(applied_value(params, "ood_rounds", OOD_DEFAULT_ROUNDS, options=OOD_ROUNDS)))

    def value(self, q: Quantity) -> float:
        if q.name in ("pr_auc", "accuracy"):
            return float(self.o[q.name])
        if q.name == "median_score":
            return float(np.median(self.o["score_in" if q.arg == "in" else "score_out"]))
        raise _Unavailable(f"{q} is not shown in the OOD demo.")


class _DriftersView:
    def __init__(self, params: dict):
        from distviz.experiments.drifters import APP_DEFAULTS as D

        from .drifters import RATES, REGIONS, ROUNDS, TRAIN, available_sources, run_comparison
        from .params import applied_value

        sources = available_sources()
        source = applied_value(params, "source", sources[0], options=sources)
        if source == "upload":
            raise ConfigError("A lesson step cannot name an uploaded drifter file; choose the sample or the real subset.")
        max_train = applied_value(params, "train", D["max_train"], options=TRAIN) if source == "sample" else None
        self.res = run_comparison(source, applied_value(params, "drounds", D["rounds"], options=ROUNDS),
                                  applied_value(params, "dlr", D["learning_rate"], options=RATES), max_train,
                                  nn=bool(applied_value(params, "nn", False)))
        region = applied_value(params, "region", REGIONS[0], options=REGIONS)
        self.binned = self.res.binned if region == REGIONS[0] else self.res.zoom
        self.params = params

    def value(self, q: Quantity) -> float:
        b = self.binned
        n = np.asarray(b["n_test"].values, dtype=float)
        d = np.asarray(b["nll_diff"].values, dtype=float)
        if q.name == "test_points":
            return float(np.nansum(n))
        if q.name == "bins":
            return float(np.count_nonzero(n > 0))
        if q.name == "bins_ngb_better":
            return float(np.count_nonzero((n > 0) & (d < 0)))
        if q.name == "bins_indep_better":
            return float(np.count_nonzero((n > 0) & (d > 0)))
        if q.name == "points_indep_better":
            return float(np.sum(n[(n > 0) & (d > 0)]))
        if q.name == "nll_diff":
            keep = (n > 0) & np.isfinite(d)
            if q.arg != "all":
                speed = np.asarray(b["speed"].values, dtype=float)
                med = float(np.nanmedian(speed[keep]))
                keep &= (speed > med) if q.arg == "fast" else (speed <= med)
            return float(np.sum(d[keep] * n[keep]) / np.sum(n[keep])) if keep.any() else math.nan
        if q.name == "max_abs_rho":
            return float(np.nanmax(np.abs(np.asarray(b["rho"].values, dtype=float))))
        if q.name == "track_max_abs_rho":
            return self._track_rho(_arg(q))
        raise _Unavailable(f"{q} is not shown on the Drifters page.")

    def _track_rho(self, model: str) -> float:
        from distviz.viz import maps

        from .params import applied_value

        pred = self.res.predictions
        ids = [int(i) for i in np.unique(pred["id"].values)]
        default = maps.pick_trajectory(pred)[0]
        did = applied_value(self.params, "drifter", default if default in ids else ids[0], options=ids)
        rows = maps.trajectory_rows(pred, did)
        c = np.asarray(pred[f"cov_{model}"].values[rows], dtype=float)
        rho = c[:, 0, 1] / np.sqrt(c[:, 0, 0] * c[:, 1, 1])
        return float(np.max(np.abs(rho)))


def view_for(page: str, params: dict):
    """The object that reads the quantities of `page` in the state `params` (fits made on first use)."""
    if page == "explorer":
        return _ExplorerView(params)
    if page == "drifters":
        return _DriftersView(params)
    if page == "posterior":
        from .params import applied_value
        from .posterior import SECTIONS

        section = applied_value(params, "section", SECTIONS[0], options=SECTIONS)
        if section == "OOD demo":
            return _OODView(params)
        if section != "conditional density":
            raise ConfigError(f"The posterior section {section!r} has no quantities to check; use the conditional "
                              f"density or the OOD demo.")
    return _FitView(page, params)


@dataclass
class CheckReport:
    """What `check_lessons` found: counts and one line per failing claim (or step without claims)."""

    steps: int = 0
    claims: int = 0
    holding: int = 0
    failures: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when every step states a claim and every claim holds."""
        return not self.failures

    def summary(self) -> str:
        """The last line of the check: 'N steps, M claims, K hold'."""
        return f"{self.steps} steps, {self.claims} claims, {self.holding} hold"


def _fmt(v: float) -> str:
    return f"{v:.4g}"


def evaluate(claim: Claim, view) -> tuple[bool, str]:
    """(holds, what was compared) for one claim on a view."""
    a = view.value(claim.a)
    b = None if claim.kind == "between" else (claim.b if isinstance(claim.b, float) else view.value(claim.b))
    got = f"{claim.a} = {_fmt(a)}" + ("" if b is None or isinstance(claim.b, float) else f", {claim.b} = {_fmt(b)}")
    return claim.holds(a, b), got


def check_lessons(lessons=None, *, on_step: Callable[[str], None] | None = None) -> CheckReport:
    """Evaluate every claim of every step of `lessons` (default: all lessons that load) on the step's view; steps
    with the same page and parameters share one view (and so their fits)."""
    from .lessons import load_lessons

    if lessons is None:
        lessons, problems = load_lessons()
    else:
        problems = []
    report = CheckReport(failures=list(problems))
    views: dict[tuple, Any] = {}
    for ls in lessons:
        for i, step in enumerate(ls.steps, start=1):
            where = f"Lesson {ls.number} step {i} ({step.title})"
            report.steps += 1
            if on_step is not None:
                on_step(where)
            if not step.claims:
                report.failures.append(f"{where} states no claim; add a [[step.claim]] table.")
                continue
            key = (step.page, tuple(sorted((k, str(v)) for k, v in step.params.items())))
            for claim in step.claims:
                report.claims += 1
                try:
                    if key not in views:
                        views[key] = view_for(step.page, step.params)
                    holds, got = evaluate(claim, views[key])
                except DistvizError as exc:
                    report.failures.append(f"{where}: {claim} cannot be evaluated: {exc}")
                    continue
                if holds:
                    report.holding += 1
                else:
                    report.failures.append(f"{where}: {claim} does not hold ({got}).")
    return report
