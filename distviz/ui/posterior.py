"""Cached WGBoost runs for the Posterior-regression page (no maths here: distviz.boosting / experiments)."""

from __future__ import annotations

import time

import numpy as np
import streamlit as st

from .lab import FitConfig, fit_model

CDE_DATA = {"faithful": "Old Faithful", "bone": "bone density", "synthetic": "synthetic Normal (known truth)"}
METHODS = ["ska", "fka", "nka", "langevin"]


def cde_fit(data: str, method: str, rounds: int, depth: int):
    """SKA/FKA/NKA/Langevin WGBoost with a Normal target on a 1-D data set (through the Lab's cached fits)."""
    cfg = FitConfig(family="normal", dataset=data, n=300, algorithm=f"wg_{method}", n_rounds=int(rounds),
                    learning_rate=0.1, max_depth=int(depth), n_particles=10)
    return fit_model(cfg)


@st.cache_resource(max_entries=4, show_spinner="comparing SKA, FKA, NKA and Langevin on the App. E target …")
def method_comparison(rounds: int, methods: tuple):
    """The `wgboost-synthetic` study (App. E): MMD^2 per round checkpoint and ms per round per method."""
    from distviz.experiments.wgboost import synthetic

    return synthetic(rounds=int(rounds), methods=",".join(methods))


@st.cache_resource(max_entries=4, show_spinner="fitting categorical WGBoost on UCI segment (class 'sky' held out) …")
def ood_demo(rounds: int, seed: int = 0):
    """Categorical WGBoost on UCI segment without 'sky'; accuracy, OOD PR-AUC and the scores of both groups."""
    from distviz.boosting import WGBoost
    from distviz.data.cde import load_segment
    from distviz.metrics import pr_auc

    seg = load_segment("sky")
    idx = np.random.RandomState(seed).permutation(len(seg.y))
    tr, te = idx[: int(0.8 * len(idx))], idx[int(0.8 * len(idx)):]
    t0 = time.perf_counter()
    est = WGBoost("categorical", n_rounds=int(rounds), learning_rate=0.4, max_depth=3, init_rounds=1000,
                  random_state=seed).fit(seg.X[tr], seg.y[tr])
    secs = time.perf_counter() - t0
    acc = float(np.mean(np.argmax(est.predict_mean(seg.X[te]), axis=1) == seg.y[te]))
    s_in, s_out = est.ood_score(seg.X[te]), est.ood_score(seg.X_ood)
    lab = np.r_[np.ones(len(s_in), dtype=int), np.zeros(len(s_out), dtype=int)]
    return {"accuracy": acc, "pr_auc": float(pr_auc(lab, np.r_[s_in, s_out])), "score_in": s_in, "score_out": s_out,
            "seconds": secs, "classes": seg.classes, "n_train": len(tr), "n_test": len(te), "n_ood": len(s_out)}


@st.cache_resource(max_entries=8, show_spinner="fitting the sparse-GP baselines (ELBO and log-loss DLM) …")
def gp_bands(data: str, n_grid: int = 120):
    """Sparse-GP means and 90% bands (ELBO and log-loss DLM) on a grid over the data set's input range."""
    from distviz.gp import compare_1d

    from .lab import load_data

    d = load_data(FitConfig(family="normal", dataset=data, n=300))
    x = np.asarray(d.X, dtype=float)[:, 0]
    grid = np.linspace(x.min(), x.max(), n_grid)
    return compare_1d(x, np.asarray(d.y, dtype=float), grid, objectives=("elbo", "dlm_log"), max_iter=200), d
