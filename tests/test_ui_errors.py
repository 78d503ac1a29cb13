"""Every failure a page can meet becomes one sentence (no traceback, no path), and fault counters become warnings."""

from types import SimpleNamespace

import numpy as np
import pytest
import xarray as xr

st_testing = pytest.importorskip("streamlit.testing.v1")
AppTest = st_testing.AppTest

from apptest_pages import APP  # noqa: E402  (tests/ is on sys.path)


def _user_errors_script():
    import streamlit as st

    from distviz.ui.state import user_errors

    with user_errors():
        raise ZeroDivisionError("boom in /srv/secret/module.py")
    st.write("the page goes on")


def test_user_errors_turns_any_exception_into_one_sentence(caplog):
    at = AppTest.from_function(_user_errors_script).run()
    assert not at.exception
    assert len(at.error) == 1
    text = at.error[0].value
    assert "boom" not in text and ".py" not in text and "Traceback" not in text
    assert any("the page goes on" in m.value for m in at.markdown)
    assert "unexpected error" in caplog.text


def test_drifters_page_shows_one_sentence_for_an_unexpected_failure(monkeypatch):
    from distviz.ui import drifters

    def broken(*a, **k):
        raise np.linalg.LinAlgError("Singular matrix at /srv/distviz/x.py")

    monkeypatch.setattr(drifters, "run_comparison", broken)
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    at.switch_page("app_pages/drifters.py")
    at.run()
    assert not at.exception
    assert len(at.error) == 1
    assert "Singular" not in at.error[0].value and ".py" not in at.error[0].value


def _fake_result(kind, algorithm, attrs, **counters):
    R = 5
    data = {"train_nll": ("round", np.linspace(2.0, 1.0, R))}
    data.update({k: ("round", np.asarray(v, dtype=float)) for k, v in counters.items()})
    tr = xr.Dataset(data, attrs=attrs)
    from distviz.ui.fits import FitConfig

    cfg = FitConfig(family="normal", algorithm=algorithm)
    return SimpleNamespace(model=SimpleNamespace(trace_=tr, best_iteration_=4), data=SimpleNamespace(y=np.zeros(100)),
                           config=cfg, kind=kind)


def test_fit_warnings_report_stop_reason_and_nonfinite_steps():
    from distviz.ui.fits import fit_warnings

    res = _fake_result("law", "ngd", {"stop_reason": "Round 3 made the training NLL non-finite, so boosting stopped"},
                       n_nonfinite=[0, 0, 4, 0, 0], n_projected=[0] * 5)
    msgs = fit_warnings(res)
    assert any("stopped early" in m and "round 3" in m for m in msgs)
    assert any("4 row updates in 1 rounds had a non-finite step" in m for m in msgs)
    quiet = _fake_result("law", "ngd", {"stop_reason": "line search: no step lowers the NLL"},
                         n_nonfinite=[0] * 5, n_projected=[0] * 5)
    assert fit_warnings(quiet) == []


def test_fit_warnings_cover_wgboost_traces():
    from distviz.ui.fits import fit_warnings

    res = _fake_result("wg", "wg_nka", {"stop_reason": ""}, n_nonfinite=[0, 1, 0, 0, 0], n_projected=[0, 30, 20, 0, 0])
    msgs = fit_warnings(res)
    assert any("non-finite step" in m for m in msgs)
    assert any("full-Newton step" in m for m in msgs)
