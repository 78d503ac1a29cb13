"""
Early stopping with a validation set
====================================

With ``eval_set=(X_val, y_val)`` a boosting fit records the validation NLL after every round; with
``early_stopping_rounds=k`` it stops once k rounds in a row have not improved on the best one, and predictions
use the best round, ``best_iteration_``. ``predict*(X, max_iter=r)`` predicts with the first r rounds.
"""

# %%
# A small, noisy Bernoulli problem
# --------------------------------
# 1,500 rows, of which 500 are held out for validation and 2,000 more for a test. A learning rate of 0.3 and
# deep trees overfit quickly, which early stopping has to catch.
import matplotlib.pyplot as plt

from distviz.data.synthetic import make_synthetic
from distviz.estimators import DistributionalBoosting
from distviz.viz.palette import OKABE_ITO

data = make_synthetic("bernoulli", n=3500, p=3, random_state=0)
X, y = data.X, data.y
X_tr, y_tr, X_val, y_val, X_te, y_te = X[:1000], y[:1000], X[1000:1500], y[1000:1500], X[1500:], y[1500:]
print(data.description)

settings = dict(law="ngd", learning_rate=0.3, max_depth=5, n_estimators=50)
full = DistributionalBoosting("bernoulli", **settings).fit(X_tr, y_tr, eval_set=(X_val, y_val))
stopped = DistributionalBoosting("bernoulli", early_stopping_rounds=5, **settings).fit(
    X_tr, y_tr, eval_set=(X_val, y_val))
print(f"without early stopping: {full.n_iter_} rounds fitted, best validation round {full.best_iteration_}")
print(f"with early_stopping_rounds=5: {stopped.n_iter_} rounds fitted, best_iteration_ = {stopped.best_iteration_} "
      f"({stopped.trace_.attrs['stop_reason'] or 'ran every round'})")

# %%
# Training and validation NLL per round
# -------------------------------------
# The trace holds both curves; the test NLL per round comes from ``score(X, y, max_iter=r)`` on the held-out
# rows (``score`` is the mean log-likelihood, so the NLL is its negative).
rounds = full.trace_["round"].values
test_nll = [-full.score(X_te, y_te, max_iter=r) for r in rounds]
fig, ax = plt.subplots(figsize=(7.5, 4.3))
ax.plot(rounds, full.trace_.train_nll, color=OKABE_ITO["blue"], label="training NLL")
ax.plot(rounds, full.trace_.valid_nll, color=OKABE_ITO["orange"], lw=2, label="validation NLL")
ax.plot(rounds, test_nll, ":", color=OKABE_ITO["black"], label="test NLL (2,000 rows)")
ax.axvline(stopped.best_iteration_, color=OKABE_ITO["green"], ls="--",
           label=f"best_iteration_ = {stopped.best_iteration_}")
ax.axvspan(stopped.best_iteration_, stopped.n_iter_, color=OKABE_ITO["green"], alpha=0.12,
           label="rounds early stopping waited")
ax.set_xlabel("boosting round")
ax.set_ylabel("mean NLL (nats)")
ax.set_title("Bernoulli NGD, learning rate 0.3, depth 5")
ax.legend(fontsize=8)
fig.tight_layout()

# %%
# What early stopping saved
# -------------------------
# The early-stopped model predicts with its best round by default. So does the first fit: with an ``eval_set``
# its ``best_iteration_`` is the best validation round even without early stopping, so ``max_iter=50`` asks for
# all of its rounds.
print(f"test NLL: early-stopped model {-stopped.score(X_te, y_te):.4f}, all {full.n_iter_} rounds "
      f"{-full.score(X_te, y_te, max_iter=full.n_iter_):.4f}, oracle {data.oracle_nll(X_te, y_te):.4f}")
plt.show()
