"""Guided lessons: steps read from TOML data files that a teacher can edit or add to without touching code.

The lessons are the `*.toml` files of `distviz/lessons/` (and of the folder named by the environment variable
DISTVIZ_LESSONS, when set), numbered in the order of their file names.  A lesson file reads::

    title = "One family, two coordinates"
    summary = "One line under the title."          # optional

    [[step]]
    title = "The Normal in two coordinates"
    text = "Two or three sentences (Markdown)."
    question = "A question to ask the class."
    page = "explorer"          # lab, evolution, split_gains, drifters, posterior or explorer
    chart = "explore.density"  # optional: the key of the chart the step is about (default: the page's first)
    [step.params]              # the view's URL parameters ("show me"): only names the page reads
    family = "normal"
    "normal.mu" = 0.0
    [[step.claim]]             # what the view shows, checked by `distviz lessons check` (distviz.ui.claims)
    kind = "near"
    a = "eta[2]"
    b = -0.5
    tol = 1e-9

A "show me" link is a plain link to `page` with `params` in its address (`Step.href`; a select's value written as
the text it shows, distviz.ui.params.url_text): it opens a new session whose widgets read their values from the
address (a setting the step leaves out gets its default), so the view is the same whatever the session showed
before.  In presenter mode the link opens the step view (distviz.ui.presenter):
the step's text, question and links in a panel beside the page, scrolled to the step's chart.  A step's claims
(up to eight [[step.claim]] tables, the vocabulary in distviz.ui.claims) state what its view shows;
`distviz lessons check` fits every step's state through the pages' own fit functions and evaluates them
(distviz.ui.lesson_check).
Files are parsed as data only (tomllib); a malformed file is reported
in one sentence that names it, and the other lessons still load.

The shipped lessons are trusted Markdown. A lesson from $DISTVIZ_LESSONS is a file from other people
(`Lesson.trusted` is False): its title, summary, text and question are shown through
distviz.ui.safe_text.restrict_markdown (formatting, code, math and colours kept; no raw HTML, links, images
or bare addresses turned into links), see `Lesson.markdown`; the error sentences naming its file are escaped.
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from dataclasses import dataclass, field
from html import escape as _escape_html
from pathlib import Path
from urllib.parse import urlencode

from distviz.data.paths import package_file
from distviz.errors import ConfigError

from .claims import parse_claims
from .fits import LAB_PARAMS, SPLIT_PARAMS
from .params import MAX_RAW, url_text
from .safe_text import restrict_markdown

#: the shipped lessons (``distviz/lessons``, read through importlib.resources wherever distviz is installed)
LESSON_DIR = package_file("distviz", "lessons")
ENV_DIR = "DISTVIZ_LESSONS"
MAX_STEPS = 12
MAX_FILE_BYTES = 200_000
#: a chart key a step may name (the `key=` a page gives the chart, e.g. "drift.trajfig")
CHART_KEY = re.compile(r"^[a-z][a-z0-9_.]{0,39}$")

#: the fit settings of the Lab and Evolution, and of Split gains (its own p, algorithm and rounds): distviz.ui.fits,
#: which takes each algorithm's settings from the registry (distviz.ui.algorithms)
_LAB, _SPLIT = LAB_PARAMS, SPLIT_PARAMS


def _explorer_params() -> list[str]:
    """The explorer's parameters: family, K and one slider per conventional parameter of every family."""
    from distviz import families
    from distviz.viz import explorer as vx

    names = ["family", "K"]
    for fam in families.available():
        kw = {"K": 6} if fam == "categorical" else ({"P": 2} if fam == "mvn" else {})
        names += [f"{fam}.{s.name}" for s in vx.conventional_specs(families.get(fam, **kw))]
    return names


#: page name in a lesson file -> (title shown on the link, URL parameters the page reads)
PAGES = {
    "lab": ("Lab", _LAB),
    "evolution": ("Evolution", _LAB + ["view", "round", "x0"]),
    "split_gains": ("Split gains & entropy", _SPLIT + ["view", "round", "tdepth"]),
    "drifters": ("Drifters", ["source", "drounds", "dlr", "train", "nn", "region", "map", "traj", "drifter"]),
    "posterior": ("Posterior regression", ["section", "pdata", "method", "prounds", "pdepth", "view", "cmp_rounds",
                                           "ood_rounds"]),
    "explorer": ("Family explorer", None),   # filled lazily (_explorer_params)
}
GLOBAL_PARAMS = ["present", "tour"]   # read on every page (distviz.ui.layout, distviz.ui.presenter)


def page_params(page: str) -> list[str]:
    """The URL parameters `page` reads (the names a lesson step may set)."""
    title, names = PAGES[page]
    return list(names) if names is not None else _explorer_params()


@dataclass(frozen=True)
class Step:
    """One step of a lesson: a few sentences, a question for the class, and the view that shows it."""

    title: str
    text: str
    question: str
    page: str
    params: dict = field(default_factory=dict)
    claims: tuple = ()   #: distviz.ui.claims.Claim: what the view shows (checked by `distviz lessons check`)
    chart: str = ""      #: key of the chart the step is about ("" : the page's first chart)

    def query(self, present: bool = False) -> dict:
        """The URL parameters of the "show me" link (present=true in presenter mode), as the widgets' binding to the
        address writes them (a select's shown text, true / false for a switch: distviz.ui.params.url_text)."""
        q = {k: url_text(k, v) for k, v in self.params.items()}
        if present:
            q["present"] = "true"   # what Streamlit's binding of the presenter switch reads and writes
        return q

    def href(self, present: bool = False) -> str:
        """The relative address of the "show me" view, e.g. 'evolution?view=Geometry...&round=20' (the Lab's is './?...')."""
        return page_href(self.page, self.query(present))


@dataclass(frozen=True)
class Lesson:
    """A guided lesson: a title, an optional summary line and its steps (from one TOML file)."""

    number: int
    file: str
    title: str
    summary: str
    steps: tuple
    trusted: bool = False   #: shipped with distviz (its Markdown is shown as written)

    def markdown(self, text: str) -> str:
        """`text` of this lesson (its title, summary or a step's text or question) ready for st.markdown: as
        written for a shipped lesson, through `restrict_markdown` for one from $DISTVIZ_LESSONS."""
        return text if self.trusted else restrict_markdown(text)


def _text(d: dict, key: str, where: str, fname: str, *, required: bool = True) -> str:
    v = d.get(key, "")
    if not isinstance(v, str) or (required and not v.strip()):
        raise ConfigError(f"{where} of the lesson file {fname} needs a text '{key}'; add it in quotes.")
    return v.strip()


def _check_value(v, name: str, where: str, fname: str):
    ok = (isinstance(v, bool) or (isinstance(v, int) and abs(v) < 10**12)
          or (isinstance(v, float) and math.isfinite(v)) or (isinstance(v, str) and 0 < len(v) <= MAX_RAW))
    if not ok:
        raise ConfigError(f"{where} of the lesson file {fname} gives '{name}' a value that is not a short text, "
                          f"number or true / false; correct it.")
    return v


def parse_lesson(text: str, fname: str, number: int = 0, *, trusted: bool = False) -> Lesson:
    """A Lesson from the TOML text of one file; ConfigError (one sentence naming `fname`) when it is not valid.
    `trusted` marks a lesson shipped with distviz (see `Lesson.markdown`)."""
    try:
        d = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"The lesson file {fname} is not valid TOML ({str(exc).split('(')[-1].rstrip(')')}); "
                          f"correct it or remove the file.") from None
    unknown = sorted(set(d) - {"title", "summary", "step"})
    if unknown:
        raise ConfigError(f"The lesson file {fname} has an unknown entry '{unknown[0]}'; use title, summary and [[step]].")
    title = _text(d, "title", "The top", fname)
    summary = _text(d, "summary", "The top", fname, required=False)
    raw_steps = d.get("step")
    if not isinstance(raw_steps, list) or not 1 <= len(raw_steps) <= MAX_STEPS:
        raise ConfigError(f"The lesson file {fname} needs between 1 and {MAX_STEPS} [[step]] tables; add or remove steps.")
    steps = []
    for i, s in enumerate(raw_steps, start=1):
        where = f"Step {i}"
        extra = sorted(set(s) - {"title", "text", "question", "page", "chart", "params", "claim"})
        if extra:
            raise ConfigError(f"{where} of the lesson file {fname} has an unknown entry '{extra[0]}'; use title, text, "
                              f"question, page, chart, params and claim.")
        page = s.get("page")
        if page not in PAGES:
            raise ConfigError(f"{where} of the lesson file {fname} names the page {str(page)[:40]!r}, which does not "
                              f"exist; use one of {', '.join(PAGES)}.")
        params = s.get("params", {})
        if not isinstance(params, dict):
            raise ConfigError(f"{where} of the lesson file {fname} needs its params as a [step.params] table.")
        allowed = page_params(page)
        for name, v in params.items():
            if name not in allowed:
                raise ConfigError(f"{where} of the lesson file {fname} sets '{name[:40]}', which the page {page} does not "
                                  f"read; use one of {', '.join(allowed[:20])}.")
            _check_value(v, name, where, fname)
        claims = parse_claims(s.get("claim"), page, f"{where} of the lesson file {fname}")
        chart = s.get("chart", "")
        if not isinstance(chart, str) or (chart and not CHART_KEY.match(chart)):
            raise ConfigError(f"{where} of the lesson file {fname} names a chart that is not a chart key; use the "
                              f"key of one of the page's charts, such as \"drift.trajfig\".")
        steps.append(Step(title=_text(s, "title", where, fname), text=_text(s, "text", where, fname),
                          question=_text(s, "question", where, fname), page=page, params=dict(params),
                          claims=claims, chart=chart))
    return Lesson(number=number, file=fname, title=title, summary=summary, steps=tuple(steps), trusted=trusted)


def lesson_files() -> list[Path]:
    """The lesson files, in the order of their names: the shipped ones, then those of $DISTVIZ_LESSONS."""
    files = sorted(LESSON_DIR.glob("*.toml"))
    extra = os.environ.get(ENV_DIR)
    if extra and Path(extra).is_dir():
        files += sorted(Path(extra).glob("*.toml"))
    return files


def _read_lesson(path: Path) -> str:
    """The text of a lesson file, read only when it resolves inside its own folder (a symbolic link out of it is
    refused, distviz.data.paths.safe_child) and is a regular file (a FIFO is refused, not waited on) of at most
    MAX_FILE_BYTES; ConfigError (one sentence) otherwise, UnicodeDecodeError when it is not UTF-8."""
    import stat

    from distviz.data.paths import read_bounded, safe_child
    from distviz.errors import DataError

    try:
        real = safe_child(path.parent, path.name, what="lesson file")
        st = real.stat()
        if not stat.S_ISREG(st.st_mode):
            raise ConfigError(f"The lesson file {path.name} is not a regular file (a folder, FIFO or device); "
                              "replace it with a TOML file.")
        if st.st_size > MAX_FILE_BYTES:
            raise ConfigError(f"The lesson file {path.name} is larger than {MAX_FILE_BYTES // 1000} kB; split it.")
        return read_bounded(real, MAX_FILE_BYTES, what="lesson file").decode("utf-8")
    except DataError as exc:
        raise ConfigError(str(exc)) from None


def load_lessons(files: list[Path] | None = None) -> tuple[list[Lesson], list[str]]:
    """(lessons numbered from 1, one sentence per file that could not be read); cheap enough for every rerun."""
    lessons: list[Lesson] = []
    problems: list[str] = []
    for path in (lesson_files() if files is None else files):
        try:
            text = _read_lesson(path)
        except UnicodeDecodeError:
            problems.append(f"The lesson file {path.name} is not UTF-8 text; save it as UTF-8.")
            continue
        except OSError:
            problems.append(f"The lesson file {path.name} could not be read; check that it exists and is readable.")
            continue
        except ConfigError as exc:
            problems.append(str(exc))
            continue
        try:
            lessons.append(parse_lesson(text, path.name, number=len(lessons) + 1,
                                        trusted=path.parent == LESSON_DIR))
        except ConfigError as exc:
            problems.append(str(exc))
    return lessons, problems


# ---------------------------------------------------------------------------------------------- app glue
#: page name -> the st.Page of the navigation ('lab' for the Lab), built once per server by
#: distviz.ui.common.navigation_pages; read-only: the links of the Lessons page and the presenter use it
NAV: dict = {}
CURRENT = "_lesson.current"   # session key: (lesson, step) the Lessons page showed last


def page_href(page: str, query: dict) -> str:
    """The relative address of `page` (a name of `PAGES`, or "lessons") with the URL parameters `query`."""
    path = "./" if page == "lab" else page   # the Lab is the app's root: "./" from any page's address
    return f"{path}?{urlencode(query)}"


def lesson_href(lesson: int, step: int, present: bool) -> str:
    """The relative address of a step on the Lessons page."""
    return page_href("lessons", {"lesson": str(lesson), "step": str(step)} | ({"present": "true"} if present else {}))


#: the look of `plain_link`: like Streamlit's page links (no underline, a light background under the pointer)
LINK_CSS = """<style>
a.distviz-link, span.distviz-link { display: inline-block; padding: 0.2rem 0.55rem; border-radius: 0.5rem;
  color: inherit; text-decoration: none; line-height: 1.6; white-space: nowrap; }
a.distviz-link:hover { background: rgba(151, 166, 195, 0.18); color: inherit; text-decoration: none; }
a.distviz-link.framed { border: 1px solid rgba(49, 51, 63, 0.2); padding: 0.35rem 0.75rem; }
a.distviz-link.framed:hover { border-color: var(--primary-color, #0072B2); color: var(--primary-color, #0072B2); }
span.distviz-link { opacity: 0.4; }
</style>"""


def plain_link(box, href: str, label: str, *, help: str = "", disabled: bool = False, framed: bool = False) -> None:
    """A plain link in `box`: clicking it loads `href` in this tab, so a new session opens with the link's address,
    which every widget bound to the URL reads (a lesson's view, whatever the session showed before).  `label` and
    `help` are shown as text; a disabled link is shown greyed, without an address; a `framed` one like a button."""
    text = _escape_html(label)
    if disabled:
        box.html(f'{LINK_CSS}<span class="distviz-link" aria-disabled="true">{text}</span>')
    else:
        box.html(f'{LINK_CSS}<a class="distviz-link{" framed" if framed else ""}" href="{_escape_html(href, quote=True)}" '
                 f'title="{_escape_html(help, quote=True)}">{text}</a>')


def back_to_lesson(nav) -> None:
    """A sidebar link back to the lesson step this session last showed, on every page but the Lessons page."""
    import streamlit as st

    from .layout import presenting

    cur = st.session_state.get(CURRENT)
    if not cur or "lessons" not in NAV or getattr(nav, "url_path", "") == "lessons":
        return
    plain_link(st.sidebar, lesson_href(cur[0], cur[1], presenting()), f"↩ Lesson {cur[0]}, step {cur[1]}",
               help="Back to the lesson step this view came from.")
