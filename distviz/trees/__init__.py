"""distviz.trees: fast histogram regression trees with vector leaves that record every split gain.

``Binner`` quantises features once; ``HistTree`` grows one tree (criterion "variance" = Gain^reg or
"entropy" = Gain^ent of mirror_vs_natural_boosting.tex); ``fit_many`` grows B trees sharing X in one
call (WGBoost's particle trees) or one shared multi-output tree.
"""

from ._cache import refresh_numba_cache

refresh_numba_cache()

from .binning import BinnedX, Binner  # noqa: E402
from .forest import Forest, SharedForest, fit_many  # noqa: E402
from .nodes import TreeNodes  # noqa: E402
from .tree import FitContext, HistTree  # noqa: E402

__all__ = ["Binner", "BinnedX", "FitContext", "HistTree", "TreeNodes", "fit_many", "Forest", "SharedForest"]
