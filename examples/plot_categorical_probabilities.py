"""
Three classes: boosting the class probabilities
===============================================

The categorical family with K classes has T(y) = ([y = 0], ..., [y = K - 2]): its mean coordinate eta* is the
vector of the first K - 1 class probabilities and its natural coordinate eta the log-odds against the last
class. ``predict_dist`` returns a ``CategoricalDist`` whose ``probs`` holds all K probabilities per row.
"""

# %%
# Data and two fits
# -----------------
# ``make_synthetic("categorical")`` draws one of three classes with probabilities softmax(2 sin x1, 0.9 x1, 0).
# MGD adds its trees to the probabilities themselves, NGD to the log-odds. Leaves hold at least 50 rows.
import matplotlib.pyplot as plt
import numpy as np

from distviz.data.synthetic import make_synthetic
from distviz.estimators import DistributionalBoosting
from distviz.viz.palette import OKABE_ITO

data = make_synthetic("categorical", n=3000, random_state=0)
train, test = data.split(0.5, random_state=0)
print(data.description)
fits = {law: DistributionalBoosting("categorical", family_params={"K": 3}, law=law, n_estimators=50,
                                    learning_rate=0.1, min_weight_leaf=50).fit(train.X, train.y) for law in ("mgd", "ngd")}
for law, m in fits.items():
    print(f"{law.upper()}: test NLL {-m.score(test.X, test.y):.4f} nats "
          f"(true distribution {test.oracle_nll():.4f}), rows moved back into the domain "
          f"{int(m.trace_.n_projected.sum())}")

# %%
# Predicted class probabilities
# -----------------------------
# Solid: MGD's ``predict_dist(X).probs``; dashed: NGD's; thick grey: the true probabilities, from the true
# eta* of the simulation plus the last class's share.
grid = data.grid(300)
true_mean = data.truth_mean(grid)
true_probs = np.column_stack([true_mean, 1 - true_mean.sum(axis=1)])
colors = [OKABE_ITO["blue"], OKABE_ITO["orange"], OKABE_ITO["green"]]
fig, ax = plt.subplots(figsize=(9, 4.3))
probs = {law: m.predict_dist(grid).probs for law, m in fits.items()}
for k in range(3):
    ax.plot(grid[:, 0], true_probs[:, k], color="0.75", lw=5)
    ax.plot(grid[:, 0], probs["mgd"][:, k], color=colors[k], lw=1.8, label=f"class {k}")
    ax.plot(grid[:, 0], probs["ngd"][:, k], "--", color=colors[k], lw=1.5)
ax.plot([], [], color="0.75", lw=5, label="true")
ax.plot([], [], color="0.3", lw=1.8, label="MGD")
ax.plot([], [], "--", color="0.3", lw=1.5, label="NGD")
ax.set_xlabel("feature x1")
ax.set_ylabel("P(y = k | x1)")
ax.set_ylim(0, 1)
ax.set_title("Class probabilities of three classes")
ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
fig.tight_layout()

# %%
# Every row's probabilities sum to one, and the largest distance from the true probabilities on the grid:
for law, p in probs.items():
    print(f"{law.upper()}: max |sum of probs - 1| = {np.max(np.abs(p.sum(axis=1) - 1)):.1e}, "
          f"mean |p - p_true| = {np.mean(np.abs(p - true_probs)):.3f}")
plt.show()
