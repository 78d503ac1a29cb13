"""The shipped precomputed drifter comparison (the Drifters page's first paint) is current and consistent."""

from __future__ import annotations

import numpy as np
import pytest

from distviz.data.drifters import load_sample, sample_path, split_by_id
from distviz.experiments import drifters as ex


@pytest.fixture(scope="module")
def shipped():
    """The shipped result, loaded only when it was made from the current sample with APP_DEFAULTS."""
    assert ex.precomputed_path().exists(), "run scripts/make_drifter_sample.py to write the precomputed comparison"
    res = ex.load_precomputed()
    assert res is not None, ("distviz/data/sample/drifters_comparison_default.nc is stale (sample or APP_DEFAULTS changed); "
                             "rerun scripts/make_drifter_sample.py")
    return res


@pytest.fixture(scope="module")
def cheap(tmp_path_factory):
    """The script's code path (precompute_comparison) with a cheap setting, written and read back."""
    out = tmp_path_factory.mktemp("pre") / "cmp.nc"
    ex.precompute_comparison(out, rounds=2)
    return out


def test_shipped_matches_sample_split(shipped):
    d = load_sample()
    tr, va, te = split_by_id(d.id, random_state=ex.APP_DEFAULTS["seed"])
    info = shipped.info
    assert info["synthetic"] and info["precomputed"]
    assert info["n_test"] == int(te.sum()) and info["n_val"] == int(va.sum())
    assert info["n_train"] == min(int(tr.sum()), ex.APP_DEFAULTS["max_train"])
    p = shipped.predictions
    np.testing.assert_array_equal(p["id"].values, d.id[te])
    np.testing.assert_allclose(p["lon"].values, d.lon[te])
    np.testing.assert_allclose(p["u"].values, d.Y[te, 0] * ex.CM, rtol=1e-6)
    assert int(shipped.binned["n_test"].sum()) == info["n_test"]
    assert int(shipped.zoom["n_test"].sum()) == shipped.subsets["gulf_stream_box"]["n"]


def test_shipped_variables_and_table_are_consistent(shipped):
    for v in ("n_test", "nll_diff", "rho", "speed", "u_mean", "v_mean"):
        assert v in shipped.binned and v in shipped.zoom
    p = shipped.predictions
    y = np.column_stack([p["u"].values, p["v"].values])
    for m in ("NGB", "IndepNGB", "Oracle"):
        nll = ex.gauss_nll(y, p[f"mean_{m}"].values, p[f"cov_{m}"].values)
        np.testing.assert_allclose(nll, p[f"nll_{m}"].values, rtol=1e-6)
        assert shipped.table[m]["NLL"] == pytest.approx(float(np.mean(nll)), rel=1e-6)
    assert set(ex.APP_DEFAULTS["methods"]) <= set(shipped.table)


def test_script_code_path_round_trips_and_detects_stale(shipped, cheap):
    res = ex.load_precomputed(cheap, rounds=2)
    assert res is not None
    assert set(res.predictions.data_vars) == set(shipped.predictions.data_vars)
    assert set(res.binned.data_vars) == set(shipped.binned.data_vars)
    np.testing.assert_array_equal(res.predictions["id"].values, shipped.predictions["id"].values)
    assert res.info["settings"]["rounds"] == 2 and res.info["sample_sha1"] == ex.file_sha1(sample_path())
    assert ex.load_precomputed(cheap) is None  # made with other settings than the defaults: not used
    assert ex.load_precomputed(cheap.with_name("missing.nc")) is None
