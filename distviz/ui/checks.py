"""The model-checks panel of the Lab and Drifters pages: cards, a PIT histogram and a coverage curve on held-out rows.

The numbers and figures come from ``distviz.viz.checks``; this module only draws them and, for the Lab, fits the
page's settings with a share of the rows held out (``FitConfig.test_fraction``) through the Lab's fit store.
The panels are drawn inside a folded expander, so nothing here runs at a page's first paint, and the numerics
(``distviz.viz.checks``: scipy.stats, the metrics) are imported only when one is opened.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
import streamlit as st

from . import algorithms as registry
from .figures import show_figure
from .fits import FitConfig
from .jobs import FitCancelled
from .lab import fit_model
from .layout import static_table
from .safe_text import escape_markdown, show_error
from .state import error_sentence

if TYPE_CHECKING:
    from distviz.viz.checks import ModelChecks

#: share of the Lab's rows held out for its model checks
TEST_FRACTION = 0.2


def checks_expander(box, label: str, key: str):
    """A folded expander whose open state lives in the session (`key`): its body runs only while it is open.

    Returns the expander when open, else None."""
    exp = box.expander(label, key=key, on_change="rerun", icon=":material/fact_check:")
    return exp if exp.open else None


#: nominal levels of the table's coverage columns (the chart shows every level)
TABLE_LEVELS = (0.5, 0.8, 0.9, 0.95)


def show_checks(checks: Sequence[ModelChecks], *, key: str, units: str = "", cards: int = 2, box=None) -> None:
    """Metric cards (held-out NLL, CRPS, 90% coverage) of the first `cards` methods, the PIT histogram, the coverage
    curve and a table of every method."""
    from distviz.viz.checks import checks_frame, coverage_figure, pit_histogram

    box = st if box is None else box
    if not checks:
        return
    for c in checks[:cards]:
        cols = box.columns(4)
        i90 = int(np.argmin(np.abs(c.levels - 0.9)))
        score = f"{c.score_name} ({units})" if units else c.score_name
        cols[0].metric(f"{escape_markdown(c.name)}: test NLL (nats)", f"{c.nll:.3f}",
                       help="Mean negative log-likelihood of the held-out rows, nats per row (lower is better).")
        cols[1].metric(score, f"{c.crps:.4g}",
                       help="Mean continuous ranked probability score of the held-out rows, in the units of y "
                            "(lower is better)" + ("; the energy score, its multivariate form (Gneiting & Raftery "
                                                   "2007, eq. 22), estimated from samples." if c.multivariate else "."))
        cols[2].metric(f"coverage at {c.levels[i90]:.0%}", f"{c.coverage[i90]:.1%}",
                       help="Share of held-out rows inside the central interval (ellipsoid) of that level.")
        cols[3].metric("held-out rows", f"{c.n:,}")
    left, right = box.columns(2, gap="medium")
    show_figure(pit_histogram(checks), key=f"{key}.pit", box=left)
    show_figure(coverage_figure(checks), key=f"{key}.coverage", box=right)
    frame = checks_frame(checks, units, levels=TABLE_LEVELS)
    with box.container():
        static_table(frame, {col: ".3f" for col in frame.columns if col not in ("method", "held-out rows")})


@st.cache_resource(max_entries=16, show_spinner=False)
def _lab_checks(key: tuple, _res) -> ModelChecks:
    """The checks of a held-out Lab fit (cached per configuration)."""
    from distviz.viz.checks import model_checks

    test = _res.test
    dist = _res.model.predict_dist(test.X)
    return model_checks(dist, test.y, name=_res.config.algorithm)


def lab_checks(cfg: FitConfig, upload: bytes | None = None, box=None) -> None:
    """Fit `cfg` with TEST_FRACTION of its rows held out (cached like every Lab fit) and show the checks on them."""
    box = st if box is None else box
    held_cfg = replace(cfg, test_fraction=TEST_FRACTION)
    with box.container():
        try:
            held = fit_model(held_cfg, upload, progress_container=st.empty())
            checks = _lab_checks(held_cfg.key(), held)
        except FitCancelled:
            return
        except Exception as exc:  # noqa: BLE001 - one sentence (Streamlit's rerun signals are BaseExceptions)
            show_error(error_sentence(exc))
            return
        label = registry.get(cfg.algorithm).label
        st.caption(f"The same settings ({escape_markdown(label)}) refitted on {len(held.data.y):,} rows; the other "
                   f"{checks.n:,} rows ({TEST_FRACTION:.0%}, drawn at random with the seed) were held out before the "
                   f"fit, so neither the trees nor early stopping saw them. The fit above uses every row."
                   + (" For the categorical family the PIT and CRPS treat the class labels 0, 1, … as ordered."
                      if cfg.family == "categorical" else ""))
        show_checks([replace(checks, name=label.split(" (")[0])], key="lab.checks",
                    units="" if cfg.family in ("categorical", "bernoulli") else "units of y")


def prediction_key(pred) -> str:
    """A content hash of a drifter comparison's test predictions (the observed velocities and every per-row NLL)."""
    import hashlib

    h = hashlib.sha1()
    for k in ["u", "v"] + sorted(str(v) for v in pred.data_vars if str(v).startswith(("nll_", "mean_", "cov_"))):
        h.update(k.encode())
        h.update(np.ascontiguousarray(pred[k].values, dtype=float).tobytes())
    return h.hexdigest()


@st.cache_resource(max_entries=4, show_spinner="Scoring the test rows …")
def _drifter_checks(key: str, _pred) -> list[ModelChecks]:
    """The checks of every method of a drifter comparison (cached per content of its predictions)."""
    from distviz.viz.checks import drifter_checks

    return drifter_checks(_pred)


def drifter_checks_panel(res, box=None) -> None:
    """The model checks of a drifter comparison's test rows, in a folded expander (computed when it is opened)."""
    exp = checks_expander(st if box is None else box, "Model checks on the test drifters: PIT, coverage at several "
                                                      "levels, energy score", key="drift.checks_open")
    if exp is None:
        return
    with exp:
        pred = res.predictions
        checks = _drifter_checks(prediction_key(pred), pred)
        st.caption(f"{len(pred['u']):,} test rows of drifters no fit saw (the split is by drifter id). For a bivariate "
                   "Normal the PIT is the χ² (2 degrees of freedom) cdf of the squared Mahalanobis distance of the "
                   "observed (u, v), uniform when the predicted law is right; the coverage is that of the prediction "
                   "ellipses; the energy score is the CRPS's bivariate form (200 draws per row). The mixture "
                   "averages (Mix) are not bivariate Normals and are left out.")
        show_checks(checks, key="drift.checks", units="cm/s")
