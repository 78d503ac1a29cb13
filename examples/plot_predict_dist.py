"""
Predictive distributions: interval, cdf and sample
==================================================

``predict_dist(X)`` returns one law per row of X, vectorised over the rows: ``mean()``, ``var()``, ``std()``,
``logpdf(y)``, ``cdf(y)``, ``ppf(q)``, ``interval(level)`` and ``sample(n)``. For a Poisson fit it is a
``PoissonDist`` (discrete: ``logpdf`` is the log mass, ``ppf`` and ``interval`` follow scipy's convention, the
smallest k with cdf(k) >= q).
"""

# %%
# A Poisson fit and its laws on a grid of x1
# ------------------------------------------
import matplotlib.pyplot as plt
import numpy as np

from distviz.data.synthetic import make_synthetic
from distviz.estimators import DistributionalBoosting
from distviz.viz.palette import ALGO_COLORS, OKABE_ITO

data = make_synthetic("poisson", n=3000, random_state=0)
model = DistributionalBoosting("poisson", law="mgd", n_estimators=40, learning_rate=0.2).fit(data.X, data.y)
grid = data.grid(200)
dist = model.predict_dist(grid)
print(type(dist).__name__, "with", len(dist), "rows")
print(data.description)

# %%
# ``interval(0.9)`` gives two arrays, the lower and upper ends per row; ``sample(1)`` one draw per row.
lo, hi = dist.interval(0.9)
draws = dist.sample(1, random_state=0)[0]
inside = np.mean((draws >= lo) & (draws <= hi))
print(f"share of one draw per grid row inside its 90% interval: {inside:.1%} "
      f"(a discrete interval holds at least 90% of its law's mass)")

# %%
# ``cdf(y)`` at a column of y values (shape (G, 1)) gives a (G, rows) table: one cdf per row. Three rows:
picks = [int(np.argmin(np.abs(grid[:, 0] - v))) for v in (-1.0, 0.5, 1.0)]
ys = np.arange(0, 21)
cdf = dist.cdf(ys[:, None])                      # (21, 200)
for i in picks:
    print(f"x1 = {grid[i, 0]:+.2f}: mean {dist.mean()[i]:.2f}, 90% interval [{lo[i]:.0f}, {hi[i]:.0f}], "
          f"P(y <= 3) = {cdf[3, i]:.3f}")

# %%
# ``sample(n)`` returns (n, rows): 5,000 draws at x1 = 1.0 against the law's own mass, exp(logpdf).
row = picks[2]
many = dist.sample(5000, random_state=1)[:, row]
mass = np.exp(dist.logpdf(ys[:, None]))[:, row]     # logpdf of a column: (21, rows) as cdf
print(f"x1 = {grid[row, 0]:+.2f}: mean of 5000 draws {many.mean():.3f}, law's mean {dist.mean()[row]:.3f}")

fig, axes = plt.subplots(1, 3, figsize=(14, 4))
ax = axes[0]
ax.plot(data.X[:, 0], data.y, ".", ms=2, color="0.7", label="training data")
ax.fill_between(grid[:, 0], lo, hi, step="mid", color=ALGO_COLORS["mgd"], alpha=0.25, lw=0, label="90% interval")
ax.plot(grid[:, 0], dist.mean(), color=ALGO_COLORS["mgd"], lw=2, label="mean()")
ax.plot(grid[:, 0], draws, "o", ms=3, color=OKABE_ITO["vermillion"], label="sample(1)")
ax.set_xlabel("feature x1")
ax.set_ylabel("count y")
ax.set_title("Mean, interval and one draw per x1")
ax.legend(fontsize=8)

colors = [OKABE_ITO["sky"], OKABE_ITO["green"], OKABE_ITO["orange"]]
for i, c in zip(picks, colors):
    axes[1].step(ys, cdf[:, i], where="post", color=c, lw=2, label=f"x1 = {grid[i, 0]:+.2f}")
axes[1].axhline(0.05, color="0.5", ls=":", lw=1)
axes[1].axhline(0.95, color="0.5", ls=":", lw=1)
axes[1].set_xlabel("count y")
axes[1].set_ylabel("cdf(y) = P(Y <= y)")
axes[1].set_title("cdf at three rows (dotted: 5% and 95%)")
axes[1].legend(fontsize=8)

counts = np.bincount(many.astype(int), minlength=len(ys))[: len(ys)] / many.size
axes[2].bar(ys, counts, color=OKABE_ITO["orange"], alpha=0.7, label="5000 draws, sample()")
axes[2].plot(ys, mass, "o", color=OKABE_ITO["black"], label="exp(logpdf(y))")
axes[2].set_xlabel("count y")
axes[2].set_ylabel("probability")
axes[2].set_title(f"Draws vs mass at x1 = {grid[row, 0]:+.2f}")
axes[2].legend(fontsize=8)
fig.tight_layout()
plt.show()
