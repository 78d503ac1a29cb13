"""Study `mvn-sim`: Table 1 of the multivariate NGBoost paper (O'Malley et al. 2023, Sec. 4).

For each replication a fresh simulation (X ~ Uniform(0, pi), eq. 5) with N training, 300
validation and 1000 test points is drawn; NGB, IndepNGB, GB and skGB (learning rate 0.01, depth-3
trees, early stopping with patience 50 on the validation set) and the neural network NN
(``distviz.baselines.MVNNetwork``: Adam at 0.01, mini-batches of 256, patience 50, best epoch restored,
hidden layers from the authors' grid on validation NLL) are fitted, and the mean over test
points of KL(pred || true) (Table 1's metric) and KL(true || pred) is recorded, both at the best
validation round and with all fitted trees (best + patience).

The paper protocol (the authors' code, MikeOMa/MV_Prediction, simulation_example): at most 1000
rounds for NGB, GB and skGB and 2000 per dimension for IndepNGB; NGB and GB are scored with all
fitted trees, IndepNGB and skGB at their best rounds (the paper's text says best round for all);
``--scoring best-round`` or ``all-trees`` applies one rule to every method instead, and the table
prints both rules' columns whatever the headline.  ``kl_pred_true_mean`` is the headline figure;
``--n-estimators`` overrides the caps for every method (for NN: the epoch cap, 1000).  NN always
predicts with its best epoch's weights, so its two columns agree.  ``NN-authors`` is the same network
with the authors' Keras inputs (raw x, output bias at zero) instead of standardised x and NGB's
marginal start, still the best of six per replication.  ``NN-paper`` is the paper's baseline exactly
(``distviz.experiments.nn_paper``): the authors' inputs, initialisation, epoch cap and patience, all six
structures fitted per replication and one structure per N kept, the one with the best test
log-likelihood averaged over the replications (the paper's rule); the study ``mvn-nn-ablation`` says which
part of its gap to ``NN`` each choice causes.  ``ngboost`` is the peer itself: the ``ngboost`` package's
``NGBRegressor`` with ``MultivariateNormal(2)`` (the authors' library; its default depth-3 scikit-learn trees), fitted
and scored as NGB on the same split, so an odd NGB figure can be told apart from an odd draw; ``ngboost-GB`` is
the same without the natural gradient, the peer of GB.
``--variant vanilla`` drops the x and -x^2 terms of the means (Williams' original
simulation, the paper's supplement).  Trees split on every distinct x
(``--max-bins exact``, the paper's scikit-learn trees); with 255-bin histogram trees GB fits far
better than in Table 1 (the exact trees' splits around a few points are what stall it).

    distviz study mvn-sim --n 5000 --reps 3 --json
    distviz study mvn-sim --reps 50 --n 500,1000,3000,5000,8000,10000   # the whole of Table 1 (long)
"""

from __future__ import annotations

import functools
import sys
import time
from typing import Any

import numpy as np

from distviz.errors import ConfigError
from distviz.experiments import registry
from distviz.experiments.parallel import map_units

METHODS = ("NGB", "IndepNGB", "GB", "skGB", "NGB-pp", "NN", "NN-authors", "NN-paper", "ngboost", "ngboost-GB")
# paper protocol: (maximal rounds, or epochs for the networks, which rounds Table 1 scores)
PAPER = {"NGB": (1000, "all"), "GB": (1000, "all"), "IndepNGB": (2000, "best"), "skGB": (1000, "best"),
         "NGB-pp": (1000, "best"), "NN": (1000, "best"), "NN-authors": (1000, "best"), "NN-paper": (1000, "best"),
         "ngboost": (1000, "all"), "ngboost-GB": (1000, "all")}
DEFAULT_METHODS = "NGB,IndepNGB,GB,skGB,NN"
SCORING = {"paper": None, "best-round": "best", "all-trees": "all"}
#: PUBLISHED NUMBERS, O'Malley et al. (2023), Table 1 (Sec. 4, the simulation): mean KL(pred || true) over 50
#: replications, for side-by-side printing; PAPER_TABLE1_SE holds the standard errors printed after the +-.
PAPER_TABLE1 = {500: {"NGB": 0.564, "IndepNGB": 1.633, "skGB": 17.194, "GB": 126.227, "NN": 1.285},
                1000: {"NGB": 0.257, "IndepNGB": 1.150, "skGB": 17.963, "GB": 114.113, "NN": 0.320},
                3000: {"NGB": 0.106, "IndepNGB": 0.884, "skGB": 19.609, "GB": 97.682, "NN": 0.149},
                5000: {"NGB": 0.081, "IndepNGB": 0.878, "skGB": 20.308, "GB": 90.101, "NN": 0.128},
                8000: {"NGB": 0.053, "IndepNGB": 0.866, "skGB": 20.614, "GB": 79.006, "NN": 0.103},
                10000: {"NGB": 0.043, "IndepNGB": 0.831, "skGB": 20.554, "GB": 74.799, "NN": 0.130}}
PAPER_TABLE1_SE = {500: {"NGB": 0.016, "IndepNGB": 0.043, "skGB": 0.301, "GB": 2.579, "NN": 0.547},
                   1000: {"NGB": 0.004, "IndepNGB": 0.020, "skGB": 0.270, "GB": 1.622, "NN": 0.018},
                   3000: {"NGB": 0.002, "IndepNGB": 0.015, "skGB": 0.248, "GB": 1.397, "NN": 0.004},
                   5000: {"NGB": 0.008, "IndepNGB": 0.015, "skGB": 0.169, "GB": 1.291, "NN": 0.005},
                   8000: {"NGB": 0.004, "IndepNGB": 0.013, "skGB": 0.170, "GB": 1.168, "NN": 0.004},
                   10000: {"NGB": 0.001, "IndepNGB": 0.010, "skGB": 0.150, "GB": 1.191, "NN": 0.004}}


def _kl_helpers():
    """Gaussian KL in both directions (distviz.metrics), argument order (pred, true)."""
    from distviz.metrics.divergence import kl_pred_true, kl_true_pred

    return kl_pred_true, kl_true_pred


def _nn_hidden(value):
    """--nn-hidden: 'auto' (the authors' grid, chosen on validation NLL) or widths such as '100' or '50,20'."""
    if isinstance(value, (tuple, list)):
        return tuple(value)
    if str(value).strip().lower() == "auto":
        return "auto"
    try:
        sizes = tuple(int(v) for v in str(value).split(",") if v.strip())
    except ValueError:
        sizes = ()
    if not sizes or min(sizes) < 1:
        raise ConfigError(f"nn-hidden must be 'auto' or comma-separated layer widths such as 100 or 50,20; got {value!r}.")
    return sizes


def make_model(method: str, n_estimators: int, learning_rate: float, patience: int, seed: int,
               max_bins="exact", nn_hidden="auto"):
    """The estimator of one method with the paper's settings."""
    from distviz.baselines import skGB
    from distviz.estimators.ngboost import GB, NGB, IndepNGB

    if method in ("NN", "NN-authors"):
        from distviz.baselines import MVNNetwork

        extra = dict(input_scaling=None, output_init="zeros") if method == "NN-authors" else {}
        return MVNNetwork(hidden_layer_sizes=_nn_hidden(nn_hidden), learning_rate=learning_rate,
                          max_epochs=n_estimators, patience=patience, random_state=seed, **extra)
    kw = dict(n_estimators=n_estimators, learning_rate=learning_rate, early_stopping_rounds=patience,
              random_state=seed)
    if method == "skGB":
        return skGB(**kw)
    kw["max_bins"] = max_bins
    if method == "NGB":
        return NGB(**kw)
    if method == "NGB-pp":
        return NGB(per_parameter_early_stopping=True, **kw)
    if method == "IndepNGB":
        return IndepNGB(**kw)
    if method == "GB":
        return GB(**kw)
    raise ConfigError(f"unknown method {method!r}; choose from {', '.join(METHODS)}.")


class _PeerNGBoost:
    """The ``ngboost`` package's multivariate NGBoost (``NGBRegressor(Dist=MultivariateNormal(2))``, its default
    depth-3 scikit-learn trees and line search) with the study's cap, learning rate and patience: the peer that NGB
    is checked against (``tests/test_ngboost.py`` matches their boosting paths on small data); with
    ``natural=False`` the plain gradient, the peer of GB."""

    def __init__(self, n_estimators: int, learning_rate: float, patience: int, seed: int, natural: bool = True):
        try:
            from ngboost import NGBRegressor
            from ngboost.distns import MultivariateNormal
        except ImportError:
            raise ConfigError("method 'ngboost' fits the ngboost package, which is not installed; "
                              "pip install 'distviz[bench]' (or ngboost) first.") from None
        self.model = NGBRegressor(Dist=MultivariateNormal(2), n_estimators=n_estimators, learning_rate=learning_rate,
                                  natural_gradient=natural, verbose=False, random_state=seed)
        self.patience = patience

    def fit(self, X, y, eval_set):
        self.model.fit(X, y, X_val=eval_set[0], Y_val=eval_set[1], early_stopping_rounds=self.patience)
        self.n_iter_ = len(self.model.base_models)
        best = self.model.best_val_loss_itr   # 0-based: the validation loss after tree `best`, i.e. best + 1 trees
        self.best_iteration_ = self.n_iter_ if best is None else int(best) + 1
        return self

    def mean_cov(self, X, which: str):
        """Mean (n, 2) and covariance (n, 2, 2) with the trees up to the best validation round or with all."""
        d = self.model.pred_dist(X, max_iter=self.best_iteration_ if which == "best" else None)
        return np.asarray(d.loc), np.asarray(d.cov)


def run_once(method: str, split, n_estimators: int, learning_rate: float, patience: int, seed: int,
             max_bins="exact", scoring="paper", nn_hidden="auto") -> dict:
    """Fit one method on one simulated split; KL in both directions at the best round and with all trees.

    ``NN-paper`` returns ``{"structures": {name: row}}``, one row per structure of the authors' grid
    (``distviz.experiments.nn_paper.fit_grid``); the structure is chosen over the replications.
    """
    if method == "NN-paper":
        from distviz.experiments.nn_paper import PAPER_SETTINGS, fit_grid

        settings = dict(PAPER_SETTINGS, learning_rate=learning_rate, patience=patience,
                        max_epochs=n_estimators or PAPER_SETTINGS["max_epochs"])
        return {"structures": fit_grid(split, seed, **settings)}
    kl_pt, kl_tp = _kl_helpers()
    cap, headline = PAPER[method]
    headline = SCORING[scoring] or headline
    model: Any
    if method.startswith("ngboost"):
        model = _PeerNGBoost(n_estimators or cap, learning_rate, patience, seed, natural=method == "ngboost")
    else:
        model = make_model(method, n_estimators or cap, learning_rate, patience, seed, max_bins, nn_hidden)
    t0 = time.perf_counter()
    model.fit(split.X_train, split.y_train, eval_set=(split.X_val, split.y_val))
    secs = time.perf_counter() - t0
    out = {"fit_seconds": secs}
    network = method.startswith("NN")
    for which in ("best", "all"):
        if method.startswith("ngboost"):
            mu, cov = model.mean_cov(split.X_test, which)
        elif network:  # the network keeps only its best epoch's weights (paper Sec. 4)
            d = model.predict_dist(split.X_test)
            mu, cov = d.mean(), d.cov()
        else:
            pred = model.predict_dist(split.X_test, which)
            mu, cov = pred.mean(), pred.cov()
        out[f"kl_pred_true_{which}"] = float(np.mean(kl_pt(mu, cov, split.mean_test, split.cov_test)))
        out[f"kl_true_pred_{which}"] = float(np.mean(kl_tp(mu, cov, split.mean_test, split.cov_test)))
    out["kl_pred_true"] = out[f"kl_pred_true_{headline}"]
    out["kl_true_pred"] = out[f"kl_true_pred_{headline}"]
    if network:
        out["best_iteration"] = float(model.best_epoch_)
        out["iterations"] = float(model.n_epochs_)
        out["hidden_units"] = float(sum(model.hidden_layer_sizes_))
    else:
        out["best_iteration"] = float(np.mean(getattr(model, "best_iterations_", model.best_iteration_)))
        out["iterations"] = float(np.mean(model.n_iter_))
    return out


def _replication(r: int, *, names, n, n_val, n_test, seed, reps, variant, n_estimators, learning_rate, patience,
                 max_bins, scoring, nn_hidden, quiet) -> dict:
    """Replication `r`: simulate its split (seed [seed, r]) and fit every method; {method: run_once row}."""
    from distviz.data.mvn_sim import simulate_split

    split = simulate_split(n, n_val, n_test, rng=np.random.default_rng([seed, r]), vanilla=variant == "vanilla")
    rows = {}
    for m in names:
        row = rows[m] = run_once(m, split, n_estimators, learning_rate, patience, seed + r, max_bins, scoring,
                                 nn_hidden)
        if not quiet and "structures" in row:
            print(f"[mvn-sim] rep {r + 1}/{reps} {m}: KL(pred||true) by structure "
                  + ", ".join(f"{h}={v['kl_pred_true']:.4g} (best epoch {v['best_epoch']:.0f})"
                              for h, v in row["structures"].items()), file=sys.stderr, flush=True)
        elif not quiet:
            print(f"[mvn-sim] rep {r + 1}/{reps} {m}: KL(pred||true) paper={row['kl_pred_true']:.4g} "
                  f"all={row['kl_pred_true_all']:.4g} "
                  f"best={row['kl_pred_true_best']:.4g} iters={row['iterations']:.0f} "
                  f"{row['fit_seconds']:.1f}s", file=sys.stderr, flush=True)
    return rows


def _summary(rows: list[dict]) -> dict:
    """Mean, standard deviation and standard error over the replications of every figure of `rows`; the headline
    KL(pred || true) also per replication (``kl_pred_true_reps``, in replication order) and its median, so a mean
    that rests on one replication shows as such."""
    keys = rows[0].keys()
    res: dict = {}
    for k in keys:
        v = np.array([r[k] for r in rows], dtype=float)
        res[f"{k}_mean"] = float(v.mean())
        res[f"{k}_sd"] = float(v.std(ddof=1)) if v.size > 1 else 0.0
        res[f"{k}_se"] = res[f"{k}_sd"] / np.sqrt(v.size)
    if "kl_pred_true" in keys:
        v = np.array([r["kl_pred_true"] for r in rows], dtype=float)
        res["kl_pred_true_median"] = float(np.median(v))
        res["kl_pred_true_reps"] = [float(x) for x in v]
    return res


def _format_table(result: dict) -> str:
    if "sizes" in result:  # several N: one block per N
        return "\n\n".join(f"N = {n}\n" + _format_table(r) for n, r in result["sizes"].items())
    cfg = result.get("config", {})
    cols = [(f"KL(p||t) {cfg.get('scoring', 'paper')}", "kl_pred_true"), ("KL(p||t) best", "kl_pred_true_best"),
            ("KL(p||t) all", "kl_pred_true_all"),
            ("KL(t||p) best", "kl_true_pred_best"), ("KL(t||p) all", "kl_true_pred_all"),
            ("best it", "best_iteration"), ("iters", "iterations"), ("fit s", "fit_seconds")]
    head = f"{'method':10s}" + "".join(f"{c:>20s}" for c, _ in cols)
    lines = [head]
    for m, r in result.items():
        if not isinstance(r, dict) or "kl_pred_true_all_mean" not in r:
            continue
        cells = "".join(f"{r[k + '_mean']:.4g} +- {r[k + '_sd']:.2g}".rjust(20) for _, k in cols)
        lines.append(f"{m:10s}{cells}")
    lines.append("(mean +- standard deviation over replications; standard errors are the *_se entries of --json)")
    if isinstance(result.get("NN-paper"), dict):
        from distviz.experiments.nn_paper import paper_note

        lines.append(paper_note(result["NN-paper"]))
    paper = PAPER_TABLE1.get(cfg.get("n")) if cfg.get("variant", "paper") == "paper" else None
    if paper:
        lines.append("paper Table 1, KL(p||t) at this N (mean of 50 replications): "
                     + ", ".join(f"{m} {v:g}" for m, v in paper.items()))
    lines.append("config: " + ", ".join(f"{k}={v}" for k, v in cfg.items()))
    return "\n".join(lines)


@registry.study(
    "mvn-sim",
    options=[
        registry.Option("n", str, "5000", "training points N, or a comma-separated list (paper: 500,1000,3000,5000,8000,10000)"),
        registry.Option("reps", int, 3, "replications (paper: 50)"),
        registry.Option("methods", str, DEFAULT_METHODS, f"comma-separated subset of {','.join(METHODS)}"),
        registry.Option("n-estimators", int, 0, "maximal rounds per model (0: paper caps, 1000; 2000 for IndepNGB)"),
        registry.Option("learning-rate", float, 0.01, "learning rate (paper: 0.01)"),
        registry.Option("patience", int, 50, "early-stopping patience on the validation NLL (paper: 50)"),
        registry.Option("n-val", int, 300, "validation points (paper: 300)"),
        registry.Option("n-test", int, 1000, "test points (paper: 1000)"),
        registry.Option("seed", int, 0, "seed of the first replication"),
        registry.Option("max-bins", str, "exact",
                        "tree bins: 'exact' (one per distinct x, as the paper's scikit-learn trees) or an integer"),
        registry.Option("scoring", str, "paper",
                        "headline rule: 'paper' (authors' code: all trees for NGB and GB, best round otherwise), "
                        "'best-round' or 'all-trees' for every method"),
        registry.Option("variant", str, "paper", "'paper' (eq. 5 with the x and -x^2 terms) or 'vanilla' (Williams 1996)"),
        registry.Option("nn-hidden", str, "auto",
                        "NN hidden layers: 'auto' (authors' grid, chosen on validation NLL) or e.g. 100 or 50,20"),
        registry.Option("quiet", int, 0, "1 to suppress progress lines on stderr"),
    ],
    format_table=_format_table,
)
def mvn_sim(n=5000, reps=3, methods=DEFAULT_METHODS, n_estimators=0, learning_rate=0.01, patience=50,
            n_val=300, n_test=1000, seed=0, max_bins="exact", scoring="paper", variant="paper", nn_hidden="auto",
            quiet=0) -> dict:
    """Multivariate NGBoost simulation (Table 1): KL of NGB, IndepNGB, GB, skGB and NN to the true Gaussian."""
    if scoring not in SCORING:
        raise ConfigError(f"scoring must be one of {', '.join(SCORING)}, got {scoring!r}.")
    if variant not in ("paper", "vanilla"):
        raise ConfigError(f"variant must be 'paper' or 'vanilla', got {variant!r}.")
    if isinstance(n, str):
        try:
            sizes = [int(v) for v in n.split(",") if v.strip()]
        except ValueError:
            raise ConfigError(f"n must be an integer or a comma-separated list such as 500,1000; got {n!r}.") from None
        if len(sizes) > 1:
            return {"sizes": {str(k): mvn_sim(k, reps, methods, n_estimators, learning_rate, patience, n_val, n_test,
                                              seed, max_bins, scoring, variant, nn_hidden, quiet) for k in sizes}}
        n = sizes[0] if sizes else 0
    nn_hidden = _nn_hidden(nn_hidden)
    names = [m.strip() for m in str(methods).split(",") if m.strip()]
    bad = [m for m in names if m not in METHODS]
    if bad or not names:
        raise ConfigError(f"unknown method(s) {bad or methods!r}; choose from {', '.join(METHODS)}.")
    if n < 10 or reps < 1:
        raise ConfigError(f"need n >= 10 and reps >= 1, got n={n}, reps={reps}.")
    if str(max_bins) != "exact":
        try:
            max_bins = int(max_bins)
        except ValueError:
            raise ConfigError(f"max-bins must be 'exact' or an integer such as 255, got {max_bins!r}.") from None
    rep = functools.partial(_replication, names=names, n=int(n), n_val=int(n_val), n_test=int(n_test), seed=int(seed),
                            reps=int(reps), variant=variant, n_estimators=int(n_estimators),
                            learning_rate=float(learning_rate), patience=int(patience), max_bins=max_bins,
                            scoring=scoring, nn_hidden=nn_hidden, quiet=quiet)
    per_rep = map_units(rep, range(int(reps)))  # one unit per replication: serial or Dask tasks
    from distviz.experiments.nn_paper import paper_summary

    out = {m: paper_summary([r[m]["structures"] for r in per_rep]) if m == "NN-paper" else _summary([r[m] for r in per_rep])
           for m in names}
    out["config"] = dict(n=int(n), reps=int(reps), methods=names, n_val=int(n_val), n_test=int(n_test),
                         learning_rate=float(learning_rate), patience=int(patience),
                         n_estimators=int(n_estimators) or "paper caps", seed=int(seed), max_bins=max_bins,
                         x_distribution="Uniform(0, pi)", scoring=scoring, variant=variant,
                         nn_hidden="auto" if nn_hidden == "auto" else ",".join(map(str, nn_hidden)))
    return out
