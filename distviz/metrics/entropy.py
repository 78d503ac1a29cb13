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
    """The cells of a partition, their weights W_J and their mean sufficient statistics eta*_J.

    ``W_J = sum_{i in J} w_i`` and ``eta*_J = sum_{i in J} w_i T(y_i) / W_J`` (the exactly fitted
    leaf in mean coordinates, mirror_vs_natural_boosting.tex, 'Entropy and the exact leafwise NLL
    criterion').

    Parameters
    ----------
    T : array-like of shape (n,) or (n, dim)
        Sufficient statistics T(y_i) of the rows (a 1-D array is one statistic).
    partition_ids : array-like of shape (n,)
        Cell label of every row (e.g. tree leaf ids); any sortable labels.
    sample_weight : array-like of shape (n,), optional
        Finite non-negative row weights with a positive sum; None weighs every row 1.

    Returns
    -------
    ids : ndarray of shape (J,)
        The distinct cell labels, sorted.
    W : ndarray of shape (J,)
        The cells' summed weights.
    means : ndarray of shape (J, dim)
        The cells' weighted mean statistics (NaN for a cell of zero weight).

    Raises
    ------
    distviz.errors.DataError
        If `partition_ids` does not have one entry per row of `T`, or the weights are invalid.

    Examples
    --------
    >>> from distviz.metrics import partition_means
    >>> ids, W, means = partition_means([1.0, 2.0, 3.0, 5.0], [0, 0, 1, 1])
    >>> ids.tolist(), W.tolist(), means.tolist()
    ([0, 1], [2.0, 2.0], [[1.5], [4.0]])
    """
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
    """Generalised entropy ``H_A(P) = -sum_J (W_J / W) A*(eta*_J)`` of a partition.

    The cell weights ``W_J`` and mean statistics ``eta*_J`` are those of `partition_means`, ``A*``
    is the family's convex conjugate (``family.conjugate``) and ``W = sum_J W_J``.  For a partition
    whose leaves are fitted exactly this is the weighted NLL up to the carrier term ``E[-log h(y)]``
    (mirror_vs_natural_boosting.tex, 'Entropy and the exact leafwise NLL criterion' and
    'Monitoring during training').

    Cells of zero weight are ignored.  A degenerate cell (e.g. one Normal observation: zero variance)
    has A* = +inf and so entropy -inf, as the formula says; `project=True` first moves every cell mean
    a margin inside the mean domain (family.project_mean), which keeps the value finite for display.
    `generalized_entropy` is the same function.

    Parameters
    ----------
    family : str or ExponentialFamily
        The exponential family, by name or as an instance (``distviz.families.get``).
    T : array-like of shape (n,) or (n, dim)
        Sufficient statistics T(y_i) of the rows in the family's convention.
    partition_ids : array-like of shape (n,)
        Cell label of every row (e.g. tree leaf ids).
    sample_weight : array-like of shape (n,), optional
        Finite non-negative row weights with a positive sum; None weighs every row 1.
    project : bool, default=False
        Project the cell means inside the mean domain before applying ``A*``.

    Returns
    -------
    float
        The entropy (-inf when a cell is degenerate and `project` is False).

    Examples
    --------
    Poisson, ``A*(m) = m log m - m``; two cells with means 1.5 and 4:

    >>> from distviz.metrics import generalised_entropy
    >>> round(generalised_entropy("poisson", [1.0, 2.0, 3.0, 5.0], [0, 0, 1, 1]), 4)
    -0.3267
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
