"""The fit budget's speed timing (distviz.ui.costs.machine_speed): timed once for sessions that ask together, and a
page says what it waits for while it is timed (on an installation's first start, the kernels' compilation)."""

from __future__ import annotations

import threading
import time

from distviz.ui import costs


def test_sessions_that_ask_together_wait_for_one_timing(monkeypatch):
    timings = []

    def workload():
        timings.append(1)
        time.sleep(0.2)
        return 2 * costs.REFERENCE_CPU

    monkeypatch.setattr(costs, "reference_work", workload)
    monkeypatch.setattr(costs, "_SPEED", [])
    assert not costs.speed_known()
    got = []
    threads = [threading.Thread(target=lambda: got.append(costs.machine_speed())) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert timings == [1] and got == [2.0] * 4 and costs.speed_known()
    monkeypatch.setattr(costs, "_SPEED", [2.0, time.monotonic() - costs.SPEED_REFRESH_S - 1])   # stale: timed again
    assert costs.speed_known() and costs.machine_speed() == 2.0 and len(timings) == 2


def test_a_page_says_what_it_waits_for_while_the_speed_is_timed(monkeypatch):
    import streamlit as st

    from distviz.ui import lab
    from distviz.ui.fits import FitConfig

    shown = []
    real = st.spinner

    def spinner(text, *a, **k):
        shown.append((text, costs.speed_known()))
        return real(text, *a, **k)

    monkeypatch.setattr(lab.st, "spinner", spinner)
    monkeypatch.setattr(costs, "reference_work", lambda: costs.REFERENCE_CPU)
    monkeypatch.setattr(costs, "_SPEED", [])
    cfg = FitConfig(n=200, n_estimators=3)
    assert lab.fit_model(cfg).model is not None
    assert shown == [(lab.SPEED_WAIT, False)] and "compiles the fit kernels" in lab.SPEED_WAIT
    lab.fit_model(cfg)
    assert len(shown) == 1, "a known speed shows nothing"
