"""Posterior page (#17 item 10): the OOD demo opens on a shipped, convincing result (4000 rounds, read as JSON),
refits on demand within the budget, and the App. E table has headings for people."""

from __future__ import annotations

import json

import numpy as np
import pytest
from apptest_pages import open_page


def test_shipped_ood_default_separates_the_groups():
    from distviz.ui import posterior as up

    res = up.load_ood_result(up.OOD_DEFAULT_ROUNDS, up.OOD_FIT["seed"])
    assert res is not None and res["precomputed"], "rerun scripts/make_posterior_ood_default.py"
    assert up.OOD_DEFAULT_ROUNDS == 4000 and up.OOD_DEFAULT_ROUNDS in up.OOD_ROUNDS
    assert res["pr_auc"] >= 0.98 and res["accuracy"] >= 0.93
    s_in, s_out = np.log10(res["score_in"]), np.log10(res["score_out"])
    assert len(s_in) == res["n_test"] and len(s_out) == res["n_ood"]
    assert np.median(s_in) > np.percentile(s_out, 95), "the histograms barely overlap"
    from distviz.metrics import pr_auc

    lab = np.r_[np.ones(len(s_in), int), np.zeros(len(s_out), int)]
    assert pr_auc(lab, np.r_[res["score_in"], res["score_out"]]) == pytest.approx(res["pr_auc"])
    assert up.ood_demo_seconds(up.OOD_DEFAULT_ROUNDS) < 120, "a refit fits in the default budget"


def test_ood_result_file_is_json_and_checked(tmp_path):
    from distviz.ui import posterior as up

    res = {"accuracy": 0.9, "pr_auc": 0.95, "score_in": np.array([3.0, 4.0]), "score_out": np.array([1.0]),
           "seconds": 1.0, "classes": ["a", "b"], "n_train": 8, "n_test": 2, "n_ood": 1, "rounds": 100, "seed": 7}
    p = tmp_path / "ood.json"
    up.save_ood_result(res, p)
    assert json.loads(p.read_text())["settings"]["rounds"] == 100
    back = up.load_ood_result(100, 7, p)
    np.testing.assert_array_equal(back["score_in"], [3.0, 4.0])
    assert up.load_ood_result(200, 7, p) is None, "other settings: not used"
    p.write_bytes(b"\x80\x04K\x01.")   # a pickle is not read
    assert up.load_ood_result(100, 7, p) is None


def test_page_opens_on_the_precomputed_default_without_fitting(monkeypatch):
    import distviz.ui.posterior as up

    def no_fit(*a, **k):
        raise AssertionError("the first view must not fit")

    monkeypatch.setattr(up, "run_fit", no_fit)
    at = open_page("app_pages/posterior.py", {"section": "OOD demo"})
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.sidebar.select_slider(key="ood_rounds").value == 4000
    auc = next(m for m in at.metric if m.label == "OOD PR-AUC").value
    assert float(auc.rstrip(" %")) >= 98.0
    assert any("Precomputed" in c.value for c in at.caption)
    assert any(b.label == "Refit now" for b in at.sidebar.button)


def test_method_comparison_headings_are_words():
    from distviz.viz.posterior import column_label, comparison_table

    assert column_label("mmd2@10") == "MMD² at 10 trees"
    assert column_label("ms_per_round") == "ms per round"
    assert column_label("rel_diff@100").startswith("relative difference") and column_label("rounds_used") == "rounds used"
    out = {"ska": {"mmd2@100": 0.01, "mmd2@10": 0.2, "ms_per_round": 0.3, "authors@10": 0.18, "rel_diff@10": 0.1}}
    df = comparison_table(out)
    assert list(df.columns)[:3] == ["method", "MMD² at 10 trees", "MMD² at 100 trees"]
    assert not [c for c in df.columns if "@" in c or "_" in c]
    from distviz.viz.palette import algo_label

    assert df["method"].tolist() == [algo_label("ska")]
