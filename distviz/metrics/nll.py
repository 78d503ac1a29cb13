"""Weighted negative log-likelihood (mirror_vs_natural_boosting.tex, 'Monitoring during training')."""

from __future__ import annotations

import numpy as np

from ._util import weights, wmean

__all__ = ["nll", "nll_per_row"]


def nll_per_row(family, y, eta, log_h=None) -> np.ndarray:
    """A(eta_i) - <eta_i, T(y_i)> - log h(y_i) per row; pass precomputed log h(y) as `log_h` to save time."""
    from distviz.families import get

    return get(family).nll(y, eta, log_h=log_h)


def nll(family, y, eta, sample_weight=None, log_h=None) -> float:
    """Weighted mean NLL  (1/W) sum_i w_i [A(eta_i) - <eta_i, T(y_i)> - log h(y_i)]  (note, 'Monitoring')."""
    per = nll_per_row(family, y, eta, log_h=log_h)
    return wmean(per, weights(per.shape[0], sample_weight))
