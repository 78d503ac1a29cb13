"""distviz — an interactive laboratory for distributional gradient boosting (run: `distviz app`).

This file is the navigation and what every page shares (presenter mode, the lesson links); every page's body lives
in app_pages/ beside it (the Lab, the home page, in app_pages/lab.py), and Streamlit's settings in config.toml beside
it. All three ship inside the package; `distviz app` (`make run`)
starts this script through distviz.ui.serve (127.0.0.1 only, no outbound requests).
"""

import streamlit as st

from distviz.ui.serve import no_outbound_lookups, quiet_compute_pools

quiet_compute_pools()  # idle OpenMP threads sleep instead of spinning (before the first parallel kernel)
no_outbound_lookups()  # also under a plain `streamlit run app.py`: Streamlit's address look-ups never leave the machine

from distviz.trees import prepare_numba_cache  # noqa: E402

prepare_numba_cache()  # stale numba cache files go before the first fit (once per server process; serve.main did it)

from distviz.ui.layout import opens_presenting, presenter_controls  # noqa: E402
from distviz.ui.state import begin_run, drop_unknown_params  # noqa: E402

begin_run()  # the bound widgets drawn from here on are this run's (drop_unknown_params)
st.set_page_config(page_title="distviz", page_icon="📈", layout="wide",
                   initial_sidebar_state="collapsed" if opens_presenting() else "auto")

from distviz.ui.common import navigation_pages  # noqa: E402
from distviz.ui.lab import draw_settings  # noqa: E402
from distviz.ui.lessons import back_to_lesson  # noqa: E402
from distviz.ui.presenter import step_view  # noqa: E402

nav = st.navigation(navigation_pages())   # this run's own copies of the pages (distviz.ui.common)
presenter_controls(page=nav.url_path, title=nav.title)   # the page this run shows names the take-away report
back_to_lesson(nav)
step_view(nav)   # presenter mode, ?tour=N.i: the lesson step's panel beside the page (distviz.ui.presenter)
draw_settings(nav.url_path)   # the settings that pages share: the same widgets on every page (distviz.ui.lab)
try:
    nav.run()
finally:
    drop_unknown_params()   # the address keeps only what this run's widgets read
