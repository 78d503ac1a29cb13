"""
WGBoost: particles flowing to a posterior per input
===================================================

Wasserstein gradient boosting (WGBoost) gives every input x_i a set of N particles and moves them, one boosting
round at a time, towards a target distribution pi_i. Each round fits one tree to a kernelised Wasserstein
gradient of KL(. | pi_i) at the particles (SKA, the default method). This is the synthetic study of Matsubara's
App. E: pi_i = N(sin x_i, 0.5^2), so the exact answer is known at every x.
"""

# %%
# The target and the fit
# ----------------------
# ``gaussian_location_target(0.5)`` is the App. E target, given to WGBoost as gradient and Hessian callables.
# The ten particles of every input start on an even grid from -10 to 10, far from the target, so that the
# flow is visible. ``trace_`` keeps the particles of ``trace_rows`` inputs after every round.
import matplotlib.pyplot as plt
import numpy as np

from distviz.estimators import WGBoost
from distviz.families.posteriors import gaussian_location_target
from distviz.viz.palette import ALGO_COLORS, OKABE_ITO

X = np.linspace(-3.5, 3.5, 200)[:, None]
y = np.sin(X[:, 0])
model = WGBoost(gaussian_location_target(0.5), method="ska", n_particles=10, bandwidth=0.1, learning_rate=0.1,
                n_estimators=60, max_depth=3, init=np.linspace(-10, 10, 10)[:, None], trace_rows=200,
                random_state=1).fit(X, y)
tr = model.trace_
x = tr.x.values[:, 0]
P = tr.particles.values[..., 0]          # (round, input, particle)

# %%
# Particles at four rounds
# ------------------------
# Each blue line is one particle (particle n of every input, joined across x); the black line is the target's
# mean sin(x) and the dashed lines its 95% band, sin(x) +- 1.96 x 0.5.
shown = (0, 5, 20, 60)
fig, axes = plt.subplots(1, 4, figsize=(13, 3.6), sharey=True)
for ax, r in zip(axes, shown):
    ax.plot(x, P[r], color=ALGO_COLORS["ska"], lw=0.8, alpha=0.8)
    ax.plot(x, np.sin(x), color=OKABE_ITO["black"], lw=1.8, label="target mean sin(x)")
    for sign in (-1, 1):
        ax.plot(x, np.sin(x) + sign * 1.96 * 0.5, color=OKABE_ITO["black"], lw=1.2, ls="--",
                label="target 95% band" if sign == 1 else None)
    ax.set_title(f"round {r}")
    ax.set_xlabel("input x")
axes[0].plot([], [], color=ALGO_COLORS["ska"], label="particles (SKA)")
axes[0].set_ylabel("particle value theta")
axes[0].set_ylim(-11, 11)
axes[0].legend(loc="lower left", fontsize=8)
fig.tight_layout()

# %%
# How close are the particles to the target?
# ------------------------------------------
# Per input, the particles' mean should approach sin(x) and their standard deviation 0.5. ``mmd2`` in the trace
# is the squared maximum mean discrepancy between the particles and the target, averaged over the inputs.
mean_err = np.abs(P.mean(axis=2) - np.sin(x)).mean(axis=1)
sd = P.std(axis=2).mean(axis=1)
for r in shown:
    print(f"round {r:2d}: mean |particle mean - sin x| = {mean_err[r]:.3f}, mean particle sd = {sd[r]:.3f}, "
          f"MMD^2 = {float(tr.mmd2[r]):.4f}")

fig2, ax = plt.subplots(figsize=(6, 3.6))
ax.semilogy(tr["round"], tr.mmd2, color=ALGO_COLORS["ska"])
ax.set_xlabel("boosting round")
ax.set_ylabel("MMD$^2$ to the target (log scale)")
ax.set_title("Distance of the particles to N(sin x, 0.5$^2$)")
fig2.tight_layout()
plt.show()
