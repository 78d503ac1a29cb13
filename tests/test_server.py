"""`make run` as a classroom server must stay on this machine (issue 14, item 5).

The server is started exactly as the Makefile's `run` target starts it (only a free port is added), under a
Python audit hook that records every socket bind, connect, send and name look-up of the server process.
Pages are then loaded as a browser would (their HTML, the health and host-config endpoints, a websocket
session that runs the script of every page but Posterior, whose fits take long) and a websocket and an HTTP
request arrive with a foreign Origin, which is what makes Streamlit look up the machine's external address.
Afterwards: no socket touched anything but loopback, the server listened on 127.0.0.1 only, the foreign
origin was refused, and the config keeps XSRF, CORS, the 20 MB upload cap and hides error details.
`make serve` is checked the same way: it listens on every interface, prints the URLs, and sends nothing.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import os
import re
import shlex
import socket
import subprocess
import sys
import time
import tomllib
import urllib.request
from pathlib import Path

import pytest

from distviz.data.paths import package_file

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["", "evolution", "split_gains", "drifters", "posterior", "explorer"]
SCRIPT_PAGES = ["", "evolution", "split_gains", "drifters", "explorer"]  # run over the websocket (posterior: slow fits)
FOREIGN = "http://attacker.example"

#: Runs in the server process before Streamlit: logs every network-relevant audit event as one JSON line.
HOOK = r"""
import json, os, runpy, sys
_log = open(os.environ["DISTVIZ_NETLOG"], "a", buffering=1)
_EVENTS = {"socket.bind": 1, "socket.connect": 1, "socket.sendto": 2, "socket.sendmsg": 2,
           "socket.getaddrinfo": None, "socket.gethostbyname": 0, "socket.gethostbyname_ex": 0,
           "socket.gethostbyaddr": 0, "socket.getnameinfo": 0}
def _hook(event, args):
    if event in _EVENTS:
        i = _EVENTS[event]
        where = args[0:2] if i is None else args[i] if i < len(args) else None
        if isinstance(where, tuple):
            where = list(where)
        _log.write(json.dumps([event, where], default=repr) + "\n")
sys.addaudithook(_hook)
module, sys.argv = sys.argv[1], sys.argv[1:]
runpy.run_module(module, run_name="__main__", alter_sys=True)
"""


def make_command(target: str, **variables: str) -> tuple[str, list[str]]:
    """(module, arguments) of a Makefile recipe, with `$(NAME)` variables filled from `variables`, else from the
    Makefile's own ``NAME ?= value`` defaults.

    `$(BIN)/streamlit X` counts as `-m streamlit X` and `$(BIN)/distviz X` as `-m distviz X`, so the test follows
    whatever the recipe starts.
    """
    makefile = (ROOT / "Makefile").read_text()
    found = re.search(rf"^{target}:.*\n((?:\t.*\n)+)", makefile, re.M)
    assert found, f"the Makefile has no `{target}` target"
    recipe = found.group(1).strip().splitlines()[-1].strip()
    recipe = recipe.replace("$(BIN)/python", "python").replace("$(BIN)/streamlit", "python -m streamlit")
    recipe = recipe.replace("$(BIN)/distviz", "python -m distviz")
    if "$(PORT)" not in recipe and "PORT" in variables:  # a recipe without a port variable: add the port only
        recipe += f" --server.port {variables['PORT']}"
    defaults = dict(re.findall(r"^(\w+) \?= (.*)$", makefile, re.M))   # `NAME ?= value`: what make would use
    for name, value in {**defaults, **variables}.items():
        recipe = recipe.replace(f"$({name})", value.strip())
    words = shlex.split(recipe)
    i = words.index("-m")
    return words[i + 1], words[i + 2:]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _host(where) -> str | None:
    """The host part of an audit event's address (None for a Unix socket path or an empty look-up)."""
    if isinstance(where, list) and where:
        where = where[0]
    if isinstance(where, bytes):
        where = where.decode(errors="replace")
    if where in (None, ""):
        return "" if where == "" else None
    return str(where) if not str(where).startswith("/") else None


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


def _get(url: str, headers: dict | None = None) -> int:
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            r.read()
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def _ws_handshake(port: int, origin: str) -> str:
    """Status line of a websocket upgrade of /_stcore/stream sent with the given Origin."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall((f"GET /_stcore/stream HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
                   "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                   f"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: streamlit\r\nOrigin: {origin}\r\n\r\n").encode())
        return s.recv(4096).split(b"\r\n", 1)[0].decode()


async def _run_pages(port: int, pages: list[str]) -> list[str]:
    """Open one websocket session (same origin, as the browser) and run each page's script; failures seen."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from load import Session
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    s = Session(f"ws://127.0.0.1:{port}/_stcore/stream", timeout=240)
    await s.connect()
    failures = []
    try:
        for page in pages:
            res = await s.action(page=page)
            failures += [f"{page or 'lab'}: {f}" for f in res.failures]
    finally:
        await s.close()
    return failures


class Served:
    """A Makefile target's server started under the audit hook on a free port; stopped by its PID."""

    def __init__(self, target: str, log: Path, **variables: str):
        self.port = _free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = log
        module, args = make_command(target, PORT=str(self.port), **variables)
        env = {**os.environ, "DISTVIZ_NETLOG": str(log), "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
        cmd = [sys.executable, "-c", HOOK, module, *args]   # the packaged settings only (no watcher among them)
        # the console goes to a file, not a pipe that nobody reads while the test runs (a full pipe blocks the server)
        self.console = log.with_suffix(".console")
        with open(self.console, "wb") as out:
            self.proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        for _ in range(240):
            if self.proc.poll() is not None:
                pytest.fail(f"`make {target}` exited on start-up:\n{self._output()}")
            try:
                urllib.request.urlopen(self.base + "/_stcore/health", timeout=2)
                return
            except OSError:
                time.sleep(0.25)
        self.stop()
        pytest.fail(f"`make {target}` did not answer /_stcore/health within 60 s")

    def _output(self) -> str:
        return self.console.read_text(errors="replace")

    def stop(self) -> str:
        """Terminate the server; its console output."""
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        return self._output()

    def events(self) -> list[list]:
        """The audit events the server logged: [event, address]."""
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]


def outbound(events: list[list], *, wildcard_bind: bool = False) -> list[str]:
    """Every logged event that reaches beyond loopback (and a non-loopback bind unless `wildcard_bind`)."""
    bad = []
    for event, where in events:
        host = _host(where)
        if host is None:
            continue
        if event == "socket.bind":
            if not _is_loopback(host) and not (wildcard_bind and host in ("", "0.0.0.0", "::")):
                bad.append(f"listens on {host or 'every interface'} ({where})")
        elif event == "socket.getaddrinfo" and host == "":
            continue  # resolving the wildcard for a listening socket; a bind to it is caught above
        elif not _is_loopback(host):
            bad.append(f"{event} {where}")
    return sorted(set(bad))


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """`make run` under the audit hook after a browser-like visit of every page: (log events, results)."""
    pytest.importorskip("websockets")
    srv = Served("run", tmp_path_factory.mktemp("net") / "run.jsonl")
    base, port, out = srv.base, srv.port, {}
    try:
        out["pages"] = {p: _get(f"{base}/{p}") for p in PAGES}
        out["endpoints"] = {p: _get(base + p) for p in ("/_stcore/health", "/_stcore/host-config")}
        out["foreign_http"] = _get(base + "/_stcore/host-config", {"Origin": FOREIGN})
        out["foreign_ws"] = _ws_handshake(port, FOREIGN)
        out["same_ws"] = _ws_handshake(port, base)
        out["script_failures"] = asyncio.run(_run_pages(port, SCRIPT_PAGES))
        out["foreign_ws_again"] = _ws_handshake(port, "http://another.example:8080")
    finally:
        out["console"] = srv.stop()
    return srv.events(), out


def test_the_run_server_touches_nothing_but_loopback(served):
    events, out = served
    assert all(code == 200 for code in out["pages"].values()), out["pages"]
    assert not out["script_failures"], out["script_failures"]
    bad = outbound(events)
    assert not bad, "the server reached beyond this machine:\n" + "\n".join(bad)
    assert any(e == "socket.bind" for e, _ in events), "the audit hook saw no bind: it did not run in the server"


def test_foreign_origins_are_refused_and_the_browser_origin_is_accepted(served):
    _, out = served
    assert " 101 " in out["same_ws"] + " ", out["same_ws"]
    assert " 101 " not in out["foreign_ws"] + " " and " 101 " not in out["foreign_ws_again"] + " ", out["foreign_ws"]


def test_run_prints_only_the_local_address(served):
    _, out = served
    urls = re.findall(r"URL:\s*(\S+)", out["console"])
    assert urls and all(re.match(r"https?://(127\.0\.0\.1|localhost)[:/]", u) for u in urls), out["console"][-2000:]
    # the packaged settings start no file watcher (issue 29: a served app's log filled with inotify overflows)
    assert not re.search(r"inotify|watchdog|file watcher", out["console"], re.I), out["console"][-2000:]


def test_config_keeps_the_safety_settings():
    cfg = tomllib.loads(package_file("distviz.ui", "app", "config.toml").read_text())
    server, client, browser = cfg.get("server", {}), cfg.get("client", {}), cfg.get("browser", {})
    assert server.get("address") == "127.0.0.1"
    assert server.get("maxUploadSize") == 20
    assert server.get("enableXsrfProtection", True) is True and server.get("enableCORS", True) is True
    assert server.get("headless") is True and browser.get("gatherUsageStats") is False
    assert client.get("showErrorDetails") == "none"


def test_the_served_app_watches_no_files():
    """Issue 29: a served app's log filled with inotify-overflow lines.  `distviz app` passes the packaged
    settings on Streamlit's command line: no file watcher (no inotify handles, no overflow) and no rerun on save."""
    from distviz.ui.serve import config_flags

    flags = config_flags()
    assert "--server.fileWatcherType=none" in flags and "--server.runOnSave=false" in flags


def test_serve_opens_the_network_on_purpose_prints_the_urls_and_still_sends_nothing(tmp_path):
    from distviz.ui.serve import local_addresses

    # one server, whose own binds are audited (Caddy in front of several: tests/test_workers.py)
    srv = Served("serve", tmp_path / "serve.jsonl", ADDRESS="0.0.0.0", WORKERS="1")
    try:
        foreign = _ws_handshake(srv.port, FOREIGN)
        same = _ws_handshake(srv.port, srv.base)
    finally:
        console = srv.stop()
    events = srv.events()
    assert any(e == "socket.bind" and _host(w) in ("", "0.0.0.0", "::") for e, w in events), "serve binds every interface"
    bad = outbound(events, wildcard_bind=True)
    assert not bad, "make serve reached beyond this machine:\n" + "\n".join(bad)
    assert "Students open" in console
    for addr in local_addresses():
        assert f"http://{addr}:{srv.port}" in console, console[-2000:]
    assert " 101 " in same + " " and " 101 " not in foreign + " ", (same, foreign)


def test_an_unexpected_error_shows_no_message_path_or_traceback(monkeypatch):
    from streamlit import config
    from streamlit.testing.v1 import AppTest

    monkeypatch.chdir(ROOT)
    config.get_config_options(force_reparse=True)  # the checkout's .streamlit/config.toml: a link to the packaged one
    at = AppTest.from_string("raise ValueError('secret in /srv/distviz/app.py')").run()
    (exc,) = at.exception
    assert "secret" not in exc.message and "/srv/distviz" not in exc.message, exc.message
    assert not exc.stack_trace
