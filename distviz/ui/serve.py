"""Start the app: on this machine only (`distviz app`, `make run`), or deliberately for a class on the network
(`distviz app --address 0.0.0.0`, `make serve`).

`distviz app` (also `python -m distviz.ui.serve`) runs `streamlit run` on the packaged app
(distviz/ui/app/app.py) with every setting of the packaged distviz/ui/app/config.toml on Streamlit's command line,
so that they hold whatever folder it is started from (127.0.0.1 only, no usage statistics, no error details, XSRF
and origin checks, 20 MB uploads, no file watcher); the fit governor's limits are read from the DISTVIZ_*
environment variables by distviz.ui.jobs in the server process. It first switches off the two address
look-ups Streamlit makes by itself: the *external* address (an HTTP request to checkip.amazonaws.com when it
prints its URLs in headless mode and again for every websocket that arrives with a foreign Origin) and the
*internal* address (a UDP socket connected to 8.8.8.8).  The internal address then comes from this machine's
own interface table and the external one is unknown, so the server sends nothing anywhere.

`distviz app --address 0.0.0.0 [--port 8501]` listens on the network instead and prints the address of every
network interface, the URLs students open.  Other arguments go to `streamlit run` (after the packaged settings,
so an explicit ``--server.fileWatcherType auto`` and the like win).
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import socket
import struct
import sys
import tomllib
from pathlib import Path

from distviz.data.paths import package_file

WILDCARD = {"0.0.0.0", "::", ""}


def app_script() -> Path:
    """The packaged app's main script (distviz/ui/app/app.py)."""
    return package_file("distviz.ui", "app", "app.py")


def config_flags(address: str | None = None, port: int | None = None) -> list[str]:
    """The packaged Streamlit settings (distviz/ui/app/config.toml) as `streamlit run` options, ``--section.key=value``.

    Parameters
    ----------
    address : str, optional
        Listen on this address instead of the packaged one (127.0.0.1).
    port : int, optional
        Listen on this port (Streamlit's default 8501 when None).

    Returns
    -------
    list of str
    """
    cfg = tomllib.loads(package_file("distviz.ui", "app", "config.toml").read_text(encoding="utf-8"))
    if address is not None:
        cfg["server"]["address"] = address
    if port is not None:
        cfg["server"]["port"] = int(port)
    return [f"--{section}.{key}={str(v).lower() if isinstance(v, bool) else v}"
            for section, opts in cfg.items() for key, v in opts.items()]


def local_addresses() -> list[str]:
    """IPv4 addresses of this machine's network interfaces, loopback excluded, read from the kernel (Linux).

    Uses the SIOCGIFADDR ioctl on each interface of `socket.if_nameindex()`: nothing is sent and no name is
    resolved.  Empty where the ioctl is not available (then the teacher looks the address up with `ip addr`).
    """
    try:
        import fcntl
    except ImportError:  # not a Unix
        return []
    siocgifaddr = 0x8915
    found = []
    try:
        names = [name for _, name in socket.if_nameindex()]
    except OSError:
        return []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for name in names:
            try:
                raw = fcntl.ioctl(s.fileno(), siocgifaddr, struct.pack("256s", name.encode()[:15]))
            except OSError:  # no IPv4 address on this interface
                continue
            addr = socket.inet_ntoa(raw[20:24])
            if not ipaddress.ip_address(addr).is_loopback and addr not in found:
                found.append(addr)
    return found


def quiet_compute_pools() -> None:
    """Let idle OpenMP threads sleep instead of spinning (``OMP_WAIT_POLICY=PASSIVE`` unless already set).

    numba's parallel kernels run on libgomp, whose idle threads spin for a while before they sleep.  On a
    server that runs several fits and pages at once the spinning threads take the cores from the threads that
    work (two processes fitting trees on two threads each of a 2-core machine take about twice as long), and a
    fit's measured CPU time (the deadline of distviz.ui.jobs) would count its waiting as work.
    libgomp reads the variable when it is loaded, at the first parallel kernel, so this must run before that.
    """
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def no_outbound_lookups() -> None:
    """Make Streamlit's external-address look-up return nothing and its internal one read the interface table."""
    from streamlit import net_util

    def get_external_ip() -> None:
        """Unknown: finding it would mean asking a host on the internet."""
        return None

    def get_internal_ip() -> str | None:
        """This machine's first network address, from the kernel's interface table (no socket is connected)."""
        addrs = local_addresses()
        return addrs[0] if addrs else None

    net_util.get_external_ip = get_external_ip
    net_util.get_internal_ip = get_internal_ip


def _is_loopback(address: str) -> bool:
    """True for localhost and loopback addresses (127.0.0.0/8, ::1)."""
    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:  # a host name: served on whatever it names
        return False


def class_urls(address: str, port: int) -> list[str]:
    """The URLs students open when the app listens on `address`: every interface's address for a wildcard."""
    hosts = local_addresses() if address in WILDCARD else [address]
    return [f"http://{h}:{port}" for h in hosts]


def main(argv: list[str] | None = None) -> None:
    """Parse --address / --port / --no-warm-start / --workers, switch Streamlit's look-ups off, print the class URLs
    when on the network, start the warm start (distviz.ui.warm_start), run (``--workers N``: N such servers behind a
    proxy, ``distviz.ui.workers``)."""
    ap = argparse.ArgumentParser(prog="distviz app", description="Serve the distviz app (default: this machine only, "
                                                                 "http://127.0.0.1:8501).")
    ap.add_argument("--address", help="listen on this address (0.0.0.0: every interface); default 127.0.0.1 "
                                      "(distviz/ui/app/config.toml)")
    ap.add_argument("--port", type=int, help="port (default 8501)")
    ap.add_argument("--no-warm-start", action="store_true",
                    help="do not fit the pages' default views and the lesson steps in the background at start "
                         "(distviz.ui.warm_start; DISTVIZ_WARM_START=0 does the same)")
    ap.add_argument("--workers", default="1",
                    help="app server processes (default 1; auto: one per core, at most 4, as `make serve`); with 2 or "
                         "more, Caddy on --address/--port spreads the browsers over them, each kept on one "
                         "(distviz.ui.workers; the [serve] extra)")
    args, rest = ap.parse_known_args(argv)
    from distviz.ui.workers import workers_for

    try:
        args.workers = workers_for(args.workers)
    except ValueError as exc:
        ap.error(str(exc))
    quiet_compute_pools()
    no_outbound_lookups()
    from distviz.trees import prepare_numba_cache

    prepare_numba_cache()   # numba cache files compiled from older sources go before the first fit loads them
    if args.address is not None and not _is_loopback(args.address):
        urls = class_urls(args.address, args.port or 8501)
        print("\n  distviz is served on the network. Students open:", flush=True)
        for u in urls or ["(no network address found: look it up with `ip addr`) http://ADDRESS:"
                          f"{args.port or 8501}"]:
            print(f"    {u}", flush=True)
        print("  Stop with Ctrl+C; `make run` serves this machine only.\n", flush=True)
    if args.workers > 1:
        from distviz.ui.workers import serve_workers

        sys.exit(serve_workers(args.workers, args.address or "127.0.0.1", args.port or 8501,
                               (["--no-warm-start"] if args.no_warm_start else []) + rest))
    from distviz.ui.warm_start import start_warm_start

    start_warm_start(False if args.no_warm_start else None)
    from streamlit.web import cli

    sys.argv = ["streamlit", "run", str(app_script()), *config_flags(args.address, args.port), *rest]
    cli.main()


if __name__ == "__main__":
    main()
