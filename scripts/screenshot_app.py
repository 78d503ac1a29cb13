"""Take the README's screenshot of the app: docs/_static/app.png.

Starts ``python -m distviz app`` on a free 127.0.0.1 port, opens a page (default: Evolution, whose view shows no
measured timing, unlike the Lab's fit-time metric) in headless Chromium (Playwright, the system's ``chromium``),
waits until the page has settled and its charts are drawn, and writes a palette PNG (the screenshot quantised to
256 colours, so that it stays small).  Run from the repository root::

    python scripts/screenshot_app.py [--page PATH] [--out docs/_static/app.png]
"""

from __future__ import annotations

import argparse
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

SETTLED = """(n) => !document.querySelector('[data-testid="stStatusWidget"]')
             && !document.querySelector('[data-testid="stSkeleton"]')
             && document.querySelectorAll('.js-plotly-plot').length >= n"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_healthy(url: str, proc: subprocess.Popen, timeout_s: float) -> None:
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("distviz app exited before it answered")
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"distviz app did not answer within {timeout_s:.0f} s")


def shoot(page_path: str, out: Path, n_plots: int, width: int, height: int) -> None:
    """Serve the app, screenshot `page_path` at width x height once `n_plots` charts are drawn, save to `out`."""
    from PIL import Image
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium")
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen([sys.executable, "-m", "distviz", "app", "--address", "127.0.0.1",
                                 "--port", str(port)], stdout=log, stderr=subprocess.STDOUT)
        try:
            _wait_healthy(url, proc, 120)
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
                page = browser.new_page(viewport={"width": width, "height": height})
                page.goto(f"{url}/{page_path}", wait_until="domcontentloaded")
                page.wait_for_selector('[data-testid="stApp"]', timeout=180000)
                page.wait_for_function(SETTLED, arg=n_plots, timeout=180000, polling=200)
                page.wait_for_timeout(2000)
                page.wait_for_function(SETTLED, arg=n_plots, timeout=180000, polling=200)
                raw = out.with_suffix(".raw.png")
                page.screenshot(path=str(raw))
                browser.close()
        finally:
            proc.terminate()
            proc.wait(timeout=20)
    img = Image.open(raw).convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT)
    img.save(out, optimize=True)
    raw.unlink()
    print(f"{out}: {out.stat().st_size // 1024} KiB, {img.size[0]}x{img.size[1]}")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--page", default="evolution", help="page path after the server's URL, e.g. evolution?round=30")
    p.add_argument("--out", type=Path, default=Path("docs/_static/app.png"))
    p.add_argument("--plots", type=int, default=3, help="charts to wait for")
    p.add_argument("--width", type=int, default=1280)
    p.add_argument("--height", type=int, default=880)
    a = p.parse_args(argv)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    shoot(a.page, a.out, a.plots, a.width, a.height)


if __name__ == "__main__":
    main()
