"""App speed: first paint of every page in headless Chromium (warm server), AppTest slider rerun, default fits.

Goals (issue 8): first paint <= 4 s per page with a warm server on the default data; a slider rerun in
AppTest <= 0.2 s; default fits <= 5 s.  Run: .venv/bin/python benchmarks/app.py [--skip-browser]
Chromium is Debian's (/usr/bin/chromium); the browser part is skipped with a message when it is absent.
"""

from __future__ import annotations

import argparse
import shutil
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PAGES = [("", "Lab", 2), ("evolution", "Evolution", 4), ("split_gains", "Split gains", 5),
         ("drifters", "Drifters", 2), ("posterior", "Posterior", 4), ("explorer", "Family explorer", 1)]
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
SETTLED = """(n) => !document.querySelector('[data-testid="stStatusWidget"]')
                && !document.querySelector('[data-testid="stSkeleton"]')
                && document.querySelectorAll('.js-plotly-plot').length >= n"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def default_fits() -> dict:
    """Seconds of the pages' default fits, each fitted directly (no cache), after a warm-up fit."""
    import numpy as np

    from distviz.ui.lab import FitConfig, load_data, make_estimator

    out = {}
    for name, cfg in [("Lab / Evolution: MGD Normal, n=500, 100 rounds", FitConfig()),
                      ("Evolution companion: NGD Normal", FitConfig(algorithm="ngd")),
                      ("WGBoost SKA Normal, 10 particles, 100 rounds", FitConfig(algorithm="wg_ska")),
                      ("Posterior: SKA on Old Faithful, depth 1", FitConfig(dataset="faithful", algorithm="wg_ska", max_depth=1)),
                      ("NGBoost (mu, log sigma)", FitConfig(algorithm="ngboost")),
                      ("sparse GP (ELBO)", FitConfig(algorithm="sgp_elbo"))]:
        data = load_data(cfg)
        make_estimator(cfg).fit(data.X, data.y)  # warm-up (numba compilation, caches)
        t0 = time.perf_counter()
        with np.errstate(all="ignore"):
            make_estimator(cfg).fit(data.X, data.y)
        out[name] = time.perf_counter() - t0
    from distviz.ui.drifters import available_sources
    from distviz.experiments.drifters import run_drifter_comparison
    from distviz.data.paths import shared_data_path

    src = available_sources()[0]
    data = str(shared_data_path("drifters", "gdp_north_atlantic_subset.csv")) if src == "real" else "sample"
    t0 = time.perf_counter()
    run_drifter_comparison(data, rounds=30, learning_rate=0.1, patience=10, methods=("NGB", "IndepNGB"),
                           max_train=None if src == "real" else 2000, mixture_samples=100)
    out[f"Drifters: NGB + IndepNGB, 30 rounds ({src})"] = time.perf_counter() - t0
    return out


def slider_rerun(repeats: int = 7) -> dict:
    """Median seconds of an AppTest rerun after moving the round slider (Evolution, Split gains)."""
    from streamlit.testing.v1 import AppTest

    out = {}
    for path, key in [("app_pages/evolution.py", "evo.round"), ("app_pages/split_gains.py", "split.round")]:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300).run()
        at.switch_page(path)
        at.run()
        times = []
        for i in range(repeats):
            t0 = time.perf_counter()
            at.slider(key=key).set_value(1 + (7 * i) % 90).run()
            times.append(time.perf_counter() - t0)
            assert not at.exception, at.exception
        out[path.split("/")[-1]] = statistics.median(times)
    return out


BASELINE = """import plotly.graph_objects as go
import streamlit as st

st.title("baseline")
st.plotly_chart(go.Figure(go.Scatter(x=[1, 2, 3], y=[1, 3, 2])))
"""


def _serve(script: Path, cwd: Path):
    """Start `streamlit run script` on a free 127.0.0.1 port; (process, url) once it answers."""
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(script), "--server.address", "127.0.0.1",
                             "--server.port", str(port), "--server.headless", "true", "--server.fileWatcherType", "none",
                             "--browser.gatherUsageStats", "false"], cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            urllib.request.urlopen(url + "/_stcore/health", timeout=2)
            break
        except OSError:
            time.sleep(0.3)
    return proc, url


def _paint(browser, url: str, n: int) -> float:
    ctx = browser.new_context(viewport={"width": 1400, "height": 1600})
    page = ctx.new_page()
    t0 = time.perf_counter()
    page.goto(url, wait_until="domcontentloaded")
    page.wait_for_function(SETTLED, arg=n, timeout=600_000, polling=100)
    dt = time.perf_counter() - t0
    ctx.close()
    return dt


def first_paint() -> dict:
    """Seconds from navigation to all plots drawn, per page, on a warm server (each page opened once before).

    The same is measured for a one-chart Streamlit page ("baseline"): the floor of this machine and browser.
    """
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(chromium).exists():
        print("first paint: skipped (Debian's chromium is not installed: apt-get install -y chromium)")
        return {}
    import tempfile

    from playwright.sync_api import sync_playwright

    out = {}
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=chromium, args=ARGS, headless=True)
        base = Path(tmp) / "baseline.py"
        base.write_text(BASELINE)
        proc, url = _serve(base, Path(tmp))
        try:
            _paint(b, url, 1)
            out["baseline: one-chart Streamlit page"] = statistics.median(_paint(b, url, 1) for _ in range(3))
        finally:
            proc.terminate()
            proc.wait(timeout=20)
        proc, url = _serve(ROOT / "app.py", ROOT)
        try:
            for path, name, n in PAGES:  # warm-up: fits land in the server's cache
                _paint(b, f"{url}/{path}", n)
            for path, name, n in PAGES:
                out[name] = _paint(b, f"{url}/{path}", n)
        finally:
            proc.terminate()
            proc.wait(timeout=20)
        b.close()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--skip-browser", action="store_true", help="skip the Chromium first-paint measurement")
    a = ap.parse_args()
    print("== default fits (goal <= 5 s)")
    for k, v in default_fits().items():
        print(f"  {k:55s} {v:6.2f} s  {'ok' if v <= 5 else 'SLOW'}")
    print("== AppTest rerun after moving the round slider (goal <= 0.2 s, median of 7)")
    for k, v in slider_rerun().items():
        print(f"  {k:55s} {v:6.3f} s  {'ok' if v <= 0.2 else 'SLOW'}")
    if not a.skip_browser:
        print("== first paint in headless Chromium, warm server (goal <= 4 s)")
        res = first_paint()
        base = res.get("baseline: one-chart Streamlit page")
        for k, v in res.items():
            ratio = f"  ({v / base:4.1f}x baseline)" if base and not k.startswith("baseline") else ""
            print(f"  {k:55s} {v:6.2f} s  {'ok' if v <= 4 else 'SLOW'}{ratio}")


if __name__ == "__main__":
    main()
