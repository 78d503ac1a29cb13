"""The Drifters page's optional NN baseline: off by default (first paint unchanged), a row in the metrics
table when on, fitted through the fit governor with its cost in the budget; the page says which figures
rest on synthetic and which on real data."""

import math

import pytest

from distviz.errors import DistvizError

st_testing = pytest.importorskip("streamlit.testing.v1")
AppTest = st_testing.AppTest

from apptest_pages import APP  # noqa: E402  (tests/ is on sys.path)


def drifters_page():
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.switch_page("app_pages/drifters.py")
    return at.run()


def table_rows(at):
    """{method: [cells]} of the metrics table (the markdown table whose header starts with 'method')."""
    for el in at.markdown:
        lines = el.value.splitlines()
        if lines and lines[0].startswith("| method |"):
            return {c[0]: c[1:] for c in ([x.strip() for x in ln.strip("|").split("|")] for ln in lines[2:])}
    return {}


def test_nn_toggle_is_off_by_default_and_adds_a_fitted_nn_row(fresh):
    at = drifters_page()
    assert not at.exception and not at.error
    assert at.sidebar.toggle(key="nn").value is False, "the NN baseline is off by default"
    assert any("Precomputed" in el.value for el in at.caption), "the first paint is still the shipped result"
    assert "NN" not in table_rows(at) and "NGB" in table_rows(at)
    banner = " ".join(el.value for el in at.info)
    assert "synthetic sample" in banner and "real 1000-row" in banner and "−0.064 ± 0.084" in banner
    at.sidebar.select_slider(key="train").set_value(1000)
    at.sidebar.select_slider(key="drounds").set_value(30)
    at.sidebar.toggle(key="nn").set_value(True).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    rows = table_rows(at)
    assert {"NGB", "IndepNGB", "NN"} <= set(rows)
    nll = float(rows["NN"][0])
    assert math.isfinite(nll) and 5.0 < nll < 12.0, rows["NN"]
    assert not any("Precomputed" in el.value for el in at.caption), "NN is fitted here, not read from the shipped file"
    assert any("best epoch" in el.value for el in at.caption)
    key = next(k for k in fresh.result_store().items if "nn" in k)
    assert key[:5] == ("drift", "sample", 30, 0.1, 1000), "the NN comparison is stored under its own key"


def test_nn_goes_through_the_governor_with_its_own_key(monkeypatch, fresh):
    import distviz.experiments.drifters as ed
    from distviz.ui.drifters import run_comparison

    calls = []

    def fake_run(data, progress=None, **kw):
        calls.append(kw["methods"])
        progress(0.5, "fitting")
        return {"methods": kw["methods"]}

    monkeypatch.setattr(ed, "run_drifter_comparison", fake_run)
    assert run_comparison("sample", 30, 0.1, 2000, nn=True) == {"methods": ("NGB", "IndepNGB", "NN")}
    assert run_comparison("sample", 30, 0.1, 2000, nn=True, refit=True) == {"methods": ("NGB", "IndepNGB", "NN")}
    assert len(calls) == 1, "the second request is served from the store"
    pre = run_comparison("sample", 300, 0.1, 30000)   # APP_DEFAULTS: the shipped result
    assert getattr(pre, "info", {}).get("precomputed"), "without NN the shipped result is still used"
    assert len(calls) == 1


def test_budget_counts_the_nn_and_names_it_when_refused(monkeypatch, fresh):
    import distviz.experiments.drifters as ed
    from distviz.ui import drifters

    assert drifters.predict_drifter_seconds(10000, 30, nn=True) > drifters.predict_drifter_seconds(10000, 30) + 20
    without = drifters.predict_drifter_seconds(10000, 30)
    monkeypatch.setenv("DISTVIZ_MAX_FIT_SECONDS", str(without + 1))
    drifters.check_drifter_budget(10000, 30)
    with pytest.raises(DistvizError) as info:
        drifters.check_drifter_budget(10000, 30, nn=True)
    assert "NN baseline off" in str(info.value)
    calls = []
    monkeypatch.setattr(ed, "run_drifter_comparison", lambda *a, **k: calls.append(k))
    with pytest.raises(DistvizError):
        drifters.run_comparison("sample", 30, 0.1, 10000, nn=True)
    assert not calls, "refused before anything is fitted"
    # on the page: one sentence, no traceback
    monkeypatch.setenv("DISTVIZ_MAX_FIT_SECONDS", "1.5")
    at = drifters_page()
    at.sidebar.toggle(key="nn").set_value(True).run()
    assert not at.exception and len(at.error) == 1
    msg = at.error[0].value
    assert "NN baseline off" in msg and msg.count(". ") == 0 and "Error" not in msg, msg
    assert not calls
