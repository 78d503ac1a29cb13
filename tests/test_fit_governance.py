"""Fit governance on a shared server (issue 14, items 3 and 4): work budget, single flight, the server-wide
cap, cancellation, the byte-bounded store, and one sentence (never a traceback) for any failing fit."""

import threading
import time

import numpy as np
import pytest

from distviz.errors import DataError, DistvizError

st_testing = pytest.importorskip("streamlit.testing.v1")
AppTest = st_testing.AppTest

from apptest_pages import APP, as_address, chart_specs  # noqa: E402  (tests/ is on sys.path)

HEAVY = dict(family="categorical", K="6", algo="wg_nka", n="5000", p="5", rounds="500", depth="6", particles="30")


class FakeEstimator:
    """Stands in for an estimator: `rounds` rounds of `delay` seconds, progress every round, then maybe an error."""

    fits = 0

    def __init__(self, rounds=15, delay=0.02, error=None):
        self.rounds, self.delay, self.error = rounds, delay, error
        self.trace_ = None

    def fit(self, X, y, progress=None):
        type(self).fits += 1
        for r in range(1, self.rounds + 1):
            time.sleep(self.delay)
            if progress is not None:
                progress(r, self.rounds)
        if self.error is not None:
            raise self.error
        return self


def fake_estimators(monkeypatch, **kw):
    """Patch the Lab's make_estimator to hand out FakeEstimators; returns the class (its `fits` counts fit calls)."""
    from distviz.ui import fits

    cls = type("Fake", (FakeEstimator,), {"fits": 0})
    monkeypatch.setattr(fits, "make_estimator", lambda cfg: cls(**kw))
    return cls


def run_threads(fns):
    """Run the callables in threads; their results (or exceptions) in order."""
    out = [None] * len(fns)

    def call(i, f):
        try:
            out[i] = f()
        except BaseException as exc:  # noqa: BLE001 - the test inspects it
            out[i] = exc

    ts = [threading.Thread(target=call, args=(i, f)) for i, f in enumerate(fns)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(30)
    return out


def wait_for(cond, timeout=10.0):
    t0 = time.monotonic()
    while not cond():
        assert time.monotonic() - t0 < timeout, "timed out waiting"
        time.sleep(0.005)


# ------------------------------------------------------------------------------------------- budget
def test_heavy_url_is_refused_in_one_sentence_before_any_data_or_fit(monkeypatch, fresh):
    from distviz.ui import fits

    fake = fake_estimators(monkeypatch, error=DataError("the fake estimator ran"))
    loads = []
    real_load = fits.load_data
    monkeypatch.setattr(fits, "load_data", lambda *a, **k: loads.append(a) or real_load(*a, **k))
    at = AppTest.from_file(APP, default_timeout=60)
    for k, v in as_address(HEAVY).items():   # the selects' shown texts, as in a browser's address
        at.query_params[k] = v
    at.run()
    assert not at.exception
    assert len(at.error) == 1, [e.value for e in at.error]
    msg = at.error[0].value
    assert "minutes" in msg and "particles" in msg and "rounds" in msg, msg
    assert msg.count(". ") == 0 and "Error" not in msg, "one plain sentence"
    assert fake.fits == 0 and not loads, "refused before any data is generated or fitted"


def test_every_page_default_and_classroom_settings_fit_the_budget(monkeypatch):
    from distviz import families
    from distviz.ui import drifters, jobs, posterior
    from distviz.ui.algorithms import REGISTRY, compatible
    from distviz.ui.fits import FitConfig, check_fit_budget, predict_fit_seconds

    monkeypatch.delenv("DISTVIZ_MAX_FIT_SECONDS", raising=False)
    limit = jobs.max_fit_seconds()
    heavy = FitConfig(family="categorical", K=6, algorithm="wg_nka", n=5000, p=5, n_estimators=500, max_depth=6,
                      n_particles=30)
    assert predict_fit_seconds(heavy) > 2 * limit      # about 1.2 CPU-s a round: refused long before it starts
    # Lab / Evolution defaults, Split gains defaults, and every family x algorithm at the largest rows and rounds
    check_fit_budget(FitConfig())
    check_fit_budget(FitConfig(p=3, algorithm="ngd", n_estimators=50))
    for fam in families.available():
        for algo in REGISTRY:
            if compatible(algo, fam) is None:
                # NKA's full Newton solves cost about 0.2 CPU-s a round at 5000 rows: 500 rounds are at the limit
                rounds = 200 if algo == "wg_nka" else 500
                check_fit_budget(FitConfig(family=fam, K=6, algorithm=algo, n=5000, n_estimators=rounds))
    # Posterior: every option of the conditional-density view, the method comparison, the OOD demo, GP bands
    for data in posterior.CDE_DATA:
        for m in posterior.METHODS:
            check_fit_budget(FitConfig(family="normal", dataset=data, n=300, algorithm=f"wg_{m}", n_estimators=500,
                                       max_depth=4, n_particles=10))
    assert posterior.method_comparison_seconds(200, tuple(posterior.METHODS)) <= limit
    # Drifters: every option of the shipped sample and the real subset
    for rounds in (30, 60, 100, 200, 300):
        for rows in (1000, 2000, 5000, 10000, 30000):
            drifters.check_drifter_budget(rows, rounds)
    # the limit is the server's: lowering it refuses an ordinary fit with the knobs to lower
    monkeypatch.setenv("DISTVIZ_MAX_FIT_SECONDS", "0.5")
    with pytest.raises(DistvizError) as info:
        drifters.check_drifter_budget(30000, 300, upload=True)
    assert "upload fewer rows" in str(info.value)


# ------------------------------------------------------------------------------------------- single flight
def test_concurrent_requests_for_one_configuration_fit_once_and_share_the_result(monkeypatch, fresh):
    from distviz.ui.fits import FitConfig
    from distviz.ui.lab import fit_model

    fake = fake_estimators(monkeypatch)
    cfg = FitConfig(n=200, n_estimators=20, seed=7)
    a, b, c = run_threads([lambda: fit_model(cfg)] * 3)
    assert fake.fits == 1, "one fit for three concurrent requests"
    assert a is b is c


def test_concurrent_requests_share_the_same_error(monkeypatch, fresh):
    from distviz.ui.fits import FitConfig
    from distviz.ui.lab import fit_model

    fake = fake_estimators(monkeypatch, error=DataError("The fake data are bad; use other data."))
    out = run_threads([lambda: fit_model(FitConfig(n=200, seed=8))] * 2)
    assert fake.fits == 1
    assert all(isinstance(e, DataError) and "fake data" in str(e) for e in out), out


def test_drifter_comparison_runs_once_for_concurrent_requests(monkeypatch, fresh):
    import distviz.experiments.drifters as ed
    from distviz.ui.drifters import run_comparison

    calls = []

    def fake_run(data, progress=None, **kw):
        calls.append(kw)
        for i in range(10):
            time.sleep(0.02)
            progress(i / 10, f"fitting step {i}")
        return {"rounds": kw["rounds"]}

    monkeypatch.setattr(ed, "run_drifter_comparison", fake_run)
    out = run_threads([lambda: run_comparison("sample", 60, 0.1, 1000, refit=True)] * 2)
    assert len(calls) == 1 and out[0] is out[1] and out[0] == {"rounds": 60}


# ------------------------------------------------------------------------------------------- cap
def test_server_wide_cap_queues_fits_and_reports_positions(fresh):
    gov = fresh.Governor(cap=1)
    gate = threading.Event()
    running, peak, seen = [0], [0], {}
    lock = threading.Lock()

    def factory_for(name):
        def factory():
            def work(progress):
                with lock:
                    running[0] += 1
                    peak[0] = max(peak[0], running[0])
                gate.wait(10)
                progress(1, 1)
                with lock:
                    running[0] -= 1
                return name
            return work
        return factory

    def status_for(name):
        return lambda job, own, ahead: seen.setdefault(name, set()).add(ahead if job.state == "queued" else 0)

    out = [None] * 3
    threads = []
    for i, name in enumerate("abc"):
        t = threading.Thread(target=lambda i=i, name=name: out.__setitem__(
            i, gov.run(name, factory_for(name), label=name, status=status_for(name))))
        t.start()
        threads.append(t)
        wait_for(lambda n=i + 1: len(gov.jobs) == n and (gov.running == 1))
    wait_for(lambda: 2 in seen.get("c", set()) and 1 in seen.get("b", set()))
    gate.set()
    for t in threads:
        t.join(10)
    assert out == ["a", "b", "c"]
    assert peak[0] == 1 and gov.max_running_seen == 1, "never more than the cap at once"
    assert gov.running == 0 and not gov.jobs and not gov.queue


def test_waiting_page_says_how_many_fits_are_ahead(fresh):
    class Box:
        def __init__(self):
            self.calls = []

        def empty(self):
            return self

        def info(self, text, **kw):
            self.calls.append(("info", text))

        def progress(self, frac, text=""):
            self.calls.append(("progress", text))

    box = Box()
    ui = fresh.ProgressUI(box, "fitting MGD")
    job = fresh.Job("k", lambda p: None, "fitting MGD", None)
    job.state = "queued"
    ui(job, True, 3)
    ui(job, True, 3)     # unchanged: not redrawn
    job.state, job.round, job.n_rounds = "running", 5, 20
    ui(job, False, 0)
    assert box.calls[0][0] == "info" and "Waiting for 3 fits to finish" in box.calls[0][1]
    assert len(box.calls) == 2 and "another session" in box.calls[1][1] and "round 5 / 20" in box.calls[1][1]


# ------------------------------------------------------------------------------------------- cancellation
def test_fit_stops_within_one_round_when_its_session_ends(monkeypatch, fresh):
    gov = fresh.Governor(cap=1)
    alive = {"s1": True}
    monkeypatch.setattr(fresh, "current_session_id", lambda: "s1")
    monkeypatch.setattr(fresh, "session_alive", lambda sid: alive.get(sid, True))
    rounds = []

    def factory():
        def work(progress):
            for r in range(1, 10_000):
                time.sleep(0.005)
                rounds.append(r)
                progress(r, 10_000)
            return "finished"
        return work

    out = []
    t = threading.Thread(target=lambda: out.append(run_threads([lambda: gov.run("k", factory, label="k")])[0]))
    t.start()
    wait_for(lambda: len(rounds) >= 5)
    alive["s1"] = False
    n_dead = len(rounds)
    t.join(10)
    assert isinstance(out[0], fresh.FitCancelled), out
    assert len(rounds) - n_dead <= 1, "stopped within one round"
    assert gov.running == 0 and not gov.jobs, "the slot and the registry entry are released"
    monkeypatch.setattr(fresh, "current_session_id", lambda: None)
    assert gov.run("next", lambda: (lambda p: "ran"), label="next") == "ran", "the next fit gets the slot"


def test_fit_continues_for_a_waiting_session_when_the_first_session_leaves(monkeypatch, fresh):
    gov = fresh.Governor(cap=1)
    alive = {"s1": True, "s2": True}
    who = threading.local()
    monkeypatch.setattr(fresh, "current_session_id", lambda: getattr(who, "sid", None))
    monkeypatch.setattr(fresh, "session_alive", lambda sid: alive.get(sid, True))
    starts, rounds = [], []

    def factory():
        def work(progress):
            starts.append(1)
            for r in range(1, 60):
                time.sleep(0.005)
                rounds.append(r)
                progress(r, 59)
            return "shared result"
        return work

    def as_session(sid):
        def call():
            who.sid = sid
            return gov.run("k", factory, label="k")
        return call

    res = {}
    t1 = threading.Thread(target=lambda: res.update(s1=run_threads([as_session("s1")])[0]))
    t1.start()
    wait_for(lambda: len(rounds) >= 3)
    t2 = threading.Thread(target=lambda: res.update(s2=run_threads([as_session("s2")])[0]))
    t2.start()
    wait_for(lambda: len(gov.jobs.get("k").attached) == 2 if gov.jobs.get("k") else False)
    alive["s1"] = False          # the first tab closes; the second session still waits
    t1.join(10)
    t2.join(10)
    assert res["s2"] == "shared result" and len(starts) == 1, "the fit went on for the waiting session"


# ------------------------------------------------------------------------------------------- store
def test_store_is_bounded_by_bytes_and_evicts_least_recently_used():
    import xarray as xr

    from distviz.ui.jobs import ResultStore, nbytes

    class Holder:
        def __init__(self, nbytes_):
            self.arr = np.zeros(nbytes_ // 8)
            self.view = self.arr[::2]                  # a view is not counted twice
            self.ds = xr.Dataset({"v": ("x", np.zeros(16))})

    assert nbytes(Holder(4000)) == 4000 + 16 * 8
    store = ResultStore(max_bytes=10_000)
    store.put("a", Holder(4000))
    store.put("b", Holder(4000))
    assert store.get("a") is not None            # "a" is now the most recently used
    store.put("c", Holder(4000))
    assert store.get("b") is None and store.get("a") is not None and store.get("c") is not None
    assert store.bytes <= store.max_bytes
    big = Holder(20_000)
    assert store.put("big", big) is False and store.get("big") is None, "larger than the cap: not kept"
    assert len(store.items) == 2


def test_store_measures_a_real_wgboost_model():
    from distviz.estimators import WGBoost
    from distviz.ui.jobs import nbytes

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 1))
    m = WGBoost("normal", n_particles=5, n_estimators=10, init_rounds=50, random_state=0).fit(X, X[:, 0] + rng.normal(size=200))
    assert nbytes(m) >= m.trace_.nbytes > 0


# ------------------------------------------------------------------------------------------- catch-all
def test_any_exception_from_a_fit_is_one_sentence_and_the_last_chart_stays(monkeypatch, fresh, caplog):
    from distviz.ui import fits

    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["n"] = "200"
    at.query_params["rounds"] = "20"
    at.run()
    assert not at.exception and not at.error
    n_charts = len(chart_specs(at))   # figures, each panel of a combined chart counted
    assert n_charts >= 2
    fake_estimators(monkeypatch, rounds=2, error=np.linalg.LinAlgError("Singular matrix"))
    at.sidebar.selectbox(key="family").set_value("poisson").run()
    assert not at.exception
    assert len(at.error) == 1, [e.value for e in at.error]
    msg = at.error[0].value
    assert "LinAlgError" not in msg and "Traceback" not in msg and "Singular" not in msg
    assert len(chart_specs(at)) == n_charts, "the last good result stays on the page"
    assert any("failed unexpectedly" in r.getMessage() for r in caplog.records), "logged on the server"
    assert fits.model_store().get(("lab", fits.FitConfig(family="poisson", n=200, n_estimators=20).key())) is None
