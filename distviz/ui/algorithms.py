"""The app's algorithm registry: the one place an algorithm of the Lab is described (no Streamlit here).

One frozen `Algorithm` per algorithm the Lab offers: its key (the URL's ``algo``), label and help, its kind
(`Kind`: a boosting law, WGBoost, NGBoost or a sparse-GP baseline), the families it fits, the estimator it makes
from a `distviz.ui.fits.FitConfig`, the views it offers (Evolution's round trace or particles, Split gains, the
geometry panel), the Lab settings it reads (its URL parameters, which a lesson step may set) and its cost model
(distviz.ui.costs, what the fit governor's budget check uses).  Pages, the fit code and the lesson tables ask the
registry (`get`, `keys`, the attributes) instead of branching on kind names.  No maths here: the estimators come
from distviz.estimators and distviz.gp.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, Callable

from distviz.errors import ConfigError

from .costs import GPCost, LawCost, WGCost

if TYPE_CHECKING:
    from .fits import FitConfig


class Kind(Enum):
    """What an algorithm is: the estimator class it makes and so the trace and views its fit has."""

    #: an exponential-family boosting law (distviz.estimators.DistributionalBoosting): per-row trace, trees, geometry
    LAW = "law"
    #: Wasserstein gradient boosting (distviz.estimators.WGBoost): particles per input, per-round trace
    WG = "wg"
    #: NGBoost in its own chart (distviz.estimators.ngboost.NGBoost): parameters recomputed per round from its trees
    NGBOOST = "ngboost"
    #: the sparse-GP baselines (distviz.gp.SparseGP): not boosted, an optimiser's iterations
    GP = "gp"


#: the settings every boosted algorithm reads (URL names of the Lab's rounds, learning rate and tree depth)
BOOSTING_PARAMS = ("rounds", "lr", "depth")


@dataclass(frozen=True)
class Algorithm:
    """One algorithm the Lab offers.

    Parameters
    ----------
    key : str
        The name in the URL (``?algo=``), lesson files and caches, e.g. 'mgd'.
    label : str
        The name the algorithm selector shows.
    help : str
        One or two sentences shown under the selector.
    kind : Kind
        The estimator class and so the views of its fit.
    make : callable
        FitConfig -> the unfitted estimator (the family already checked by `compatible`).
    cost : LawCost, WGCost or GPCost
        The cost model the fit governor checks before fitting (distviz.ui.costs).
    families : tuple of str or None
        The families it fits (None: every family).
    why_not : str
        The sentence that says why a family outside `families` cannot be fitted.
    url_params : tuple of str
        The Lab settings it reads beyond family, data, algorithm, rows, features and seed (URL names; a lesson step
        may set them).
    method : str
        The estimator's own name of the algorithm ('ska' for WGBoost SKA; the law for a boosting law).
    learning_rates : tuple of (str, float)
        (family, default learning rate) where the Lab's default 0.1 is unstable.
    adds_in_mean_chart : bool
        Whether a boosting law adds its trees in the mean parameters η* (MGD, the crossed N-law) rather than in η.
    has_metric : bool
        Whether its step has a metric (False for plain GD in η, whose advice after a divergence differs).
    """

    key: str
    label: str
    help: str
    kind: Kind
    make: Callable[["FitConfig"], Any]
    cost: Any
    families: tuple[str, ...] | None = None
    why_not: str = ""
    url_params: tuple[str, ...] = BOOSTING_PARAMS
    method: str = ""
    learning_rates: tuple[tuple[str, float], ...] = ()
    adds_in_mean_chart: bool = False
    has_metric: bool = True

    def default_learning_rate(self, family: str) -> float:
        """The Lab's default learning rate on `family` (`learning_rates`, else 0.1)."""
        return dict(self.learning_rates).get(family, 0.1)

    def compatible(self, family: str) -> str | None:
        """None when this algorithm can fit `family`, else one sentence saying why not."""
        return None if self.families is None or family in self.families else self.why_not

    def estimator(self, cfg: "FitConfig"):
        """The unfitted estimator for `cfg` (ConfigError when the algorithm does not suit the family)."""
        why = self.compatible(cfg.family)
        if why:
            raise ConfigError(why)
        return self.make(cfg)

    @property
    def boosted(self) -> bool:
        """Whether it adds trees over rounds (rounds, learning rate and depth apply; the sparse GP is not boosted)."""
        return self.kind is not Kind.GP

    @property
    def holds_out_validation(self) -> bool:
        """Whether its Lab fit holds 20% of the rows out for the validation NLL (WGBoost and the GP use every row)."""
        return self.kind in (Kind.LAW, Kind.NGBOOST)

    @property
    def has_particles(self) -> bool:
        """Whether its fit carries particles per input (the Lab's particles setting applies)."""
        return self.kind is Kind.WG

    @property
    def traces_rounds(self) -> bool:
        """Whether its fit stores a per-round trace (train NLL, iterates or particles) that Evolution replays."""
        return self.kind in (Kind.LAW, Kind.WG)

    @property
    def offers_split_gains(self) -> bool:
        """Whether its trace stores the trees' split gains (the Split gains page)."""
        return self.kind is Kind.LAW

    @property
    def offers_geometry(self) -> bool:
        """Whether Evolution draws its iterate paths in the η and η* charts (and its fits are geometry companions)."""
        return self.kind is Kind.LAW

    @property
    def opens_at_best_round(self) -> bool:
        """Whether Evolution opens its round trace at the best validation round (the one the Lab draws)."""
        return self.kind is Kind.LAW

    @property
    def shares_model_file(self) -> bool:
        """Whether the servers of a ``--workers`` run share its fit through a model file (a sparse GP's optimiser
        path, which Evolution draws, is not in its file)."""
        return self.kind is not Kind.GP

    @property
    def name(self) -> str:
        """The short name warnings use, e.g. 'MGD', 'crossed', 'WGBoost SKA'."""
        return self.label.split(" — ")[0].split(":")[0].split(" (")[0]

    @property
    def summary_name(self) -> str:
        """The name a one-line summary of the settings uses (the sparse GP keeps its objective)."""
        return self.label if self.label.startswith("sparse") else self.label.split(" (")[0]

    def more_label(self) -> str:
        """The label of the folded *More settings* box: only the settings this algorithm has."""
        if not self.boosted:
            return "More settings: rows, features, seed …"
        return "More settings: rows, rounds, learning rate, depth" + (", particles …" if self.has_particles else " …")

    def lab_figures(self, model, data) -> list:
        """The Lab's figures of a fit of this algorithm (distviz.viz.results)."""
        from distviz.viz import results as vr

        draw = {Kind.LAW: vr.law_lab_figures, Kind.WG: vr.wg_lab_figures, Kind.NGBOOST: vr.ngboost_lab_figures,
                Kind.GP: vr.gp_lab_figures}[self.kind]
        return draw(model, data, self.key)


# ---------------------------------------------------------------------------------------------- estimator factories
def _law(cfg: "FitConfig"):
    from distviz.estimators import DistributionalBoosting
    return DistributionalBoosting(cfg.family, law=cfg.algorithm, n_estimators=int(cfg.n_estimators),
                                  learning_rate=float(cfg.learning_rate), max_depth=int(cfg.max_depth),
                                  validation_fraction=0.2, trace_rows=600, random_state=int(cfg.seed),
                                  domain=cfg.domain, family_params=cfg.family_kwargs())


def _wg(cfg: "FitConfig"):
    from distviz.estimators import WGBoost
    return WGBoost(cfg.family, n_particles=int(cfg.n_particles), method=get(cfg.algorithm).method,
                   learning_rate=float(cfg.learning_rate), n_estimators=int(cfg.n_estimators),
                   max_depth=int(cfg.max_depth), init_rounds=1000, random_state=int(cfg.seed), trace_rows=60)


def _ngboost(cfg: "FitConfig"):
    from distviz.estimators.ngboost import NGBoost
    return NGBoost(chart="normal" if cfg.family == "normal" else "mvn_cholesky", n_estimators=int(cfg.n_estimators),
                   learning_rate=float(cfg.learning_rate), max_depth=int(cfg.max_depth),
                   # 20% held out as for the laws; the patience exceeds the rounds, so every round is fitted
                   # and the validation NLL picks the best one (predictions use it)
                   early_stopping_rounds=int(cfg.n_estimators) + 1, validation_fraction=0.2, random_state=int(cfg.seed))


#: family -> the sparse GP's likelihood
_GP_LIKELIHOOD = {"normal": "gaussian", "bernoulli": "probit", "poisson": "poisson"}


def _gp(cfg: "FitConfig"):
    from distviz.gp import SparseGP
    return SparseGP(likelihood=_GP_LIKELIHOOD[cfg.family], objective=get(cfg.algorithm).method,
                    n_inducing=20, max_iter=200, random_state=int(cfg.seed))


# ---------------------------------------------------------------------------------------------- the registry
#: Law / NGBoost per-round cost coefficients (distviz.ui.costs.LawCost)
_LAW_COST = LawCost((2.8e-4, 1.99e-9, 2.74e-7, 5.04e-12))
_WG_FAMILIES = ("normal", "poisson", "categorical")
_WG_WHY = "WGBoost posterior targets exist for the Normal, Poisson and Categorical families; choose one of them."
_GP_WHY = ("The sparse-GP baselines have Gaussian, probit and Poisson likelihoods; choose the Normal, Bernoulli or "
           "Poisson family.")


def _law_algo(key, label, help, extra=(), **kw):
    return Algorithm(key, label, help, Kind.LAW, _law, LawCost(_LAW_COST.coef, extra) if extra else _LAW_COST,
                     url_params=BOOSTING_PARAMS + ("domain",), method=key, **kw)


def _wg_algo(key, label, help, coef, **cost):
    return Algorithm(key, label, help, Kind.WG, _wg, WGCost(coef, **cost), families=_WG_FAMILIES, why_not=_WG_WHY,
                     url_params=BOOSTING_PARAMS + ("particles",), method=key[3:])


def _gp_algo(key, label, help, objective, per_row):
    return Algorithm(key, label, help, Kind.GP, _gp, GPCost(per_row), families=tuple(_GP_LIKELIHOOD), why_not=_GP_WHY,
                     url_params=(), method=objective)


#: algorithm key -> Algorithm, in the selector's order
REGISTRY: dict[str, Algorithm] = {a.key: a for a in [
    _law_algo("mgd", "MGD (mirror, in η*)",
              "Mirror descent. Each tree is added to the mean parameters η* = E[T(y)] (M-law). Fast and exact in the "
              "dual chart.", extra=(("gamma", 1.7e-6),), adds_in_mean_chart=True),
    _law_algo("ngd", "NGD (natural, in η)",
              "Natural gradient. Each tree is added to the natural parameters η after a Fisher preconditioning "
              "(N-law, NGBoost with θ = η).", extra=(("gamma", 9e-7),)),
    _law_algo("gd", "GD (plain gradient in η)",
              "Raw gradient T(y) − η* added to η, no metric: can be slow or diverge when the Fisher metric is far from 1 "
              "(on the Normal families the learning rate starts at 0.01 for that reason).",
              # plain GD in η has no metric, so it is stable only for ν < 2 / λ_max(g(η)), g = Cov[T(y)]; for the
              # (multivariate) Normal T(y) contains y^2 and λ_max is large (2 / λ_max(g(η(x))) is as low as 0.06 on
              # the synthetic Normal's rows and falls further when an iterate's variance grows): ν = 0.1 diverges,
              # 0.01 does not
              learning_rates=(("normal", 0.01), ("mvn", 0.01)), has_metric=False),
    _law_algo("mgd_natural", "crossed: M-law in η",
              "The mirror step written additively in η with a plug-in target (biased; see the note)."),
    _law_algo("ngd_mean", "crossed: N-law in η*",
              "The natural step written additively in η* with a plug-in target (biased; see the note).",
              adds_in_mean_chart=True),
    Algorithm("ngboost", "NGBoost (own chart)",
              "NGBoost's own parametrisation: natural gradient in an unconstrained chart θ — (μ, log σ) for the "
              "Normal, the Cholesky factor of the precision for the multivariate Normal — with its line search.",
              Kind.NGBOOST, _ngboost, LawCost((7.2e-5, 0.0, 3.68e-7, 6.17e-11)), families=("normal", "mvn"),
              why_not="NGBoost charts are available for the Normal and multivariate Normal families; choose one of them "
                      "or an exponential-family law.", method="ngboost"),
    _wg_algo("wg_ska", "WGBoost SKA",
             "Diagonal Newton. Particles per input flow to the pointwise posterior; SKA is the default, fast, "
             "diagonal Newton direction.", (6.1e-4, 1.56e-9, 5.57e-9, 0.0, 1.82e-7, 1.24e-7, 0.0, 0.0), scale=0.56),
    _wg_algo("wg_fka", "WGBoost FKA", "First order: kernel-smoothed first-order Wasserstein gradient (SVGD-like).",
             (2.44e-3, 1.51e-9, 5.08e-9, 3.21e-8, 5.77e-8, 6.04e-8, 0.0, 0.0), scale=0.55),
    _wg_algo("wg_nka", "WGBoost NKA", "Full Newton direction: batched (N d) × (N d) solves per input.",
             (0.0, 0.0, 0.0, 0.0, 2.31e-7, 3.51e-7, 2.33e-9, 8.12e-8), scale=0.83, blocked_solves=True,
             cheaper="WGBoost SKA"),
    _wg_algo("wg_langevin", "LGBoost (Langevin)", "Noisy gradient steps: particles sample the posterior.",
             (2.2e-4, 1.56e-9, 1.12e-10, 4.0e-8, 1.39e-7, 3.43e-8, 0.0, 0.0), scale=0.68),
    _gp_algo("sgp_elbo", "sparse GP (ELBO)",
             "Baseline: sparse Gaussian process (20 inducing points) fitted by the evidence lower bound "
             "(variational inference).", "elbo",
             (("normal", 2.9e-4), ("bernoulli", 3.9e-4), ("poisson", 2.2e-4))),
    _gp_algo("sgp_dlm", "sparse GP (log-loss DLM)",
             "Baseline: the same sparse GP fitted by direct loss minimisation of the log predictive loss (Wei et al.).",
             "dlm_log", (("normal", 2.8e-4), ("bernoulli", 2.6e-4), ("poisson", 1.15e-3))),
]}

#: the algorithm the Lab selects by default (when the family allows it)
DEFAULT = "mgd"
#: the two laws Evolution's geometry panel overlays on every law's path (the mirror and the natural step)
GEOMETRY_PAIR = ("mgd", "ngd")

#: kind -> (its name, the families it fits) for the sentence that says why an algorithm is not offered
_KIND_TEXT = {Kind.NGBOOST: ("NGBoost", "Normal and multivariate Normal"),
              Kind.WG: ("WGBoost", "Normal, Poisson and Categorical"),
              Kind.GP: ("the sparse GP", "Normal, Bernoulli and Poisson")}


def get(key: str) -> Algorithm:
    """The algorithm named `key` (ConfigError naming the keys when there is none)."""
    try:
        return REGISTRY[key]
    except (KeyError, TypeError):
        raise ConfigError(f"Unknown algorithm {str(key)[:40]!r}; choose one of {', '.join(REGISTRY)}.") from None


def cost_of(key: str):
    """The cost model of the algorithm `key`; a boosting law's for a key the registry does not hold (a cost estimate
    is a pre-check: the fit itself refuses an unknown algorithm)."""
    algo = REGISTRY.get(key)
    return algo.cost if algo is not None else _LAW_COST


def keys(where: Callable[[Algorithm], bool] | None = None) -> list[str]:
    """The algorithm keys in the selector's order, only those with `where(algorithm)` true when given."""
    return [k for k, a in REGISTRY.items() if where is None or where(a)]


def wg_method(method: str) -> Algorithm:
    """The WGBoost algorithm whose estimator method is `method` ('ska', 'fka', 'nka' or 'langevin')."""
    return next(a for a in REGISTRY.values() if a.kind is Kind.WG and a.method == method)


def wg_methods() -> list[str]:
    """WGBoost's methods in the selector's order ('ska', 'fka', 'nka', 'langevin')."""
    return [a.method for a in REGISTRY.values() if a.kind is Kind.WG]


def compatible(algorithm: str, family: str) -> str | None:
    """None when `algorithm` can fit `family`, else one sentence saying why not."""
    return get(algorithm).compatible(family)


def not_offered(algorithms, family: str) -> str:
    """One sentence naming the algorithms the selector hides for `family` and the families they fit ('' when none)."""
    kinds = list(dict.fromkeys(get(a).kind for a in algorithms if compatible(a, family) is not None))
    if not kinds:
        return ""
    return ("Not offered for this family: "
            + "; ".join(f"{_KIND_TEXT[k][0]} (fits the {_KIND_TEXT[k][1]} families)" for k in kinds) + ".")


def url_params() -> list[str]:
    """Every Lab setting some algorithm reads beyond the common ones (the names a lesson step may set for it)."""
    return list(dict.fromkeys(p for a in REGISTRY.values() for p in a.url_params))
