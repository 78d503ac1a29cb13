"""One colour-blind-safe palette (Okabe & Ito 2008) and one fixed colour per algorithm for every page."""

from __future__ import annotations

#: The eight Okabe-Ito colours, safe for the common colour-vision deficiencies.
OKABE_ITO = {
    "black": "#000000",
    "orange": "#E69F00",
    "sky": "#56B4E9",
    "green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "purple": "#CC79A7",
}

#: A fixed colour per algorithm (and per baseline), used by every figure in distviz.viz.
ALGO_COLORS = {
    "mgd": OKABE_ITO["blue"],
    "ngd": OKABE_ITO["vermillion"],
    "gd": OKABE_ITO["purple"],    # not black or grey: those are the truth and the data
    "cross_m": OKABE_ITO["sky"],
    "cross_n": OKABE_ITO["orange"],
    "mgd_natural": OKABE_ITO["sky"],   # the Lab's keys of the crossed laws
    "ngd_mean": OKABE_ITO["orange"],
    "ngboost": OKABE_ITO["green"],
    "ngb": OKABE_ITO["green"],
    "indepngb": OKABE_ITO["purple"],
    "average": OKABE_ITO["orange"],
    "gb": OKABE_ITO["black"],
    "ska": OKABE_ITO["blue"],
    "fka": OKABE_ITO["green"],
    "nka": OKABE_ITO["vermillion"],
    "langevin": OKABE_ITO["purple"],
    "sgp": OKABE_ITO["orange"],
    "sgp_elbo": OKABE_ITO["orange"],
    "sgp_dlm": OKABE_ITO["purple"],
    "truth": "#555555",
}

#: Human-readable algorithm names.
ALGO_LABELS = {
    "mgd": "MGD (mirror, additive in η*)",
    "ngd": "NGD (natural, additive in η)",
    "gd": "GD (plain gradient in η)",
    "cross_m": "crossed: MGD step in η",
    "cross_n": "crossed: NGD step in η*",
    "mgd_natural": "crossed: M-law in η",
    "ngd_mean": "crossed: N-law in η*",
    "ngboost": "NGBoost (chart)",
    "ngb": "NGB (multivariate)",
    "indepngb": "Indep NGB",
    "average": "average of NGB and Indep NGB",
    "gb": "GB (point regression)",
    "ska": "WGBoost SKA",
    "fka": "WGBoost FKA",
    "nka": "WGBoost NKA",
    "langevin": "LGBoost (Langevin)",
    "sgp": "sparse GP",
    "sgp_elbo": "sparse GP (ELBO)",
    "sgp_dlm": "sparse GP (log-loss DLM)",
    "truth": "truth",
}

#: Colours for data, bands and train / validation curves.
ROLE_COLORS = {
    "data": "#7f7f7f",
    "train": OKABE_ITO["blue"],
    "valid": OKABE_ITO["vermillion"],
    "entropy": OKABE_ITO["green"],
    "marker": OKABE_ITO["black"],
    "band": "rgba(0,114,178,0.18)",
    "truth_band": "rgba(85,85,85,0.15)",
}

#: Sequential colour scale for densities (cividis is colour-blind safe).
DENSITY_SCALE = "Cividis"

#: Colours for the d coordinates of an iterate, in order.
COORD_COLORS = [OKABE_ITO[k] for k in ("blue", "vermillion", "green", "purple", "orange", "sky", "black", "yellow")]


def algo_color(name: str) -> str:
    """The fixed colour of an algorithm name (case-insensitive; grey for unknown names)."""
    key = str(name).lower().replace(" ", "").replace("-", "_")
    if key.startswith("wg_"):
        key = key[3:]
    return ALGO_COLORS.get(key, "#7f7f7f")


def algo_label(name: str) -> str:
    """The display label of an algorithm name (the name itself when unknown)."""
    key = str(name).lower()
    return ALGO_LABELS.get(key[3:] if key.startswith("wg_") else key, str(name))


def hex_to_rgba(color: str, alpha: float) -> str:
    """Turn '#RRGGBB' into a plotly 'rgba(r,g,b,a)' string."""
    c = color.lstrip("#")
    r, g, b = (int(c[i:i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{alpha})"
