"""Generalised entropy of a partition (mirror_vs_natural_boosting.tex, 'Entropy and the exact leafwise NLL criterion').

H_A(P) = -sum_J (W_J / W) A*(eta*_J),  eta*_J = sum_{i in J} w_i T(y_i) / W_J:  the weighted NLL of a
partition whose leaves are fitted exactly, up to the carrier term E[-log h(y)].
"""

from __future__ import annotations

import numpy as np

from distviz.errors import DataError

from ._util import weights

__all__ = ["partition_means", "generalised_entropy", "generalized_entropy"]


def partition_means(T, partition_ids, sample_weight=None):
    """(ids, W_J, eta*_J): the cells, their weights and their weighted mean sufficient statistics."""
    T = np.asarray(T, dtype=float)
    if T.ndim == 1:
        T = T[:, None]
    ids = np.asarray(partition_ids)
    if ids.shape != (T.shape[0],):
        raise DataError(f"partition_ids must have one entry per row of T ({T.shape[0]}), got shape {ids.shape}.")
    w = weights(T.shape[0], sample_weight)
    w = np.ones(T.shape[0]) if w is None else w
    cells, inv = np.unique(ids, return_inverse=True)
    WJ = np.bincount(inv, weights=w, minlength=cells.size)
    S = np.stack([np.bincount(inv, weights=w * T[:, k], minlength=cells.size) for k in range(T.shape[1])], axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return cells, WJ, S / WJ[:, None]


def generalised_entropy(family, T, partition_ids, sample_weight=None, project: bool = False) -> float:
    """-sum_J W_J/W A*(eta*_J) for sufficient statistics T (n, dim) and cell labels (n,).

    Cells of zero weight are ignored.  A degenerate cell (e.g. one Normal observation: zero variance)
    has A* = +inf and so entropy -inf, as the formula says; `project=True` first moves every cell mean
    a margin inside the mean domain (family.project_mean), which keeps the value finite for display.
    """
    from distviz.families import get

    fam = get(family)
    _, WJ, M = partition_means(T, partition_ids, sample_weight)
    keep = WJ > 0
    WJ, M = WJ[keep], M[keep]
    if project:
        M = fam.project_mean(M)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = fam.conjugate(M)
    return float(-(WJ * a).sum() / WJ.sum())


generalized_entropy = generalised_entropy
