"""distviz.gp: sparse Gaussian-process baselines fitted by ELBO, beta-ELBO, direct loss minimisation and FITC.

Wei, Sheth & Khardon, "Direct loss minimization for sparse Gaussian processes" (../shared/papers/dlm_sparse_gp.txt).
"""

from distviz._optional import missing

try:
    import autograd  # noqa: F401  (every module of this package differentiates through autograd)
except ModuleNotFoundError:
    raise missing("autograd", "The sparse GP") from None

from distviz.gp.compare import compare_1d  # noqa: E402
from distviz.gp.estimators import bmc, quadrature, sample_tilted, ups  # noqa: E402
from distviz.gp.model import SparseGP, beta_grid, select_beta, warm_start_params  # noqa: E402

__all__ = ["SparseGP", "select_beta", "beta_grid", "warm_start_params", "compare_1d", "bmc", "ups", "quadrature", "sample_tilted"]
