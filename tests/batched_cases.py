"""Many hostile cases in as few subprocesses as possible: one child runs case after case and is restarted only
after a crash or a hang (shared by the model-file fuzz test and the hostile-array test)."""

from __future__ import annotations

import json
import queue
import subprocess
import threading


def _pump(stream, q):
    """Forward the child's report lines to q, then None when it closes its output (exit or crash)."""
    for line in stream:
        q.put(line)
    q.put(None)


def run_batched(argv: list[str], cases: list[dict], case_timeout: float) -> dict:
    """Results by case index of running `cases` through the child `argv`.

    Each case carries its index in ``cases`` as ``"i"``; the child reads one JSON case per line on stdin and
    writes one JSON line per case, ``{"i": index, "result": ..., ...}``.  A case without an answer within
    `case_timeout` seconds fails as a hang, a child that closes its output early fails its current case as a
    crash; a new child then takes the cases after it.
    """
    results: dict = {}
    start = 0
    while start < len(cases):
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                text=True)
        q: queue.Queue = queue.Queue()
        threading.Thread(target=_pump, args=(proc.stdout, q), daemon=True).start()
        assert proc.stdin is not None
        for c in cases[start:]:
            proc.stdin.write(json.dumps(c) + "\n")
        proc.stdin.close()
        i = start
        while i < len(cases):
            try:
                line = q.get(timeout=case_timeout)
            except queue.Empty:
                results[i] = {"result": "fail", "why": "hang (no answer within the timeout)"}
                break
            if line is None:
                results[i] = {"result": "fail", "why": f"crash (exit code {proc.wait()})"}
                break
            r = json.loads(line)
            results[r["i"]] = r
            i = r["i"] + 1
        proc.kill()
        proc.wait()
        start = i + 1 if i < len(cases) else i
    return results
