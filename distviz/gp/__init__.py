"""distviz.gp: sparse Gaussian-process baselines fitted by ELBO, beta-ELBO and direct loss minimisation.

Wei, Sheth & Khardon, "Direct loss minimization for sparse Gaussian processes" (../shared/papers/dlm_sparse_gp.txt).
"""

from distviz.gp.compare import compare_1d
from distviz.gp.estimators import bmc, quadrature, sample_tilted, ups
from distviz.gp.model import SparseGP, beta_grid, select_beta, warm_start_params

__all__ = ["SparseGP", "select_beta", "beta_grid", "warm_start_params", "compare_1d", "bmc", "ups", "quadrature", "sample_tilted"]
