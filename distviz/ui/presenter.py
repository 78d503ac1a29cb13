"""Presenter mode's step view: a lesson step's text, question and Previous / Next / Show me beside the step's chart.

In presenter mode a lesson's "Show me" link opens its page with ``?tour=N.i`` (lesson N, step i) in the address.
That page then carries a panel fixed to the right of the window with the step's title, text and question and three
links: *Previous* and *Next* open the neighbouring steps' views the same way, *Show me* puts this step's state back.
The page's charts are drawn at most `CHART_HEIGHT` pixels high while the panel is shown, and the step's chart (the
one the step names with ``chart = "<key>"`` in its lesson file, else the page's first chart) is scrolled into view
below the app's header once the page has settled, so that on a 1280x720 projector the text, the question, the three
links and the chart are all on screen.  The left and right arrow keys press Previous and Next, here and on the
Lessons page (`arrow_keys`).

The scripts are inline (``st.html`` with JavaScript, no component files, nothing loaded from the network); the only
values they carry are a step number and a chart key, both checked against `REF` and
`distviz.ui.lessons.CHART_KEY` before they are written into the script.
"""

from __future__ import annotations

import json
import re

import streamlit as st

from .lessons import CURRENT, NAV, PAGES, Lesson, lesson_href, load_lessons, page_href, plain_link

TOUR = "tour"                         #: URL parameter of the step view: "N.i" (lesson N, step i)
REF = re.compile(r"^([1-9][0-9]?)\.([1-9][0-9]?)$")
CHART_HEIGHT = 560                    #: the tallest chart of a step view, in pixels (720 less the header, margins)
PANEL = "tour-panel"                  #: the panel's container key (CSS class st-key-tour-panel)
_LANDINGS = "_tour.landings"          #: session counter: one landing (scroll to the chart) per opened step view
_ACTIVE = "_tour.active"              #: session flag: this run draws a step view (read by `chart_height_cap`)

#: the step view's look: the panel fixed at the right below the app's header, the page's content left of it
PANEL_CSS = """<style>
.st-key-tour-panel { position: fixed; top: 3.75rem; right: 0; bottom: 0; width: 34vw; z-index: 99990;
  overflow-y: auto; padding: 0.4rem 1.1rem 0.8rem 1.1rem; background: var(--st-background-color, #fff);
  border-left: 1px solid rgba(49, 51, 63, 0.2); gap: 0.45rem; }
.st-key-tour-panel [data-testid="stMarkdownContainer"] p { font-size: 0.95rem; line-height: 1.4; }
.st-key-tour-panel h3 { font-size: 1.15rem; padding: 0.1rem 0 0.2rem 0; }
.st-key-tour-panel [data-testid="stHeading"] [data-testid="stMarkdownContainer"] { margin-bottom: 0; }
.st-key-tour-panel a.distviz-link, .st-key-tour-panel span.distviz-link { font-size: 0.9rem; }
[data-testid="stMainBlockContainer"] { padding-left: 2rem; padding-right: calc(34vw + 1.5rem); }
[data-testid="stHeader"] { background: var(--st-background-color, #fff); }
</style>"""

#: arrow keys: ArrowRight / ArrowLeft click the Next / Previous control of the Lessons page or of the step view;
#: installed once per browser tab, ignored while a text field, slider, tab or menu has the focus
ARROW_JS = """<script>
if (!window.__distvizArrows) {
  window.__distvizArrows = true;
  document.addEventListener('keydown', (e) => {
    if (e.defaultPrevented || e.altKey || e.ctrlKey || e.metaKey || e.shiftKey) return;
    if (e.key !== 'ArrowRight' && e.key !== 'ArrowLeft') return;
    const t = e.target;
    if (t && t.closest && t.closest('input, textarea, select, [contenteditable=""], [contenteditable="true"], ' +
        '[role="slider"], [role="textbox"], [role="combobox"], [role="listbox"], [role="tab"], [role="radio"], ' +
        '[role="spinbutton"], [role="menu"], [role="option"], .js-plotly-plot')) return;
    const which = e.key === 'ArrowRight' ? 'next' : 'prev';
    const el = [...document.querySelectorAll(`.st-key-tour-${which} a, .st-key-lesson-${which} button`)]
      .find((c) => c.checkVisibility());
    if (!el || el.disabled || el.getAttribute('aria-disabled') === 'true') return;
    e.preventDefault();
    el.click();
  });
}
</script>"""

#: landing: once the page has settled (no run in progress, no stale element), scroll the step's chart (the named one;
#: the first chart when the page draws none of that key within 10 s) to just below the header, follow it while the
#: page still moves it and the reader has not scrolled, then mark the body with data-tour-landed="N.i"; a script
#: re-mounted with a nonce that has landed already does nothing
LAND_JS = """<script>
(() => {
  const want = %s;
  const body = document.body.dataset;
  if (body.tourDone === want.nonce) return;
  body.tourNonce = want.nonce;
  delete body.tourLanded;
  const busy = () => document.querySelector('[data-testid="stStatusWidget"], [data-testid="stSkeleton"], ' +
                                            '[data-testid="stElementContainer"][data-stale="true"]');
  let tries = 0, calm = 0, touched = false;
  const target = () => {
    const main = document.querySelector('[data-testid="stMain"]') || document.body;
    const named = want.chart ? main.querySelector('.st-key-' + want.chart) : null;
    if (named && named.querySelector('.js-plotly-plot')) return named;
    return (!want.chart || tries > 50) ? main.querySelector('.js-plotly-plot') : null;
  };
  const header = () => {
    const h = document.querySelector('[data-testid="stHeader"]');
    return h ? h.getBoundingClientRect().bottom : 0;
  };
  for (const ev of ['wheel', 'touchstart', 'mousedown']) {
    window.addEventListener(ev, () => { touched = true; }, { once: true, capture: true });
  }
  const tick = () => {
    if (touched || ++tries > 600 || body.tourNonce !== want.nonce) return;
    const el = target();
    if (!el || busy() || el.getBoundingClientRect().height < 20) { calm = 0; setTimeout(tick, 200); return; }
    if (Math.abs(el.getBoundingClientRect().top - header() - 6) > 3) {
      el.style.scrollMarginTop = (header() + 6) + 'px';
      el.scrollIntoView({ block: 'start' });
      calm = 0;
    } else if (++calm >= 3) {
      body.tourDone = want.nonce;
      body.tourLanded = want.tour;
      return;
    }
    setTimeout(tick, 150);
  };
  tick();
})();
</script>"""


def tour() -> str:
    """The step view's ``tour`` URL parameter ("N.i"), as a link (Show me, Previous, Next) set it; "" when absent or
    not of that form (never read further: `REF` bounds it to two small numbers)."""
    raw = st.query_params.get(TOUR)
    return raw if isinstance(raw, str) and REF.match(raw) else ""


def step_query(lesson: Lesson, i: int) -> dict:
    """The URL parameters of step `i` of `lesson` in the step view: its "show me" state, presenter mode, ``tour``."""
    return lesson.steps[i - 1].query(present=True) | {TOUR: f"{lesson.number}.{i}"}


def step_href(lesson: Lesson, i: int) -> str:
    """The relative address of step `i` of `lesson` in the step view (a plain link: distviz.ui.lessons.plain_link)."""
    return page_href(lesson.steps[i - 1].page, step_query(lesson, i))


def arrow_keys() -> None:
    """Install the arrow-key handler in this browser tab (once; see ARROW_JS)."""
    st.html(ARROW_JS, unsafe_allow_javascript=True)


def _find(ref: str) -> tuple[Lesson, int] | None:
    m = REF.match(ref)
    if not m:
        return None
    n, i = int(m.group(1)), int(m.group(2))
    lessons, _ = load_lessons()
    if not 1 <= n <= len(lessons) or not 1 <= i <= len(lessons[n - 1].steps):
        return None
    return lessons[n - 1], i


def _link(box, key: str, label: str, lesson: Lesson, i: int | None, help_: str) -> None:
    """One of the panel's links, in a container keyed for the arrow keys (st-key-tour-prev / -next / -show)."""
    with box.container(key=f"tour-{key}", width="content"):
        plain_link(st, "" if i is None else step_href(lesson, i), label, help=help_, disabled=i is None)


def step_view(nav) -> bool:
    """The step view's panel when this run is one (presenter mode, ``?tour=N.i`` naming a step of the page `nav`
    runs); returns whether it is.  On any other page the ``tour`` setting is cleared, so it leaves the address."""
    from .layout import presenting

    ref = tour()
    found = _find(ref) if ref and presenting() else None
    here = getattr(nav, "url_path", None)
    if found is None or getattr(NAV.get(found[0].steps[found[1] - 1].page), "url_path", "?") != here:
        if TOUR in st.query_params:
            del st.query_params[TOUR]   # a step view of another page, or none: the address forgets it
        st.session_state.pop(_ACTIVE, None)
        return False
    lesson, i = found
    step = lesson.steps[i - 1]
    st.session_state[CURRENT] = (lesson.number, i)
    st.session_state[_ACTIVE] = True
    if _LANDINGS not in st.session_state:   # a link opened the view (a new session): land on its chart
        st.session_state[_LANDINGS] = int(st.session_state.get(_LANDINGS, 0)) + 1
    panel = st.container(key=PANEL)
    with panel:
        plain_link(st, lesson_href(lesson.number, i, True), f"Lesson {lesson.number} · step {i} of {len(lesson.steps)}",
                   help="This step on the Lessons page.")
        st.subheader(lesson.markdown(step.title), anchor=False)
        st.markdown(lesson.markdown(step.text))
        st.info(f"**Ask the class:** {lesson.markdown(step.question)}", icon=":material/forum:")
        row = st.container(horizontal=True, gap="small")
        _link(row, "prev", "← Previous", lesson, i - 1 if i > 1 else None,
              "The previous step of this lesson (left arrow key).")
        _link(row, "next", "Next →", lesson, i + 1 if i < len(lesson.steps) else None,
              "The next step of this lesson (right arrow key).")
        _link(row, "show", "Show me", lesson, i, f"Puts the {PAGES[step.page][0]} page back into the state of this step.")
        want = {"tour": f"{lesson.number}.{i}", "chart": chart_class(step.chart),
                "nonce": f"{lesson.number}.{i}.{st.session_state[_LANDINGS]}"}
        st.html(PANEL_CSS + ARROW_JS + LAND_JS % json.dumps(want), unsafe_allow_javascript=True)
    return True


def chart_class(chart: str) -> str:
    """The CSS class suffix Streamlit gives an element of key `chart` ('drift.trajfig' -> 'drift-trajfig')."""
    return re.sub(r"[^A-Za-z0-9_-]", "-", chart)


def chart_height_cap() -> int | None:
    """The largest chart height of this run: `CHART_HEIGHT` in a step view, None otherwise."""
    try:
        return CHART_HEIGHT if st.session_state.get(_ACTIVE) else None
    except Exception:  # noqa: BLE001 - outside a Streamlit run
        return None
