"""The results tables of README.md and the docs are generated from results/*.json and agree with them.

Cheap: JSON reading and text generation only, no fitting."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from distviz.experiments import archive, result_tables
from distviz.experiments.mvn_sim import PAPER_TABLE1
from distviz.experiments.wgboost import TABLE1

ROOT = Path(__file__).resolve().parents[1]


def _module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def _uci_record(nll=0.5, splits=(0, 1, 2)):
    n = len(splits)
    return {"study": "wgboost-uci", "command": "python scripts/archive_study.py wgboost-uci --dataset energy",
            "date": "2026-11-28T04:00:00+00:00", "commit": "abc", "load": {"start": [1, 1, 1], "end": [1, 1, 1]},
            "config": {"dataset": "energy", "splits": list(splits), "max_rounds": 4000, "protocol": "partial"},
            "result": {"energy": {"nll": nll, "nll_sd": 0.05, "nll_se": 0.029, "rmse": 0.4, "rmse_sd": 0.04,
                                  "rmse_se": 0.023, "splits": n},
                       "per_split": {"rounds_nll": [4000, 3990, 3000][:n], "rounds_rmse": [3999, 3500, 2000][:n]}}}


def _mvn_record():
    row = {"kl_pred_true_mean": 0.6123, "kl_pred_true_se": 0.0211}
    return {"study": "mvn-sim", "command": "python scripts/archive_study.py mvn-sim --n 500 --reps 5",
            "date": "2026-11-28T04:00:00+00:00", "commit": "abc", "load": {"start": [1, 1, 1], "end": [1, 1, 1]},
            "config": {"n": 500, "reps": 5, "methods": ["NGB", "NN", "NN-paper"], "protocol": "partial"},
            "result": {"NGB": row, "NN": row, "NN-paper": row}}


def test_uci_table_sets_ours_beside_the_paper_with_rounds():
    header, [row] = result_tables.wgboost_uci_table([archive.check_record(_uci_record())])
    cells = dict(zip(header, row))
    assert cells["NLL"] == "0.500 \u00b1 0.029 (sd 0.05)"
    assert cells["NLL (paper)"] == f"{TABLE1['energy'][0][0]:.2f} (sd {TABLE1['energy'][0][1]:.2f})"
    assert cells["splits"] == "3 (partial)"
    assert cells["rounds (NLL)"] == "3990 (1 at 4000)"


def test_mvn_table_sets_nn_paper_beside_the_papers_nn_only():
    header, rows = result_tables.mvn_sim_table(_mvn_record())
    table = {r[0]: dict(zip(header, r)) for r in rows}
    assert table["NGB"]["N = 500"] == "0.612 \u00b1 0.021"
    assert table["NGB"]["N = 500 (paper)"].startswith(f"{PAPER_TABLE1[500]['NGB']:.3f} \u00b1")
    assert table["NN-paper"]["N = 500 (paper)"].startswith(f"{PAPER_TABLE1[500]['NN']:.3f}")
    assert table["NN"]["N = 500 (paper)"] == result_tables.DASH   # the tuned network has no published row


def test_mvn_summary_puts_every_size_in_one_table_with_the_latest_run_of_each():
    old, new, other = _mvn_record(), _mvn_record(), _mvn_record()
    new["date"] = "2026-11-28T05:00:00+00:00"
    new["result"] = {m: {"kl_pred_true_mean": 0.5, "kl_pred_true_se": 0.01} for m in new["result"]}
    other["config"] = {**other["config"], "n": 1000}
    cap, header, rows = result_tables.mvn_sim_summary_table([new, other, old])
    table = {r[0]: dict(zip(header, r)) for r in rows}
    assert header == ["method", "N = 500", "N = 1000"]
    assert table["NGB"]["N = 500"] == f"0.500 \u00b1 0.010 ({PAPER_TABLE1[500]['NGB']:.3f})"   # the later run of N = 500
    assert table["NGB"]["N = 1000"] == f"0.612 \u00b1 0.021 ({PAPER_TABLE1[1000]['NGB']:.3f})"
    assert table["NN-paper"]["N = 1000"].endswith(f"({PAPER_TABLE1[1000]['NN']:.3f})")
    assert table["NN"]["N = 1000"] == "0.612 \u00b1 0.021"   # the tuned network has no published row
    assert cap.startswith("mvn-sim, 5 replications per N")


def test_mvn_summary_takes_a_later_run_of_some_methods_for_those_cells_only():
    full, peer = _mvn_record(), _mvn_record()
    peer["date"] = "2026-11-28T06:00:00+00:00"
    peer["config"] = {**peer["config"], "methods": ["NGB", "ngboost"]}
    outlier = {"kl_pred_true_mean": 7.46, "kl_pred_true_se": 7.38, "kl_pred_true_median": 0.0504}
    peer["result"] = {"NGB": outlier, "ngboost": {**outlier, "kl_pred_true_mean": 7.34}}
    _, header, rows = result_tables.mvn_sim_summary_table([peer, full])
    table = {r[0]: dict(zip(header, r)) for r in rows}
    assert list(table) == ["NGB", "NN", "NN-paper", "ngboost"]
    # the later run replaces NGB's cell, with the median beside a mean more than twice it; NN keeps the full run's
    assert table["NGB"]["N = 500"] == f"7.460 \u00b1 7.380, median 0.050 ({PAPER_TABLE1[500]['NGB']:.3f})"
    assert table["ngboost"]["N = 500"] == "7.340 \u00b1 7.380, median 0.050"
    assert table["NN"]["N = 500"] == "0.612 \u00b1 0.021"


def test_mvn_cell_leaves_the_median_out_when_the_mean_is_not_carried_by_outliers():
    assert result_tables._kl_cell({"kl_pred_true_mean": 0.09, "kl_pred_true_se": 0.01,
                                   "kl_pred_true_median": 0.05}) == "0.090 \u00b1 0.010"


def test_mvn_summary_keeps_each_replication_and_the_median():
    from distviz.experiments.mvn_sim import _summary

    res = _summary([{"kl_pred_true": v, "fit_seconds": 1.0} for v in (0.05, 368.9, 0.04)])
    assert res["kl_pred_true_reps"] == [0.05, 368.9, 0.04]
    assert res["kl_pred_true_median"] == 0.05
    assert res["kl_pred_true_mean"] == pytest.approx((0.05 + 368.9 + 0.04) / 3)
    assert "fit_seconds_median" not in res


def test_mvn_peer_note_names_the_replication_that_carries_ngbs_mean():
    rec = _mvn_record()
    rec["config"] = {**rec["config"], "methods": ["NGB", "ngboost"]}
    reps, peer = [0.05, 368.9, 0.04, 0.06], [0.05, 367.3, 0.045, 0.06]
    row = {"kl_pred_true_mean": sum(reps) / 4, "kl_pred_true_median": 0.055, "kl_pred_true_reps": reps}
    rec["result"] = {"NGB": row, "ngboost": {**row, "kl_pred_true_reps": peer, "kl_pred_true_median": 0.055}}
    [note] = result_tables.mvn_sim_peer_notes([rec])
    assert note.startswith("At N = 500, NGB's mean rests on replication 2 of 4 (KL 368.9; the other 3 average 0.050")
    assert "367.3 for that replication, 0.052 for the others, median 0.055" in note
    rec["result"]["NGB"] = {**row, "kl_pred_true_mean": 0.06}   # a mean not carried by one replication: no note
    assert result_tables.mvn_sim_peer_notes([rec]) == []


def test_mvn_peer_note_sets_gb_beside_the_package_without_the_natural_gradient():
    rec = _mvn_record()
    rec["config"] = {**rec["config"], "methods": ["GB", "ngboost-GB"]}
    ours = {"kl_pred_true_mean": 112.5, "kl_pred_true_se": 1.25, "kl_pred_true_reps": [100.0, 125.0],
            "best_iteration_mean": 997.0, "iterations_mean": 1000.0}
    peer = {**ours, "kl_pred_true_mean": 113.0, "kl_pred_true_reps": [100.5, 140.0], "best_iteration_mean": 995.5}
    rec["result"] = {"GB": ours, "ngboost-GB": peer}
    [note] = result_tables.mvn_sim_peer_notes([rec])
    assert note.startswith("At N = 500, GB and the ngboost package without the natural gradient (ngboost-GB) on the "
                           "same draws: 112.500 \u00b1 1.250 and 113.000 \u00b1 1.250 (paper ")
    assert "; 1 of 2 replications agree within 1%; both stop at round 998.0 and 996.5 of 1000.0 on average." in note


def test_docs_pages_carry_every_archived_number(tmp_path):
    """Each record's numbers, formatted independently here, appear on its study's generated page."""
    ext = _module(ROOT / "docs" / "_ext" / "distviz_results.py", "distviz_results_for_tables")
    pytest.importorskip("matplotlib")
    rec = _uci_record()
    rec["result"]["per_split"]["nll"] = [0.4, 0.5, 0.6]
    recs = [(Path("a.json"), rec), (Path("b.json"), _mvn_record())]
    pages = ext.archived_pages(tmp_path, recs)
    assert "archived_wgboost-uci" in pages["archived"] and "archived_mvn-sim" in pages["archived"]
    assert (tmp_path / "archived_uci_nll.png").stat().st_size > 0 and "archived_uci_nll.png" in pages["archived"]
    assert "0.500 \u00b1 0.029" in pages["archived_wgboost-uci"] and "protocol: partial" in pages["archived_mvn-sim"]
    for _, rec in archive.load_records():
        page = ext.archived_pages(tmp_path, [(None, rec)])[f"archived_{rec['study']}"]
        assert rec["command"] in page and rec["commit"][:12] in page
        if rec["study"] == "wgboost-uci":
            row = rec["result"][rec["config"]["dataset"]]
            assert f"{row['nll']:.3f} \u00b1 {row['nll_se']:.3f}" in page
            assert f"{row['rmse']:.3f} \u00b1 {row['rmse_se']:.3f}" in page
        if rec["study"] == "mvn-sim":
            for m in rec["config"]["methods"]:
                for sub in result_tables._mvn_sizes({**rec["result"], "config": rec["config"]}).values():
                    assert f"{sub[m]['kl_pred_true_mean']:.3f}" in page


def test_readme_tables_match_the_archive():
    """README.md's generated block is what results/*.json give (scripts/results_tables.py --write rewrites it)."""
    script = _module(ROOT / "scripts" / "results_tables.py", "results_tables_script")
    _, block, _ = script.readme_parts((ROOT / "README.md").read_text())
    assert block == result_tables.readme_block(archive.load_records()), \
        "README.md's results tables are stale: run scripts/results_tables.py --write"


def test_archived_records_are_small_and_labelled():
    for path, rec in archive.load_records():
        assert path.stat().st_size < 1024**2
        assert rec["config"]["protocol"] in ("paper", "partial", "custom")
        if rec["config"]["protocol"] == "paper":
            assert archive.protocol_of(rec["study"], rec["config"]) in ("paper", "custom")
        json.dumps(rec)


@pytest.mark.parametrize("text", ["no markers", result_tables.README_END + result_tables.README_BEGIN])
def test_readme_parts_needs_both_markers(text):
    script = _module(ROOT / "scripts" / "results_tables.py", "results_tables_script")
    with pytest.raises(ValueError):
        script.readme_parts(text)


def test_generic_and_drifter_tables_pair_each_mean_with_its_standard_error():
    header, rows = result_tables.generic_table(
        {"ELBO": {"test_log_loss": 3.1234, "test_log_loss_se": 0.0123, "beta": None, "seconds": 9.0},
         "beta-ELBO": {"test_log_loss": 3.0, "beta": 0.5}, "info": {"n_train": 400}})
    assert header == ["method", "test_log_loss", "beta"]
    assert rows == [["ELBO", "3.1234 \u00b1 0.0123", result_tables.DASH], ["beta-ELBO", "3.0000", "0.5000"]]
    rec = {"config": {"protocol": "partial", "reps": 10},
           "result": {"paper": {"NGB": {"NLL": 7.5, "NLL_se": 0.1},
                                "NGB_minus_IndepNGB": {"mean": -0.02, "se": 0.01, "wins": 7, "reps": 10}},
                      "defaults": {"NGB": {"NLL": 7.6, "NLL_se": 0.1}}}}
    tables = result_tables.tables_for("drifters", [rec])
    assert len(tables) == 2 and "protocol: partial; 10 replications" in tables[0][0]
    assert ["NGB_minus_IndepNGB", result_tables.DASH, "-0.0200 \u00b1 0.0100", "7", "10"] in tables[0][2]


def test_drifter_guide_states_the_shipped_comparison():
    """docs/user_guide/drifters.rst quotes the precomputed comparison's test NLLs and row count: they must be the
    shipped file's."""
    from distviz.experiments.drifters import load_precomputed

    table = load_precomputed().table
    text = " ".join((ROOT / "docs" / "user_guide" / "drifters.rst").read_text().split())
    assert f"{table['NGB']['n']:,} test rows" in text
    assert (f"NGB a test NLL of {table['NGB']['NLL']:.3f} against IndepNGB's {table['IndepNGB']['NLL']:.3f}, "
            f"where the true law scores {table['Oracle']['NLL']:.3f}") in text


def _dlm_paper_record():
    def row(ll, se, err=0.02, beta=0.5):
        return {"test_log_loss": ll, "test_log_loss_se": se, "test_sq_error": 0.01, "test_sq_error_se": 0.001,
                "test_error": err, "test_error_se": 0.002, "beta": beta, "n_iter": 800.0, "converged": 5, "runs": 5,
                "grid_converged": 90, "grid_fits": 95, "seconds": 1.0}
    elbo = {k: v for k, v in row(0.30, 0.01, beta=1.0).items() if not k.startswith("grid_")}   # one fit, no grid
    sizes = {"500": {"ELBO": {**elbo, "converged": 3}, "beta-ELBO": row(0.25, 0.01),
                     "DLM-log (joint)": row(0.20, 0.01), "DLM-log (fixed)": row(0.24, 0.02),
                     "n_val": 740, "n_test": 1000},
             "250": {"ELBO": row(0.30, 0.01, beta=1.0), "beta-ELBO": row(0.31, 0.02),
                     "DLM-log (joint)": row(0.33, 0.01), "DLM-log (fixed)": row(0.45, 0.02),
                     "n_val": 740, "n_test": 1000}}
    return {"study": "dlm-vs-elbo", "command": "python scripts/archive_study.py dlm-vs-elbo --protocol paper",
            "date": "2026-11-28T04:00:00+00:00", "commit": "abc", "load": {"start": [1, 1, 1], "end": [1, 1, 1]},
            "config": {"data": "ringnorm", "likelihood": "logistic", "task": "binary", "splits": [0, 1, 2, 3, 4],
                       "sizes": [500, 250], "learning_rate": 0.1, "tol": 1e-4, "window": 20, "max_iter": 3000,
                       "n_inducing": 74, "mean_function": "constant", "protocol": "partial"},
            "result": {"sizes": sizes, "info": {}}}


def test_dlm_paper_tables_and_the_papers_statement():
    rec = archive.check_record(_dlm_paper_record())
    tables = result_tables.tables_for("dlm-vs-elbo", [rec])
    assert len(tables) == 4
    (cap, header, rows), (_, _, err), (_, _, steps), (ccap, cheader, claim) = tables
    assert header == ["method", "n = 500", "n = 250"] and "protocol: partial; splits 0..4 (5)" in cap
    assert rows[2] == ["DLM-log (joint)", "0.2000 \u00b1 0.0100", "0.3300 \u00b1 0.0100"]
    assert err[0][1] == "0.0200 \u00b1 0.0020" and steps[0][1] == "1; 800; 3/5" and steps[1][1] == "0.5; 800; 90/95"
    assert result_tables.DLM_PAPER_CLAIM in ccap
    # n = 500: joint DLM 0.20 against 0.30 and 0.25 (s.e. of the difference 0.014): lower than both
    assert claim[0] == ["500", "DLM-log (joint)", "-0.1000 \u00b1 0.0141 (lower)", "-0.0500 \u00b1 0.0141 (lower)"]
    # n = 250: joint DLM 0.33 against 0.30 (higher by 0.03 > 2 x 0.014) and 0.31 (within 2 s.e. of 0.022)
    assert claim[1] == ["250", "DLM-log (joint)", "0.0300 \u00b1 0.0141 (higher)",
                        "0.0200 \u00b1 0.0224 (within 2 s.e.)"]
    block = result_tables.readme_block([(None, rec)])
    assert "| method | ringnorm, n = 250 | ringnorm, n = 500 |" in block
    assert "| DLM-log (joint) | 0.3300 \u00b1 0.0100 | 0.2000 \u00b1 0.0100 |" in block


def test_readme_sets_every_dlm_paper_run_in_one_table_with_the_latest_per_data_set_and_size():
    old, new, other = _dlm_paper_record(), _dlm_paper_record(), _dlm_paper_record()
    new["date"] = "2026-11-28T05:00:00+00:00"
    new["config"] = {**new["config"], "sizes": [500]}
    new["result"] = {"sizes": {"500": {**old["result"]["sizes"]["500"],
                                       "ELBO": {"test_log_loss": 0.11, "test_log_loss_se": 0.01}}}, "info": {}}
    other["config"] = {**other["config"], "data": "twonorm"}
    cap, header, rows = result_tables.dlm_paper_summary_table([new, other, old])
    assert header == ["method", "ringnorm, n = 250", "ringnorm, n = 500", "twonorm, n = 250", "twonorm, n = 500"]
    table = {r[0]: r[1:] for r in rows}
    assert table["ELBO"] == ["0.3000 \u00b1 0.0100", "0.1100 \u00b1 0.0100", "0.3000 \u00b1 0.0100",
                             "0.3000 \u00b1 0.0100"]   # the later ringnorm run replaces its n = 500 column only
    assert "logistic likelihood" in cap and "protocol: partial" in cap


def test_readme_leaves_regression_paper_runs_to_the_docs_page():
    """A regression run's DLM-square rows are judged by squared error, not by the README's log-loss table."""
    binary, reg = _dlm_paper_record(), _dlm_paper_record()
    reg["config"] = {**reg["config"], "data": "concrete", "task": "regression", "likelihood": "gaussian"}
    block = result_tables.readme_block([(None, binary), (None, reg)])
    assert "ringnorm, n = 500" in block and "concrete" not in block
    assert "more tables, and the regression runs, on the docs' results page" in block
    assert "regression runs" not in result_tables.readme_block([(None, binary)])
    assert any("concrete" in cap for cap, _, _ in result_tables.tables_for("dlm-vs-elbo", [reg]))


def test_archived_dlm_paper_runs_are_on_their_page(tmp_path):
    ext = _module(ROOT / "docs" / "_ext" / "distviz_results.py", "distviz_results_for_dlm")
    for _, rec in archive.load_records(study="dlm-vs-elbo"):
        if "sizes" not in rec["result"]:
            continue
        page = ext.archived_pages(tmp_path, [(None, rec)])["archived_dlm-vs-elbo"]
        for rows in rec["result"]["sizes"].values():
            for r in rows.values():
                if isinstance(r, dict):
                    assert f"{r['test_log_loss']:.4f} \u00b1 {r['test_log_loss_se']:.4f}" in page
                    assert f"{r['test_error']:.4f}" in page
