"""Governed WGBoost runs for the Posterior-regression page (no maths here: distviz.estimators / experiments).

Every run goes through distviz.ui.jobs: a work budget checked before fitting, one run per setting
across sessions, the server-wide cap, cancellation when nobody waits, and the byte-bounded store.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from . import algorithms
from .fits import FitConfig, wg_round_seconds
from .jobs import check_budget, result_store, run_fit

CDE_DATA = {"faithful": "Old Faithful", "bone": "bone density", "synthetic": "synthetic Normal (known truth)"}
#: WGBoost's methods (the registry's, distviz.ui.algorithms): ska, fka, nka, langevin
METHODS = algorithms.wg_methods()
SECTIONS = ["conditional density", "method comparison", "OOD demo"]
#: the conditional-density section's rounds and depths (Section 4.1 uses 500 rounds of depth-1 trees)
CDE_ROUNDS, CDE_DEPTHS = [50, 100, 200, 500], (1, 4)
#: App. E setting of `distviz study wgboost-synthetic`: 200 inputs, 10 particles, depth 3, 1-D location target.
APP_E = {"n": 200, "n_particles": 10, "d": 1, "p": 1, "depth": 3}
#: UCI segment without 'sky': about 1580 training rows, 18 features, 6 classes (5 log-ratio coordinates).
OOD = {"n": 1580, "n_particles": 10, "d": 5, "p": 18, "depth": 3}


def cde_config(data: str, method: str, rounds: int, depth: int) -> FitConfig:
    """The Lab fit behind the conditional-density section: WGBoost `method` on the Normal family of `data` (300 rows of
    the synthetic set), 10 particles, learning rate 0.1."""
    return FitConfig(family="normal", dataset=data, n=300, algorithm=algorithms.wg_method(method).key, n_estimators=int(rounds),
                     learning_rate=0.1, max_depth=int(depth), n_particles=10)


def cde_config_from_params(params: dict) -> FitConfig:
    """`cde_config` for the page's URL parameters `params` as a run that applies them reads them (defaults as the
    page's widgets: Old Faithful, SKA, 100 rounds, depth 1)."""
    from .params import applied_value

    lo, hi = CDE_DEPTHS
    return cde_config(applied_value(params, "pdata", "faithful", options=list(CDE_DATA)),
                      applied_value(params, "method", "ska", options=METHODS),
                      applied_value(params, "prounds", 100, options=CDE_ROUNDS),
                      applied_value(params, "pdepth", 1, lo=lo, hi=hi))


def method_comparison_seconds(rounds: int, methods: tuple) -> float:
    """Predicted seconds of the App. E comparison: per method a 2-round warm-up and `rounds` rounds (lab's WG model)."""
    s = APP_E
    return 0.5 + sum((int(rounds) + 2) * wg_round_seconds(m, s["n"], s["n_particles"], s["d"], s["p"], s["depth"])
                     for m in methods)


def method_comparison(rounds: int, methods: tuple, *, progress_container=None):
    """The `wgboost-synthetic` study (App. E): MMD^2 per round checkpoint and ms per round per method."""
    methods = tuple(methods)
    key = ("post.compare", int(rounds), methods)
    check_budget(method_comparison_seconds(rounds, methods), "the rounds or the number of methods",
                 what="This comparison")

    def factory():
        from distviz.experiments.wgboost import synthetic

        def work(progress):
            out = {}
            for i, m in enumerate(methods):   # the study has no per-round callback: cancellable between methods
                progress(i, len(methods), f"App. E: fitting {m.upper()} ({i + 1} of {len(methods)})")
                out.update(synthetic(rounds=int(rounds), methods=m))
            progress(len(methods), len(methods))
            return out
        return work

    return run_fit(key, factory, label="comparing SKA, FKA, NKA and Langevin on the App. E target",
                   box=progress_container, knobs="the rounds or the number of methods")


#: Settings of the OOD demo's fit (Section 4.3: learning rate 0.4, depth 3, the authors' tree criterion; the
#: first of the paper's split seeds); `rounds` is the page's choice.
OOD_FIT: dict[str, Any] = {"learning_rate": 0.4, "max_depth": 3, "init_rounds": 1000, "split_criterion": "friedman_sum",
                           "seed": 322}
#: Rounds offered on the page and the default, which is shipped precomputed (Section 4.3 uses 4000).
OOD_ROUNDS, OOD_DEFAULT_ROUNDS = [100, 200, 400, 1000, 2000, 4000], 4000
#: The precomputed default: written by `scripts/make_posterior_ood_default.py`, read as JSON (no pickle).
OOD_PRECOMPUTED_FILE = "posterior_ood_default.json"


def fit_ood(rounds: int, seed: int = OOD_FIT["seed"], progress=None) -> dict:
    """Categorical WGBoost on UCI segment without 'sky' (80/20 split by `seed`); accuracy, OOD PR-AUC, both score sets."""
    from distviz.data.cde import load_segment
    from distviz.estimators import WGBoost
    from distviz.metrics import pr_auc

    seg = load_segment("sky")
    idx = np.random.RandomState(seed).permutation(len(seg.y))
    tr, te = idx[: int(0.8 * len(idx))], idx[int(0.8 * len(idx)):]
    t0 = time.perf_counter()
    est = WGBoost("categorical", n_estimators=int(rounds), learning_rate=OOD_FIT["learning_rate"],
                  max_depth=OOD_FIT["max_depth"], init_rounds=OOD_FIT["init_rounds"],
                  split_criterion=OOD_FIT["split_criterion"], random_state=seed).fit(seg.X[tr], seg.y[tr],
                                                                                     progress=progress)
    secs = time.perf_counter() - t0
    acc = float(np.mean(np.argmax(est.predict_mean(seg.X[te]), axis=1) == seg.y[te]))
    s_in, s_out = est.ood_score(seg.X[te]), est.ood_score(seg.X_ood)
    lab = np.r_[np.ones(len(s_in), dtype=int), np.zeros(len(s_out), dtype=int)]
    return {"accuracy": acc, "pr_auc": float(pr_auc(lab, np.r_[s_in, s_out])), "score_in": s_in,
            "score_out": s_out, "seconds": secs, "classes": list(seg.classes), "n_train": len(tr),
            "n_test": len(te), "n_ood": len(s_out), "rounds": int(rounds), "seed": int(seed)}


def ood_precomputed_path():
    """Path of the shipped precomputed OOD demo (`distviz/data/sample/posterior_ood_default.json`)."""
    from distviz.data.paths import sample_file

    return sample_file(OOD_PRECOMPUTED_FILE)


def ood_settings(rounds: int, seed: int) -> dict:
    """The settings a precomputed OOD result must match: the fit settings with `rounds` and `seed`."""
    return {**OOD_FIT, "rounds": int(rounds), "seed": int(seed)}


def save_ood_result(res: dict, path) -> None:
    """Write an OOD result as JSON (scores as lists, the settings beside them) for `load_ood_result`."""
    import json

    out = {k: (np.asarray(v, dtype=float).tolist() if k.startswith("score_") else v) for k, v in res.items()}
    out["settings"] = ood_settings(res["rounds"], res["seed"])
    with open(path, "w") as f:
        json.dump(out, f, separators=(",", ":"))


def load_ood_result(rounds: int, seed: int, path=None) -> dict | None:
    """The precomputed OOD result (JSON, never pickle) when it was made with these settings; None when absent,
    unreadable or made with other settings."""
    import json

    path = ood_precomputed_path() if path is None else path
    try:
        with open(path) as f:
            res = json.load(f)
        if res.get("settings") != ood_settings(rounds, seed):
            return None
        res["score_in"], res["score_out"] = (np.asarray(res[k], dtype=float) for k in ("score_in", "score_out"))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    res["precomputed"] = True
    return res


def ood_demo_seconds(rounds: int) -> float:
    """Predicted seconds of the OOD demo's fit: set-up plus `rounds` SKA rounds at the segment's shape."""
    s = OOD
    return 0.5 + int(rounds) * wg_round_seconds("ska", s["n"], s["n_particles"], s["d"], s["p"], s["depth"])


def ood_demo(rounds: int, seed: int = OOD_FIT["seed"], *, refit: bool = False, progress_container=None):
    """Categorical WGBoost on UCI segment without 'sky': the shipped precomputed result for its settings (unless
    `refit`), else a governed fit; accuracy, OOD PR-AUC and the scores of both groups."""
    key = ("post.ood", int(rounds), int(seed))
    hit = result_store().get(key)   # a refit of this setting made earlier in this process
    if hit is not None:
        return hit
    if not refit:
        pre = load_ood_result(rounds, seed)
        if pre is not None:
            return pre
    check_budget(ood_demo_seconds(rounds), "the rounds", what="This demo")

    def factory():
        def work(progress):
            return fit_ood(int(rounds), int(seed), progress=progress)
        return work

    return run_fit(key, factory, label="fitting categorical WGBoost on UCI segment (class 'sky' held out)",
                   box=progress_container, knobs="the rounds")


def gp_bands(data: str, n_grid: int = 120, *, progress_container=None):
    """Sparse-GP means and 90% bands (ELBO and log-loss DLM) on a grid over the data set's input range."""
    from .fits import _data_shape, load_data

    cfg = FitConfig(family="normal", dataset=data, n=300)
    n = (_data_shape(cfg) or (300, 1))[0]
    # three fits of at most 200 L-BFGS steps (the ELBO hyperparameters, ELBO, DLM): see lab.predict_fit_seconds
    check_budget(3 * (0.15 + 5e-4 * n), "the rows", what="These baselines")
    key = ("post.gp", data, int(n_grid))

    def factory():
        from distviz.gp import compare_1d

        d = load_data(cfg)

        def work(progress):
            x = np.asarray(d.X, dtype=float)[:, 0]
            grid = np.linspace(x.min(), x.max(), n_grid)
            return compare_1d(x, np.asarray(d.y, dtype=float), grid, objectives=("elbo", "dlm_log"), max_iter=200,
                              progress=progress), d
        return work

    return run_fit(key, factory, label="fitting the sparse-GP baselines (ELBO and log-loss DLM)", box=progress_container,
                   knobs="the rows")
