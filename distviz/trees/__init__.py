"""distviz.trees: fast histogram regression trees with vector leaves that record every split gain.

``Binner`` quantises features once; ``HistTree`` grows one tree (criterion "variance" = Gain^reg or
"entropy" = Gain^ent of mirror_vs_natural_boosting.tex); ``fit_many`` grows B trees sharing X in one
call (WGBoost's particle trees) or one shared multi-output tree.  A fitted tree is one ``TreeRecord``
(an array of nodes, ``distviz/trees/record.py``): what HistTree wraps, Forest batches and FlatForest concatenates.

Importing this package touches no file: ``prepare_numba_cache()`` drops numba's cache files of these kernels
when a source changed since they were compiled; the test run, the app's server, the command line and the Dask
workers call it before the first fit (see ``distviz/trees/_cache.py``).
"""

from importlib import import_module

from ._cache import prepare_numba_cache

_LAZY = {
    "Binner": "distviz.trees.binning", "BinnedX": "distviz.trees.binning", "Forest": "distviz.trees.forest",
    "SharedForest": "distviz.trees.forest", "fit_many": "distviz.trees.forest", "NODE_DTYPE": "distviz.trees.record",
    "TreeRecord": "distviz.trees.record", "FitContext": "distviz.trees.tree", "HistTree": "distviz.trees.tree",
}

__all__ = sorted(_LAZY) + ["prepare_numba_cache"]


def __getattr__(name):
    """Import the module that defines `name` on first use (the kernels' modules alone import no scikit-learn)."""
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'distviz.trees' has no attribute {name!r}")
