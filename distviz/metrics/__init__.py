"""Metrics: weighted NLL, RMSE, Gaussian KL (both directions), MMD^2, prediction regions, PR-AUC, generalised entropy,
and the model checks of predictive distributions (PIT, coverage, CRPS)."""

from .calibration import coverage, pit
from .classification import pr_auc
from .crps import crps
from .divergence import gaussian_kl, kl_pred_true, kl_true_pred
from .entropy import generalised_entropy, generalized_entropy, partition_means
from .mmd import gaussian_kernel_mean, mmd2, mmd2_gaussian
from .nll import nll, nll_per_row
from .regions import in_region, mahalanobis2, mean_region_area, region_area, region_coverage, region_quantile
from .regression import mae, rmse

__all__ = ["nll", "nll_per_row", "rmse", "mae", "gaussian_kl", "kl_pred_true", "kl_true_pred", "mmd2",
           "mmd2_gaussian", "gaussian_kernel_mean", "region_quantile", "mahalanobis2", "in_region",
           "region_coverage", "region_area", "mean_region_area", "pr_auc", "generalised_entropy",
           "generalized_entropy", "partition_means", "pit", "coverage", "crps"]
