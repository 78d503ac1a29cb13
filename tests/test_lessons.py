"""Lessons (issue 17, item 12): TOML lesson files, their validation, the Lessons page, and "show me" links that
put every page into the exact state of a step, also over a session that already had other values."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import parse_qsl

import pytest

st_testing = pytest.importorskip("streamlit.testing.v1")
AppTest = st_testing.AppTest

from distviz.ui import lessons as L  # noqa: E402
from distviz.ui.params import url_text  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PAGES = "distviz/ui/app/app_pages"   # the page scripts, relative to ROOT
from apptest_pages import address, open_page, plain_links  # noqa: E402  (tests/ is on sys.path)

SCRIPT = {"lab": None, **{p: f"app_pages/{p}.py" for p in L.PAGES if p != "lab"}}
LESSONS, PROBLEMS = L.load_lessons()
STEPS = [(ls.number, i, s) for ls in LESSONS for i, s in enumerate(ls.steps, start=1)]


def sentences(text: str) -> int:
    """Number of sentences of a Markdown text (full stops, question and exclamation marks at a word's end)."""
    return len(re.findall(r"[.?!](?=\s|$)", re.sub(r"\b(e\.g|i\.e|etc|vs)\.", "x", text.strip())))


def test_shipped_lessons_load_with_the_required_shape():
    assert not PROBLEMS, PROBLEMS
    assert len(LESSONS) >= 5
    for ls in LESSONS:
        assert 4 <= len(ls.steps) <= 8, (ls.file, len(ls.steps))
        for s in ls.steps:
            assert 2 <= sentences(s.text) <= 3, (ls.file, s.title, sentences(s.text))
            assert s.question.endswith("?"), (ls.file, s.title)
            assert s.params, (ls.file, s.title)   # "show me" sets a state, not just a page
    pages = {s.page for ls in LESSONS for s in ls.steps}
    assert {"explorer", "evolution", "split_gains", "lab", "posterior", "drifters"} <= pages


BAD = {
    "bad_toml.toml": ('title = "x"\n[[step]\n', "not valid TOML"),
    "bad_page.toml": ('title = "x"\n[[step]]\ntitle = "a"\ntext = "b."\nquestion = "c?"\npage = "nowhere"\n', "page"),
    "bad_param.toml": ('title = "x"\n[[step]]\ntitle = "a"\ntext = "b."\nquestion = "c?"\npage = "evolution"\n'
                       '[step.params]\nzz_unknown = 1\n', "zz_unknown"),
    "no_question.toml": ('title = "x"\n[[step]]\ntitle = "a"\ntext = "b."\npage = "lab"\n', "question"),
    "no_steps.toml": ('title = "x"\n', "[[step]]"),
    "bad_chart.toml": ('title = "x"\n[[step]]\ntitle = "a"\ntext = "b."\nquestion = "c?"\npage = "lab"\n'
                       'chart = "</script><script>alert(1)"\n', "chart"),
    "bad_value.toml": ('title = "x"\n[[step]]\ntitle = "a"\ntext = "b."\nquestion = "c?"\npage = "lab"\n'
                       '[step.params]\nfamily = ["normal"]\n', "family"),
}


def test_malformed_lesson_files_give_one_sentence_naming_the_file_and_the_rest_still_load(tmp_path):
    good = tmp_path / "00_good.toml"
    good.write_text('title = "Good"\n[[step]]\ntitle = "a"\ntext = "b."\nquestion = "c?"\npage = "explorer"\n'
                    '[step.params]\nfamily = "poisson"\n"poisson.rate" = 2.0\n', encoding="utf-8")
    for name, (text, _) in BAD.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    lessons, problems = L.load_lessons(sorted(tmp_path.glob("*.toml")))
    assert [ls.title for ls in lessons] == ["Good"] and lessons[0].number == 1
    assert len(problems) == len(BAD)
    for name, (_, word) in BAD.items():
        msg = next(p for p in problems if name in p)
        assert word in msg, msg
        assert "\n" not in msg and msg.endswith(".") and str(tmp_path) not in msg and "Error" not in msg, msg


def test_page_parameter_table_matches_the_pages_sources():
    """Every name a page registers literally in its source is in distviz.ui.lessons.PAGES, and nothing else is
    (so a lesson can be checked before it is opened, and a renamed parameter is noticed here)."""
    literal = re.compile(r'(?:_par\(\s*|lazy_tabs\(\s*|bound\(\s*)"([^"]+)"')

    def names(*files):
        return {m for f in files for m in literal.findall((ROOT / f).read_text(encoding="utf-8"))}

    lab = names("distviz/ui/lab.py")
    own = {"p", "algo", "rounds"}   # the Split gains page keeps these as sp / salgo / srounds
    want = {
        "lab": lab,
        "evolution": lab | names(f"{PAGES}/evolution.py", "distviz/ui/playback.py"),
        "split_gains": (lab - own) | {"s" + k for k in own} | names(f"{PAGES}/split_gains.py", "distviz/ui/playback.py"),
        "drifters": names(f"{PAGES}/drifters.py"),
        "posterior": names(f"{PAGES}/posterior.py"),
    }
    for page, expected in want.items():
        assert set(L.page_params(page)) == expected, (page, set(L.page_params(page)) ^ expected)
    assert {"family", "normal.mu", "mvn.rho", "categorical.w2"} <= set(L.page_params("explorer"))


@pytest.mark.parametrize("lesson,step_no,step", STEPS, ids=[f"lesson{n}-step{i}" for n, i, _ in STEPS])
def test_every_show_me_link_is_accepted_by_its_page(lesson, step_no, step):
    """Opening a step's "show me" address gives no exception and no error, and the page keeps every parameter
    of the step in its address after the run (a refused value would have been reset to the default)."""
    at = open_page(SCRIPT[step.page], step.query())
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert at.get("plotly_chart"), "the step's view draws no chart"
    if step.chart:   # the chart the step is about is one the page draws in presenter mode (which scrolls to it)
        shown = open_page(SCRIPT[step.page], {**step.query(), "present": "true"})
        assert any(el.proto.id.endswith(f"-{step.chart}") for el in shown.get("plotly_chart")), step.chart
    url = address(at)   # with the bound widgets' values, which a browser writes itself
    for k, v in step.query().items():
        assert url.get(k) == v, (k, v, url.get(k))
    fitted = _check_view_fit(step)
    if fitted is not None:   # the lesson check fits the very settings the page fitted (distviz.ui.lesson_check)
        from distviz.ui.jobs import result_store

        assert result_store().get(("lab", fitted.key())) is not None, (step.title, fitted)


def _check_view_fit(step):
    """The FitConfig that `distviz lessons check` fits for a step of a fitting page (None for the other pages)."""
    from distviz.ui import lesson_check

    if step.page in ("lab", "evolution", "split_gains") or (
            step.page == "posterior" and step.params.get("section", "conditional density") == "conditional density"):
        return lesson_check._FitView(step.page, step.params).cfg
    return None


def test_show_me_is_a_plain_link_whose_address_sets_every_setting():
    """The "show me" link is a plain link (a new session in the same tab), so the view is the step's whatever the
    session showed: its address names the step's settings as the widgets write them (a select's shown text) and
    the settings it leaves out take their defaults in the new session."""
    at = open_page("app_pages/lessons.py", {"lesson": "2", "step": "3"})
    step = LESSONS[1].steps[2]
    href = plain_links(at)[f"Show me: {L.PAGES[step.page][0]} →"]
    path, _, query = href.partition("?")
    assert path == step.page and "apply" not in query
    params = dict(parse_qsl(query))
    assert params == step.query() and params["algo"] == url_text("algo", step.params["algo"]) != step.params["algo"]
    fresh = open_page(SCRIPT[step.page], params)   # what the browser opens: a new session with that address
    url = address(fresh)
    assert url["algo"] == params["algo"] and url["round"] == str(step.params["round"]) and url["depth"] == "3", url
    assert not fresh.exception and not fresh.error


def test_a_plain_address_sets_the_bound_settings_and_the_session_keeps_its_changes():
    """A new session reads every bound widget from its address (the others take their defaults); the session's
    own changes then stick, on its page and on the pages that share the Lab's settings."""
    at = open_page("app_pages/evolution.py", {"depth": "2", "round": "7", "algo": "NGD (natural, in η)"})
    assert address(at)["depth"] == "2" and address(at)["round"] == "7" and address(at)["algo"] == "NGD (natural, in η)"
    at.slider(key="round").set_value(3).run()
    assert address(at)["round"] == "3"
    at = open_page("app_pages/split_gains.py", {}, at)   # the Lab's settings are the same widgets on every page
    assert address(at)["depth"] == "2" and not at.exception
    at = open_page("app_pages/drifters.py", {"dbin": "1", "map": "(c) predicted ρ"})
    assert at.number_input(key="dbin").value == 1.0 and address(at)["dbin"] == "1" and address(at)["map"] == "(c) predicted ρ"
    at = open_page("app_pages/drifters.py", {"map": "(z) no such map"})   # not a shown text: the default
    assert address(at)["map"] == "(b) NLL NGB − IndepNGB" and not at.exception


def test_lessons_page_steps_previous_next_and_links():
    at = open_page("app_pages/lessons.py", {"lesson": "2", "step": "3"})
    assert not at.exception and not at.error
    lesson = LESSONS[1]
    assert lesson.steps[2].title in at.subheader[0].value
    assert any(lesson.steps[2].question in i.value for i in at.info)
    href = next(h for t, h in plain_links(at).items() if t.startswith("Show me"))
    assert href.startswith(lesson.steps[2].page + "?") and "round=5" in href and "apply" not in href
    at.button(key="lesson.next").click().run()
    assert address(at) == {"lesson": "2", "step": "4", "present": "false"}   # the presenter switch: off
    at.button(key="lesson.prev").click().run()
    at.button(key="lesson.prev").click().run()
    assert address(at)["step"] == "2"
    at.button_group(key="lesson").set_value(5).run()   # another lesson starts at its first step
    assert address(at) == {"lesson": "5", "step": "1", "present": "false"}
    at = open_page("app_pages/lessons.py", {"lesson": "99", "step": "-3"})   # a stale link: the first lesson
    assert address(at) == {"lesson": "1", "step": "1", "present": "false"} and not at.exception


def test_other_pages_link_back_to_the_lesson_step():
    at = open_page("app_pages/lessons.py", {"lesson": "1", "step": "2"})
    step = LESSONS[0].steps[1]
    at = open_page("app_pages/explorer.py", step.query(), at)
    assert plain_links(at)["↩ Lesson 1, step 2"] == "lessons?lesson=1&step=2"
