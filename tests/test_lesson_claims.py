"""Lesson claims (issue 29, item 1): every shipped step states what its view shows as data, `distviz lessons check`
fits each step's state through the pages' own fit functions and every claim holds; a malformed claim is refused
in one sentence naming the file, and a failing claim is printed on one line with the check's exit status 1."""

from __future__ import annotations

import pytest

from distviz import cli
from distviz.ui import claims as C
from distviz.ui import lesson_check as LC
from distviz.ui import lessons as L

HEAD = 'title = "t"\n[[step]]\ntitle = "s"\ntext = "a."\nquestion = "q?"\npage = "explorer"\n' \
       '[step.params]\nfamily = "poisson"\n"poisson.rate" = 4.0\n'


def test_every_shipped_step_states_a_claim_and_every_claim_holds():
    """The check of the shipped lessons (the same function `distviz lessons check` runs) passes."""
    lessons, problems = L.load_lessons(sorted(L.LESSON_DIR.glob("*.toml")))
    assert not problems, problems
    assert all(step.claims for ls in lessons for step in ls.steps)
    report = LC.check_lessons(lessons)
    assert report.ok, "\n".join(report.failures)
    assert report.steps == sum(len(ls.steps) for ls in lessons) and report.holding == report.claims >= report.steps


def test_every_quantity_of_the_vocabulary_is_used_by_a_shipped_claim():
    """So the check of the shipped lessons evaluates every reader of distviz.ui.lesson_check at least once."""
    lessons, _ = L.load_lessons(sorted(L.LESSON_DIR.glob("*.toml")))
    used = {q.name for ls in lessons for st in ls.steps for c in st.claims for q in (c.a, c.b)
            if isinstance(q, C.Quantity)}
    assert used == set(C.QUANTITIES), set(C.QUANTITIES) - used


BAD = {
    "kind": ('kind = "bigger"\na = "eta[1]"\nb = 1\n', "kind"),
    "name": ('kind = "less"\na = "valid_nll@5"\nb = 1\n', "does not show"),
    "arg": ('kind = "less"\na = "eta[one]"\nb = 1\n', "eta[ARG]"),
    "round": ('kind = "less"\na = "eta[1]@5"\nb = 1\n', "takes no round"),
    "missing": ('kind = "near"\na = "eta[1]"\nb = 1\n', "'tol'"),
    "extra": ('kind = "less"\na = "eta[1]"\nb = 1\nwhy = "x"\n', "'why'"),
    "number": ('kind = "between"\na = "eta[1]"\nlo = "low"\nhi = 2\n', "'lo'"),
    "order": ('kind = "between"\na = "eta[1]"\nlo = 3\nhi = 2\n', "lo > hi"),
    "fit": ('kind = "less"\na = "ngd:eta[1]"\nb = 1\n', "ngd:"),
    "syntax": ('kind = "less"\na = "__import__(\'os\')"\nb = 1\n', "not written"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_malformed_claims_give_one_sentence_naming_the_file_and_step(tmp_path, case):
    text, word = BAD[case]
    (tmp_path / "bad.toml").write_text(HEAD + "[[step.claim]]\n" + text, encoding="utf-8")
    lessons, problems = L.load_lessons([tmp_path / "bad.toml"])
    assert not lessons and len(problems) == 1, (lessons, problems)
    msg = problems[0]
    assert "bad.toml" in msg and "Step 1" in msg and word in msg, msg
    assert "\n" not in msg and msg.endswith(".") and "Error" not in msg, msg


def test_cli_prints_one_line_per_failing_claim_and_the_counts(tmp_path, monkeypatch, capsys):
    """A teacher's lesson folder: one claim holds, one fails, a step states none; the shipped lessons are set
    aside (an empty folder) to keep the test short."""
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    own = tmp_path / "own"
    own.mkdir()
    (own / "01_rate.toml").write_text(
        HEAD + '[[step.claim]]\nkind = "near"\na = "eta_star[1]"\nb = 4\ntol = 1e-9\n'
        '[[step.claim]]\nkind = "greater"\na = "eta[1]"\nb = 2\n'
        '[[step]]\ntitle = "no claim"\ntext = "b."\nquestion = "c?"\npage = "explorer"\n'
        '[step.params]\nfamily = "normal"\n', encoding="utf-8")
    monkeypatch.setattr(L, "LESSON_DIR", shipped)
    monkeypatch.setenv(L.ENV_DIR, str(own))
    assert cli.main(["lessons", "check"]) == 1
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[-1] == "2 steps, 2 claims, 1 hold", lines
    assert len(lines) == 3, lines
    assert lines[0].startswith("Lesson 1 step 1 (s): eta[1] > 2 does not hold (eta[1] = 1.386")
    assert "Lesson 1 step 2 (no claim) states no claim" in lines[1]
    (own / "01_rate.toml").write_text(HEAD + '[[step.claim]]\nkind = "between"\na = "eta[1]"\nlo = 1.38\nhi = 1.39\n',
                                      encoding="utf-8")
    assert cli.main(["lessons", "check"]) == 0
    assert capsys.readouterr().out.strip().splitlines() == ["1 steps, 1 claims, 1 hold"]
    assert cli.main(["lessons", "check", "--fast"]) == 2
    assert "error: Unknown option(s) --fast for 'distviz lessons check'" in capsys.readouterr().err


def test_claims_are_data_never_code():
    """A quantity is matched against the vocabulary, never evaluated: Python in a claim is refused unread."""
    with pytest.raises(L.ConfigError, match="not written"):
        C.parse_quantity("eta[1] + __import__('os').system('true')", "explorer", "Step 1")
    assert C.parse_quantity("ngd:path_eta[2]@best", "evolution", "Step 1") == C.Quantity("path_eta", "2", "best", "ngd")
    c = C.parse_claim({"kind": "less", "a": "train_nll@5", "b": "valid_nll@5", "times": 0.5}, "lab", "Step 1")
    assert str(c) == "train_nll@5 < 0.5 × valid_nll@5" and c.holds(1.0, 2.5) and not c.holds(1.0, 2.0)
    assert not C.Claim("between", C.Quantity("eta", "1"), lo=0.0, hi=1.0).holds(float("nan"), None)
