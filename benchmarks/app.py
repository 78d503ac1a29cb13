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
         ("drifters", "Drifters", 2), ("posterior", "Posterior", 3), ("explorer", "Family explorer", 1)]
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


def first_paint() -> dict:
    """Seconds from navigation to all plots drawn, per page, on a warm server (each page opened once before)."""
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(chromium).exists():
        print("first paint: skipped (Debian's chromium is not installed: apt-get install -y chromium)")
        return {}
    from playwright.sync_api import sync_playwright

    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.address", "127.0.0.1",
                             "--server.port", str(port), "--server.headless", "true", "--server.fileWatcherType", "none",
                             "--browser.gatherUsageStats", "false"], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    out = {}
    try:
        for _ in range(200):
            try:
                urllib.request.urlopen(url + "/_stcore/health", timeout=2)
                break
            except OSError:
                time.sleep(0.3)
        with sync_playwright() as pw:
            b = pw.chromium.launch(executable_path=chromium, args=ARGS, headless=True)
            for warm in (True, False):
                for path, name, n in PAGES:
                    ctx = b.new_context(viewport={"width": 1400, "height": 1600})
                    page = ctx.new_page()
                    t0 = time.perf_counter()
                    page.goto(f"{url}/{path}", wait_until="domcontentloaded")
                    page.wait_for_function(SETTLED, arg=n, timeout=600_000, polling=100)
                    if not warm:
                        out[name] = time.perf_counter() - t0
                    ctx.close()
            b.close()
    finally:
        proc.terminate()
        proc.wait(timeout=20)
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
        for k, v in first_paint().items():
            print(f"  {k:55s} {v:6.2f} s  {'ok' if v <= 4 else 'SLOW'}")


if __name__ == "__main__":
    main()
