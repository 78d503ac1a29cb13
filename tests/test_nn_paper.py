"""mvn-sim's NN-paper row (the paper's NN baseline exactly) and the mvn-nn-ablation study (issue 30, item 1)."""

import json

import numpy as np
import pytest

from distviz.errors import ConfigError
from distviz.experiments import mvn_sim as ms
from distviz.experiments import nn_paper as npp

TINY = dict(n=30, reps=2, n_val=30, n_test=40, quiet=1)


def _row(kl, ll, val, epoch=10.0):
    return {"kl_pred_true": kl, "kl_true_pred": kl / 2, "test_loglik": ll, "valid_nll": val, "best_epoch": epoch,
            "n_epochs": epoch + 50, "fit_seconds": 1.0}


def test_the_paper_rule_is_one_structure_by_mean_test_loglik_and_the_tuned_rule_per_rep_by_validation():
    grids = [{"20": _row(1.0, -3.0, 2.0), "100": _row(0.5, -2.0, 2.5), "20x20": _row(9.0, -9.0, 1.0)},
             {"20": _row(3.0, -4.0, 2.0), "100": _row(0.7, -2.5, 1.5), "20x20": _row(0.2, -1.0, 3.0)}]
    assert npp.paper_choice(grids) == "100"   # mean test log-likelihood -2.25 beats -3.5 and -5.0
    assert [npp.validation_choice(g) for g in grids] == ["20x20", "100"]
    row = npp.paper_summary(grids)
    assert row["structure"] == "100" and row["kl_pred_true_mean"] == pytest.approx(0.6)
    assert row["kl_pred_true_all_mean"] == row["kl_pred_true_best_mean"] == row["kl_pred_true_mean"]
    assert row["fit_seconds_mean"] == 3.0 and row["per_structure"]["20x20"]["kl_pred_true_mean"] == pytest.approx(4.6)
    json.dumps(row)


def test_nn_paper_in_mvn_sim_and_the_ablation_agree_with_mvn_sims_rows():
    res = ms.mvn_sim(methods="NN,NN-paper", n_estimators=3, **TINY)
    row = res["NN-paper"]
    assert row["structure"] in row["per_structure"] and len(row["per_structure"]) == 6
    assert row["kl_pred_true_mean"] == pytest.approx(row["per_structure"][row["structure"]]["kl_pred_true_mean"])
    assert "NN-paper: structure" in ms._format_table(res)
    ab = npp.ablation(cap=5, epochs=3, ngb_rounds=3, **TINY)
    # replication r is mvn-sim's split r with mvn-sim's seeds: the end rows are mvn-sim's NN-paper and NN rows
    assert ab["config"]["structure_paper"] == row["structure"]
    assert ab["paper"]["kl_pred_true"]["mean"] == pytest.approx(row["kl_pred_true_mean"], rel=1e-12)
    assert ab["tuned (NN)"]["kl_pred_true"]["mean"] == pytest.approx(res["NN"]["kl_pred_true_mean"], rel=1e-12)
    assert ab["paper"]["gap_closed"] == 0.0 and ab["tuned (NN)"]["gap_closed"] == pytest.approx(1.0)
    assert ab["+ epoch cap 5"]["best_epoch_mean"] <= 5 and ab["paper"]["stopped_by_cap"] == 2
    table = npp._ablation_table(ab)
    for name in ("+ standardised x", "+ marginal bias init", "+ best-of-6 (validation)", "tuned, structure S' fixed"):
        assert name in table
    json.dumps(ab)
    with pytest.raises(ConfigError, match="reps"):
        npp.ablation(reps=0)
    assert np.isfinite(ab["NGB"]["kl_pred_true"]["mean"])
