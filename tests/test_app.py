"""AppTest checks of every page: renders without exception, widgets rerun and change the figures."""

import json

import pytest

st_testing = pytest.importorskip("streamlit.testing.v1")
AppTest = st_testing.AppTest

APP = "../app.py"


def specs(at):
    """Plotly figure specs currently on the page."""
    return [json.loads(el.proto.spec) for el in at.get("plotly_chart")]


def fresh(timeout=60):
    at = AppTest.from_file(APP, default_timeout=timeout)
    return at


def test_explorer_renders_and_reacts_to_family_and_sliders():
    at = fresh().run()
    assert not at.exception
    first = specs(at)
    assert first, "the explorer shows a plotly figure"
    assert at.dataframe, "the explorer shows the parameter table"
    for name in ["poisson", "gamma", "categorical", "mvn", "bernoulli", "exponential"]:
        at.sidebar.selectbox(key="explore.family").set_value(name).run()
        assert not at.exception, name
        now = specs(at)
        assert now != first, name
        first = now
    at.sidebar.selectbox(key="explore.family").set_value("normal").run()
    before = specs(at)
    at.sidebar.slider(key="explore.normal.sigma").set_value(2.5).run()
    assert not at.exception
    assert specs(at) != before
    assert at.query_params["family"] == ["normal"] or at.query_params["family"] == "normal"


def test_explorer_reads_state_from_url():
    at = fresh()
    at.query_params["family"] = "poisson"
    at.query_params["poisson.rate"] = "12.5"
    at.run()
    assert not at.exception
    assert at.sidebar.selectbox(key="explore.family").value == "poisson"
    assert at.sidebar.slider(key="explore.poisson.rate").value == pytest.approx(12.5)
