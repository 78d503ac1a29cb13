"""
Split gains and the generalised entropy
=======================================

Every split of every tree records two gains: Gain^reg, the drop in weighted squared error of the tree's
targets (what the tree maximises), and Gain^ent, the drop in the generalised entropy
H = -sum_J (W_J / W) A*(eta*_J) of the partition, where eta*_J is the mean of T(y) in leaf J and A* the
convex conjugate of the log-partition. The trace keeps both gains per node and H per round.
"""

# %%
# A Poisson fit with two useless features
# ---------------------------------------
# Only x1 drives the rate; x2 and x3 are noise. ``trace_rows=n`` keeps every training row in the trace.
import matplotlib.pyplot as plt
import numpy as np
from scipy import stats

from distviz.data.synthetic import make_synthetic
from distviz.estimators import DistributionalBoosting
from distviz.viz.palette import ALGO_COLORS, OKABE_ITO

data = make_synthetic("poisson", n=3000, p=3, random_state=0)
model = DistributionalBoosting("poisson", law="mgd", n_estimators=40, learning_rate=0.1,
                               trace_rows=len(data.y)).fit(data.X, data.y)
tr = model.trace_
fam = model.family_
print(data.description)

# %%
# Gain^reg against Gain^ent, one point per split
# ----------------------------------------------
# The node tables are (round, node) arrays; leaves have NaN gains and feature -1.
split = tr.node_feature.values >= 0
feature = tr.node_feature.values[split]
g_reg, g_ent = tr.node_gain_reg.values[split], tr.node_gain_ent.values[split]
rho = stats.spearmanr(g_reg, g_ent).statistic
for j in range(3):
    print(f"x{j + 1}: {np.sum(feature == j)} splits, total Gain^ent {g_ent[feature == j].sum():.4f} nats")
print(f"Spearman rank correlation of Gain^reg and Gain^ent over {split.sum()} splits: {rho:.3f}")

fig, (ax_g, ax_h) = plt.subplots(1, 2, figsize=(11, 4.5))
colors = [OKABE_ITO["blue"], OKABE_ITO["orange"], OKABE_ITO["green"]]
markers = ["o", "s", "^"]
for j in range(3):
    sel = feature == j
    ax_g.scatter(g_reg[sel], g_ent[sel], s=14, color=colors[j], marker=markers[j], label=f"split on x{j + 1}")
ax_g.set_xscale("log")
ax_g.set_yscale("log")
ax_g.set_xlabel("Gain$^{reg}$ (drop in weighted squared error of the targets)")
ax_g.set_ylabel("Gain$^{ent}$ (drop in entropy, nats)")
ax_g.set_title(f"Every split of 40 trees (Spearman {rho:.2f})")
ax_g.legend()
# sphinx_gallery_defer_figures

# %%
# The entropy gains of one tree add up
# ------------------------------------
# Splitting one leaf J into L and R lowers H by Gain^ent, so the gains of a tree's splits telescope to
# H(root) - H(leaves), with H(root) = -A*(mean of T(y)) the entropy of the whole sample:
H_root = -float(fam.conjugate(fam.sufficient_stats(data.y).mean(axis=0, keepdims=True))[0])
per_tree = np.nansum(tr.node_gain_ent.values[1:], axis=1)
gap = np.max(np.abs(per_tree - (H_root - tr.entropy.values[1:])))
print(f"H(root) = {H_root:.4f}; max over trees of |sum Gain^ent - (H(root) - H(leaves))| = {gap:.1e}")
# sphinx_gallery_defer_figures

# %%
# Entropy next to the NLL
# -----------------------
# With T(y)'s leaf means as its eta*, a single tree's partition reaches the NLL H - mean log h(y): that is the
# best any piecewise-constant model on that partition can do. The boosted model adds 40 such trees with
# learning rate 0.1 and ends below every single tree's bound.
log_h = float(np.mean(fam.log_base_measure(data.y)))
leafwise = tr.entropy.values[1:] - log_h
rounds = tr["round"].values
ax_h.plot(rounds, tr.train_nll, color=ALGO_COLORS["mgd"], label="boosted model, train NLL")
ax_h.plot(rounds[1:], leafwise, "o", ms=3, color=OKABE_ITO["vermillion"],
          label="one tree's partition, H - mean log h(y)")
ax_h.axhline(data.oracle_nll(), color=ALGO_COLORS["truth"], ls="--", label="true distribution")
ax_h.set_xlabel("boosting round")
ax_h.set_ylabel("mean NLL (nats)")
ax_h.set_title("Training NLL and the partition entropy")
ax_h.legend()
fig.tight_layout()
print(f"best single-tree partition NLL {leafwise.min():.3f}; boosted NLL after {rounds[-1]} rounds "
      f"{float(tr.train_nll[-1]):.3f}; true distribution {data.oracle_nll():.3f}")
plt.show()
