"""A round slider with play / pause that replays a trace inside a fragment (no refit, no full rerun)."""

from __future__ import annotations

from typing import Callable

import streamlit as st

from .state import bound


def round_player(page: str, n_rounds: int, draw: Callable[[int], None], *, default: int | None = None,
                 interval: float = 0.35, label: str = "Boosting round") -> None:
    """Draw play / pause, a round slider and `draw(round)` in one fragment.

    Streamlit keeps the slider in the URL parameter `round` (bind="query-params"; a round outside 0..`n_rounds` in a
    link gives `default`, and a value the session kept from a longer fit is brought into range).  While playing,
    the fragment reruns every `interval` seconds and advances the round by about 1/40 of the range, stopping at the
    last round.
    """
    n_rounds = max(int(n_rounds), 1)
    play_key = f"{page}.playing"
    playing = bool(st.session_state.get(play_key, False))
    rdefault = int(n_rounds if default is None else default)
    rkey = "round"

    def toggle():
        st.session_state[play_key] = not st.session_state.get(play_key, False)
        if st.session_state[play_key] and st.session_state.get(rkey, 0) >= n_rounds:
            st.session_state[rkey] = 0  # replay from the start

    @st.fragment(run_every=interval if playing else None)
    def frame():
        kw = bound("round")
        r0 = st.session_state.get(rkey)
        if isinstance(r0, int) and not 0 <= r0 <= n_rounds:
            st.session_state[rkey] = min(max(r0, 0), n_rounds)   # kept from a fit with more rounds
        if bool(st.session_state.get(play_key, False)) != playing:
            st.rerun()  # play / pause changed the timer: rerun the page so the fragment gets its new interval
        if playing:
            step = max(1, n_rounds // 40)
            nxt = min(n_rounds, int(st.session_state.get(rkey, 0)) + step)
            st.session_state[rkey] = nxt
            if nxt >= n_rounds:
                st.session_state[play_key] = False
        c1, c2 = st.columns([2, 8], vertical_alignment="bottom")
        # Material icons ship with Streamlit's frontend (offline); the Unicode glyphs they replace rendered as
        # boxes with Debian's default fonts.
        c1.button("pause" if playing else "play", icon=":material/pause:" if playing else ":material/play_arrow:",
                  key=f"{page}.playbtn", on_click=toggle, width="stretch",
                  help="Replay the rounds from the stored trace (nothing is refitted).")
        r = c2.slider(label, 0, n_rounds, rdefault, **kw, help="Scrub through the rounds; round 0 is the constant start.")
        draw(int(r))

    frame()
