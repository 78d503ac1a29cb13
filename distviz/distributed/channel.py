"""A direct socket from the client to each worker's shards: a fit's steps without dask's message stack.

A distributed round is a few steps (one per tree level, then the update), each one call per worker that
returns small arrays (``shard.shard_level``, ``shard.shard_step``).  Sent as dask actor calls, every step
goes through the client's event loop thread, dask's comm framing and the worker's event loop and actor
thread, and that hand-off, not the step's work, was most of a round.  A channel is one TCP connection per
worker and fit, opened through the worker's ``ShardSet`` actor (:func:`serve`, started by
``ShardSet.open_channel``): a step is one length-prefixed pickled message each way, read and run by a
thread of the worker (:func:`_serve`) that calls the same ``shard.run_shards``.

Trust is dask's own: the messages are pickles, as dask's are, and only the client that opened the channel can
send them.  It passes a random 32-byte token through dask's connection to the actor; the worker's thread
serves the first connection that presents it and refuses any other.  The socket listens on the worker's own
host (the one in its dask address), and only for clusters whose comm is plain ``tcp://`` (or ``inproc://``,
threads of one process): under ``tls://`` or another transport, :func:`endpoint_host` returns None and the
fit keeps dask's actor calls.
"""

from __future__ import annotations

import hmac
import pickle
import secrets
import selectors
import socket
import struct
import threading
from typing import Any, Callable

import cloudpickle

from distviz.errors import DistvizError

__all__ = ["Channel", "endpoint_host", "new_token", "serve"]

_LEN = struct.Struct("!Q")
TOKEN_BYTES = 32
#: seconds a worker's channel waits for its client to connect, and for a connection to present the token
ACCEPT_TIMEOUT, AUTH_TIMEOUT = 60.0, 5.0
#: seconds between the client's checks that a worker it waits on is still in the cluster
POLL_S = 2.0


def new_token() -> bytes:
    """A fresh random token for one channel."""
    return secrets.token_bytes(TOKEN_BYTES)


def endpoint_host(address: str) -> str | None:
    """The host a worker's channel listens on, from the worker's dask address; None when the fit must keep
    dask's own comm (an encrypted or other transport).

    ``tcp://10.0.0.5:40123`` -> ``10.0.0.5``; ``tcp://[::1]:40123`` -> ``::1``; ``inproc://...`` (thread
    workers in the client's process) -> ``127.0.0.1``.
    """
    scheme, _, rest = address.partition("://")
    if scheme == "inproc":
        return "127.0.0.1"
    if scheme != "tcp" or not rest:
        return None
    host = rest.rsplit(":", 1)[0]
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


def _recv_exact(sock: socket.socket, n: int) -> bytearray:
    buf = bytearray(n)
    view, got = memoryview(buf), 0
    while got < n:
        k = sock.recv_into(view[got:])
        if not k:
            raise EOFError("the channel's other end closed")
        got += k
    return buf


def _send(sock: socket.socket, payload: bytes) -> None:
    sock.sendall(_LEN.pack(len(payload)) + payload)


def _receive(sock: socket.socket) -> Any:
    (n,) = _LEN.unpack(_recv_exact(sock, _LEN.size))
    return pickle.loads(_recv_exact(sock, n))


def serve(handler: Callable[..., Any], host: str, token: bytes) -> tuple[str, int]:
    """Listen on `host` (a free port) in a daemon thread that runs ``handler(fn, *args)`` for each message of the
    one client presenting `token`; returns (host, port).  The thread ends when that client closes the channel, or
    when none connects within ``ACCEPT_TIMEOUT`` seconds."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.create_server((host, 0), family=family)
    listener.settimeout(ACCEPT_TIMEOUT)
    threading.Thread(target=_serve, args=(listener, token, handler), daemon=True, name="distviz-channel").start()
    return host, int(listener.getsockname()[1])


def _accept(listener: socket.socket, token: bytes) -> socket.socket | None:
    """The first connection that presents the token (others are closed); None after ACCEPT_TIMEOUT."""
    with listener:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:   # timed out, or closed
                return None
            try:
                conn.settimeout(AUTH_TIMEOUT)
                if hmac.compare_digest(bytes(_recv_exact(conn, len(token))), token):
                    conn.settimeout(None)
                    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    return conn
            except (OSError, EOFError):
                pass
            conn.close()


def _serve(listener: socket.socket, token: bytes, handler: Callable[..., Any]) -> None:
    conn = _accept(listener, token)
    if conn is None:
        return
    with conn:
        while True:
            try:
                fn, args = _receive(conn)
            except (OSError, EOFError):
                return   # the client closed the channel (its fit ended) or went away
            try:
                reply = (True, handler(fn, *args))
            except Exception as e:   # the step's error goes to the client, as a dask actor call's would
                reply = (False, e)
            try:
                payload = pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception as e:   # an unpicklable result or exception: its text instead
                payload = pickle.dumps((False, DistvizError(f"a distributed step failed on the worker: {e!r}")))
            try:
                _send(conn, payload)
            except OSError:
                return


class Channel:
    """The client's end of one worker's channel.

    Parameters
    ----------
    address : str
        The worker's dask address (named in a lost-worker error).
    host, port :
        Where its channel listens (:func:`serve`).
    token : bytes
        The token the channel was opened with.
    alive : callable
        ``alive()`` is False once the worker left the cluster; asked every ``POLL_S`` seconds of waiting.
    """

    def __init__(self, address: str, host: str, port: int, token: bytes, alive: Callable[[], bool]):
        self.address, self.alive = address, alive
        self.sock = socket.create_connection((host, port), timeout=AUTH_TIMEOUT)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.sendall(token)
        self.sock.settimeout(None)
        self._ready = selectors.DefaultSelector()   # not select.select: a client's fd can lie above FD_SETSIZE
        self._ready.register(self.sock, selectors.EVENT_READ)

    def send(self, fn: Callable, args: tuple) -> None:
        """Ask the worker to run ``fn(shard, *args)`` over its shards (``shard.run_shards``)."""
        _send(self.sock, cloudpickle.dumps((fn, args), protocol=pickle.HIGHEST_PROTOCOL))

    def receive(self) -> Any:
        """The step's result; the step's own exception if it raised; OSError if the worker was lost."""
        while not self._ready.select(POLL_S):
            if not self.alive():
                raise ConnectionError(f"the worker {self.address} left the cluster")
        ok, value = _receive(self.sock)
        if not ok:
            raise value
        return value

    def close(self) -> None:
        """Close the connection; the worker's thread then ends."""
        try:
            self._ready.close()
            self.sock.close()
        except (OSError, ValueError, KeyError):
            pass
