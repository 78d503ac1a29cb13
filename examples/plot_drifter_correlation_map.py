"""
Multivariate NGBoost on drifters: a map of the predicted correlation
====================================================================

A drifter's daily velocity (u, v) is two-dimensional, and its eastward and northward errors can be correlated.
``NGB`` predicts a full bivariate Normal per row (mean, two standard deviations and the correlation rho);
``IndepNGB`` fits u and v separately, so its rho is 0. Here both are fitted on the shipped **synthetic** North
Atlantic sample, whose Gulf-Stream-like jet has along-stream-correlated noise built in, and NGB's correlation is
compared with the simulation's true one.
"""

# %%
# Data: split by drifter
# ----------------------
# ``load_sample()`` reads ``distviz/data/sample/drifters_north_atlantic_synthetic.nc``: features (wind stress,
# wind, a smoothed velocity, position and day of year) and velocities in m/s, here turned into cm/s.
# ``split_by_id`` keeps every drifter in one of train / validation / test (81 / 9 / 10% of the drifters); to
# keep this example fast we fit on 6,000 of the training rows.
import matplotlib.pyplot as plt
import numpy as np
from scipy import stats

from distviz.data import naturalearth
from distviz.data.drifters import load_sample, split_by_id
from distviz.estimators import NGB, IndepNGB
from distviz.viz.palette import ALGO_COLORS

data = load_sample()
Y = 100.0 * data.Y                                   # cm/s
train, valid, test = split_by_id(data.id, random_state=0)
rows = np.random.default_rng(0).choice(np.flatnonzero(train), 6000, replace=False)
print(data.summary())
print(f"fit on {rows.size} rows; validation {valid.sum()} rows; test {test.sum()} rows")

# %%
# Two fits with the same trees
# ----------------------------
# 60 rounds at learning rate 0.1; with ``eval_set`` each predicts with its best validation round.
settings = dict(n_estimators=60, learning_rate=0.1, max_depth=3, early_stopping_rounds=None)
ngb = NGB(**settings).fit(data.X[rows], Y[rows], eval_set=(data.X[valid], Y[valid]))
ind = IndepNGB(**settings).fit(data.X[rows], Y[rows], eval_set=(data.X[valid], Y[valid]))
for name, m in (("NGB", ngb), ("IndepNGB", ind)):
    print(f"{name}: test NLL {-m.score(data.X[test], Y[test]):.3f} nats (velocities in cm/s)")

# %%
# The correlation map
# -------------------
# ``predict_dist`` returns a ``MultivariateNormalDist`` whose ``rho`` is the correlation of u and v per row.
# We predict it at every row of the sample and average it in 1 x 1 degree boxes; the left panel is the
# simulation's true correlation, averaged the same way.
rho_ngb = ngb.predict_dist(data.X).rho
t = data.truth
rho_true = t["true_cov_uv"] / np.sqrt(t["true_cov_uu"] * t["true_cov_vv"])
edges = (np.arange(-83, -39, 1.0), np.arange(15, 56, 1.0))
bbox = (-83, -40, 15, 55)
coast_lon, coast_lat = naturalearth.lines("coastline", "50m", bbox)

fig, axes = plt.subplots(1, 2, figsize=(10, 4.8), sharey=True)
for ax, values, title in ((axes[0], rho_true, "true correlation (simulation)"),
                          (axes[1], rho_ngb, "NGB's predicted correlation")):
    grid = stats.binned_statistic_2d(data.lon, data.lat, values, "mean", bins=edges).statistic
    mesh = ax.pcolormesh(edges[0], edges[1], grid.T, cmap="PuOr_r", vmin=-0.8, vmax=0.8)
    ax.plot(coast_lon, coast_lat, color="0.3", lw=0.6)
    ax.set_xlim(bbox[:2])
    ax.set_ylim(bbox[2:])
    ax.set_aspect(1.3)
    ax.set_title(title)
    ax.set_xlabel("longitude (degrees east)")
axes[0].set_ylabel("latitude (degrees north)")
fig.colorbar(mesh, ax=axes, label="correlation of u and v (1 x 1 degree mean)", shrink=0.9)

r = stats.pearsonr(rho_true, rho_ngb).statistic
print(f"row-wise Pearson correlation between the true rho and NGB's rho: {r:.3f}")
print(f"|rho| above 0.3 on {np.mean(np.abs(rho_true) > 0.3):.1%} of rows (truth), "
      f"{np.mean(np.abs(rho_ngb) > 0.3):.1%} (NGB)")

# %%
# Where does the correlation pay?
# -------------------------------
# The test NLL of each model on the test rows where the true correlation is strong (absolute rho above 0.3, mostly the jet)
# and on the others. ``nll(X, Y)`` gives one value per row; lower is better. The sample is synthetic, so this shows
# that NGB finds a correlation the simulation built in, not that real drifters have one.
strong = np.abs(rho_true[test]) > 0.3
groups = {f"|true rho| > 0.3\n({strong.sum()} rows)": strong,
          f"|true rho| <= 0.3\n({(~strong).sum()} rows)": ~strong}
fig2, ax = plt.subplots(figsize=(6.5, 4))
for k, (name, m, key, marker) in enumerate((("NGB", ngb, "ngb", "o"), ("IndepNGB", ind, "indepngb", "s"))):
    per_row = m.nll(data.X[test], Y[test])
    means = [per_row[g].mean() for g in groups.values()]
    xs = np.arange(2) + (k - 0.5) * 0.25
    ax.plot(xs, means, marker, ms=10, color=ALGO_COLORS[key], label=name)
    for xk, v in zip(xs, means):
        ax.annotate(f"{v:.3f}", (xk, v), textcoords="offset points", xytext=(0, 9), ha="center", fontsize=9)
    print(f"{name}: test NLL {means[0]:.3f} where |true rho| > 0.3, {means[1]:.3f} elsewhere")
ax.set_xticks(np.arange(2), list(groups))
ax.set_xlim(-0.6, 1.6)
ax.margins(y=0.15)
ax.set_ylabel("mean test NLL (nats, velocities in cm/s)")
ax.set_title("NGB vs IndepNGB on held-out drifters")
ax.legend(loc="upper right")
ax.grid(axis="y", alpha=0.3)
fig2.tight_layout()
plt.show()
