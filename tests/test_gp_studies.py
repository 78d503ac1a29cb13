"""The dlm-gradient-bias and dlm-vs-elbo studies (small, fast configurations)."""

import json

import numpy as np
import pytest

from distviz.cli import main
from distviz.data.paths import shared_data_path
from distviz.errors import ConfigError
from distviz.experiments import dlm, registry
from distviz.gp import beta_grid


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


def test_dlm_vs_elbo_paper_protocol_small():
    """--protocol paper at tiny sizes and cap: the splits, the settings recorded, the paper's four methods."""
    res = dlm.dlm_vs_elbo_paper_runs([40, 20], [0, 1], data="twonorm", max_iter=25, n_inducing=4)
    info = res["info"]
    assert info["sizes"] == [40, 20] and info["splits"] == [0, 1]
    assert info["optimizer"] == "adam" and info["learning_rate"] == 0.1 and info["tol"] == 1e-4
    assert info["window"] == 20 and info["max_iter"] == 25 and info["grid_factor"] == 2.0
    assert info["mean_function"] == "constant" and info["n_rows"] == 7400
    assert info["protocol"] == "custom"   # a cap and M other than the paper's
    rows = res["sizes"]["40"]
    assert rows["n_val"] == 740 and rows["n_test"] == 1000
    assert [k for k, v in rows.items() if isinstance(v, dict)] == ["ELBO", "beta-ELBO", "DLM-log (joint)",
                                                                   "DLM-log (fixed)"]
    for r in (v for v in rows.values() if isinstance(v, dict)):
        assert 0 < r["test_log_loss"] < 1 and 0 <= r["test_error"] <= 1 and r["n_iter"] <= 25
    assert rows["DLM-log (joint)"]["grid_fits"] == 2 * len(beta_grid(40, factor=2.0))
    assert "n_train = 20" in dlm._study_table(res)
    json.dumps(res)


def test_dlm_vs_elbo_paper_settings_and_cli(capsys):
    assert dlm.paper_defaults("ringnorm") == {"task": "binary", "window": 20, "cap": 3000,
                                              "mean_function": "constant", "n_inducing": 74}
    assert dlm.paper_defaults("energy")["window"] == 50 and dlm.paper_defaults("energy")["cap"] == 5000
    assert dlm.paper_defaults("randhie")["mean_function"] == "zero"
    one = dlm.dlm_vs_elbo_paper(data="ringnorm", size=30, seed=3, max_iter=20, n_inducing=4)
    again = dlm.dlm_vs_elbo_paper(data="ringnorm", size=30, seed=3, max_iter=20, n_inducing=4)
    assert one["ELBO"]["test_log_loss"] == again["ELBO"]["test_log_loss"]
    with pytest.raises(ConfigError, match="training rows"):
        dlm.dlm_vs_elbo_paper(data="ringnorm", size=7000)
    with pytest.raises(ConfigError, match="protocol"):
        dlm.dlm_vs_elbo_study(protocol="papers")
    rc = main(["study", "dlm-vs-elbo", "--protocol", "paper", "--data", "twonorm", "--sizes", "30",
               "--splits", "0-1", "--max-iter", "15", "--n-inducing", "3", "--json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert list(out["sizes"]) == ["30"] and out["info"]["study_protocol"] == "paper"


@pytest.mark.skipif(shared_data_path("uci", "energy") is None, reason="UCI data not present")
def test_dlm_vs_elbo_paper_protocol_regression_split():
    res = dlm.dlm_vs_elbo_paper(data="energy", max_iter=10, n_inducing=4)
    info = res["info"]
    assert (info["n_train"], info["n_val"], info["n_test"]) == (515, 61, 192)   # 67 / 8 / 25 of 768 rows
    assert info["mean_function"] == "zero" and info["window"] == 50
    assert {"FITC", "DLM-square (joint)", "DLM-square (fixed)"} <= set(res)
    assert res["FITC"]["test_error"] == res["FITC"]["test_sq_error"]
