"""Lessons: guided tours of the app, step by step, each step with a question for the class and a "show me" link."""

import streamlit as st

from distviz.ui.common import explainer
from distviz.ui.layout import presenting
from distviz.ui.lessons import CURRENT, ENV_DIR, NAV, PAGES, load_lessons, plain_link
from distviz.ui.presenter import arrow_keys, step_href
from distviz.ui.safe_text import show_error
from distviz.ui.state import bound

PAGE = "lesson"

present = presenting()
if present:   # presenter mode: the lesson's own title (in the box below) heads the page, which leaves room for the step
    st.html("<style>[data-testid='stMainBlockContainer'] { padding-top: 4.5rem; }</style>")   # below the app's header
else:
    st.title("Lessons")
explainer(f"""
Each lesson is a short guided tour of one idea, a few steps long. A step says what to look at in two or three
sentences, gives a **question to ask the class**, and has a **Show me** link that opens the page in exactly
the state the step describes (page, family, algorithm, round, tab); the sidebar then has a link back to the
step. Every step has its own address (`?lesson=2&step=3`), so a step can be shared or bookmarked. In
**presenter mode** (sidebar toggle, or `?present=1`) text and charts are larger and the sidebar starts folded,
and **Show me** opens the page with the step's text, question and links in a panel at its right, scrolled to
the step's chart: Previous and Next then go from view to view. The left and right arrow keys press Previous and
Next.

The lessons are plain TOML files in `distviz/lessons/` (one file per lesson, numbered in the order of their
file names); edit them or add your own there, or in a folder named by the environment variable `{ENV_DIR}`.
A file that cannot be read is named in one sentence here and the other lessons still load.
""")

lessons, problems = load_lessons()
for msg in problems:
    show_error(msg, icon=":material/description:")   # it names a file from $DISTVIZ_LESSONS: shown literally
if not lessons:
    st.info("No lessons found; add a lesson file to distviz/lessons/.")
    st.stop()

numbers = [ls.number for ls in lessons]
by_number = {ls.number: ls for ls in lessons}
lkey, skey = "lesson", "step"   # the lesson's and the step's controls are bound to ?lesson= and ?step= (state.bound)


def first_step():
    """A new lesson starts at its first step."""
    st.session_state[skey] = 1


def move(delta: int):
    """Previous / next step."""
    st.session_state[skey] = min(max(1, int(st.session_state.get(skey) or 1) + delta), len(lesson.steps))


# presenter mode: lesson and step side by side and no summary line, so that the step's text, question and
# Previous / Next / Show me sit above the fold of a 1280x720 projector
top = st.columns([3, 2], vertical_alignment="bottom") if present else [st, st]
# the lessons by number (the address holds what a control shows: ?lesson=2), the chosen one's title beside them
number = top[0].segmented_control("Lesson", numbers, default=numbers[0], format_func=str, on_change=first_step,
                                  help="\n".join(f"{i}. {by_number[i].title}" for i in numbers), **bound(lkey))
lesson = by_number[int(number or numbers[0])]
st.markdown(f"**Lesson {lesson.number}: {lesson.markdown(lesson.title)}**")
if lesson.summary and not present:
    st.caption(lesson.markdown(lesson.summary))
step_no = top[1].segmented_control("Step", list(range(1, len(lesson.steps) + 1)), default=1, format_func=str,
                                   **bound(skey))
step_no = int(step_no or 1)
step = lesson.steps[step_no - 1]
st.session_state[CURRENT] = (lesson.number, step_no)

with st.container(key="lesson-card"):   # the step: title, text, question and its three controls
    st.subheader(f"Step {step_no} of {len(lesson.steps)}: {lesson.markdown(step.title)}", anchor=False)
    st.markdown(lesson.markdown(step.text))
    st.info(f"**Ask the class:** {lesson.markdown(step.question)}", icon=":material/forum:")
    c1, c2, c3 = st.columns([1, 1, 3], vertical_alignment="center")
    c1.button("Previous", icon=":material/arrow_back:", on_click=move, args=(-1,), disabled=step_no <= 1, key=f"{PAGE}.prev",
              help="The previous step (left arrow key).")
    c2.button("Next", icon=":material/arrow_forward:", on_click=move, args=(1,), disabled=step_no >= len(lesson.steps),
              key=f"{PAGE}.next", help="The next step (right arrow key).")
    if step.page in NAV:
        plain_link(c3.container(key="lesson-show"), step_href(lesson, step_no) if present else step.href(),
                   f"Show me: {PAGES[step.page][0]} →", framed=True,
                   help="Opens the page in the state this step describes" + (", beside this step's text." if present else "."))
arrow_keys()
st.caption(f"Address of this step: `?lesson={lesson.number}&step={step_no}` on the Lessons page.")
