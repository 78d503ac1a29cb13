"""The family explorer's helpers without Streamlit: family labels and help, the explainer, the view's state from URL
parameters (the page itself: distviz/ui/app/app_pages/explorer.py)."""

from __future__ import annotations

from distviz import families
from distviz.viz import explorer as vx

from .safe_text import escape_markdown

PAGE = "explore"

FAMILY_HELP = {
    "poisson": "counts 0, 1, 2, ...; T(y) = y, η = log rate",
    "bernoulli": "binary 0 / 1; T(y) = y, η = logit p",
    "normal": "real line; T(y) = (y, y²)",
    "gamma": "positive reals; T(y) = (log y, y)",
    "exponential": "positive reals (waiting times); T(y) = y",
    "categorical": "K classes; T(y) = one-hot of the first K-1 classes",
    "mvn": "P-variate Normal; T(y) = (y, vech(y yᵀ))",
}

#: what a family's outputs are, in a few words (the selector's label; FAMILY_HELP has the statistics)
FAMILY_SHORT = {"poisson": "counts", "bernoulli": "binary 0 / 1", "normal": "real line", "gamma": "positive reals",
                "exponential": "durations", "categorical": "K classes", "mvn": "P-variate Normal"}


def families_help(lead: str) -> str:
    """Help of a family selector: `lead`, then every family's outputs and sufficient statistics T(y)."""
    return lead + "\n\n" + "\n".join(f"- **{k}**: {escape_markdown(v)}" for k, v in FAMILY_HELP.items())


def family_label(name: str) -> str:
    """'normal — real line' style label for a family selector (short enough for the sidebar at 1024 px; the
    sufficient statistics are in the selector's help and the explorer)."""
    return f"{name} — {FAMILY_SHORT[name]}" if name in FAMILY_SHORT else name


def explorer_from_params(params: dict):
    """(family, η, η*) that the explorer draws on a run that applies the URL parameters `params` (a lesson step's
    "show me" link): the family and every slider from `params` when the page would accept it, else its default
    (distviz.ui.state.applied_value).  No Streamlit runs: the lesson check reads a step's state here."""
    from .params import applied_value

    names = families.available()
    fam_name = applied_value(params, "family", "normal", options=names)
    kwargs = {"K": applied_value(params, "K", 3, lo=2, hi=6)} if fam_name == "categorical" else {}
    if fam_name == "mvn":
        kwargs["P"] = 2
    family = families.get(fam_name, **kwargs)
    values = {spec.name: applied_value(params, f"{fam_name}.{spec.name}", float(spec.default), lo=spec.lo, hi=spec.hi)
              for spec in vx.conventional_specs(family)}
    eta, mean = vx.natural_from_conventional(family, values)
    return family, eta, mean


EXPLAINER = """
**What am I looking at?** An exponential family writes every distribution as
p(y | η) = h(y) exp(⟨η, T(y)⟩ − A(η)). The same distribution has two coordinates:
the **natural parameters η** (what NGD boosting adds trees to) and the **mean parameters
η\\* = ∇A(η) = E[T(y)]** (what MGD / mirror boosting adds trees to). Move the sliders: the plot
shows the density (continuous families) or the probability mass function (discrete families) with a
histogram of random draws from `family.sample`; the table shows η and η\\* side by side, computed by
the library's own `to_natural` / `to_mean` maps. A(η) is the log-partition function and A\\*(η\\*) its
Legendre conjugate (the negative generalised entropy).
"""
