"""
Fitting on a Dask cluster
=========================

``distviz.dask.DaskDistributionalBoosting``, the Dask twin of ``DistributionalBoosting``, fits on row-chunked dask
collections: the rows stay on the workers, which bin their chunks and build node histograms, and the client
sums the histograms and picks the splits. Only the ``Client`` changes between a laptop and a cluster. Here the
cluster is a ``LocalCluster`` of two workers with one thread each, run as threads of this process
(``processes=False``: no worker processes to start), and it is closed at the end.
"""

# %%
# A local cluster and chunked data
# --------------------------------
# The same Poisson data once as numpy arrays and once as dask arrays in four chunks of 1,000 rows.
import dask.array as da
import matplotlib.pyplot as plt
import numpy as np
from distributed import Client, LocalCluster

from distviz.dask import DaskDistributionalBoosting
from distviz.data.synthetic import make_synthetic
from distviz.estimators import DistributionalBoosting
from distviz.viz.palette import ALGO_COLORS, OKABE_ITO

cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None)
client = Client(cluster)
print(f"{len(client.scheduler_info()['workers'])} workers")

data = make_synthetic("poisson", n=4000, p=3, random_state=0)
X = da.from_array(data.X, chunks=(1000, 3))
y = da.from_array(data.y, chunks=1000)
print(f"X: {X.npartitions} chunks of {X.chunks[0][0]} rows")

# %%
# The fit on the workers
# ----------------------
# ``DaskDistributionalBoosting`` takes the parameters of ``DistributionalBoosting``; with ``client=None`` it uses
# the current Client (the one made above). Its bin edges come from a distributed quantile sketch (per-chunk
# quantiles merged on the client), so its trees may differ a little from an in-memory fit's.
settings = dict(law="mgd", n_estimators=25, learning_rate=0.2, max_depth=3)
on_dask = DaskDistributionalBoosting("poisson", **settings).fit(X, y)
rate_dask = on_dask.predict_mean(X)
print(f"predict_mean on dask input gives a {type(rate_dask).__module__}.{type(rate_dask).__name__}")
rate_dask = np.asarray(rate_dask)[:, 0]        # computed on the workers, gathered here

# %%
# The same fit, in memory and on the workers
# ------------------------------------------
# Given the in-memory fit's bin edges (``Binner.from_edges``), ``distviz.distributed.fit`` grows the same
# trees on the workers as the in-memory fit: the two agree to rounding.
from distviz.distributed import fit as dask_fit  # noqa: E402
from distviz.trees import Binner  # noqa: E402

in_memory = DistributionalBoosting("poisson", **settings).fit(data.X, data.y)
edges = Binner(255).fit(data.X).bin_thresholds_
same_edges = dask_fit(DistributionalBoosting("poisson", **settings), X, y, binner=Binner.from_edges(edges))
rate_mem = in_memory.predict_mean(data.X)[:, 0]
rate_same = np.asarray(same_edges.predict_mean(X))[:, 0]
nll = {name: float(m.trace_.train_nll[-1]) for name, m in
       (("in memory", in_memory), ("Dask, sketched edges", on_dask), ("Dask, in-memory edges", same_edges))}
print("train NLL after 25 rounds: " + ", ".join(f"{k} {v:.4f}" for k, v in nll.items()))
print(f"largest |rate difference|, Dask with in-memory edges vs in memory: {np.max(np.abs(rate_same - rate_mem)):.1e}")
print(f"median relative rate difference, Dask with sketched edges vs in memory: "
      f"{np.median(np.abs(rate_dask / rate_mem - 1)):.2%}")

fig, (ax_nll, ax_rate) = plt.subplots(1, 2, figsize=(11, 4.2))
ax_nll.plot(in_memory.trace_["round"], in_memory.trace_.train_nll, color=ALGO_COLORS["mgd"], lw=3,
            label="in memory")
ax_nll.plot(same_edges.trace_["round"], same_edges.trace_.train_nll, "--", color=OKABE_ITO["orange"], lw=2,
            label="Dask, in-memory edges")
ax_nll.plot(on_dask.trace_["round"], on_dask.trace_.train_nll, ":", color=OKABE_ITO["purple"], lw=2,
            label="Dask, sketched edges")
ax_nll.set_xlabel("boosting round")
ax_nll.set_ylabel("mean training NLL (nats)")
ax_nll.set_title("Training NLL per round")
ax_nll.legend()

order = np.argsort(data.X[:, 0])
ax_rate.plot(data.X[order, 0], data.mean[order], color=ALGO_COLORS["truth"], lw=2, label="true rate")
ax_rate.plot(data.X[:, 0], rate_mem, ".", ms=2, color=ALGO_COLORS["mgd"], label="in memory")
ax_rate.plot(data.X[:, 0], rate_dask, ".", ms=2, color=OKABE_ITO["purple"], label="Dask, sketched edges")
ax_rate.set_xlabel("feature x1")
ax_rate.set_ylabel("predicted Poisson rate (counts)")
ax_rate.set_title("Predicted rate per row")
ax_rate.legend(markerscale=4)
fig.tight_layout()

# %%
# Close the client and the cluster when done.
client.close()
cluster.close()
plt.show()
