"""The dlm-gradient-bias and dlm-vs-elbo studies (small, fast configurations)."""

import json

import numpy as np
import pytest

from distviz.cli import main
from distviz.data.paths import shared_data_path
from distviz.errors import ConfigError
from distviz.experiments import dlm, registry


def test_studies_are_registered():
    names = registry.available()
    assert "dlm-gradient-bias" in names and "dlm-vs-elbo" in names


def test_gradient_bias_study_small():
    res = dlm.gradient_bias(y=5, replicates=300, sample_sizes=(1, 10, 100), seed=1)
    for form in ("reparam", "price"):
        b = np.abs(res["plot"][f"bMC-{form}"]["bias_mu"])
        assert b[0] > b[2]
    ups = [res[f"uPS L={L}"] for L in (1, 10, 100)]
    assert all(abs(r["z_mu"]) < 4 and abs(r["z_sigma"]) < 4 for r in ups)
    assert res["truth"]["grad_mu"] == pytest.approx(1.2232589, abs=1e-6)
    json.dumps(res)


def test_dlm_vs_elbo_on_counts_small():
    res = dlm.dlm_vs_elbo(data="randhie", max_train=80, max_iter=15, n_inducing=5, grid_factor=50.0)
    methods = [k for k in res if k != "info"]
    assert len(methods) == 6
    for k in methods:
        assert np.isfinite(res[k]["test_log_loss"]) and res[k]["test_sq_error"] > 0
    assert res["info"]["likelihood"] == "poisson"


@pytest.mark.skipif(shared_data_path("uci", "concrete") is None, reason="../shared/data/uci is not present")
def test_dlm_vs_elbo_cli_on_uci(capsys):
    rc = main(["study", "dlm-vs-elbo", "--data", "concrete", "--max-train", "60", "--max-iter", "10",
               "--n-inducing", "5", "--grid-factor", "100", "--splits", "0-1", "--json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["info"]["n_train"] == 48 and out["info"]["splits"] == [0, 1]
    assert out["DLM-square (joint)"]["test_sq_error_se"] >= 0
    assert "+-" in dlm._vs_table(out)
    assert out["FITC"]["beta"] is None and np.isfinite(out["FITC"]["test_log_loss"])   # FITC has no beta


def test_dlm_vs_elbo_on_twonorm_with_the_logistic_likelihood():
    res = dlm.dlm_vs_elbo(data="twonorm", max_train=60, n_test=200, max_iter=10, n_inducing=4, grid_factor=100.0)
    assert res["info"]["likelihood"] == "logistic" and res["info"]["n_test"] == 200
    methods = [k for k in res if k != "info"]
    assert len(methods) == 6 and "FITC" not in methods
    for k in methods:   # log-loss below log 2 (better than a coin) and a Brier score in (0, 1)
        assert res[k]["test_log_loss"] < np.log(2) and 0 < res[k]["test_sq_error"] < 1
    with pytest.raises(ConfigError, match="probit"):
        dlm.dlm_vs_elbo_study(data="ringnorm", likelihood="gaussian")
