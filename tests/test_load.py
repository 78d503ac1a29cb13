"""The classroom load client (benchmarks/load.py) against a real server, and the server setting it measured."""

import asyncio
import tomllib

import pytest

from benchmarks import load
from distviz.data.paths import package_file


@pytest.fixture(scope="module")
def server_url():
    """One `streamlit run` of the packaged app on a free 127.0.0.1 port for this module."""
    port = load._free_port()
    proc = load.start_server(port)
    yield f"http://127.0.0.1:{port}"
    proc.terminate()
    proc.wait(timeout=20)


def test_post_script_gc_is_off():
    """Streamlit's full gc.collect(2) after every rerun cost ~0.08 CPU-s of a ~0.11 CPU-s cached page."""
    cfg = tomllib.loads(package_file("distviz.ui", "app", "config.toml").read_text())
    assert cfg.get("runner", {}).get("postScriptGC") is False


def test_summary_counts_failures_and_times_only_successes():
    ok = [load.Result(s) for s in (0.1, 0.2, 0.3, 0.4)]
    bad = load.Result(9.0, ["time-out after 120 s"])
    rows = load.summarise([load.Phase("scrub", 5, ok + [bad], cpu=0.5, wall=1.0, load=0.2)])
    assert len(rows) == 1
    r = rows[0]
    assert (r["actions"], r["failures"], r["first failure"]) == (5, 1, "time-out after 120 s")
    assert r["p50"] == pytest.approx(0.25) and r["p95"] == pytest.approx(0.385) and r["cpu"] == pytest.approx(0.1)


def test_websocket_walk_scrubs_the_round_as_a_fragment_rerun(server_url):
    """Lab -> Evolution -> slider to round 37 as a fragment rerun: no failure, round-37 charts.  (The slider is bound
    to ?round= by Streamlit, whose frontend writes the address: tests/test_browser_roundtrip.py checks it in Chromium.)"""

    async def walk():
        s = load.Session(server_url.replace("http", "ws") + "/_stcore/stream", timeout=120)
        await s.connect()
        try:
            out = [await s.action(page=""), await s.action(page=load.EVOLUTION)]
            assert s.slider is not None, "no round slider on Evolution"
            wid, frag, lo, hi = s.slider
            assert frag, "the round slider is not inside a fragment"
            out.append(await s.action(widget=(wid, [37.0]), fragment_id=frag))
            return s, out
        finally:
            await s.close()

    s, results = asyncio.run(walk())
    assert [r.failures for r in results] == [[], [], []]
    assert any("round 37" in spec for spec in s.charts)
