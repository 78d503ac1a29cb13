"""Several app servers behind Caddy (`distviz app --workers N`, distviz.ui.workers) and the fits they share
(distviz.ui.shared_fits)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from distviz.ui import shared_fits, workers

ROOT = Path(__file__).resolve().parents[1]


def test_a_fit_written_by_one_server_is_read_by_the_next_and_predicts_the_same(tmp_path, monkeypatch):
    from distviz.estimators import DistributionalBoosting

    monkeypatch.setenv(shared_fits.ENV, str(tmp_path))
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 2))
    y = rng.poisson(np.exp(0.4 * X[:, 0])).astype(float)
    calls = []

    def fit():
        calls.append(1)
        return DistributionalBoosting("poisson", n_estimators=5).fit(X, y), 1.25

    key = ("lab", (("algorithm", "mgd"), ("n", 300)))
    first, s1 = shared_fits.shared_fit(key, fit)
    second, s2 = shared_fits.shared_fit(key, fit)   # as another server of the run asks for the same settings
    assert len(calls) == 1 and s1 == s2 == 1.25
    assert second is not first
    np.testing.assert_array_equal(second.predict_mean(X), first.predict_mean(X))
    other, _ = shared_fits.shared_fit(("lab", (("n", 200),)), fit)   # other settings: fitted
    assert len(calls) == 2
    # a damaged file is fitted again and replaced, never trusted
    for f in tmp_path.glob("*.nc"):
        f.write_bytes(b"not a model")
    shared_fits.shared_fit(key, fit)
    assert len(calls) == 3


def test_without_a_shared_folder_every_fit_runs(monkeypatch):
    monkeypatch.delenv(shared_fits.ENV, raising=False)
    calls = []
    shared_fits.shared_fit("k", lambda: (calls.append(1), 0.0))
    shared_fits.shared_fit("k", lambda: (calls.append(1), 0.0))
    assert len(calls) == 2


def test_workers_auto_is_one_server_per_core_up_to_the_cap(monkeypatch):
    """`make serve` asks for --workers auto: one server per core, at most MAX_AUTO_WORKERS; a number is taken as it
    is, anything else is refused in one sentence."""
    from distviz.ui import workers

    for cores, want in [(1, 1), (2, 2), (16, workers.MAX_AUTO_WORKERS), (None, 1)]:
        monkeypatch.setattr(workers.os, "cpu_count", lambda c=cores: c)
        assert workers.workers_for("auto") == want
    assert workers.workers_for("3") == 3 and workers.workers_for(2) == 2
    for bad in ("0", "-1", "two", "1.5"):
        with pytest.raises(ValueError, match="--workers"):
            workers.workers_for(bad)
    assert "WORKERS ?= auto" in (Path(__file__).resolve().parents[1] / "Makefile").read_text()


def test_the_proxy_configuration_keeps_a_browser_on_one_server():
    conf = workers.caddyfile("0.0.0.0", 8501, [40001, 40002])
    assert "bind 0.0.0.0" in conf and "http://:8501" in conf
    assert "reverse_proxy 127.0.0.1:40001 127.0.0.1:40002" in conf
    assert f"lb_policy cookie {workers.COOKIE}" in conf and "admin off" in conf and "auto_https off" in conf


@pytest.mark.skipif(workers.caddy_executable() is None, reason="Caddy (the [serve] extra) is not installed")
def test_two_servers_behind_caddy_serve_the_app_with_a_sticky_cookie_and_stop_together():
    port = workers._free_port()
    env = dict(os.environ, PYTHONPATH=str(ROOT), DISTVIZ_WARM_START="0")
    proc = subprocess.Popen([sys.executable, "-m", "distviz", "app", "--workers", "2", "--port", str(port)],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        page = None
        for _ in range(240):
            assert proc.poll() is None, proc.stdout.read().decode(errors="replace")[-2000:]
            try:
                page = urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2)
                break
            except OSError:
                time.sleep(0.25)
        assert page is not None and page.status == 200
        assert "Caddy" in page.headers.get("Via", "")
        cookies = page.headers.get_all("Set-Cookie") or []
        assert any(c.startswith(f"{workers.COOKIE}=") for c in cookies), cookies
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=5) as r:
            assert r.status == 200
        children = subprocess.run(["pgrep", "-g", str(os.getpgid(proc.pid))], capture_output=True,
                                  text=True).stdout.split()
        assert len(children) >= 4   # the launcher, two servers and Caddy
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    time.sleep(0.5)
    left = subprocess.run(["pgrep", "-g", str(proc.pid)], capture_output=True, text=True).stdout.split()
    assert left == [], f"processes of the run still alive: {left}"
