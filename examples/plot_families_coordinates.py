"""
Families and their two coordinates
==================================

Every output family in ``distviz.families`` is an exponential family p(y | eta) = h(y) exp(eta . T(y) - A(eta)),
with two coordinate systems: the natural parameter eta and the mean (dual) parameter eta* = E[T(y)] = grad A(eta).
The map eta -> eta* is the gradient of a convex function, its Jacobian is the Fisher metric g(eta), and its
inverse is grad A*, the gradient of the convex conjugate. MGD boosting adds trees in eta*, NGD boosting in eta.
"""

# %%
# The families and their coordinates
# ----------------------------------
import matplotlib.pyplot as plt
import numpy as np

from distviz import families
from distviz.viz.palette import ALGO_COLORS, OKABE_ITO

for name in families.available():
    fam = families.get(name, **({"K": 3} if name == "categorical" else {"P": 2} if name == "mvn" else {}))
    print(f"{name:12s} T(y) = ({', '.join(fam.param_names)});  eta = ({', '.join(fam.natural_names)});  "
          f"eta* = ({', '.join(fam.mean_names)})")

# %%
# One-parameter families: the mean map
# ------------------------------------
# For the Poisson, eta is the log rate and eta* the rate; for the Bernoulli, eta is the logit and eta* the
# probability. ``to_mean`` and ``to_natural`` are inverse maps, and ``fisher`` is the slope of ``to_mean``.
eta = np.linspace(-3, 2.5, 200)[:, None]
fig, axes = plt.subplots(1, 3, figsize=(14, 4.2))
for name, color in (("poisson", OKABE_ITO["blue"]), ("bernoulli", OKABE_ITO["vermillion"])):
    fam = families.get(name)
    mean = fam.to_mean(eta)
    axes[0].plot(eta[:, 0], mean[:, 0], color=color, lw=2, label=f"{name}: {fam.mean_names[0]}")
    roundtrip = np.max(np.abs(fam.to_natural(mean) - eta))
    slope = np.gradient(mean[:, 0], eta[:, 0])
    fisher = fam.fisher(eta)[:, 0, 0]
    print(f"{name}: max |to_natural(to_mean(eta)) - eta| = {roundtrip:.1e}; "
          f"max relative gap between fisher(eta) and the slope of to_mean: "
          f"{np.max(np.abs(slope[1:-1] / fisher[1:-1] - 1)):.1e}")
axes[0].set_xlabel("natural parameter eta (log rate / logit)")
axes[0].set_ylabel("mean parameter eta* = E[y]")
axes[0].set_title("eta -> eta* = A'(eta)")
axes[0].set_ylim(0, 8)
axes[0].legend()
# sphinx_gallery_defer_figures

# %%
# The Normal: one grid, two pictures
# ----------------------------------
# T(y) = (y, y^2), eta = (mu / sigma^2, -1 / (2 sigma^2)) and eta* = (mu, mu^2 + sigma^2). Grey: lines of
# constant sigma (solid) and of constant mu (dotted), drawn in both coordinates. In colour, two paths between the
# same two Normals A = N(-1.5, 0.7^2) and B = N(1.5, 1.5^2): the straight segment in eta (the direction of an NGD
# step) and the straight segment in eta* (the direction of an MGD step). Each is curved in the other system.
normal = families.get("normal")
mus, sigmas = np.linspace(-2, 2, 9), np.linspace(0.6, 1.6, 6)
mu_fine, sigma_fine = np.linspace(-2, 2, 100), np.linspace(0.6, 1.6, 100)


def natural(mu, sigma):
    return np.column_stack([mu / sigma**2, -0.5 / sigma**2])


for s in sigmas:
    e = natural(mu_fine, np.full_like(mu_fine, s))
    axes[1].plot(e[:, 0], e[:, 1], color="0.75", lw=1)
    m = normal.to_mean(e)
    axes[2].plot(m[:, 0], m[:, 1], color="0.75", lw=1)
for mu in mus:
    e = natural(np.full_like(sigma_fine, mu), sigma_fine)
    axes[1].plot(e[:, 0], e[:, 1], ":", color="0.6", lw=1)
    m = normal.to_mean(e)
    axes[2].plot(m[:, 0], m[:, 1], ":", color="0.6", lw=1)

t = np.linspace(0, 1, 101)[:, None]
ends = natural(np.array([-1.5, 1.5]), np.array([0.7, 1.5]))
straight_eta = (1 - t) * ends[0] + t * ends[1]
ends_mean = normal.to_mean(ends)
straight_mean = (1 - t) * ends_mean[0] + t * ends_mean[1]
paths = {"straight in eta (NGD)": (straight_eta, normal.to_mean(straight_eta), ALGO_COLORS["ngd"], "-"),
         "straight in eta* (MGD)": (normal.to_natural(straight_mean), straight_mean, ALGO_COLORS["mgd"], "--")}
for label, (in_eta, in_mean, color, ls) in paths.items():
    axes[1].plot(in_eta[:, 0], in_eta[:, 1], ls, color=color, lw=2.5, label=label)
    axes[2].plot(in_mean[:, 0], in_mean[:, 1], ls, color=color, lw=2.5, label=label)
for ax, pts in ((axes[1], ends), (axes[2], ends_mean)):
    for name, pt in zip("AB", pts):
        ax.plot(*pt, "o", color=OKABE_ITO["black"], ms=6)
        ax.annotate(name, pt, textcoords="offset points", xytext=(6, 4), fontsize=11)
mid_gap = np.linalg.norm(paths["straight in eta (NGD)"][1][50] - straight_mean[50])
print(f"Normal: the midpoints of the two paths are {mid_gap:.2f} apart in eta* coordinates")
axes[1].legend(fontsize=8, loc="lower left")
axes[1].set_xlabel("eta_1 = mu / sigma$^2$")
axes[1].set_ylabel("eta_2 = -1 / (2 sigma$^2$)")
axes[1].set_title("Normal in natural coordinates eta")
axes[2].set_xlabel("eta*_1 = E[y]")
axes[2].set_ylabel("eta*_2 = E[y$^2$]")
axes[2].set_title("Normal in mean coordinates eta*")
fig.tight_layout()

# %%
# Duality: A(eta) + A*(eta*) = eta . eta* at every point (Fenchel-Young with equality), for the grid above.
grid = natural(*[a.ravel() for a in np.meshgrid(mus, sigmas)])
dual = normal.to_mean(grid)
gap = normal.log_partition(grid) + normal.conjugate(dual) - np.sum(grid * dual, axis=1)
print(f"Normal: max |A(eta) + A*(eta*) - eta . eta*| over {len(grid)} points = {np.max(np.abs(gap)):.1e}")
plt.show()
