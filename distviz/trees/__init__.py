"""distviz.trees: fast histogram regression trees with vector leaves that record every split gain.

``Binner`` quantises features once; ``HistTree`` grows one tree (criterion "variance" = Gain^reg or
"entropy" = Gain^ent of mirror_vs_natural_boosting.tex); ``fit_many`` grows B trees sharing X in one
call (WGBoost's particle trees) or one shared multi-output tree.  A fitted tree is one ``TreeRecord``
(an array of nodes, ``distviz/trees/record.py``): what HistTree wraps, Forest batches and FlatForest concatenates.

Importing this package touches no file: ``prepare_numba_cache()`` drops numba's cache files of these kernels
when a source changed since they were compiled; the test run, the app's server, the command line and the Dask
workers call it before the first fit (see ``distviz/trees/_cache.py``).
"""

from ._cache import prepare_numba_cache
from .binning import BinnedX, Binner
from .forest import Forest, SharedForest, fit_many
from .record import NODE_DTYPE, TreeRecord
from .tree import FitContext, HistTree

__all__ = ["Binner", "BinnedX", "FitContext", "HistTree", "NODE_DTYPE", "TreeRecord", "fit_many", "Forest",
           "SharedForest", "prepare_numba_cache"]
