"""Start the app: on this machine only (`make run`), or deliberately for a class on the network (`make serve`).

`python -m distviz.ui.serve` runs `streamlit run app.py` with the settings of .streamlit/config.toml
(127.0.0.1 only, no error details, XSRF and origin checks, 20 MB uploads) after switching off the two address
look-ups Streamlit makes by itself: the *external* address (an HTTP request to checkip.amazonaws.com when it
prints its URLs in headless mode and again for every websocket that arrives with a foreign Origin) and the
*internal* address (a UDP socket connected to 8.8.8.8).  The internal address then comes from this machine's
own interface table and the external one is unknown, so the server sends nothing anywhere.

`python -m distviz.ui.serve --address 0.0.0.0 [--port 8501]` listens on the network instead and prints the
address of every network interface, the URLs students open.  Other arguments go to `streamlit run`.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import socket
import struct
import sys
from pathlib import Path

APP = Path(__file__).resolve().parents[2] / "app.py"
WILDCARD = {"0.0.0.0", "::", ""}


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
    """Parse --address / --port, switch Streamlit's look-ups off, print the class URLs when on the network, run."""
    ap = argparse.ArgumentParser(prog="python -m distviz.ui.serve", description=__doc__.splitlines()[0])
    ap.add_argument("--address", help="listen on this address (0.0.0.0: every interface); default 127.0.0.1 "
                                      "from .streamlit/config.toml")
    ap.add_argument("--port", type=int, help="port (default 8501)")
    args, rest = ap.parse_known_args(argv)
    quiet_compute_pools()
    no_outbound_lookups()
    from distviz.trees import prepare_numba_cache

    prepare_numba_cache()   # numba cache files compiled from older sources go before the first fit loads them
    extra = []
    if args.address is not None:
        extra += ["--server.address", args.address]
    if args.port is not None:
        extra += ["--server.port", str(args.port)]
    if args.address is not None and not _is_loopback(args.address):
        urls = class_urls(args.address, args.port or 8501)
        print("\n  distviz is served on the network. Students open:", flush=True)
        for u in urls or ["(no network address found: look it up with `ip addr`) http://ADDRESS:"
                          f"{args.port or 8501}"]:
            print(f"    {u}", flush=True)
        print("  Stop with Ctrl+C; `make run` serves this machine only.\n", flush=True)
    from streamlit.web import cli

    sys.argv = ["streamlit", "run", str(APP), *extra, *rest]
    cli.main()


if __name__ == "__main__":
    main()
