"""
Saving and loading a model (no pickle)
======================================

Every estimator has ``save(path)`` and a classmethod ``load(path)``; ``distviz.persistence.load(path)`` reads the
class from the file. The file is NetCDF: the parameters as JSON attributes, the trees as one flat forest of
numeric arrays, the start values and the training trace. Nothing in it is unpickled or evaluated, every array
is checked before use, and a loaded model predicts exactly as the saved one.
"""

# %%
# Fit, save, load
# ---------------
import shutil
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import xarray as xr

from distviz import DataError, persistence
from distviz.data.synthetic import make_synthetic
from distviz.estimators import DistributionalBoosting
from distviz.viz.palette import ALGO_COLORS, OKABE_ITO

data = make_synthetic("normal", n=2000, random_state=0)
model = DistributionalBoosting("normal", law="ngd", n_estimators=40, learning_rate=0.1).fit(data.X, data.y)

folder = Path(tempfile.mkdtemp())
path = folder / "normal_ngd.nc"
model.save(path)
loaded = persistence.load(path)            # the class is read from the file
print(f"{path.name}: {path.stat().st_size / 1024:.0f} KiB, loaded as {type(loaded).__name__} "
      f"with {loaded.n_iter_} rounds")

# %%
# What is in the file
# -------------------
# An ordinary NetCDF file: any NetCDF reader can open it. The forest's arrays are named ``model_forest_*``.
with xr.open_dataset(path) as ds:
    print("class:", ds.attrs["distviz_class"], "| schema:", ds.attrs["distviz_schema"])
    print("forest arrays:", ", ".join(sorted(v for v in ds.data_vars if v.startswith("model_forest"))))

# %%
# The loaded model predicts the same numbers
# ------------------------------------------
grid = data.grid(300)
before, after = model.predict_dist(grid), loaded.predict_dist(grid)
print(f"largest |difference| of predicted means: {np.max(np.abs(before.mean() - after.mean()))}, "
      f"of standard deviations: {np.max(np.abs(before.std() - after.std()))}")

fig, (ax, ax_nll) = plt.subplots(1, 2, figsize=(11, 4.2))
lo, hi = after.interval(0.9)
ax.plot(data.X[:, 0], data.y, ".", ms=2, color="0.65", label="training data")
ax.fill_between(grid[:, 0], lo, hi, color=ALGO_COLORS["ngd"], alpha=0.3, lw=0, label="loaded model: 90% interval")
ax.plot(grid[:, 0], after.mean(), color=ALGO_COLORS["ngd"], lw=3, label="loaded model: mean")
ax.plot(grid[:, 0], before.mean(), "--", color=OKABE_ITO["black"], lw=1.5, label="saved model: mean")
ax.set_xlabel("feature x1")
ax.set_ylabel("y")
ax.set_title("Predictions of the saved and the loaded model")
ax.legend(fontsize=8)
# sphinx_gallery_defer_figures

# %%
# The trace travels with the model, so a loaded model can still be inspected round by round.
ax_nll.plot(loaded.trace_["round"], loaded.trace_.train_nll, color=ALGO_COLORS["ngd"])
ax_nll.set_xlabel("boosting round")
ax_nll.set_ylabel("mean training NLL (nats)")
ax_nll.set_title("The loaded model's trace")
fig.tight_layout()

# %%
# A damaged file is refused
# -------------------------
# Here the root of the first tree is made its own left child (a cycle). ``load`` checks that every child id
# points forward inside its tree before any prediction runs, and raises one ``DataError`` sentence.
with xr.open_dataset(path) as ds:
    bad = ds.load()
left = bad["model_forest_left"].values.copy()
left[0] = 0
bad["model_forest_left"].values = left
bad.to_netcdf(folder / "damaged.nc")
try:
    persistence.load(folder / "damaged.nc")
except DataError as err:
    print("DataError:", err)
shutil.rmtree(folder)
plt.show()
