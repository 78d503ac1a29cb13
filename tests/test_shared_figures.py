"""Figures shared across sessions (issue 32 item 2): one build per key, presenter mode kept apart."""

from __future__ import annotations

import uuid

from distviz.ui import figures, layout


def test_one_build_per_key_and_presenter_mode_builds_its_own(monkeypatch):
    builds = []

    def build():
        builds.append(1)
        return {"n": len(builds)}

    mode = {"on": False}
    monkeypatch.setattr(layout, "presenting", lambda: mode["on"])
    key = ("test-shared", uuid.uuid4().hex)  # a key no other test uses
    a = figures.shared_figures("t", key, build)
    b = figures.shared_figures("t", key, build)
    assert a is b and len(builds) == 1       # the second session reuses the first one's figures
    mode["on"] = True
    c = figures.shared_figures("t", key, build)
    assert c is not a and len(builds) == 2   # presenter mode has its own fonts and line widths
    assert figures.shared_figures("t", (*key, 2), build) is not a and len(builds) == 3
