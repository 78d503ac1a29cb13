"""Breiman's twonorm and ringnorm classification problems, simulated from their definitions.

Breiman (1996), "Bias, variance, and arcing classifiers" (Technical Report 460, Statistics Department,
UC Berkeley), as distributed by DELVE; two of the classification sets of the DLM paper
(dlm_sparse_gp.txt, Appendix D, Table 2: 7,400 rows, 20 features).  Both are defined by their
generating law, so they are drawn here instead of downloaded, with equal class probabilities:

* twonorm:  x | y = 1 ~ N(a 1, I),  x | y = 0 ~ N(-a 1, I),  a = 2 / sqrt(20);
* ringnorm: x | y = 1 ~ N(0, 4 I),  x | y = 0 ~ N(a 1, I),   a = 1 / sqrt(20).
"""

from __future__ import annotations

import numpy as np

from distviz.errors import ConfigError

__all__ = ["BREIMAN", "make_breiman"]

#: the problems and their dimension (Breiman's 20)
BREIMAN = ("twonorm", "ringnorm")
N_FEATURES = 20


def make_breiman(name: str, n: int, random_state=None) -> tuple[np.ndarray, np.ndarray]:
    """Draw `n` rows of Breiman's twonorm or ringnorm problem.

    Parameters
    ----------
    name : {"twonorm", "ringnorm"}
        The problem (module docstring).
    n : int
        Number of rows (at least 1).
    random_state : int, numpy.random.Generator or None
        Seed of the labels and features.

    Returns
    -------
    X : ndarray of shape (n, 20)
        Features.
    y : ndarray of shape (n,)
        Labels in {0, 1}, each with probability 1/2.

    Raises
    ------
    distviz.errors.ConfigError
        If `name` is unknown or `n` < 1.

    Examples
    --------
    >>> from distviz.data.breiman import make_breiman
    >>> X, y = make_breiman("twonorm", 1000, random_state=0)
    >>> X.shape, sorted(set(y.tolist()))
    ((1000, 20), [0.0, 1.0])
    >>> bool(abs(X[y == 1].mean() - 2 / 20 ** 0.5) < 0.05)
    True
    """
    if name not in BREIMAN:
        raise ConfigError(f"Unknown problem '{name}'; choose one of: {', '.join(BREIMAN)}.")
    if int(n) < 1:
        raise ConfigError(f"Need at least one row; got n={n}.")
    rng = np.random.default_rng(random_state)
    y = rng.integers(0, 2, int(n)).astype(float)
    z = rng.standard_normal((int(n), N_FEATURES))
    pos = y[:, None] == 1.0
    if name == "twonorm":
        a = 2.0 / np.sqrt(N_FEATURES)
        X = z + np.where(pos, a, -a)
    else:
        a = 1.0 / np.sqrt(N_FEATURES)
        X = np.where(pos, 2.0 * z, z + a)
    return X, y
