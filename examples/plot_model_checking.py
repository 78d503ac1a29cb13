"""
Model checking: PIT, coverage and CRPS
======================================

A predictive distribution is calibrated when the observed outcomes look like draws from it. Three checks on
``predict_dist`` objects, all in ``distviz.metrics``: the probability integral transform ``pit`` (F(y) per row,
uniform on (0, 1) under a right model), ``coverage`` (the share of rows inside the central ``level`` interval,
equal to ``level`` under a right model) and ``crps`` (the continuous ranked probability score, lower is
better). We check a Gamma fit, an Exponential fit of the same data (the wrong family: its shape is fixed at 1)
and the Gamma fit's round 0 (the constant marginal fit, which ignores x).
"""

# %%
# Data and three predictive distributions
# ---------------------------------------
# Gamma data whose shape and mean both change with x1; 3,000 rows, half for fitting and half for checking.
import matplotlib.pyplot as plt
import numpy as np

from distviz.data.synthetic import make_synthetic
from distviz.estimators import DistributionalBoosting
from distviz.metrics import coverage, crps, pit
from distviz.viz.palette import OKABE_ITO

data = make_synthetic("gamma", n=3000, random_state=0)
train, test = data.split(0.5, random_state=0)
print(data.description)

gamma = DistributionalBoosting("gamma", law="mgd", n_estimators=40, learning_rate=0.2).fit(train.X, train.y)
expon = DistributionalBoosting("exponential", law="mgd", n_estimators=40, learning_rate=0.2).fit(train.X, train.y)
models = {"Gamma, 40 rounds": gamma.predict_dist(test.X),
          "Exponential, 40 rounds": expon.predict_dist(test.X),
          "Gamma, round 0 (no x)": gamma.predict_dist(test.X, max_iter=0)}
colors = [OKABE_ITO["blue"], OKABE_ITO["vermillion"], OKABE_ITO["orange"]]

# %%
# PIT histograms and coverage
# ---------------------------
# A flat PIT histogram (dashed line: the uniform density) means calibrated. The Exponential's PIT is hump-shaped:
# its laws are too wide. With shape 1 its variance is mean^2, while the data's shape lies between 1 and 5
# (variance mean^2 / shape), so too few outcomes land in its tails and its intervals cover more than their level.
# The constant fit is calibrated on average over x, so its PIT is nearly flat, yet its CRPS and NLL are the worst
# of the three: calibration alone does not make a forecast sharp.
levels = np.linspace(0.05, 0.95, 19)
fig, axes = plt.subplots(1, 4, figsize=(14, 3.6))
for ax, (name, dist), color in zip(axes, models.items(), colors):
    u = pit(dist, test.y)
    ax.hist(u, bins=20, range=(0, 1), density=True, color=color, alpha=0.8)
    ax.axhline(1.0, color=OKABE_ITO["black"], ls="--", lw=1)
    ax.set_title(name, fontsize=10)
    ax.set_xlabel("PIT value F(y)")
    ax.set_ylim(0, 2.6)
    axes[3].plot(levels, coverage(dist, test.y, levels), "o-", ms=3, color=color, label=name)
    print(f"{name}: test NLL {-np.mean(dist.logpdf(test.y)):.3f}, mean CRPS {np.mean(crps(dist, test.y)):.3f}, "
          f"90% interval covers {coverage(dist, test.y, (0.9,))[0]:.1%}, "
          f"PIT in the outer 10% (expected 10%): {np.mean((u < 0.05) | (u > 0.95)):.1%}")
axes[0].set_ylabel("density")
axes[3].plot([0, 1], [0, 1], color=OKABE_ITO["black"], ls="--", lw=1, label="calibrated")
axes[3].set_xlabel("nominal level of the central interval")
axes[3].set_ylabel("observed coverage")
axes[3].set_title("Coverage of central intervals", fontsize=10)
axes[3].legend(fontsize=7)
fig.tight_layout()
plt.show()
