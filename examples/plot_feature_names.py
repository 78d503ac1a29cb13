"""
Feature names from a pandas DataFrame
=====================================

Fitted on a pandas DataFrame, an estimator keeps the column names in ``feature_names_in_``, labels the trace's
``feature`` coordinate with them, and so every node table and split list speaks in column names. As in
scikit-learn, predicting on a plain array then warns, and predicting on renamed columns is an error.
"""

# %%
# A DataFrame of drifter features
# -------------------------------
# The shipped **synthetic** drifter sample: wind stress Tx, Ty (Pa), wind Wx, Wy (m/s), geostrophic velocity
# u_av, v_av (m/s), position lon, lat (degrees) and time of year doy. The target is the eastward velocity u in
# cm/s, modelled as a Normal whose mean and variance both depend on the features. Leaves hold at least 20 rows
# (``min_weight_leaf``): a Normal leaf of one row has zero variance and an infinite entropy gain.
import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from distviz import DataError
from distviz.data.drifters import load_sample
from distviz.estimators import DistributionalBoosting
from distviz.viz.palette import OKABE_ITO
from distviz.viz.trees import round_nodes, top_splits

data = load_sample()
rows = np.random.default_rng(0).choice(len(data), 5000, replace=False)
frame = pd.DataFrame(data.X[rows], columns=list(data.feature_names))
u = 100.0 * data.Y[rows, 0]
model = DistributionalBoosting("normal", law="mgd", n_estimators=40, learning_rate=0.1,
                               min_weight_leaf=20).fit(frame, u)
print("feature_names_in_:", list(model.feature_names_in_))
print("trace feature coordinate:", [str(s) for s in model.trace_["feature"].values])

# %%
# The first tree's node table
# ---------------------------
# ``round_nodes(trace, r)`` is round r's tree as a DataFrame; its ``feature`` column holds indices into the
# trace's ``feature`` coordinate, which now carries the names.
names = model.trace_["feature"].values
nodes = round_nodes(model.trace_, 1)
nodes = nodes[nodes["feature"] >= 0].assign(name=lambda d: names[d["feature"].to_numpy()])
print(nodes[["depth", "name", "threshold", "weight", "gain_reg", "gain_ent"]].to_string(float_format="{:.4g}".format))

# %%
# The largest splits of all rounds, by name
# -----------------------------------------
# ``top_splits`` reads the names from the trace.
print(top_splits(model.trace_, k=6).to_string(index=False, float_format="{:.4g}".format))

# %%
# Total Gain^ent per column: which features the trees used to describe u's distribution.
feat = model.trace_.node_feature.values
gain = np.nan_to_num(model.trace_.node_gain_ent.values)
total = pd.Series({n: gain[feat == j].sum() for j, n in enumerate(names)}).sort_values()
print(f"largest total Gain^ent: {total.index[-1]} ({total.iloc[-1]:.3f} nats), "
      f"smallest: {total.index[0]} ({total.iloc[0]:.4f} nats)")

fig, ax = plt.subplots(figsize=(6.5, 4))
ax.barh(total.index, total.values, color=OKABE_ITO["blue"])
ax.set_xscale("log")
ax.set_xlabel("Gain$^{ent}$ summed over 40 trees (nats, log scale)")
ax.set_ylabel("column of the DataFrame")
ax.set_title("Entropy gain per feature, eastward velocity u")
fig.tight_layout()

# %%
# Arrays and renamed columns
# --------------------------
# A plain array has no names: the model predicts but warns. Renamed columns are refused with a ``DataError``.
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    model.predict(frame.to_numpy()[:5])
print("warning:", caught[0].message)
try:
    model.predict(frame.rename(columns={"lon": "longitude"}).iloc[:5])
except DataError as err:
    print("DataError:", err)
plt.show()
