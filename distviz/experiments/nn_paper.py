"""The multivariate NGBoost paper's NN baseline exactly (`mvn-sim --methods NN-paper`) and the ablation of its gap.

O'Malley et al. (2023), Sec. 4, and the authors' code (MikeOMa/MV_Prediction:
``simulation_example/eval_model.py``, ``fittingmethods.py``, ``probdrift/mvn_models/mvn_nn.py``):
Keras dense layers with ReLU and Glorot-uniform weights and **zero biases** (so the network starts at
theta = 0, the standard bivariate Normal), **raw x** (no input scaling in the simulation), Adam at 0.01,
mini-batches of 256, **at most 1000 epochs**, early stopping on the validation NLL with **patience 50** and
the best epoch's weights restored.  Every replication fits all six structures of their grid
(``NN_LAYERS``, ``distviz.baselines.mvn_network.AUTHORS_GRID``); then, as Sec. 4 says, "for each N ... the
neural network structure with the best log-likelihood metric averaged over all replications is chosen from
the grid search": **one structure per N**, chosen on the test log-likelihood averaged over replications
(:func:`paper_choice`; the paper's rule, reproduced as such, although it looks at test data), and its KL is
the NN row of Table 1.

The tuned ``NN`` of ``mvn-sim`` differs in four ways: standardised x, the output bias started at the
targets' marginal Gaussian (NGB's start), the best of the six structures per replication on validation NLL,
and (shared with the paper) the cap of 1000 epochs, which the raw-x networks reach before they converge.
:func:`ablation` (study ``mvn-nn-ablation``) switches each of them on alone, starting from the paper's set-up
at its chosen structure, and reports which part of the KL gap each closes.
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

#: the authors' training settings for the simulation (fittingmethods.fit_nn, mvn_nn.build_model)
PAPER_SETTINGS: dict[str, Any] = dict(input_scaling=None, output_init="zeros", learning_rate=0.01, batch_size=256,
                                      max_epochs=1000, patience=50)
#: the tuned NN of mvn-sim (distviz.baselines.MVNNetwork's defaults), the other end of the gap
TUNED_SETTINGS: dict[str, Any] = dict(PAPER_SETTINGS, input_scaling="standard", output_init="marginal")
_STATS = ("kl_pred_true", "kl_true_pred", "test_loglik", "valid_nll", "best_epoch", "n_epochs", "fit_seconds")


def structure_name(hidden) -> str:
    """A hidden-layer structure as text: (50, 20) -> '50x20'."""
    return "x".join(str(int(h)) for h in hidden)


def fit_structure(split, hidden, seed: int, **settings) -> dict:
    """Fit one MVNNetwork with `settings` on a simulated split; its test KL (both ways), test log-likelihood, validation
    NLL, best epoch, epochs run and seconds."""
    from distviz.baselines import MVNNetwork
    from distviz.metrics.divergence import kl_pred_true, kl_true_pred

    t0 = time.perf_counter()
    model = MVNNetwork(hidden_layer_sizes=tuple(hidden), random_state=seed, **settings)
    model.fit(split.X_train, split.y_train, eval_set=(split.X_val, split.y_val))
    secs = time.perf_counter() - t0
    d = model.predict_dist(split.X_test)
    mu, cov = d.mean(), d.cov()
    return {"kl_pred_true": float(np.mean(kl_pred_true(mu, cov, split.mean_test, split.cov_test))),
            "kl_true_pred": float(np.mean(kl_true_pred(mu, cov, split.mean_test, split.cov_test))),
            "test_loglik": float(np.mean(d.logpdf(split.y_test))), "valid_nll": float(model.best_valid_loss_),
            "best_epoch": float(model.best_epoch_), "n_epochs": float(model.n_epochs_), "fit_seconds": secs}


def fit_grid(split, seed: int, structures=None, **settings) -> dict[str, dict]:
    """:func:`fit_structure` for every structure of the authors' grid (or `structures`): {name: row}."""
    from distviz.baselines.mvn_network import AUTHORS_GRID

    return {structure_name(h): fit_structure(split, h, seed, **settings) for h in (structures or AUTHORS_GRID)}


def paper_choice(grids: list[dict[str, dict]]) -> str:
    """The paper's rule: the structure with the best test log-likelihood averaged over the replications."""
    names = list(grids[0])
    return max(names, key=lambda h: float(np.mean([g[h]["test_loglik"] for g in grids])))


def validation_choice(grid: dict[str, dict]) -> str:
    """The tuned NN's rule, per replication: the structure with the lowest validation NLL."""
    return min(grid, key=lambda h: grid[h]["valid_nll"])


def _stats(values) -> dict:
    v = np.asarray(values, dtype=float)
    sd = float(v.std(ddof=1)) if v.size > 1 else 0.0
    return {"mean": float(v.mean()), "sd": sd, "se": sd / np.sqrt(v.size), "median": float(np.median(v))}


def paper_summary(grids: list[dict[str, dict]]) -> dict:
    """The NN-paper row of mvn-sim from each replication's grid: the paper-chosen structure's statistics in
    mvn-sim's keys (``kl_pred_true_mean`` ...; the best and all-trees columns agree for a network), the structure,
    and each structure's mean KL and test log-likelihood.  ``fit_seconds`` counts all six fits of a replication."""
    s = paper_choice(grids)
    out: dict[str, Any] = {}

    def put(key, values):
        st = _stats(values)
        for k in ("mean", "sd", "se"):
            out[f"{key}_{k}"] = st[k]

    for key in ("kl_pred_true", "kl_true_pred"):
        vals = [g[s][key] for g in grids]
        for suffix in ("", "_best", "_all"):
            put(key + suffix, vals)
    put("best_iteration", [g[s]["best_epoch"] for g in grids])
    put("iterations", [g[s]["n_epochs"] for g in grids])
    put("test_loglik", [g[s]["test_loglik"] for g in grids])
    put("fit_seconds", [sum(r["fit_seconds"] for r in g.values()) for g in grids])
    out["structure"] = s
    out["per_structure"] = {h: {"kl_pred_true_mean": float(np.mean([g[h]["kl_pred_true"] for g in grids])),
                                "test_loglik_mean": float(np.mean([g[h]["test_loglik"] for g in grids]))}
                            for h in grids[0]}
    return out


def paper_note(row: dict) -> str:
    """One line for mvn-sim's table: the structure the paper's rule chose and the KL of every structure."""
    per = ", ".join(f"{h} {v['kl_pred_true_mean']:.3g}" for h, v in row["per_structure"].items())
    return (f"NN-paper: structure {row['structure']} (the paper's rule: best test log-likelihood averaged over the "
            f"replications); mean KL(p||t) per structure: {per}")


# ----------------------------------------------------------------------------------------------- ablation


def _phase1(r: int, *, n, n_val, n_test, seed, epochs, ngb_rounds, quiet) -> dict:
    """Replication r: both grids (the paper's settings and the tuned ones) and NGB, on mvn-sim's split r."""
    from distviz.data.mvn_sim import simulate_split
    from distviz.experiments.mvn_sim import run_once

    split = simulate_split(n, n_val, n_test, rng=np.random.default_rng([seed, r]))
    out = {"paper": fit_grid(split, seed + r, **dict(PAPER_SETTINGS, max_epochs=epochs)),
           "tuned": fit_grid(split, seed + r, **dict(TUNED_SETTINGS, max_epochs=epochs)),
           "NGB": run_once("NGB", split, ngb_rounds, 0.01, 50, seed + r)["kl_pred_true"]}
    if not quiet:
        print(f"[mvn-nn-ablation] rep {r + 1}: grids fitted", file=sys.stderr, flush=True)
    return out


def _phase2(r: int, *, n, n_val, n_test, seed, epochs, hidden, cap, quiet) -> dict:
    """Replication r: the paper's set-up at its chosen structure with one factor switched to the tuned value."""
    from distviz.data.mvn_sim import simulate_split

    split = simulate_split(n, n_val, n_test, rng=np.random.default_rng([seed, r]))
    paper = dict(PAPER_SETTINGS, max_epochs=epochs)
    variants = {"scaling": dict(paper, input_scaling="standard"), "bias": dict(paper, output_init="marginal"),
                "cap": dict(paper, max_epochs=int(cap))}
    out = {k: fit_structure(split, hidden, seed + r, **kw) for k, kw in variants.items()}
    if not quiet:
        print(f"[mvn-nn-ablation] rep {r + 1}: single factors fitted", file=sys.stderr, flush=True)
    return out


def ablation(n=500, reps=5, seed=0, cap=4000, n_val=300, n_test=1000, epochs=1000, ngb_rounds=0, quiet=0) -> dict:
    """KL of the paper's NN, of the paper's set-up with each tuned choice switched on alone, and of the tuned NN.

    Replication r uses mvn-sim's split r (seed ``[seed, r]``), so the paper and tuned rows equal mvn-sim's
    ``NN-paper`` and ``NN`` rows for the same seed.  Rows (S = the structure :func:`paper_choice` picks from the
    paper-settings grid, S' the one it picks from the tuned grid):

    * ``paper``: raw x, zero output bias, structure S, cap 1000 (``NN-paper``);
    * ``+ standardised x``, ``+ marginal bias init``, ``+ epoch cap <cap>``: one factor switched, structure S;
    * ``+ best-of-6 (validation)``: the paper's settings, the structure chosen per replication on validation
      NLL (mvn-sim's ``NN-authors``);
    * ``tuned, structure S' fixed``: every tuned choice but the selection;
    * ``tuned (NN)``: mvn-sim's ``NN``; ``NGB`` for reference.

    ``gap_closed`` is (KL_paper - KL_row) / (KL_paper - KL_tuned): the share of the paper-to-tuned gap a row
    closes (1: all of it; factors need not add up, they interact).  `epochs` is the networks' cap (the paper's
    1000) and `ngb_rounds` NGB's (0: mvn-sim's paper cap); both are smaller only in tests.
    """
    if n < 10 or reps < 1 or cap < 1 or epochs < 1:
        raise ConfigError(f"need n >= 10, reps >= 1, cap >= 1 and epochs >= 1; got n={n}, reps={reps}, cap={cap}, "
                          f"epochs={epochs}.")
    kw = dict(n=int(n), n_val=int(n_val), n_test=int(n_test), seed=int(seed), epochs=int(epochs), quiet=int(quiet))
    p1 = map_units(functools.partial(_phase1, ngb_rounds=int(ngb_rounds), **kw), range(int(reps)))
    s = paper_choice([g["paper"] for g in p1])
    s_tuned = paper_choice([g["tuned"] for g in p1])
    hidden = tuple(int(h) for h in s.split("x"))
    p2 = map_units(functools.partial(_phase2, hidden=hidden, cap=int(cap), **kw), range(int(reps)))
    rows_by_rep: dict[str, list[dict]] = {
        "paper": [g["paper"][s] for g in p1],
        "+ standardised x": [g["scaling"] for g in p2],
        "+ marginal bias init": [g["bias"] for g in p2],
        f"+ epoch cap {int(cap)}": [g["cap"] for g in p2],
        "+ best-of-6 (validation)": [g["paper"][validation_choice(g["paper"])] for g in p1],
        "tuned, structure S' fixed": [g["tuned"][s_tuned] for g in p1],
        "tuned (NN)": [g["tuned"][validation_choice(g["tuned"])] for g in p1],
    }
    base = float(np.mean([r["kl_pred_true"] for r in rows_by_rep["paper"]]))
    tuned = float(np.mean([r["kl_pred_true"] for r in rows_by_rep["tuned (NN)"]]))
    ngb = [g["NGB"] for g in p1]
    out: dict[str, Any] = {}
    for name, rows in rows_by_rep.items():
        kl = _stats([r["kl_pred_true"] for r in rows])
        caps = [r["n_epochs"] >= (int(cap) if "cap" in name else int(epochs)) for r in rows]
        out[name] = {"kl_pred_true": kl, "gap_closed": (base - kl["mean"]) / (base - tuned) if base != tuned else 0.0,
                     "best_epoch_mean": float(np.mean([r["best_epoch"] for r in rows])),
                     "stopped_by_cap": int(sum(caps)),
                     "ngb_better": int(sum(r["kl_pred_true"] > b for r, b in zip(rows, ngb)))}
    out["NGB"] = {"kl_pred_true": _stats(ngb)}
    # every structure of both grids: how the choice of structure and the epoch cap play out
    out["grids"] = {which: {h: {"kl_pred_true_mean": float(np.mean([g[which][h]["kl_pred_true"] for g in p1])),
                                "test_loglik_mean": float(np.mean([g[which][h]["test_loglik"] for g in p1])),
                                "best_epoch_mean": float(np.mean([g[which][h]["best_epoch"] for g in p1])),
                                "stopped_by_cap": int(sum(g[which][h]["n_epochs"] >= int(epochs) for g in p1))}
                            for h in p1[0][which]} for which in ("paper", "tuned")}
    out["config"] = dict(n=int(n), reps=int(reps), seed=int(seed), n_val=int(n_val), n_test=int(n_test), cap=int(cap),
                         structure_paper=s, structure_tuned=s_tuned,
                         paper_settings=dict(PAPER_SETTINGS, max_epochs=int(epochs)),
                         tuned_settings=dict(TUNED_SETTINGS, max_epochs=int(epochs)))
    return out


def _ablation_table(res: dict) -> str:
    """Plain-text table of the ablation."""
    cfg = res["config"]
    reps = cfg["reps"]
    lines = [f"N = {cfg['n']}, {reps} replications (seed {cfg['seed']}); S = {cfg['structure_paper']} (paper rule on "
             f"the paper-settings grid), S' = {cfg['structure_tuned']} (on the tuned grid)",
             f"{'set-up':28s} {'KL(p||t) mean +- se':>22s} {'median':>8s} {'gap closed':>11s} {'best ep':>8s} "
             f"{'at cap':>7s} {'NGB better':>11s}"]
    for name, r in res.items():
        if name in ("config", "NGB", "grids"):
            continue
        kl = r["kl_pred_true"]
        lines.append(f"{name:28s} {kl['mean']:>10.4g} +- {kl['se']:<8.3g} {kl['median']:8.4g} {r['gap_closed']:11.2f} "
                     f"{r['best_epoch_mean']:8.0f} {r['stopped_by_cap']:>4d}/{reps:<2d} {r['ngb_better']:>8d}/{reps:<2d}")
    kl = res["NGB"]["kl_pred_true"]
    lines.append(f"{'NGB':28s} {kl['mean']:>10.4g} +- {kl['se']:<8.3g} {kl['median']:8.4g}")
    lines.append("gap closed: (KL_paper - KL_row) / (KL_paper - KL_tuned); at cap: fits that ran to the epoch cap "
                 "(not stopped by patience); NGB better: replications where NGB's KL is lower.")
    for which, grid in res.get("grids", {}).items():
        lines.append(f"{which} grid (mean KL(p||t) / mean test log-lik / mean best epoch / at cap): " + "; ".join(
            f"{h} {r['kl_pred_true_mean']:.3g} / {r['test_loglik_mean']:.3f} / {r['best_epoch_mean']:.0f} / "
            f"{r['stopped_by_cap']}" for h, r in grid.items()))
    from distviz.experiments.mvn_sim import PAPER_TABLE1

    paper = PAPER_TABLE1.get(cfg["n"])
    if paper:
        lines.append(f"paper Table 1 at N = {cfg['n']}: NN {paper['NN']:g}, NGB {paper['NGB']:g} (50 replications).")
    return "\n".join(lines)


@registry.study("mvn-nn-ablation", options=[
    registry.Option("n", int, 500, "training points N"),
    registry.Option("reps", int, 5, "replications (mvn-sim's splits 0 .. reps-1)"),
    registry.Option("seed", int, 0, "seed of the first replication (as mvn-sim's --seed)"),
    registry.Option("cap", int, 4000, "the raised epoch cap of the '+ epoch cap' row (paper: 1000)"),
    registry.Option("quiet", int, 0, "1 to suppress progress lines on stderr"),
], format_table=_ablation_table)
def mvn_nn_ablation(n=500, reps=5, seed=0, cap=4000, quiet=0) -> dict:
    """Which part of the gap between the paper's NN and the tuned NN each choice causes (scaling, bias init, selection, cap)."""
    return ablation(n=n, reps=reps, seed=seed, cap=cap, quiet=quiet)
