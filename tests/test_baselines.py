"""MVNNetwork (the paper's NN baseline): exact gradients, chart round trip, best-epoch restore, grid, save/load, API."""

import numpy as np
import pytest
from sklearn.base import clone

from distviz.baselines import MVNNetwork
from distviz.baselines.mvn_network import backward, chart_loss_and_grad, forward
from distviz.data.mvn_sim import simulate
from distviz.errors import ConfigError, DataError
from distviz.families.mvn_cholesky import MVNCholesky


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    X, Y = simulate(300, rng)
    Xv, Yv = simulate(120, rng)
    return X, Y, Xv, Yv


@pytest.fixture(scope="module")
def fitted(data):
    X, Y, Xv, Yv = data
    return MVNNetwork(hidden_layer_sizes=(16,), max_epochs=80, patience=10, random_state=0).fit(
        X, Y, eval_set=(Xv, Yv))


@pytest.mark.parametrize("activation,P,jitter", [("tanh", 2, 0.5), ("relu", 3, 0.3), ("tanh", 3, 0.0)])
def test_backprop_matches_finite_differences(activation, P, jitter):
    # the chart differentiates U's diagonal in log a_ii; a large jitter makes the chain to v_ii visible
    rng = np.random.default_rng(1)
    chart = MVNCholesky(P, jitter=jitter)
    X = rng.normal(size=(7, 3))
    Y = rng.normal(size=(7, P))
    sizes = (3, 5, 4, chart.dim)
    params = []
    for i, j in zip(sizes[:-1], sizes[1:]):
        params += [rng.normal(scale=0.5, size=(i, j)), rng.normal(scale=0.3, size=j)]

    def loss(ps):
        return chart_loss_and_grad(chart, Y, forward(ps, X, activation))[0]

    theta, cache = forward(params, X, activation, keep=True)
    grads = backward(params, cache, chart_loss_and_grad(chart, Y, theta)[1], activation)
    h = 1e-6
    for k, p in enumerate(params):
        fd = np.zeros_like(p)
        for idx in np.ndindex(p.shape):
            plus = [q.copy() for q in params]
            minus = [q.copy() for q in params]
            plus[k][idx] += h
            minus[k][idx] -= h
            fd[idx] = (loss(plus) - loss(minus)) / (2 * h)
        np.testing.assert_allclose(grads[k], fd, rtol=1e-5, atol=1e-7)


def test_predictions_live_in_ngb_chart(fitted, data):
    X, Y, Xv, Yv = data
    F = fitted.predict_params(Xv)
    d = fitted.predict_dist(Xv)
    ch = MVNCholesky(2)
    np.testing.assert_array_equal(d.mean(), ch.mean(F))
    np.testing.assert_allclose(d.cov(), ch.cov(F))
    np.testing.assert_allclose(ch.from_moments(d.mean(), d.cov()), F, atol=1e-8)
    np.testing.assert_array_equal(fitted.predict(Xv), d.mean())
    np.testing.assert_allclose(-d.logpdf(Yv), fitted.nll(Xv, Yv), rtol=1e-8)
    assert d.rho.shape == (Xv.shape[0],) and np.all(np.abs(d.rho) < 1)
    assert fitted.score(Xv, Yv) == pytest.approx(-np.mean(ch.nll(Yv, F)))


def test_restores_best_epoch_and_learns(fitted, data):
    X, Y, Xv, Yv = data
    assert fitted.best_epoch_ >= 1 and fitted.best_valid_loss_ == pytest.approx(min(fitted.valid_loss_))
    assert fitted.valid_loss_[fitted.best_epoch_ - 1] == fitted.best_valid_loss_
    # the restored weights give the best validation NLL, not the last epoch's
    assert -fitted.score(Xv, Yv) == pytest.approx(fitted.best_valid_loss_, rel=1e-12)
    # better than the marginal Gaussian of the training targets (the network's starting point)
    ch = MVNCholesky(2)
    marginal = np.mean(ch.nll(Yv, np.tile(ch.init_theta(Y), (len(Yv), 1))))
    assert fitted.best_valid_loss_ < marginal - 0.3


def test_early_stopping_patience():
    rng = np.random.default_rng(5)
    X, Y = simulate(200, rng)
    Xv, Yv = simulate(60, rng)
    m = MVNNetwork(hidden_layer_sizes=(8,), learning_rate=0.2, max_epochs=400, patience=3, random_state=1)
    m.fit(X, Y, eval_set=(Xv, Yv))
    assert m.n_epochs_ < 400 and m.n_epochs_ == m.best_epoch_ + 3
    assert np.all(np.asarray(m.valid_loss_[m.best_epoch_:]) >= m.best_valid_loss_)


def test_auto_grid_picks_lowest_validation_nll(data):
    X, Y, Xv, Yv = data
    calls = []
    m = MVNNetwork(hidden_layer_sizes="auto", hidden_grid=((2,), (12, 6)), max_epochs=25, patience=5,
                   batch_size=None, random_state=0).fit(X, Y, eval_set=(Xv, Yv),
                                                        progress=lambda e, n: calls.append((e, n)))
    # progress counts epochs over the whole grid: increasing, out of 2 x 25
    done = [e for e, _ in calls]
    assert done == sorted(done) and len(set(done)) == len(done) and {n for _, n in calls} == {50}
    g = m.grid_valid_loss_
    assert set(g) == {"2", "12x6"}
    assert "x".join(map(str, m.hidden_layer_sizes_)) == min(g, key=g.get)
    assert len(m.params_) == 2 * (len(m.hidden_layer_sizes_) + 1)
    assert m.best_valid_loss_ == min(g.values())


def test_internal_validation_split_and_progress(data):
    X, Y, _, _ = data
    calls = []
    m = MVNNetwork(hidden_layer_sizes=(4,), max_epochs=3, patience=None, validation_fraction=0.2,
                   input_scaling="minmax", output_init="zeros", random_state=2)
    m.fit(X, Y, progress=lambda e, n: calls.append((e, n)))
    assert calls == [(1, 3), (2, 3), (3, 3)] and m.n_epochs_ == 3
    assert m.x_loc_[0] == pytest.approx(X[:, 0][np.argsort(X[:, 0])][0], abs=0.1)


def test_save_load_bit_identical(fitted, data, tmp_path):
    X, Y, Xv, Yv = data
    p = tmp_path / "nn.nc"
    fitted.save(p)
    m2 = MVNNetwork.load(p)
    np.testing.assert_array_equal(m2.predict_params(Xv), fitted.predict_params(Xv))
    assert m2.get_params() == fitted.get_params()
    assert m2.best_epoch_ == fitted.best_epoch_ and m2.hidden_layer_sizes_ == fitted.hidden_layer_sizes_
    np.testing.assert_array_equal(m2.valid_loss_, fitted.valid_loss_)


def test_load_rejects_bad_files(fitted, tmp_path):
    import xarray as xr

    junk = tmp_path / "junk.nc"
    junk.write_bytes(b"not a netcdf file")
    with pytest.raises(DataError, match="Cannot read junk.nc"):
        MVNNetwork.load(junk)
    good = tmp_path / "good.nc"
    fitted.save(good)
    ds = xr.load_dataset(good)
    for name, edit in (("nan.nc", lambda d: d.assign(bias_0=d["bias_0"] * np.nan)),
                       ("shape.nc", lambda d: d.drop_vars("bias_1").assign(bias_1=("odd", np.zeros(3)))),
                       ("marker.nc", lambda d: d.assign_attrs(model_format="other")),
                       ("scale.nc", lambda d: d.assign(x_scale=d["x_scale"] * 0))):
        edit(ds.copy()).to_netcdf(tmp_path / name)
        with pytest.raises(DataError, match="not a valid distviz MVNNetwork file"):
            MVNNetwork.load(tmp_path / name)


def test_sklearn_api_and_errors(data):
    X, Y, Xv, Yv = data
    m = MVNNetwork(hidden_layer_sizes=(7, 3), learning_rate=0.05, random_state=4)
    c = clone(m)
    assert c.get_params() == m.get_params() and c.get_params()["hidden_layer_sizes"] == (7, 3)
    with pytest.raises(TypeError):
        MVNNetwork((100,))
    with pytest.raises(ConfigError, match="not fitted"):
        m.predict(Xv)
    with pytest.raises(ConfigError, match="hidden layer sizes"):
        MVNNetwork(hidden_layer_sizes=(0,)).fit(X, Y)
    with pytest.raises(ConfigError, match="learning_rate"):
        MVNNetwork(learning_rate=-1).fit(X, Y)
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(DataError, match="missing values"):
        MVNNetwork(max_epochs=1).fit(Xn, Y)
    with pytest.raises(DataError, match="columns"):
        MVNNetwork(max_epochs=1).fit(X, Y, eval_set=(Xv, Yv[:, :1]))


# ----------------------------------------------------------------------------------------------
# the NN rows of the studies


def test_mvn_sim_study_has_nn_rows_and_options():
    from distviz.data.mvn_sim import true_params
    from distviz.experiments.mvn_sim import mvn_sim

    res = mvn_sim(n=80, reps=2, methods="NN,NN-authors,NGB", n_estimators=5, n_val=30, n_test=20, nn_hidden="4",
                  scoring="all-trees", quiet=1)
    for m in ("NN", "NN-authors"):
        r = res[m]
        assert np.isfinite(r["kl_pred_true_mean"]) and r["kl_pred_true_se"] >= 0
        assert r["kl_pred_true_best_mean"] == r["kl_pred_true_all_mean"] and r["hidden_units_mean"] == 4
        assert 1 <= r["best_iteration_mean"] <= r["iterations_mean"] <= 5
    assert res["NGB"]["kl_pred_true_mean"] == res["NGB"]["kl_pred_true_all_mean"]
    best = mvn_sim(n=80, reps=1, methods="NGB", n_estimators=5, n_val=30, n_test=20, scoring="best-round",
                   variant="vanilla", quiet=1)
    assert best["NGB"]["kl_pred_true_mean"] == best["NGB"]["kl_pred_true_best_mean"]
    assert best["config"]["variant"] == "vanilla" and best["config"]["scoring"] == "best-round"
    multi = mvn_sim(n="40,50", reps=1, methods="NN", n_estimators=2, n_val=20, n_test=10, nn_hidden="3", quiet=1)
    assert set(multi["sizes"]) == {"40", "50"} and multi["sizes"]["50"]["config"]["n"] == 50
    # vanilla = eq. 5 without the x and -x^2 terms
    x = np.array([0.3, 2.0])
    m0, c0 = true_params(x)
    m1, c1 = true_params(x, vanilla=True)
    np.testing.assert_allclose(m0 - m1, np.column_stack([x, -x**2]))
    np.testing.assert_array_equal(c0, c1)
    with pytest.raises(ConfigError, match="scoring"):
        mvn_sim(n=50, reps=1, methods="NN", scoring="median")
    with pytest.raises(ConfigError, match="nn-hidden"):
        mvn_sim(n=50, reps=1, methods="NN", nn_hidden="big")


def test_drifters_study_has_an_nn_row():
    from distviz.data.drifters import load_drifters
    from distviz.experiments import drifters as st

    d = load_drifters("sample", bbox=(-82.0, -60.0, 30.0, 42.0))
    res = st.run_drifter_comparison(d, methods=("NN",), seed=0, max_train=400, mixture_samples=10,
                                    nn_options={"hidden_layer_sizes": (6,), "max_epochs": 4})
    t = res.table["NN"]
    assert all(np.isfinite(t[k]) for k in ("NLL", "RMSE", "PR90_cov", "PR90_area"))
    assert 1 <= t["rounds_used"] <= 4 and res.info["nn"]["hidden_layer_sizes_chosen"] == [6]
    assert "cov_NN" in res.predictions and "nll_NN" in res.binned
    text = st._format(st._plain(res.to_dict()))
    assert "paper Table 2" in text and "NN 7.81/16.63/0.89/3670" in text


def test_drifters_paper_protocol_reports_mean_se_and_paired_difference():
    from distviz.data.drifters import load_drifters
    from distviz.experiments import drifters as st

    d = load_drifters("sample", bbox=(-82.0, -60.0, 30.0, 42.0))
    res = st.run_paper_protocol(d, methods=("NGB", "IndepNGB"), reps=2, depths=(2,), min_leaves=(1, 40), rounds=15,
                                max_train=300)
    for name in ("paper", "defaults"):
        tab = res[name]
        for m in ("NGB", "IndepNGB"):
            assert all(np.isfinite(tab[m][k]) and tab[m][k + "_se"] >= 0 for k in st._PROTOCOL_METRICS)
        pd_ = tab["NGB_minus_IndepNGB"]
        per = res["per_replication"] if name == "paper" else None
        if per is not None:
            diffs = [a["NLL"] - b["NLL"] for a, b in zip(per["NGB"], per["IndepNGB"])]
            assert pd_["mean"] == pytest.approx(np.mean(diffs)) and pd_["wins"] == sum(x < 0 for x in diffs)
            assert pd_["se"] == pytest.approx(np.std(diffs, ddof=1) / np.sqrt(2))
            assert {r["min_leaf"] for r in per["NGB"]} <= {1, 40} and len(res["paper"]["NGB"]["chosen"]) == 2
        assert pd_["reps"] == 2
    assert res["info"]["learning_rate"] == 0.01 and res["info"]["patience"] == 50
    text = st._format(st._plain(res))
    assert "paired test NLL NGB - IndepNGB" in text and "study defaults on the same splits" in text
    with pytest.raises(ConfigError, match="protocol paper"):
        st.run_paper_protocol(d, methods=("MGD-MVN",), reps=1)
