"""The model-check figures and tables (distviz.viz.checks), the Lab's held-out split and the drifter downloads
(distviz.experiments.drifter_exports): counts against numpy, values against distviz.metrics, files read back."""

from __future__ import annotations

import io
import re

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from distviz.families.dist import MultivariateNormalDist, NormalDist
from distviz.metrics import coverage, crps, pit
from distviz.viz.checks import (
    NOMINAL_LEVELS,
    checks_frame,
    coverage_figure,
    drifter_checks,
    model_checks,
    pit_counts,
    pit_histogram,
)


def _normal_case(n=400, seed=0):
    rng = np.random.default_rng(seed)
    mu, sd = rng.normal(size=n), np.exp(rng.normal(scale=0.3, size=n))
    return NormalDist(mu, sd), mu + sd * rng.standard_normal(n) * 1.3   # too narrow laws: a U-shaped PIT


def test_pit_counts_and_histogram_bars():
    v = np.array([0.0, 0.05, 0.1, 0.15, 0.5, 0.99, 1.0])
    edges, counts = pit_counts(v, bins=10)
    np.testing.assert_allclose(edges, np.linspace(0, 1, 11))
    np.testing.assert_array_equal(counts, np.histogram(v, bins=edges)[0])
    assert counts.sum() == len(v) and counts[-1] == 2   # the last bin is closed: 0.99 and 1.0

    dist, y = _normal_case()
    ch = model_checks(dist, y, name="mgd")
    fig = pit_histogram([ch], bins=10)
    bars = [t for t in fig.data if t.type == "bar"]
    assert len(bars) == 1
    _, want = pit_counts(pit(dist, y), 10)
    np.testing.assert_allclose(np.asarray(bars[0].y) * ch.n * 0.1, want)   # density x rows x width = counts
    assert want[0] + want[-1] > 2 * want[4:6].sum() / 2   # the laws are too narrow: the outer bins fill
    assert "PIT" in fig.layout.xaxis.title.text and "probability" in fig.layout.xaxis.title.text
    assert fig.layout.yaxis.title.text


def test_model_checks_agree_with_metrics_and_the_coverage_curve():
    dist, y = _normal_case()
    ch = model_checks(dist, y, name="ngd")
    np.testing.assert_allclose(ch.coverage, coverage(dist, y, NOMINAL_LEVELS))
    np.testing.assert_allclose(ch.crps, np.mean(crps(dist, y)))
    np.testing.assert_allclose(ch.nll, -np.mean(dist.logpdf(y)))
    assert ch.n == len(y) and not ch.multivariate and ch.score_name == "CRPS"
    fig = coverage_figure([ch])
    line = [t for t in fig.data if t.name == "ngd"][0]
    np.testing.assert_allclose(line.x, NOMINAL_LEVELS)
    np.testing.assert_allclose(line.y, ch.coverage)
    assert line.line.color == "#D55E00"   # NGD's fixed Okabe-Ito colour
    assert np.all(ch.coverage[4:] < np.asarray(NOMINAL_LEVELS)[4:])   # too narrow laws cover less than promised
    assert "nominal" in fig.layout.xaxis.title.text and "coverage" in fig.layout.yaxis.title.text
    df = checks_frame([ch], "cm/s")
    assert list(df.columns[:4]) == ["method", "held-out rows", "NLL (nats)", "CRPS (cm/s)"]
    assert df["coverage 90%"].iloc[0] == pytest.approx(ch.coverage[NOMINAL_LEVELS.index(0.9)])


def test_user_names_are_escaped_in_the_figures():
    dist, y = _normal_case(50)
    ch = model_checks(dist, y, name="<a href='http://x'>m</a> %{x}")
    for fig in (pit_histogram([ch]), coverage_figure([ch])):
        text = fig.to_json()
        assert "<a href" not in text and "m</a> %{x}" not in text
        names = [t.name for t in fig.data]
        assert "&lt;a href='http://x'&gt;m&lt;/a&gt; &#37;{x}" in names


def _pred(n=30, seed=1):
    """A small drifter-comparison predictions Dataset laid out as run_drifter_comparison writes it."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n, 2, 2))
    S = A @ A.transpose(0, 2, 1) + 4 * np.eye(2)
    mu = rng.normal(size=(n, 2)) * 10
    y = mu + np.einsum("nij,nj->ni", np.linalg.cholesky(S), rng.standard_normal((n, 2)))
    d = MultivariateNormalDist(mu, S)
    v = {"lon": ("obs", rng.uniform(-80, -10, n)), "lat": ("obs", rng.uniform(20, 60, n)),
         "id": ("obs", np.repeat(np.arange(n // 3 + 1), 3)[:n] + 1000), "t": ("obs", 16600 + np.arange(n) / 4),
         "u": ("obs", y[:, 0]), "v": ("obs", y[:, 1])}
    for m, scale in (("NGB", 1.0), ("IndepNGB", 1.5)):
        v[f"mean_{m}"] = (("obs", "comp"), mu)
        v[f"cov_{m}"] = (("obs", "comp", "comp2"), S * scale)
        v[f"nll_{m}"] = ("obs", -MultivariateNormalDist(mu, S * scale).logpdf(y))
    v["nll_Mix-global"] = ("obs", -d.logpdf(y) + 0.01)
    return xr.Dataset(v, coords={"comp": ["u", "v"], "comp2": ["u", "v"]},
                      attrs={"source": "drifters_sample.nc", "synthetic": 1})


def test_per_row_table_and_its_csv_and_netcdf_round_trip(tmp_path):
    from distviz.experiments.drifter_exports import per_row_csv, per_row_netcdf, per_row_table

    pred = _pred()
    df = per_row_table(pred)
    assert len(df) == 30
    for m in ("NGB", "IndepNGB"):
        for c in ("mean_u", "mean_v", "var_u", "cov_uv", "var_v", "rho", "nll"):
            assert f"{m}_{c}" in df
    assert "Mix-global_nll" in df and "Mix-global_rho" not in df   # a mixture has only its NLL
    S = pred["cov_IndepNGB"].values
    np.testing.assert_allclose(df["IndepNGB_rho"], S[:, 0, 1] / np.sqrt(S[:, 0, 0] * S[:, 1, 1]))
    np.testing.assert_allclose(df["NGB_mean_v"], pred["mean_NGB"].values[:, 1])
    back = pd.read_csv(io.BytesIO(per_row_csv(pred)), float_precision="round_trip")
    assert list(back.columns) == list(df.columns)
    pd.testing.assert_frame_equal(back, df, check_dtype=False, rtol=0, atol=0)   # exact floats
    (tmp_path / "rows.nc").write_bytes(per_row_netcdf(pred))
    ds = xr.load_dataset(tmp_path / "rows.nc", decode_times=False)
    pd.testing.assert_frame_equal(ds.to_dataframe().reset_index(drop=True)[list(df.columns)], df)
    assert xr.load_dataset(tmp_path / "rows.nc")["t"].dtype.kind == "M"   # CF time units: readers decode dates
    assert ds["NGB_mean_u"].attrs["units"] == "cm s-1" and ds["NGB_nll"].attrs["units"] == "nats"


def test_drifter_checks_use_each_methods_bivariate_normal():
    pred = _pred(60)
    checks = drifter_checks(pred, n_samples=50)
    assert [c.name for c in checks] == ["NGB", "IndepNGB"]   # Mix has no mean and covariance
    y = np.column_stack([pred["u"].values, pred["v"].values])
    d = MultivariateNormalDist(pred["mean_NGB"].values, pred["cov_NGB"].values)
    np.testing.assert_allclose(checks[0].nll, pred["nll_NGB"].values.mean())
    np.testing.assert_allclose(checks[0].coverage, coverage(d, y, NOMINAL_LEVELS))
    assert checks[0].multivariate and checks[0].score_name == "energy score"
    assert checks[1].coverage[-1] >= checks[0].coverage[-1]   # the wider covariance covers at least as much
    fig = pit_histogram(checks, bins=5)
    steps = {t.name: t for t in fig.data if t.line is not None and t.line.shape == "hv"}
    assert set(steps) == {"NGB", "IndepNGB"} and steps["NGB"].line.color == "#009E73"   # NGB's fixed green
    _, counts = pit_counts(checks[1].pit, 5)
    np.testing.assert_allclose(np.asarray(steps["IndepNGB"].y)[:-1] * 60 * 0.2, counts)
    assert "Mahalanobis" in fig.layout.xaxis.title.text
    assert list(checks_frame(checks, "cm/s", levels=(0.5, 0.9)).columns) == [
        "method", "held-out rows", "NLL (nats)", "energy score (cm/s)", "coverage 50%", "coverage 90%"]


def test_export_names_are_descriptive_and_safe():
    from distviz.experiments.drifter_exports import export_stem

    info = {"source": "drifters_north_atlantic_synthetic.nc", "rounds": 300, "learning_rate": 0.1, "n_train": 29654,
            "seed": 0}
    assert export_stem(info) == "drifters-north-atlantic-synthetic-r300-lr0.1-train29654-seed0"
    odd = export_stem({**info, "source": "../<script>x</script> my file.csv", "learning_rate": 0.05})
    assert re.fullmatch(r"[a-z0-9.-]+", odd) and "lr0.05" in odd and "script" in odd and ".." not in odd


def test_model_file_loads_back_and_predicts_the_same(tmp_path):
    from distviz.estimators.ngboost import IndepNGB
    from distviz.experiments.drifter_exports import model_file_bytes, saveable_models
    from distviz.persistence import load

    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    Y = np.column_stack([X[:, 0] + rng.normal(size=120), X[:, 1] * 0.5 + rng.normal(size=120)])
    est = IndepNGB(n_estimators=4, early_stopping_rounds=None, random_state=0).fit(X, Y)
    assert list(saveable_models({"IndepNGB": est, "NN": object()})) == ["IndepNGB"]
    data = model_file_bytes(est)
    assert data[:4] in (b"\x89HDF", b"CDF\x01", b"CDF\x02")
    (tmp_path / "m.nc").write_bytes(data)
    back = load(tmp_path / "m.nc")
    a, b = est.predict_dist(X[:20]), back.predict_dist(X[:20])
    np.testing.assert_array_equal(a.mean(), b.mean())
    np.testing.assert_array_equal(a.cov(), b.cov())


def test_lab_held_out_split_and_checks():
    from distviz.ui.fits import FitConfig, load_data
    from distviz.ui.lab import fit_model

    res = fit_model(FitConfig(n=200, n_estimators=20, test_fraction=0.2))
    assert res.test is not None and len(res.test.y) == 40 and len(res.data.y) == 160
    full = load_data(FitConfig(n=200))
    rows = {tuple(r) for r in np.column_stack([full.X, full.y])}
    tr = {tuple(r) for r in np.column_stack([res.data.X, res.data.y])}
    te = {tuple(r) for r in np.column_stack([res.test.X, res.test.y])}
    assert not tr & te and tr | te == rows   # a partition of the Lab's rows
    ch = model_checks(res.model.predict_dist(res.test.X), res.test.y, name="mgd")
    assert ch.n == 40 and np.isfinite(ch.nll) and np.isfinite(ch.crps)
    assert np.all(np.diff(ch.coverage) >= 0)
