"""Study `drifters` on the shipped synthetic sample: the paper's finding, model averages, binned NetCDF, CLI."""

import json

import numpy as np
import pytest

from distviz.data.drifters import load_drifters
from distviz.errors import ConfigError
from distviz.experiments import drifters as st


@pytest.fixture(scope="module")
def comparison():
    # the sample restricted to the western basin (Gulf Stream and its surroundings) keeps the fit fast
    d = load_drifters("sample", bbox=(-82.0, -50.0, 24.0, 45.0))
    calls = []
    res = st.run_drifter_comparison(d, rounds=150, learning_rate=0.1, methods=("NGB", "IndepNGB"), seed=0,
                                    mixture_samples=60, progress=lambda f, m: calls.append((f, m)))
    res.progress_calls = calls
    return res


def test_progress_is_reported_in_order(comparison):
    fr = [f for f, _ in comparison.progress_calls]
    assert fr == sorted(fr) and fr[-1] == 1.0 and "SYNTHETIC" in comparison.progress_calls[0][1]
    assert any(m.startswith("fitting NGB") for _, m in comparison.progress_calls)


def test_ngb_beats_indep_ngb_in_the_jet(comparison):
    jet = comparison.subsets["jet"]
    assert jet["n"] > 100
    assert jet["NGB"]["NLL"] < jet["IndepNGB"]["NLL"] - 0.02
    assert jet["NGB"]["PR90_area"] < 0.95 * jet["IndepNGB"]["PR90_area"]
    # NGB learns the along-stream correlation: predicted |rho| is large in the jet
    pred = comparison.predictions
    mask = np.hypot(pred["mean_Oracle"].values[:, 0], pred["mean_Oracle"].values[:, 1]) > 80
    cov = pred["cov_NGB"].values[mask]
    assert np.median(np.abs(cov[:, 0, 1] / np.sqrt(cov[:, 0, 0] * cov[:, 1, 1]))) > 0.3
    # neither model beats the true conditional law of the synthetic data
    for m in ("NGB", "IndepNGB"):
        assert comparison.table[m]["NLL"] > comparison.table["Oracle"]["NLL"]


def test_table_metrics_are_sane(comparison):
    t = comparison.table
    for m in ("NGB", "IndepNGB", "Pool-global", "Pool-region", "Mix-global", "Mix-region"):
        assert np.isfinite(t[m]["NLL"]) and 5 < t[m]["RMSE"] < 60
        assert 0.8 < t[m]["PR90_cov"] < 0.97 and t[m]["PR90_area"] > 0
    assert t["Oracle"]["PR90_cov"] == pytest.approx(0.9, abs=0.03)
    df = comparison.table_frame()
    assert list(df.index[:2]) == ["NGB", "IndepNGB"] and df.loc["NGB", "NLL"] == t["NGB"]["NLL"]
    assert comparison.table_frame("jet").loc["IndepNGB", "n"] == comparison.subsets["jet"]["n"]
    av = comparison.averaging
    assert 0 <= av["Pool"]["w_global"] <= 1 and "log-linear" in av["Pool"]["kind"]
    assert av["best_single_NLL"] == min(t["NGB"]["NLL"], t["IndepNGB"]["NLL"])
    for name in st.AVERAGES:
        assert av[name + "_beats_both"] == (t[name]["NLL"] < av["best_single_NLL"])
    # the averages can be no worse on validation than the better end point; on test they stay close
    assert t["Pool-global"]["NLL"] < max(t["NGB"]["NLL"], t["IndepNGB"]["NLL"]) + 0.02


def test_binned_results_roundtrip_netcdf(comparison, tmp_path):
    b = comparison.binned
    assert b.attrs["bin_size_deg"] == 2.0 and int(b["n_test"].sum()) == comparison.info["n_test"]
    np.testing.assert_allclose(b["nll_diff"].values, b["nll_NGB"].values - b["nll_IndepNGB"].values, atol=1e-9)
    z = comparison.zoom
    assert z.attrs["bin_size_deg"] == 0.5 and z["lon_edge"].values[0] == -80.0 and z["lat_edge"].values[-1] == 35.0
    p = tmp_path / "drifters.nc"
    comparison.save(p)
    back = st.DrifterComparison.load(p)
    np.testing.assert_allclose(back.binned["rho"].values, b["rho"].values)
    assert back.table["NGB"]["NLL"] == pytest.approx(comparison.table["NGB"]["NLL"])
    assert back.predictions.sizes["obs"] == comparison.info["n_test"]
    json.dumps(st._plain(comparison.to_dict()))


def test_trajectory_figures_from_the_fit(comparison):
    import warnings

    import cartopy.io

    from distviz.viz import maps

    with warnings.catch_warnings():
        warnings.simplefilter("error", cartopy.io.DownloadWarning)
        fig = maps.trajectory_ellipses_figure(comparison.predictions)
        fig.canvas.draw()
    assert len(fig.axes) == 2 and "Easting" in fig.axes[0].get_xlabel()
    did, t0 = maps.pick_trajectory(comparison.predictions)
    rows = maps.trajectory_rows(comparison.predictions, did, t0)
    assert len(rows) == 12 and np.all(np.diff(comparison.predictions["t"].values[rows]) == 1)
    pf = maps.trajectory_ellipses_plotly(comparison.predictions, did, start=t0)
    names = [t.name for t in pf.data if t.name not in ("land", "coastline")]
    assert names[:3] == ["trajectory (daily)", "NGB 70% region", "IndepNGB 70% region"]
    import matplotlib.pyplot as plt

    plt.close("all")


def test_gaussian_helpers():
    rng = np.random.default_rng(0)
    mu = rng.normal(size=(5, 2))
    A = rng.normal(size=(5, 2, 2))
    S = A @ A.transpose(0, 2, 1) + np.eye(2)
    y = rng.normal(size=(5, 2))
    from scipy.stats import multivariate_normal

    ref = np.array([-multivariate_normal(mu[i], S[i]).logpdf(y[i]) for i in range(5)])
    np.testing.assert_allclose(st.gauss_nll(y, mu, S), ref)
    # pool with w = 1 / 0 returns the end points; w = 0.5 of equal laws returns that law
    m1, S1 = st.log_linear_pool(np.ones(5), mu, S, mu[::-1], S[::-1])
    np.testing.assert_allclose(m1, mu, atol=1e-9)
    np.testing.assert_allclose(S1, S, atol=1e-9)
    mh, Sh = st.log_linear_pool(0.5, mu, S, mu, S)
    np.testing.assert_allclose(Sh, S, atol=1e-9)
    np.testing.assert_allclose(st.mixture_nll(y, 0.3, mu, S, mu, S), ref)
    # Monte Carlo region of a 'mixture' of one Gaussian: coverage of its own draws and the exact area
    yy = mu + np.einsum("nij,nj->ni", np.linalg.cholesky(S), rng.normal(size=(5, 2)))
    cov, area = st.mixture_region(np.repeat(yy, 1, 0), 1.0, mu, S, mu, S, 0.9, 4000, 1)
    exact = np.mean(np.pi * 4.605170185988092 * np.sqrt(np.linalg.det(S)))
    assert area == pytest.approx(exact, rel=0.08)


def test_bad_options_are_config_errors():
    with pytest.raises(ConfigError, match="Unknown method"):
        st.run_drifter_comparison("sample", methods=("XGB",))
    with pytest.raises(ConfigError, match="rounds"):
        st.run_drifter_comparison("sample", rounds=0)


def test_study_is_registered_and_rejects_bad_paths(tmp_path, capsys):
    from distviz.cli import main

    assert main(["study", "drifters", "--data", str(tmp_path / "none.csv"), "--json"]) != 0
    assert "does not exist" in capsys.readouterr().err
    from distviz.experiments import registry

    s = registry.get("drifters")
    assert {o.name for o in s.options} >= {"data", "rounds", "methods", "save"}


def test_clustered_standard_error():
    x = np.array([1.0, 1.0, 3.0, 3.0])
    m, se = st.clustered_mean_se(x, [0, 0, 1, 1])
    # two clusters with sums of deviations -2 and +2: sqrt(2/1 * 8) / 4 = 1
    assert m == 2.0 and se == pytest.approx(1.0)
    m, se = st.clustered_mean_se(x, [0, 1, 2, 3])
    assert se == pytest.approx(np.std(x, ddof=1) / 2)
