"""The direct client-worker channel of a distributed fit (``distviz.distributed.channel``).

A fit on a tcp or inproc cluster sends its steps over one socket per worker instead of dask actor calls; only the
client holding the channel's token is served; a step's error reaches the client; an encrypted transport keeps dask's
calls.
"""

from __future__ import annotations

import socket
import threading

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
pytest.importorskip("distributed")

from distviz.dask import DaskDistributionalBoosting  # noqa: E402
from distviz.distributed import channel, shard  # noqa: E402
from distviz.distributed.boosting import _Cluster  # noqa: E402


@pytest.mark.parametrize("address, host", [
    ("tcp://10.0.0.5:40123", "10.0.0.5"),
    ("tcp://[::1]:40123", "::1"),
    ("tcp://node-3.cluster:8786", "node-3.cluster"),
    ("inproc://192.168.1.4/1234/5", "127.0.0.1"),
    ("tls://10.0.0.5:40123", None),
    ("ucx://10.0.0.5:40123", None),
    ("tcp://", None),
])
def test_the_channel_listens_on_the_workers_host_and_only_for_plain_tcp_or_inproc(address, host):
    assert channel.endpoint_host(address) == host


def _step(shard_label, a, b):
    if a < 0:
        raise ValueError("a step's own error")
    return {"sum": np.array([a + b])}


def _handler(fn, *args):
    return fn("shard", *args)


def test_a_channel_runs_steps_refuses_a_wrong_token_and_ends_with_its_client():
    token = channel.new_token()
    before = {t.ident for t in threading.enumerate()}
    host, port = channel.serve(_handler, "127.0.0.1", token)
    # a stranger connects first with a wrong token: refused, and the listener still waits for the client
    with socket.create_connection((host, port)) as stranger:
        stranger.sendall(b"x" * channel.TOKEN_BYTES)
        stranger.settimeout(10)
        assert stranger.recv(1) == b""   # closed by the worker's side
    ch = channel.Channel("tcp://127.0.0.1:1", host, port, token, alive=lambda: True)
    ch.send(_step, (2, 3))
    assert ch.receive()["sum"][0] == 5
    ch.send(_step, (-1, 0))
    with pytest.raises(ValueError, match="a step's own error"):
        ch.receive()
    ch.send(_step, (1, 1))          # the channel survives a step's error
    assert ch.receive()["sum"][0] == 2
    ch.close()
    served = [t for t in threading.enumerate() if t.name == "distviz-channel" and t.ident not in before]
    for t in served:
        t.join(10)
    assert not any(t.is_alive() for t in served)


def test_a_client_waiting_on_a_worker_that_left_the_cluster_gets_a_connection_error(monkeypatch):
    monkeypatch.setattr(channel, "POLL_S", 0.05)
    token = channel.new_token()
    release = threading.Event()

    def slow(fn, *args):
        release.wait(10)
        return fn("shard", *args)

    host, port = channel.serve(slow, "127.0.0.1", token)
    ch = channel.Channel("tcp://10.9.9.9:1", host, port, token, alive=lambda: False)
    ch.send(_step, (1, 2))
    with pytest.raises(ConnectionError, match="10.9.9.9"):
        ch.receive()
    release.set()
    ch.close()


def test_a_fit_on_the_cluster_sends_its_steps_over_the_channels_at_the_workers_thread_count(dask_client, monkeypatch):
    sent = []
    send = channel.Channel.send
    monkeypatch.setattr(channel.Channel, "send", lambda self, fn, args: (sent.append(fn.__name__), send(self, fn, args)))
    closed = []
    close = _Cluster.close
    monkeypatch.setattr(_Cluster, "close", lambda self: (closed.append([c.sock for c in self._channels]), close(self)))
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1000, 3))
    y = rng.poisson(np.exp(0.5 * X[:, 0])).astype(float)
    m = DaskDistributionalBoosting("poisson", n_estimators=3, max_depth=2).fit(
        da.from_array(X, chunks=(250, 3)), da.from_array(y, chunks=250))
    assert m.n_iter_ == 3
    assert {"shard_stats", "shard_step", "shard_level"} <= set(sent)
    assert closed and closed[0] and all(s.fileno() == -1 for s in closed[0])   # the fit closed its channels
    assert shard._THREADS == [1]   # the suite's workers have one thread each: so have their steps' numba kernels
