"""
MGD vs NGD: the dual iterates round by round
============================================

Mirror-descent boosting (MGD) adds its trees to the dual (mean) coordinate eta* = E[T(y)], natural-gradient
boosting (NGD) adds them to the natural coordinate eta. Both minimise the same negative log-likelihood, but
they walk different paths. Here we fit both laws to the same Normal data, where T(y) = (y, y^2), and follow the
dual iterate eta*(x) = (E[y], E[y^2]) of three training rows round by round.
"""

# %%
# Data and the two fits
# ---------------------
# ``make_synthetic("normal")`` draws y from a Normal whose mean and standard deviation both depend on x1,
# and keeps the true eta* of every row. Both fits use the same trees (depth 3), learning rate and rounds;
# only the law differs. ``trace_`` records eta and eta* of every training row after every round.
import matplotlib.pyplot as plt
import numpy as np

from distviz.data.synthetic import make_synthetic
from distviz.estimators import DistributionalBoosting
from distviz.viz.palette import ALGO_COLORS, OKABE_ITO

data = make_synthetic("normal", n=2000, random_state=0)
fits = {law: DistributionalBoosting("normal", law=law, n_estimators=40, learning_rate=0.1,
                                    random_state=0).fit(data.X, data.y)
        for law in ("mgd", "ngd")}
print(data.description)

# %%
# Paths of the dual iterate
# -------------------------
# Each line is one row's eta* after rounds 0, 1, ..., 40, from the common start (the marginal fit, round 0)
# towards the row's true eta* (black cross). Each MGD round adds a leaf value to eta* itself; each NGD round adds
# one to eta, and the map eta -> eta* is curved, so the same data move the two iterates along different routes.
rows = [int(np.argmin(np.abs(data.X[:, 0] - x))) for x in (-2.0, 0.3, 1.5)]
fig, (ax, ax_nll) = plt.subplots(1, 2, figsize=(11, 4.5))
for law, model in fits.items():
    tr = model.trace_
    obs = {int(o): k for k, o in enumerate(tr.obs_index.values)}
    for j, row in enumerate(rows):
        path = tr.eta_star.values[:, obs[row], :]
        ax.plot(path[:, 0], path[:, 1], "-o", ms=2.5, color=ALGO_COLORS[law],
                label=f"{law.upper()}" if j == 0 else None)
for j, row in enumerate(rows):
    ax.plot(*data.eta_star[row], "x", color=OKABE_ITO["black"], ms=9, mew=2,
            label="true eta*" if j == 0 else None)
    ax.annotate(f"x1 = {data.X[row, 0]:.1f}", data.eta_star[row], textcoords="offset points", xytext=(6, 6))
ax.set_xlabel("E[y]  (first dual coordinate)")
ax.set_ylabel("E[y$^2$]  (second dual coordinate)")
ax.set_title("Dual iterate eta* per round, three rows")
ax.margins(0.12)
ax.legend()
# sphinx_gallery_defer_figures

# %%
# Both laws reach about the same training NLL; the dashed line is the NLL of the true distribution (a fit can go
# below it on its own training rows).
oracle = data.oracle_nll()
for law, model in fits.items():
    nll = model.trace_.train_nll.values
    ax_nll.plot(model.trace_["round"], nll, color=ALGO_COLORS[law], label=law.upper())
    print(f"{law.upper()}: train NLL {nll[0]:.3f} at round 0 -> {nll[-1]:.3f} at round {len(nll) - 1}")
ax_nll.axhline(oracle, color=ALGO_COLORS["truth"], ls="--", label="true distribution")
ax_nll.set_xlabel("boosting round")
ax_nll.set_ylabel("mean training NLL (nats)")
ax_nll.set_title("Training NLL per round")
ax_nll.legend()
fig.tight_layout()
print(f"oracle NLL {oracle:.3f}")

# %%
# How far apart are the two paths? The distance between the MGD and NGD iterates of the same row in the eta*
# plane, averaged over the training rows, at a few rounds:
gap = np.linalg.norm(fits["mgd"].trace_.eta_star.values - fits["ngd"].trace_.eta_star.values, axis=-1)
for r in (1, 10, 20, 40):
    print(f"round {r:2d}: mean |eta*_MGD - eta*_NGD| = {gap[r].mean():.3f}")
plt.show()
