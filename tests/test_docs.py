"""The documentation's executable parts, without building the site (``make docs`` builds it): the getting-started
page's ten-line example runs as printed, the results pages carry the shipped study output's numbers, and
scripts/check_docs.py reads the root toctree as Sphinx does."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import re
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def code_blocks(rst: Path, language: str = "python") -> list[str]:
    """The bodies of the ``.. code-block:: <language>`` directives of an rst file, dedented."""
    lines = rst.read_text().splitlines()
    blocks = []
    for i, line in enumerate(lines):
        if line.strip() == f".. code-block:: {language}":
            body = []
            for nxt in lines[i + 1:]:
                if nxt.strip() and not nxt.startswith("   "):
                    break
                body.append(nxt[3:])
            blocks.append("\n".join(body).strip("\n"))
    return blocks


def test_getting_started_example_runs_as_printed():
    (block,) = code_blocks(DOCS / "getting_started.rst")
    n_lines = len([ln for ln in block.splitlines() if ln.strip()])
    assert n_lines <= 10, f"the 'ten-line' example has {n_lines} lines"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, "getting_started.rst", "exec"), {"__name__": "getting_started"})
    numbers = [float(x) for x in re.findall(r"[-+]?\d*\.\d+(?:e[-+]?\d+)?", out.getvalue())]
    # three predicted means, the 90 % coverage, the mean CRPS
    assert len(numbers) == 5, out.getvalue()
    assert all(np.isfinite(numbers)) and min(numbers[:3]) > 0
    assert 0.85 <= numbers[3] <= 1.0       # the page says a discrete law's 90 % interval holds at least 90 %
    assert numbers[4] > 0


def test_results_pages_carry_the_shipped_numbers(tmp_path):
    pytest.importorskip("matplotlib")
    ext = _load("distviz_results", DOCS / "_ext" / "distviz_results.py")
    from distviz.data.paths import sample_file
    from distviz.experiments.drifters import load_precomputed

    ext.ood_page(tmp_path / "ood.rst")
    shipped = json.loads(sample_file("posterior_ood_default.json").read_text())
    text = (tmp_path / "ood.rst").read_text()
    assert ext._fmt(shipped["accuracy"]) in text and ext._fmt(shipped["pr_auc"]) in text
    assert (tmp_path / "posterior_ood_scores.png").stat().st_size > 0
    assert "seconds" not in text     # run times stay in the benchmarks' output

    ext.drifters_page(tmp_path / "drifters.rst")
    text = (tmp_path / "drifters.rst").read_text()
    table = load_precomputed().table
    for method, row in table.items():
        assert f"   * - {method}\n     - {ext._fmt(row['NLL'])}\n" in text
    assert "fit_s" not in text and (tmp_path / "drifters_nll_gap.png").stat().st_size > 0


def test_fmt_and_tables():
    ext = _load("distviz_results", DOCS / "_ext" / "distviz_results.py")
    assert ext._fmt(7.534483538361622) == "7.534"
    assert ext._fmt(1806.9558690026295) == "1807"
    assert ext._fmt(36686) == "36,686" and ext._fmt(None) == "\u2013" and ext._fmt(float("nan")) == "\u2013"
    assert ext._fmt(True) == "yes"
    t = ext.list_table(["a", "b"], [["x", "1"]])
    assert t.splitlines()[4:] == ["   * - a", "     - b", "   * - x", "     - 1"]


def test_check_docs_reads_the_root_toctree():
    check = _load("check_docs", ROOT / "scripts" / "check_docs.py")
    assert check.toctree_entries(DOCS / "index.rst") == ["getting_started", "user_guide/index", "auto_examples/index",
                                                        "api/index", "results/index"]
    assert check.toctree_entries(DOCS / "results" / "index.rst") == ["results/generated/drifters",
                                                                     "results/generated/posterior_ood",
                                                                     "results/generated/archived"]


def test_docstring_examples_run():
    """Every ``Examples`` section of the API reference's objects runs and prints what it shows (doctest)."""
    import doctest
    import importlib

    check = _load("check_docs", ROOT / "scripts" / "check_docs.py")
    finder, runner = doctest.DocTestFinder(recurse=True), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    seen, n = set(), 0
    for name in check.public_names():
        mod, _, attr = name.rpartition(".")
        for t in finder.find(getattr(importlib.import_module(mod), attr), name):
            if t.examples and t.name not in seen and id(t.docstring) not in seen:
                seen.update((t.name, id(t.docstring)))
                n += 1
                runner.run(t)
    assert n >= 3
    assert runner.failures == 0, f"{runner.failures} docstring examples failed (see the output above)"


def test_api_methods_have_numpydoc_sections():
    """Every public method of the API reference's classes has Parameters (when it takes any) and Returns / Yields
    (fit* excepted) in its docstring (scripts/check_docs.py, ``check_method_docs``)."""
    check = _load("check_docs", ROOT / "scripts" / "check_docs.py")
    assert len(check.api_entries()) >= 90
    problems = check.check_method_docs()
    assert not problems, "\n".join(problems)
