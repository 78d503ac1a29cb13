"""Claims of a lesson step: what its view shows, stated as data that `distviz lessons check` evaluates.

A step lists its claims as TOML tables after its params (never code: nothing here is evaluated as Python)::

    [[step.claim]]
    kind = "less"              # less, greater, between, near or equal
    a = "valid_nll@best"       # a quantity of the step's view
    b = "valid_nll@last"       # a quantity or a number

The five kinds:

- ``less`` / ``greater``: a < times · b / a > times · b (``times`` optional, default 1; b a quantity or a number);
- ``between``: lo <= a <= hi (``lo`` and ``hi`` numbers) — a range, or with lo = 0 a sign;
- ``near``: |a − b| <= tol (``tol`` a number >= 0);
- ``equal``: a == b exactly — a count, a feature, a number of rounds.

A quantity is written ``[fit:]name[[arg]][@round]``: ``name`` from QUANTITIES below; ``arg`` a coordinate (1 for
the first), a feature (x2), a model, a series or an input value, as the name requires; ``@round`` a boosting round
(a number, ``best``: the best validation round, which the Lab draws, or ``last``); ``fit:`` an algorithm
(``ngd:train_nll@5``): the same settings fitted with that algorithm, as the Evolution page's geometry panel fits
its MGD and NGD companions, or the Posterior page's other method.  Which names a page's view offers is in
QUANTITIES; `parse_claims` refuses any other in one sentence naming the step and the file.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from distviz.errors import ConfigError

#: kind -> (required entries besides kind and a, optional entries)
KINDS = {"less": (("b",), ("times",)), "greater": (("b",), ("times",)), "between": (("lo", "hi"), ()),
         "near": (("b", "tol"), ()), "equal": (("b",), ())}

_FIT = ("lab", "evolution", "split_gains")
_FEATURE = r"x[1-9]"
_COORD = r"[1-9]"
_NUMBER = r"-?\d+(\.\d+)?"

#: name -> (pages whose view shows it, pattern of its [arg] or None, whether it takes @round, what it is)
QUANTITIES: dict[str, tuple[tuple[str, ...], str | None, bool, str]] = {
    # the Family explorer's table
    "eta": (("explorer",), _COORD, False, "natural parameter η_i of the explorer's distribution"),
    "eta_star": (("explorer",), _COORD, False, "mean parameter η*_i = E[T_i(y)] of the explorer's distribution"),
    # a boosting fit's trace (Lab cards, Evolution and Split-gains NLL charts)
    "train_nll": (_FIT + ("posterior",), None, True, "training NLL (WGBoost: negative log predictive) at the round"),
    "valid_nll": (_FIT, None, True, "validation NLL at the round"),
    "entropy": (_FIT, None, True, "generalised entropy H of the round's tree partition"),
    "best_round": (_FIT, None, False, "the best validation round (the round the Lab draws)"),
    "warnings": (_FIT + ("posterior",), None, False, "number of warnings the page shows above the fit"),
    "rises": (_FIT, r"train_nll|valid_nll|entropy", False, "number of rounds at which the series goes up"),
    # the Evolution page's geometry panel (at its input x0)
    "path_eta": (("evolution",), _COORD, True, "coordinate i of the iterate in the η chart at the round"),
    "path_eta_star": (("evolution",), _COORD, True, "coordinate i of the iterate in the η* chart at the round"),
    "truth_eta": (("evolution",), _COORD, False, "coordinate i of the true η at x0 (the star)"),
    "truth_eta_star": (("evolution",), _COORD, False, "coordinate i of the true η* at x0 (the star)"),
    "bend": (("evolution",), r"eta|eta_star", False,
             "largest distance of the path drawn in that chart from the line between its ends, over that line's "
             "length, in the chart's axis units: 0 is a straight line"),
    # the Split gains page's trees
    "root_feature": (("split_gains",), None, True, "feature number of the root split of the round's tree (1: x1)"),
    "max_gain": (("split_gains",), None, True, "largest split gain (Gain^reg or Gain^NGD) in the round's tree"),
    "splits": (("split_gains",), None, True, "number of splits in the round's tree"),
    "noise_splits": (("split_gains",), None, True, "number of splits on features other than x1 in the round's tree"),
    "importance": (("split_gains",), _FEATURE, True, "the feature's share of the cumulative split gain at the round"),
    "gain_rank_corr": (("split_gains",), None, False,
                       "Spearman rank correlation of the split gain and Gain^ent over every split drawn"),
    "leafwise_nll": (("split_gains",), r"variance|entropy", False, "leafwise NLL of the standalone tree"),
    # WGBoost particles (Lab, Evolution, Posterior's conditional density)
    "particles": (("lab", "evolution", "posterior"), None, False, "particles per input N"),
    "particle_spread": (("lab", "evolution", "posterior"), None, True,
                        "mean over inputs of the standard deviation of the particles' locations at the round"),
    "particle_shift": (("lab", "evolution", "posterior"), None, True,
                       "mean distance of the particles' locations at the round from where they started"),
    "pred_mean": (("posterior",), _NUMBER, False, "predicted mean of y at the input value"),
    "density_peak": (("lab", "posterior"), None, False, "highest value of the predictive-density heat map p(y | x)"),
    # the Posterior page's OOD demo
    "pr_auc": (("posterior",), None, False, "OOD PR-AUC of the score 1 / max variance"),
    "accuracy": (("posterior",), None, False, "test accuracy on the known classes"),
    "median_score": (("posterior",), r"in|out", False, "median OOD score of the known (in) or held-out (out) rows"),
    # the Drifters page's map (of the step's region) and trajectory
    "test_points": (("drifters",), None, False, "test points in the region"),
    "bins": (("drifters",), None, False, "bins of the region's map holding test points"),
    "bins_ngb_better": (("drifters",), None, False, "bins whose mean NLL difference NGB − Indep NGB is negative"),
    "bins_indep_better": (("drifters",), None, False, "bins whose mean NLL difference NGB − Indep NGB is positive"),
    "points_indep_better": (("drifters",), None, False, "test points in the bins where Indep NGB is better"),
    "nll_diff": (("drifters",), r"all|fast|slow", False,
                 "mean NLL difference NGB − Indep NGB over the region's test points: all, or those in the bins "
                 "faster / slower than the median bin speed"),
    "max_abs_rho": (("drifters",), None, False, "largest |ρ| of NGB's per-bin mean correlation on the map"),
    "track_max_abs_rho": (("drifters",), r"NGB|IndepNGB", False,
                          "largest |ρ| of the model's ellipses along the trajectory view's drifter"),
}
#: the pages whose steps may name a companion fit of the Evolution geometry panel (the `fit:` prefix: an algorithm
#: that offers the geometry, distviz.ui.algorithms) and the page whose steps may name a WGBoost method
GEOMETRY_FITS, METHOD_FITS = ("lab", "evolution", "split_gains"), ("posterior",)
_QUANTITY = re.compile(r"^(?:(?P<fit>[a-z_]+):)?(?P<name>[a-z_]+)(?:\[(?P<arg>[^\]]{1,20})\])?"
                       r"(?:@(?P<round>\d{1,5}|best|last))?$")


@dataclass(frozen=True)
class Quantity:
    """One quantity of a step's view: `name` of QUANTITIES, its argument, round and companion fit (or None)."""

    name: str
    arg: str | None = None
    round: str | None = None   #: a number, 'best' or 'last'
    fit: str | None = None

    def __str__(self) -> str:
        return ((f"{self.fit}:" if self.fit else "") + self.name + (f"[{self.arg}]" if self.arg else "")
                + (f"@{self.round}" if self.round else ""))


@dataclass(frozen=True)
class Claim:
    """A claim of a step: `a` (a Quantity) compared by `kind` with `b` (Quantity or number), `lo`/`hi` or `tol`."""

    kind: str
    a: Quantity
    b: Quantity | float | None = None
    lo: float | None = None
    hi: float | None = None
    tol: float | None = None
    times: float = 1.0

    def __str__(self) -> str:
        if self.kind == "between":
            return f"{self.lo:g} <= {self.a} <= {self.hi:g}"
        b = f"{self.b:g}" if isinstance(self.b, float) else str(self.b)
        if self.times != 1.0:
            b = f"{self.times:g} × {b}"
        sym = {"less": "<", "greater": ">", "equal": "=="}.get(self.kind)
        return f"{self.a} {sym} {b}" if sym else f"|{self.a} − {b}| <= {self.tol:g}"

    def holds(self, a: float, b: float | None) -> bool:
        """Whether the claim holds for the values `a` and `b` (b: None for between); NaN never holds."""
        if not math.isfinite(a):
            return False
        if self.kind == "between":
            return float(self.lo if self.lo is not None else -math.inf) <= a <= float(
                self.hi if self.hi is not None else math.inf)
        if b is None or not math.isfinite(b):
            return False
        if self.kind == "less":
            return a < self.times * b
        if self.kind == "greater":
            return a > self.times * b
        if self.kind == "near":
            return abs(a - b) <= float(self.tol or 0.0)
        return a == b


def fit_choices(page: str) -> list[str]:
    """The algorithms a `fit:` prefix may name on `page` (empty when the page has no companion fits)."""
    from . import algorithms

    if page in GEOMETRY_FITS:
        return algorithms.keys(lambda a: a.offers_geometry)
    if page in METHOD_FITS:
        return algorithms.wg_methods()
    return []


def parse_quantity(text, page: str, where: str) -> Quantity:
    """The Quantity written `text` for a step on `page`; ConfigError (one sentence starting with `where`) when it is
    not one the page's view shows."""
    m = _QUANTITY.match(text) if isinstance(text, str) and len(text) <= 60 else None
    if m is None:
        raise ConfigError(f"{where} names the quantity {str(text)[:40]!r}, which is not written name, name[arg] or "
                          f"name@round; see distviz/ui/claims.py.")
    name, arg, rnd, fit = m["name"], m["arg"], m["round"], m["fit"]
    spec = QUANTITIES.get(name)
    if spec is None or page not in spec[0]:
        offered = ", ".join(k for k, v in QUANTITIES.items() if page in v[0])
        raise ConfigError(f"{where} names the quantity '{name}', which the page {page} does not show; use one of "
                          f"{offered}.")
    _, pattern, takes_round, _ = spec
    if pattern is None and arg is not None:
        raise ConfigError(f"{where} gives the quantity '{name}' an argument [{arg}], which it does not take; remove it.")
    if pattern is not None and (arg is None or not re.fullmatch(pattern, arg)):
        raise ConfigError(f"{where} needs the quantity '{name}' written {name}[ARG] with ARG matching "
                          f"{pattern.replace('|', ' or ')}; correct it.")
    if takes_round != (rnd is not None):
        need = "needs a round, e.g. @20, @best or @last" if takes_round else "takes no round; remove the @"
        raise ConfigError(f"{where}: the quantity '{name}' {need}.")
    if fit is not None and fit not in fit_choices(page):
        choices = fit_choices(page)
        raise ConfigError(f"{where} names the fit '{fit}:', which the page {page} does not make; "
                          + (f"use one of {', '.join(choices)}." if choices else "remove the prefix."))
    return Quantity(name=name, arg=arg, round=rnd, fit=fit)


def _number(v, key: str, where: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ConfigError(f"{where} needs '{key}' as a finite number; correct it.")
    return float(v)


def _operand(v, page: str, where: str) -> Quantity | float:
    return parse_quantity(v, page, where) if isinstance(v, str) else _number(v, "b", where)


def parse_claim(raw, page: str, where: str) -> Claim:
    """One Claim from its TOML table `raw` for a step on `page`; ConfigError (one sentence) when it is not valid."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{where} needs each claim as a [[step.claim]] table.")
    kind = raw.get("kind")
    if kind not in KINDS:
        raise ConfigError(f"{where} has the kind {str(kind)[:20]!r}, which is not one of {', '.join(KINDS)}; correct it.")
    required, optional = KINDS[kind]
    extra = sorted(set(raw) - {"kind", "a", *required, *optional})
    if extra:
        raise ConfigError(f"{where} has an unknown entry '{str(extra[0])[:40]}' for a claim of kind {kind}; use "
                          f"{', '.join(('a',) + required + optional)}.")
    missing = [k for k in ("a",) + required if k not in raw]
    if missing:
        raise ConfigError(f"{where} needs '{missing[0]}' for a claim of kind {kind}; add it.")
    a = parse_quantity(raw["a"], page, where)
    if kind == "between":
        lo, hi = _number(raw["lo"], "lo", where), _number(raw["hi"], "hi", where)
        if lo > hi:
            raise ConfigError(f"{where} has lo > hi; swap them.")
        return Claim(kind, a, lo=lo, hi=hi)
    b = _operand(raw["b"], page, where)
    if kind == "near":
        tol = _number(raw["tol"], "tol", where)
        if tol < 0:
            raise ConfigError(f"{where} needs 'tol' >= 0; correct it.")
        return Claim(kind, a, b, tol=tol)
    times = _number(raw.get("times", 1.0), "times", where)
    return Claim(kind, a, b, times=times)


MAX_CLAIMS = 8


def parse_claims(raw, page: str, where: str) -> tuple[Claim, ...]:
    """The claims of a step (its list of [[step.claim]] tables, absent: none) on `page`; ConfigError (one sentence
    starting with `where`, e.g. "Step 2 of the lesson file x.toml") when one is not valid."""
    if raw is None:
        return ()
    if not isinstance(raw, list) or len(raw) > MAX_CLAIMS:
        raise ConfigError(f"{where} needs its claims as at most {MAX_CLAIMS} [[step.claim]] tables.")
    return tuple(parse_claim(c, page, f"{where}, claim {i}") for i, c in enumerate(raw, start=1))
