"""Real-browser check: Playwright drives Debian's Chromium against `distviz app` on 127.0.0.1.

Every page is opened, the test waits for its plots, takes a screenshot into `.screenshots/`
(git-ignored), and fails when a request leaves 127.0.0.1 or the page shows an exception.
Skipped with a reason when chromium or playwright is absent.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlparse

import pytest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
SHOTS = ROOT / ".screenshots"
CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None)
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]

#: (url path, name of the screenshot, minimum number of plotly charts to wait for)
PAGES = [
    ("", "lab", 2),
    ("evolution", "evolution", 3),
    ("split_gains", "split_gains", 1),
    ("drifters", "drifters", 2),
    ("posterior", "posterior", 1),
    ("explorer", "explorer", 1),
]


#: the console file of each running test server, by its URL (read by `server_log`)
_LOGS: dict = {}


def server_log(url: str) -> str:
    """What the test server at `url` has printed so far (its console file), or '' when it is not known."""
    log = _LOGS.get(url)
    if log is None:
        return ""
    log.flush()
    with open(log.name, errors="replace") as f:
        return f.read()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serving(distviz: list[str], cwd: Path, env: dict | None = None, start_s: float = 60):
    """Run `distviz app` (the command `distviz`, such as ``[python, "-m", "distviz"]``) on a free 127.0.0.1 port
    from the folder `cwd`; yield its URL once /_stcore/health answers (within `start_s` seconds); stop it by its PID."""
    port = _free_port()
    cmd = [*distviz, "app", "--address", "127.0.0.1", "--port", str(port)]
    # the console goes to a file, not a pipe: nobody reads a pipe while the tests run, and a server that filled
    # its 64 KiB would block on its next write (seen: a download that never came in the full suite)
    log = tempfile.NamedTemporaryFile()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + start_s
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                time.sleep(0.3)
            if proc.poll() is not None:
                log.seek(0)
                raise RuntimeError(f"streamlit exited early:\n{log.read().decode(errors='replace')}")
        else:
            raise RuntimeError(f"streamlit did not answer within {start_s:.0f} s")
        _LOGS[url] = log
        yield url
    finally:
        _LOGS.pop(url, None)
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture(scope="module")
def server():
    """`distviz app` of this checkout on a free 127.0.0.1 port, for this module."""
    if CHROMIUM is None:
        pytest.skip("Debian's chromium is not installed (apt-get install -y chromium); the browser test needs it")
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
    with serving([sys.executable, "-m", "distviz"], ROOT) as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    """A headless Chromium launched through Playwright (never downloads a browser)."""
    if CHROMIUM is None:
        pytest.skip("Debian's chromium is not installed (apt-get install -y chromium); the browser test needs it")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


def open_page(browser, url: str, n_plots: int, shot: Path, timeout_ms: int = 120000) -> dict:
    """Open `url`, wait for the app to settle and `n_plots` plotly charts, screenshot; return what was seen: the
    requests, the text of exception elements, the seconds to the first paint and the page's text."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 2400})  # Streamlit scrolls inside: a tall viewport
    page = ctx.new_page()
    requests = []
    page.on("request", lambda req: requests.append(req.url))
    t0 = time.perf_counter()
    page.goto(url, wait_until="domcontentloaded")
    page.wait_for_selector('[data-testid="stApp"]', timeout=timeout_ms)
    # the app is busy while the status widget is shown; wait until it has gone and the charts are drawn
    settled = """(n) => !document.querySelector('[data-testid="stStatusWidget"]')
                 && !document.querySelector('[data-testid="stSkeleton"]')
                 && document.querySelectorAll('.js-plotly-plot').length >= n"""
    page.wait_for_function(settled, arg=n_plots, timeout=timeout_ms, polling=200)
    first_paint = time.perf_counter() - t0
    page.wait_for_timeout(1000)  # a rerun may start right after the first paint: wait for it to settle too
    page.wait_for_function(settled, arg=n_plots, timeout=timeout_ms, polling=200)
    shot.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(shot), full_page=True)
    n_exc = page.locator('[data-testid="stException"]').count()
    exc_text = page.locator('[data-testid="stException"]').all_inner_texts() if n_exc else []
    text = page.inner_text("body")
    ctx.close()
    return {"requests": requests, "exceptions": exc_text, "first_paint": first_paint, "text": text}


@pytest.mark.parametrize("path,name,n_plots", PAGES, ids=[p[1] for p in PAGES])
def test_page_in_browser(server, browser, path, name, n_plots):
    seen = open_page(browser, f"{server}/{path}", n_plots, SHOTS / f"{name}.png")
    outside = [u for u in seen["requests"]
               if urlparse(u).scheme in ("http", "https", "ws", "wss") and urlparse(u).hostname != "127.0.0.1"]
    assert not outside, f"requests left 127.0.0.1: {outside[:5]}"
    assert not seen["exceptions"], f"page {name!r} shows an exception: {seen['exceptions'][0][:500]}"


#: (url path, tab label, number of plotly charts in that tab, name of the screenshot)
TABS = [
    ("split_gains", "Gain^NGD vs Gain^ent", 2, "split_gains_scatter"),  # named after the NGD default's gain
    ("evolution", "Geometry: η vs η* paths", 1, "evolution_geometry"),
    ("posterior", "Particles and NLL", 2, "posterior_particles"),
]


@pytest.mark.parametrize("path,label,n_plots,name", TABS, ids=[t[3] for t in TABS])
def test_lazy_tab_in_browser(server, browser, path, label, n_plots, name):
    """A click on a lazy tab runs its content: the tab's charts appear, nothing leaves 127.0.0.1, no exception."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 2400})
    page = ctx.new_page()
    requests = []
    page.on("request", lambda req: requests.append(req.url))
    page.goto(f"{server}/{path}", wait_until="domcontentloaded")
    page.wait_for_selector('.js-plotly-plot', timeout=120000)
    page.get_by_role("tab", name=label).click()
    page.wait_for_function("""([n, label]) => !document.querySelector('[data-testid="stStatusWidget"]')
        && [...document.querySelectorAll('[role="tabpanel"]')].some(p => !p.hidden
             && p.querySelectorAll('.js-plotly-plot').length >= n)""", arg=[n_plots, label], timeout=120000, polling=200)
    page.wait_for_timeout(500)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)
    n_exc = page.locator('[data-testid="stException"]').count()
    url = page.url
    ctx.close()
    outside = [u for u in requests
               if urlparse(u).scheme in ("http", "https", "ws", "wss") and urlparse(u).hostname != "127.0.0.1"]
    assert not outside, f"requests left 127.0.0.1: {outside[:5]}"
    assert n_exc == 0, f"{path}: the {label!r} tab shows an exception"
    assert "view=" in url, f"the open tab is in the page address: {url}"
